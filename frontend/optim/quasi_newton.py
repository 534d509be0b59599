"""L-BFGS (optax's): the updates multiplied by an inverse-Hessian estimate built from the last ``memory_size``
differences of parameters and gradients, with optax's order of floating-point operations."""
from __future__ import annotations

import numbers
from typing import Any, NamedTuple

from .. import lax
from .. import numpy as jnp
from ..control.api import scan
from ..core.tree_util import tree_map
from .linesearch import scale_by_zoom_linesearch
from .numerics import safe_increment
from .transforms import (
    GradientTransformation,
    GradientTransformationExtraArgs,
    _check_transform,
    _zeros_count,
    chain,
    identity,
    scale,
    scale_by_learning_rate,
)
from .tree_utils import (
    tree_add_scale,
    tree_cast_like,
    tree_norm,
    tree_real,
    tree_scale,
    tree_sub,
    tree_vdot,
    tree_zeros_like,
)

__all__ = ["ScaleByLBFGSState", "scale_by_lbfgs", "lbfgs"]


class ScaleByLBFGSState(NamedTuple):
    """The step count, the last params and updates, and the memory: past differences of params and of updates
    (stacked along a leading axis of length ``memory_size``, a ring buffer) and their weights ``1 / <du, dw>``."""
    count: Any
    params: Any
    updates: Any
    diff_params_memory: Any
    diff_updates_memory: Any
    weights_memory: Any


def _precondition_by_lbfgs(updates, diff_params_memory, diff_updates_memory, weights_memory, identity_scale,
                           memory_idx):
    """``P_k updates``: the two-loop recursion (Nocedal & Wright, algorithm 7.4) over the ring buffer, newest
    entry first, then oldest first."""
    rhos = weights_memory
    memory_size = weights_memory.shape[0]
    indices = (memory_idx + jnp.arange(memory_size)) % memory_size

    def right_product(vec, idx):
        dwi, dui = tree_map(lambda x: x[idx], (diff_params_memory, diff_updates_memory))
        alpha = rhos[idx] * tree_real(tree_vdot(dwi, vec))
        return tree_cast_like(tree_add_scale(vec, -alpha, dui), vec), alpha

    precond, alphas = scan(right_product, updates, indices, reverse=True)
    precond = tree_scale(identity_scale, precond)

    def left_product(vec, idx_alpha):
        idx, alpha = idx_alpha
        dwi, dui = tree_map(lambda x: x[idx], (diff_params_memory, diff_updates_memory))
        beta = rhos[idx] * tree_real(tree_vdot(dui, vec))
        return tree_cast_like(tree_add_scale(vec, alpha - beta, dwi), vec), beta

    precond, _ = scan(left_product, precond, (indices, alphas))
    return precond


def scale_by_lbfgs(memory_size: int = 10, scale_init_precond: bool = True) -> GradientTransformation:
    """Multiplies the updates by L-BFGS's inverse-Hessian estimate from the last ``memory_size`` differences of
    params and updates. ``scale_init_precond``: start from ``<dw, du> / <du, du>`` times the identity (the first
    step: ``min(1, 1 / |updates|)``), else the identity. Chain it with a line search (see :func:`lbfgs`)."""
    if isinstance(memory_size, bool) or not isinstance(memory_size, numbers.Integral) or memory_size < 1:
        raise ValueError(f"scale_by_lbfgs: memory_size must be an integer >= 1 (the number of past steps kept), "
                         f"got {memory_size!r}.")
    memory_size = int(memory_size)

    def init(params):
        # one array per leaf with a leading memory axis, so that a traced index can pick an entry
        stacked_zeros = tree_map(lambda p: jnp.zeros((memory_size,) + p.shape, dtype=p.dtype), params)
        return ScaleByLBFGSState(count=_zeros_count(), params=tree_zeros_like(params),
                                 updates=tree_zeros_like(params), diff_params_memory=stacked_zeros,
                                 diff_updates_memory=stacked_zeros, weights_memory=jnp.zeros(memory_size))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_lbfgs: update needs the params (L-BFGS stores their differences); call "
                             "optimizer.update(grads, state, params, ...).")
        memory_idx = state.count % memory_size
        prev_memory_idx = (state.count - 1) % memory_size

        # The memory takes the last step's differences before preconditioning, so that after a line search
        # they are those of the step actually made.
        diff_params = tree_sub(params, state.params)
        diff_updates = tree_sub(updates, state.updates)
        curvature = tree_real(tree_vdot(diff_updates, diff_params))
        weight = jnp.where(curvature == 0.0, 0.0, 1.0 / curvature)
        # no differences before the first step
        diff_params, diff_updates, weight = tree_map(lambda x: jnp.where(state.count > 0, x, jnp.zeros_like(x)),
                                                     (diff_params, diff_updates, weight))
        diff_params_memory, diff_updates_memory, weights_memory = tree_map(
            lambda x, y: x.at[prev_memory_idx].set(y),
            (state.diff_params_memory, state.diff_updates_memory, state.weights_memory),
            (diff_params, diff_updates, weight))

        if scale_init_precond:
            numerator = tree_real(tree_vdot(diff_updates, diff_params))
            denominator = tree_norm(diff_updates, squared=True)
            identity_scale = jnp.where(denominator > 0.0, numerator / denominator, 1.0)
            # first step: a capped inverse gradient norm (optax's heuristic: a first step of length <= 1)
            update_norm = tree_norm(lax.stop_gradient(updates))
            capped_inv_norm = jnp.minimum(1.0, 1.0 / update_norm)
            identity_scale = jnp.where(state.count > 0, identity_scale, capped_inv_norm)
        else:
            identity_scale = 1.0

        precond = _precondition_by_lbfgs(updates, diff_params_memory, diff_updates_memory, weights_memory,
                                         identity_scale, memory_idx)
        return precond, ScaleByLBFGSState(count=safe_increment(state.count), params=params, updates=updates,
                                          diff_params_memory=diff_params_memory,
                                          diff_updates_memory=diff_updates_memory, weights_memory=weights_memory)
    return GradientTransformation(init, update)


def lbfgs(learning_rate=None, memory_size: int = 10, scale_init_precond: bool = True,
          linesearch: GradientTransformation | None = scale_by_zoom_linesearch(
              max_linesearch_steps=20, initial_guess_strategy="one")) -> GradientTransformationExtraArgs:
    """L-BFGS: :func:`scale_by_lbfgs`, then ``-learning_rate`` (-1 when None), then ``linesearch`` (by default a
    zoom line search; None for none). ``update`` takes the line search's ``value=``, ``grad=``, ``value_fn=``
    (see :func:`value_and_grad_from_state`)."""
    base_scaling = scale(-1.0) if learning_rate is None else scale_by_learning_rate(learning_rate)
    if linesearch is None:
        linesearch = identity()
    _check_transform(linesearch, "lbfgs: linesearch")
    return chain(scale_by_lbfgs(memory_size=memory_size, scale_init_precond=scale_init_precond), base_scaling,
                 linesearch)
