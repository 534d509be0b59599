"""``associative_scan``: all prefix combinations of an associative function in O(log n) depth.

The classic recursive odd/even scheme, written with static slices (no loop primitive): combine
neighbouring pairs, scan the half-length result recursively, then fill in the even positions.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import lax
from ..core import tree_util
from ..core.tracing import abstractify
from .common import ControlFlowError


def _slice(x, start: int, stop: int | None, step: int, axis: int):
    shape = abstractify(x).shape
    n = shape[axis]
    stop = n if stop is None else (stop if stop >= 0 else n + stop)
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, max(stop, start), step
    return lax.slice(x, starts, limits, strides)


def _interleave(even, odd, axis: int):
    """[e0, o0, e1, o1, ...] along ``axis`` (even has as many or one more element than odd)."""
    se, so = abstractify(even).shape, abstractify(odd).shape
    n_e, n_o = se[axis], so[axis]
    if n_e > n_o:  # pad odd with one (discarded) element
        pad_cfg = [(0, 0, 0)] * len(so)
        pad_cfg[axis] = (0, 1, 0)
        odd = lax.pad(odd, lax.literal(0, abstractify(odd).dtype), pad_cfg)
    stacked = lax.concatenate([lax.reshape(even, se[:axis + 1] + (1,) + se[axis + 1:]),
                               lax.reshape(odd, se[:axis + 1] + (1,) + se[axis + 1:])], axis + 1)
    merged = lax.reshape(stacked, se[:axis] + (2 * n_e,) + se[axis + 1:])
    return _slice(merged, 0, n_e + n_o, 1, axis)


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
    if reverse:
        leaves = [lax.rev(x, (axis,)) for x in leaves]

    def combine(a, b):
        out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
        return tree_util.tree_leaves(out)

    def scan(xs):
        n = abstractify(xs[0]).shape[axis]
        if n < 2:
            return xs
        reduced = combine([_slice(x, 0, -1, 2, axis) for x in xs], [_slice(x, 1, None, 2, axis) for x in xs])
        odd = scan(reduced)
        if n % 2 == 0:
            even = combine([_slice(o, 0, -1, 1, axis) for o in odd], [_slice(x, 2, None, 2, axis) for x in xs])
        else:
            even = combine(odd, [_slice(x, 2, None, 2, axis) for x in xs])
        even = [lax.concatenate([_slice(x, 0, 1, 1, axis), e], axis) for x, e in zip(xs, even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(leaves)
    if reverse:
        out = [lax.rev(x, (axis,)) for x in out]
    return tree_util.tree_unflatten(tree, out)
