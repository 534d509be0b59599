"""Prodigy (Mishchenko & Defazio, 2023, arXiv:2306.06101): D-Adaptation AdamW whose estimate of the distance
to the solution weights recent gradients more, so that it grows faster."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.tree_util import tree_map
from ..transforms import GradientTransformationExtraArgs, _increment, _need_params, _zeros_count
from ..tree_utils import tree_dtype, tree_sum, tree_vdot

__all__ = ["ProdigyState", "prodigy"]


class ProdigyState(NamedTuple):
    exp_avg: Any
    exp_avg_sq: Any
    grad_sum: Any  # decaying sum of the lr-weighted gradients
    params0: Any  # the initial parameters
    estim_lr: Any  # the estimate of the distance to the solution (D)
    numerator_weighted: Any
    count: Any


def _lowest_dtype(tree):
    # the scalar states of the parameter-free optimizers take the parameters' lowest dtype, so that they do not
    # promote the updates' dtypes (as optax's)
    return tree_dtype(tree, "lowest")


def prodigy(learning_rate=1.0, betas=(0.9, 0.999), beta3=None, eps=1e-8, estim_lr0=1e-6, estim_lr_coef=1.0,
            weight_decay=0.0, safeguard_warmup: bool = False) -> GradientTransformationExtraArgs:
    """Learning-rate-free AdamW (Prodigy): ``learning_rate`` (a number or a schedule, best around 1.0) scales
    the adapted step ``D``; ``beta3`` (default ``sqrt(betas[1])``) is the decay of D's estimate;
    ``safeguard_warmup`` leaves the learning rate out of that estimate's denominator."""
    beta1, beta2 = betas
    if beta3 is None:
        beta3 = beta2 ** 0.5

    def init(params):
        dtype = _lowest_dtype(params)
        exp_avg, exp_avg_sq, grad_sum = (tree_map(jnp.zeros_like, params) for _ in range(3))
        return ProdigyState(exp_avg, exp_avg_sq, grad_sum, params, jnp.asarray(estim_lr0, dtype=dtype),
                            jnp.zeros((), dtype=dtype), _zeros_count())

    def update(updates, state, params=None, **extra_args):
        _need_params(params, "prodigy")
        count_inc = _increment(state.count)
        sched = learning_rate(state.count) if callable(learning_rate) else learning_rate
        d = state.estim_lr
        # optax's operations in its order, so that the numbers round as optax's
        bc = ((1 - jnp.power(beta2, count_inc)) ** 0.5) / (1 - jnp.power(beta1, count_inc))
        dlr = jnp.asarray(d * sched * bc, dtype=d.dtype)
        dg = tree_map(lambda g: d * g, updates)
        numerator_acum = tree_vdot(updates, tree_map(lambda p0, p: p0 - p, state.params0, params))
        exp_avg = tree_map(lambda ea, x: beta1 * ea + (1 - beta1) * x, state.exp_avg, dg)
        exp_avg_sq = tree_map(lambda eas, x: beta2 * eas + (1 - beta2) * x * x, state.exp_avg_sq, dg)
        step = d if safeguard_warmup else dlr
        grad_sum = tree_map(lambda s, x: beta3 * s + step * x / estim_lr0, state.grad_sum, dg)
        numerator_weighted = beta3 * state.numerator_weighted
        numerator_weighted += (d / estim_lr0) * dlr * numerator_acum
        denominator = tree_sum(tree_map(jnp.abs, grad_sum))
        estim_lr = jnp.maximum(d, estim_lr_coef * numerator_weighted / denominator)
        out = tree_map(lambda ea, eas, p: -weight_decay * dlr * p - dlr * ea / (jnp.sqrt(eas) + estim_lr * eps),
                       exp_avg, exp_avg_sq, params)
        return out, ProdigyState(exp_avg, exp_avg_sq, grad_sum, state.params0, estim_lr, numerator_weighted,
                                 count_inc)
    return GradientTransformationExtraArgs(init, update)
