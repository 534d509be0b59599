"""``kiln.custom_batching``: ``custom_vmap`` (a user-defined batching rule) and ``sequential_vmap`` (batch a
function by looping over the batch, as ``jax.custom_batching``)."""
from __future__ import annotations

import functools
from typing import Callable

from .batching.custom_vmap import custom_vmap
from .control.loops import map as _map
from .core import tree_util

__all__ = ["custom_vmap", "sequential_vmap"]


def sequential_vmap(fun: Callable) -> custom_vmap:
    """``fun`` whose ``vmap`` runs it once per batch element in a loop (``kiln.lax.map``) instead of batching its
    operations: for functions whose batched form is costly or unavailable. The unbatched arguments are
    passed to every iteration as they are."""
    wrapped = custom_vmap(fun)

    @wrapped.def_vmap
    def rule(axis_size, in_batched, *args):
        flags = tree_util.tree_leaves(in_batched)
        leaves, tree = tree_util.tree_flatten(args)
        batched = [x for x, b in zip(leaves, flags) if b]

        def one(xs):
            it = iter(xs)
            return fun(*tree_util.tree_unflatten(tree, [next(it) if b else x for x, b in zip(leaves, flags)]))
        out = _map(one, batched)
        return out, tree_util.tree_map(lambda _: True, out)
    functools.update_wrapper(wrapped, fun)
    return wrapped
