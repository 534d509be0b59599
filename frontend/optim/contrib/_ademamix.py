"""AdEMAMix (Pagliardini et al., 2024): Adam with a second, slow momentum added to the fast one; and its
simplified form (a single momentum accumulated without the ``1 - b1`` factor)."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...core.tree_util import tree_map
from ..more import _abs_sq
from ..transforms import (
    GradientTransformation,
    _bias_correction,
    _increment,
    _zeros_count,
    add_decayed_weights,
    chain,
    scale_by_learning_rate,
)

__all__ = ["ScaleByAdemamixState", "scale_by_ademamix", "ademamix", "ScaleBySimplifiedAdEMAMixState",
           "scale_by_simplified_ademamix", "simplified_ademamix"]


class ScaleByAdemamixState(NamedTuple):
    count: Any
    count_m2: Any
    m1: Any  # the fast EMA of the gradients
    m2: Any  # the slow EMA
    nu: Any


def scale_by_ademamix(b1=0.9, b2=0.999, b3=0.9999, alpha=6.0, eps=1e-8, eps_root=0.0,
                      mu_dtype=None) -> GradientTransformation:
    """AdEMAMix's rescaling: ``(m1_hat + alpha * m2) / (sqrt(nu_hat + eps_root) + eps)``; ``b3`` and ``alpha``
    may be schedules of the step count (the slow EMA is not bias-corrected)."""
    def init(params):
        def zeros():
            return tree_map(lambda p: jnp.zeros_like(p, dtype=mu_dtype), params)
        return ScaleByAdemamixState(_zeros_count(), _zeros_count(), zeros(), zeros(), zeros())

    def update(updates, state, params=None):
        c_b3 = b3(state.count_m2) if callable(b3) else b3
        c_alpha = alpha(state.count_m2) if callable(alpha) else alpha
        m1 = tree_map(lambda g, m: (1 - b1) * g + b1 * m, updates, state.m1)
        m2 = tree_map(lambda g, m: (1 - c_b3) * g + c_b3 * m, updates, state.m2)
        nu = tree_map(lambda g, n: (1 - b2) * _abs_sq(g) + b2 * n, updates, state.nu)
        count = _increment(state.count)
        m1_hat, nu_hat = _bias_correction(m1, b1, count), _bias_correction(nu, b2, count)
        out = tree_map(lambda a, b, v: (a + c_alpha * b) / (jnp.sqrt(v + eps_root) + eps), m1_hat, m2, nu_hat)
        # (as optax's, the moments are stored as computed: not cast back to mu_dtype)
        return out, ScaleByAdemamixState(count, _increment(state.count_m2), m1, m2, nu)
    return GradientTransformation(init, update)


def ademamix(learning_rate, b1=0.9, b2=0.999, b3=0.9999, alpha=5.0, eps=1e-8, eps_root=0.0, mu_dtype=None,
             weight_decay=0.0, mask=None) -> GradientTransformation:
    """AdEMAMix: :func:`scale_by_ademamix`, decoupled weight decay, then ``scale_by_learning_rate``."""
    return chain(scale_by_ademamix(b1, b2, b3, alpha, eps, eps_root, mu_dtype),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))


class ScaleBySimplifiedAdEMAMixState(NamedTuple):
    t: Any
    m: Any
    n: Any


def scale_by_simplified_ademamix(b1=0.99, b2=0.95, alpha=0.0, eps=1e-8, eps_root=0.0) -> GradientTransformation:
    """Simplified AdEMAMix's rescaling: ``m = g + b1 * m``, ``n`` the EMA of ``g**2``;
    ``(m + alpha * g) / (sqrt(n_hat + eps_root) + eps)``."""
    def init(params):
        return ScaleBySimplifiedAdEMAMixState(_zeros_count(), tree_map(jnp.zeros_like, params),
                                              tree_map(jnp.zeros_like, params))

    def update(updates, state, params=None):
        # (Python scalars stay Python scalars: kiln.jit then embeds them as constants, as jax.jit does optax's
        # jnp.asarray of them, so that XLA simplifies the two programs alike)
        c_alpha = alpha(state.t) if callable(alpha) else alpha
        m = tree_map(lambda g, m: g + b1 * m, updates, state.m)
        # n is the interpolation g*g + b2 * (n - g*g) (optax's order of operations)
        n = tree_map(lambda g, n: g * g + b2 * (n - g * g), updates, state.n)
        t = _increment(state.t)
        n_hat = _bias_correction(n, b2, t)
        out = tree_map(lambda m, g, v: (m + c_alpha * g) / (jnp.sqrt(v + eps_root) + eps), m, updates, n_hat)
        return out, ScaleBySimplifiedAdEMAMixState(t, m, n)
    return GradientTransformation(init, update)


def simplified_ademamix(learning_rate, b1=0.99, b2=0.95, alpha=0.0, eps=1e-8, eps_root=0.0, weight_decay=0.0,
                        mask=None) -> GradientTransformation:
    """Simplified AdEMAMix: :func:`scale_by_simplified_ademamix`, decoupled weight decay, then
    ``scale_by_learning_rate``."""
    return chain(scale_by_simplified_ademamix(b1, b2, alpha, eps, eps_root),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))
