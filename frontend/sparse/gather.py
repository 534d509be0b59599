"""``bcoo_gather`` (``lax.gather`` of a BCOO operand) and BCOO indexing with index arrays.

As in JAX, a gather is one ``bcoo_dynamic_slice`` per index vector, mapped with ``vmap`` (which stacks the
slices along a new batch dimension), then squeezed, reshaped and transposed into the gather's output layout.
The result's layout (``n_batch``, ``nse``) is JAX's.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..batching.api import vmap
from ..core.avals import ShapeDtypeStruct
from ..driver.tools import eval_shape
from ..lax.indexing import GatherDimensionNumbers, GatherScatterMode
from .bcoo import BCOO, bcoo_transpose
from .bcoo_structure import _check_bcoo, bcoo_dynamic_slice, bcoo_reshape, bcoo_squeeze, bcoo_update_layout


def bcoo_gather(operand: BCOO, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
                slice_sizes: Sequence[int], *, unique_indices: bool = False, indices_are_sorted: bool = False,
                mode: str | GatherScatterMode | None = None, fill_value: Any = None) -> BCOO:
    """``lax.gather`` of a BCOO ``operand`` with dense ``start_indices`` (as ``jax.experimental.sparse.bcoo_gather``):
    a BCOO array of the gather's shape. Only ``mode='promise_in_bounds'`` (the default; windows that would leave
    the array are moved back inside it, as XLA's) is supported, as in JAX."""
    _check_bcoo(operand, "bcoo_gather")
    parsed = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else GatherScatterMode.from_any(mode)
    if parsed != GatherScatterMode.PROMISE_IN_BOUNDS:
        raise NotImplementedError(f"bcoo_gather: mode={mode!r} is not supported (as in JAX): only "
                                  "'promise_in_bounds', the default; densify the operand (operand.todense()) "
                                  "for the other modes")
    if isinstance(start_indices, BCOO):
        raise NotImplementedError("bcoo_gather: start_indices must be a dense array, got a BCOO array; "
                                  "pass start_indices.todense()")
    start_indices = jnp.asarray(start_indices)
    # The gather's own checks and output shape, from the dense gather's shape rule.
    options = dict(dimension_numbers=dimension_numbers, slice_sizes=tuple(slice_sizes),
                   unique_indices=unique_indices, indices_are_sorted=indices_are_sorted, mode=mode,
                   fill_value=fill_value)
    out_aval = eval_shape(lambda x, i: lax.gather(x, i, **options),
                          ShapeDtypeStruct(operand.shape, operand.dtype), start_indices)
    dn = dimension_numbers
    if dn.operand_batching_dims:
        raise NotImplementedError("bcoo_gather: operand_batching_dims are not supported (as in JAX); vmap the "
                                  "gather over the batch instead")
    # One start index per operand dimension: a mapped column of start_indices where start_index_map names
    # the dimension, else 0; every window slice_sizes long (a dimension no index maps may be cut short too:
    # x[idx, :4] gathers windows of 4 columns).
    starts: list[Any] = [np.int32(0)] * operand.ndim
    mapped: list[int | None] = [None] * operand.ndim
    sizes = [int(s) for s in slice_sizes]
    rows = start_indices.reshape((-1, start_indices.shape[-1]))
    for column, dim in enumerate(dn.start_index_map):
        starts[dim] = rows[:, column]
        mapped[dim] = 0

    def one_window(start: list) -> BCOO:
        window = bcoo_dynamic_slice(operand, start, slice_sizes=sizes)
        return bcoo_squeeze(window, dimensions=tuple(dn.collapsed_slice_dims))

    result = vmap(one_window, in_axes=(mapped,))(starts)
    result = bcoo_reshape(result, new_sizes=(*start_indices.shape[:-1], *result.shape[1:]),
                          dimensions=tuple(range(result.ndim)))
    if result.ndim:
        # The window dimensions go to offset_dims, the index dimensions to the others, in order.
        out_rank = len(out_aval.shape)
        batch_dims = [d for d in range(out_rank) if d not in dn.offset_dims]
        permutation = np.empty(result.ndim, dtype=int)
        permutation[np.array(batch_dims + list(dn.offset_dims), dtype=int)] = np.arange(result.ndim)
        if set(permutation[:len(batch_dims)]) != set(range(len(batch_dims))):
            # An index dimension moves among the window ones: not a batch dimension any more (as JAX)
            result = bcoo_update_layout(result, n_batch=0)
        result = bcoo_transpose(result, permutation=tuple(int(p) for p in permutation))
    return result.reshape(out_aval.shape).astype(out_aval.dtype)
