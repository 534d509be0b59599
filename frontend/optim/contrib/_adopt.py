"""ADOPT (Taniguchi et al., 2024): Adam whose first moment averages gradients already normalised by the
*previous* second moment, so the current gradient does not bias its own scaling."""
from __future__ import annotations

from typing import Callable

from ... import numpy as jnp
from ...core.tree_util import tree_map
from ..more import _abs_sq
from ..transforms import (
    GradientTransformation,
    ScaleByAdamState,
    _increment,
    _zeros_count,
    chain,
    scale_by_learning_rate,
)

__all__ = ["scale_by_adopt", "adopt"]


def _quarter_power(count):
    return count ** 0.25


def scale_by_adopt(b1=0.9, b2=0.9999, eps=1e-6, mu_dtype=None, *, nesterov: bool = False,
                   use_clipping: bool = True, clip_value_fn: Callable = _quarter_power) -> GradientTransformation:
    """ADOPT's rescaling; the state is Adam's (``count``, ``mu``, ``nu``). On the first step only ``nu`` is
    filled (``mu`` keeps a zero update); ``clip_value_fn(count)`` bounds the normalised gradient."""
    def init(params):
        mu = tree_map(lambda p: jnp.zeros_like(p, dtype=mu_dtype), params)
        return ScaleByAdamState(_zeros_count(), mu, tree_map(jnp.zeros_like, params))

    def update(updates, state, params=None):
        started = state.count > 0
        b2_ = jnp.where(started, b2, 0)  # (the first step sets nu to g**2 and leaves mu at zero)
        b1_ = jnp.where(started, b1, 1)
        nu = tree_map(lambda g, n: (1 - b2_) * _abs_sq(g) + b2_ * n, updates, state.nu)

        def normalised(g, n):  # by the previous nu, as the method asks
            u = g / jnp.maximum(jnp.sqrt(n), eps)
            if use_clipping:
                c = clip_value_fn(state.count)
                u = jnp.clip(u, -c, c)
            return u
        mu_updates = tree_map(normalised, updates, state.nu)
        mu = tree_map(lambda u, m: (1 - b1_) * u + b1_ * m, mu_updates, state.mu)
        out = tree_map(lambda u, m: (1 - b1_) * u + b1_ * m, mu_updates, mu) if nesterov else mu
        if mu_dtype is not None:
            mu = tree_map(lambda m: m.astype(mu_dtype), mu)
        return out, ScaleByAdamState(_increment(state.count), mu, nu)
    return GradientTransformation(init, update)


def adopt(learning_rate, b1=0.9, b2=0.9999, eps=1e-6, mu_dtype=None, *, nesterov: bool = False,
          use_clipping: bool = True, clip_value_fn: Callable = _quarter_power) -> GradientTransformation:
    """ADOPT: :func:`scale_by_adopt` then ``scale_by_learning_rate``."""
    return chain(scale_by_adopt(b1, b2, eps, mu_dtype, nesterov=nesterov, use_clipping=use_clipping,
                                clip_value_fn=clip_value_fn),
                 scale_by_learning_rate(learning_rate))
