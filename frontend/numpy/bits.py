"""Bit packing of kiln.numpy: packbits, unpackbits (uint8 bytes <-> bits), with shifts and sums."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core.tracing import abstractify
from ..driver.eager_jit import eager_jit
from ._util import canonical_axis, check_arraylike, static_int
from .creation import asarray
from .reductions import sum as _sum
from .shape import moveaxis, pad, ravel, reshape
from .ufuncs import bitwise_and, right_shift

__all__ = ["packbits", "unpackbits"]


def _operand(fname: str, a: Any, axis: int | None, bitorder: str, packed: bool) -> tuple[Any, int, np.ndarray]:
    """``a`` as a kiln array (flattened when ``axis`` is None), the axis, and the bit shifts in order."""
    check_arraylike(fname, a)
    a = asarray(a)
    dtype = abstractify(a).dtype
    if (dtype != np.uint8) if packed else (dtype.kind not in "biu"):
        what = "a uint8" if packed else "an integer or boolean"
        raise TypeError(f"kiln.numpy.{fname}: needs {what} array, got {dtype.name}")
    if bitorder not in ("big", "little"):
        raise ValueError(f"kiln.numpy.{fname}: bitorder must be 'big' or 'little', got {bitorder!r}")
    shifts = np.arange(8, dtype=np.uint8)
    shifts = shifts[::-1].copy() if bitorder == "big" else shifts
    if axis is None:
        return ravel(a), 0, shifts
    return a, canonical_axis(fname, axis, abstractify(a).ndim), shifts


@eager_jit("axis", "bitorder")
def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    """The elements of the integer or boolean ``a`` as bits (nonzero -> 1), packed eight to a uint8
    along ``axis`` (of the flattened array when None); the last byte is padded with zeros.
    ``bitorder='big'`` puts the first element in the most significant bit."""
    a, axis, shifts = _operand("packbits", a, axis, bitorder, packed=False)
    bits = moveaxis((a != 0).astype(np.uint8), axis, -1)
    n = abstractify(bits).shape[-1]
    extra = -n % 8
    if extra:
        bits = pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, extra)])
    bits = reshape(bits, abstractify(bits).shape[:-1] + ((n + extra) // 8, 8))
    packed = _sum(bits << asarray(shifts), axis=-1, dtype=np.uint8)
    return moveaxis(packed, -1, axis)


@eager_jit("axis", "count", "bitorder")
def unpackbits(a: Any, axis: int | None = None, count: int | None = None, bitorder: str = "big") -> Any:
    """The bits of the uint8 array ``a`` as a uint8 array of 0s and 1s, eight per byte along ``axis``
    (of the flattened array when None). ``count`` keeps that many bits along the axis (negative:
    drops them from the end; more than there are: pads with zeros)."""
    a, axis, shifts = _operand("unpackbits", a, axis, bitorder, packed=True)
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


def _view_as(x: Any, dtype: Any) -> Any:
    """``x.view(dtype)``: the same bits read as ``dtype``; with another item size the last dimension scales
    by their ratio (as JAX's). Booleans are read as bytes."""
    from .. import lax
    from ..core import dtypes
    x = asarray(x)
    old, new = abstractify(x).dtype, np.dtype(dtypes.canonicalize_dtype(dtype))
    if new == old:
        return x
    if old == np.bool_:
        x, old = lax.convert_element_type(x, np.uint8), np.dtype(np.uint8)
    if new == np.bool_:
        return _view_as(x, np.uint8) != 0
    shape = abstractify(x).shape
    if old.kind == "c" or new.kind == "c":  # (XLA bitcasts no complex values: their parts, side by side)
        return _view_complex(x, old, new, shape)
    if new.itemsize == old.itemsize:
        return lax.bitcast_convert_type(x, new)
    if not shape:
        raise ValueError(f"kiln: x.view({new.name}) of a 0-d {old.name} array changes the item size; view a 1-d "
                         "array instead")
    if new.itemsize < old.itemsize:
        return reshape(lax.bitcast_convert_type(x, new), shape[:-1] + (shape[-1] * (old.itemsize // new.itemsize),))
    ratio = new.itemsize // old.itemsize
    if shape[-1] % ratio:
        raise ValueError(f"kiln: x.view({new.name}) of a {old.name} array needs a last dimension divisible by "
                         f"{ratio}, got shape {shape}")
    return lax.bitcast_convert_type(reshape(x, shape[:-1] + (shape[-1] // ratio, ratio)), new)


def _view_complex(x: Any, old: np.dtype, new: np.dtype, shape: tuple[int, ...]) -> Any:
    """``x.view(new)`` where either dtype is complex: a complex element is its real and imaginary parts in a row."""
    from .. import lax
    from .shape import reshape, stack
    if old.kind == "c":
        part = np.dtype(f"f{old.itemsize // 2}")
        parts = stack([lax.real(x), lax.imag(x)], -1)  # shape + (2,)
        if new.itemsize < old.itemsize and not shape:
            raise ValueError(f"kiln: x.view({new.name}) of a 0-d {old.name} array changes the item size; view a 1-d "
                             "array instead")
        flat = reshape(parts, shape[:-1] + (2 * shape[-1],)) if shape else parts
        out = _view_as(flat, new) if part != new else flat
        return reshape(out, ()) if not shape else out
    part = np.dtype(f"f{new.itemsize // 2}")
    y = _view_as(x, part)  # the parts, side by side along the last dimension
    n = abstractify(y).shape
    if not n or n[-1] % 2:
        raise ValueError(f"kiln: x.view({new.name}) of a {old.name} array of shape {shape} does not give whole "
                         f"complex values")
    pairs = reshape(y, n[:-1] + (n[-1] // 2, 2))
    return lax.complex(pairs[..., 0], pairs[..., 1])


def _byteswap(x: Any) -> Any:
    """``x.byteswap()``: each element with its bytes in reverse order (the same dtype); a complex element
    swaps its real and imaginary parts' bytes separately, as NumPy's."""
    from .. import lax
    x = asarray(x)
    dt = abstractify(x).dtype
    if dt.itemsize == 1:
        return x
    if dt.kind == "c":
        re, im = _byteswap(lax.real(x)), _byteswap(lax.imag(x))
        return lax.complex(re, im)
    b = lax.bitcast_convert_type(x, np.uint8)
    return lax.bitcast_convert_type(lax.rev(b, (b.ndim - 1,)), dt)
