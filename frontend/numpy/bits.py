"""Bit packing of kiln.numpy: packbits, unpackbits (uint8 bytes <-> bits), with shifts and sums."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core.tracing import abstractify
from ._util import canonical_axis, check_arraylike, static_int
from .creation import asarray
from .reductions import sum as _sum
from .shape import moveaxis, pad, ravel, reshape
from .ufuncs import bitwise_and, right_shift

__all__ = ["packbits", "unpackbits"]


def _bitorder(fname: str, bitorder: str) -> np.ndarray:
    if bitorder not in ("big", "little"):
        raise ValueError(f"kiln.numpy.{fname}: bitorder must be 'big' or 'little', got {bitorder!r}")
    shifts = np.arange(8, dtype=np.uint8)
    return shifts[::-1].copy() if bitorder == "big" else shifts


def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    """The elements of the integer or boolean ``a`` as bits (nonzero -> 1), packed eight to a uint8
    along ``axis`` (of the flattened array when None); the last byte is padded with zeros.
    ``bitorder='big'`` puts the first element in the most significant bit."""
    check_arraylike("packbits", a)
    a = asarray(a)
    if abstractify(a).dtype.kind not in "biu":
        raise TypeError(f"kiln.numpy.packbits: needs an integer or boolean array, got {abstractify(a).dtype.name}")
    shifts = _bitorder("packbits", bitorder)
    if axis is None:
        a, axis = ravel(a), 0
    else:
        axis = canonical_axis("packbits", axis, abstractify(a).ndim)
    bits = moveaxis((a != 0).astype(np.uint8), axis, -1)
    n = abstractify(bits).shape[-1]
    extra = -n % 8
    if extra:
        bits = pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, extra)])
    bits = reshape(bits, abstractify(bits).shape[:-1] + ((n + extra) // 8, 8))
    packed = _sum(bits << asarray(shifts), axis=-1, dtype=np.uint8)
    return moveaxis(packed, -1, axis)


def unpackbits(a: Any, axis: int | None = None, count: int | None = None, bitorder: str = "big") -> Any:
    """The bits of the uint8 array ``a`` as a uint8 array of 0s and 1s, eight per byte along ``axis``
    (of the flattened array when None). ``count`` keeps that many bits along the axis (negative:
    drops them from the end; more than there are: pads with zeros)."""
    check_arraylike("unpackbits", a)
    a = asarray(a)
    if abstractify(a).dtype != np.uint8:
        raise TypeError(f"kiln.numpy.unpackbits: needs a uint8 array, got {abstractify(a).dtype.name}")
    shifts = _bitorder("unpackbits", bitorder)
    if axis is None:
        a, axis = ravel(a), 0
    else:
        axis = canonical_axis("unpackbits", axis, abstractify(a).ndim)
    bits = bitwise_and(right_shift(a[..., None], asarray(shifts)), np.uint8(1))
    shape = abstractify(a).shape
    bits = moveaxis(bits, axis, -2)
    bits = reshape(bits, abstractify(bits).shape[:-2] + (shape[axis] * 8,))
    if count is not None:
        count = static_int("unpackbits", "count", count)
        n = shape[axis] * 8
        keep = n + count if count < 0 else count
        keep = max(keep, 0)
        bits = bits[..., :keep] if keep <= n else pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, keep - n)])
    return moveaxis(bits, -1, axis)
