"""Batching rule of ``sort``: the batch dimension is one more dimension that is not sorted along."""
from __future__ import annotations

from ..core.tracing import abstractify
from ..lax import sorting
from .core import batch_rules, move_dim


def _sort_rule(ctx, args, dims, *, dimension, is_stable, num_keys):
    # All operands have one shape: meet at the first batched operand's batch dimension.
    d = next(bd for bd in dims if bd is not None)
    args = [move_dim(a, bd, d, ctx.size) for a, bd in zip(args, dims)]
    outs = sorting.sort_p.bind(*args, dimension=dimension + (dimension >= d), is_stable=is_stable,
                               num_keys=num_keys)
    return outs, [d] * len(outs)


batch_rules[sorting.sort_p] = _sort_rule


def _top_k_rule(ctx, args, dims, *, k):
    # top_k works on the last axis: any other place of the batch dimension will do.
    (x,), (d,) = args, dims
    nd = abstractify(x).ndim
    if d == nd - 1:
        x, d = move_dim(x, d, 0, ctx.size), 0
    outs = sorting.top_k_p.bind(x, k=k)
    return outs, [d, d]


batch_rules[sorting.top_k_p] = _top_k_rule
