"""``kiln.experimental.sparse``'s BCSR arrays (JAX's batched-CSR format), built from kiln.numpy ops.

A BCSR array of shape ``batch + (rows, cols) + dense`` stores ``nse`` entries per batch element: ``data`` of shape
``batch + (nse,) + dense``, ``indices`` of shape ``batch + (nse,)`` (each entry's column) and ``indptr`` of shape
``batch + (rows + 1,)`` (row ``r`` holds the entries ``indptr[r]:indptr[r + 1]``). Entries past ``indptr[-1]``
are padding (``fromdense`` pads with column ``cols`` and data 0) that ``todense`` and products drop.

The operations convert to kiln's BCOO (the column indices plus each entry's row, from ``indptr``), use its
gathers and scatter-adds and, where the result is sparse, convert back: they run eagerly, under ``kiln.jit`` and
``kiln.vmap``, and differentiate w.r.t. ``data`` and the dense operand. ``bcsr_broadcast_in_dim`` and
``bcsr_concatenate``, which JAX builds on BCOO ops that kiln's BCOO does not have yet, are not provided.
"""
from __future__ import annotations

import operator
import types
from typing import Any, Sequence

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core import dtypes
from ..core.errors import ConcretizationTypeError
from ..core.tracing import Tracer
from ..core.tree_util import register_pytree_node_class
from .base import JAXSparse, canonical_shape, mapped_nse_axis_error, static_int
from .bcoo import (
    BCOO,
    _distinct_count,
    _nest,
    _shape_for_leaves,
    bcoo_dot_general,
    bcoo_eliminate_zeros,
    bcoo_fromdense,
    bcoo_sum_duplicates,
    eager_now,
    frozen_dimension_numbers,
    one_program,
    stored_count_now,
)
from .bcoo_structure import bcoo_broadcast_in_dim, bcoo_concatenate
from .coo_csr import _buffers, _csr_rows, _index_dtype, _indptr_from_rows

__all__ = ["BCSR", "bcsr_broadcast_in_dim", "bcsr_concatenate", "bcsr_dot_general", "bcsr_eliminate_zeros",
           "bcsr_extract", "bcsr_fromdense", "bcsr_sum_duplicates", "bcsr_todense"]


# --- layout --------------------------------------------------------------------------------------------

def _validate_indices(indices_shape: tuple, indptr_shape: tuple, shape: tuple, where: str) -> tuple[int, int, int]:
    """(n_batch, n_dense, nse) of BCSR index arrays of these shapes for an array of ``shape``, or a ValueError."""
    if len(indices_shape) < 1:
        raise ValueError(f"{where}: indices must have shape batch + (nse,), at least 1-D; got a scalar")
    n_batch, nse = len(indices_shape) - 1, indices_shape[-1]
    n_dense = len(shape) - n_batch - 2
    if n_dense < 0:
        raise ValueError(f"{where}: BCSR array must have 2 sparse dimensions: indices of shape {indices_shape} "
                         f"(n_batch={n_batch}) need shape of rank at least {n_batch + 2}, got shape={shape}")
    batch = tuple(shape[:n_batch])
    if tuple(indices_shape[:n_batch]) != batch:
        raise ValueError(f"{where}: indices batch dimensions {tuple(indices_shape[:n_batch])} differ from those of "
                         f"shape={shape} (n_batch={n_batch})")
    want = batch + (shape[n_batch] + 1,)
    if tuple(indptr_shape) != want:
        raise ValueError(f"{where}: indptr shape must match the matrix shape plus 1: expected batch + (rows + 1,) "
                         f"= {want} for shape={shape} (n_batch={n_batch}), got {tuple(indptr_shape)}")
    return n_batch, n_dense, nse


def _validate(data_shape: tuple, indices_shape: tuple, indptr_shape: tuple, shape: tuple) -> None:
    n_batch, n_dense, nse = _validate_indices(indices_shape, indptr_shape, shape, "BCSR")
    want = tuple(shape[:n_batch]) + (nse,) + tuple(shape[n_batch + 2:])
    if tuple(data_shape) != want:
        raise ValueError(f"BCSR: data of shape {tuple(data_shape)} does not fit indices of shape {indices_shape} "
                         f"and shape={shape}: data must have shape batch + (nse,) + dense = {want} (nse={nse}, "
                         f"n_batch={n_batch}, n_dense={n_dense})")


def _to_bcoo_indices(indices: Any, indptr: Any, n_batch: int) -> Any:
    """BCOO indices ``batch + (nse, 2)`` (row, column) of BCSR ``(indices, indptr)``; padding gets row ``rows``."""
    def one(ind, ptr):
        return jnp.stack([_csr_rows(ind, ptr), ind], axis=1)
    return _nest(one, n_batch)(indices, indptr)


def _from_bcoo_indices(indices: Any, n_rows: int, index_dtype: Any) -> tuple[Any, Any]:
    """BCSR ``(indices, indptr)`` of BCOO indices sorted by row within each batch element."""
    def ptr(rows):
        return _indptr_from_rows(rows, n_rows, index_dtype)
    return indices[..., 1].astype(index_dtype), _nest(ptr, indices.ndim - 2)(indices[..., 0])


# --- the array class -----------------------------------------------------------------------------------

@register_pytree_node_class
class BCSR(JAXSparse):
    """A sparse array in batched-CSR format (as ``jax.experimental.sparse.BCSR``).

    ``BCSR((data, indices, indptr), shape=shape)``: ``data`` of shape ``batch + (nse,) + dense``, ``indices``
    (columns) of shape ``batch + (nse,)``, ``indptr`` of shape ``batch + (rows + 1,)``. A pytree (leaves ``data``,
    ``indices``, ``indptr``), so it passes through ``kiln.jit``, ``kiln.vmap`` and ``kiln.grad``.

    >>> M = BCSR.fromdense(jnp.array([[0., 2., 0.], [1., 0., 4.]]))
    >>> M.indices, M.indptr
    (Array([1, 0, 2], dtype=int32), Array([0, 1, 3], dtype=int32))
    >>> M @ jnp.ones(3)
    Array([2., 5.], dtype=float32)
    """

    def __init__(self, args: tuple, *, shape: Sequence[int], indices_sorted: bool = False,
                 unique_indices: bool = False):
        self.data, self.indices, self.indptr = _buffers(args, "BCSR", "(data, indices, indptr)")
        for name, arr in (("indices", self.indices), ("indptr", self.indptr)):
            if not dtypes.is_int(arr.dtype):
                raise TypeError(f"BCSR: {name} must be integers, got {arr.dtype}")
        self.indices_sorted, self.unique_indices = bool(indices_sorted), bool(unique_indices)
        super().__init__(args, shape=shape)
        _validate(tuple(self.data.shape), tuple(self.indices.shape), tuple(self.indptr.shape), self.shape)

    # --- layout ------------------------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def nse(self) -> int:
        return self.indices.shape[self.n_batch]  # indices: batch + (nse,)

    @property
    def n_batch(self) -> int:
        if self._lost_nse_axis is not None:
            raise self._lost_nse_axis
        return self.indices.ndim - 1

    @property
    def n_sparse(self) -> int:
        return 2

    @property
    def n_dense(self) -> int:
        return self.data.ndim - self.indices.ndim

    @property
    def _sparse_shape(self) -> tuple[int, int]:
        return tuple(self.shape[self.n_batch:self.n_batch + 2])

    def _repr_extra(self) -> str:
        return (f", n_batch={self.n_batch}" if self.n_batch else "") + (f", n_dense={self.n_dense}"
                                                                         if self.n_dense else "")

    # --- pytree ------------------------------------------------------------------------------------
    def tree_flatten(self):
        return (self.data, self.indices, self.indptr), {"shape": self.shape, "indices_sorted": self.indices_sorted,
                                                        "unique_indices": self.unique_indices}

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        obj.indices_sorted, obj.unique_indices = aux_data["indices_sorted"], aux_data["unique_indices"]
        obj.shape = _shape_for_leaves(aux_data["shape"], obj.data, _as_bcoo_indices_shape(obj.indices))
        obj._lost_nse_axis = mapped_nse_axis_error(obj, 1)
        return obj

    # --- conversions -------------------------------------------------------------------------------
    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32, n_dense: int = 0,
                  n_batch: int = 0) -> BCSR:
        """A BCSR array holding the nonzero entries of the dense ``mat`` (see ``bcsr_fromdense``)."""
        return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch)

    @classmethod
    def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32", n_dense: int = 0,
               n_batch: int = 0, nse: int = 0) -> BCSR:
        """An all-zero BCSR array with ``nse`` padding entries (``sparse.empty(..., sparse_format='bcsr')`` in
        JAX)."""
        shape = canonical_shape(shape, "BCSR._empty")
        n_dense, n_batch = static_int(n_dense, "n_dense", "BCSR._empty"), static_int(n_batch, "n_batch", "BCSR._empty")
        nse = static_int(nse, "nse", "BCSR._empty")
        if len(shape) - n_batch - n_dense != 2:
            raise ValueError(f"BCSR._empty: must have 2 sparse dimensions: shape={shape} with n_batch={n_batch} and "
                             f"n_dense={n_dense} has {len(shape) - n_batch - n_dense}")
        index_dtype = _index_dtype(index_dtype, "BCSR._empty")
        batch, (rows, cols), dense = shape[:n_batch], shape[n_batch:n_batch + 2], shape[n_batch + 2:]
        data = jnp.zeros(batch + (nse,) + dense, dtype)
        indices = jnp.full(batch + (nse,), cols, index_dtype)
        indptr = jnp.zeros(batch + (rows + 1,), index_dtype)
        return cls((data, indices, indptr), shape=shape)

    @classmethod
    def from_bcoo(cls, arr: BCOO) -> BCSR:
        """The BCSR form of a BCOO array with two sparse dimensions (entries sorted first when needed)."""
        if not isinstance(arr, BCOO):
            raise TypeError(f"BCSR.from_bcoo: expected a BCOO array, got {type(arr).__name__}")
        if arr.n_sparse != 2:
            raise NotImplementedError(f"BCSR.from_bcoo requires n_sparse=2; got n_sparse={arr.n_sparse} (shape "
                                      f"{arr.shape}, n_batch={arr.n_batch}, n_dense={arr.n_dense})")
        if not arr.indices_sorted:
            arr = arr.sort_indices()
        indices, indptr = _from_bcoo_indices(arr.indices, arr.shape[arr.n_batch], arr.indices.dtype)
        return cls((arr.data, indices, indptr), shape=arr.shape)

    def to_bcoo(self) -> BCOO:
        """The same array in BCOO format (row indices from ``indptr``; padding rows out of range)."""
        return BCOO((self.data, _to_bcoo_indices(self.indices, self.indptr, self.n_batch)), shape=self.shape)

    @classmethod
    def from_scipy_sparse(cls, mat: Any, *, index_dtype: Any = None, n_dense: int = 0, n_batch: int = 0) -> BCSR:
        """A BCSR matrix from a 2-D ``scipy.sparse`` matrix or array (any format with ``.tocsr()``)."""
        if n_dense != 0 or n_batch != 0:
            raise NotImplementedError("BCSR.from_scipy_sparse: only n_batch=0 and n_dense=0 are supported (as in "
                                      "JAX); convert with BCSR.fromdense(mat.toarray(), n_batch=..., n_dense=...)")
        if not hasattr(mat, "tocsr"):
            raise TypeError(f"BCSR.from_scipy_sparse: expected a scipy.sparse matrix or array (with .tocsr()), got "
                            f"{type(mat).__name__}; for a dense array use BCSR.fromdense")
        if len(mat.shape) != 2:
            raise ValueError(f"BCSR.from_scipy_sparse requires a 2-D array; got shape {tuple(mat.shape)}")
        csr = mat.tocsr()
        index_dtype = np.dtype(index_dtype or np.int32)
        return cls((jnp.asarray(csr.data), jnp.asarray(csr.indices.astype(index_dtype)),
                    jnp.asarray(csr.indptr.astype(index_dtype))), shape=tuple(csr.shape))

    def todense(self) -> Any:
        """The dense array (duplicates summed, padding entries dropped)."""
        return bcsr_todense(self)

    def transpose(self, *args: Any, **kwargs: Any) -> BCSR:
        raise NotImplementedError("BCSR.transpose is not implemented (as in JAX); use .to_bcoo().transpose(...) or "
                                  ".todense().transpose(...)")

    def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> BCSR:
        """The same array with duplicate entries summed and sorted; explicit zeros dropped when ``remove_zeros``.

        ``nse``: the number of entries of the result (padded or truncated); by default the number needed, which
        needs concrete values: under ``jit``/``vmap``/``grad`` pass ``nse=``.
        """
        if remove_zeros:
            return bcsr_eliminate_zeros(self, nse=nse)
        return bcsr_sum_duplicates(self, nse=nse)

    # --- products ----------------------------------------------------------------------------------
    def __matmul__(self, other: Any) -> Any:
        return _matmul(self, other, sparse_left=True)

    def __rmatmul__(self, other: Any) -> Any:
        return _matmul(self, other, sparse_left=False)


def _as_bcoo_indices_shape(indices: Any) -> Any:
    """A stand-in with the shape of the BCOO indices of BCSR ``indices`` (for bcoo's ``_shape_for_leaves``), or
    ``indices`` itself when it is not an array (tree_map placeholders)."""
    try:
        return types.SimpleNamespace(shape=tuple(indices.shape) + (2,))
    except AttributeError:
        return indices


def _check_products(mat: BCSR, where: str) -> None:
    if mat.n_dense:
        raise NotImplementedError(f"{where}: a BCSR array with dense dimensions (n_dense={mat.n_dense}) is not "
                                  "supported in kiln; build it with n_dense=0, or use .todense()")


@one_program("sparse_left")
def _matmul(mat: BCSR, other: Any, sparse_left: bool) -> Any:
    """``mat @ other`` or ``other @ mat`` (NumPy's matmul, batch axes of ``mat`` broadcast), as a dot_general."""
    where = "BCSR @ x" if sparse_left else "x @ BCSR"
    if isinstance(other, JAXSparse):
        raise NotImplementedError(f"{where}: matmul between two sparse objects is not supported; densify one operand "
                                  "with .todense()")
    _check_products(mat, where)
    other = jnp.asarray(other)
    nb = mat.n_batch
    rows, cols = nb, nb + 1
    shared = other.ndim in (1, 2)  # one vector or matrix for every batch element
    stacked = nb and other.ndim == mat.ndim and tuple(other.shape[:nb]) == mat.shape[:nb]
    if not (shared or stacked):
        raise NotImplementedError(f"{where}: shapes {mat.shape} (n_batch={nb}) and {tuple(other.shape)}: x must be "
                                  "1-D, 2-D, or have the same batch axes as the BCSR array; map with kiln.vmap or "
                                  "use .todense()")
    batch = (tuple(range(nb)), tuple(range(nb))) if stacked else ((), ())
    x_axis = (0 if other.ndim == 1 else other.ndim - 2) if sparse_left else other.ndim - 1
    if other.shape[x_axis] != mat.shape[cols if sparse_left else rows]:
        shapes = (mat.shape, tuple(other.shape)) if sparse_left else (tuple(other.shape), mat.shape)
        raise ValueError(f"{where}: shapes {shapes[0]} and {shapes[1]} do not fit: the contracted axes have sizes "
                         f"{mat.shape[cols if sparse_left else rows]} (BCSR) and {other.shape[x_axis]} (x)")
    data, other = _promote(mat, other)
    if sparse_left:
        dims = ((cols,), (x_axis,)), batch
        return bcoo_dot_general(data, other, dimension_numbers=dims)
    dims = ((x_axis,), (rows,)), batch
    out = bcoo_dot_general(other, data, dimension_numbers=dims)
    if other.ndim == 2 and not stacked and nb:  # (k, batch..., n) -> (batch..., k, n), NumPy's matmul order
        out = jnp.moveaxis(out, 0, nb)
    return out


def _promote(mat: BCSR, other: Any) -> tuple[BCOO, Any]:
    dtype = jnp.result_type(mat.data, other)
    coo = mat.to_bcoo()
    return BCOO((coo.data.astype(dtype), coo.indices), shape=coo.shape), other.astype(dtype)


# --- fromdense / todense / extract ---------------------------------------------------------------------

def bcsr_fromdense(mat: Any, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype: Any = np.int32) -> BCSR:
    """A BCSR array of the nonzero entries of ``mat`` (as ``jax.experimental.sparse.bcsr_fromdense``).

    ``mat`` has ``n_batch`` leading batch axes, two sparse axes, then ``n_dense`` dense axes. ``nse``: the number
    of stored entries per batch element; by default the largest number of nonzeros, which needs a concrete ``mat``:
    under ``jit``/``vmap``/``grad`` pass ``nse=``.
    """
    nse = stored_count_now(mat, nse, n_batch, n_dense)
    return _bcsr_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)


@one_program("nse", "n_batch", "n_dense", "index_dtype", pytrees=(), nse_needed=True)
def _bcsr_fromdense(mat: Any, *, nse: int | None, n_batch: int, n_dense: int, index_dtype: Any) -> BCSR:
    mat = jnp.asarray(mat)
    n_batch = static_int(n_batch, "n_batch", "bcsr_fromdense")
    n_dense = static_int(n_dense, "n_dense", "bcsr_fromdense")
    if mat.ndim - n_batch - n_dense != 2:
        raise ValueError(f"bcsr_fromdense: must have 2 sparse dimensions: an input of shape {tuple(mat.shape)} with "
                         f"n_batch={n_batch} and n_dense={n_dense} has {mat.ndim - n_batch - n_dense}")
    if nse is None and isinstance(mat, Tracer):
        raise ConcretizationTypeError(
            "bcsr_fromdense: the number of stored elements (nse) depends on the values of a traced array (under jit, "
            "vmap or grad). In order for BCSR.fromdense() to be used in traced/compiled code, you must pass a "
            "concrete value to the nse (number of stored elements) argument, e.g. BCSR.fromdense(m, nse=100)")
    if nse is not None:
        nse = static_int(nse, "nse", "bcsr_fromdense")
    index_dtype = _index_dtype(index_dtype, "bcsr_fromdense")
    coo = bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)
    indices, indptr = _from_bcoo_indices(coo.indices, mat.shape[n_batch], index_dtype)
    return BCSR((coo.data, indices, indptr), shape=tuple(mat.shape))


@one_program()
def bcsr_todense(mat: BCSR) -> Any:
    """The dense array of ``mat`` (duplicates summed, padding entries dropped)."""
    if not isinstance(mat, BCSR):
        raise TypeError(f"bcsr_todense: expected a BCSR array, got {type(mat).__name__}")
    return mat.to_bcoo().todense()


def bcsr_extract(indices: Any, indptr: Any, mat: Any) -> Any:
    """The values of the dense ``mat`` at the BCSR positions ``(indices, indptr)``: a ``data`` array of shape
    ``batch + (nse,) + dense`` (padding positions read 0), as ``jax.experimental.sparse.bcsr_extract``."""
    indices, indptr, mat = jnp.asarray(indices), jnp.asarray(indptr), jnp.asarray(mat)
    n_batch, _, _ = _validate_indices(tuple(indices.shape), tuple(indptr.shape), tuple(mat.shape), "bcsr_extract")

    def one(ind, m):
        return m.at[ind[:, 0], ind[:, 1]].get(mode="fill", fill_value=0)
    return _nest(one, n_batch)(_to_bcoo_indices(indices, indptr, n_batch), mat)


# --- products ------------------------------------------------------------------------------------------

def bcsr_dot_general(lhs: Any, rhs: Any, *, dimension_numbers: Any, precision: Any = None,
                     preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """``lax.dot_general`` of a BCSR ``lhs`` and a dense ``rhs`` (as ``jax.experimental.sparse.bcsr_dot_general``);
    two dense operands go to ``lax.dot_general``. The result is dense."""
    return _bcsr_dot_general(lhs, rhs, dimension_numbers=frozen_dimension_numbers(dimension_numbers),
                             precision=precision, preferred_element_type=preferred_element_type,
                             out_sharding=out_sharding)


@one_program("dimension_numbers", "precision", "preferred_element_type", "out_sharding", pytrees=("lhs",))
def _bcsr_dot_general(lhs: Any, rhs: Any, *, dimension_numbers: Any, precision: Any, preferred_element_type: Any,
                      out_sharding: Any) -> Any:
    del out_sharding
    if not isinstance(rhs, JAXSparse) and not isinstance(lhs, JAXSparse):
        return lax.dot_general(lhs, rhs, dimension_numbers, precision=precision,
                               preferred_element_type=preferred_element_type)
    if not isinstance(lhs, BCSR) or isinstance(rhs, JAXSparse):
        raise NotImplementedError(f"bcsr_dot_general currently implemented for BCSR lhs and ndarray rhs; got "
                                  f"{type(lhs).__name__} and {type(rhs).__name__}")
    _check_products(lhs, "bcsr_dot_general")
    try:
        (lc, _), (lb, _) = dimension_numbers
        lc, lb = (tuple(operator.index(d) % lhs.ndim for d in ds) for ds in (lc, lb))
    except (TypeError, ValueError):
        raise TypeError(f"bcsr_dot_general: dimension_numbers must be ((lhs_contracting, rhs_contracting), "
                        f"(lhs_batch, rhs_batch)), got {dimension_numbers!r}") from None
    if lb and max(lb) >= lhs.n_batch:
        raise NotImplementedError(f"bcsr_dot_general batch dimensions must be among the batch dimensions in the "
                                  f"sparse representation; got lhs_batch={lb}, n_batch={lhs.n_batch}")
    return bcoo_dot_general(lhs.to_bcoo(), rhs, dimension_numbers=dimension_numbers, precision=precision,
                            preferred_element_type=preferred_element_type)


# --- duplicates ----------------------------------------------------------------------------------------

def bcsr_sum_duplicates(mat: BCSR, nse: int | None = None) -> BCSR:
    """``mat`` with duplicate entries summed and sorted (as JAX's ``bcsr_sum_duplicates``; through BCOO).

    ``nse``: the number of entries of the result; by default the number needed, which needs a concrete ``mat``.
    """
    if nse is None and isinstance(mat, BCSR) and eager_now(mat):
        nse = int(_bcsr_distinct_count(mat, drop_zeros=False))
    return _bcsr_sum_duplicates(mat, nse=nse)


@one_program("nse", nse_needed=True)
def _bcsr_sum_duplicates(mat: BCSR, *, nse: int | None) -> BCSR:
    _expect_bcsr(mat, "bcsr_sum_duplicates")
    return BCSR.from_bcoo(bcoo_sum_duplicates(mat.to_bcoo(), nse=nse))


@one_program("drop_zeros")
def _bcsr_distinct_count(mat: BCSR, *, drop_zeros: bool) -> Any:
    """The ``nse`` that ``sum_duplicates`` needs (see bcoo's ``_distinct_count``)."""
    return _distinct_count(mat.to_bcoo(), drop_zeros=drop_zeros)


def bcsr_eliminate_zeros(mat: BCSR, nse: int | None = None) -> BCSR:
    """``mat`` without explicit zeros, duplicates summed (``BCSR.sum_duplicates(remove_zeros=True)``)."""
    if nse is None and isinstance(mat, BCSR) and eager_now(mat):
        nse = int(_bcsr_distinct_count(mat, drop_zeros=True))
    return _bcsr_eliminate_zeros(mat, nse=nse)


@one_program("nse", nse_needed=True)
def _bcsr_eliminate_zeros(mat: BCSR, *, nse: int | None) -> BCSR:
    _expect_bcsr(mat, "bcsr_eliminate_zeros")
    return BCSR.from_bcoo(bcoo_eliminate_zeros(mat.to_bcoo(), nse=nse))


# --- structure (through BCOO, as JAX's) ---------------------------------------------------------------------

def bcsr_broadcast_in_dim(mat: BCSR, *, shape: Sequence[int], broadcast_dimensions: Sequence[int],
                          sharding: Any = None) -> BCSR:
    """``mat`` broadcast to ``shape`` (as ``jax.lax.broadcast_in_dim``; see ``bcoo_broadcast_in_dim``): the
    result must still have two sparse dimensions."""
    _expect_bcsr(mat, "bcsr_broadcast_in_dim")
    return BCSR.from_bcoo(bcoo_broadcast_in_dim(mat.to_bcoo(), shape=shape, broadcast_dimensions=broadcast_dimensions,
                                                sharding=sharding))


def bcsr_concatenate(operands: Sequence[BCSR], *, dimension: int) -> BCSR:
    """The BCSR arrays ``operands`` joined along ``dimension`` (as ``jax.lax.concatenate``; see
    ``bcoo_concatenate``)."""
    for op in operands:
        _expect_bcsr(op, "bcsr_concatenate")
    return BCSR.from_bcoo(bcoo_concatenate([op.to_bcoo() for op in operands], dimension=dimension))


def _expect_bcsr(mat: Any, where: str) -> None:
    if not isinstance(mat, BCSR):
        raise TypeError(f"{where}: expected a BCSR array, got {type(mat).__name__}")
