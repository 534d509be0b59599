"""Batching rules of the collectives (``lax/collectives.py``): over its own axis name a collective
is a reduction (or a stack, or an iota) across the batch; over other names it stays a collective."""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.tracing import abstractify
from ..lax import api as lax
from ..lax.collectives import _names, all_gather_p, axis_index_p, pmax_p, pmin_p, psum_p
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


def _all_gather_batch(ctx, args, dims, *, axis_name, axis, tiled, axis_size):
    (x,), (d,) = args, dims
    if axis_name != ctx.name:
        return all_gather_p.bind(x, axis_name=axis_name, axis=axis + (axis >= d) if d is not None else axis,
                                 tiled=tiled, axis_size=axis_size), d
    out = move_dim(x, d, axis, ctx.size)
    if tiled:
        shape = list(abstractify(out).shape)
        merged = shape[:axis] + [shape[axis] * shape[axis + 1]] + shape[axis + 2:]
        out = lax.reshape(out, tuple(merged))
    return out, None


batch_rules[all_gather_p] = _all_gather_batch


def _axis_index_batch(ctx, args, dims, *, axis_name):
    if axis_name != ctx.name:
        return axis_index_p.bind(axis_name=axis_name), None
    return lax.iota(dtypes.canonicalize_dtype(np.int32), ctx.size), 0


batch_rules[axis_index_p] = _axis_index_batch
# Collectives observe the axis even when their operand is the same for every element.
always_batched.update({psum_p, pmax_p, pmin_p, all_gather_p, axis_index_p})
