"""AdaBelief-style rescaling with the *previous* step's belief (AdaCB, "ACProp": Zhuang et al., 2021): the
gradient is scaled by the bias-corrected EMA of ``(g - mu)**2`` from before this step."""
from __future__ import annotations

from ... import numpy as jnp
from ...core.tree_util import tree_map
from ..moment_optimizers import ScaleByBeliefState
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

__all__ = ["scale_by_acprop", "acprop"]


def scale_by_acprop(b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16) -> GradientTransformation:
    """ACProp's rescaling: ``g / (sqrt(nu_hat) + eps)`` with ``nu_hat`` the previous bias-corrected belief
    (1 on the first step, when there is none yet)."""
    def init(params):
        return ScaleByBeliefState(_zeros_count(), tree_map(jnp.zeros_like, params), tree_map(jnp.zeros_like, params))

    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: (1 - b1) * g + b1 * m, updates, state.mu)
        err = tree_map(lambda g, m: g - m, updates, state.mu)
        nu = tree_map(lambda e, n: (1 - b2) * _abs_sq(e) + b2 * n + eps_root, err, state.nu)
        count = _increment(state.count)
        first = state.count == 0
        nu_hat = _bias_correction(state.nu, b2, jnp.where(first, count, state.count))
        nu_hat = tree_map(lambda v: jnp.where(first, 1, v), nu_hat)
        out = tree_map(lambda g, v: g / (jnp.sqrt(v) + eps), updates, nu_hat)
        return out, ScaleByBeliefState(count, mu, nu)
    return GradientTransformation(init, update)


def acprop(learning_rate, b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, weight_decay=0.0,
           mask=None) -> GradientTransformation:
    """ACProp: :func:`scale_by_acprop`, decoupled weight decay, then ``scale_by_learning_rate``."""
    return chain(scale_by_acprop(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))
