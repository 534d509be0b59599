"""Fast Fourier transforms: the ``fft`` primitive (``stablehlo.fft``) and ``kiln.lax.fft``.

``fft_p`` transforms the trailing ``len(fft_lengths)`` dimensions of its operand (1 to 3 of them, as
XLA) with one of four :class:`FftType` kinds:

- ``FFT`` / ``IFFT``: complex to complex, forward (``sum x e^{-2 pi i jk/n}``) or inverse (with the
  ``1/n`` factor, as NumPy's ``ifft``); the shape is kept.
- ``RFFT``: real to complex; the last dimension ``n`` becomes ``n // 2 + 1`` (the other half is the
  complex conjugate).
- ``IRFFT``: complex to real, the inverse of ``RFFT``; the last dimension becomes ``fft_lengths[-1]``.
  Only the first ``n // 2 + 1`` entries of the last dimension are read; the imaginary parts of the
  zero-frequency (and, for even ``n``, the Nyquist) entries are ignored.
"""
from __future__ import annotations

import enum
from typing import Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.tracing import abstractify
from . import api

__all__ = ["FftType", "fft"]


class FftType(enum.IntEnum):
    """Which transform ``kiln.lax.fft`` computes (as ``jax.lax.FftType``)."""

    FFT = 0    # forward, complex to complex
    IFFT = 1   # inverse, complex to complex
    RFFT = 2   # forward, real to complex
    IRFFT = 3  # inverse, complex to real


_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}
_REAL_OF = {c: r for r, c in _COMPLEX_OF.items()}


def _fft_rule(x: ShapedArray, *, fft_type: FftType, fft_lengths: tuple[int, ...]) -> ShapedArray:
    k = len(fft_lengths)
    if not 1 <= k <= 3:
        raise ValueError(f"kiln.lax.fft: fft_lengths must name 1 to 3 trailing dimensions (XLA's FFT), got "
                         f"{fft_lengths}; transform more axes in several calls")
    if k > x.ndim:
        raise ValueError(f"kiln.lax.fft: fft_lengths {fft_lengths} has more entries than the operand has "
                         f"dimensions (shape {x.shape})")
    if any(n < 0 for n in fft_lengths):
        raise ValueError(f"kiln.lax.fft: fft_lengths must be non-negative, got {fft_lengths}")
    batch, minor = x.shape[:-k], x.shape[-k:]
    if fft_type == FftType.RFFT:
        if x.dtype not in _COMPLEX_OF:
            raise TypeError(f"kiln.lax.fft: an RFFT operand must be float32 or float64, got {x.dtype.name}")
        if minor != fft_lengths:
            raise ValueError(f"kiln.lax.fft: the trailing dimensions {minor} of the RFFT operand (shape {x.shape}) "
                             f"must equal fft_lengths {fft_lengths}")
        return ShapedArray(batch + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,), _COMPLEX_OF[x.dtype])
    if x.dtype not in _REAL_OF:
        raise TypeError(f"kiln.lax.fft: an {FftType(fft_type).name} operand must be complex64 or complex128, got "
                        f"{x.dtype.name}")
    if fft_type == FftType.IRFFT:
        want = fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
        if minor != want:
            raise ValueError(f"kiln.lax.fft: the trailing dimensions {minor} of the IRFFT operand (shape {x.shape}) "
                             f"must be {want}: fft_lengths {fft_lengths} with the last one n as n // 2 + 1")
        return ShapedArray(batch + fft_lengths, _REAL_OF[x.dtype])
    if minor != fft_lengths:
        raise ValueError(f"kiln.lax.fft: the trailing dimensions {minor} of the {FftType(fft_type).name} operand "
                         f"(shape {x.shape}) must equal fft_lengths {fft_lengths}")
    return ShapedArray(x.shape, x.dtype)


fft_p = Primitive("fft", _fft_rule)

_NAMES = {"fft": FftType.FFT, "ifft": FftType.IFFT, "rfft": FftType.RFFT, "irfft": FftType.IRFFT}


def _fft_type(fft_type: Any) -> FftType:
    if isinstance(fft_type, FftType):
        return fft_type
    if isinstance(fft_type, str) and fft_type.lower() in _NAMES:
        return _NAMES[fft_type.lower()]
    raise ValueError(f"kiln.lax.fft: unknown fft_type {fft_type!r}; use a kiln.lax.FftType (FFT, IFFT, RFFT, "
                     "IRFFT) or its name")


def _inexact(dtype: np.dtype) -> np.dtype:
    if dtypes.is_inexact(dtype) and dtype.itemsize >= 4:
        return dtype
    return dtypes.canonicalize_dtype(np.float64)  # ints, bools and half floats compute in float32 (float64 with x64)


def fft(x, fft_type: FftType | str, fft_lengths: Sequence[int]):
    """Fourier transform of the trailing ``len(fft_lengths)`` dimensions of ``x`` (as ``jax.lax.fft``).

    ``fft_type`` is a :class:`FftType` or its name (``"fft"``, ``"ifft"``, ``"rfft"``, ``"irfft"``). The
    operand is converted first: to a real float dtype for ``RFFT`` (complex input is an error), to a
    complex dtype otherwise. Empty ``fft_lengths`` returns the converted operand.
    """
    typ = _fft_type(fft_type)
    lengths = tuple(int(n) for n in fft_lengths)
    dtype = abstractify(x).dtype
    if typ == FftType.RFFT:
        if dtypes.is_complex(dtype):
            raise TypeError(f"kiln.lax.fft: RFFT takes a real operand, got {dtype.name}; use FftType.FFT for "
                            "complex input")
        x = api.convert_element_type(x, _inexact(dtype))
    elif not dtypes.is_complex(dtype):
        x = api.convert_element_type(x, _COMPLEX_OF[np.dtype(_inexact(dtype))])
    if not lengths:
        return x
    return fft_p.bind(x, fft_type=typ, fft_lengths=lengths)
