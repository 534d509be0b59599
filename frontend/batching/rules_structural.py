"""Batching rules of the structural family (``lax/structural.py``): the batch dimension stays where it
is and the parameters (shapes, axes, slices) shift around it."""
from __future__ import annotations

from .. import lax
from ..core.tracing import abstractify
from ..lax import elementwise as ew
from ..lax import structural as st
from .core import batch_rules, common_dim, move_dim, operand_ndim, shift_axes


def _broadcast_in_dim_rule(ctx, args, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = args, dims
    # The batch goes right after the output dimension of the operand dimension before it, which
    # keeps broadcast_dimensions increasing without moving the operand's batch dimension.
    q = broadcast_dimensions[d - 1] + 1 if d > 0 else 0
    out_dims = [b + (b >= q) for b in broadcast_dimensions]
    out_dims.insert(d, q)
    out_shape = list(shape)
    out_shape.insert(q, ctx.size)
    return st.broadcast_in_dim_p.bind(x, shape=tuple(out_shape), broadcast_dimensions=tuple(out_dims)), q


def _reshape_rule(ctx, args, dims, *, new_sizes):
    (x,), (d,) = args, dims
    shape = abstractify(x).shape
    if tuple(shape[:d]) != tuple(new_sizes[:d]):
        # The dimensions before the batch change: only the front is a safe place for it.
        x, d = move_dim(x, d, 0, ctx.size), 0
    sizes = list(new_sizes)
    sizes.insert(d, ctx.size)
    return st.reshape_p.bind(x, new_sizes=tuple(sizes)), d


def _transpose_rule(ctx, args, dims, *, permutation):
    (x,), (d,) = args, dims
    # Keep the batch dimension where it is: map the permutation around it.
    others = [i for i in range(operand_ndim(x)) if i != d]
    perm = [others[p] for p in permutation]
    out_d = min(d, len(perm))
    perm.insert(out_d, d)
    return st.transpose_p.bind(x, permutation=tuple(perm)), out_d


def _rev_rule(ctx, args, dims, *, dimensions):
    (x,), (d,) = args, dims
    return st.rev_p.bind(x, dimensions=shift_axes(dimensions, d)), d


def _slice_rule(ctx, args, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = args, dims
    s, l, t = list(start_indices), list(limit_indices), list(strides)
    s.insert(d, 0)
    l.insert(d, ctx.size)
    t.insert(d, 1)
    return st.slice_p.bind(x, start_indices=tuple(s), limit_indices=tuple(l), strides=tuple(t)), d


def _concatenate_rule(ctx, args, dims, *, dimension):
    d = common_dim(args, dims)
    args = [move_dim(a, ad, d, ctx.size) for a, ad in zip(args, dims)]
    return st.concatenate_p.bind(*args, dimension=dimension + (dimension >= d)), d


def _pad_rule(ctx, args, dims, *, padding_config):
    (x, v), (xd, vd) = args, dims
    if vd is None:
        config = list(padding_config)
        config.insert(xd, (0, 0, 0))
        return st.pad_p.bind(x, v, padding_config=tuple(config)), xd
    # A batched padding value: pad with zeros, then select the value where padding was added.
    x = move_dim(x, xd, 0, ctx.size)
    config = ((0, 0, 0),) + tuple(padding_config)
    zero = lax.literal(0, abstractify(x).dtype)
    padded = st.pad_p.bind(x, zero, padding_config=config)
    ones = lax.broadcast_in_dim(lax.literal(True, "bool"), abstractify(x).shape, ())
    mask = st.pad_p.bind(ones, lax.literal(False, "bool"), padding_config=config)
    value = lax.broadcast_in_dim(v, abstractify(padded).shape, (0,))
    return ew.select_p.bind(mask, padded, value), 0


def _dynamic_slice_rule(ctx, args, dims, *, slice_sizes):
    x, *idx = args
    xd, *idx_dims = dims
    if any(d is not None for d in idx_dims):
        from .gather_fallback import dynamic_slice_batched_indices
        return dynamic_slice_batched_indices(ctx, args, dims, slice_sizes)
    idx = list(idx)
    idx.insert(xd, lax.literal(0, abstractify(idx[0]).dtype if idx else "int32"))
    sizes = list(slice_sizes)
    sizes.insert(xd, ctx.size)
    return st.dynamic_slice_p.bind(x, *idx, slice_sizes=tuple(sizes)), xd


def _dynamic_update_slice_rule(ctx, args, dims):
    x, u, *idx = args
    xd, ud, *idx_dims = dims
    if any(d is not None for d in idx_dims):
        from .gather_fallback import dynamic_update_slice_batched_indices
        return dynamic_update_slice_batched_indices(ctx, args, dims)
    # Keep the operand's batch dimension (or the update's, for an unbatched operand) where it is.
    d = xd if xd is not None else ud
    x = move_dim(x, xd, d, ctx.size)
    u = move_dim(u, ud, d, ctx.size)
    idx = list(idx)
    idx.insert(d, lax.literal(0, abstractify(idx[0]).dtype if idx else "int32"))
    return st.dynamic_update_slice_p.bind(x, u, *idx), d


def _iota_rule(ctx, args, dims, **params):
    # iota has no operands, so it is never batched; listed so that every primitive has a rule.
    return st.iota_p.bind(**params), None


batch_rules[st.broadcast_in_dim_p] = _broadcast_in_dim_rule


batch_rules[st.reshape_p] = _reshape_rule


batch_rules[st.transpose_p] = _transpose_rule


batch_rules[st.rev_p] = _rev_rule


batch_rules[st.slice_p] = _slice_rule


batch_rules[st.concatenate_p] = _concatenate_rule


batch_rules[st.pad_p] = _pad_rule


batch_rules[st.dynamic_slice_p] = _dynamic_slice_rule


batch_rules[st.dynamic_update_slice_p] = _dynamic_update_slice_rule


batch_rules[st.iota_p] = _iota_rule
