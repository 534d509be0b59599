"""Line searches (optax's): pick a step size along the update direction by further calls of the objective.
Both run as one ``while_loop`` (they jit), with optax's order of floating-point operations."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, NamedTuple

from .. import lax
from .. import numpy as jnp
from ..ad.api import linear_transpose, linearize
from ..ad.api import value_and_grad as _value_and_grad
from ..control.api import cond, while_loop
from ..core.tree_util import tree_leaves
from ..lax.callbacks import debug_print
from .numerics import safe_increment
from .transforms import GradientTransformationExtraArgs
from .tree_utils import (
    tree_add_scale,
    tree_cast_like,
    tree_conj,
    tree_get,
    tree_real,
    tree_scale,
    tree_vdot,
    tree_where,
    tree_zeros_like,
)

__all__ = [
    "ScaleByBacktrackingLinesearchState", "scale_by_backtracking_linesearch",
    "ZoomLinesearchInfo", "ScaleByZoomLinesearchState", "scale_by_zoom_linesearch",
    "value_and_grad_from_state",
]


# ---------------------------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------------------------

def _value_dtype(params):
    # the objective's dtype: the real part of the first leaf's (complex parameters have real values)
    return jnp.real(jnp.empty((), tree_leaves(params)[0].dtype)).dtype


def _check_extra_args(where: str, value, grad, value_fn) -> None:
    missing = [name for name, v in (("value", value), ("grad", grad), ("value_fn", value_fn)) if v is None]
    if missing:
        raise TypeError(f"{where}.update: missing keyword argument(s) {', '.join(missing)}; a line search needs "
                        "the objective's value and gradient at params and the objective itself: call "
                        "update(updates, state, params, value=value, grad=grad, value_fn=fn) (see "
                        "kiln.optim.value_and_grad_from_state).")
    if not callable(value_fn):
        raise TypeError(f"{where}.update: value_fn must be the objective (a callable params -> scalar), got "
                        f"{type(value_fn).__name__}.")


def _check_params(where: str, params) -> None:
    if params is None or not tree_leaves(params):
        raise ValueError(f"{where}.update: needs the current params (the line search evaluates value_fn at "
                         "params + stepsize * updates); call update(updates, state, params, ...).")


def _split_fn_kwargs(where: str, value_fn: Callable, extra_args: dict) -> dict:
    """The extra keyword arguments that ``value_fn`` takes (by name); any other is an error."""
    names = set(inspect.signature(value_fn).parameters)
    unused = sorted(k for k in extra_args if k not in names)
    if unused:
        raise TypeError(f"{where}.update: unexpected keyword arguments {unused}: they are not parameters of "
                        "value_fn, which receives the extra keyword arguments of update. Make value_fn accept "
                        "them, or do not pass them.")
    return {k: v for k, v in extra_args.items() if k in names}


def _cond_print(condition, message: str, **kwargs) -> None:
    """Prints ``message`` (formatted with ``kwargs``) when ``condition`` holds, at run time."""
    def show(_):
        debug_print(message, **kwargs, ordered=True)
    cond(condition, show, lambda _: None, None)


def _check_nonnegative_int(where: str, name: str, value) -> None:
    # Python numbers only: optax also takes arrays here, which are checked by nobody
    if isinstance(value, bool) or (isinstance(value, (int, float)) and value < 0):
        raise ValueError(f"{where}: {name} must be a non-negative number of iterations, got {value!r}.")


# ---------------------------------------------------------------------------------------------------------------
# Backtracking line search (Armijo's sufficient decrease)
# ---------------------------------------------------------------------------------------------------------------

class BacktrackingLinesearchInfo(NamedTuple):
    """Diagnostics of a backtracking round: its number of steps and its final decrease error (> 0: failed)."""
    num_linesearch_steps: Any
    decrease_error: Any


class ScaleByBacktrackingLinesearchState(NamedTuple):
    """The learning rate found, the objective's value (and gradient if ``store_grad``, else None) there."""
    learning_rate: Any
    value: Any
    grad: Any
    info: BacktrackingLinesearchInfo


class BacktrackingLineSearchState(NamedTuple):
    """The carry of the backtracking loop."""
    learning_rate: Any
    new_value: Any
    new_grad: Any
    decrease_error: Any
    iter_num: Any


def scale_by_backtracking_linesearch(max_backtracking_steps, slope_rtol=1e-4, decrease_factor=0.8,
                                     increase_factor=1.5, max_learning_rate=1.0, atol=0.0, rtol=0.0,
                                     store_grad: bool = False,
                                     verbose: bool = False) -> GradientTransformationExtraArgs:
    """Scales the updates by a learning rate giving sufficient decrease (Armijo):
    ``f(w + lr u) <= (1 + rtol) f(w) + lr slope_rtol <u, grad f(w)> + atol``, found by shrinking
    ``min(increase_factor * previous lr, max_learning_rate)`` by ``decrease_factor``. ``update`` takes
    ``value=``, ``grad=``, ``value_fn=`` and any extra keyword arguments of ``value_fn``."""
    where = "scale_by_backtracking_linesearch"
    _check_nonnegative_int(where, "max_backtracking_steps", max_backtracking_steps)

    def init(params):
        dtype = _value_dtype(params)
        return ScaleByBacktrackingLinesearchState(
            learning_rate=jnp.array(1.0, dtype=dtype),
            value=jnp.array(jnp.inf, dtype=dtype),
            grad=tree_zeros_like(params) if store_grad else None,
            info=BacktrackingLinesearchInfo(num_linesearch_steps=jnp.asarray(0),
                                            decrease_error=jnp.array(jnp.inf, dtype=dtype)))

    def decrease_error_at(stepsize, slope, value, new_value):
        error = new_value - (1.0 + rtol) * value - stepsize * slope_rtol * slope
        error = jnp.where(jnp.isnan(error), jnp.inf, error)  # a nan value is a failure
        return jnp.maximum(error, 0.0)

    def update(updates, state, params=None, *, value=None, grad=None, value_fn=None, **extra_args):
        _check_extra_args(where, value, grad, value_fn)
        _check_params(where, params)
        fn_kwargs = _split_fn_kwargs(where, value_fn, extra_args)
        fn = functools.partial(value_fn, **fn_kwargs)
        # slope of lr -> f(params + lr * updates) at 0: negative for a descent direction
        slope = tree_real(tree_vdot(updates, tree_conj(grad)))

        def keep_going(s):
            return (~(s.decrease_error <= atol)) & (s.iter_num <= max_backtracking_steps)

        def step(s):
            # the first trial is the guess itself; later ones shrink it
            learning_rate = jnp.where(s.iter_num > 0, decrease_factor * s.learning_rate, s.learning_rate)
            new_params = tree_add_scale(params, learning_rate, updates)
            new_grad = s.new_grad
            if store_grad:
                # the value now; the gradient (transposing the linearization) only at the last trial
                new_value, jvp_fn = linearize(fn, new_params)
                error = decrease_error_at(learning_rate, slope, value, new_value)
                new_grad = cond((error <= atol) | (s.iter_num == max_backtracking_steps),
                                lambda p: linear_transpose(jvp_fn, p)(1.0)[0], lambda *_: new_grad, new_params)
            else:
                new_value = fn(new_params)
                error = decrease_error_at(learning_rate, slope, value, new_value)
            new = BacktrackingLineSearchState(learning_rate, new_value, new_grad, error, s.iter_num + 1)
            return tree_cast_like(new, s)

        guess = jnp.minimum(increase_factor * state.learning_rate, max_learning_rate)
        init_search = BacktrackingLineSearchState(learning_rate=guess, new_value=value,
                                                  new_grad=tree_zeros_like(params),
                                                  decrease_error=jnp.array(jnp.inf), iter_num=0)
        s = while_loop(keep_going, step, init_search)
        # an infinite error (nan or inf values everywhere tried): no step at all
        learning_rate = jnp.where(jnp.isinf(s.decrease_error), 0.0, s.learning_rate)
        if verbose:
            _cond_print(s.decrease_error > atol,
                        "INFO: optax.scale_by_backtracking_linesearch:\nBacktracking linesearch failed to find a "
                        "stepsize ensuring sufficent decrease.\nValue at current params: {value},\nSlope along "
                        "update direction: {slope}\nStepsize: {stepsize}\nDecrease Error: {decrease_error}",
                        stepsize=s.learning_rate, decrease_error=s.decrease_error, value=value, slope=slope)
            _cond_print(jnp.isinf(s.decrease_error), "Using a stepsize of 0 to avoid infinite or nan values.")
        new_state = ScaleByBacktrackingLinesearchState(
            learning_rate=learning_rate, value=s.new_value, grad=s.new_grad if store_grad else None,
            info=BacktrackingLinesearchInfo(num_linesearch_steps=s.iter_num, decrease_error=s.decrease_error))
        return tree_scale(learning_rate, updates), tree_cast_like(new_state, state)
    return GradientTransformationExtraArgs(init, update)


# ---------------------------------------------------------------------------------------------------------------
# Zoom line search (strong Wolfe conditions; Nocedal & Wright, algorithms 3.5 and 3.6)
# ---------------------------------------------------------------------------------------------------------------

_INTERVAL_NOT_FOUND = ("No interval satisfying curvature condition. Consider increasing maximal possible stepsize "
                       "of the linesearch.")
_INTERVAL_TOO_SMALL = "Length of searched interval has been reduced below threshold."
_CURVATURE_NOT_SATISFIED = "Returning stepsize with sufficient decrease but curvature condition not satisfied."
_NO_STEPSIZE_FOUND = "Linesearch failed, no stepsize satisfying sufficient decrease found."
_NOT_A_DESCENT_DIRECTION = "The linesearch failed because the provided direction is not a descent direction. "


class ZoomLinesearchState(NamedTuple):
    """The carry of the zoom line search. ``low``/``high`` bracket a valid step size, ``low`` having the
    smaller value (not necessarily the smaller step); ``safe_*`` is the best step with sufficient decrease."""
    count: Any
    params: Any
    updates: Any
    stepsize_guess: Any
    stepsize: Any
    value: Any
    grad: Any
    slope: Any
    value_init: Any
    slope_init: Any
    decrease_error: Any
    curvature_error: Any
    error: Any
    interval_found: Any
    done: Any
    failed: Any
    low: Any
    value_low: Any
    slope_low: Any
    high: Any
    value_high: Any
    slope_high: Any
    cubic_ref: Any
    value_cubic_ref: Any
    safe_stepsize: Any
    safe_value: Any
    safe_grad: Any


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """A critical point of the cubic through (a, fa), (b, fb), (c, fc) with slope fpa at a (nan if none):
    scipy's line-search interpolation."""
    C = fpa  # noqa: N806 (the polynomial's coefficients, as in the references)
    db = b - a
    dc = c - a
    denom = (db * dc) ** 2 * (db - dc)
    d1 = jnp.array([[dc ** 2, -(db ** 2)], [-(dc ** 3), db ** 3]])
    coefs = jnp.dot(d1, jnp.array([fb - fa - C * db, fc - fa - C * dc]), precision=lax.Precision.HIGHEST) / denom
    A, B = coefs[0], coefs[1]  # noqa: N806
    radical = B * B - 3.0 * A * C
    return a + (-B + jnp.sqrt(radical)) / (3.0 * A)


def _quadmin(a, fa, fpa, b, fb):
    """The critical point of the quadratic through (a, fa), (b, fb) with slope fpa at a."""
    db = b - a
    B = (fb - fa - fpa * db) / (db ** 2)  # noqa: N806
    return a - fpa / (2.0 * B)


def _zoom_linesearch(max_linesearch_steps, max_stepsize, tol, increase_factor, slope_rtol, curv_rtol,
                     approx_dec_rtol, interval_threshold, verbose):
    """The zoom line search as ``(init, step, keep_going)`` for a ``while_loop`` over ZoomLinesearchState."""

    def value_and_slope_on_line(value_and_grad_fn, params, stepsize, updates, fn_kwargs):
        step = tree_add_scale(params, stepsize, updates)
        value_step, grad_step = value_and_grad_fn(step, **fn_kwargs)
        slope_step = tree_real(tree_vdot(tree_conj(grad_step), updates))
        return value_step, grad_step, slope_step

    def decrease_error_at(stepsize, value_step, slope_step, value_init, slope_init):
        # Armijo's sufficient decrease (Nocedal & Wright eq. 3.7a) ...
        error = value_step - value_init - slope_rtol * stepsize * slope_init
        if approx_dec_rtol is not None:
            # ... or, close enough to a minimum (where Armijo's criterion drowns in rounding), Hager & Zhang's
            # approximate decrease (their eq. 23, restricted by eqs. 26-27): whichever is met
            approx_error = slope_step - (2 * slope_rtol - 1.0) * slope_init
            delta_values = value_step - value_init - approx_dec_rtol * jnp.abs(value_init)
            approx_error = jnp.maximum(approx_error, delta_values)
            error = jnp.minimum(approx_error, error)
        error = jnp.maximum(error, 0.0)
        return jnp.where(jnp.isnan(error), jnp.inf, error)  # a nan value is a failure

    def curvature_error_at(slope_step, slope_init):
        error = jnp.abs(slope_step) - curv_rtol * jnp.abs(slope_init)  # Nocedal & Wright eq. 3.7b
        error = jnp.maximum(error, 0.0)
        return jnp.where(jnp.isnan(error), jnp.inf, error)

    def failure_diagnostic(state):
        debug_print(_NO_STEPSIZE_FOUND)
        slope_init = state.slope_init
        is_descent_dir = slope_init < 0.0
        _cond_print(~is_descent_dir, _NOT_A_DESCENT_DIRECTION + "The slope (={slope_init}) at stepsize=0 should "
                    "be negative", slope_init=slope_init)
        _cond_print(is_descent_dir, "Consider augmenting the maximal number of linesearch iterations.")
        eps = jnp.finfo(jnp.float32).eps
        _cond_print((state.stepsize < eps) & is_descent_dir,
                    "Computed stepsize (={stepsize}) is below machine precision (={eps}), consider passing to "
                    "higher precision like x64, using kiln.config.update('jax_enable_x64', True).",
                    stepsize=state.stepsize, eps=eps)
        abs_slope_init = jnp.abs(slope_init)
        _cond_print((abs_slope_init > 1e16) & is_descent_dir,
                    "Very large absolute slope at stepsize=0. (|slope|={abs_slope_init}). The objective is badly "
                    "conditioned. Consider reparameterizing objective (e.g., normalizing parameters) or finding a "
                    "better guess for the initial parameters for the solver.", abs_slope_init=abs_slope_init)
        outside_domain = jnp.isinf(state.decrease_error)
        _cond_print(outside_domain, "Cannot even make a step without getting Inf or Nan. The linesearch won't "
                    "make a step and the optimizer is stuck.")
        _cond_print(~outside_domain, "Making an unsafe step, not decreasing enough the objective. Convergence "
                    "of the solver is compromised as it does not reduce values.")

    def report_failure(state):
        debug_print("INFO: optax.scale_by_zoom_linesearch:\nValue at current params: {value_init}\nSlope along "
                    "update direction: {slope_init}\nStepsize reached: {stepsize}\nDecrease Error: "
                    "{decrease_error}\nCurvature Error: {curvature_error}", value_init=state.value_init,
                    slope_init=state.slope_init, stepsize=state.stepsize, decrease_error=state.decrease_error,
                    curvature_error=state.curvature_error, ordered=True)
        interval_length = jnp.abs(state.low - state.high)
        _cond_print(interval_length <= interval_threshold,
                    _INTERVAL_TOO_SMALL + " Interval length: {interval_length}.", interval_length=interval_length)

        def curvature_only(s):
            debug_print(_CURVATURE_NOT_SATISFIED + " Stepsize ensuring sufficient decrease: {safe_stepsize}.",
                        safe_stepsize=s.safe_stepsize)
        cond(state.safe_stepsize > 0.0, curvature_only, failure_diagnostic, state)

    def try_safe_step(state):
        """On failure, falls back on the best step with sufficient decrease found (if any)."""
        outside_domain = jnp.isinf(state.decrease_error)
        stepsize, value, grad = tree_where((state.safe_stepsize > 0.0) | outside_domain,
                                           [state.safe_stepsize, state.safe_value, state.safe_grad],
                                           [state.stepsize, state.value, state.grad])
        if verbose:
            report_failure(state)
        return tree_cast_like(state._replace(stepsize=stepsize, grad=grad, value=value), state)

    def search_interval(state, value_and_grad_fn, fn_kwargs):
        """Grows the step until it brackets a valid one (Nocedal & Wright, algorithm 3.5)."""
        iter_num = state.count
        prev_stepsize, prev_value, prev_slope = state.stepsize, state.value, state.slope
        new_stepsize = jnp.where(iter_num == 0, state.stepsize_guess, increase_factor * prev_stepsize)
        if max_stepsize is not None:
            max_stepsize_reached = new_stepsize >= max_stepsize
            new_stepsize = jnp.minimum(new_stepsize, max_stepsize)
        else:
            max_stepsize_reached = jnp.asarray(False)
        new_value, new_grad, new_slope = value_and_slope_on_line(value_and_grad_fn, state.params, new_stepsize,
                                                                 state.updates, fn_kwargs)
        decrease_error = decrease_error_at(new_stepsize, new_value, new_slope, state.value_init, state.slope_init)
        curvature_error = curvature_error_at(new_slope, state.slope_init)
        new_error = jnp.maximum(decrease_error, curvature_error)

        # kept in case the curvature condition cannot be met
        safe_stepsize, safe_value, safe_grad = tree_where(
            decrease_error <= tol, [new_stepsize, new_value, new_grad],
            [state.safe_stepsize, state.safe_value, state.safe_grad])

        set_high_to_new = (decrease_error > 0.0) | ((new_value >= prev_value) & (iter_num > 0))
        set_low_to_new = (new_slope >= 0.0) & (~set_high_to_new)
        low, value_low, slope_low, high, value_high, slope_high = tree_where(
            set_low_to_new, [new_stepsize, new_value, new_slope, prev_stepsize, prev_value, prev_slope],
            [prev_stepsize, prev_value, prev_slope, new_stepsize, new_value, new_slope])

        interval_found = set_high_to_new | set_low_to_new | (new_error <= tol)
        # at the largest step without a bracket, no larger step can meet the curvature condition: stop there
        done = (new_error <= tol) | (max_stepsize_reached & ~interval_found)
        if verbose:
            _cond_print(max_stepsize_reached & ~interval_found,
                        "INFO: optax.scale_by_zoom_linesearch:\nValue at current params: {value_init}\nSlope along "
                        "update direction: {slope_init}\nStepsize reached: {stepsize}\nDecrease Error: "
                        "{decrease_error}\nCurvature Error: {curvature_error}" + _INTERVAL_NOT_FOUND + "\n"
                        + _CURVATURE_NOT_SATISFIED, value_init=state.value_init, slope_init=state.slope_init,
                        stepsize=new_stepsize, decrease_error=decrease_error, curvature_error=curvature_error)
        failed = (iter_num + 1 >= max_linesearch_steps) & (~done)
        new_state = state._replace(
            count=safe_increment(iter_num), stepsize=new_stepsize, value=new_value, grad=new_grad, slope=new_slope,
            decrease_error=decrease_error, curvature_error=curvature_error, error=new_error,
            interval_found=jnp.asarray(interval_found), done=jnp.asarray(done), failed=jnp.asarray(failed),
            low=low, value_low=value_low, slope_low=slope_low, high=high, value_high=value_high,
            slope_high=slope_high, cubic_ref=low, value_cubic_ref=value_low,
            safe_stepsize=safe_stepsize, safe_value=safe_value, safe_grad=safe_grad)
        return tree_cast_like(new_state, state)

    def zoom_into_interval(state, value_and_grad_fn, fn_kwargs):
        """Shrinks the bracket by interpolation or bisection (Nocedal & Wright, algorithm 3.6)."""
        iter_num = state.count
        low, value_low, slope_low = state.low, state.value_low, state.slope_low
        high, value_high, slope_high = state.high, state.value_high, state.slope_high
        delta = jnp.abs(high - low)
        left = jnp.minimum(high, low)
        right = jnp.maximum(high, low)
        cubic_chk = 0.2 * delta
        quad_chk = 0.1 * delta
        # a threshold well above machine precision: a step with sufficient decrease is taken rather than
        # spending iterations on the curvature condition
        too_small_int = delta <= interval_threshold

        # the cubic's minimizer, else the quadratic's, if well inside the interval; else the midpoint
        middle_cubic = _cubicmin(low, value_low, slope_low, high, value_high, state.cubic_ref,
                                 state.value_cubic_ref)
        use_cubic = (middle_cubic > left + cubic_chk) & (middle_cubic < right - cubic_chk)
        middle_quad = _quadmin(low, value_low, slope_low, high, value_high)
        use_quad = (~use_cubic) & (middle_quad > left + quad_chk) & (middle_quad < right - quad_chk)
        use_bisection = (~use_cubic) & (~use_quad)
        middle = jnp.where(use_cubic, middle_cubic, state.cubic_ref)
        middle = jnp.where(use_quad, middle_quad, middle)
        middle = jnp.where(use_bisection, (low + high) / 2.0, middle)

        value_middle, grad_middle, slope_middle = value_and_slope_on_line(value_and_grad_fn, state.params, middle,
                                                                          state.updates, fn_kwargs)
        decrease_error = decrease_error_at(middle, value_middle, slope_middle, state.value_init, state.slope_init)
        curvature_error = curvature_error_at(slope_middle, state.slope_init)
        new_error = jnp.maximum(decrease_error, curvature_error)

        # the safe step: the smallest value with sufficient decrease
        update_safe = (decrease_error <= tol) & (value_middle < state.safe_value)
        safe_stepsize, safe_value, safe_grad = tree_where(
            update_safe, [middle, value_middle, grad_middle],
            [state.safe_stepsize, state.safe_value, state.safe_grad])
        done = new_error <= tol

        set_high_to_middle = (decrease_error > 0.0) | (value_middle >= value_low)
        set_high_to_low = (slope_middle * (high - low) >= 0.0) & (~set_high_to_middle)
        set_low_to_middle = ~set_high_to_middle
        middle_point = [middle, value_middle, slope_middle]
        new_high = tree_where(set_high_to_middle, middle_point, [high, value_high, slope_high])
        new_high = tree_where(set_high_to_low, [low, value_low, slope_low], new_high)
        new_low = tree_where(set_low_to_middle, middle_point, [low, value_low, slope_low])
        # the point that left the bracket is the next cubic's third point
        cubic_ref, value_cubic_ref = tree_where(set_high_to_middle | set_high_to_low, [high, value_high],
                                                [low, value_low])
        # stop when the bracket is too small, once a step with sufficient decrease is known (very steep
        # objectives need tiny steps, so not before)
        max_iter_reached = (iter_num + 1) >= max_linesearch_steps
        failed = (jnp.asarray(max_iter_reached) | (too_small_int & (safe_stepsize > 0.0))) & ~done
        new_state = state._replace(
            count=safe_increment(iter_num), stepsize=middle, value=value_middle, grad=grad_middle, slope=slope_middle,
            decrease_error=decrease_error, curvature_error=curvature_error, error=new_error, done=done,
            failed=failed, low=new_low[0], value_low=new_low[1], slope_low=new_low[2], high=new_high[0],
            value_high=new_high[1], slope_high=new_high[2], cubic_ref=cubic_ref, value_cubic_ref=value_cubic_ref,
            safe_stepsize=safe_stepsize, safe_value=safe_value, safe_grad=safe_grad)
        return tree_cast_like(new_state, state)

    def init(updates, params, *, value, grad, prev_stepsize=1.0, initial_guess_strategy="one"):
        if initial_guess_strategy == "one":
            stepsize_guess = jnp.asarray(1.0)
        elif initial_guess_strategy == "keep":
            stepsize_guess = prev_stepsize
        else:
            raise ValueError(f"scale_by_zoom_linesearch: unknown initial_guess_strategy "
                             f"{initial_guess_strategy!r}; use 'one' or 'keep'.")
        dtype = _value_dtype(params)
        slope = tree_real(tree_vdot(updates, grad))
        zero = jnp.asarray(0.0)
        inf = jnp.asarray(jnp.inf)
        return ZoomLinesearchState(
            count=jnp.asarray(0), params=params, updates=updates, stepsize_guess=stepsize_guess,
            stepsize=jnp.asarray(0.0, dtype=dtype), value=jnp.array(value, dtype=dtype), grad=grad, slope=slope,
            value_init=value, slope_init=slope, decrease_error=inf, curvature_error=inf, error=inf,
            interval_found=jnp.asarray(False), done=jnp.asarray(False), failed=jnp.asarray(False),
            low=zero, value_low=value, slope_low=slope, high=zero, value_high=value, slope_high=slope,
            cubic_ref=zero, value_cubic_ref=value, safe_stepsize=zero, safe_value=value, safe_grad=grad)

    def step(state, *, value_and_grad_fn, fn_kwargs):
        new_state = cond(state.interval_found,
                         functools.partial(zoom_into_interval, value_and_grad_fn=value_and_grad_fn,
                                           fn_kwargs=fn_kwargs),
                         functools.partial(search_interval, value_and_grad_fn=value_and_grad_fn,
                                           fn_kwargs=fn_kwargs),
                         state)
        new_state = cond(new_state.failed, try_safe_step, lambda s: s, new_state)
        return tree_cast_like(new_state, state)

    def keep_going(state):
        return ~(state.done | state.failed)

    return init, step, keep_going


class ZoomLinesearchInfo(NamedTuple):
    """Diagnostics of a zoom round: its number of steps, its final sufficient-decrease error (> 0: the values
    may not decrease) and curvature error (> 0: e.g. a too small max_learning_rate)."""
    num_linesearch_steps: Any
    decrease_error: Any
    curvature_error: Any


class ScaleByZoomLinesearchState(NamedTuple):
    """The learning rate found, the objective's value and gradient there, and diagnostics."""
    learning_rate: Any
    value: Any
    grad: Any
    info: ZoomLinesearchInfo


def scale_by_zoom_linesearch(max_linesearch_steps, max_learning_rate=None, tol=0.0, increase_factor=2.0,
                             slope_rtol=1e-4, curv_rtol=0.9, approx_dec_rtol=1e-6, stepsize_precision=1e-5,
                             initial_guess_strategy: str = "keep",
                             verbose: bool = False) -> GradientTransformationExtraArgs:
    """Scales the updates by a learning rate meeting the strong Wolfe conditions: sufficient decrease
    ``f(w + lr u) <= f(w) + slope_rtol lr <u, grad f(w)> + tol`` (or Hager & Zhang's approximate decrease near a
    minimum, unless ``approx_dec_rtol`` is None) and small curvature
    ``|<grad f(w + lr u), u>| <= curv_rtol |<grad f(w), u>| + tol``. The search starts at 1
    (``initial_guess_strategy='one'``) or at the previous learning rate (``'keep'``). ``update`` takes
    ``value=``, ``grad=``, ``value_fn=`` and any extra keyword arguments of ``value_fn``."""
    where = "scale_by_zoom_linesearch"
    _check_nonnegative_int(where, "max_linesearch_steps", max_linesearch_steps)
    if initial_guess_strategy not in ("one", "keep"):
        raise ValueError(f"{where}: unknown initial_guess_strategy {initial_guess_strategy!r}; use 'one' (start "
                         "each search at 1) or 'keep' (start at the previous learning rate).")
    init_ls, step_ls, keep_going = _zoom_linesearch(
        max_linesearch_steps=max_linesearch_steps, max_stepsize=max_learning_rate, tol=tol,
        increase_factor=increase_factor, slope_rtol=slope_rtol, curv_rtol=curv_rtol,
        approx_dec_rtol=approx_dec_rtol, interval_threshold=stepsize_precision, verbose=verbose)

    def init(params):
        dtype = _value_dtype(params)
        return ScaleByZoomLinesearchState(
            learning_rate=jnp.asarray(1.0, dtype=dtype), value=jnp.asarray(jnp.inf, dtype=dtype),
            grad=tree_zeros_like(params),
            info=ZoomLinesearchInfo(num_linesearch_steps=jnp.asarray(0), decrease_error=jnp.asarray(jnp.inf),
                                    curvature_error=jnp.asarray(jnp.inf)))

    def update(updates, state, params=None, *, value=None, grad=None, value_fn=None, **extra_args):
        _check_extra_args(where, value, grad, value_fn)
        _check_params(where, params)
        fn_kwargs = _split_fn_kwargs(where, value_fn, extra_args)
        init_state = init_ls(updates, params, value=value, grad=grad, prev_stepsize=state.learning_rate,
                             initial_guess_strategy=initial_guess_strategy)
        final = while_loop(keep_going, functools.partial(step_ls, value_and_grad_fn=_value_and_grad(value_fn),
                                                         fn_kwargs=fn_kwargs), init_state)
        new_state = ScaleByZoomLinesearchState(
            learning_rate=final.stepsize, value=final.value, grad=final.grad,
            info=ZoomLinesearchInfo(num_linesearch_steps=final.count, decrease_error=final.decrease_error,
                                    curvature_error=final.curvature_error))
        return tree_scale(final.stepsize, updates), tree_cast_like(new_state, state)
    return GradientTransformationExtraArgs(init, update)


# ---------------------------------------------------------------------------------------------------------------
# Reusing the line search's last evaluation
# ---------------------------------------------------------------------------------------------------------------

def value_and_grad_from_state(value_fn: Callable) -> Callable:
    """Like ``value_and_grad(value_fn)`` but called as ``f(params, *args, state=opt_state, **kwargs)``: returns
    the value and gradient that the line search stored in ``opt_state`` (computed at these params by its
    last trial), or computes them when the stored value is not finite (at the first step)."""
    if not callable(value_fn):
        raise TypeError(f"value_and_grad_from_state: value_fn must be the objective (a callable), got "
                        f"{type(value_fn).__name__}.")

    def fn(params, *fn_args, state, **fn_kwargs):
        value = tree_get(state, "value")
        grad = tree_get(state, "grad")
        if value is None or grad is None:
            raise ValueError("value_and_grad_from_state: no 'value' or 'grad' in the optimizer state; use an "
                             "optimizer whose line search stores them (scale_by_zoom_linesearch, or "
                             "scale_by_backtracking_linesearch(..., store_grad=True)), or compute them with "
                             "kiln.value_and_grad.")
        return cond((~jnp.isinf(value)) & (~jnp.isnan(value)),
                    lambda *_: (value, grad),
                    lambda p, a, kwa: _value_and_grad(value_fn)(p, *a, **kwa),
                    params, fn_args, fn_kwargs)
    return fn
