"""Batching rules of ``gather`` and the scatter family.

The batch dimension of the vmap becomes a dimension the op already understands, so that nothing is
broadcast, transposed or materialised as an iota:

- only the operand batched: one more *window* dimension spanning the whole batch (a gather slice /
  a scatter update window of size B that starts at 0);
- the indices batched: one more *batching* dimension (``operand_batching_dims`` paired with
  ``start_indices_batching_dims`` / ``scatter_indices_batching_dims``), the operand being broadcast
  first if it is not batched (for a scatter, each batch element writes its own copy).

Batch dimensions stay where they are, with two exceptions: the indices' batch dimension cannot be
their last (the index vector); and a scatter's updates must hold the batch where the dimension
numbers put it, so they are moved only when it is elsewhere.
"""
from __future__ import annotations

from ..core.tracing import abstractify
from ..lax import indexing as ix
from .core import batch_rules, move_dim


def _ndim(x) -> int:
    return abstractify(x).ndim


def _insert(values, d, value):
    out = list(values)
    out.insert(d, value)
    return tuple(out)


def _with_batching_pair(op_dims, idx_dims, od, idd):
    """The batching dimension pairs plus (od, idd), sorted by operand dimension (as the op requires)."""
    pairs = sorted([*zip(op_dims, idx_dims), (od, idd)])
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def _indices_off_last(ctx, idx, idd):
    """Indices whose batch dimension is not the last one (the index vector must stay last)."""
    if idd is not None and idd == _ndim(idx) - 1:
        return move_dim(idx, idd, 0, ctx.size), 0
    return idx, idd


def _batch_position(non_window: list[int], k: int, rank: int) -> int:
    """Where a new k-th batch-like dimension goes among the ``non_window`` positions of a result or
    update of rank ``rank``: just before the current k-th one (at the end if there is none)."""
    return non_window[k] if k < len(non_window) else rank


def _gather_rule(ctx, args, dims, *, dimension_numbers, slice_sizes, indices_are_sorted, unique_indices):
    (op, idx), (od, idd) = args, dims
    dn = dimension_numbers
    idx, idd = _indices_off_last(ctx, idx, idd)
    out_rank = len(dn.offset_dims) + _ndim(idx) - 1 - (idd is not None)
    if idd is None:
        # The batch is one more slice dimension of the operand, taken whole.
        kept = [d for d in range(len(slice_sizes))
                if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
        k = sum(1 for d in kept if d < od)  # its rank among the slice dimensions
        offs = dn.offset_dims
        p = offs[k - 1] + 1 if k > 0 else 0  # any position between the neighbouring offset dims
        shift = lambda ds: tuple(d + (d >= od) for d in ds)  # noqa: E731
        new = ix.GatherDimensionNumbers(
            offset_dims=tuple(sorted([o + (o >= p) for o in offs] + [p])),
            collapsed_slice_dims=shift(dn.collapsed_slice_dims), start_index_map=shift(dn.start_index_map),
            operand_batching_dims=shift(dn.operand_batching_dims),
            start_indices_batching_dims=dn.start_indices_batching_dims)
        out = ix.gather_p.bind(op, idx, dimension_numbers=new, slice_sizes=_insert(slice_sizes, od, ctx.size),
                               indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
        return out, p
    # Batched indices: the batch is one more batch dimension of the indices, so of the result, where
    # it is the idd-th of the result's (non-offset) batch dimensions.
    q = _batch_position([i for i in range(out_rank) if i not in dn.offset_dims], idd, out_rank)
    offset_dims = tuple(o + (o >= q) for o in dn.offset_dims)
    idx_batching = tuple(i + (i >= idd) for i in dn.start_indices_batching_dims)
    if od is None:
        new = ix.GatherDimensionNumbers(offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
                                        dn.operand_batching_dims, idx_batching)
        sizes = slice_sizes
    else:
        shift = lambda ds: tuple(d + (d >= od) for d in ds)  # noqa: E731
        op_b, idx_b = _with_batching_pair(shift(dn.operand_batching_dims), idx_batching, od, idd)
        new = ix.GatherDimensionNumbers(offset_dims, shift(dn.collapsed_slice_dims), shift(dn.start_index_map),
                                        op_b, idx_b)
        sizes = _insert(slice_sizes, od, 1)
    out = ix.gather_p.bind(op, idx, dimension_numbers=new, slice_sizes=sizes, indices_are_sorted=False,
                           unique_indices=unique_indices)
    return out, q


batch_rules[ix.gather_p] = _gather_rule


def _scatter_rule(prim):
    def rule(ctx, args, dims, *, dimension_numbers, indices_are_sorted, unique_indices, **extra):
        (op, idx, upd), (od, idd, ud) = args, dims
        dn = dimension_numbers
        idx, idd = _indices_off_last(ctx, idx, idd)
        if od is None:  # the result differs per batch element: each writes its own copy of the operand
            op, od = move_dim(op, None, 0, ctx.size), 0
        op_rank = _ndim(op) - 1
        upd_rank = _ndim(upd) - (ud is not None)
        uw = dn.update_window_dims
        shift = lambda ds: tuple(d + (d >= od) for d in ds)  # noqa: E731
        if idd is None:
            # The batch is one more update window dimension, spanning the whole batch from 0; it is the
            # k-th window dimension, so the updates hold it between window dimensions k - 1 and k.
            window = [d for d in range(op_rank)
                      if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
            k = sum(1 for d in window if d < od)
            if ud is None or sum(1 for w in uw if w < ud) != k:
                u = uw[k - 1] + 1 if k > 0 else 0
                upd, ud = move_dim(upd, ud, u, ctx.size), u
            new = ix.ScatterDimensionNumbers(
                update_window_dims=tuple(sorted([w + (w >= ud) for w in uw] + [ud])),
                inserted_window_dims=shift(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=shift(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=shift(dn.operand_batching_dims),
                scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
            sorted_ = indices_are_sorted
        else:
            # The batch is one more batching dimension: the idd-th scatter dimension of the updates.
            if ud is None or ud - sum(1 for w in uw if w < ud) != idd:
                u = _batch_position([i for i in range(upd_rank) if i not in uw], idd, upd_rank)
                upd, ud = move_dim(upd, ud, u, ctx.size), u
            op_b, idx_b = _with_batching_pair(shift(dn.operand_batching_dims),
                                              tuple(i + (i >= idd) for i in dn.scatter_indices_batching_dims),
                                              od, idd)
            new = ix.ScatterDimensionNumbers(
                update_window_dims=tuple(w + (w >= ud) for w in uw),
                inserted_window_dims=shift(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=shift(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=op_b, scatter_indices_batching_dims=idx_b)
            sorted_ = False
        out = prim.bind(op, idx, upd, dimension_numbers=new, indices_are_sorted=sorted_,
                        unique_indices=unique_indices, **extra)
        return out, od
    batch_rules[prim] = rule


for _p in (ix.scatter_p, ix.scatter_add_p, ix.scatter_mul_p, ix.scatter_min_p, ix.scatter_max_p,
           ix.scatter_apply_p):
    _scatter_rule(_p)
