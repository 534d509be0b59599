"""Polynomials of kiln.numpy as coefficient arrays, highest power first: poly, polyadd, polysub,
polymul, polydiv, polyder, polyint, polyval, polyfit, roots.

Shapes stay static, as in JAX: results keep leading zeros (``trim_leading_zeros=True`` removes them
from ``polymul``/``polydiv``'s results, which needs concrete values). ``roots`` (and ``poly`` of a
square matrix) use the eigenvalues of a general matrix (``kiln.numpy.linalg.eigvals``: LAPACK on CPU).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..control.api import scan
from ..core import dtypes
from ..core.tracing import abstractify
from ..driver.eager_jit import eager_jit
from ._util import check_arraylike, static_int
from .creation import arange, asarray, full, ones, zeros
from .products import convolve, dot, outer
from .reductions import prod
from .reductions import sum as _sum
from .shape import atleast_1d, concatenate, pad, trim_zeros
from .ufuncs import maximum, sqrt

__all__ = ["poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul", "polysub", "polyval", "roots"]


def _promote(fname: str, *args: Any, inexact: bool) -> list[Any]:
    check_arraylike(fname, *args)
    dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    if inexact and not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float_dtype()
    from ..core.tracing import materialize
    from ._util import convert
    return [asarray(materialize(convert(a, dtype, weak))) for a in args]


def _coefficients(fname: str, p: Any, what: str = "the coefficients") -> None:
    if abstractify(p).ndim != 1:
        raise ValueError(f"kiln.numpy.{fname}: {what} must be a 1-D array, got shape {abstractify(p).shape}")


def poly(seq_of_zeros: Any) -> Any:
    """The coefficients of the monic polynomial whose roots are ``seq_of_zeros`` (1-D), or the
    characteristic polynomial of a non-empty square matrix (from its eigenvalues: complex, as JAX)."""
    (z,) = _promote("poly", seq_of_zeros, inexact=True)
    z = atleast_1d(z)
    shape = abstractify(z).shape
    if len(shape) == 2 and shape[0] == shape[1] and shape[0]:
        from .linalg import eigvals
        z = eigvals(z)
        shape = abstractify(z).shape
    if len(shape) != 1:
        raise ValueError(f"kiln.numpy.poly: needs a 1-D array of roots or a non-empty square matrix, got shape "
                         f"{shape}")
    dtype = abstractify(z).dtype
    if shape[0] == 0:
        return ones((), dtype)
    a = ones((1,), dtype)
    for k in range(shape[0]):
        a = convolve(a, concatenate([ones((1,), dtype), -z[k:k + 1]]))
    return a


@eager_jit()
def polyadd(a1: Any, a2: Any) -> Any:
    """The sum of two polynomials (the shorter is aligned at the lowest power).

    As JAX, arrays of more dimensions hold the coefficients along axis 0: the shorter one is added to the
    last rows of the longer one, broadcasting over the other axes."""
    a1, a2 = _promote("polyadd", a1, a2, inexact=False)
    if a1.ndim == 1 and a2.ndim == 1:
        n1, n2 = a1.shape[0], a2.shape[0]
        if n1 < n2:
            a1 = pad(a1, (n2 - n1, 0))
        elif n2 < n1:
            a2 = pad(a2, (n1 - n2, 0))
        return a1 + a2
    for a in (a1, a2):
        if a.ndim == 0:
            raise ValueError(f"kiln.numpy.polyadd: the coefficients must have at least 1 dimension, got shape "
                             f"{a.shape}")
    long, short = (a1, a2) if a1.shape[0] >= a2.shape[0] else (a2, a1)
    k = long.shape[0] - short.shape[0]
    head, tail = long[:k], long[k:]
    try:
        fits = np.broadcast_shapes(tail.shape, short.shape) == tail.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"kiln.numpy.polyadd: coefficients of shape {short.shape} do not broadcast into the "
                         f"last rows of shape {tail.shape} of the longer polynomial {long.shape}")
    return concatenate([head, tail + short])


@eager_jit()
def polysub(a1: Any, a2: Any) -> Any:
    """The difference of two polynomials."""
    a1, a2 = _promote("polysub", a1, a2, inexact=False)
    return polyadd(a1, -a2)


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
    """The product of two polynomials (inexact dtype). ``trim_leading_zeros`` removes the product's
    leading zeros as NumPy does, which needs concrete values (not under ``jit``)."""
    a1, a2 = _promote("polymul", a1, a2, inexact=True)
    _coefficients("polymul", a1)
    _coefficients("polymul", a2)
    if trim_leading_zeros and (a1.shape[0] > 1 or a2.shape[0] > 1):
        a1, a2 = trim_zeros(a1, "f"), trim_zeros(a2, "f")
    if a1.shape[0] == 0:
        a1 = zeros((1,), a2.dtype)
    if a2.shape[0] == 0:
        a2 = zeros((1,), a1.dtype)
    return convolve(a1, a2)


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple[Any, Any]:
    """The quotient and remainder of the division of polynomial ``u`` by ``v`` (inexact dtype). The
    remainder has ``u``'s length (leading zeros kept) unless ``trim_leading_zeros``, which removes
    them with a tolerance of sqrt(eps), as NumPy (needs concrete values)."""
    u, v = _promote("polydiv", u, v, inexact=True)
    _coefficients("polydiv", u, "u")
    _coefficients("polydiv", v, "v")
    m, n = u.shape[0] - 1, v.shape[0] - 1
    if n < 0:
        raise ValueError("kiln.numpy.polydiv: the divisor v must not be empty")
    scale = 1.0 / v[0]
    q = zeros((max(m - n + 1, 1),), u.dtype)
    for k in range(m - n + 1):
        d = scale * u[k]
        q = q.at[k].set(d)
        u = u.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        from ..core.tracing import Tracer, concrete
        value = concrete(u) if isinstance(u, Tracer) else u
        if value is None:
            from ..core.errors import ConcretizationTypeError
            raise ConcretizationTypeError("kiln.numpy.polydiv: trim_leading_zeros=True needs concrete values (the "
                                          "result's length depends on them); leave it False under jit")
        r = np.asarray(value)
        tol = np.sqrt(dtypes.finfo(u.dtype).eps)
        big = np.nonzero(np.abs(r) > tol)[0]
        u = u[int(big[0]):] if big.size else u[r.shape[0]:]
    return q, u


@eager_jit("m")
def polyder(p: Any, m: int = 1) -> Any:
    """The coefficients of the ``m``-th derivative (``m`` static) of polynomial ``p`` (inexact dtype)."""
    m = static_int("polyder", "m", m)
    (p,) = _promote("polyder", p, inexact=True)
    _coefficients("polyder", p)
    if m < 0:
        raise ValueError(f"kiln.numpy.polyder: the order m must be non-negative, got {m}")
    if m == 0:
        return p
    n = p.shape[0]
    powers = np.arange(n - 1, -1, -1)  # the power of each coefficient
    factor = np.prod([powers - j for j in range(m)], axis=0)[: max(n - m, 0)]
    return p[: max(n - m, 0)] * asarray(factor.astype(np.float64), dtype=p.dtype)


@eager_jit("m")
def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """The coefficients of the ``m``-th antiderivative (``m`` static) of polynomial ``p``;
    ``k``: the integration constants (a scalar for all, or ``m`` values, the first for the
    outermost integral; default 0)."""
    m = static_int("polyint", "m", m)
    p, kk = _promote("polyint", p, 0 if k is None else k, inexact=True)
    _coefficients("polyint", p)
    if m < 0:
        raise ValueError(f"kiln.numpy.polyint: the order m must be non-negative, got {m}")
    kk = atleast_1d(kk)
    if kk.shape[0] == 1:
        kk = full((m,), kk[0], dtype=kk.dtype)
    if kk.shape != (m,):
        raise ValueError(f"kiln.numpy.polyint: k must be a scalar or {m} values, got shape {kk.shape}")
    if m == 0:
        return p
    grid = arange(p.shape[0] + m, dtype=p.dtype)[None] - arange(m, dtype=p.dtype)[:, None]
    divisor = prod(maximum(1, grid), axis=0)[::-1]
    return concatenate([p, kk]) / divisor


@eager_jit("unroll")
def polyval(p: Any, x: Any, *, unroll: int = 16) -> Any:
    """The polynomial ``p`` evaluated at ``x`` by Horner's scheme (a ``scan`` over the coefficients;
    ``unroll`` as in ``kiln.lax.scan``). ``p`` may be 2-D: one polynomial per column."""
    p, x = _promote("polyval", p, x, inexact=False)
    if p.ndim == 0:
        raise ValueError("kiln.numpy.polyval: p must have at least one dimension, got a 0-d array")
    shape = tuple(np.broadcast_shapes(p.shape[1:], x.shape))
    y = zeros(shape, x.dtype)
    y, _ = scan(lambda acc, c: (acc * x + c, None), y, p, unroll=unroll)
    return y


@eager_jit("deg", "rcond", "full", "cov")
def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False, w: Any = None,
            cov: bool = False) -> Any:
    """The least-squares fit of a polynomial of degree ``deg`` (static) to points ``(x, y)``: its
    coefficients (one column per column of a 2-D ``y``). ``w`` weights the points; ``full`` also
    returns the residuals, rank, singular values and ``rcond``; ``cov`` also the scaled covariance of
    the coefficients."""
    from .creation import vander
    from .linalg import inv, lstsq
    deg = static_int("polyfit", "deg", deg)
    if deg < 0:
        raise ValueError(f"kiln.numpy.polyfit: deg must be non-negative, got {deg}")
    args = [x, y] if w is None else [x, y, w]
    promoted = _promote("polyfit", *args, inexact=True)
    x, y = promoted[0], promoted[1]
    order = deg + 1
    if x.ndim != 1:
        raise TypeError(f"kiln.numpy.polyfit: x must be 1-D, got shape {x.shape}")
    if x.shape[0] == 0:
        raise TypeError("kiln.numpy.polyfit: x must not be empty")
    if y.ndim not in (1, 2):
        raise TypeError(f"kiln.numpy.polyfit: y must be 1-D or 2-D, got shape {y.shape}")
    if y.shape[0] != x.shape[0]:
        raise TypeError(f"kiln.numpy.polyfit: x and y must have the same length, got {x.shape[0]} and {y.shape[0]}")
    if rcond is None:
        rcond = x.shape[0] * float(dtypes.finfo(x.dtype).eps)
    lhs, rhs = vander(x, order), y
    if w is not None:
        wt = promoted[2]
        if wt.ndim != 1 or wt.shape[0] != x.shape[0]:
            raise TypeError(f"kiln.numpy.polyfit: w must be 1-D of x's length {x.shape[0]}, got shape {wt.shape}")
        lhs = lhs * wt[:, None]
        rhs = rhs * (wt if rhs.ndim == 1 else wt[:, None])
    scale = sqrt(_sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, asarray(rcond)
    if cov:
        base = inv(dot(lhs.T, lhs)) / outer(scale, scale)
        n = x.shape[0]
        if n <= order:
            raise ValueError(f"kiln.numpy.polyfit: the covariance needs more points ({n}) than coefficients ({order})")
        fac = resids / (n - order)
        if y.ndim == 1:
            return c, base * fac
        return c, base[:, :, None] * fac
    return c


def roots(p: Any, *, strip_zeros: bool = True) -> Any:
    """The roots of the polynomial with coefficients ``p`` (1-D, highest power first), as the eigenvalues
    of its companion matrix; always complex (as JAX, unlike NumPy).

    ``strip_zeros=True`` (the default) drops leading zero coefficients as NumPy does: the result's length
    depends on the values, so it needs concrete ``p`` (not under ``jit``). With ``strip_zeros=False`` the
    result has ``len(p) - 1`` entries and the roots lost to leading zeros are NaN (works under ``jit``).
    CPU only (LAPACK's ``geev``).
    """
    (p,) = _promote("roots", p, inexact=True)
    p = atleast_1d(p)
    _coefficients("roots", p)
    n = abstractify(p).shape[0]
    cdt = dtypes.to_complex_dtype(abstractify(p).dtype)
    if n < 2:
        return zeros((0,), cdt)
    if strip_zeros:
        from ..core.tracing import Tracer, concrete
        value = concrete(p) if isinstance(p, Tracer) else p
        if value is None:
            from ..core.errors import ConcretizationTypeError
            raise ConcretizationTypeError(
                "kiln.numpy.roots: strip_zeros=True needs concrete coefficients (the number of roots depends on the "
                "leading zeros); under jit pass strip_zeros=False, which gives NaN for the roots lost to leading "
                "zeros")
        nonzero = np.nonzero(np.asarray(value) != 0)[0]
        return _roots_no_zeros(p[int(nonzero[0]) if nonzero.size else n:])
    return _roots_with_zeros(p)


def _roots_no_zeros(p: Any) -> Any:
    from .creation import eye
    from .linalg import eigvals
    n = abstractify(p).shape[0]
    dtype = abstractify(p).dtype
    if n < 2:
        return zeros((0,), dtypes.to_complex_dtype(dtype))
    a = eye(n - 1, k=-1, dtype=dtype)
    a = a.at[0, :].set(-p[1:] / p[0])
    return eigvals(a)


def _roots_with_zeros(p: Any) -> Any:
    from ..lax.sorting import sort_key_val
    from .reductions import all as _all
    from .reductions import argmin
    from .ufuncs import equal, where
    n = abstractify(p).shape[0]
    is_zero = equal(p, 0)
    leading = where(_all(is_zero), n, argmin(is_zero))
    p = where(leading == n, ones((), abstractify(p).dtype), p)  # all zero: any polynomial (all roots NaN)
    rolled = p[(arange(n) + leading) % n]  # the leading zeros become trailing ones: zero roots
    r = _roots_no_zeros(rolled)
    _, r = sort_key_val(equal(r, 0), r)  # the zero roots last (stable)
    nan = np.array(complex(np.nan, np.nan), abstractify(r).dtype)
    return where(arange(n - 1) < n - 1 - leading, r, nan)
