"""MoMo (Schaipp et al., 2023, arXiv:2305.07583): SGD with momentum, or Adam, with a Polyak-type step size
``min(learning_rate, adaptive)`` from the loss value and a lower bound of the loss. Their ``update`` needs the
loss: ``update(grads, state, params, value=loss)``."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...control.api import cond
from ...core.tree_util import tree_map
from ..transforms import GradientTransformationExtraArgs, _increment, _need_params, _zeros_count
from ..tree_utils import tree_norm, tree_vdot
from ._prodigy import _lowest_dtype

__all__ = ["MomoState", "MomoAdamState", "momo", "momo_adam"]

# (optax's threshold: float64's epsilon, below which the momentum's norm counts as 0 and no step is taken)
_TINY = jnp.finfo(float).eps


class MomoState(NamedTuple):
    exp_avg: Any
    barf: Any  # EMA of the loss values
    gamma: Any  # EMA of <g, x>
    lb: Any  # the lower bound of the loss
    count: Any


class MomoAdamState(NamedTuple):
    exp_avg: Any
    exp_avg_sq: Any
    barf: Any  # EMA of the loss values
    gamma: Any  # EMA of <g, x>
    lb: Any  # the lower bound of the loss
    count: Any


def _check_update_args(where: str, params, value):
    _need_params(params, where)
    if value is None:
        raise ValueError(f"{where}: update needs the loss at params: call optimizer.update(grads, state, params, "
                         "value=loss), e.g. with loss, grads = kiln.value_and_grad(loss_fn)(params).")


def _scalar_state(params, lower_bound):
    dtype = _lowest_dtype(params)
    return jnp.zeros([], dtype=dtype), jnp.zeros([], dtype=dtype), jnp.array(lower_bound, dtype=dtype)


def momo(learning_rate=1.0, beta=0.9, lower_bound=0.0, weight_decay=0.0,
         adapt_lower_bound: bool = False) -> GradientTransformationExtraArgs:
    """MoMo: momentum ``beta``, step size at most ``learning_rate`` (a number or a schedule);
    ``lower_bound`` bounds the loss from below (re-estimated on the fly when ``adapt_lower_bound``)."""
    def init(params):
        return MomoState(tree_map(jnp.zeros_like, params), *_scalar_state(params, lower_bound), _zeros_count())

    def update(updates, state, params=None, *, value=None, **extra_args):
        _check_update_args("momo", params, value)
        count = state.count
        bt = jnp.where(count == 0, 0.0, beta)  # (the first step takes the first gradient and loss as they are)
        # optax's operations in its order, so that the numbers round as optax's
        barf = bt * state.barf + (1 - bt) * jnp.asarray(value, dtype=state.barf.dtype)
        exp_avg = tree_map(lambda ea, g: bt * ea + (1 - bt) * g, state.exp_avg, updates)
        gamma = bt * state.gamma + (1 - bt) * tree_vdot(updates, params)
        exp_avg_norm = tree_norm(exp_avg, squared=True)
        iprod = tree_vdot(exp_avg, params)
        alpha = learning_rate(count) if callable(learning_rate) else learning_rate
        if adapt_lower_bound:
            cap = (1 + alpha * weight_decay) * (barf - gamma) + iprod
            this_lb = cond(cap < (1 + alpha * weight_decay) * state.lb,
                               lambda: jnp.maximum(cap / (2 * (1 + alpha * weight_decay)), lower_bound),
                               lambda: state.lb)
        else:
            this_lb = state.lb
        t1 = jnp.maximum((1 + alpha * weight_decay) * (barf - this_lb - gamma) + iprod, 0.0) / exp_avg_norm
        t1 = jnp.where(exp_avg_norm <= _TINY, 0.0, t1)
        tau = jnp.minimum(alpha, t1)
        out = tree_map(lambda ea, p: -(alpha * weight_decay) / (1 + alpha * weight_decay) * p - tau * ea,
                       exp_avg, params)
        if adapt_lower_bound:
            new_lb = jnp.maximum((barf + iprod - gamma) - (1 / 2) * tau * exp_avg_norm, lower_bound)
        else:
            new_lb = state.lb
        return out, MomoState(exp_avg, barf, gamma, new_lb, _increment(count))
    return GradientTransformationExtraArgs(init, update)


def momo_adam(learning_rate=1e-2, b1=0.9, b2=0.999, eps=1e-8, lower_bound=0.0, weight_decay=0.0,
              adapt_lower_bound: bool = False) -> GradientTransformationExtraArgs:
    """MoMo-Adam: Adam(W)'s moments ``b1``, ``b2``, ``eps`` with a Polyak-type step size at most
    ``learning_rate`` (a number or a schedule); ``lower_bound`` as in :func:`momo`."""
    def init(params):
        exp_avg, exp_avg_sq = tree_map(jnp.zeros_like, params), tree_map(jnp.zeros_like, params)
        return MomoAdamState(exp_avg, exp_avg_sq, *_scalar_state(params, lower_bound), _zeros_count())

    def update(updates, state, params=None, *, value=None, **extra_args):
        _check_update_args("momo_adam", params, value)
        count = state.count
        count_inc = _increment(count)
        # optax's operations in its order, so that the numbers round as optax's
        barf = b1 * state.barf + (1 - b1) * jnp.asarray(value, dtype=state.barf.dtype)
        exp_avg = tree_map(lambda ea, g: b1 * ea + (1 - b1) * g, state.exp_avg, updates)
        exp_avg_sq = tree_map(lambda eas, g: b2 * eas + (1 - b2) * g * g, state.exp_avg_sq, updates)
        bc2 = jnp.asarray(1 - jnp.power(b2, count_inc), dtype=barf.dtype)
        precond = tree_map(lambda eas: eps + jnp.sqrt(eas / bc2), exp_avg_sq)
        exp_avg_norm = tree_vdot(exp_avg, tree_map(lambda ea, pr: ea / pr, exp_avg, precond))
        gamma = b1 * state.gamma + (1 - b1) * tree_vdot(updates, params)
        iprod = tree_vdot(exp_avg, params)
        alpha = learning_rate(count) if callable(learning_rate) else learning_rate
        bc1 = jnp.asarray(1 - jnp.power(b1, count_inc), dtype=barf.dtype)
        if adapt_lower_bound:
            cap = (1 + alpha * weight_decay) * (barf - gamma) + iprod
            this_lb = jnp.where(cap < (1 + alpha * weight_decay) * bc1 * state.lb,
                                jnp.maximum(cap / (2 * bc1 * (1 + alpha * weight_decay)), lower_bound), state.lb)
        else:
            this_lb = state.lb
        t1 = jnp.maximum((1 + alpha * weight_decay) * (barf - bc1 * this_lb - gamma) + iprod, 0.0) / exp_avg_norm
        t1 = jnp.where(exp_avg_norm <= _TINY, 0.0, t1)
        tau = jnp.minimum(alpha / bc1, t1)
        out = tree_map(lambda ea, pr, p: -(alpha * weight_decay) / (1 + alpha * weight_decay) * p - tau * ea / pr,
                       exp_avg, precond, params)
        if adapt_lower_bound:
            new_lb = jnp.maximum(((barf + iprod - gamma) - (1 / 2) * tau * exp_avg_norm) / bc1, lower_bound)
        else:
            new_lb = state.lb
        return out, MomoAdamState(exp_avg, exp_avg_sq, barf, gamma, new_lb, count_inc)
    return GradientTransformationExtraArgs(init, update)
