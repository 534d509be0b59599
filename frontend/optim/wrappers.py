"""Transformations that wrap another one (optax's ``flatten`` and ``apply_if_finite``)."""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import numpy as jnp
from ..core.tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten
from .transforms import GradientTransformation, _check_transform, _increment

__all__ = ["flatten", "apply_if_finite", "ApplyIfFiniteState"]


def _concat(tree):
    return jnp.concatenate([jnp.ravel(leaf) for leaf in tree_leaves(tree)])


def _split_like(flat, like):
    leaves, treedef = tree_flatten(like)
    pieces, start = [], 0
    for leaf in leaves:
        size = int(jnp.size(leaf))
        pieces.append(flat[start:start + size].reshape(jnp.shape(leaf)))
        start += size
    return tree_unflatten(treedef, pieces)


def flatten(inner: GradientTransformation) -> GradientTransformation:
    """Runs ``inner`` on one vector holding every leaf, then splits its updates back into the tree's shapes
    (fewer, larger operations for models with many small parameters)."""
    _check_transform(inner, "optim.flatten")

    def init(params):
        return inner.init(_concat(params))

    def update(updates, state, params=None):
        flat_updates, state = inner.update(_concat(updates), state, None if params is None else _concat(params))
        return _split_like(flat_updates, updates), state
    return GradientTransformation(init, update)


class ApplyIfFiniteState(NamedTuple):
    notfinite_count: Any  # consecutive non-finite updates (reset by a finite one)
    last_finite: Any
    total_notfinite: Any
    inner_state: Any


def apply_if_finite(inner: GradientTransformation, max_consecutive_errors: int) -> GradientTransformation:
    """Skips updates holding a NaN or Inf (zero updates, ``inner``'s state kept) unless more than
    ``max_consecutive_errors`` came in a row, then lets them through."""
    _check_transform(inner, "optim.apply_if_finite")

    def init(params):
        zero = jnp.zeros([], jnp.int32)
        return ApplyIfFiniteState(zero, jnp.array(True), zero, inner.init(params))

    def update(updates, state, params=None):
        finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(leaf)) for leaf in tree_leaves(updates)]))
        notfinite_count = jnp.where(finite, 0, _increment(state.notfinite_count))
        new_updates, new_inner = inner.update(updates, state.inner_state, params)
        accept = jnp.logical_or(finite, notfinite_count > max_consecutive_errors)
        new_updates = tree_map(lambda u: jnp.where(accept, u, jnp.zeros_like(u)), new_updates)
        new_inner = tree_map(lambda n, o: jnp.where(accept, n, o), new_inner, state.inner_state)
        total = jnp.where(finite, state.total_notfinite, _increment(state.total_notfinite))
        return new_updates, ApplyIfFiniteState(notfinite_count, finite, total, new_inner)
    return GradientTransformation(init, update)
