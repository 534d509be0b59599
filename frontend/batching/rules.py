"""Batching rules of the foundation primitives."""
from __future__ import annotations

from .. import lax
from ..core.tracing import abstractify
from ..lax import elementwise as ew
from ..lax import reduction as red
from ..lax import structural as st
from .core import BatchContext, batch_rules, move_dim


def _ndim(x) -> int:
    return abstractify(x).ndim


def _common_dim(args, dims) -> int:
    """Where n-ary elementwise operands meet: the first batched operand's dimension."""
    return next(d for d in dims if d is not None)


def _elementwise(prim):
    def rule(ctx: BatchContext, args, dims, **params):
        d = _common_dim(args, dims)
        ranks = {_ndim(a) - (bd is not None) for a, bd in zip(args, dims)}
        if len(ranks) == 1:
            args = [move_dim(a, bd, d, ctx.size) for a, bd in zip(args, dims)]
            return prim.bind(*args, **params), d
        # Mixed ranks (a scalar predicate of select): put everything at the front.
        args = [move_dim(a, bd, 0, ctx.size) for a, bd in zip(args, dims)]
        return prim.bind(*args, **params), 0
    batch_rules[prim] = rule


for _p in [*ew.unary_prims.values(), *ew.binary_prims.values(), ew.round_p, ew.convert_p, ew.stop_gradient_p]:
    _elementwise(_p)


def _select_rule(ctx, args, dims):
    pred, a, b = args
    pd, ad, bd = dims
    case_rank = _ndim(a) - (ad is not None)
    if _ndim(pred) - (pd is not None) == case_rank:
        d = _common_dim(args, dims)
        return ew.select_p.bind(*[move_dim(x, xd, d, ctx.size) for x, xd in zip(args, dims)]), d
    # A scalar predicate with array cases: the cases meet at one batch dimension; a batched
    # predicate is broadcast to their shape along it.
    d = ad if ad is not None else bd if bd is not None else 0
    a, b = move_dim(a, ad, d, ctx.size), move_dim(b, bd, d, ctx.size)
    if pd is not None:
        pred = lax.broadcast_in_dim(pred, abstractify(a).shape, (d,))
    return ew.select_p.bind(pred, a, b), d


batch_rules[ew.select_p] = _select_rule


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
    others = [i for i in range(_ndim(x)) if i != d]
    perm = [others[p] for p in permutation]
    out_d = min(d, len(perm))
    perm.insert(out_d, d)
    return st.transpose_p.bind(x, permutation=tuple(perm)), out_d


def _shift(axes, d):
    """Operand axes (without the batch dim) as axes of the batched operand."""
    return tuple(a + (a >= d) for a in axes)


def _rev_rule(ctx, args, dims, *, dimensions):
    (x,), (d,) = args, dims
    return st.rev_p.bind(x, dimensions=_shift(dimensions, d)), d


def _slice_rule(ctx, args, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = args, dims
    s, l, t = list(start_indices), list(limit_indices), list(strides)
    s.insert(d, 0)
    l.insert(d, ctx.size)
    t.insert(d, 1)
    return st.slice_p.bind(x, start_indices=tuple(s), limit_indices=tuple(l), strides=tuple(t)), d


def _reduce_rule(prim):
    def rule(ctx, args, dims, *, axes):
        (x,), (d,) = args, dims
        out_d = d - sum(1 for a in axes if a < d)
        return prim.bind(x, axes=_shift(axes, d)), out_d
    batch_rules[prim] = rule


for _p in red.reduce_prims.values():
    _reduce_rule(_p)


def _arg_rule(prim):
    def rule(ctx, args, dims, *, axis, index_dtype):
        (x,), (d,) = args, dims
        out_d = d - (axis < d)
        return prim.bind(x, axis=axis + (axis >= d), index_dtype=index_dtype), out_d
    batch_rules[prim] = rule


_arg_rule(red.argmax_p)
_arg_rule(red.argmin_p)


def _concatenate_rule(ctx, args, dims, *, dimension):
    d = _common_dim(args, dims)
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


def _dot_general_rule(ctx, args, dims, *, dimension_numbers, preferred_element_type):
    (x, y), (xd, yd) = args, dims
    (xc, yc), (xb, yb) = dimension_numbers
    kw = dict(preferred_element_type=preferred_element_type)
    if xd is not None and yd is not None:
        # Both batched: the vmapped dimension becomes one more dot_general batch dimension.
        x_shift = lambda ax: tuple(a + (a >= xd) for a in ax)  # noqa: E731
        y_shift = lambda ax: tuple(a + (a >= yd) for a in ax)  # noqa: E731
        dn = ((x_shift(xc), y_shift(yc)), ((xd,) + x_shift(xb), (yd,) + y_shift(yb)))
        return red.dot_general_p.bind(x, y, dimension_numbers=dn, **kw), 0
    if xd is not None:
        # The vmapped dimension is one more free dimension of the lhs.
        xs = lambda ax: tuple(a + (a >= xd) for a in ax)  # noqa: E731
        dn = ((xs(xc), yc), (xs(xb), yb))
        x_free = [i for i in range(_ndim(x)) if i not in dn[0][0] and i not in dn[1][0]]
        return red.dot_general_p.bind(x, y, dimension_numbers=dn, **kw), len(xb) + x_free.index(xd)
    ys = lambda ax: tuple(a + (a >= yd) for a in ax)  # noqa: E731
    dn = ((xc, ys(yc)), (xb, ys(yb)))
    x_free = [i for i in range(_ndim(x)) if i not in xc and i not in xb]
    y_free = [i for i in range(_ndim(y)) if i not in dn[0][1] and i not in dn[1][1]]
    return red.dot_general_p.bind(x, y, dimension_numbers=dn, **kw), len(xb) + len(x_free) + y_free.index(yd)


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
batch_rules[red.dot_general_p] = _dot_general_rule
batch_rules[st.dynamic_slice_p] = _dynamic_slice_rule
batch_rules[st.dynamic_update_slice_p] = _dynamic_update_slice_rule
batch_rules[st.iota_p] = _iota_rule

# Rules of the other primitive families.
from . import rules_conv  # noqa: E402,F401,I001
from . import rules_indexing  # noqa: E402,F401
from . import rules_linalg  # noqa: E402,F401
from . import rules_sorting  # noqa: E402,F401
from . import rules_special  # noqa: E402,F401
from . import rules_windowed  # noqa: E402,F401
