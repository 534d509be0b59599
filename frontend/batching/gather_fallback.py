"""``dynamic_slice`` / ``dynamic_update_slice`` whose start indices differ per batch element.

One dynamic slice per batch element is a gather (one scatter for the update) with a ``(B, n)``
matrix of start indices. When the operand is batched too, its batch dimension is paired with the
rows of that matrix as a gather/scatter *batching* dimension (operand_batching_dims), so the operand
keeps its batch dimension where it is and nothing is broadcast or transposed.

Out-of-bounds starts behave as in the unbatched primitives: clamped so that the slice (the update)
lies in bounds (``stablehlo.gather`` clamps by itself; the scatter is given ``mode='clip'``, as it
would otherwise drop the window).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import lax
from ..core.tracing import abstractify
from .core import BatchContext, move_dim


def _index_dtype(indices: Sequence[Any]) -> np.dtype:
    """One integer dtype for all start indices (64-bit only if one of them is)."""
    if any(abstractify(i).dtype.itemsize == 8 for i in indices):
        return np.dtype(np.int64)
    return np.dtype(np.int32)


def _start_matrix(ctx: BatchContext, indices: Sequence[Any], dims: Sequence[int | None]) -> Any:
    """The ``(B, n)`` matrix whose row b holds the start indices of batch element b."""
    dtype = _index_dtype(indices)
    cols = []
    for i, d in zip(indices, dims):
        if abstractify(i).dtype != dtype:
            i = lax.convert_element_type(i, dtype)
        i = move_dim(i, d, 0, ctx.size)  # (B,), broadcast when the index is the same for all
        cols.append(lax.broadcast_in_dim(i, (ctx.size, 1), (0,)))
    return lax.concatenate(cols, 1)


def dynamic_slice_batched_indices(ctx: BatchContext, args: list, dims: list, slice_sizes: tuple[int, ...]):
    """Batching rule of ``dynamic_slice`` when some start index is batched."""
    x, *idx = args
    xd, *idx_dims = dims
    n = len(idx)
    starts = _start_matrix(ctx, idx, idx_dims)
    if xd is None:
        dn = lax.GatherDimensionNumbers(offset_dims=tuple(range(1, n + 1)), collapsed_slice_dims=(),
                                        start_index_map=tuple(range(n)))
        return lax.gather(x, starts, dn, slice_sizes), 0
    # The operand's batch dimension is a batching dimension paired with the rows of `starts`; the
    # result has its batch dimension at the same place as the operand.
    sizes = list(slice_sizes)
    sizes.insert(xd, 1)
    dn = lax.GatherDimensionNumbers(offset_dims=tuple(i for i in range(n + 1) if i != xd), collapsed_slice_dims=(),
                                    start_index_map=tuple(i + (i >= xd) for i in range(n)),
                                    operand_batching_dims=(xd,), start_indices_batching_dims=(0,))
    return lax.gather(x, starts, dn, sizes), xd


def dynamic_update_slice_batched_indices(ctx: BatchContext, args: list, dims: list):
    """Batching rule of ``dynamic_update_slice`` when some start index is batched."""
    x, u, *idx = args
    xd, ud, *idx_dims = dims
    n = len(idx)
    if xd is None:  # every batch element writes into its own copy of the operand
        xd = ud if ud is not None else 0
        x = move_dim(x, None, xd, ctx.size)
    if ud is None:
        ud = xd
        u = move_dim(u, None, ud, ctx.size)
    starts = _start_matrix(ctx, idx, idx_dims)
    # The update's batch dimension is its only scatter dimension, so it can stay where it is.
    dn = lax.ScatterDimensionNumbers(update_window_dims=tuple(i for i in range(n + 1) if i != ud),
                                     inserted_window_dims=(),
                                     scatter_dims_to_operand_dims=tuple(i + (i >= xd) for i in range(n)),
                                     operand_batching_dims=(xd,), scatter_indices_batching_dims=(0,))
    return lax.scatter(x, starts, u, dn, mode="clip", unique_indices=True), xd
