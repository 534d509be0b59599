"""kiln.scipy.fft: discrete cosine transforms (as ``jax.scipy.fft``), built on kiln's FFT.

``dct`` of type 2 uses Makhoul's reordering (J. Makhoul, "A fast cosine transform in one and two
dimensions", 1980): with ``v`` the even-indexed entries followed by the odd-indexed ones reversed,
``dct(x)[k] = 2 Re(exp(-i pi k / 2N) fft(v)[k])``. ``idct`` of type 2 (the inverse, a scaled DCT of
type 3) undoes each step: ``V[k] = exp(i pi k / 2N) (y[k] - i y[N-k]) / 2``, ``v = Re(ifft(V))``, and
the reordering is inverted. Type 3 is the other one scaled (``dct(x, 3) = 2N idct(x, 2)``), which JAX
does not offer. The n-dimensional versions apply the one-dimensional ones axis by axis.

``norm`` is ``None``/``"backward"`` (SciPy's unnormalised transforms), ``"ortho"`` (orthonormal) or
``"forward"`` (the ``1/2N`` factor on the forward transform), as SciPy. Integer inputs compute in
the default float dtype; complex inputs transform their real and imaginary parts.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.tracing import abstractify
from ..numpy._util import check_arraylike
from ..numpy.creation import asarray
from ..numpy.fft import _canonical_axes, _resize
from ..numpy.fft import fft as _fft
from ..numpy.fft import ifft as _ifft
from ..numpy.index_funcs import take

__all__ = ["dct", "dctn", "idct", "idctn"]

_NORMS = (None, "backward", "ortho", "forward")


def _check(fname: str, x, type: Any, norm: Any):
    check_arraylike(f"scipy.fft.{fname}", x)
    if type not in (2, 3) or isinstance(type, bool):
        raise NotImplementedError(f"kiln.scipy.fft.{fname}: DCT type {type!r} is not implemented; types 2 and 3 "
                                  "are")
    if norm not in _NORMS:
        raise ValueError(f"kiln.scipy.fft.{fname}: invalid norm {norm!r}; use None, 'backward', 'ortho' or "
                         "'forward'")
    x = asarray(x)
    dtype = abstractify(x).dtype
    if not dtypes.is_inexact(dtype):
        x = lax.convert_element_type(x, dtypes.default_float_dtype())
    return x


def _along(values: np.ndarray, axis: int, like):
    """A constant vector laid along ``axis`` of ``like``'s shape (real dtype of ``like``)."""
    aval = abstractify(like)
    return lax.broadcast_in_dim(values.astype(aval.dtype), aval.shape, (axis,))


def _ortho_factors(n: int) -> np.ndarray:
    """``f`` with ``dct_ortho = f * dct_backward`` for type 2."""
    f = np.full((n,), math.sqrt(1.0 / (2 * n)))
    f[0] = math.sqrt(1.0 / (4 * n))
    return f


def _dct2(x, axis: int):
    """Unnormalised DCT-II of real ``x`` along ``axis``."""
    n = abstractify(x).shape[axis]
    order = np.concatenate([np.arange(0, n, 2), np.arange(n - 1 - (n % 2 == 1), 0, -2)]) if n > 1 else np.arange(n)
    v = take(x, order, axis=axis)
    spec = _fft(v, axis=axis)
    k = np.arange(n)
    twiddle = _along(np.exp(-0.5j * np.pi * k / n), axis, spec)
    out = lax.real(lax.mul(spec, twiddle))
    return lax.mul(out, lax.full_like(out, 2.0))


def _idct2(y, axis: int):
    """Inverse of the unnormalised DCT-II of real ``y`` along ``axis``."""
    aval = abstractify(y)
    n = aval.shape[axis]
    # y[N - k] for k >= 1 and 0 for k = 0, then V = exp(i pi k / 2N) (y - i y_rev) / 2.
    rev = lax.rev(_resize_front(y, axis, n - 1), (axis,))
    config = [(0, 0, 0)] * aval.ndim
    config[axis] = (1, 0, 0)
    y_rev = lax.pad(rev, lax.literal(0, aval.dtype), config)
    z = lax.complex(y, lax.neg(y_rev))
    k = np.arange(n)
    spec = lax.mul(z, _along(0.5 * np.exp(0.5j * np.pi * k / n), axis, z))
    v = lax.real(_ifft(spec, axis=axis))
    # Undo the reordering: x[2j] = v[j], x[2j + 1] = v[n - 1 - j].
    inverse = np.empty(n, dtype=np.int64)
    half = (n + 1) // 2
    inverse[0::2] = np.arange(half)
    inverse[1::2] = n - 1 - np.arange(n // 2)
    return take(v, inverse, axis=axis)


def _resize_front(x, axis: int, size: int):
    """The last ``size`` entries of ``x`` along ``axis``."""
    aval = abstractify(x)
    start, limit = [0] * aval.ndim, list(aval.shape)
    start[axis] = aval.shape[axis] - size
    return lax.slice(x, start, limit)


def _real_dct(x, axis: int, forward_type2: bool, norm):
    """The forward DCT-II (``forward_type2``) or its inverse, with ``norm``, along ``axis`` of real ``x``."""
    n = abstractify(x).shape[axis]
    if forward_type2:
        out = _dct2(x, axis)
        if norm == "ortho":
            return lax.mul(out, _along(_ortho_factors(n), axis, out))
        if norm == "forward":
            return lax.mul(out, lax.full_like(out, 1.0 / (2 * n)))
        return out
    if norm == "ortho":
        x = lax.div(x, _along(_ortho_factors(n), axis, x))
    elif norm == "forward":
        x = lax.mul(x, lax.full_like(x, 2.0 * n))
    return _idct2(x, axis)


def _dct_axis(x, type: int, n, axis: int, norm, inverse: bool):
    if n is not None:
        x = _resize(x, axis, n)
    if abstractify(x).shape[axis] == 0:
        raise ValueError("kiln.scipy.fft: cannot transform an axis of length 0")
    # Type 3 is type 2's inverse up to a factor: dct(., 3) = 2N idct(., 2) and idct(., 3) = dct(., 2) / 2N
    # (unnormalised); 'ortho' needs no factor (the orthonormal DCT-III is the inverse of DCT-II), and
    # 'forward' swaps the factor's side.
    if dtypes.is_complex(abstractify(x).dtype):
        return lax.complex(_dct_axis(lax.real(x), type, None, axis, norm, inverse),
                           _dct_axis(lax.imag(x), type, None, axis, norm, inverse))
    if type == 3 and norm != "ortho":
        norm = "backward" if norm == "forward" else "forward"
    return _real_dct(x, axis, (type == 2) != inverse, norm)


def _axis(fname: str, axis: Any, ndim: int) -> int:
    if isinstance(axis, (list, tuple)):
        raise ValueError(f"kiln.scipy.fft.{fname}: axis must be one int, got {axis!r}; use {fname}n for several")
    return _canonical_axes(fname, (axis,), ndim)[0]


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Discrete cosine transform of ``x`` along ``axis`` (as ``scipy.fft.dct``; types 2 and 3)."""
    x = _check("dct", x, type, norm)
    ax = _axis("dct", axis, abstractify(x).ndim)
    return _dct_axis(x, type, _n("dct", n), ax, norm, inverse=False)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Inverse discrete cosine transform of ``x`` along ``axis`` (as ``scipy.fft.idct``; types 2 and 3)."""
    x = _check("idct", x, type, norm)
    ax = _axis("idct", axis, abstractify(x).ndim)
    return _dct_axis(x, type, _n("idct", n), ax, norm, inverse=True)


def _n(fname: str, n: Any) -> int | None:
    if n is None:
        return None
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"kiln.scipy.fft.{fname}: n must be positive, got {n}")
    return n


def _nd(fname: str, x, type, s, axes, norm, inverse: bool):
    x = _check(fname, x, type, norm)
    nd = abstractify(x).ndim
    if s is not None:
        s = [operator.index(s)] if not isinstance(s, (list, tuple)) else [operator.index(d) for d in s]
        if len(s) > nd:
            raise ValueError(f"kiln.scipy.fft.{fname}: s must have at most x.ndim ({nd}) entries, got {len(s)}")
        if axes is not None and len(s) != len(axes):
            raise ValueError(f"kiln.scipy.fft.{fname}: s {tuple(s)} and axes {tuple(axes)} must have the same length")
    if axes is None:
        axes = tuple(range(nd - len(s), nd)) if s is not None else tuple(range(nd))
    axes = _canonical_axes(fname, tuple(axes), nd)
    sizes = s if s is not None else [None] * len(axes)
    for ax, n in zip(axes, sizes):
        x = _dct_axis(x, type, _n(fname, n), ax, norm, inverse)
    return x


def dctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None):
    """Multidimensional discrete cosine transform over ``axes`` (all by default) (``scipy.fft.dctn``)."""
    return _nd("dctn", x, type, s, axes, norm, inverse=False)


def idctn(x, type: int = 2, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
    """Multidimensional inverse discrete cosine transform (``scipy.fft.idctn``)."""
    return _nd("idctn", x, type, s, axes, norm, inverse=True)
