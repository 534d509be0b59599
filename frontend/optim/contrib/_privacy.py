"""Differentially private SGD (Abadi et al., 2016): per-example gradients clipped to a global l2 norm,
summed, noised with Gaussian noise and averaged."""
from __future__ import annotations

import warnings
from typing import Any, NamedTuple

from ... import numpy as jnp
from ... import random
from ...batching.api import vmap
from ...core.tree_util import tree_flatten, tree_unflatten
from ..transforms import GradientTransformation, chain, identity, scale_by_learning_rate, trace
from ..tree_utils import tree_norm

__all__ = ["DifferentiallyPrivateAggregateState", "differentially_private_aggregate", "dpsgd"]


class DifferentiallyPrivateAggregateState(NamedTuple):
    rng_key: Any


def _as_key(key):
    if isinstance(key, random.KeyArray):
        return key
    return random.key(key)


def _clipped_sum(grads, l2_norm_clip):
    """The sum over the batch (axis 0) of the per-example gradients, each scaled to global norm at most
    ``l2_norm_clip`` (optax's ``per_example_global_norm_clip``)."""
    norms = vmap(tree_norm)(grads)
    multipliers = jnp.nan_to_num(jnp.minimum(l2_norm_clip / norms, 1.0), nan=1.0)
    return [jnp.tensordot(multipliers, g, axes=1) for g in grads]


def differentially_private_aggregate(l2_norm_clip, noise_multiplier, key=None, *,
                                     seed=None) -> GradientTransformation:
    """Aggregates per-example gradients (every leaf with the batch on axis 0) into a private mean: each
    example clipped to global norm ``l2_norm_clip``, Gaussian noise of standard deviation
    ``l2_norm_clip * noise_multiplier`` added to the sum, divided by the batch size. ``key`` (a typed key or an
    int seed) seeds the noise; ``seed`` is optax's deprecated name for it."""
    if seed is not None:
        warnings.warn('differentially_private_aggregate: "seed" is deprecated, pass key= instead.',
                      DeprecationWarning, stacklevel=2)
        if key is not None:
            raise ValueError("differentially_private_aggregate: pass key or seed (deprecated), not both.")
        key = seed
    if key is None:
        warnings.warn("differentially_private_aggregate: no key given, using key(0); pass key= (optax will "
                      "require it).", stacklevel=2)
        key = 0
    key = _as_key(key)
    noise_std = l2_norm_clip * noise_multiplier

    def update(updates, state, params=None):
        leaves, treedef = tree_flatten(updates)
        if not leaves or any(jnp.ndim(g) == 0 for g in leaves):
            raise ValueError("differentially_private_aggregate: every leaf of the updates must be per-example "
                             "gradients, with the batch on axis 0 (compute them with kiln.vmap(kiln.grad(loss))).")
        batch = leaves[0].shape[0]
        new_key, *keys = random.split(state.rng_key, len(leaves) + 1)
        noised = [(g + noise_std * random.normal(k, g.shape, g.dtype)) / batch
                  for g, k in zip(_clipped_sum(leaves, l2_norm_clip), keys)]
        return tree_unflatten(treedef, noised), DifferentiallyPrivateAggregateState(new_key)
    return GradientTransformation(lambda params: DifferentiallyPrivateAggregateState(key), update)


def dpsgd(learning_rate, l2_norm_clip, noise_multiplier, seed: int, momentum=None,
          nesterov: bool = False) -> GradientTransformation:
    """DP-SGD: :func:`differentially_private_aggregate` (noise seeded by ``seed``), (Nesterov) momentum when
    ``momentum`` is given, then ``scale_by_learning_rate``."""
    return chain(differentially_private_aggregate(l2_norm_clip, noise_multiplier, key=seed),
                 identity() if momentum is None else trace(momentum, nesterov),
                 scale_by_learning_rate(learning_rate))
