"""Structural operations on BCOO arrays, as in ``jax.experimental.sparse``: static and dynamic slices, reshape,
squeeze, reverse, concatenate, ``broadcast_in_dim``, changing the layout (``n_batch``/``n_dense``), extracting a
dense array's values at a BCOO's indices, and the basic indexing of ``BCOO.__getitem__``.

Batch and dense dimensions are axes of ``data`` (batch ones of ``indices`` too): they move with ordinary array ops.
Sparse dimensions are columns of ``indices``: they move by index arithmetic, and an entry that falls outside the
result becomes padding (an out-of-range index, zero ``data``), which ``todense`` and products drop. Every result
has JAX's layout (``n_batch``, ``n_dense``, ``nse``); kiln's BCOO has no broadcast (size-1) batch axes in
``data``/``indices``, so where JAX keeps such an axis, kiln stores it at full size.
"""
from __future__ import annotations

import math
import operator
import warnings
from typing import Any, Sequence

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core import dtypes, tree_util
from ..core.errors import ConcretizationTypeError
from ..core.tracing import Tracer
from ..driver.array import Array
from .base import SparseEfficiencyError, SparseEfficiencyWarning
from .bcoo import BCOO, _axis, _nest, bcoo_sum_duplicates, frozen, one_program

__all__ = ["bcoo_broadcast_in_dim", "bcoo_concatenate", "bcoo_dynamic_slice", "bcoo_extract", "bcoo_getitem",
           "bcoo_reshape", "bcoo_rev", "bcoo_slice", "bcoo_squeeze", "bcoo_update_layout"]


# --- helpers -----------------------------------------------------------------------------------------

def _check_bcoo(mat: Any, where: str) -> None:
    if not isinstance(mat, BCOO):
        raise TypeError(f"{where}: expected a BCOO array, got {type(mat).__name__}; convert a dense array with "
                        "BCOO.fromdense(x)")


def _static_ints(values: Any, what: str, where: str, hint: str = "") -> tuple[int, ...]:
    """``values`` as a tuple of static Python ints; a traced entry gets a ConcretizationTypeError."""
    if isinstance(values, (int, np.integer)):
        values = (values,)
    try:
        seq = tuple(values)
    except TypeError:
        raise TypeError(f"{where}: {what} must be a sequence of ints, got {type(values).__name__}") from None
    out = []
    for v in seq:
        if isinstance(v, Tracer):
            raise ConcretizationTypeError(f"{where}: {what} must be static Python ints, but an entry is a traced "
                                          f"value (under jit, vmap or grad).{hint}")
        try:
            out.append(operator.index(v))
        except TypeError:
            raise TypeError(f"{where}: {what} must be a sequence of ints, got an entry {v!r} of type "
                            f"{type(v).__name__}") from None
    return tuple(out)


def _sparse_bound(mat: BCOO) -> np.ndarray:
    """The sizes of the sparse dimensions, in the index dtype: the padding index of ``mat``."""
    return np.asarray(mat.shape[mat.n_batch:mat.n_batch + mat.n_sparse], dtype=np.dtype(mat.indices.dtype))


def _zero_where_dropped(data: Any, keep: Any) -> Any:
    """``data`` with the entries where ``keep`` (batch + (nse,)) is False set to 0 (they became padding)."""
    keep = keep.reshape(tuple(keep.shape) + (1,) * (data.ndim - keep.ndim))
    return jnp.where(keep, data, jnp.zeros((), data.dtype))


def _at_most_one_per_position(data: Any, indices: Any, shape: tuple) -> BCOO:
    """JAX's rule after a slice: when more entries are stored than the result's sparse dimensions have positions,
    duplicates are summed into ``prod(sparse shape)`` entries (the padding goes away first)."""
    mat = BCOO((data, indices), shape=shape)
    nb, positions = mat.n_batch, math.prod(mat.shape[mat.n_batch:mat.n_batch + mat.n_sparse])
    if mat.nse <= positions:
        return mat
    if not positions:  # an empty slice: nothing to sum
        return BCOO((data[(slice(None),) * nb + (slice(0, 0),)], indices[..., :0, :]), shape=shape)
    mat = bcoo_sum_duplicates(mat, nse=positions)
    return BCOO((mat.data, mat.indices), shape=shape)


def _with_columns(indices: Any, cols: Sequence[Any], n_lead: int, nse: int) -> Any:
    """Index columns stacked into ``batch + (nse, len(cols))`` (an empty stack keeps the batch + (nse,) axes)."""
    if cols:
        return jnp.stack([c.astype(indices.dtype) for c in cols], axis=-1)
    return jnp.zeros(tuple(indices.shape[:n_lead]) + (nse, 0), indices.dtype)


# --- slices --------------------------------------------------------------------------------------------

def bcoo_slice(mat: BCOO, *, start_indices: Sequence[int], limit_indices: Sequence[int],
               strides: Sequence[int] | None = None) -> BCOO:
    """The static slice ``mat[start:limit:stride]`` in every dimension (as ``jax.lax.slice``), a BCOO array with
    ``mat``'s ``n_batch``/``n_dense``.

    Entries outside the slice become padding; when more entries remain than the sliced sparse dimensions have
    positions, duplicates are summed to that many (``nse = prod(sparse shape)``), as in JAX.
    """
    return _bcoo_slice(mat, start_indices=frozen(start_indices), limit_indices=frozen(limit_indices),
                       strides=frozen(strides))


@one_program("start_indices", "limit_indices", "strides")
def _bcoo_slice(mat: BCOO, *, start_indices: Sequence[int], limit_indices: Sequence[int],
                strides: Sequence[int] | None) -> BCOO:
    _check_bcoo(mat, "bcoo_slice")
    hint = " For traced start indices use bcoo_dynamic_slice."
    start = _static_ints(start_indices, "start_indices", "bcoo_slice", hint)
    limit = _static_ints(limit_indices, "limit_indices", "bcoo_slice", hint)
    step = (1,) * mat.ndim if strides is None else _static_ints(strides, "strides", "bcoo_slice")
    if not len(start) == len(limit) == len(step) == mat.ndim:
        raise ValueError(f"bcoo_slice: start_indices, limit_indices and strides need one entry per dimension of "
                         f"the array of shape {mat.shape} (mat.ndim={mat.ndim}); got {len(start)}, {len(limit)} and "
                         f"{len(step)} entries")
    if any(s <= 0 for s in step):
        raise ValueError(f"bcoo_slice: strides must be positive integers; got strides={list(step)}")
    if not all(0 <= a <= b <= n for a, b, n in zip(start, limit, mat.shape)):
        raise ValueError(f"bcoo_slice: invalid indices: every dimension needs 0 <= start <= limit <= size; got "
                         f"start_indices={list(start)}, limit_indices={list(limit)} and shape={mat.shape}")
    nb, ns = mat.n_batch, mat.n_sparse
    shape = tuple(len(range(a, b, s)) for a, b, s in zip(start, limit, step))
    whole = [(a, b, s) == (0, n, 1) for a, b, s, n in zip(start, limit, step, mat.shape)]
    cuts = tuple(slice(a, b, s) for a, b, s in zip(start, limit, step))
    data, indices = mat.data, mat.indices
    if not all(whole[:nb] + whole[nb + ns:]):
        data = data[cuts[:nb] + (slice(None),) + cuts[nb + ns:]]
    if not all(whole[:nb]):
        indices = indices[cuts[:nb]]
    if not ns or all(whole[nb:nb + ns]):
        return BCOO((data, indices), shape=shape)
    dtype = np.dtype(indices.dtype)
    lo, hi, st = (np.asarray(v[nb:nb + ns], dtype) for v in (start, limit, step))
    keep = jnp.all((indices >= lo) & (indices < hi) & ((indices - lo) % st == 0), axis=-1)
    indices = jnp.where(keep[..., None], (indices - lo) // st, np.asarray(shape[nb:nb + ns], dtype))
    return _at_most_one_per_position(_zero_where_dropped(data, keep), indices, shape)


def bcoo_dynamic_slice(mat: BCOO, start_indices: Sequence[Any], slice_sizes: Sequence[int]) -> BCOO:
    """The slice of static ``slice_sizes`` starting at ``start_indices`` (as ``jax.lax.dynamic_slice``); the
    start indices may be traced. Negative starts count from the end, then each start is clamped so that the slice
    stays inside the array (as XLA's). The result's layout follows ``bcoo_slice``."""
    _check_bcoo(mat, "bcoo_dynamic_slice")
    sizes = _static_ints(slice_sizes, "slice_sizes", "bcoo_dynamic_slice")
    try:
        starts = [jnp.asarray(i) for i in start_indices]
    except TypeError:
        raise TypeError(f"bcoo_dynamic_slice: start_indices must be a sequence of integer scalars, got "
                        f"{type(start_indices).__name__}") from None
    if len(starts) != mat.ndim or len(sizes) != mat.ndim:
        raise TypeError(f"bcoo_dynamic_slice: start_indices and slice_sizes need one entry per dimension of the "
                        f"array of shape {mat.shape}; got {len(starts)} and {len(sizes)} entries")
    for k, s in enumerate(starts):
        if s.ndim != 0 or not dtypes.is_int(s.dtype):
            raise TypeError(f"bcoo_dynamic_slice: start index {k} must be an integer scalar, got an array of shape "
                            f"{tuple(s.shape)} and dtype {s.dtype}")
    if not all(0 <= z <= n for z, n in zip(sizes, mat.shape)):
        raise TypeError(f"bcoo_dynamic_slice: slice_sizes must be non-negative and at most the array's shape, got "
                        f"slice_sizes {sizes} for operand shape {mat.shape}")
    nb, ns = mat.n_batch, mat.n_sparse
    starts = [s.astype(np.int32) for s in starts]
    data, indices = mat.data, mat.indices
    data_dims = list(range(nb)) + list(range(nb + ns, mat.ndim))
    if any(sizes[d] != mat.shape[d] for d in data_dims):
        data = lax.dynamic_slice(data, starts[:nb] + [0] + starts[nb + ns:],
                                 sizes[:nb] + (mat.nse,) + sizes[nb + ns:])
    if sizes[:nb] != mat.shape[:nb]:
        indices = lax.dynamic_slice(indices, starts[:nb] + [0, 0], sizes[:nb] + (mat.nse, ns))
    shape = tuple(sizes)
    if not ns or sizes[nb:nb + ns] == mat.shape[nb:nb + ns]:
        return BCOO((data, indices), shape=shape)
    bound = _sparse_bound(mat)
    width = np.asarray(sizes[nb:nb + ns], bound.dtype)
    lo = jnp.stack(starts[nb:nb + ns]).astype(bound.dtype)
    lo = jnp.clip(jnp.where(lo < 0, lo + bound, lo), 0, bound - width)
    keep = jnp.all((indices >= lo) & (indices < lo + width), axis=-1)
    indices = jnp.where(keep[..., None], indices - lo, width)
    return _at_most_one_per_position(_zero_where_dropped(data, keep), indices, shape)


# --- reshape, squeeze, rev -----------------------------------------------------------------------------

def _split_permutation(mat: BCOO, perm: tuple[int, ...], where: str) -> tuple[list, list, list]:
    """(batch, sparse, dense) parts of the axis permutation ``perm``, each within its own group (as JAX)."""
    if tuple(sorted(perm)) != tuple(range(mat.ndim)):
        raise TypeError(f"{where}: dimensions={list(perm)} is not a permutation of the {mat.ndim} axes of an array "
                        f"of shape {mat.shape}")
    nb, ns = mat.n_batch, mat.n_sparse
    batch, sparse, dense = list(perm[:nb]), [p - nb for p in perm[nb:nb + ns]], [p - nb - ns for p in perm[nb + ns:]]
    if sorted(batch) != list(range(nb)) or sorted(dense) != list(range(mat.n_dense)):
        raise NotImplementedError(f"{where}: dimensions={list(perm)} moves axes between the batch (n_batch={nb}), "
                                  f"sparse (n_sparse={ns}) and dense (n_dense={mat.n_dense}) dimensions, which BCOO "
                                  "cannot do (as in JAX); permute within each group, or change the layout first "
                                  "with bcoo_update_layout")
    return batch, sparse, dense


def _ravel(cols: Sequence[Any], sizes: Sequence[int]) -> Any:
    """The row-major flat position of the index columns ``cols`` in ``sizes`` (each clipped into range)."""
    flat = jnp.zeros_like(cols[0])
    for c, n in zip(cols, sizes):
        flat = flat * n + jnp.clip(c, 0, n - 1)
    return flat


def _unravel(flat: Any, sizes: Sequence[int]) -> list:
    cols = []
    for n in reversed(sizes):
        cols.append(flat % n)
        flat = flat // n
    return cols[::-1]


def bcoo_reshape(mat: BCOO, *, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None,
                 sharding: Any = None) -> BCOO:
    """``mat`` reshaped to ``new_sizes`` (as ``jax.lax.reshape``; ``dimensions``: a permutation of the axes applied
    first, within the batch, sparse and dense groups).

    The batch, sparse and dense dimensions reshape within their groups: ``new_sizes`` must have a prefix whose
    product is the batch size and one whose product is the batch times the sparse size (as in JAX; leading size-1
    dimensions join the batch group). ``sharding`` is accepted for JAX's signature and ignored (as in JAX).
    """
    return _bcoo_reshape(mat, new_sizes=frozen(new_sizes), dimensions=frozen(dimensions))


@one_program("new_sizes", "dimensions")
def _bcoo_reshape(mat: BCOO, *, new_sizes: Sequence[int], dimensions: Sequence[int] | None) -> BCOO:
    _check_bcoo(mat, "bcoo_reshape")
    sizes = _static_ints(new_sizes, "new_sizes", "bcoo_reshape")
    if any(n < 0 for n in sizes):
        raise ValueError(f"bcoo_reshape: new_sizes must be non-negative, got {list(sizes)} (for an inferred size "
                         "-1 use BCOO.reshape)")
    if math.prod(sizes) != mat.size:
        raise TypeError(f"bcoo_reshape: total size must be unchanged, got new_sizes={list(sizes)} (of size "
                        f"{math.prod(sizes)}) for shape={mat.shape} (of size {mat.size})")
    perm = tuple(range(mat.ndim)) if not dimensions else _static_ints(dimensions, "dimensions", "bcoo_reshape")
    batch_perm, sparse_perm, dense_perm = _split_permutation(mat, perm, "bcoo_reshape")
    nb, ns, nse = mat.n_batch, mat.n_sparse, mat.nse
    batch_size = math.prod(mat.shape[:nb])
    sparse_size = math.prod(mat.shape[nb:nb + ns])
    cumulative = np.cumprod(np.asarray(sizes, dtype=np.int64))
    if batch_size != 1 and batch_size not in cumulative:
        raise ValueError(f"bcoo_reshape: new shape cannot mix batch and sparse dimensions; got shape={mat.shape} "
                         f"new_shape={list(sizes)} with n_batch={nb}: the product of the leading new sizes must "
                         f"reach the batch size {batch_size} exactly (or change the layout with bcoo_update_layout)")
    if sparse_size != 1 and batch_size * sparse_size not in cumulative:
        raise ValueError(f"bcoo_reshape: new shape cannot mix sparse and dense dimensions; got shape={mat.shape} "
                         f"new_shape={list(sizes)} with n_dense={mat.n_dense}: the product of the leading new sizes "
                         f"must reach the batch times sparse size {batch_size * sparse_size} exactly")
    # As JAX: the first cumulative product past the batch (and batch * sparse) size ends the group, so that
    # trailing size-1 dimensions join the earlier group.
    i1 = int(cumulative.searchsorted(batch_size, side="right"))
    i2 = int(cumulative.searchsorted(batch_size * sparse_size, side="right"))
    new_batch, new_sparse, new_dense = sizes[:i1], sizes[i1:i2], sizes[i2:]
    data_perm = batch_perm + [nb] + [d + nb + 1 for d in dense_perm]
    data = mat.data if data_perm == list(range(mat.data.ndim)) else jnp.transpose(mat.data, data_perm)
    data = data.reshape(new_batch + (nse,) + new_dense)
    indices = mat.indices
    if batch_perm != list(range(nb)):
        indices = jnp.transpose(indices, batch_perm + [nb, nb + 1])
    indices = indices.reshape(new_batch + (nse, ns))
    if ns and (new_sparse != mat.shape[nb:nb + ns] or sparse_perm != list(range(ns))):
        bound = _sparse_bound(mat)
        padding = jnp.any(indices >= bound, axis=-1)
        if new_sparse:
            flat = _ravel([indices[..., p] for p in sparse_perm], [int(bound[p]) for p in sparse_perm])
            cols = _unravel(flat, new_sparse)
            indices = jnp.where(padding[..., None], np.asarray(new_sparse, bound.dtype),
                                jnp.stack([c.astype(bound.dtype) for c in cols], axis=-1))
        else:
            # Every sparse dimension has size 1 and goes away, and the index with it: the padding entries would
            # become stored ones, so their data is zeroed (JAX keeps it).
            data = _zero_where_dropped(data, ~padding)
            indices = jnp.zeros(new_batch + (nse, 0), bound.dtype)
    return BCOO((data, indices), shape=sizes)


def bcoo_squeeze(arr: BCOO, *, dimensions: Sequence[int]) -> BCOO:
    """``arr`` without its size-1 ``dimensions`` (as ``jax.lax.squeeze``)."""
    return _bcoo_squeeze(arr, dimensions=frozen(dimensions))


@one_program("dimensions", pytrees=("arr",))
def _bcoo_squeeze(arr: BCOO, *, dimensions: Sequence[int]) -> BCOO:
    _check_bcoo(arr, "bcoo_squeeze")
    dims = [_axis(d, arr.ndim, "bcoo_squeeze") for d in _static_ints(dimensions, "dimensions", "bcoo_squeeze")]
    if len(set(dims)) != len(dims):
        raise ValueError(f"bcoo_squeeze: dimensions must be unique, got {list(dimensions)}")
    if any(arr.shape[d] != 1 for d in dims):
        raise ValueError(f"bcoo_squeeze: cannot select an axis to squeeze out which has size not equal to one, got "
                         f"shape={arr.shape} and dimensions={tuple(dims)}")
    nb, ns = arr.n_batch, arr.n_sparse
    batch_dims = tuple(d for d in dims if d < nb)
    dense_axes = tuple(d - ns + 1 for d in dims if d >= nb + ns)
    gone = [d - nb for d in dims if nb <= d < nb + ns]
    kept = [j for j in range(ns) if j not in gone]
    data, indices, sorted_, unique = arr.data, arr.indices, arr.indices_sorted, arr.unique_indices
    if gone:
        # An entry whose index in a dropped dimension is not 0 is padding: it stays padding (index = shape in the
        # kept dimensions, data 0), where JAX's would become a stored entry.
        bound = _sparse_bound(arr)
        padding = jnp.any(jnp.stack([indices[..., j] != 0 for j in gone], axis=-1), axis=-1)
        cols = [jnp.where(padding, bound[j], indices[..., j]) for j in kept]
        indices = _with_columns(indices, cols, nb, arr.nse)
        data = _zero_where_dropped(data, ~padding)
        sorted_, unique = False, unique and bool(kept)
    if batch_dims + dense_axes:
        data = jnp.squeeze(data, batch_dims + dense_axes)
    if batch_dims:
        indices = jnp.squeeze(indices, batch_dims)
    shape = tuple(n for d, n in enumerate(arr.shape) if d not in dims)
    return BCOO((data, indices), shape=shape, indices_sorted=sorted_, unique_indices=unique)


def bcoo_rev(operand: BCOO, dimensions: Sequence[int]) -> BCOO:
    """``operand`` reversed along ``dimensions`` (as ``jax.lax.rev``)."""
    return _bcoo_rev(operand, dimensions=frozen(dimensions))


@one_program("dimensions", pytrees=("operand",))
def _bcoo_rev(operand: BCOO, *, dimensions: Sequence[int]) -> BCOO:
    _check_bcoo(operand, "bcoo_rev")
    dims = _static_ints(dimensions, "dimensions", "bcoo_rev")
    if len(set(dims)) != len(dims):
        raise TypeError(f"bcoo_rev: dimensions must be unique, got {list(dims)}")
    if any(not 0 <= d < operand.ndim for d in dims):
        raise TypeError(f"bcoo_rev: dimensions {list(dims)} must all be in [0, {operand.ndim}) for an array of "
                        f"shape {operand.shape}")
    nb, ns = operand.n_batch, operand.n_sparse
    data, indices = operand.data, operand.indices
    batch = [d for d in dims if d < nb]
    data_axes = batch + [d - ns + 1 for d in dims if d >= nb + ns]
    if data_axes:
        data = jnp.flip(data, data_axes)
    if batch:
        indices = jnp.flip(indices, batch)
    flipped = np.asarray([nb + j in dims for j in range(ns)])
    if flipped.any():
        bound = _sparse_bound(operand)
        mirrored = bound - 1 - indices
        # Padding (index >= size) mirrors to a negative index: back to index = size, as JAX.
        mirrored = jnp.where(mirrored < 0, bound, mirrored)
        indices = jnp.where(flipped, mirrored, indices)
    return BCOO((data, indices), shape=operand.shape)


# --- concatenate, broadcast_in_dim ---------------------------------------------------------------------

def _with_nse(mat: BCOO, nse: int) -> BCOO:
    """``mat`` padded to ``nse`` entries (padding: index = shape, data 0)."""
    if mat.nse == nse:
        return mat
    nb = mat.n_batch
    pad_data = jnp.zeros(tuple(mat.data.shape[:nb]) + (nse - mat.nse,) + tuple(mat.data.shape[nb + 1:]), mat.dtype)
    bound = _sparse_bound(mat)
    pad_indices = jnp.asarray(np.broadcast_to(bound, tuple(mat.indices.shape[:nb]) + (nse - mat.nse, mat.n_sparse)))
    return BCOO((jnp.concatenate([mat.data, pad_data], axis=nb),
                 jnp.concatenate([mat.indices, pad_indices], axis=nb)), shape=mat.shape,
                indices_sorted=mat.indices_sorted, unique_indices=mat.unique_indices)


def _concat_shape(operands: Sequence[BCOO], dimension: int) -> tuple:
    """The shape of the concatenation, after lax.concatenate's checks."""
    first = operands[0]
    if not 0 <= dimension < first.ndim:
        raise TypeError(f"bcoo_concatenate: dimension {dimension} is out of bounds for arrays of rank {first.ndim} "
                        f"(shapes {[op.shape for op in operands]}); it must be in [0, {first.ndim})")
    for op in operands:
        if op.ndim != first.ndim or any(a != b for k, (a, b) in enumerate(zip(op.shape, first.shape))
                                        if k != dimension):
            raise TypeError(f"bcoo_concatenate: cannot concatenate arrays with shapes that differ in dimensions "
                            f"other than the one being concatenated: dimension={dimension} for shapes "
                            f"{[o.shape for o in operands]}")
        if op.dtype != first.dtype:
            raise TypeError(f"bcoo_concatenate: the operands must have the same dtype, got "
                            f"{[np.dtype(o.dtype).name for o in operands]}; cast them with .astype() first")
    return tuple(sum(op.shape[dimension] for op in operands) if k == dimension else n
                 for k, n in enumerate(first.shape))


def bcoo_concatenate(operands: Sequence[BCOO], *, dimension: int) -> BCOO:
    """The BCOO arrays ``operands`` joined along ``dimension`` (as ``jax.lax.concatenate``), a batch or sparse
    dimension; the operands must share ``n_batch`` and ``n_dense`` (an operand whose leading dimension has size 1
    gets its ``n_batch`` changed between 0 and 1 to match, as in JAX).

    Along a batch dimension the operands are padded to a common ``nse``; along a sparse one the result stores
    every operand's entries (``nse`` is the sum)."""
    dimension = operator.index(dimension)
    operands = list(operands)
    if not operands or not all(isinstance(op, BCOO) for op in operands):
        raise ValueError(f"bcoo_concatenate: expected operands to be a non-empty sequence of BCOO arrays, got "
                         f"{[type(op).__name__ for op in operands]}")
    shape = _concat_shape(operands, dimension)
    if len({op.n_dense for op in operands}) > 1:
        raise ValueError(f"bcoo_concatenate requires inputs to have matching dense dimensions, got n_dense "
                         f"{[op.n_dense for op in operands]}; change the layout with bcoo_update_layout")
    n_batches = {op.n_batch for op in operands}
    if n_batches == {0, 1}:  # as JAX: x[None] next to batched arrays, or the reverse
        if all(op.shape[0] == 1 for op in operands if op.n_batch == 0):
            operands = [bcoo_update_layout(op, n_batch=1) if op.n_batch == 0 else op for op in operands]
        elif all(op.shape[0] == 1 for op in operands if op.n_batch == 1):
            operands = [bcoo_update_layout(op, n_batch=0) if op.n_batch == 1 else op for op in operands]
        n_batches = {op.n_batch for op in operands}
    if len(n_batches) != 1:
        raise ValueError(f"bcoo_concatenate requires inputs to have matching batch dimensions, got n_batch "
                         f"{[op.n_batch for op in operands]}; change the layout with bcoo_update_layout")
    nb, ns = operands[0].n_batch, operands[0].n_sparse
    index_dtype = operands[0].indices.dtype
    if dimension < nb:
        nse = max(op.nse for op in operands)
        operands = [_with_nse(op, nse) for op in operands]
        data = jnp.concatenate([op.data for op in operands], axis=dimension)
        indices = jnp.concatenate([op.indices.astype(index_dtype) for op in operands], axis=dimension)
    elif dimension < nb + ns:
        j, total, offset, moved = dimension - nb, shape[dimension], 0, []
        for op in operands:
            col = op.indices[..., j].astype(index_dtype)
            # Padding stays padding: an index past this operand's size would land in the next operand.
            col = jnp.where((col >= 0) & (col < op.shape[dimension]), col + offset, total)
            moved.append(jnp.concatenate([op.indices[..., :j].astype(index_dtype), col[..., None],
                                          op.indices[..., j + 1:].astype(index_dtype)], axis=-1))
            offset += op.shape[dimension]
        data = jnp.concatenate([op.data for op in operands], axis=nb)
        indices = jnp.concatenate(moved, axis=nb)
    else:
        raise NotImplementedError(f"bcoo_concatenate: concatenation along a dense dimension (dimension={dimension}, "
                                  f"n_batch={nb}, n_sparse={ns}) is not supported (as in JAX); change the layout "
                                  "with bcoo_update_layout(mat, n_dense=...) first")
    return BCOO((data, indices), shape=shape)


def bcoo_broadcast_in_dim(mat: BCOO, *, shape: Sequence[int], broadcast_dimensions: Sequence[int],
                          sharding: Any = None) -> BCOO:
    """``mat`` broadcast to ``shape`` (as ``jax.lax.broadcast_in_dim``): dimension ``i`` of ``mat`` becomes
    dimension ``broadcast_dimensions[i]`` of the result.

    As in JAX, new dimensions before the sparse ones are batch dimensions (the stored entries repeat along them),
    new dimensions after the dense ones dense dimensions, and new sparse dimensions must have size 1. ``sharding``
    is accepted for JAX's signature and ignored (as in JAX)."""
    del sharding
    return _bcoo_broadcast_in_dim(mat, shape=frozen(shape), broadcast_dimensions=frozen(broadcast_dimensions))


@one_program("shape", "broadcast_dimensions")
def _bcoo_broadcast_in_dim(mat: BCOO, *, shape: Sequence[int], broadcast_dimensions: Sequence[int]) -> BCOO:
    _check_bcoo(mat, "bcoo_broadcast_in_dim")
    shape = _static_ints(shape, "shape", "bcoo_broadcast_in_dim")
    dims = _static_ints(broadcast_dimensions, "broadcast_dimensions", "bcoo_broadcast_in_dim")
    if len(dims) != mat.ndim:
        raise ValueError(f"bcoo_broadcast_in_dim: mat.shape={mat.shape} and broadcast_dimensions={list(dims)} must "
                         "have the same length")
    ok_dims = all(0 <= d < len(shape) for d in dims) and all(a < b for a, b in zip(dims, dims[1:]))
    if not ok_dims or any(n not in (1, shape[d]) for n, d in zip(mat.shape, dims)):
        raise TypeError(f"bcoo_broadcast_in_dim: cannot broadcast an array of shape {mat.shape} to shape "
                        f"{shape} with broadcast_dimensions={list(dims)}: they must be strictly increasing "
                        "dimensions of shape, each of the operand's sizes 1 or equal to the target's")
    nb, ns, nd, nse = mat.n_batch, mat.n_sparse, mat.n_dense, mat.nse
    # (Increasing dimensions keep the batch, sparse and dense groups in order: JAX's mixing errors cannot occur.)
    batch_dims, sparse_dims, dense_dims = dims[:nb], dims[nb:nb + ns], dims[nb + ns:]
    new_nb = min(dims[nb:], default=len(shape))
    new_nd = nd and len(shape) - min(dense_dims)
    new_ns = len(shape) - new_nb - new_nd
    if math.prod(mat.shape[nb:nb + ns]) != math.prod(shape[new_nb:new_nb + new_ns]):
        raise NotImplementedError(f"bcoo_broadcast_in_dim: adding sparse dimensions with lengths != 1 is not "
                                  f"supported (as in JAX): broadcasting shape {mat.shape} (n_batch={nb}, "
                                  f"n_dense={nd}) to {shape}; make the new dimensions batch or dense ones, or use "
                                  ".todense()")
    data_shape = shape[:new_nb] + (nse,) + shape[new_nb + new_ns:]
    data_dims = batch_dims + (new_nb,) + tuple(d + 1 - new_ns for d in dense_dims)
    data = lax.broadcast_in_dim(mat.data, data_shape, data_dims)
    indices = lax.broadcast_in_dim(mat.indices, shape[:new_nb] + (nse, ns), batch_dims + (new_nb, new_nb + 1))
    if new_ns != ns:  # new size-1 sparse dimensions: index 0
        zero = jnp.zeros(tuple(indices.shape[:-1]), indices.dtype)
        where = {d - new_nb: j for j, d in enumerate(sparse_dims)}
        indices = _with_columns(indices, [indices[..., where[k]] if k in where else zero for k in range(new_ns)],
                                new_nb, nse)
    return BCOO((data, indices), shape=shape)


# --- layout ----------------------------------------------------------------------------------------------

def _inefficient(message: str, on_inefficient: str | None) -> None:
    if on_inefficient == "error":
        raise SparseEfficiencyError(message + " To disable this error, set the on_inefficient argument of "
                                    "bcoo_update_layout to 'warn' or None.")
    if on_inefficient == "warn":
        warnings.warn(message + " To disable this warning, set the on_inefficient argument of bcoo_update_layout "
                      "to None.", SparseEfficiencyWarning, stacklevel=3)


def _grid(sizes: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """(prod(sizes), len(sizes)): every multi-index into ``sizes``, row-major (a static constant)."""
    return np.indices(tuple(sizes), dtype=dtype).reshape(len(sizes), -1).T


def _dense_to_sparse(mat: BCOO, n: int) -> BCOO:
    """The first ``n`` dense dimensions become sparse: each entry splits into one per position in them."""
    nb, ns = mat.n_batch, mat.n_sparse
    moved = mat.shape[nb + ns:nb + ns + n]
    k = math.prod(moved)
    batch = tuple(mat.data.shape[:nb])
    data = mat.data.reshape(batch + (mat.nse * k,) + tuple(mat.data.shape[nb + 1 + n:]))
    grid = _grid(moved, np.dtype(mat.indices.dtype))
    old = jnp.broadcast_to(mat.indices[..., None, :], batch + (mat.nse, k, ns))
    new = jnp.broadcast_to(jnp.asarray(grid), batch + (mat.nse, k, n))
    indices = jnp.concatenate([old, new], axis=-1).reshape(batch + (mat.nse * k, ns + n))
    return BCOO((data, indices), shape=mat.shape)


def _batch_to_sparse(mat: BCOO, n: int) -> BCOO:
    """The last ``n`` batch dimensions become sparse: their entries join into one set per remaining batch element."""
    nb, ns = mat.n_batch, mat.n_sparse
    lead, moved = mat.shape[:nb - n], mat.shape[nb - n:nb]
    k = math.prod(moved)
    data = mat.data.reshape(lead + (k * mat.nse,) + tuple(mat.data.shape[nb + 1:]))
    grid = _grid(moved, np.dtype(mat.indices.dtype)).reshape(moved + (1, n))
    grid = jnp.broadcast_to(jnp.asarray(grid), mat.shape[:nb] + (mat.nse, n))
    indices = jnp.concatenate([grid, mat.indices], axis=-1).reshape(lead + (k * mat.nse, n + ns))
    return BCOO((data, indices), shape=mat.shape)


def _sparse_to_dense(mat: BCOO, n: int) -> BCOO:
    """The last ``n`` sparse dimensions become dense: each entry's data is placed in a block of their sizes."""
    nb, ns = mat.n_batch, mat.n_sparse
    block = mat.shape[nb + ns - n:]

    def one(d, i):  # one entry: data of the dense shape, its index
        return jnp.zeros(block, d.dtype).at[tuple(i[ns - n + k] for k in range(n))].set(d, mode="drop"), i[:ns - n]
    data, indices = _nest(one, nb + 1)(mat.data, mat.indices)
    return BCOO((data, indices), shape=mat.shape)


def _sparse_to_batch(mat: BCOO, n: int) -> BCOO:
    """The first ``n`` sparse dimensions become batch ones: each entry lands in the batch element of its index."""
    nb, ns, nse = mat.n_batch, mat.n_sparse, mat.nse
    moved = mat.shape[nb:nb + n]

    def one(d, i):  # one batch element
        data = jnp.zeros(moved + tuple(d.shape), d.dtype)
        at = tuple(i[:, k] for k in range(n)) + (jnp.arange(nse),)
        return data.at[at].set(d, mode="drop"), jnp.broadcast_to(i[:, n:], moved + (nse, ns - n))
    data, indices = _nest(one, nb)(mat.data, mat.indices)
    return BCOO((data, indices), shape=mat.shape)


def bcoo_update_layout(mat: BCOO, *, n_batch: int | None = None, n_dense: int | None = None,
                       on_inefficient: str | None = "error") -> BCOO:
    """``mat`` stored with ``n_batch`` batch and ``n_dense`` dense dimensions (``None``: unchanged), as JAX's.

    Fewer batch or dense dimensions multiply ``nse`` by the size of the dimensions that become sparse. More batch
    or dense dimensions store explicit zeros (a full copy of the entries per new batch element, a full block per
    entry): where a new such dimension has size > 1 that is inefficient, and ``on_inefficient`` says what happens:
    ``'error'`` raises :class:`SparseEfficiencyError`, ``'warn'`` warns with :class:`SparseEfficiencyWarning`,
    ``None`` does it silently.
    """
    _check_bcoo(mat, "bcoo_update_layout")
    n_batch = mat.n_batch if n_batch is None else operator.index(n_batch)
    n_dense = mat.n_dense if n_dense is None else operator.index(n_dense)
    if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
        return mat
    if on_inefficient not in ("error", "warn", None):
        raise ValueError(f"bcoo_update_layout: on_inefficient={on_inefficient!r}; expected one of ['error', 'warn', "
                         "None]")
    if n_batch < 0 or n_dense < 0:
        raise ValueError(f"bcoo_update_layout: n_batch and n_dense must be non-negative; got n_batch={n_batch}, "
                         f"n_dense={n_dense}")
    if n_batch + n_dense > mat.ndim:
        raise ValueError(f"bcoo_update_layout: sum of n_batch={n_batch} and n_dense={n_dense} cannot be larger than "
                         f"mat.ndim={mat.ndim}")
    if n_dense > mat.n_dense and any(d > 1 for d in mat.shape[mat.ndim - n_dense:mat.ndim - mat.n_dense]):
        _inefficient(f"For matrix of shape {mat.shape}, increasing n_dense from {mat.n_dense} to {n_dense} results "
                     "in inefficient storage.", on_inefficient)
    if n_batch > mat.n_batch and any(d > 1 for d in mat.shape[mat.n_batch:n_batch]):
        _inefficient(f"For matrix of shape {mat.shape}, increasing n_batch from {mat.n_batch} to {n_batch} results "
                     "in inefficient storage.", on_inefficient)
    out = BCOO((mat.data, mat.indices), shape=mat.shape)
    # JAX's order (the resulting nse depends on it): fewer dense, fewer batch, more dense, more batch dimensions.
    if n_dense < out.n_dense:
        out = _dense_to_sparse(out, out.n_dense - n_dense)
    if n_batch < out.n_batch:
        out = _batch_to_sparse(out, out.n_batch - n_batch)
    if n_dense > out.n_dense:
        out = _sparse_to_dense(out, n_dense - out.n_dense)
    if n_batch > out.n_batch:
        out = _sparse_to_batch(out, n_batch - out.n_batch)
    return out


# --- extract ---------------------------------------------------------------------------------------------

def _first_occurrences(indices: Any) -> Any:
    """(nse,) bool: whether each entry is the first one with its index (unbatched ``indices``)."""
    nse, ns = indices.shape
    iota = jnp.arange(nse, dtype=np.int32)
    if not ns or nse <= 1:
        return iota == 0
    *cols, order = lax.sort(tuple(indices[:, k] for k in range(ns)) + (iota,), num_keys=ns + 1)
    changed = jnp.any(jnp.stack([c[1:] != c[:-1] for c in cols], axis=-1), axis=-1)
    first_sorted = jnp.concatenate([jnp.ones((1,), bool), changed])
    return jnp.zeros((nse,), bool).at[order].set(first_sorted)


def bcoo_extract(sparr: BCOO, arr: Any, *, assume_unique: bool | None = None) -> BCOO:
    """The values of the dense ``arr`` (of ``sparr.shape``) at the stored indices of ``sparr``: a BCOO with
    ``sparr``'s indices (as JAX's ``bcoo_extract``). Padding entries get 0.

    ``assume_unique`` (default ``sparr.unique_indices``): when False, an index stored several times gets the value
    at its first entry and 0 at the others, so that ``todense`` of the result equals ``arr`` on the pattern."""
    _check_bcoo(sparr, "bcoo_extract")
    data = _extracted_data(sparr, arr, assume_unique=assume_unique)
    return BCOO((data, sparr.indices), shape=sparr.shape, indices_sorted=sparr.indices_sorted,
                unique_indices=sparr.unique_indices)


@one_program("assume_unique", pytrees=("sparr",))
def _extracted_data(sparr: BCOO, arr: Any, *, assume_unique: bool | None) -> Any:
    """The ``data`` of ``bcoo_extract(sparr, arr)`` (the result keeps ``sparr``'s own ``indices``)."""
    a = jnp.asarray(arr)
    if tuple(a.shape) != sparr.shape:
        raise ValueError(f"bcoo_extract: shape mismatch: sparr.shape={sparr.shape} but arr.shape={tuple(a.shape)}; "
                         "arr must have the shape of the sparse array")
    unique = sparr.unique_indices if assume_unique is None else bool(assume_unique)
    nse, ns = sparr.nse, sparr.n_sparse

    def one(indices, x):
        if ns:
            data = x.at[tuple(indices[:, k] for k in range(ns))].get(mode="fill", fill_value=0)
        else:  # every entry stands for the whole dense block
            data = jnp.broadcast_to(x, (nse,) + tuple(x.shape))
        if not unique:
            data = _zero_where_dropped(data, _first_occurrences(indices))
        return data
    return _nest(one, sparr.n_batch)(sparr.indices, a)


# --- indexing --------------------------------------------------------------------------------------------

def _is_dynamic_scalar(i: Any) -> bool:
    """A kiln array or tracer of one integer (JAX indexes with it by a dynamic slice)."""
    return hasattr(i, "shape") and hasattr(i, "dtype") and not isinstance(i, (np.ndarray, np.generic)) \
        and tuple(i.shape) == () and dtypes.is_int(i.dtype) and not isinstance(i, bool)


def _is_basic(item: Any) -> bool:
    """An index entry that slices (an integer, a slice, None, Ellipsis or a traced integer scalar); arrays, lists
    and booleans gather."""
    return (item is None or item is Ellipsis or isinstance(item, (slice, int, np.integer))
            or _is_dynamic_scalar(item)) and not isinstance(item, (bool, np.bool_))


def _expand_index(idx: Any, ndim: int) -> list:
    """``idx`` (of basic entries, see _is_basic) as a list with one entry per dimension (``None`` entries added),
    Ellipsis expanded."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexError("BCOO indexing: an index can only have a single ellipsis ('...')")
    used = sum(item is not None and item is not Ellipsis for item in items)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed")
    if Ellipsis in items:
        k = items.index(Ellipsis)
        return items[:k] + [slice(None)] * (ndim - used) + items[k + 1:]
    return items + [slice(None)] * (ndim - used)


def _static_entry(item: Any, size: int, axis: int) -> tuple[int, int, int, bool]:
    """(start, limit, stride, reversed) of a static integer or slice along an axis of ``size`` (JAX's)."""
    if isinstance(item, slice):
        for v in (item.start, item.stop, item.step):
            if v is not None and not isinstance(v, (int, np.integer)):
                raise IndexError(f"BCOO indexing: slice entries must be static integers, got {item}")
        start, stop, step = item.indices(size)
        if step > 0:
            return start, max(start, stop), step, False
        new_start = min(size, stop + 1 + abs(start - stop - 1) % -step)
        return new_start, max(new_start, start + 1), -step, True
    i = operator.index(item)
    if not -size <= i < size:
        raise IndexError(f"index {i} out of bounds for axis {axis} with size {size}")
    i = i + size if i < 0 else i
    return i, i + 1, 1, False


def bcoo_getitem(mat: BCOO, idx: Any) -> BCOO:
    """``mat[idx]`` for integers, slices, ``None`` and ``Ellipsis`` (as JAX's ``BCOO.__getitem__``): a static slice
    (``bcoo_slice``; a traced integer makes it ``bcoo_dynamic_slice``), then a reverse for negative steps, a
    squeeze for integers and new axes for ``None``. The result is always a BCOO array (a 0-d one for a scalar)."""
    key = _static_key(idx)
    if key is None:  # index arrays, traced integers: op by op
        return _bcoo_getitem(mat, idx)
    return _static_getitem(mat, key=key)


def _static_key(idx: Any, arrays: list | None = None) -> Any:
    """A static basic index (Python integers, slices of them, None, Ellipsis) as a hashable key (see
    :func:`_static_index`), else None. (A slice does not hash before Python 3.12.) With ``arrays`` (a list), integer
    index arrays (NumPy's, kiln's, traced) are taken too: appended to it, the k-th keyed ``(k,)``."""
    items = idx if type(idx) is tuple else (idx,)
    key = []
    for item in items:
        if item is None or type(item) is int:
            key.append(item)
        elif item is Ellipsis:
            key.append("...")
        elif type(item) is slice and all(v is None or type(v) is int for v in (item.start, item.stop, item.step)):
            key.append((item.start, item.stop, item.step))
        elif (arrays is not None and isinstance(item, (np.ndarray, Array, Tracer))
              and np.dtype(item.dtype).kind in "iu"):
            key.append((len(arrays),))
            arrays.append(jnp.asarray(item) if type(item) is np.ndarray else item)
        else:
            return None
    return (type(idx) is tuple, tuple(key))


def _static_index(key: Any, arrays: Sequence[Any] = ()) -> Any:
    """The index of a :func:`_static_key` (its index arrays ``arrays``)."""
    is_tuple, items = key
    idx = tuple(Ellipsis if k == "..." else (slice(*k) if len(k) == 3 else arrays[k[0]]) if type(k) is tuple else k
                for k in items)
    return idx if is_tuple else idx[0]


@one_program("key")
def _static_getitem(mat: BCOO, *, key: Any) -> BCOO:
    return _bcoo_getitem(mat, _static_index(key))


def _bcoo_getitem(mat: BCOO, idx: Any) -> BCOO:
    _check_bcoo(mat, "BCOO.__getitem__")
    if not all(map(_is_basic, idx if isinstance(idx, tuple) else (idx,))):
        return _gathering_getitem(mat, idx)
    items = _expand_index(idx, mat.ndim)
    starts, limits, strides, rev, squeeze, new_axes = [], [], [], [], [], []
    dynamic = {}  # axis -> traced start
    axis = 0
    for item in items:
        if item is None:
            new_axes.append(axis - len(squeeze) + len(new_axes))
            continue
        if _is_dynamic_scalar(item):
            if mat.shape[axis] == 0:
                raise IndexError(f"index is out of bounds for axis {axis} with size 0")
            dynamic[axis] = item
            start, limit, stride, flip = 0, 1, 1, False
        else:
            start, limit, stride, flip = _static_entry(item, mat.shape[axis], axis)
        starts.append(start), limits.append(limit), strides.append(stride)
        if flip:
            rev.append(axis)
        if not isinstance(item, slice):
            squeeze.append(axis)
        axis += 1
    out = mat
    if dynamic:
        if any(s != 1 for s in strides):
            raise NotImplementedError("BCOO indexing with a traced integer supports slices of step 1 or -1 only; "
                                      "take the strided slice in a separate step")
        begin = [dynamic.get(d, s) for d, s in enumerate(starts)]
        out = bcoo_dynamic_slice(out, begin, [b - a for a, b in zip(starts, limits)])
    elif (starts, limits, strides) != ([0] * mat.ndim, list(mat.shape), [1] * mat.ndim):
        out = bcoo_slice(out, start_indices=starts, limit_indices=limits,
                         strides=None if all(s == 1 for s in strides) else strides)
    if rev:
        out = bcoo_rev(out, rev)
    if squeeze:
        out = bcoo_squeeze(out, dimensions=squeeze)
    if new_axes:
        shape = list(out.shape)
        for d in sorted(new_axes):
            shape.insert(d, 1)
        kept = [d for d in range(len(shape)) if d not in new_axes]
        out = bcoo_broadcast_in_dim(out, shape=shape, broadcast_dimensions=kept)
    return out


def _gathering_getitem(mat: BCOO, idx: Any) -> BCOO:
    """``mat[idx]`` with index arrays (or booleans) among the entries: kiln.numpy's indexing of the dense array,
    sparsified (its gathers run on the stored entries), as JAX's. The result is a BCOO array."""
    from .transform import sparsify  # transform imports this module: imported when called
    if isinstance(idx, BCOO) or isinstance(idx, tuple) and any(isinstance(i, BCOO) for i in idx):
        raise NotImplementedError("BCOO indexing with a BCOO index array is not supported (as in JAX); pass the "
                                  "index dense (index.todense())")
    arrays: list = []
    key = _static_key(idx, arrays)
    if key is None:  # boolean masks (the result's size depends on their values), lists: op by op
        out = sparsify(lambda m: m[idx])(mat)
    else:
        out = _gathering_program(mat, _IndexArrays(arrays), key=key)
    # (an index that selects nothing can make kiln.numpy return a dense array of zeros)
    return BCOO.fromdense(out) if not isinstance(out, BCOO) and math.prod(out.shape) == 0 else out


@tree_util.register_pytree_node_class
class _IndexArrays:
    """An index's arrays as one pytree argument of :func:`_gathering_program` (eager_jit takes a registered
    pytree class of arrays, not a tuple)."""

    def __init__(self, arrays: Sequence[Any]) -> None:
        self.arrays = tuple(arrays)

    def tree_flatten(self) -> tuple[tuple, None]:
        return self.arrays, None

    @classmethod
    def tree_unflatten(cls, aux: None, children: Sequence[Any]) -> _IndexArrays:
        return cls(children)


@one_program("key", pytrees=("mat", "index_arrays"), dense_ok=True)
def _gathering_program(mat: BCOO, index_arrays: _IndexArrays, *, key: tuple) -> Any:
    """``mat[idx]`` for an index with integer arrays (``key``: see :func:`_static_key`) as one program: the sparsified
    gathers keep nse static."""
    from .transform import sparsify  # transform imports this module: imported when called
    idx = _static_index(key, index_arrays.arrays)
    return sparsify(lambda m: m[idx])(mat)
