"""Batching rules of the collectives (``lax/collectives.py``): over its own axis name a collective
is a reduction (or a stack, a gather, a transpose, or an iota) across the batch, the batch elements
playing the devices; over other names it stays a collective, with its axis parameters moved past the
batch dimension."""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.tracing import abstractify
from ..lax import api as lax
from ..lax import indexing
from ..lax.collectives import (
    _names,
    all_gather_p,
    all_to_all_p,
    axis_index_p,
    pmax_p,
    pmin_p,
    ppermute_p,
    psum_p,
    psum_scatter_p,
    pvary_p,
)
from .core import BatchContext, always_batched, batch_rules, move_dim


def _reducer_rule(prim, reduce):
    def rule(ctx: BatchContext, args, dims, *, axis_name):
        (x,), (d,) = args, dims
        names = _names(axis_name)
        if ctx.name not in names:
            return prim.bind(x, axis_name=axis_name), d
        if d is None:  # the same value in every element: psum multiplies by the size
            out = x if prim is not psum_p else lax.mul(x, lax.full_like(x, ctx.size))
        else:
            out = reduce(x, (d,))
        rest = tuple(n for n in names if n != ctx.name)
        if rest:
            out = prim.bind(out, axis_name=rest if len(rest) > 1 else rest[0])
        return out, None
    batch_rules[prim] = rule


_reducer_rule(psum_p, lax.reduce_sum)
_reducer_rule(pmax_p, lax.reduce_max)
_reducer_rule(pmin_p, lax.reduce_min)


def _merge_with_next(x, axis: int):
    """``x`` with dimensions ``axis`` and ``axis + 1`` merged into one."""
    shape = list(abstractify(x).shape)
    return lax.reshape(x, tuple(shape[:axis] + [shape[axis] * shape[axis + 1]] + shape[axis + 2:]))


def _split(x, axis: int, parts: int):
    """``x`` with dimension ``axis`` split into (``parts``, the rest)."""
    shape = list(abstractify(x).shape)
    return lax.reshape(x, tuple(shape[:axis] + [parts, shape[axis] // parts] + shape[axis + 1:]))


def _all_gather_batch(ctx, args, dims, *, axis_name, axis, tiled, axis_size, to):
    (x,), (d,) = args, dims
    if axis_name != ctx.name:
        if d is None:
            return all_gather_p.bind(x, axis_name=axis_name, axis=axis, tiled=tiled, axis_size=axis_size, to=to), None
        if d <= axis:
            axis += 1
        elif not tiled:  # the gathered dimension is inserted before the batch dimension
            d += 1
        return all_gather_p.bind(x, axis_name=axis_name, axis=axis, tiled=tiled, axis_size=axis_size, to=to), d
    out = move_dim(x, d, axis, ctx.size)
    if tiled:
        out = _merge_with_next(out, axis)
    return out, None


batch_rules[all_gather_p] = _all_gather_batch


def _axis_index_batch(ctx, args, dims, *, axis_name):
    if axis_name != ctx.name:
        return axis_index_p.bind(axis_name=axis_name), None
    return lax.iota(dtypes.canonicalize_dtype(np.int32), ctx.size), 0


batch_rules[axis_index_p] = _axis_index_batch
batch_rules[pvary_p] = lambda ctx, args, dims, *, axes: (pvary_p.bind(args[0], axes=axes), dims[0])
def _ppermute_batch(ctx, args, dims, *, axis_name, perm):
    (x,), (d,) = args, dims
    if axis_name != ctx.name:
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    # Element ``dst`` takes element ``src``'s value; elements no pair reaches get zeros.
    sources = np.zeros(ctx.size, np.int32)
    reached = np.zeros(ctx.size, bool)
    for src, dst in perm:
        sources[dst], reached[dst] = src, True
    x = move_dim(x, d, 0, ctx.size)
    out = indexing.index_take(x, [sources], (0,))
    if not reached.all():
        shape = abstractify(out).shape
        mask = lax.broadcast_in_dim(reached, shape, (0,))
        out = lax.select(mask, out, lax.full_like(out, 0))
    return out, 0


batch_rules[ppermute_p] = _ppermute_batch


def _all_to_all_batch(ctx, args, dims, *, axis_name, split_axis, concat_axis, axis_size, tiled):
    (x,), (d,) = args, dims
    if axis_name != ctx.name and d is None:
        return all_to_all_p.bind(x, axis_name=axis_name, split_axis=split_axis, concat_axis=concat_axis,
                                 axis_size=axis_size, tiled=tiled), None
    if axis_name != ctx.name:
        return all_to_all_p.bind(x, axis_name=axis_name, split_axis=split_axis + (d <= split_axis),
                                 concat_axis=concat_axis + (d <= concat_axis), axis_size=axis_size,
                                 tiled=tiled), d
    # Batch (the sender) first, then split_axis split into (receiver, block): receiver j's result is the
    # blocks j of every sender, lined up by sender along concat_axis.
    x = _split(move_dim(x, d, 0, ctx.size), split_axis + 1, ctx.size)
    ndim = abstractify(x).ndim - 2  # one element's rank
    perm = [split_axis + 1]  # the receivers become the batch
    for e in range(ndim):
        pos = 1 + e if e < split_axis else (split_axis + 2 if e == split_axis else 2 + e)
        perm.extend([0, pos] if e == concat_axis else [pos])
    out = lax.transpose(x, perm)
    return _merge_with_next(out, concat_axis + 1), 0


batch_rules[all_to_all_p] = _all_to_all_batch


def _psum_scatter_batch(ctx, args, dims, *, axis_name, scatter_dimension, axis_size, tiled):
    (x,), (d,) = args, dims
    if axis_name != ctx.name and d is None:
        return psum_scatter_p.bind(x, axis_name=axis_name, scatter_dimension=scatter_dimension,
                                   axis_size=axis_size, tiled=tiled), None
    if axis_name != ctx.name:
        if d <= scatter_dimension:
            scatter_dimension += 1
        elif not tiled:  # the scattered dimension before the batch dimension goes
            d -= 1
        return psum_scatter_p.bind(x, axis_name=axis_name, scatter_dimension=scatter_dimension,
                                   axis_size=axis_size, tiled=tiled), d
    total = lax.mul(x, lax.full_like(x, ctx.size)) if d is None else lax.reduce_sum(x, (d,))
    # Element i keeps block i of the total along scatter_dimension: that dimension becomes the batch.
    return (_split(total, scatter_dimension, ctx.size) if tiled else total), scatter_dimension


batch_rules[psum_scatter_p] = _psum_scatter_batch
# Collectives observe the axis even when their operand is the same for every element.
always_batched.update({psum_p, pmax_p, pmin_p, all_gather_p, axis_index_p, ppermute_p, all_to_all_p,
                       psum_scatter_p})
