"""Transformations that wrap another one (optax's ``flatten`` and ``apply_if_finite``)."""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import numpy as jnp
from ..control.api import cond
from ..core.tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten
from .transforms import (
    GradientTransformation,
    GradientTransformationExtraArgs,
    _check_transform,
    _increment,
    with_extra_args_support,
)

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


def flatten(inner: GradientTransformation) -> GradientTransformationExtraArgs:
    """Runs ``inner`` on one vector holding every leaf, then splits its updates back into the tree's shapes
    (fewer, larger operations for models with many small parameters). Extra keyword arguments of ``update`` go
    to ``inner``."""
    _check_transform(inner, "optim.flatten")
    inner = with_extra_args_support(inner)

    def init(params):
        return inner.init(_concat(params))

    def update(updates, state, params=None, **extra_args):
        flat_updates, state = inner.update(_concat(updates), state, None if params is None else _concat(params),
                                           **extra_args)
        return _split_like(flat_updates, updates), state
    return GradientTransformationExtraArgs(init, update)


class ApplyIfFiniteState(NamedTuple):
    notfinite_count: Any  # consecutive non-finite updates (reset by a finite one)
    last_finite: Any
    total_notfinite: Any
    inner_state: Any


def apply_if_finite(inner: GradientTransformation, max_consecutive_errors: int) -> GradientTransformationExtraArgs:
    """Skips updates holding a NaN or Inf (zero updates, ``inner``'s state kept) unless more than
    ``max_consecutive_errors`` came in a row, then lets them through. Extra keyword arguments of ``update`` go
    to ``inner``."""
    _check_transform(inner, "optim.apply_if_finite")
    inner = with_extra_args_support(inner)

    def init(params):
        zero = jnp.zeros([], jnp.int32)
        return ApplyIfFiniteState(zero, jnp.array(True), zero, inner.init(params))

    def update(updates, state, params=None, **extra_args):
        finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(leaf)) for leaf in tree_leaves(updates)]))
        notfinite_count = jnp.where(finite, jnp.zeros([], jnp.int32), _increment(state.notfinite_count))
        # a conditional, as optax's: a skipped step does not run inner at all
        new_updates, new_inner = cond(
            jnp.logical_or(finite, notfinite_count > max_consecutive_errors),
            lambda _: inner.update(updates, state.inner_state, params, **extra_args),
            lambda _: (tree_map(jnp.zeros_like, updates), state.inner_state), None)
        total = jnp.where(finite, state.total_notfinite, _increment(state.total_notfinite))
        return new_updates, ApplyIfFiniteState(notfinite_count, finite, total, new_inner)
    return GradientTransformationExtraArgs(init, update)
