"""Schedule-Free learning (Defazio et al., 2024): the base optimizer moves a sequence ``z`` without momentum;
the params are an interpolation ``y = b1 * x + (1 - b1) * z`` with ``x`` a weighted average of the ``z``s,
evaluated at ``x`` (:func:`schedule_free_eval_params`)."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.tree_util import tree_map
from ..more import scale_by_rms
from ..schedules import warmup_constant_schedule
from ..transforms import (
    GradientTransformationExtraArgs,
    _check_transform,
    _increment,
    _need_params,
    add_decayed_weights,
    chain,
    scale_by_learning_rate,
    sgd,
    with_extra_args_support,
)
from ..tree_utils import tree_dtype

__all__ = ["ScheduleFreeState", "schedule_free", "schedule_free_eval_params", "schedule_free_sgd",
           "schedule_free_adamw"]


class ScheduleFreeState(NamedTuple):
    b1: Any
    weight_sum: Any
    step_count: Any  # 1-based: the step the next update makes
    max_lr: Any
    base_optimizer_state: Any
    z: Any


def schedule_free_eval_params(state, params):
    """The params to evaluate the model at: ``x = (y - (1 - b1) * z) / b1``."""
    b1, z = getattr(state, "b1", None), getattr(state, "z", None)
    if b1 is None or z is None:
        raise ValueError(f"schedule_free_eval_params: state must be the ScheduleFreeState of schedule_free, got "
                         f"{type(state).__name__}; pass the schedule_free optimizer's state (not one that holds "
                         "it).")
    return tree_map(lambda y, z: (y - (1.0 - b1) * z) / b1, params, z)


def schedule_free(base_optimizer, learning_rate, b1=0.9, weight_lr_power=2.0,
                  state_dtype=None) -> GradientTransformationExtraArgs:
    """Makes ``base_optimizer`` (without momentum: ``b1`` replaces it) schedule-free. ``learning_rate`` is its
    learning rate (a number, or a warmup schedule without decay): the averaging weights grow as
    ``max_lr ** weight_lr_power``. ``b1`` must be positive."""
    _check_transform(base_optimizer, "schedule_free: base_optimizer")
    base_optimizer = with_extra_args_support(base_optimizer)

    def init(params):
        dtype = tree_dtype(params, "lowest")
        z = params if state_dtype is None else tree_map(lambda p: p.astype(state_dtype), params)
        return ScheduleFreeState(b1=jnp.asarray(b1, dtype=dtype), weight_sum=jnp.zeros([], dtype=dtype),
                                 step_count=jnp.ones([], dtype=jnp.int32), max_lr=jnp.zeros([], dtype=dtype),
                                 base_optimizer_state=base_optimizer.init(params),
                                 z=tree_map(lambda t: jnp.array(t, copy=True), z))

    def update(grads, state, params=None, **extra_args):
        _need_params(params, "schedule_free")
        lr = learning_rate
        if callable(learning_rate):
            lr = jnp.asarray(learning_rate(state.step_count), dtype=state.max_lr.dtype)
        max_lr = jnp.maximum(state.max_lr, lr)
        weight = max_lr ** weight_lr_power
        weight_sum = state.weight_sum + weight
        # the averaging coefficient weight / weight_sum: 0 while both are 0, NaN where either is
        ck = jnp.where(jnp.logical_or(jnp.isnan(weight), jnp.isnan(weight_sum)), jnp.full(weight.shape, jnp.nan),
                       jnp.nan_to_num(weight / weight_sum, nan=0.0, posinf=jnp.inf))
        base_updates, base_state = base_optimizer.update(grads, state.base_optimizer_state, params, **extra_args)
        z = tree_map(lambda p, u: jnp.asarray(p + u).astype(jnp.asarray(p).dtype), state.z, base_updates)
        prev_x = tree_map(lambda y, z: (y - (1.0 - b1) * z) / b1, params, state.z)
        x = tree_map(lambda x, z: (1.0 - ck) * x + ck * z, prev_x, z)
        new_params = tree_map(lambda x, z: b1 * x + (1.0 - b1) * z, x, z)
        updates = tree_map(lambda new, p: new - p, new_params, params)
        return updates, ScheduleFreeState(state.b1, weight_sum, _increment(state.step_count), max_lr, base_state, z)
    return GradientTransformationExtraArgs(init, update)


def _warmup(learning_rate, warmup_steps):
    return learning_rate if warmup_steps is None else warmup_constant_schedule(0.0, learning_rate, warmup_steps)


def schedule_free_sgd(learning_rate=1.0, warmup_steps=None, b1=0.9, weight_decay=None, weight_lr_power=2.0,
                      state_dtype=None) -> GradientTransformationExtraArgs:
    """Schedule-free SGD (weight decay, when given, added to the gradients)."""
    learning_rate = _warmup(learning_rate, warmup_steps)
    optimizer = sgd(learning_rate)
    if weight_decay is not None:
        optimizer = chain(add_decayed_weights(weight_decay), optimizer)
    return schedule_free(optimizer, learning_rate, b1, weight_lr_power, state_dtype)


def schedule_free_adamw(learning_rate=0.0025, warmup_steps=None, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0,
                        weight_lr_power=2.0, state_dtype=None) -> GradientTransformationExtraArgs:
    """Schedule-free AdamW: Adam without momentum (``scale_by_rms`` with bias correction, ``eps`` outside the
    root, as optax's), decoupled weight decay."""
    learning_rate = _warmup(learning_rate, warmup_steps)
    optimizer = chain(scale_by_rms(decay=b2, eps=eps, eps_in_sqrt=False, bias_correction=True),
                      add_decayed_weights(weight_decay), scale_by_learning_rate(learning_rate))
    return schedule_free(optimizer, learning_rate, b1, weight_lr_power, state_dtype)
