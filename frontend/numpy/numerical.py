"""Differences, derivatives and integrals of sampled data: diff, ediff1d, gradient, trapezoid, interp,
unwrap. Built from kiln.numpy's own functions (slices, elementwise ops, cumsum, searchsorted)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.tracing import abstractify, materialize
from ..driver.eager_jit import eager_jit
from ._util import canonical_axis, check_arraylike, convert, static_int
from .creation import asarray
from .reductions import sum as _sum
from .shape import broadcast_to, concatenate, moveaxis, ravel, reshape
from .sorting import argsort, searchsorted
from .statistics import cumsum
from .ufuncs import abs as _abs
from .ufuncs import mod, not_equal, subtract, where

__all__ = ["diff", "ediff1d", "gradient", "interp", "trapezoid", "unwrap"]


def _inexact(fname: str, *args: Any) -> list[Any]:
    """The arguments promoted together, as the default float dtype when that is not inexact."""
    check_arraylike(fname, *args)
    dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float_dtype()
    return [asarray(materialize(convert(a, dtype, weak))) for a in args]


def _sl(x: Any, axis: int, start: int | None, stop: int | None) -> Any:
    """``x[start:stop]`` along ``axis``."""
    idx = [slice(None)] * abstractify(x).ndim
    idx[axis] = slice(start, stop)
    return x[tuple(idx)]


@eager_jit("n", "axis")
def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The ``n``-th discrete difference along ``axis`` (``a[1:] - a[:-1]``, ``n`` times); booleans
    differ with ``!=``. ``prepend``/``append`` are joined to ``a`` along ``axis`` first (a scalar as a
    slice of size 1). ``n`` and ``axis`` are static."""
    check_arraylike("diff", a)
    arr = asarray(a)
    n = static_int("diff", "n", n)
    if n < 0:
        raise ValueError(f"kiln.numpy.diff: the order n must be non-negative, got {n}")
    if n == 0:
        return arr
    aval = abstractify(arr)
    if aval.ndim == 0:
        raise ValueError("kiln.numpy.diff: needs an array of at least one dimension, got a 0-d array")
    axis = canonical_axis("diff", static_int("diff", "axis", axis), aval.ndim)
    parts = []
    for name, extra in (("prepend", prepend), (None, arr), ("append", append)):
        if extra is None:
            continue
        if name is not None:
            check_arraylike("diff", extra)
            extra = asarray(extra)
            if abstractify(extra).ndim == 0:
                shape = list(aval.shape)
                shape[axis] = 1
                extra = broadcast_to(extra, tuple(shape))
        parts.append(extra)
    if len(parts) > 1:
        arr = concatenate(parts, axis)
    op = not_equal if abstractify(arr).dtype == np.bool_ else subtract
    for _ in range(n):
        arr = op(_sl(arr, axis, 1, None), _sl(arr, axis, None, -1))
    return arr


@eager_jit()
def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """The differences of consecutive elements of the flattened ``ary``, with ``to_begin`` and
    ``to_end`` (flattened) joined before and after."""
    check_arraylike("ediff1d", ary)
    flat = ravel(asarray(ary))
    out = _sl(flat, 0, 1, None) - _sl(flat, 0, None, -1)
    parts = []
    for extra in (to_begin, out, to_end):
        if extra is None:
            continue
        if extra is not out:
            check_arraylike("ediff1d", extra)
            extra = ravel(asarray(extra))
        parts.append(extra)
    return concatenate(parts) if len(parts) > 1 else out


@eager_jit("axis", "edge_order")
def gradient(f: Any, *varargs: Any, axis: int | Any = None, edge_order: int | None = None) -> Any:
    """The gradient of sampled ``f``: second-order central differences inside, first-order one-sided
    differences at the edges. ``varargs`` are the spacings, one for all axes or one per axis: each a
    scalar step or a 1-D array of coordinates. One axis gives an array, several a list.

    ``edge_order`` other than None is not supported (as in JAX)."""
    if edge_order is not None:
        raise NotImplementedError("kiln.numpy.gradient: edge_order is not supported (as in JAX): the edges are "
                                  "first-order one-sided differences; leave edge_order=None")
    a, *spacing = _inexact("gradient", f, *varargs)
    aval = abstractify(a)
    if axis is None:
        axes = tuple(range(aval.ndim))
    else:
        raw = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        axes = tuple(canonical_axis("gradient", ax, aval.ndim) for ax in raw)
    if not axes:
        return []
    if min(aval.shape[ax] for ax in axes) < 2:
        raise ValueError(f"kiln.numpy.gradient: every differentiated axis needs at least 2 samples, got shape "
                         f"{aval.shape} along axes {axes}")
    if not spacing:
        steps: list[Any] = [1.0] * len(axes)
    elif len(spacing) == 1:
        steps = spacing * len(axes)
    elif len(spacing) == len(axes):
        steps = spacing
    else:
        raise TypeError(f"kiln.numpy.gradient: got {len(spacing)} spacing arguments for {len(axes)} axes; pass "
                        "none, one for all axes, or one per axis")
    grads = [_gradient_axis(a, h, ax) for ax, h in zip(axes, steps)]
    return grads[0] if len(axes) == 1 else grads


def _gradient_axis(a: Any, h: Any, axis: int) -> Any:
    nd = abstractify(a).ndim
    first = _sl(a, axis, 1, 2) - _sl(a, axis, 0, 1)
    last = _sl(a, axis, -1, None) - _sl(a, axis, -2, -1)
    hnd = np.ndim(h) if not hasattr(h, "aval") and not hasattr(h, "shape") else len(h.shape)
    if hnd == 0:
        inner = (_sl(a, axis, 2, None) - _sl(a, axis, None, -2)) * 0.5 / h
        first, last = first / h, last / h
    elif hnd == 1:
        n = abstractify(a).shape[axis]
        if h.shape[0] != n:
            raise ValueError(f"kiln.numpy.gradient: a coordinate array must have the length of its axis ({n}), "
                             f"got {h.shape[0]}")
        shape = [1] * nd
        shape[axis] = n
        x = reshape(h, tuple(shape))
        first = first / (_sl(x, axis, 1, 2) - _sl(x, axis, 0, 1))
        last = last / (_sl(x, axis, -1, None) - _sl(x, axis, -2, -1))
        d1 = _sl(x, axis, 1, -1) - _sl(x, axis, None, -2)
        d2 = _sl(x, axis, 2, None) - _sl(x, axis, 1, -1)
        inner = (-d2 / (d1 * (d1 + d2)) * _sl(a, axis, None, -2) + (d2 - d1) / (d1 * d2) * _sl(a, axis, 1, -1)
                 + d1 / (d2 * (d1 + d2)) * _sl(a, axis, 2, None))
    else:
        raise ValueError(f"kiln.numpy.gradient: a spacing must be a scalar or a 1-D array, got {hnd} dimensions")
    return concatenate([first, inner, last], axis)


@eager_jit("axis")
def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, at sample points ``x`` (1-D, or of
    ``y``'s shape) or evenly spaced by ``dx``."""
    if x is None:
        (y,) = _inexact("trapezoid", y)
        check_arraylike("trapezoid", dx)
        h = asarray(dx)
    else:
        y, x = _inexact("trapezoid", y, x)
    nd = abstractify(y).ndim
    if nd == 0:
        raise ValueError("kiln.numpy.trapezoid: y must have at least one dimension, got a 0-d array")
    axis = canonical_axis("trapezoid", axis, nd)
    if x is not None:
        h = diff(x) if abstractify(x).ndim == 1 else moveaxis(diff(x, axis=axis), axis, -1)
    elif abstractify(h).ndim:
        h = moveaxis(reshape(h, (1,) * (nd - abstractify(h).ndim) + abstractify(h).shape), axis, -1)
    y = moveaxis(y, axis, -1)
    return _sum(h * (y[..., 1:] + y[..., :-1]), axis=-1) * 0.5


@eager_jit()
def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
    """Piecewise-linear interpolation of the points ``(xp, fp)`` (``xp`` increasing) at ``x``.

    Below ``xp[0]`` the result is ``left`` (default ``fp[0]``), above ``xp[-1]`` ``right`` (default
    ``fp[-1]``); ``left``/``right`` may be ``'extrapolate'`` to extend the end segments. With
    ``period``, ``x`` and ``xp`` are taken modulo ``period`` (and ``left``/``right`` are unused).
    """
    check_arraylike("interp", x, xp, fp)
    for name, v in (("left", left), ("right", right)):
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"kiln.numpy.interp: {name} must be a value, None or 'extrapolate', got {v!r}")
    if dtypes.is_complex(abstractify(asarray(x)).dtype) or dtypes.is_complex(abstractify(asarray(xp)).dtype):
        raise ValueError("kiln.numpy.interp: x and xp must be real; only fp may be complex")
    x, xp = _inexact("interp", x, xp)
    (fp,) = _inexact("interp", fp)
    if abstractify(xp).ndim != 1 or abstractify(fp).ndim != 1 or xp.shape != fp.shape:
        raise ValueError(f"kiln.numpy.interp: xp and fp must be 1-D arrays of one length, got shapes "
                         f"{abstractify(xp).shape} and {abstractify(fp).shape}")
    if xp.shape[0] == 0:
        raise ValueError("kiln.numpy.interp: xp and fp must not be empty")
    if period is not None:
        check_arraylike("interp", period)
        period = _abs(asarray(period))
        x = mod(x, period)
        xp = mod(xp, period)
        order = argsort(xp)
        xp, fp = xp[order], fp[order]
        xp = concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = concatenate([fp[-1:], fp, fp[:1]])
    n = xp.shape[0]
    if n == 1:  # a single point: fp[0] at it, left/right beyond it
        return _interp_ends(x, xp, fp, broadcast_to(fp[0], abstractify(x).shape), left, right, period)
    i = searchsorted(xp, x, side="right")
    i = where(i < 1, 1, where(i > n - 1, n - 1, i))
    x0, x1, f0, f1 = xp[i - 1], xp[i], fp[i - 1], fp[i]
    dx = x1 - x0
    t = x - x0
    delta = where(dx == 0, 0, t / where(dx == 0, 1, dx))
    f = f0 + (f1 - f0) * delta if dtypes.is_complex(abstractify(fp).dtype) else f0 + delta * (f1 - f0)
    return _interp_ends(x, xp, fp, f, left, right, period)


def _interp_ends(x, xp, fp, f, left, right, period):
    if period is not None:
        return f
    if not (isinstance(left, str) and left == "extrapolate"):
        f = where(x < xp[0], fp[0] if left is None else left, f)
    if not (isinstance(right, str) and right == "extrapolate"):
        f = where(x > xp[-1], fp[-1] if right is None else right, f)
    return f


@eager_jit("axis")
def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * math.pi) -> Any:
    """``p`` with jumps larger than ``discont`` (default ``period / 2``) along ``axis`` removed by adding
    multiples of ``period``. Integer input with an integer period stays integer. Complex input is an
    error."""
    check_arraylike("unwrap", p, period)
    dtype, weak = dtypes.result_type(p, period, return_weak_type_flag=True)
    p, period = asarray(materialize(convert(p, dtype, weak))), asarray(materialize(convert(period, dtype, weak)))
    if dtypes.is_complex(dtype):
        raise ValueError("kiln.numpy.unwrap: complex input is not supported; unwrap its angle (kiln.numpy.angle)")
    nd = abstractify(p).ndim
    if nd == 0:
        raise ValueError("kiln.numpy.unwrap: p must have at least one dimension, got a 0-d array")
    axis = canonical_axis("unwrap", axis, nd)
    if abstractify(p).shape[axis] == 0:
        return p
    interval = period // 2 if dtype.kind in "iu" else period / 2
    if discont is None:
        discont = period / 2
    dd = diff(p, axis=axis)
    ddmod = mod(dd + interval, period) - interval
    ddmod = where((ddmod == -interval) & (dd > 0), interval, ddmod)
    correct = where(_abs(dd) < discont, 0, ddmod - dd)
    return concatenate([_sl(p, axis, 0, 1), _sl(p, axis, 1, None) + cumsum(correct, axis=axis)], axis)
