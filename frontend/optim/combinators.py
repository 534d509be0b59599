"""optax's wrappers and combinators: skipping, conditional and periodic updates, moving averages, monitoring,
freezing, named chains and lookahead."""
from __future__ import annotations

import collections
import logging
import numbers
from typing import Any, Callable, NamedTuple, Optional, Protocol, Union

from .. import numpy as jnp
from ..control.api import cond
from ..core.tree_util import tree_leaves, tree_map
from .microbatching import microbatch  # (optax has it at the top level too: optax.microbatch)
from .transforms import (
    GradientTransformation,
    GradientTransformationExtraArgs,
    _bias_correction,
    _check_transform,
    _increment,
    _zeros_count,
    chain,
    masked,
    partition,
    set_to_zero,
    stateless,
    with_extra_args_support,
)

__all__ = [
    "ShouldSkipUpdateFunction", "skip_not_finite", "skip_large_updates", "EmaState", "ema", "ApplyEvery",
    "apply_every", "ConditionFn", "ConditionallyTransformState", "conditionally_transform", "ConditionallyMaskState",
    "conditionally_mask", "freeze", "selective_transform", "named_chain", "SnapshotState", "snapshot",
    "MonitorState", "monitor", "measure_with_ema", "periodic_update", "incremental_update", "LookaheadState",
    "LookaheadParams", "lookahead", "MaskOrFn", "microbatch",
]

MaskOrFn = Optional[Union[Any, Callable[[Any], Any]]]  # a mask pytree, or a callable of the params returning one


# -- skipping updates (for MultiSteps' should_skip_update_fn) ------------------------------------------------
class ShouldSkipUpdateFunction(Protocol):
    """``fn(updates, gradient_step, params) -> (skip, skip_state)``: ``skip`` a boolean scalar array."""

    def __call__(self, updates: Any, gradient_step: Any, params: Optional[Any]) -> tuple[Any, Any]: ...


def skip_not_finite(updates, gradient_step, params):
    """Skip when any update is NaN or infinite; the state says how many elements were."""
    counts = [jnp.sum(jnp.logical_not(jnp.isfinite(u))) for u in tree_leaves(updates)]
    num_not_finite = jnp.sum(jnp.array(counts))
    should_skip = num_not_finite > 0
    return should_skip, {"should_skip": should_skip, "num_not_finite": num_not_finite}


def skip_large_updates(updates, gradient_step, params, max_squared_norm):
    """Skip when the updates' squared l2 norm is not below ``max_squared_norm`` (or is NaN); bind
    ``max_squared_norm`` with ``functools.partial`` to pass it as MultiSteps' should_skip_update_fn."""
    norm_sq = jnp.sum(jnp.array([jnp.sum(u ** 2) for u in tree_leaves(updates)]))
    should_skip = jnp.logical_not(norm_sq < max_squared_norm)
    return should_skip, {"should_skip": should_skip, "norm_squared": norm_sq}


# -- moving averages and accumulation ----------------------------------------------------------------------
class EmaState(NamedTuple):
    count: Any
    ema: Any


def ema(decay, debias: bool = True, accumulator_dtype=None) -> GradientTransformation:
    """The exponential moving average of the updates, ``decay * ema + (1 - decay) * g``, bias-corrected when
    ``debias``; the average is kept in ``accumulator_dtype`` when given."""
    def init(params):
        return EmaState(_zeros_count(), tree_map(lambda p: jnp.zeros_like(p, dtype=accumulator_dtype), params))

    def update(updates, state, params=None):
        new_ema = tree_map(lambda g, t: (1 - decay) * g + decay * t, updates, state.ema)
        count = _increment(state.count)
        out = _bias_correction(new_ema, decay, count) if debias else new_ema
        if accumulator_dtype is not None:
            new_ema = tree_map(lambda t: t.astype(accumulator_dtype), new_ema)
        return out, EmaState(count, new_ema)
    return GradientTransformation(init, update)


class ApplyEvery(NamedTuple):
    count: Any
    grad_acc: Any


def apply_every(k=1) -> GradientTransformation:
    """Sums the updates of ``k`` steps and emits the sum on every k-th step (zeros on the others)."""
    if isinstance(k, numbers.Number) and not (isinstance(k, numbers.Integral) and k >= 1):
        raise ValueError(f"apply_every: k must be an int >= 1 (the number of steps to accumulate), got {k!r}.")

    def init(params):
        return ApplyEvery(_zeros_count(), tree_map(jnp.zeros_like, params))

    def update(updates, state, params=None):
        # optax's arithmetic: the 0/1 of the flags multiply, so the numbers are optax's
        c = state.count % k
        keep = c != 0
        grad_acc = tree_map(lambda g, ga: keep * ga + g, updates, state.grad_acc)
        emit = c == k - 1
        return tree_map(lambda ga: emit * ga, grad_acc), ApplyEvery(_increment(state.count) % k, grad_acc)
    return GradientTransformation(init, update)


# -- conditional updates -----------------------------------------------------------------------------------
class ConditionFn(Protocol):
    """``fn(step, **extra_args) -> bool scalar``: whether to run the inner transformation at this step."""

    def __call__(self, step: Any, **extra_args: Any) -> Any: ...


class ConditionallyTransformState(NamedTuple):
    inner_state: Any
    step: Any


class ConditionallyMaskState(NamedTuple):
    step: Any
    inner_state: Any


def _conditional(where: str, inner, should_transform_fn, forward_extra_args: bool, rejected: Callable):
    """``(init_inner, update)`` running ``inner`` where ``should_transform_fn(step)`` holds, ``rejected(updates)``
    (state kept) elsewhere, as a conditional (as optax's)."""
    _check_transform(inner, where)
    if not callable(should_transform_fn):
        raise TypeError(f"{where}: should_transform_fn must be a callable of the step count returning a bool, got "
                        f"{type(should_transform_fn).__name__}.")
    inner = with_extra_args_support(inner)

    def update(updates, inner_state, step, params, extra_args):
        kwargs = extra_args if forward_extra_args else {}
        return cond(should_transform_fn(step, **kwargs),
                    lambda _: inner.update(updates, inner_state, params, **extra_args),
                    lambda _: (rejected(updates), inner_state), None)
    return inner.init, update


def conditionally_transform(inner: GradientTransformation, should_transform_fn: ConditionFn,
                            forward_extra_args: bool = False) -> GradientTransformationExtraArgs:
    """Runs ``inner`` only at the steps where ``should_transform_fn(step)`` (the number of earlier updates) is
    True; at the others the updates and ``inner``'s state pass unchanged."""
    init_inner, run = _conditional("conditionally_transform", inner, should_transform_fn, forward_extra_args,
                                   lambda u: u)

    def init(params):
        return ConditionallyTransformState(init_inner(params), _zeros_count())

    def update(updates, state, params=None, **extra_args):
        updates, inner_state = run(updates, state.inner_state, state.step, params, extra_args)
        return updates, ConditionallyTransformState(inner_state, _increment(state.step))
    return GradientTransformationExtraArgs(init, update)


def conditionally_mask(inner: GradientTransformation, should_transform_fn: ConditionFn,
                       forward_extra_args: bool = False) -> GradientTransformationExtraArgs:
    """Runs ``inner`` only at the steps where ``should_transform_fn(step)`` (the number of earlier updates) is
    True; at the others the updates are zeros and ``inner``'s state is kept."""
    init_inner, run = _conditional("conditionally_mask", inner, should_transform_fn, forward_extra_args,
                                   lambda u: tree_map(jnp.zeros_like, u))

    def init(params):
        return ConditionallyMaskState(_zeros_count(), init_inner(params))

    def update(updates, state, params=None, **extra_args):
        updates, inner_state = run(updates, state.inner_state, state.step, params, extra_args)
        return updates, ConditionallyMaskState(_increment(state.step), inner_state)
    return GradientTransformationExtraArgs(init, update)


# -- freezing ----------------------------------------------------------------------------------------------
def freeze(mask) -> GradientTransformationExtraArgs:
    """Zero updates for the parameters where ``mask`` (a bool, or a pytree of bools) is True."""
    return masked(set_to_zero(), mask)


def selective_transform(optimizer: GradientTransformation, *, freeze_mask) -> GradientTransformationExtraArgs:
    """``optimizer`` on the parameters where ``freeze_mask`` is False, zero updates (and no optimizer state) where
    it is True."""
    _check_transform(optimizer, "selective_transform")

    def labels(params):
        return tree_map(lambda m: "freeze" if m else "train", freeze_mask)
    return partition({"train": optimizer, "freeze": set_to_zero()}, param_labels=labels)


# -- chains and monitoring ---------------------------------------------------------------------------------
def named_chain(*transforms: tuple[str, GradientTransformation]) -> GradientTransformationExtraArgs:
    """``chain`` of ``(name, transformation)`` pairs; the state is an OrderedDict of their states by name."""
    for i, pair in enumerate(transforms):
        # (a transformation is itself a pair, of functions)
        if isinstance(pair, GradientTransformation) or not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"named_chain: argument {i} must be a (name, transformation) pair, got "
                            f"{type(pair).__name__}.")
        _check_transform(pair[1], f"named_chain: argument {i} ({pair[0]!r})")
    names = [name for name, _ in transforms]
    if len(names) != len(set(names)):
        raise ValueError(f"named_chain: the names must be unique, got {names}; rename the repeated ones.")
    transforms = tuple((name, with_extra_args_support(t)) for name, t in transforms)

    def init(params):
        return collections.OrderedDict((name, t.init(params)) for name, t in transforms)

    def update(updates, state, params=None, **extra_args):
        new_state = collections.OrderedDict()
        for name, t in transforms:
            updates, new_state[name] = t.update(updates, state[name], params, **extra_args)
        return updates, new_state
    return GradientTransformationExtraArgs(init, update)


class SnapshotState(NamedTuple):
    measurement: Any  # {measure_name: measure(updates)}


def snapshot(measure_name: str, measure: Callable) -> GradientTransformation:
    """Keeps ``measure(updates)`` of the last update (``measure(params)`` after init) in the state, under
    ``measure_name``; the updates pass unchanged."""
    if not callable(measure):
        raise TypeError(f"snapshot: measure must be a callable of the updates, got {type(measure).__name__}.")
    return GradientTransformation(lambda params: SnapshotState({measure_name: measure(params)}),
                                  lambda updates, state, params=None: (updates,
                                                                       SnapshotState({measure_name: measure(updates)})))


class MonitorState(NamedTuple):
    measurements: Any  # {name: the measure's output at the last update}
    measure_states: Any  # the measures' own states, in the order of the names


def monitor(measures: dict) -> GradientTransformationExtraArgs:
    """Records measurements of the updates (which pass unchanged): each measure is a callable of the updates,
    or a transformation whose output updates are the measurement (e.g. :func:`measure_with_ema`)."""
    if not isinstance(measures, dict):
        raise TypeError(f"monitor: measures must be a dict of name -> measure, got {type(measures).__name__}.")
    wrapped = {}
    for name, m in measures.items():
        if callable(m):
            m = stateless(lambda u, _, fn=m: fn(u))
        _check_transform(m, f"monitor: measures[{name!r}]")
        wrapped[name] = with_extra_args_support(m)
    names = tuple(wrapped)

    def init(params):
        return MonitorState({}, tuple(wrapped[n].init(params) for n in names))

    def update(updates, state, params=None, **extra_args):
        measurements, new_states = {}, []
        for i, n in enumerate(names):
            measurements[n], s = wrapped[n].update(updates, state.measure_states[i], params, **extra_args)
            new_states.append(s)
        return updates, MonitorState(measurements, tuple(new_states))
    return GradientTransformationExtraArgs(init, update)


def measure_with_ema(measure: Callable, decay, debias: bool = True,
                     accumulator_dtype=None) -> GradientTransformationExtraArgs:
    """The exponential moving average of ``measure(updates)`` (a transformation whose output is that average;
    use it inside :func:`monitor`)."""
    if not callable(measure):
        raise TypeError(f"measure_with_ema: measure must be a callable of the updates, got {type(measure).__name__}.")
    base = ema(decay, debias, accumulator_dtype)
    average = base._replace(init=lambda params: base.init(measure(params)))  # (the average of the measurement)
    return chain(stateless(lambda updates, _: measure(updates)), average)


# -- parameter averaging -----------------------------------------------------------------------------------
def incremental_update(new_tensors, old_tensors, step_size):
    """``step_size * new + (1 - step_size) * old`` leaf by leaf (Polyak averaging of a target network)."""
    return tree_map(lambda new, old: None if new is None else step_size * new + (1.0 - step_size) * old,
                    new_tensors, old_tensors, is_leaf=lambda x: x is None)


def periodic_update(new_tensors, old_tensors, steps, update_period):
    """``new_tensors`` on the steps that are multiples of ``update_period``, ``old_tensors`` on the others."""
    return cond(jnp.mod(steps, update_period) == 0, lambda _: new_tensors, lambda _: old_tensors, None)


class LookaheadState(NamedTuple):
    fast_state: Any
    steps_since_sync: Any


class LookaheadParams(NamedTuple):
    """The fast (optimized at every step) and slow (synchronized every ``sync_period`` steps) parameters."""
    fast: Any
    slow: Any

    @classmethod
    def init_synced(cls, params) -> "LookaheadParams":
        return cls(slow=params, fast=params)


def lookahead(fast_optimizer: GradientTransformation, sync_period, slow_step_size,
              reset_state: bool = False) -> GradientTransformation:
    """Lookahead: ``fast_optimizer`` steps the fast parameters; every ``sync_period`` steps the slow ones move by
    ``slow_step_size`` towards them and the fast ones are reset to the slow ones. Params and updates are
    :class:`LookaheadParams` (apply the updates with ``apply_updates``); ``reset_state`` also restarts
    ``fast_optimizer``'s state at each synchronization."""
    _check_transform(fast_optimizer, "lookahead")
    if sync_period < 1:
        raise ValueError(f"lookahead: sync_period must be >= 1, got {sync_period}.")

    def init(params):
        fast = getattr(params, "fast", None)
        if fast is None:
            logging.getLogger(__name__).warning("lookahead: params have no attribute `fast`; taking them as the "
                                                "fast parameters (pass LookaheadParams.init_synced(params)).")
            fast = params
        return LookaheadState(fast_optimizer.init(fast), _zeros_count())

    def update(updates, state, params=None):
        if not isinstance(params, LookaheadParams):
            raise ValueError(f"lookahead: update needs the params as LookaheadParams(fast=..., slow=...), got "
                             f"{type(params).__name__}; call update(grads, state, params) with "
                             "params = LookaheadParams.init_synced(initial_params), updated by apply_updates.")
        updates, fast_state = fast_optimizer.update(updates, state.fast_state, params.fast)
        sync_next = state.steps_since_sync == sync_period - 1
        updates = _lookahead_update(updates, sync_next, params, slow_step_size)
        if reset_state:
            initial = fast_optimizer.init(params.fast)
            fast_state = tree_map(lambda cur, ini: (1 - sync_next) * cur + sync_next * ini, fast_state, initial)
        return updates, LookaheadState(fast_state, (state.steps_since_sync + 1) % sync_period)
    return GradientTransformation(init, update)


def _lookahead_update(updates, sync_next, params: LookaheadParams, slow_step_size) -> LookaheadParams:
    # optax's arithmetic: on a synchronization step the fast parameters land on the new slow ones
    diff = tree_map(lambda f, u, s: f + u - s, params.fast, updates, params.slow)
    slow = tree_map(lambda d: slow_step_size * sync_next * d, diff)
    fast = tree_map(lambda u, d: u - sync_next * (1 - slow_step_size) * d, updates, diff)
    return LookaheadParams(fast=fast, slow=slow)
