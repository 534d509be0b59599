"""kiln.numpy.fft: NumPy's discrete Fourier transforms with JAX's semantics.

Every transform is the ``fft`` primitive (``kiln.lax.fft``, ``stablehlo.fft``) over the chosen axes,
which are moved to the end first. Real inputs are promoted to complex64 (complex128 with x64) and
integer inputs to the default float dtype first, as JAX does (NumPy computes in float64 and
complex128). XLA transforms at most three axes at once: ``fftn`` and friends over more axes apply
it in chunks of up to three axes.

``s`` crops or zero-pads the input along the transformed axes (for the inverse real transforms,
``s[-1]`` is the length of the real output, and the input's last transformed axis is cropped or padded
to ``s[-1] // 2 + 1``). ``norm`` is ``"backward"`` (the default: no scaling forward, ``1/n`` on the
inverse), ``"ortho"`` (``1/sqrt(n)`` both ways) or ``"forward"`` (``1/n`` forward, none on the inverse).
"""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.errors import AxisError
from ..core.tracing import abstractify
from ..driver.eager_jit import eager_jit
from ..lax.fft import FftType
from ..lax.fft import fft as lax_fft
from ._util import check_arraylike
from .creation import asarray
from .shape import roll

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")


def _norm_scale(fname: str, norm: str | None, n: int, inverse: bool) -> float:
    """The factor applied on top of the primitive (whose inverse transforms already divide by ``n``)."""
    if norm is None or norm == "backward":
        return 1.0
    if norm not in _NORMS:
        raise ValueError(f"kiln.numpy.fft.{fname}: invalid norm {norm!r}; use 'backward', 'ortho' or 'forward'")
    if norm == "ortho":
        return math.sqrt(n) if inverse else 1.0 / math.sqrt(n) if n else 1.0
    return float(n) if inverse else 1.0 / n if n else 1.0


def _scale(x, factor: float):
    if factor == 1.0:
        return x
    return lax.mul(x, lax.full_like(x, factor))


def _canonical_axes(fname: str, axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    out = []
    for a in axes:
        try:
            a = operator.index(a)
        except TypeError:
            raise TypeError(f"kiln.numpy.fft.{fname}: axes must be integers, got {axes!r}") from None
        if not -ndim <= a < ndim:
            raise AxisError(f"kiln.numpy.fft.{fname}: axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"kiln.numpy.fft.{fname}: repeated axes are not supported, got axes {tuple(axes)}")
    return tuple(out)


def _resize(x, axis: int, size: int):
    """Crop or zero-pad ``x`` along ``axis`` to ``size``."""
    aval = abstractify(x)
    n = aval.shape[axis]
    if size < n:
        start, limit = [0] * aval.ndim, list(aval.shape)
        limit[axis] = size
        return lax.slice(x, start, limit)
    if size > n:
        config = [(0, 0, 0)] * aval.ndim
        config[axis] = (0, size - n, 0)
        return lax.pad(x, lax.literal(0, aval.dtype), config)
    return x


def _transform(x, typ: FftType, lengths: tuple[int, ...], axes: tuple[int, ...]):
    """``lax.fft`` over ``axes`` (at most three, ``x``'s real extents already fitted), in place."""
    nd = abstractify(x).ndim
    rest = [i for i in range(nd) if i not in axes]
    perm = rest + list(axes)
    moved = lax.transpose(x, perm) if perm != list(range(nd)) else x
    out = lax_fft(moved, typ, lengths)
    inverse = [int(i) for i in np.argsort(perm)]
    return lax.transpose(out, inverse) if perm != list(range(nd)) else out


def _fft_nd(fname: str, typ: FftType, a, s, axes, norm, *, inverse: bool):
    check_arraylike(f"fft.{fname}", a)
    arr = asarray(a)
    nd = abstractify(arr).ndim
    if s is not None:
        try:
            s = tuple(operator.index(d) for d in s)
        except TypeError:
            raise TypeError(f"kiln.numpy.fft.{fname}: s must be a sequence of integers, got {s!r}") from None
        if any(d <= 0 for d in s):
            raise ValueError(f"kiln.numpy.fft.{fname}: the lengths in s must be positive, got s={s}")
        if axes is not None and len(s) != len(axes):
            raise ValueError(f"kiln.numpy.fft.{fname}: s {s} and axes {tuple(axes)} must have the same length")
    if axes is None:
        axes = range(nd) if s is None else range(nd - len(s), nd)
        if s is not None and len(s) > nd:
            raise ValueError(f"kiln.numpy.fft.{fname}: s {s} has more entries than the array has dimensions "
                             f"({nd}); pass axes too")
    axes = _canonical_axes(fname, tuple(axes), nd)
    shape = abstractify(arr).shape
    if s is None:
        lengths = [shape[ax] for ax in axes]
        if typ == FftType.IRFFT and axes:
            lengths[-1] = 2 * (shape[axes[-1]] - 1)
            if lengths[-1] <= 0:
                raise ValueError(f"kiln.numpy.fft.{fname}: the inverse real transform of a length-"
                                 f"{shape[axes[-1]]} axis has no output points; pass n (or s) explicitly")
        lengths = tuple(lengths)
    else:
        lengths = s
    # Fit the input's extents along the transformed axes.
    for i, (ax, n) in enumerate(zip(axes, lengths)):
        want = n // 2 + 1 if typ == FftType.IRFFT and i == len(axes) - 1 else n
        arr = _resize(arr, ax, want)
    if not axes:
        return lax_fft(arr, typ, ())
    # Chunks of up to three axes (XLA's limit); the last chunk takes the real/complex conversion.
    chunks = [(axes[max(0, j - 3):j], lengths[max(0, j - 3):j]) for j in range(len(axes), 0, -3)]
    plain = FftType.IFFT if typ in (FftType.IFFT, FftType.IRFFT) else FftType.FFT
    if typ in (FftType.FFT, FftType.RFFT):
        for i, (ax, n) in enumerate(chunks):  # last chunk first
            arr = _transform(arr, typ if i == 0 else plain, n, ax)
    else:
        for i, (ax, n) in reversed(list(enumerate(chunks))):  # leading chunks first
            arr = _transform(arr, typ if i == 0 else plain, n, ax)
    return _scale(arr, _norm_scale(fname, norm, math.prod(lengths), inverse))


def _check_1d(fname: str, axis: Any) -> None:
    if isinstance(axis, (list, tuple)):
        raise ValueError(f"kiln.numpy.fft.{fname}: axis must be one int, got {axis!r}; for several axes use "
                         f"kiln.numpy.fft.{fname}n")


def _fft_1d(fname: str, typ: FftType, a, n, axis, norm, *, inverse: bool):
    _check_1d(fname, axis)
    return _fft_nd(fname, typ, a, None if n is None else [n], [axis], norm, inverse=inverse)


def _check_2d(fname: str, axes: Sequence[int]) -> None:
    if len(axes) != 2:
        raise ValueError(f"kiln.numpy.fft.{fname}: needs exactly 2 axes, got axes={tuple(axes)}; use "
                         f"kiln.numpy.fft.{fname[:-1]}n for other numbers of axes")


@eager_jit("n", "axis", "norm")
def fft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """One-dimensional discrete Fourier transform along ``axis`` (as ``numpy.fft.fft``)."""
    return _fft_1d("fft", FftType.FFT, a, n, axis, norm, inverse=False)


@eager_jit("n", "axis", "norm")
def ifft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """One-dimensional inverse discrete Fourier transform along ``axis`` (as ``numpy.fft.ifft``)."""
    return _fft_1d("ifft", FftType.IFFT, a, n, axis, norm, inverse=True)


@eager_jit("n", "axis", "norm")
def rfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Fourier transform of real input: the ``n // 2 + 1`` non-negative frequencies (``numpy.fft.rfft``)."""
    return _fft_1d("rfft", FftType.RFFT, a, n, axis, norm, inverse=False)


@eager_jit("n", "axis", "norm")
def irfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Inverse of :func:`rfft`: a real signal of length ``n`` (default ``2 * (m - 1)``) (``numpy.fft.irfft``)."""
    return _fft_1d("irfft", FftType.IRFFT, a, n, axis, norm, inverse=True)


@eager_jit("n", "axis", "norm")
def hfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Transform of a Hermitian-symmetric signal given by its first half: a real spectrum of length ``n``
    (default ``2 * (m - 1)``) (``numpy.fft.hfft``)."""
    _check_1d("hfft", axis)
    check_arraylike("fft.hfft", a)
    a = asarray(a)
    aval = abstractify(a)
    if dtypes.is_complex(aval.dtype):
        a = lax.conj(a)
    nn = (aval.shape[axis] - 1) * 2 if n is None else operator.index(n)
    out = _fft_1d("hfft", FftType.IRFFT, a, n, axis, None, inverse=True)
    return _scale(out, nn * _norm_scale("hfft", norm, nn, inverse=False))


@eager_jit("n", "axis", "norm")
def ihfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Inverse of :func:`hfft`: the first ``n // 2 + 1`` entries of a Hermitian signal (``numpy.fft.ihfft``)."""
    _check_1d("ihfft", axis)
    check_arraylike("fft.ihfft", a)
    a = asarray(a)
    nn = abstractify(a).shape[axis] if n is None else operator.index(n)
    out = lax.conj(_fft_1d("ihfft", FftType.RFFT, a, n, axis, None, inverse=False))
    return _scale(out, _norm_scale("ihfft", norm, nn, inverse=True) / nn)


@eager_jit("s", "axes", "norm")
def fft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    """Two-dimensional discrete Fourier transform (``numpy.fft.fft2``)."""
    _check_2d("fft2", axes)
    return _fft_nd("fft2", FftType.FFT, a, s, axes, norm, inverse=False)


@eager_jit("s", "axes", "norm")
def ifft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    """Two-dimensional inverse discrete Fourier transform (``numpy.fft.ifft2``)."""
    _check_2d("ifft2", axes)
    return _fft_nd("ifft2", FftType.IFFT, a, s, axes, norm, inverse=True)


@eager_jit("s", "axes", "norm")
def rfft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    """Two-dimensional transform of real input (``numpy.fft.rfft2``)."""
    _check_2d("rfft2", axes)
    return _fft_nd("rfft2", FftType.RFFT, a, s, axes, norm, inverse=False)


@eager_jit("s", "axes", "norm")
def irfft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    """Inverse of :func:`rfft2` (``numpy.fft.irfft2``)."""
    _check_2d("irfft2", axes)
    return _fft_nd("irfft2", FftType.IRFFT, a, s, axes, norm, inverse=True)


@eager_jit("s", "axes", "norm")
def fftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    """N-dimensional discrete Fourier transform (all axes by default) (``numpy.fft.fftn``)."""
    return _fft_nd("fftn", FftType.FFT, a, s, axes, norm, inverse=False)


@eager_jit("s", "axes", "norm")
def ifftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    """N-dimensional inverse discrete Fourier transform (``numpy.fft.ifftn``)."""
    return _fft_nd("ifftn", FftType.IFFT, a, s, axes, norm, inverse=True)


@eager_jit("s", "axes", "norm")
def rfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    """N-dimensional transform of real input; the last axis keeps ``n // 2 + 1`` entries (``numpy.fft.rfftn``)."""
    return _fft_nd("rfftn", FftType.RFFT, a, s, axes, norm, inverse=False)


@eager_jit("s", "axes", "norm")
def irfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    """Inverse of :func:`rfftn` (``numpy.fft.irfftn``)."""
    return _fft_nd("irfftn", FftType.IRFFT, a, s, axes, norm, inverse=True)


def _freq_args(fname: str, n: Any, d: Any) -> int:
    if isinstance(n, (list, tuple)):
        raise ValueError(f"kiln.numpy.fft.{fname}: n must be one int, got {n!r}")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"kiln.numpy.fft.{fname}: d must be one value (the sample spacing), got {d!r}")
    try:
        return operator.index(n)
    except TypeError:
        raise TypeError(f"kiln.numpy.fft.{fname}: n must be an int, got {type(n).__name__} {n!r}") from None


def _freqs(k: np.ndarray, n: int, d: Any, dtype, device):
    out_dtype = dtypes.canonicalize_dtype(dtype if dtype is not None else dtypes.default_float_dtype())
    work = out_dtype
    if not dtypes.is_inexact(work):
        work = dtypes.default_float_dtype()
    elif dtypes.is_complex(work):
        work = dtypes.canonicalize_dtype(np.float64 if work == np.complex128 else np.float32)
    ks = asarray(k.astype(work), device=device)
    spacing = asarray(d, dtype=work)
    out = lax.div(ks, lax.broadcast_in_dim(lax.mul(spacing, lax.full_like(spacing, float(n))),
                                           abstractify(ks).shape, ()))
    return lax.convert_element_type(out, out_dtype)


def fftfreq(n: int, d: Any = 1.0, *, dtype=None, device=None):
    """Sample frequencies of :func:`fft` for ``n`` points spaced ``d`` apart: ``[0, 1, ..., -1] / (d n)``."""
    n = _freq_args("fftfreq", n, d)
    k = (np.arange(n) + n // 2) % n - n // 2 if n else np.zeros((0,))
    return _freqs(np.asarray(k), n, d, dtype, device)


def rfftfreq(n: int, d: Any = 1.0, *, dtype=None, device=None):
    """Sample frequencies of :func:`rfft` for ``n`` points spaced ``d`` apart: ``[0, ..., n // 2] / (d n)``."""
    n = _freq_args("rfftfreq", n, d)
    return _freqs(np.arange(n // 2 + 1), n, d, dtype, device)


def _shifts(fname: str, x, axes, sign: int):
    check_arraylike(f"fft.{fname}", x)
    x = asarray(x)
    shape = abstractify(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
    elif isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    axes = tuple(axes)
    canon = _canonical_axes(fname, axes, len(shape)) if axes else ()
    if not canon:
        return x
    return roll(x, [sign * (shape[ax] // 2) for ax in canon], canon)


@eager_jit("axes")
def fftshift(x, axes: int | Sequence[int] | None = None):
    """Move the zero-frequency entry to the centre (``numpy.fft.fftshift``)."""
    return _shifts("fftshift", x, axes, 1)


@eager_jit("axes")
def ifftshift(x, axes: int | Sequence[int] | None = None):
    """Inverse of :func:`fftshift` (``numpy.fft.ifftshift``)."""
    return _shifts("ifftshift", x, axes, -1)

