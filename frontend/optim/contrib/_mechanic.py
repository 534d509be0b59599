"""Mechanic (Cutkosky, Defazio & Mehta, 2023, arXiv:2306.00144): learns the scale of another optimizer's
updates, online, by coin betting over a few decay rates at once."""
from __future__ import annotations

import numbers
from typing import Any, NamedTuple

from ... import lax
from ... import numpy as jnp
from ...control.api import cond
from ...core.tree_util import tree_map
from ..transforms import (
    GradientTransformationExtraArgs,
    _check_transform,
    _increment,
    _need_params,
    with_extra_args_support,
)
from ..tree_utils import tree_norm, tree_vdot
from ._prodigy import _lowest_dtype

__all__ = ["MechanicState", "mechanize"]


class MechanicState(NamedTuple):
    base_optimizer_state: Any
    count: Any
    r: Any  # per decay rate: the reward
    m: Any  # per decay rate: the largest |h| (decayed)
    v: Any  # per decay rate: the decayed sum of h**2
    s: Any  # per decay rate: the scale
    x0: Any  # the parameters at the first update


def mechanize(base_optimizer, weight_decay=1e-2, eps=1e-8, s_init=1e-6,
              num_betas: int = 6) -> GradientTransformationExtraArgs:
    """Wraps ``base_optimizer`` (whose learning rate, or schedule, is best left at 1.0) and scales its updates by
    a learned factor: ``sum(s)`` over ``num_betas`` decay rates ``1 - 0.1**k``. ``weight_decay`` is Mechanic's
    own, added to the gradients that learn the scale (not to the base optimizer's)."""
    _check_transform(base_optimizer, "mechanize")
    if isinstance(num_betas, bool) or not isinstance(num_betas, numbers.Integral) or num_betas < 1:
        raise ValueError(f"mechanize: num_betas must be an int >= 1 (the number of decay rates 1 - 0.1**k), got "
                         f"{num_betas!r}.")
    base_optimizer = with_extra_args_support(base_optimizer)

    def init(params):
        dtype = _lowest_dtype(params)
        zeros = [jnp.zeros([num_betas], dtype=dtype) for _ in range(3)]
        s = jnp.ones([num_betas], dtype=dtype) * s_init
        return MechanicState(base_optimizer.init(params), jnp.zeros([], jnp.int32), *zeros, s, params)

    def update(updates, state, params=None, **extra_args):
        _need_params(params, "mechanize")
        count_inc = _increment(state.count)
        neg_updates, base_state = base_optimizer.update(updates, state.base_optimizer_state, params, **extra_args)
        # the first update's parameters are x0 (not init's): training loops often load weights after init
        x0 = cond(state.count == 0, lambda: params, lambda: state.x0)
        s_sum = jnp.sum(state.s)
        grad_norm, param_norm = tree_norm(updates), tree_norm(params)
        # (optax's order of operations, so that the numbers round as optax's)
        updates = tree_map(lambda g, p: g + weight_decay * s_sum * grad_norm / (param_norm + eps) * p, updates, params)
        delta_prev = tree_map(lambda x, x0i: (x0i - x) / (s_sum + eps), params, x0)
        delta = tree_map(lambda d, u: d - u, delta_prev, neg_updates)
        h = tree_vdot(updates, delta_prev)
        clipped_h = lax.clamp(-state.m, jnp.ones_like(state.m) * h, state.m)
        betas = jnp.array([1.0 - 0.1 ** k for k in range(1, num_betas + 1)], dtype=state.s.dtype)
        m = jnp.maximum(betas * state.m, jnp.abs(h) + eps)
        v = (betas ** 2) * state.v + h ** 2
        r = betas * state.r + clipped_h * state.s
        wealth = (s_init / num_betas) * m + jnp.maximum(0.0, r)
        s = wealth / (jnp.sqrt(v) + eps)
        new_params = tree_map(lambda x0i, d: x0i - jnp.sum(s) * d, x0, delta)
        out = tree_map(lambda new, old: new - old, new_params, params)
        return out, MechanicState(base_state, count_inc, r, m, v, s, x0)
    return GradientTransformationExtraArgs(init, update)
