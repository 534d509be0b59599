"""COCOB-Backprop (Orabona & Tommasi, 2017, arXiv:1705.07795, Algorithm 2): learning-rate-free descent that
bets, coordinate by coordinate, a fraction of the reward won so far."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.tree_util import tree_map
from ..transforms import GradientTransformation, _need_params, add_decayed_weights, chain, scale_by_learning_rate

__all__ = ["COCOBState", "scale_by_cocob", "cocob"]


class COCOBState(NamedTuple):
    init_particles: Any  # the initial parameters
    cumulative_gradients: Any  # minus the sum of the gradients
    scale: Any  # the largest |gradient| seen (L)
    subgradients: Any  # the sum of |gradient| (G)
    reward: Any


def scale_by_cocob(alpha=100.0, eps=1e-8) -> GradientTransformation:
    """COCOB's update (the step to the new bet, not scaled by a learning rate): ``alpha`` bounds the fraction
    bet, ``eps`` is the first scale (so that nothing divides by 0)."""
    def init(params):
        cumulative, subgrads, reward = (tree_map(jnp.zeros_like, params) for _ in range(3))
        return COCOBState(params, cumulative, tree_map(lambda p: eps * jnp.ones_like(p), params), subgrads, reward)

    def update(updates, state, params=None):
        _need_params(params, "cocob")
        scale = tree_map(lambda s, g: jnp.maximum(s, jnp.abs(g)), state.scale, updates)
        subgrads = tree_map(lambda s, g: s + jnp.abs(g), state.subgradients, updates)
        reward = tree_map(lambda r, g, p, p0: jnp.maximum(r - g * (p - p0), 0), state.reward, updates, params,
                          state.init_particles)
        cumulative = tree_map(lambda c, g: c - g, state.cumulative_gradients, updates)

        def step(p, p0, c, lip, gsum, r):  # (optax's order of operations)
            return -p + (p0 + c / (lip * jnp.maximum(gsum + lip, alpha * lip)) * (lip + r))
        out = tree_map(step, params, state.init_particles, cumulative, scale, subgrads, reward)
        return out, COCOBState(state.init_particles, cumulative, scale, subgrads, reward)
    return GradientTransformation(init, update)


def cocob(learning_rate=1.0, alpha=100.0, eps=1e-8, weight_decay=0.0, mask=None) -> GradientTransformation:
    """COCOB: weight decay (on the ``mask``ed leaves), the gradients times ``learning_rate`` (unflipped), then
    COCOB's update."""
    return chain(add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate, flip_sign=False),
                 scale_by_cocob(alpha, eps))
