"""kiln.scipy.fft (as ``jax.scipy.fft``): the type-2 discrete cosine transform and its inverse.

Each transform along an axis is one matrix product with the (static, NumPy-built) DCT matrix: O(n^2)
per axis, which is quick for the lengths these are mostly used with (an FFT-based path, O(n log n),
needs kiln.numpy.fft).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import numpy as jnp
from ..core import dtypes
from ..numpy._util import canonical_axis, check_arraylike

__all__ = ["dct", "idct", "dctn", "idctn"]


def _check(fname: str, type: int, norm) -> None:
    if type != 2:
        raise NotImplementedError(f"kiln.scipy.fft.{fname}: only DCT type 2 is implemented (as in JAX), got "
                                  f"type={type!r}")
    if norm not in (None, "backward", "ortho"):
        raise ValueError(f"kiln.scipy.fft.{fname}: norm must be None, 'backward' or 'ortho', got {norm!r}")


def _dct_matrix(n: int, norm, inverse: bool) -> np.ndarray:
    """The DCT-II matrix (``y = M @ x``) of length ``n``, or its inverse."""
    k = np.arange(n)[:, None]
    m = 2 * np.cos(np.pi * k * (2 * np.arange(n)[None, :] + 1) / (2 * n))
    if norm == "ortho":
        m = m * np.where(k == 0, np.sqrt(1 / (4 * n)), np.sqrt(1 / (2 * n)))
    return np.linalg.inv(m) if inverse else m


def _operand(fname: str, x):
    check_arraylike(f"kiln.scipy.fft.{fname}", x)
    x = jnp.asarray(x)
    if not dtypes.is_inexact(x.dtype):
        x = x.astype(dtypes.default_float_dtype())
    return x


def _resize(x, n: int | None, axis: int):
    if n is None or n == x.shape[axis]:
        return x
    if n < 1:
        raise ValueError(f"kiln.scipy.fft: the transform length must be positive, got {n}")
    if n < x.shape[axis]:
        return jnp.take(x, jnp.arange(n), axis=axis)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, n - x.shape[axis])
    return jnp.pad(x, pad)


def _apply(x, axis: int, norm, inverse: bool):
    n = x.shape[axis]
    real = np.float64 if x.dtype in (np.float64, np.complex128) else np.float32
    m = jnp.asarray(_dct_matrix(n, norm, inverse), dtype=real)
    moved = jnp.moveaxis(x, axis, -1)
    if x.dtype.kind == "c":
        out = jnp.matmul(jnp.real(moved), m.T) + 1j * jnp.matmul(jnp.imag(moved), m.T)
    else:
        out = jnp.matmul(moved, m.T)
    return jnp.moveaxis(out, -1, axis)


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The type-2 discrete cosine transform along ``axis`` (zero-padded or cut to ``n``)."""
    _check("dct", type, norm)
    x = _operand("dct", x)
    axis = canonical_axis("kiln.scipy.fft.dct", axis, x.ndim)
    return _apply(_resize(x, n, axis), axis, norm, False)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of :func:`dct` (a type-3 transform) along ``axis``."""
    _check("idct", type, norm)
    x = _operand("idct", x)
    axis = canonical_axis("kiln.scipy.fft.idct", axis, x.ndim)
    return _apply(_resize(x, n, axis), axis, norm, True)


def _axes_and_sizes(fname: str, x, s, axes):
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    axes = tuple(canonical_axis(f"kiln.scipy.fft.{fname}", a, x.ndim) for a in axes)
    if s is not None and len(s) != len(axes):
        raise ValueError(f"kiln.scipy.fft.{fname}: s and axes must have the same length, got {len(s)} and "
                         f"{len(axes)}")
    return axes, (None,) * len(axes) if s is None else tuple(s)


def _nd(fname: str, x, type: int, s, axes, norm, inverse: bool):
    _check(fname, type, norm)
    x = _operand(fname, x)
    axes, sizes = _axes_and_sizes(fname, x, s, axes)
    for a, size in zip(axes, sizes):
        x = _apply(_resize(x, size, a), a, norm, inverse)
    return x


def dctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None):
    """The type-2 discrete cosine transform over ``axes`` (default: all, or the last ``len(s)``)."""
    return _nd("dctn", x, type, s, axes, norm, False)


def idctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
    """The inverse of :func:`dctn` over ``axes``."""
    return _nd("idctn", x, type, s, axes, norm, True)
