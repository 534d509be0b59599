"""D-Adaptation AdamW (Defazio & Mishchenko, 2023, arXiv:2301.07733): AdamW whose base step size is an
estimate, growing as training goes, of the distance to the solution in the infinity norm."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.tree_util import tree_map
from ..transforms import GradientTransformationExtraArgs, _increment, _need_params, _zeros_count
from ..tree_utils import tree_sum, tree_vdot
from ._prodigy import _lowest_dtype

__all__ = ["DAdaptAdamWState", "dadapt_adamw"]


class DAdaptAdamWState(NamedTuple):
    exp_avg: Any
    exp_avg_sq: Any
    grad_sum: Any  # decaying sum of the lr-weighted gradients
    estim_lr: Any  # the estimate of the distance to the solution (D)
    numerator_weighted: Any
    count: Any


def dadapt_adamw(learning_rate=1.0, betas=(0.9, 0.999), eps=1e-8, estim_lr0=1e-6,
                 weight_decay=0.0) -> GradientTransformationExtraArgs:
    """Learning-rate-free AdamW by D-Adaptation: ``learning_rate`` (a number or a schedule, best around 1.0)
    scales the adapted step ``D``, first estimated as ``estim_lr0``; ``weight_decay`` is AdamW's (decoupled)."""
    beta1, beta2 = betas
    sb2 = beta2 ** 0.5

    def init(params):
        dtype = _lowest_dtype(params)
        exp_avg, exp_avg_sq, grad_sum = (tree_map(jnp.zeros_like, params) for _ in range(3))
        return DAdaptAdamWState(exp_avg, exp_avg_sq, grad_sum, jnp.asarray(estim_lr0, dtype=dtype),
                                jnp.zeros([], dtype=dtype), _zeros_count())

    def update(updates, state, params=None, **extra_args):
        _need_params(params, "dadapt_adamw")
        sched = learning_rate(state.count) if callable(learning_rate) else learning_rate
        count_inc = _increment(state.count)
        # optax's operations in its order, so that the numbers round as optax's
        bc = ((1 - jnp.power(beta2, count_inc)) ** 0.5) / (1 - jnp.power(beta1, count_inc))
        dlr = (state.estim_lr * sched * bc).astype(state.numerator_weighted.dtype)
        s_weighted = tree_map(lambda s, eas: s / (jnp.sqrt(eas) + eps), state.grad_sum, state.exp_avg_sq)
        numerator_acum = tree_vdot(updates, s_weighted)
        exp_avg = tree_map(lambda ea, g: beta1 * ea + (1 - beta1) * dlr * g, state.exp_avg, updates)
        exp_avg_sq = tree_map(lambda eas, g: beta2 * eas + (1 - beta2) * g * g, state.exp_avg_sq, updates)
        grad_sum = tree_map(lambda s, g: sb2 * s + (1 - sb2) * dlr * g, state.grad_sum, updates)
        grad_sum_l1 = tree_sum(tree_map(jnp.abs, grad_sum))
        numerator_weighted = sb2 * state.numerator_weighted + (1 - sb2) * dlr * numerator_acum
        estim_lr = jnp.maximum(state.estim_lr, numerator_weighted / ((1 - sb2) * grad_sum_l1))
        out = tree_map(lambda ea, eas, p: -weight_decay * dlr * p - ea / (jnp.sqrt(eas) + eps),
                       exp_avg, exp_avg_sq, params)
        return out, DAdaptAdamWState(exp_avg, exp_avg_sq, grad_sum, estim_lr, numerator_weighted, count_inc)
    return GradientTransformationExtraArgs(init, update)
