"""``kiln.experimental.ode.odeint``: adaptive Dormand–Prince integration of ODEs (as ``jax.experimental.ode``).

The solver steps the state, raveled into one 1-D array, with the explicit Runge–Kutta pair of Dormand and
Prince (order 5, with an embedded order-4 estimate of the local error; the estimate and the dense output
are Shampine's, "Some Practical Runge-Kutta Formulas", Math. Comp. 46 (1986)). A step is accepted when the
RMS of its error relative to ``atol + rtol * max(|y_old|, |y_new|)`` is at most 1, and the next step size
follows from that ratio (safety factor 0.9, growth at most 10x, shrinking at most 5x after a rejection).
The first step size is Hairer, Nørsett and Wanner's estimate (Solving ODEs I, II.4). Each requested time is
reached by stepping past it (one ``while_loop`` per output time, inside a ``scan`` over the times) and
evaluating the quartic that interpolates the last accepted step (its ends, their derivatives, its midpoint).

Reverse-mode derivatives (``custom_vjp``) come from the adjoint method (Chen et al., "Neural Ordinary
Differential Equations", 2018, appendix C): from the last output time back to the first, the state, its
cotangent and the cotangents of the arguments are integrated together backwards in time, by this same
solver; each output time adds its cotangent to the state's, and contributes ``<func(y_i, t_i), g_i>`` to
its own time's cotangent.
"""
from __future__ import annotations

import functools
import math
import numbers
from typing import Any, Callable

import numpy as np

from . import lax
from . import numpy as jnp
from .ad.api import closure_convert, vjp
from .ad.custom import custom_vjp
from .control.loops import while_loop
from .control.scan import scan
from .core import dtypes, tree_util
from .core.avals import ShapedArray
from .core.config import default_matmul_precision
from .core.errors import KilnError, KilnTypeError, ShapeError
from .core.tracing import Tracer, abstractify
from .driver.jit import jit
from .driver.placement import device_get
from .flatten_util import ravel_pytree

__all__ = ["odeint"]

_WHERE = "kiln.experimental.ode.odeint"


class OdeintValueError(KilnError, ValueError):
    """A bad value given to odeint (times out of order, a negative tolerance)."""


# -- the Dormand–Prince tableau ---------------------------------------------------------------------------
# Stage i (1..6) is evaluated at t + _NODES[i-1] * dt, at y + dt * sum_j _STAGES[i-1][j] * k_j. The last row
# is the 5th-order solution itself: the 7th stage is the derivative at the step's end (first same as last).
_NODES = (1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_STAGES = (
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
# The 5th-order solution minus Shampine's 4th-order one, per stage: dt * sum_j _ERROR[j] * k_j estimates the
# step's local error.
_ERROR = (35 / 384 - 1951 / 21600, 0.0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
          -2187 / 6784 + 12231 / 42400, 11 / 84 - 649 / 6300, -1 / 60)
# Shampine's weights of the solution at the step's midpoint: y(t + dt/2) ~ y + dt * sum_j _MIDPOINT[j] * k_j.
_MIDPOINT = (6025192743 / 30085553152 / 2, 0.0, 51252292925 / 65400821598 / 2, -2691868925 / 45128329728 / 2,
             187940372067 / 1594534317056 / 2, -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2)

_SAFETY, _MAX_GROWTH, _MAX_SHRINK, _ORDER = 0.9, 10.0, 0.2, 5.0


def _combine(weights, ks):
    """``sum_j weights[j] * ks[j]``, skipping zero weights (elementwise: no dot, so no precision setting)."""
    total = None
    for w, k in zip(weights, ks):
        if w != 0.0:
            total = w * k if total is None else total + w * k
    return total


def _abs2(x):
    return lax.real(x) ** 2 + lax.imag(x) ** 2 if dtypes.is_complex(abstractify(x).dtype) else x * x


def _rms(x):
    return jnp.sqrt(jnp.mean(_abs2(x)))


def _norm(x):
    return jnp.sqrt(jnp.sum(_abs2(x)))


def _real_dtype(dtype) -> np.dtype:
    return np.dtype(np.finfo(dtype).dtype) if dtypes.is_complex(dtype) else np.dtype(dtype)


# -- one step ----------------------------------------------------------------------------------------------
def _rk_step(fun: Callable, y, f, t, dt):
    """One Dormand–Prince step from ``(t, y)`` with ``f = fun(y, t)``: ``(y_new, f_new, error, stages)``."""
    h = dt.astype(abstractify(y).dtype)
    ks = [f]
    y_stage = y
    for node, row in zip(_NODES, _STAGES):
        y_stage = y + h * _combine(row, ks)
        ks.append(fun(y_stage, t + node * dt))
    return y_stage, ks[-1], h * _combine(_ERROR, ks), ks


def _interpolant(y0, y1, ks, dt):
    """Coefficients (highest power first) of the quartic ``p(s)``, ``s`` in [0, 1] across the step, with
    ``p(0) = y0``, ``p(1) = y1``, ``p'(0) = dt f0``, ``p'(1) = dt f1`` and ``p(1/2)`` the midpoint estimate."""
    h = dt.astype(abstractify(y0).dtype)
    d0, d1 = h * ks[0], h * ks[-1]
    y_mid = y0 + h * _combine(_MIDPOINT, ks)
    # With a, b, c the coefficients of s^4, s^3, s^2 (d = d0, e = y0), the three remaining conditions read
    # a + b + c = r1, 4a + 3b + 2c = r2, a + 2b + 4c = r3.
    r1 = y1 - y0 - d0
    r2 = d1 - d0
    r3 = 16.0 * (y_mid - y0) - 8.0 * d0
    c = r3 - 5.0 * r1 + r2
    b = 4.0 * r1 - r2 - 2.0 * c
    a = r1 - b - c
    return jnp.stack([a, b, c, d0, y0])


def _evaluate(coeffs, s):
    """Horner's rule on the rows of ``coeffs`` (highest power first)."""
    out = coeffs[0]
    for i in range(1, coeffs.shape[0]):
        out = out * s + coeffs[i]
    return out


def _error_ratio(error, rtol, atol, y_old, y_new):
    tol = atol + rtol * jnp.maximum(jnp.abs(y_old), jnp.abs(y_new))
    return _rms(error / tol.astype(abstractify(error).dtype))


def _next_step(dt, ratio):
    """The step size that should give an error ratio of about 1 next time."""
    shrink = jnp.where(ratio < 1.0, 1.0, _MAX_SHRINK)  # an accepted step never makes the next one smaller
    factor = jnp.minimum(_MAX_GROWTH, jnp.maximum(_SAFETY * ratio ** (-1.0 / _ORDER), shrink))
    return jnp.where(ratio == 0.0, dt * _MAX_GROWTH, dt * factor.astype(abstractify(dt).dtype))


def _first_step(fun: Callable, t0, y0, f0, rtol, atol, time_dtype):
    """Hairer, Nørsett and Wanner's initial step size for a method of order 4 (the embedded one)."""
    scale = atol + jnp.abs(y0) * rtol
    d0 = _norm(y0 / scale)
    d1 = _norm(f0 / scale)
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1).astype(time_dtype)
    f1 = fun(y0 + h0.astype(abstractify(y0).dtype) * f0, t0 + h0)
    d2 = (_norm((f1 - f0) / scale) / h0).astype(time_dtype)
    d1 = d1.astype(time_dtype)
    h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / jnp.maximum(d1, d2)) ** (1.0 / 5.0))
    return jnp.minimum(100.0 * h0, h1)


def _clip_step(dt, hmax):
    dt = jnp.maximum(dt, 0.0)
    return dt if math.isinf(hmax) else jnp.minimum(dt, hmax)


# -- the function on the raveled state ------------------------------------------------------------------
class _FlatFunc:
    """``func`` on the raveled state (1-D arrays of ``dtype`` in and out). ``fixed`` lists its arguments'
    non-inexact leaves (integers, booleans), by position among the leaves: they get no cotangent."""

    def __init__(self, func: Callable, unravel: Callable, dtype, arg_tree, fixed: set):
        self.func, self.unravel, self.dtype, self.arg_tree, self.fixed = func, unravel, dtype, arg_tree, fixed

    def __call__(self, y, t, *leaves):
        out = self.func(self.unravel(y), t, *tree_util.tree_unflatten(self.arg_tree, leaves))
        return jnp.concatenate([jnp.ravel(x).astype(self.dtype) for x in tree_util.tree_leaves(out)])


# -- the solver on the raveled state -----------------------------------------------------------------------
def _solve(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float, y0, ts, *args):
    """The solution at every time of ``ts`` (rows), ``func(y, t, *args)`` on 1-D ``y``."""
    def fun(y, t):
        return func(y, t, *args)

    time_dtype = abstractify(ts).dtype
    # i < mxstep for the step counter i (int32): i < ceil(mxstep).
    max_steps = None if mxstep >= 2**31 - 1 else int(math.ceil(mxstep))
    f0 = fun(y0, ts[0])
    dt = _clip_step(_first_step(fun, ts[0], y0, f0, rtol, atol, time_dtype), hmax)
    coeffs = jnp.stack([y0] * 5)  # before any step: the constant y0

    def to_output_time(carry, target):
        def unfinished(state):
            i, _, _, t, dt, _, _ = state
            going = (t < target) & (dt > 0)
            return going if max_steps is None else going & (i < max_steps)

        def step(state):
            i, y, f, t, dt, last_t, coeffs = state
            y_new, f_new, error, ks = _rk_step(fun, y, f, t, dt)
            ratio = _error_ratio(error, rtol, atol, y, y_new)
            accept = ratio <= 1.0
            dt_next = _clip_step(_next_step(dt, ratio), hmax)
            return (i + 1, jnp.where(accept, y_new, y), jnp.where(accept, f_new, f),
                    jnp.where(accept, t + dt, t), dt_next, jnp.where(accept, t, last_t),
                    jnp.where(accept, _interpolant(y, y_new, ks, dt), coeffs))

        _, *state = while_loop(unfinished, step, (jnp.zeros((), np.int32), *carry))
        _, _, t, _, last_t, coeffs = state
        s = (target - last_t) / (t - last_t)  # where target falls in the last accepted step
        return tuple(state), _evaluate(coeffs, s.astype(abstractify(coeffs).dtype))

    _, ys = scan(to_output_time, (y0, f0, ts[0], dt, ts[0], coeffs), ts[1:])
    return jnp.concatenate([y0[None], ys])


def _solve_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _solve_vjp(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _solve_bwd(func, rtol, atol, mxstep, hmax, residuals, g):
    with default_matmul_precision("highest"):
        return _adjoint(func, rtol, atol, mxstep, hmax, residuals, g)


def _adjoint(func: _FlatFunc, rtol, atol, mxstep, hmax, residuals, g):
    ys, ts, leaves = residuals
    # The arguments with cotangents: all but the integer and boolean ones.
    diff = [i for i in range(len(leaves)) if i not in func.fixed]

    def augmented(state, minus_t, *leaves):
        # In reversed time s = -t: dy/ds = -f, and the cotangents grow by the VJP of f with the state's one.
        y, y_bar = state[0], state[1]

        def f(y_, t_, *values):
            full = list(leaves)
            for i, v in zip(diff, values):
                full[i] = v
            return func(y_, t_, *full)
        y_dot, pullback = vjp(f, y, -minus_t, *[leaves[i] for i in diff])
        y_ct, t_ct, *arg_cts = pullback(y_bar)
        return (-y_dot, y_ct, t_ct, tuple(arg_cts))

    def back_one_interval(carry, i):
        y_bar, t0_bar, args_bar = carry
        # Moving the output time t_i moves y(t_i) by f(y_i, t_i).
        t_bar = jnp.real(jnp.sum(func(ys[i], ts[i], *leaves) * g[i])).astype(abstractify(ts).dtype)
        t0_bar = t0_bar - t_bar
        _, y_bar, t0_bar, args_bar = odeint(augmented, (ys[i], y_bar, t0_bar, args_bar),
                                            jnp.stack([-ts[i], -ts[i - 1]]), *leaves, rtol=rtol, atol=atol,
                                            mxstep=mxstep, hmax=hmax)
        y_bar, t0_bar, args_bar = tree_util.tree_map(lambda x: x[1], (y_bar, t0_bar, args_bar))
        return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

    n = abstractify(ts).shape[0]
    init = (g[-1], jnp.zeros((), abstractify(ts).dtype), tuple(jnp.zeros_like(leaves[i]) for i in diff))
    (y_bar, t0_bar, diff_bars), ts_bars = scan(back_one_interval, init, jnp.arange(n - 1, 0, -1))
    ts_bar = jnp.concatenate([t0_bar[None], ts_bars[::-1]])
    arg_bars = [None] * len(leaves)
    for i, v in zip(diff, diff_bars):
        arg_bars[i] = v
    return (y_bar, ts_bar, *arg_bars)


_solve_vjp = custom_vjp(_solve, nondiff_argnums=(0, 1, 2, 3, 4))
_solve_vjp.defvjp(_solve_fwd, _solve_bwd)


def _run(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    y_flat, unravel = ravel_pytree(y0)
    dtype = abstractify(y_flat).dtype
    leaves, arg_tree = tree_util.tree_flatten(args)
    leaves = [jnp.asarray(x) for x in leaves]
    fixed = {i for i, x in enumerate(leaves) if not dtypes.is_inexact(abstractify(x).dtype)}
    flat_func = _FlatFunc(func, unravel, dtype, arg_tree, fixed)
    ys = _solve_vjp(flat_func, rtol, atol, mxstep, hmax, y_flat, ts, *leaves)
    return _unravel_rows(ys, y0)


def _unravel_rows(ys, y0):
    """The rows of ``ys`` (one raveled state each) as ``y0``'s pytree, each leaf with a leading time axis."""
    leaves, tree = tree_util.tree_flatten(y0)
    n = abstractify(ys).shape[0]
    out, start = [], 0
    for leaf in leaves:
        a = abstractify(leaf)
        size = int(np.prod(a.shape, dtype=np.int64))
        piece = ys[:, start:start + size]
        if dtypes.is_complex(abstractify(ys).dtype) and not dtypes.is_complex(a.dtype):
            piece = lax.real(piece)
        out.append(piece.reshape((n, *a.shape)).astype(a.dtype))
        start += size
    return tree_util.tree_unflatten(tree, out)


# -- checks and the entry point ----------------------------------------------------------------------------
def _static_number(name: str, value: Any, *, positive: bool = False) -> float:
    if isinstance(value, (Tracer, np.ndarray)) or hasattr(value, "aval") or isinstance(value, bool) or \
            not isinstance(value, numbers.Real):
        raise KilnTypeError(f"{_WHERE}: {name} must be a Python number (it is a static setting of the solver, as in "
                            f"JAX), got {type(value).__name__} {value!r:.60}")
    value = float(value)
    if math.isnan(value) or value < 0 or (positive and value == 0):
        raise OdeintValueError(f"{_WHERE}: {name} must be {'positive' if positive else 'non-negative'}, got {value}")
    return value


def _check_args(args: tuple) -> None:
    for path, leaf in tree_util.tree_flatten_with_path(args)[0]:
        where = f"args{tree_util.keystr(path)}"
        ok = True
        try:
            aval = abstractify(leaf)
            ok = aval.dtype.kind in "biuf" or dtypes.is_inexact(aval.dtype)
        except TypeError:
            ok = False
        if not ok:
            raise KilnTypeError(
                f"{_WHERE}: the extra argument {where} is a {type(leaf).__name__} ({leaf!r:.60}), not an array. "
                "The *args of odeint are differentiated, so they must be arrays, scalars or pytrees of them. Pass "
                "any other value (a function, a string, an option) by closing over it: "
                "odeint(functools.partial(func, option=value), y0, t, *arrays), or "
                "odeint(lambda y, t, *a: func(y, t, *a, value), y0, t, *arrays).")


def _check_output(func: Callable, y_tree, y_avals: list, y_paths: list[str], name: str) -> Callable:
    """``func`` with a check that its output has the state's structure and shapes, and is not complex where
    the state is real (other dtypes are cast to the state's)."""
    def checked(y, t, *args):
        out = func(y, t, *args)
        leaves, tree = tree_util.tree_flatten(out)
        if tree != y_tree:
            raise ShapeError(f"{_WHERE}: func {name}(y, t, *args) must return dy/dt with the structure of y0, "
                             f"{y_tree}, but returned {tree}. Return one derivative per leaf of y0, in a container "
                             "of the same kind.")
        for where, leaf, a in zip(y_paths, leaves, y_avals):
            try:
                got = abstractify(leaf)
            except TypeError:
                raise KilnTypeError(f"{_WHERE}: func {name} returned a {type(leaf).__name__} ({leaf!r:.40}) as the "
                                    f"derivative of {where}, not an array") from None
            if got.shape != a.shape:
                raise ShapeError(f"{_WHERE}: func {name} returned a derivative of shape {got.shape} for {where}, "
                                 f"which has shape {a.shape}; dy/dt must have the shape of y (check how it "
                                 "broadcasts against t and the arguments)")
            if dtypes.is_complex(got.dtype) and not dtypes.is_complex(a.dtype):
                raise KilnTypeError(f"{_WHERE}: func {name} returned a complex derivative ({got.dtype.name}) for "
                                    f"{where}, which is real ({a.dtype.name}); make y0 complex to integrate a complex "
                                    "state")
        return out
    return checked


def _as_times(t) -> Any:
    """``t`` as a 1-D floating-point array, checked."""
    try:
        t = jnp.asarray(t)
    except (TypeError, ValueError):
        raise KilnTypeError(f"{_WHERE}: t must be a 1-D array of times, got {type(t).__name__} {t!r:.60}") from None
    aval = abstractify(t)
    if aval.ndim != 1 or aval.shape[0] == 0:
        hint = "; for one end time T pass t = jnp.array([t0, T])" if aval.ndim == 0 else ""
        raise ShapeError(f"{_WHERE}: t must be a non-empty 1-D array of times (t[0] the initial time), got shape "
                         f"{aval.shape}{hint}")
    if not dtypes.is_inexact(aval.dtype) or dtypes.is_complex(aval.dtype):
        raise KilnTypeError(f"{_WHERE}: t must be an array of real floating-point times, got {aval.dtype.name}; "
                            "convert it, e.g. t.astype(float) or jnp.linspace(0., 10., 101)")
    _check_increasing(t)
    return t


def _check_increasing(t) -> None:
    """Raise if concrete times decrease (JAX returns nan there). Traced times are not checked; nor are those
    that cannot be read without an error (a transfer guard that refuses it, an array on other processes)."""
    if isinstance(t, Tracer):
        return
    try:
        times = device_get(t)
    except (KilnError, RuntimeError, ValueError):
        return
    steps = np.diff(np.asarray(times))
    if np.any(steps < 0):
        k = int(np.argmax(steps < 0))
        raise OdeintValueError(f"{_WHERE}: the times t must be increasing, but t[{k + 1}] = {times[k + 1]} < "
                               f"t[{k}] = {times[k]}; to integrate backwards in time, integrate "
                               "lambda y, s, *args: -func(y, -s, *args) over s = -t")


def odeint(func: Callable, y0: Any, t: Any, *args: Any, rtol: float = 1.4e-8, atol: float = 1.4e-8,
           mxstep: float = math.inf, hmax: float = math.inf) -> Any:
    """Integrate ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0``, with adaptive Dormand–Prince steps.

    Parameters
    ----------
    func : callable
        ``func(y, t, *args)``: the time derivative of the state ``y`` at time ``t``, with ``y``'s pytree
        structure and shapes.
    y0 : array or pytree of arrays
        The state at ``t[0]`` (floating-point or complex).
    t : array
        1-D floating-point array of the output times, increasing; ``t[0]`` is the initial time.
    *args : arrays or pytrees of arrays
        Further arguments of ``func``; the solution is differentiable with respect to them. Other values
        (functions, strings, options) go in by closure or ``functools.partial``.
    rtol, atol : float
        Relative and absolute tolerance of each step's local error.
    mxstep : int or float
        The most steps (accepted or rejected) between two consecutive output times. When a span needs more,
        the outputs from there on are not accurate: extrapolated from the last accepted step, or inf/nan if
        none was accepted (as in JAX).
    hmax : float
        The largest step size.

    Returns
    -------
    The state at each time of ``t``: ``y0``'s pytree, each leaf with a leading axis of length ``len(t)``.

    Derivatives (reverse mode: ``grad``, ``vjp``) with respect to ``y0``, ``t`` and ``args`` solve the adjoint
    equation backwards in time with the same solver and tolerances. ``func`` may close over traced values
    (they are differentiated too).
    """
    if not callable(func):
        raise KilnTypeError(f"{_WHERE}: func must be a callable func(y, t, *args), got {type(func).__name__}")
    name = getattr(func, "__name__", type(func).__name__)
    rtol = _static_number("rtol", rtol)
    atol = _static_number("atol", atol)
    hmax = _static_number("hmax", hmax, positive=True)
    mxstep = _static_number("mxstep", mxstep)
    _check_args(args)
    t = _as_times(t)
    t_aval = abstractify(t)

    with_paths, y_tree = tree_util.tree_flatten_with_path(y0)
    if not with_paths:
        raise KilnTypeError(f"{_WHERE}: y0 has no arrays (structure {y_tree}); give the initial state as an array "
                            "or a pytree of arrays")
    y_paths = ["y0" + tree_util.keystr(path) for path, _ in with_paths]
    y_leaves = []
    for where, (_, leaf) in zip(y_paths, with_paths):
        try:
            a = abstractify(leaf)
        except TypeError:
            raise KilnTypeError(f"{_WHERE}: {where} is a {type(leaf).__name__} ({leaf!r:.60}), not an array; the "
                                "state must be an array or a pytree of arrays") from None
        if not dtypes.is_inexact(a.dtype):
            raise KilnTypeError(f"{_WHERE}: {where} has dtype {a.dtype.name}; the state must be floating-point or "
                                f"complex: convert it, e.g. y0.astype(float)")
        y_leaves.append(jnp.asarray(leaf))
    y0 = tree_util.tree_unflatten(y_tree, y_leaves)
    y_avals = [abstractify(x) for x in y_leaves]

    # One dtype for times, steps and the solver's clock: t's, or the state's real dtype if wider.
    time_dtype = dtypes.result_type(t_aval.dtype, *[_real_dtype(a.dtype) for a in y_avals])
    if time_dtype != t_aval.dtype:
        t = t.astype(time_dtype)

    y_example = tree_util.tree_unflatten(y_tree, [ShapedArray(a.shape, a.dtype) for a in y_avals])
    with default_matmul_precision("highest"):
        converted, consts = closure_convert(_check_output(func, y_tree, y_avals, y_paths, name),
                                            y_example, ShapedArray((), time_dtype), *args)
        # One program per call (a compiled one is found again by its text): a jit whose function is this call's
        # own, so that no cache keeps the converted function (and the arrays it closes over).
        return jit(functools.partial(_run, converted, rtol, atol, mxstep, hmax))(y0, t, *args, *consts)
