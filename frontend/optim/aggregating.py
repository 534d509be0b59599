"""optax.experimental.aggregating: transformations that take per-example gradients (a leading batch axis on
every leaf) and aggregate them, averaging over the batch and/or accumulating over microbatches, optionally
tracking the per-coordinate mean and variance of the gradients with an EMA."""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Protocol, Sequence

from .. import numpy as jnp
from ..control.api import cond
from ..core.tree_util import tree_leaves, tree_map
from .numerics import safe_int32_increment
from .transforms import GradientTransformation, GradientTransformationExtraArgs, chain, identity, init_empty_state
from .tree_utils import tree_get, tree_scale, tree_where, tree_zeros_like

__all__ = [
    "PerElementUpdates", "AggregatedUpdates", "MaybeAxis", "AggregatorUpdateFn", "Aggregator", "process",
    "average_per_element_updates", "AccumulateAvgUpdatesState", "accumulate_avg_updates",
    "average_incrementally_updates", "get_batch_size_from_per_elt_updates", "PerElementMeanAndSumSqDiffGradsState",
    "get_per_element_mean_and_sum_sq_diff_grads", "PerElementMeanAndVarianceEMAState",
    "track_per_element_mean_and_variance_with_ema", "get_unbiased_mean_and_variance_ema", "add_mean_variance_to_opt",
]

PerElementUpdates = Any  # a pytree whose leaves carry the per-element (batch) axes
AggregatedUpdates = Any  # a pytree shaped as the params
MaybeAxis = int | Sequence[int] | None


class AggregatorUpdateFn(Protocol):
    """``update(per_elt_updates, state, params=None, **extra_args) -> (aggregated_updates, state)``."""
    def __call__(self, per_elt_updates: PerElementUpdates, state: Any, params: Any = None,
                 **extra_args: Any) -> tuple[AggregatedUpdates, Any]:
        ...


class Aggregator(GradientTransformationExtraArgs):
    """A transformation whose ``update`` takes per-element updates (leaves shaped ``[*batch, *param]``) and
    returns updates shaped as the params; same ``(init, update)`` pair as any transformation."""


def _axis(per_elt_axis):
    # a list of axes is accepted as optax's; reductions and squeeze take a tuple
    return tuple(per_elt_axis) if isinstance(per_elt_axis, list) else per_elt_axis


def _check_steps(where: str, accumulation_steps: int):
    if accumulation_steps < 1:
        raise ValueError(f"{where}: accumulation_steps must be larger than or equal to 1, got {accumulation_steps}.")


# -- process ---------------------------------------------------------------------------------------------------
def process(preprocessor: GradientTransformation, aggregator: GradientTransformation | Aggregator,
            postprocessor: GradientTransformation, aggregator_has_aux: bool = False
            ) -> GradientTransformationExtraArgs | Aggregator:
    """``preprocessor`` (per-element), then ``aggregator`` (per-element to aggregated), then ``postprocessor``
    (aggregated), the last only once the aggregator's state has ``ready`` True (zero updates before). With
    ``aggregator_has_aux`` the aggregator returns ``(updates, aux)`` and ``aux`` joins the extra arguments of the
    postprocessor. The state is the tuple of the three states."""

    def init(params):
        return preprocessor.init(params), aggregator.init(params), postprocessor.init(params)

    def update(per_elt_grads, state, params=None, **extra_args):
        pre_state, agg_state, post_state = state
        per_elt_updates, pre_state = preprocessor.update(per_elt_grads, pre_state, params, **extra_args)
        aggregated, agg_state = aggregator.update(per_elt_updates, agg_state, params, **extra_args)
        if aggregator_has_aux:
            aggregated, aux = aggregated
            extra_args = extra_args | aux
        # an accumulating aggregator is ready once per accumulation_steps calls; one without a state always is
        ready = tree_get(agg_state, "ready", True)
        updates, post_state = cond(ready, lambda u, s, p, kw: postprocessor.update(u, s, p, **kw),
                                   lambda u, s, p, kw: (tree_zeros_like(u), s),
                                   aggregated, post_state, params, extra_args)
        return updates, (pre_state, agg_state, post_state)

    if isinstance(aggregator, Aggregator):
        return Aggregator(init, update)
    return GradientTransformationExtraArgs(init, update)


# -- averaging and accumulating --------------------------------------------------------------------------------
def average_per_element_updates(per_elt_axis: int | Sequence[int] = 0) -> Aggregator:
    """The mean of the per-element updates over ``per_elt_axis``; no state."""
    axis = _axis(per_elt_axis)

    def update(per_elt_updates, state, params=None):
        return tree_map(lambda x: jnp.mean(x, axis=axis), per_elt_updates), state
    return Aggregator(init_empty_state, update)


class AccumulateAvgUpdatesState(NamedTuple):
    """Microbatches seen since the last output, whether this call output, and their running mean."""
    micro_step: Any
    ready: Any
    avg_grad: Any


def accumulate_avg_updates(accumulation_steps: int) -> GradientTransformation:
    """The running mean of the updates of ``accumulation_steps`` consecutive calls, output at the last of them
    (zeros at the others, with ``ready`` False in the state). One step is :func:`identity`."""
    _check_steps("accumulate_avg_updates", accumulation_steps)
    if accumulation_steps == 1:
        return identity()

    def init(params):
        return AccumulateAvgUpdatesState(jnp.asarray(0), jnp.asarray(False), tree_zeros_like(params))

    def update(updates, state, params=None):
        step = state.micro_step + 1
        # incremental mean: avg_k = avg_{k-1} + (u_k - avg_{k-1}) / k
        avg = tree_map(lambda u, a: a + (u - a) / step, updates, state.avg_grad)
        done = AccumulateAvgUpdatesState(jnp.asarray(0), jnp.asarray(True), tree_zeros_like(avg))
        pending = AccumulateAvgUpdatesState(step, jnp.asarray(False), avg)
        return tree_where(step == accumulation_steps, (avg, done), (tree_zeros_like(avg), pending))
    return GradientTransformation(init, update)


def average_incrementally_updates(per_elt_axis: MaybeAxis, accumulation_steps: int
                                  ) -> Aggregator | GradientTransformation:
    """Averages over ``per_elt_axis`` (skipped when None) then accumulates over ``accumulation_steps`` calls."""
    if per_elt_axis is None:
        return accumulate_avg_updates(accumulation_steps)
    t = chain(average_per_element_updates(per_elt_axis), accumulate_avg_updates(accumulation_steps))
    return Aggregator(t.init, t.update)


# -- mean and variance of the gradients ------------------------------------------------------------------------
def get_batch_size_from_per_elt_updates(per_elt_updates: Any, per_elt_axis: int | list[int]) -> int:
    """The number of elements along ``per_elt_axis`` (the product over several axes), the same for all leaves."""
    def size(x):
        if isinstance(per_elt_axis, int):
            return x.shape[per_elt_axis]
        return math.prod(x.shape[i] for i in per_elt_axis)
    sizes = tree_leaves(tree_map(size, per_elt_updates))
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"get_batch_size_from_per_elt_updates: per-element updates must have the same batch size "
                         f"along axis {per_elt_axis} in every leaf. Got: {sizes}")
    return sizes[0]


class PerElementMeanAndSumSqDiffGradsState(NamedTuple):
    """Microbatches seen since the last output, whether this call output, and the running mean and sum of
    squared differences to the mean."""
    micro_step: Any
    ready: Any
    mean_grads: Any
    sum_sq_diff_grads: Any


def _batch_mean_and_sum_sq_diff(per_elt_updates, axis, square):
    mean = tree_map(lambda x: jnp.mean(x, axis=axis, keepdims=True), per_elt_updates)
    sum_sq_diff = tree_map(lambda x, m: jnp.sum(square(x - m), axis=axis), per_elt_updates, mean)
    return tree_map(lambda m: m.squeeze(axis=axis), mean), sum_sq_diff


def get_per_element_mean_and_sum_sq_diff_grads(per_elt_axis: int | Sequence[int] = 0,
                                               accumulation_steps: int = 1) -> Aggregator:
    """The mean of the per-element updates over ``per_elt_axis`` (and ``accumulation_steps`` calls), with aux
    ``{"sum_sq_diff_grads": sum of squared differences to that mean, "sample_size": number of elements}`` (for
    :func:`process` with ``aggregator_has_aux=True``)."""
    _check_steps("get_per_element_mean_and_sum_sq_diff_grads", accumulation_steps)
    axis = _axis(per_elt_axis)

    def batch_only(per_elt_updates, state, params=None):
        size = get_batch_size_from_per_elt_updates(per_elt_updates, per_elt_axis)
        mean, sum_sq_diff = _batch_mean_and_sum_sq_diff(per_elt_updates, axis, lambda d: d ** 2)
        return (mean, {"sum_sq_diff_grads": sum_sq_diff, "sample_size": size}), state

    if accumulation_steps == 1:
        return Aggregator(init_empty_state, batch_only)

    def init(params):
        return PerElementMeanAndSumSqDiffGradsState(jnp.asarray(0, dtype=jnp.int32), jnp.asarray(False),
                                                    tree_zeros_like(params), tree_zeros_like(params))

    def update(per_elt_updates, state, params=None):
        size = get_batch_size_from_per_elt_updates(per_elt_updates, per_elt_axis)
        step = state.micro_step + 1
        batch_mean, batch_ssd = _batch_mean_and_sum_sq_diff(per_elt_updates, axis, jnp.square)
        # Chan et al.'s pairwise merge of (mean, sum of squared differences) of the old and new samples
        delta = tree_map(lambda b, a: b - a, batch_mean, state.mean_grads)
        mean = tree_map(lambda a, d: a + d / step, state.mean_grads, delta)
        factor = state.micro_step * size / step
        ssd = tree_map(lambda a, s, d: a + s + d ** 2 * factor, state.sum_sq_diff_grads, batch_ssd, delta)
        out = (mean, {"sum_sq_diff_grads": ssd, "sample_size": size * step})
        done = PerElementMeanAndSumSqDiffGradsState(jnp.asarray(0, dtype=jnp.int32), jnp.asarray(True),
                                                    tree_zeros_like(mean), tree_zeros_like(ssd))
        pending = PerElementMeanAndSumSqDiffGradsState(step, jnp.asarray(False), mean, ssd)
        return tree_where(step == accumulation_steps, (out, done), (tree_zeros_like(out), pending))
    return Aggregator(init, update)


class PerElementMeanAndVarianceEMAState(NamedTuple):
    """Updates seen, the decay, and the (biased) EMAs of the gradients' mean and variance."""
    count: Any
    ema_decay: Any
    mean_grads_ema: Any
    variance_grads_ema: Any


def track_per_element_mean_and_variance_with_ema(ema_decay: Any = 0.9) -> GradientTransformationExtraArgs:
    """Leaves the updates unchanged; keeps EMAs of them (the mean) and of the variance
    ``sum_sq_diff_grads / (sample_size - 1)``, both extra arguments of ``update`` (the aux of
    :func:`get_per_element_mean_and_sum_sq_diff_grads` through :func:`process`)."""

    def init(params):
        return PerElementMeanAndVarianceEMAState(jnp.zeros([], jnp.int32), jnp.asarray(ema_decay),
                                                 tree_zeros_like(params), tree_zeros_like(params))

    def ema(new, old):
        return tree_map(lambda x, y: (1.0 - ema_decay) * x + ema_decay * y, new, old)

    def update(updates, state, params=None, *, sum_sq_diff_grads, sample_size):
        # as an array, as optax's conditional in process makes it: 1 / (n - 1) rounds in float32 (weakly typed)
        # and a sample of one gives inf (nan variance) rather than a ZeroDivisionError
        n = jnp.asarray(sample_size)
        variance = tree_scale(1 / (n - 1), sum_sq_diff_grads)  # the unbiased sample variance
        return updates, state._replace(count=safe_int32_increment(state.count),
                                       mean_grads_ema=ema(updates, state.mean_grads_ema),
                                       variance_grads_ema=ema(variance, state.variance_grads_ema))
    return GradientTransformationExtraArgs(init, update)


def get_unbiased_mean_and_variance_ema(state: Any) -> tuple[Any, Any]:
    """The EMAs of mean and variance in ``state`` (which holds one PerElementMeanAndVarianceEMAState), each
    divided by ``1 - ema_decay**count`` to remove the bias of their zero start."""
    found = tree_get(state, "PerElementMeanAndVarianceEMAState", None)
    if found is None:
        raise ValueError("get_unbiased_mean_and_variance_ema: the state must hold a PerElementMeanAndVarianceEMAState "
                         "(from track_per_element_mean_and_variance_with_ema or add_mean_variance_to_opt) to compute "
                         "the unbiased mean and variance EMAs.")

    def unbias(t):
        return tree_map(lambda x: x / (1 - found.ema_decay ** found.count), t)
    return unbias(found.mean_grads_ema), unbias(found.variance_grads_ema)


def add_mean_variance_to_opt(opt: GradientTransformation, ema_decay: Any = 0.9, per_elt_axis: int | list[int] = 0,
                             accumulation_steps: int = 1) -> Aggregator:
    """``opt`` applied to the mean of per-element gradients (over ``per_elt_axis`` and ``accumulation_steps``
    calls), its state also tracking EMAs of the gradients' mean and variance (read them with
    :func:`get_unbiased_mean_and_variance_ema`)."""
    return process(preprocessor=identity(),
                   aggregator=get_per_element_mean_and_sum_sq_diff_grads(per_elt_axis, accumulation_steps),
                   postprocessor=chain(track_per_element_mean_and_variance_with_ema(ema_decay), opt),
                   aggregator_has_aux=True)
