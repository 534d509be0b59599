"""Distance over Gradients (DoG, Ivgi et al., 2023, arXiv:2302.12022) and its weighted variant DoWG (Khaled et
al., 2023, arXiv:2305.16284): SGD whose step size is the largest distance travelled from the initial point
over the root of the accumulated squared gradient norms."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ..transforms import (
    GradientTransformation,
    _need_params,
    add_decayed_weights,
    chain,
    identity,
    scale_by_learning_rate,
)
from ..tree_utils import tree_norm, tree_scale, tree_sub
from ._prodigy import _lowest_dtype

__all__ = ["DoGState", "DoWGState", "dog", "dowg"]

_DOG_INIT_STEPS = ("distance", "learning_rate", "heuristic")


class DoGState(NamedTuple):
    is_init_step: Any  # bool
    init_params: Any
    max_dist: Any
    sum_sq_norm_grads: Any


class DoWGState(NamedTuple):
    init_params: Any
    weighted_sq_norm_grads: Any
    estim_sq_dist: Any


def _check_init_step(init_step):
    try:
        kind, value = init_step
    except (TypeError, ValueError):
        kind, value = None, None
    if kind not in _DOG_INIT_STEPS:
        raise ValueError(f"dog: init_step must be a pair (kind, value) with kind one of {_DOG_INIT_STEPS}, got "
                         f"{init_step!r}; e.g. init_step=('heuristic', 1e-6).")
    return kind, value


def scale_by_dog(init_step=("heuristic", 1e-6), eps=1e-8) -> GradientTransformation:
    """DoG's rescaling: ``max_k ||x_k - x_0|| / sqrt(sum_k ||g_k||**2 + eps)`` times the updates."""
    kind, value = _check_init_step(init_step)

    def init(params):
        if kind == "distance":
            r_eps = value
        elif kind == "heuristic":
            r_eps = value * (1 + tree_norm(params))
        else:
            r_eps = 0.0
        dtype = _lowest_dtype(params)
        return DoGState(jnp.asarray(True), params, jnp.asarray(r_eps, dtype=dtype), jnp.asarray(0.0, dtype=dtype))

    def update(updates, state, params=None):
        _need_params(params, "dog")
        max_dist = jnp.maximum(state.max_dist, tree_norm(tree_sub(state.init_params, params)))
        sum_sq_norm_grads = state.sum_sq_norm_grads + tree_norm(updates, squared=True)
        lr = max_dist / jnp.sqrt(sum_sq_norm_grads + eps)
        if kind == "learning_rate":  # (the first step's size is given; the distance starts at 0)
            lr = jnp.where(state.is_init_step, value, lr)
        return tree_scale(lr, updates), DoGState(jnp.asarray(False), state.init_params, max_dist, sum_sq_norm_grads)
    return GradientTransformation(init, update)


def _decay_first(weight_decay, mask):
    return identity() if weight_decay is None else add_decayed_weights(weight_decay, mask)


def dog(learning_rate=1.0, init_step=("heuristic", 1e-6), eps=1e-8, weight_decay=None,
        mask=None) -> GradientTransformation:
    """DoG: optional weight decay (on the ``mask``ed leaves), DoG's rescaling, then ``-learning_rate``.
    ``init_step`` is ``("distance", r0)``, ``("learning_rate", eta0)`` or ``("heuristic", a)`` for
    ``r0 = a * (1 + ||x0||)`` (then ``init`` must get the real initial parameters)."""
    return chain(_decay_first(weight_decay, mask), scale_by_dog(init_step, eps), scale_by_learning_rate(learning_rate))


def scale_by_dowg(init_estim_sq_dist=None, eps=1e-4) -> GradientTransformation:
    """DoWG's rescaling: ``d2 / (sqrt(sum_k d2_k * ||g_k||**2) + eps)`` with ``d2`` the largest squared distance
    from the initial point (starting at ``init_estim_sq_dist``, else ``eps``)."""
    def init(params):
        d2 = eps if init_estim_sq_dist is None else init_estim_sq_dist
        dtype = _lowest_dtype(params)
        return DoWGState(params, jnp.asarray(0.0, dtype=dtype), jnp.asarray(d2, dtype=dtype))

    def update(updates, state, params=None):
        _need_params(params, "dowg")
        estim_sq_dist = jnp.maximum(state.estim_sq_dist, tree_norm(tree_sub(state.init_params, params), squared=True))
        weighted = estim_sq_dist * tree_norm(updates, squared=True) + state.weighted_sq_norm_grads
        lr = estim_sq_dist / (jnp.sqrt(weighted) + eps)
        return tree_scale(lr, updates), DoWGState(state.init_params, weighted, estim_sq_dist)
    return GradientTransformation(init, update)


def dowg(learning_rate=1.0, init_estim_sq_dist=None, eps=1e-4, weight_decay=None,
         mask=None) -> GradientTransformation:
    """DoWG: optional weight decay (on the ``mask``ed leaves), DoWG's rescaling, then ``-learning_rate``."""
    return chain(_decay_first(weight_decay, mask), scale_by_dowg(init_estim_sq_dist, eps),
                 scale_by_learning_rate(learning_rate))
