"""Products that involve two sparse arrays or give a sparse result, as ``jax.experimental.sparse``'s:

- ``bcoo_multiply_sparse(lhs, rhs)``: the elementwise product of two BCOO arrays, a BCOO;
- ``bcoo_dot_general_sampled(A, B, indices, ...)``: the dense product ``A . B`` read at BCOO ``indices`` (the
  ``data`` of a BCOO with those indices; the transpose of a sparse-dense product w.r.t. the sparse ``data``);
- ``bcoo_spdot_general(lhs, rhs, ...)``: ``lax.dot_general`` of two BCOO arrays, a BCOO.

The two sparse-sparse products pair every stored entry of one operand with every one of the other (an
``nse_lhs x nse_rhs`` comparison of indices, as JAX does), so they suit small ``nse``. Everything is kiln.numpy
gathers, comparisons and scatter-adds (per batch element under ``kiln.vmap``): it runs eagerly, under ``kiln.jit``
and ``kiln.vmap``, and differentiates w.r.t. ``data`` and the dense operands.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..batching.api import vmap
from ..core import dtypes
from .bcoo import BCOO, bcoo_sum_duplicates, frozen_dimension_numbers, one_program

__all__ = ["bcoo_dot_general_sampled", "bcoo_multiply_sparse", "bcoo_spdot_general"]


def _dimension_numbers(dimension_numbers: Any, where: str) -> tuple[tuple[int, ...], ...]:
    """``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` as four tuples of Python ints."""
    try:
        (lc, rc), (lb, rb) = dimension_numbers
        return tuple(tuple(operator.index(d) for d in ds) for ds in (lc, rc, lb, rb))
    except (TypeError, ValueError):
        raise TypeError(f"{where}: dimension_numbers must be ((lhs_contracting, rhs_contracting), (lhs_batch, "
                        f"rhs_batch)), tuples of ints, got {dimension_numbers!r}") from None


def _axes(dims: Sequence[int], ndim: int, where: str, what: str) -> tuple[int, ...]:
    out = []
    for d in dims:
        if not -ndim <= d < ndim:
            raise ValueError(f"{where}: {what} dimension {d} is out of range for an operand of rank {ndim}")
        out.append(d % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{where}: repeated {what} dimensions {tuple(dims)}")
    return tuple(out)


def _nest(fn: Any, n: int, in_axes: Any = 0) -> Any:
    for _ in range(n):
        fn = vmap(fn, in_axes=in_axes)
    return fn


def _valid(indices: Any, bounds: Sequence[int]) -> Any:
    """(nse,) bool: the entries whose index lies in range (the others are padding, as ``fromdense`` makes)."""
    bound = np.asarray(bounds, dtype=np.dtype(indices.dtype))
    return jnp.all((indices >= 0) & (indices < bound), axis=-1)


# --- bcoo_multiply_sparse --------------------------------------------------------------------------

def _with_n_batch(mat: BCOO, n_batch: int) -> BCOO:
    """``mat`` with its trailing batch axes beyond ``n_batch`` turned into sparse ones (``nse`` grows by their
    size): the layout change that lets two operands with different ``n_batch`` pair up per batch element."""
    nb = mat.n_batch
    if nb == n_batch:
        return mat
    lead, moved = mat.shape[:n_batch], mat.shape[n_batch:nb]
    nse = mat.nse * math.prod(moved)
    grid = np.stack(np.meshgrid(*[np.arange(s) for s in moved], indexing="ij"), axis=-1)  # moved + (len(moved),)
    grid = np.broadcast_to(grid[..., None, :].astype(np.dtype(mat.indices.dtype)),
                           lead + moved + (mat.nse, len(moved)))
    indices = jnp.concatenate([jnp.asarray(grid), mat.indices], axis=-1)
    indices = indices.reshape(lead + (nse, len(moved) + mat.n_sparse))
    data = mat.data.reshape(lead + (nse,) + tuple(mat.data.shape[nb + 1:]))
    return BCOO((data, indices), shape=mat.shape, unique_indices=mat.unique_indices)


@one_program(pytrees=("lhs", "rhs"))
def bcoo_multiply_sparse(lhs: BCOO, rhs: BCOO) -> BCOO:
    """The elementwise product of two BCOO arrays of one shape, a BCOO (as JAX's ``bcoo_multiply_sparse``).

    The operands may differ in ``n_batch`` (the result has the smaller); they must have the same ``n_dense``. The
    result stores ``lhs.nse * rhs.nse`` entries per batch element (every pair of entries with equal indices, then
    padding), as JAX's; ``sum_duplicates(nse=...)`` compacts it.
    """
    for name, x in (("lhs", lhs), ("rhs", rhs)):
        if not isinstance(x, BCOO):
            raise TypeError(f"bcoo_multiply_sparse: {name} must be a BCOO array, got {type(x).__name__}; for a dense "
                            "operand use bcoo_multiply_dense (or BCOO * x)")
    if lhs.shape != rhs.shape:
        raise ValueError(f"bcoo_multiply_sparse: the operands must have the same shape, got {lhs.shape} and "
                         f"{rhs.shape} (broadcasting is not supported in kiln)")
    if lhs.n_dense != rhs.n_dense:
        raise NotImplementedError(f"bcoo_multiply_sparse: the operands have different numbers of dense dimensions "
                                  f"(n_dense={lhs.n_dense} and {rhs.n_dense}); rebuild one with the other's n_dense "
                                  "(BCOO.fromdense(x.todense(), n_dense=...))")
    n_batch = min(lhs.n_batch, rhs.n_batch)
    lhs, rhs = _with_n_batch(lhs, n_batch), _with_n_batch(rhs, n_batch)
    sparse_shape = lhs.shape[n_batch:n_batch + lhs.n_sparse]
    dtype = jnp.result_type(lhs.data, rhs.data)

    def one(l_data, l_idx, r_data, r_idx):
        # Pair (i, j) matches when both entries are in range with equal indices; padding matches nothing.
        match = jnp.all(l_idx[:, None, :] == r_idx[None, :, :], axis=-1)
        match = match & _valid(l_idx, sparse_shape)[:, None] & _valid(r_idx, sparse_shape)[None, :]
        i, j = jnp.nonzero(match, size=l_idx.shape[0] * r_idx.shape[0], fill_value=(l_idx.shape[0], r_idx.shape[0]))
        data = (l_data.at[i].get(mode="fill", fill_value=0).astype(dtype)
                * r_data.at[j].get(mode="fill", fill_value=0).astype(dtype))
        # A matched pair's index is the lhs entry's (the rhs's is equal); the unmatched tail is padding.
        pad = np.asarray(sparse_shape, dtype=np.dtype(l_idx.dtype))
        indices = jnp.where((i < l_idx.shape[0])[:, None], l_idx.at[i].get(mode="fill", fill_value=0), pad)
        return data, indices

    data, indices = _nest(one, n_batch)(lhs.data, lhs.indices, rhs.data, rhs.indices)
    return BCOO((data, indices), shape=lhs.shape, indices_sorted=lhs.indices_sorted,
                unique_indices=lhs.unique_indices and rhs.unique_indices)


# --- bcoo_dot_general_sampled ----------------------------------------------------------------------

def bcoo_dot_general_sampled(A: Any, B: Any, indices: Any, *, dimension_numbers: Any) -> Any:
    """``lax.dot_general(A, B, dimension_numbers)`` read at the BCOO ``indices`` (as JAX's
    ``bcoo_dot_general_sampled``): the ``data`` of shape ``batch + (nse,) + dense`` of a BCOO with these indices
    and the product's shape (entries out of range read 0). Differentiable w.r.t. ``A`` and ``B``.

    ``indices`` has shape ``batch + (nse, n_sparse)``: its leading axes are the product's batch axes (of equal size,
    or 1 to share the indices), then ``n_sparse`` of its axes are sparse, the rest dense.
    """
    A, B, indices = jnp.asarray(A), jnp.asarray(B), jnp.asarray(indices)
    lc, rc, lb, rb = _dimension_numbers(dimension_numbers, "bcoo_dot_general_sampled")
    if not dtypes.is_int(indices.dtype):
        raise TypeError(f"bcoo_dot_general_sampled: indices must be integers, got {indices.dtype}")
    _check_dot_shapes(tuple(A.shape), tuple(B.shape), (lc, rc, lb, rb), "bcoo_dot_general_sampled")
    dense = lax.dot_general(A, B, ((lc, rc), (lb, rb)))
    return _extract(indices, dense)


def _check_dot_shapes(lhs_shape: tuple, rhs_shape: tuple, dims: tuple, where: str) -> None:
    lc, rc, lb, rb = dims
    lc, lb = _axes(lc, len(lhs_shape), where, "lhs contracting"), _axes(lb, len(lhs_shape), where, "lhs batch")
    rc, rb = _axes(rc, len(rhs_shape), where, "rhs contracting"), _axes(rb, len(rhs_shape), where, "rhs batch")
    for what, ld, rd in (("contracting", lc, rc), ("batch", lb, rb)):
        l_sizes, r_sizes = tuple(lhs_shape[d] for d in ld), tuple(rhs_shape[d] for d in rd)
        if l_sizes != r_sizes:
            raise TypeError(f"{where} requires {what} dimensions to have the same shape, got {l_sizes} and "
                            f"{r_sizes} (operands of shapes {lhs_shape} and {rhs_shape})")


def _extract(indices: Any, dense: Any) -> Any:
    """The entries of ``dense`` at BCOO ``indices`` (``batch + (nse, n_sparse)``), 0 where out of range."""
    if indices.ndim < 2:
        raise ValueError(f"bcoo_dot_general_sampled: indices must have shape batch + (nse, n_sparse), at least 2-D; "
                         f"got shape {tuple(indices.shape)}")
    n_batch, n_sparse = indices.ndim - 2, indices.shape[-1]
    if n_batch + n_sparse > dense.ndim:
        raise ValueError(f"bcoo_dot_general_sampled: indices of shape {tuple(indices.shape)} (n_batch={n_batch}, "
                         f"n_sparse={n_sparse}) do not fit the product of shape {tuple(dense.shape)}")
    batch = tuple(dense.shape[:n_batch])
    if any(i not in (1, d) for i, d in zip(indices.shape[:n_batch], batch)):
        raise ValueError(f"bcoo_dot_general_sampled: the batch dimensions {tuple(indices.shape[:n_batch])} of "
                         f"indices must equal those of the product {batch} (or be 1)")
    indices = jnp.broadcast_to(indices, batch + tuple(indices.shape[n_batch:]))

    def one(idx, x):
        return x.at[tuple(idx[:, k] for k in range(n_sparse))].get(mode="fill", fill_value=0)
    return _nest(one, n_batch)(indices, dense)


# --- bcoo_spdot_general ----------------------------------------------------------------------------

def bcoo_spdot_general(lhs: BCOO, rhs: BCOO, *, dimension_numbers: Any, preferred_element_type: Any = None) -> BCOO:
    """``lax.dot_general`` of two BCOO arrays, a BCOO (as JAX's ``bcoo_dot_general`` of two sparse operands).

    Both operands need ``n_dense == 0``; their dot batch dimensions must be batch axes of their layout and their
    contracting dimensions sparse axes. The result's batch axes are the dot batch axes, then the lhs's other batch
    axes, then the rhs's; it stores ``min(lhs.nse * rhs.nse, size of its sparse dimensions)`` entries per batch
    element (a factor is 1 for an operand whose sparse axes are all contracted), duplicates summed and sorted,
    as JAX's.
    """
    return _bcoo_spdot_general(lhs, rhs, dimension_numbers=frozen_dimension_numbers(dimension_numbers),
                               preferred_element_type=preferred_element_type)


@one_program("dimension_numbers", "preferred_element_type", pytrees=("lhs", "rhs"))
def _bcoo_spdot_general(lhs: BCOO, rhs: BCOO, *, dimension_numbers: Any, preferred_element_type: Any) -> BCOO:
    where = "bcoo_spdot_general"
    for name, x in (("lhs", lhs), ("rhs", rhs)):
        if not isinstance(x, BCOO):
            raise TypeError(f"{where}: {name} must be a BCOO array, got {type(x).__name__}; with a dense operand use "
                            "bcoo_dot_general")
    lc, rc, lb, rb = _dimension_numbers(dimension_numbers, where)
    _check_dot_shapes(lhs.shape, rhs.shape, (lc, rc, lb, rb), where)
    lc, lb = _axes(lc, lhs.ndim, where, "lhs contracting"), _axes(lb, lhs.ndim, where, "lhs batch")
    rc, rb = _axes(rc, rhs.ndim, where, "rhs contracting"), _axes(rb, rhs.ndim, where, "rhs batch")
    _check_spdot_layout(lhs, rhs, lc, rc, lb, rb)
    dtype = jnp.result_type(lhs.data, rhs.data) if preferred_element_type is None \
        else np.dtype(preferred_element_type)
    lhs_free = [d for d in range(lhs.ndim) if d not in lc + lb]
    rhs_free = [d for d in range(rhs.ndim) if d not in rc + rb]
    out_shape = tuple(lhs.shape[d] for d in lb) + tuple(lhs.shape[d] for d in lhs_free) + \
        tuple(rhs.shape[d] for d in rhs_free)
    l_nb, r_nb = lhs.n_batch, rhs.n_batch
    out_n_batch = l_nb + r_nb - len(lb)
    out_sparse = out_shape[out_n_batch:]
    out_nse = (lhs.nse if lhs.n_sparse > len(lc) else 1) * (rhs.nse if rhs.n_sparse > len(rc) else 1)
    out_nse = min(out_nse, math.prod(out_sparse))

    def one(l_data, l_idx, r_data, r_idx):
        return _spdot_unbatched(l_data, l_idx, r_data, r_idx, lhs.shape[l_nb:], rhs.shape[r_nb:],
                                [d - l_nb for d in lc], [d - r_nb for d in rc], out_sparse, out_nse, dtype)

    # Dot batch axes first, in the order of dimension_numbers, then each operand's other batch axes.
    l_perm = list(lb) + [d for d in range(l_nb) if d not in lb]
    r_perm = list(rb) + [d for d in range(r_nb) if d not in rb]
    l_data, l_idx = _batch_first(lhs, l_perm)
    r_data, r_idx = _batch_first(rhs, r_perm)
    fn = _nest(one, r_nb - len(rb), in_axes=(None, None, 0, 0))
    fn = _nest(fn, l_nb - len(lb), in_axes=(0, 0, None, None))
    data, indices = _nest(fn, len(lb))(l_data, l_idx, r_data, r_idx)
    return BCOO((data, indices), shape=out_shape, indices_sorted=True, unique_indices=True)


def _check_spdot_layout(lhs: BCOO, rhs: BCOO, lc: tuple, rc: tuple, lb: tuple, rb: tuple) -> None:
    where = "bcoo_spdot_general"
    if lhs.n_dense or rhs.n_dense:
        raise NotImplementedError(f"{where}: operands with dense dimensions (n_dense={lhs.n_dense} and "
                                  f"{rhs.n_dense}) are not supported (as in JAX); build them with n_dense=0")
    for name, mat, b, c in (("lhs", lhs, lb, lc), ("rhs", rhs, rb, rc)):
        if any(d >= mat.n_batch for d in b):
            raise NotImplementedError(f"{where}: the batch dimensions {b} of the {name} must be batch dimensions of "
                                      f"its sparse layout (n_batch={mat.n_batch}); rebuild it with "
                                      "BCOO.fromdense(x.todense(), n_batch=...)")
        if any(not mat.n_batch <= d < mat.n_batch + mat.n_sparse for d in c):
            raise NotImplementedError(f"{where}: only sparse dimensions can be contracted; the {name} contracting "
                                      f"dimensions {c} include batch or dense ones (n_batch={mat.n_batch}, "
                                      f"n_sparse={mat.n_sparse})")
    if rhs.n_batch > len(rb) and lhs.n_sparse > len(lc):
        raise ValueError(f"{where}: cannot have unused batch dims on rhs (n_batch={rhs.n_batch}, {len(rb)} used) "
                         f"with unused sparse dims on lhs (n_sparse={lhs.n_sparse}, {len(lc)} contracted): the result "
                         "would have a batch axis after a sparse one; move the rhs's batch axes into its sparse ones")


def _batch_first(mat: BCOO, perm: list[int]) -> tuple[Any, Any]:
    nb = mat.n_batch
    if perm == list(range(nb)):
        return mat.data, mat.indices
    return (jnp.transpose(mat.data, perm + list(range(nb, mat.data.ndim))),
            jnp.transpose(mat.indices, perm + [nb, nb + 1]))


def _spdot_unbatched(l_data: Any, l_idx: Any, r_data: Any, r_idx: Any, l_shape: tuple, r_shape: tuple,
                     lc: list[int], rc: list[int], out_sparse: tuple, out_nse: int, dtype: Any) -> tuple[Any, Any]:
    """One product of unbatched BCOO operands: every pair of entries whose contracted indices agree contributes
    ``l * r`` at (the lhs's free indices, the rhs's), then duplicates are summed into ``out_nse`` entries. Pairs
    that disagree become padding: that depends on the indices only, never on the values (zeros in ``data`` are
    kept, so the layout and the derivative w.r.t. ``data`` do not change with the values, as in JAX)."""
    n_l, n_r = l_idx.shape[0], r_idx.shape[0]
    l_free = [d for d in range(len(l_shape)) if d not in lc]
    r_free = [d for d in range(len(r_shape)) if d not in rc]
    match = _valid(l_idx, l_shape)[:, None] & _valid(r_idx, r_shape)[None, :]
    for a, b in zip(lc, rc):
        match = match & (l_idx[:, a][:, None] == r_idx[:, b][None, :])
    prod = l_data.astype(dtype)[:, None] * r_data.astype(dtype)[None, :]
    data = jnp.where(match, prod, jnp.zeros((), dtype)).reshape(n_l * n_r)
    if not out_sparse:  # every sparse axis contracted: one entry, the sum
        return jnp.sum(data, keepdims=True), jnp.zeros((1, 0), l_idx.dtype)
    idx_dtype = jnp.result_type(l_idx, r_idx)
    cols = [jnp.broadcast_to(l_idx[:, d][:, None], (n_l, n_r)) for d in l_free] + \
        [jnp.broadcast_to(r_idx[:, d][None, :], (n_l, n_r)) for d in r_free]
    indices = jnp.stack([c.astype(idx_dtype) for c in cols], axis=-1).reshape(n_l * n_r, len(cols))
    # A pair with an out-of-range (padding) entry keeps its in-range side's index; send it out of range too.
    indices = jnp.where(match.reshape(n_l * n_r)[:, None], indices,
                        jnp.asarray(np.asarray(out_sparse, np.dtype(idx_dtype))))
    out = bcoo_sum_duplicates(BCOO((data, indices), shape=out_sparse), nse=out_nse)
    return out.data, out.indices
