"""MADGRAD (Defazio & Jelassi, 2021): dual averaging with a cube-root AdaGrad-like scaling and momentum as an
average of the iterates."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.tree_util import tree_map
from ..transforms import GradientTransformation, _increment, _need_params, _zeros_count, add_decayed_weights, chain

__all__ = ["MadgradState", "scale_by_madgrad", "madgrad"]


class MadgradState(NamedTuple):
    count: Any
    grad_sum_sq: Any  # the weighted sum of squared gradients
    s: Any  # the weighted sum of gradients
    x0: Any  # the initial parameters


def scale_by_madgrad(learning_rate, momentum=0.9, eps=1e-6) -> GradientTransformation:
    """MADGRAD's step (the learning rate is part of it: the updates move the params to the new iterate).
    ``update`` needs the params."""
    def init(params):
        zeros = tree_map(jnp.zeros_like, params)
        return MadgradState(_zeros_count(), zeros, tree_map(jnp.zeros_like, params), tree_map(lambda p: p, params))

    def update(updates, state, params=None):
        _need_params(params, "scale_by_madgrad")
        count = state.count
        lr = learning_rate(count) if callable(learning_rate) else learning_rate
        lamb = (lr + eps) * jnp.sqrt(count + 1)
        sum_sq = tree_map(lambda s, g: s + (lamb * g ** 2).astype(g.dtype), state.grad_sum_sq, updates)
        s = tree_map(lambda s, g: s + (lamb * g).astype(g.dtype), state.s, updates)
        z = tree_map(lambda x0, s, q: x0 - s / (jnp.cbrt(q) + eps), state.x0, s, sum_sq)
        x = tree_map(lambda z, p: (1 - momentum) * z + momentum * p, z, params)
        out = tree_map(lambda new, p: new - p, x, params)
        return out, MadgradState(_increment(count), sum_sq, s, state.x0)
    return GradientTransformation(init, update)


def madgrad(learning_rate, momentum=0.9, weight_decay=0.0, eps=1e-6) -> GradientTransformation:
    """MADGRAD: weight decay added to the gradients, then :func:`scale_by_madgrad`."""
    return chain(add_decayed_weights(weight_decay), scale_by_madgrad(learning_rate, momentum, eps))
