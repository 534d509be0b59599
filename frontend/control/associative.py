"""``associative_scan``: all prefix combinations of an associative function in O(log n) depth.

The classic recursive odd/even scheme, written with static slices (no loop primitive): combine
neighbouring pairs, scan the half-length result recursively, then fill in the even positions
(``kiln.frontend.lax.windowed.prefix_scan``, JAX's scheme op for op, which the derivatives of the
cumulative reductions go through too).
"""
from __future__ import annotations

from typing import Any, Callable

from ..core import tree_util
from ..core.tracing import abstractify
from ..lax.windowed import prefix_scan
from .common import ControlFlowError


def associative_scan(fn: Callable, elems: Any, reverse: bool = False, axis: int = 0):
    """Prefix scan ``[e0, fn(e0, e1), fn(fn(e0, e1), e2), ...]`` along ``axis`` for associative ``fn``."""
    leaves, tree = tree_util.tree_flatten(elems)
    if not leaves:
        return elems
    ndim = abstractify(leaves[0]).ndim
    axis = axis % ndim if ndim else 0
    sizes = {abstractify(x).shape[axis] for x in leaves}
    if len(sizes) != 1:
        raise ControlFlowError(f"kiln.lax.associative_scan: all leaves need the same size along axis {axis}, got "
                               f"{sorted(sizes)}")

    def combine(a, b):
        out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
        return tree_util.tree_leaves(out)

    return tree_util.tree_unflatten(tree, prefix_scan(combine, leaves, axis, reverse))
