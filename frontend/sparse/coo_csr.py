"""JAX's unbatched 2-D sparse matrices ``COO``, ``CSR`` and ``CSC`` (``jax.experimental.sparse.coo``/``csr``), built
from kiln.numpy ops.

- ``COO((data, row, col), shape=(m, n))``: entry ``i`` is ``data[i]`` at ``(row[i], col[i])``.
- ``CSR((data, indices, indptr), shape=(m, n))``: row ``r`` holds the entries ``indptr[r]:indptr[r + 1]``,
  ``indices`` their columns (SciPy's ``csr_matrix`` layout).
- ``CSC((data, indices, indptr), shape=(m, n))``: the CSR layout of the transpose (SciPy's ``csc_matrix``);
  ``CSR.T`` is a ``CSC`` with the same buffers and back.

``nse = data.size``; duplicates are summed. ``fromdense`` with ``nse`` above the number of nonzeros pads as JAX
does: data 0, COO at index ``(0, 0)``, CSR/CSC past ``indptr[-1]`` (column/row 0). Products are a gather of the
dense operand, a multiply by ``data`` and a scatter-add, so they run under ``kiln.jit`` and ``kiln.vmap`` and
differentiate w.r.t. ``data`` and the dense operand.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import numpy as jnp
from ..core import dtypes
from ..core.errors import ConcretizationTypeError
from ..core.tracing import Tracer
from ..core.tree_util import register_pytree_node_class
from ..lax import sort as lax_sort
from .base import JAXSparse, canonical_shape, static_int

__all__ = ["COO", "CSC", "CSR", "coo_fromdense", "coo_matmat", "coo_matvec", "coo_todense", "csr_fromdense",
           "csr_matmat", "csr_matvec", "csr_todense"]


# --- shared helpers ------------------------------------------------------------------------------------

def _buffers(args: Any, where: str, names: str) -> tuple[Any, Any, Any]:
    if not isinstance(args, (tuple, list)) or len(args) != 3:
        raise TypeError(f"{where}: the first argument must be the triple {names}, got {type(args).__name__}; "
                        f"write {where}({names}, shape=shape)")
    return tuple(jnp.asarray(a) for a in args)


def _matrix_shape(shape: Any, where: str) -> tuple[int, int]:
    shape = canonical_shape(shape, where)
    if len(shape) != 2:
        raise ValueError(f"{where} must have ndim=2; got shape={shape}. For other ranks use BCOO (or BCSR for "
                         "batched matrices)")
    return shape


def _check_entries(where: str, data: Any, index_names: Sequence[str], *indices: Any) -> None:
    """``data`` and every index array are 1-D of one length (nse); the index arrays are integers."""
    shapes = [tuple(data.shape)] + [tuple(i.shape) for i in indices]
    if any(len(s) != 1 for s in shapes) or len(set(shapes)) != 1:
        listed = ", ".join(f"{n} {s}" for n, s in zip(("data",) + tuple(index_names), shapes))
        raise ValueError(f"{where}: data and {' and '.join(index_names)} must be 1-D arrays of one length (nse); "
                         f"got shapes {listed}")
    for name, idx in zip(index_names, indices):
        if not dtypes.is_int(idx.dtype):
            raise TypeError(f"{where}: {name} must be integers, got {idx.dtype}")


def _check_indptr(where: str, indptr: Any, length: int, axis_name: str) -> None:
    if indptr.ndim != 1 or indptr.shape[0] != length + 1:
        raise ValueError(f"{where}: indptr must have shape ({length + 1},) (the number of {axis_name} plus 1); got "
                         f"{tuple(indptr.shape)}")
    if not dtypes.is_int(indptr.dtype):
        raise TypeError(f"{where}: indptr must be integers, got {indptr.dtype}")


def _dense_matrix(mat: Any, where: str) -> Any:
    mat = jnp.asarray(mat)
    if mat.ndim != 2:
        raise ValueError(f"{where}: expected a 2-D array, got shape {tuple(mat.shape)}; for other ranks use "
                         "BCOO.fromdense (or BCSR.fromdense with n_batch/n_dense)")
    return mat


def _nse(mat: Any, nse: Any, where: str) -> int:
    """The static number of stored elements: ``nse``, or the number of nonzeros of a concrete ``mat``."""
    if nse is None:
        if isinstance(mat, Tracer):
            raise ConcretizationTypeError(
                f"{where}: the number of stored elements (nse) depends on the values of a traced array (under jit, "
                f"vmap or grad). In order for {where} to be used in traced/compiled code, pass a concrete value to "
                "the nse (number of stored elements) argument")
        return int(jnp.sum(mat != 0))
    return static_int(nse, "nse", where)


def _index_dtype(index_dtype: Any, where: str) -> np.dtype:
    out = np.dtype(index_dtype)
    if not dtypes.is_int(out):
        raise TypeError(f"{where}: index_dtype must be an integer dtype, got {out}")
    return out


def _csr_rows(indices: Any, indptr: Any) -> Any:
    """The row of every stored entry of a CSR matrix: entry ``p`` lies in row ``r`` when
    ``indptr[r] <= p < indptr[r + 1]``; entries at or past ``indptr[-1]`` (padding) get row ``len(indptr) - 1``,
    out of range, so that todense and products drop them. A count of row starts per position, summed."""
    if indices.shape[0] == 0:  # no entries (kiln's scatter refuses an index into an empty axis, even to drop it)
        return indices
    starts = jnp.zeros(indices.shape, indices.dtype).at[indptr].add(jnp.ones((), indices.dtype), mode="drop")
    return (jnp.cumsum(starts) - 1).astype(indices.dtype)


def _indptr_from_rows(row: Any, n_rows: int, dtype: Any) -> Any:
    """The indptr of entries sorted by ``row``; rows out of range (padding) are not counted."""
    counts = jnp.zeros(n_rows, dtype).at[row].add(jnp.ones((), dtype), mode="drop")
    return jnp.concatenate([jnp.zeros(1, dtype), jnp.cumsum(counts).astype(dtype)])


def _diagonal(N: int, M: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The (row, col) positions of diagonal ``k`` of an ``N x M`` matrix (static, from the shape only)."""
    size = max(min(N, M - k) if k > 0 else min(N + k, M), 0)
    i = np.arange(size)
    return i + max(-k, 0), i + max(k, 0)


def _coo_product(data: Any, row: Any, col: Any, x: Any, n_out: int) -> Any:
    """``A @ x`` for the COO entries ``(data, row, col)`` of ``A`` with ``n_out`` rows and a 1-D or 2-D ``x``:
    gather ``x``'s rows at ``col``, scale by ``data``, scatter-add into rows ``row``. An entry out of range
    (padding) reads 0 and adds nothing, as in todense."""
    gathered = x.at[col].get(mode="fill", fill_value=0)
    prod = data.reshape((data.shape[0],) + (1,) * (x.ndim - 1)) * gathered
    return jnp.zeros((n_out,) + tuple(x.shape[1:]), prod.dtype).at[row].add(prod, mode="drop")


def _promote(data: Any, x: Any) -> tuple[Any, Any]:
    dtype = jnp.result_type(data, x)
    return data.astype(dtype), x.astype(dtype)


def _check_operand(x: Any, ndim: int, size: int, where: str, what: str) -> Any:
    x = jnp.asarray(x)
    if x.ndim != ndim:
        raise ValueError(f"{where}: {what} must be {ndim}-D, got shape {tuple(x.shape)}")
    if x.shape[0] != size:
        raise ValueError(f"{where}: {what} of shape {tuple(x.shape)} does not fit the matrix: its first axis must "
                         f"have size {size}")
    return x


class _Matrix(JAXSparse):
    """What COO, CSR and CSC share: 2-D, ``nse = data.size``, and ``@`` with dense vectors and matrices through
    ``_product(x, transpose)`` (``A @ x``, or ``A.T @ x`` when ``transpose``)."""

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def nse(self) -> int:
        return self.data.size

    def _product(self, x: Any, transpose: bool) -> Any:
        raise NotImplementedError

    def __matmul__(self, other: Any) -> Any:
        name = type(self).__name__
        if isinstance(other, JAXSparse):
            raise NotImplementedError(f"{name} @ x: matmul between two sparse objects is not supported; densify one "
                                      "operand with .todense()")
        other = jnp.asarray(other)
        if other.ndim not in (1, 2):
            raise NotImplementedError(f"{name} @ x: matmul with object of shape {tuple(other.shape)}: x must be 1-D "
                                      "or 2-D; map over the other axes with kiln.vmap, or use .todense()")
        if other.shape[0] != self.shape[1]:
            raise ValueError(f"{name} @ x: shapes {self.shape} and {tuple(other.shape)} do not fit: x's first axis "
                             f"must have size {self.shape[1]}")
        data, other = _promote(self.data, other)
        return self._with_data(data)._product(other, transpose=False)

    def __rmatmul__(self, other: Any) -> Any:
        # x @ A = (A.T @ x.T).T: JAX's COO/CSR/CSC have no __rmatmul__; kiln adds it since it costs nothing.
        name = type(self).__name__
        if isinstance(other, JAXSparse):
            return NotImplemented
        other = jnp.asarray(other)
        if other.ndim not in (1, 2) or other.shape[-1] != self.shape[0]:
            raise ValueError(f"x @ {name}: shapes {tuple(other.shape)} and {self.shape} do not fit: x must be 1-D "
                             f"or 2-D with last axis of size {self.shape[0]}")
        data, other = _promote(self.data, other)
        out = self._with_data(data)._product(other.T, transpose=True)
        return out.T

    def _with_data(self, data: Any) -> _Matrix:
        children, aux = self.tree_flatten()
        return type(self).tree_unflatten(aux, (data,) + tuple(children[1:]))


# --- COO -----------------------------------------------------------------------------------------------

@register_pytree_node_class
class COO(_Matrix):
    """A 2-D sparse matrix in coordinate format (as ``jax.experimental.sparse.COO``).

    ``COO((data, row, col), shape=(m, n))``; a pytree (leaves ``data``, ``row``, ``col``). Prefer BCOO, which has
    more operations; COO exists for JAX compatibility.

    >>> M = COO.fromdense(jnp.array([[0., 2.], [1., 0.]]))
    >>> M @ jnp.ones(2)
    Array([2., 1.], dtype=float32)
    """

    def __init__(self, args: tuple, *, shape: Sequence[int], rows_sorted: bool = False, cols_sorted: bool = False):
        self.data, self.row, self.col = _buffers(args, "COO", "(data, row, col)")
        self._rows_sorted, self._cols_sorted = bool(rows_sorted), bool(cols_sorted)
        super().__init__(args, shape=_matrix_shape(shape, "COO"))
        _check_entries("COO", self.data, ("row", "col"), self.row, self.col)

    @property
    def _info(self) -> dict:
        return {"shape": self.shape, "rows_sorted": self._rows_sorted, "cols_sorted": self._cols_sorted}

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> COO:
        """The COO matrix of the nonzero entries of the 2-D ``mat`` (see ``coo_fromdense``)."""
        return coo_fromdense(mat, nse=nse, index_dtype=index_dtype)

    @classmethod
    def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32") -> COO:
        """An all-zero COO matrix with no stored entries (``sparse.empty(..., sparse_format='coo')`` in JAX)."""
        shape = _matrix_shape(shape, "COO")
        index = jnp.zeros(0, _index_dtype(index_dtype, "COO._empty"))
        return cls((jnp.zeros(0, dtype), index, index), shape=shape, rows_sorted=True, cols_sorted=True)

    @classmethod
    def _eye(cls, N: int, M: int, k: int, *, dtype: Any = None, index_dtype: Any = "int32") -> COO:
        """Ones on diagonal ``k`` of an ``N x M`` matrix (``sparse.eye(..., sparse_format='coo')`` in JAX)."""
        row, col = _diagonal(N, M, k)
        index_dtype = _index_dtype(index_dtype, "COO._eye")
        return cls((jnp.ones(row.size, dtype), jnp.asarray(row.astype(index_dtype)),
                    jnp.asarray(col.astype(index_dtype))), shape=(N, M), rows_sorted=True, cols_sorted=True)

    def _sort_indices(self) -> COO:
        """The same matrix with its entries sorted by row, then column (``self`` when rows are sorted already)."""
        if self._rows_sorted:
            return self
        row, col, data = lax_sort((self.row, self.col, self.data), num_keys=2)
        return COO((data, row, col), shape=self.shape, rows_sorted=True)

    def todense(self) -> Any:
        return coo_todense(self)

    def transpose(self, axes: Any = None) -> COO:
        if axes is not None:
            raise NotImplementedError("COO.transpose: the axes argument is not supported (as in JAX); a COO matrix "
                                      "is 2-D, use .T or .transpose()")
        return COO((self.data, self.col, self.row), shape=self.shape[::-1], rows_sorted=self._cols_sorted,
                   cols_sorted=self._rows_sorted)

    def tree_flatten(self):
        return (self.data, self.row, self.col), self._info

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        obj = object.__new__(cls)
        obj.data, obj.row, obj.col = children
        obj.shape, obj._rows_sorted, obj._cols_sorted = (aux_data["shape"], aux_data["rows_sorted"],
                                                         aux_data["cols_sorted"])
        return obj

    def _product(self, x: Any, transpose: bool) -> Any:
        row, col = (self.col, self.row) if transpose else (self.row, self.col)
        return _coo_product(self.data, row, col, x, self.shape[1 if transpose else 0])


def coo_fromdense(mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> COO:
    """The COO matrix of the nonzero entries of the 2-D ``mat``, in row-major order (``rows_sorted``).

    ``nse``: the number of stored entries; by default the number of nonzeros, which needs a concrete ``mat``: under
    ``jit``/``vmap``/``grad`` pass ``nse=``. Extra entries are padding (data 0 at index (0, 0)); with fewer, the
    last nonzeros are dropped.
    """
    mat = _dense_matrix(mat, "coo_fromdense")
    nse = _nse(mat, nse, "coo_fromdense")
    index_dtype = _index_dtype(index_dtype, "coo_fromdense")
    row, col = jnp.nonzero(mat, size=nse)
    stored = jnp.arange(nse) < jnp.sum(mat != 0)
    data = jnp.where(stored, mat[row, col], jnp.zeros((), mat.dtype))
    return COO((data, row.astype(index_dtype), col.astype(index_dtype)), shape=tuple(mat.shape), rows_sorted=True)


def coo_todense(mat: COO) -> Any:
    """The dense matrix of ``mat`` (duplicates summed, out-of-range entries dropped)."""
    if not isinstance(mat, COO):
        raise TypeError(f"coo_todense: expected a COO matrix, got {type(mat).__name__}")
    return jnp.zeros(mat.shape, mat.dtype).at[mat.row, mat.col].add(mat.data, mode="drop")


def coo_matvec(mat: COO, v: Any, transpose: bool = False) -> Any:
    """``mat @ v`` (or ``mat.T @ v`` when ``transpose``) for a 1-D ``v``; dtypes promote to a common one."""
    return _coo_call(mat, v, transpose, 1, "coo_matvec", "v")


def coo_matmat(mat: COO, B: Any, *, transpose: bool = False) -> Any:
    """``mat @ B`` (or ``mat.T @ B`` when ``transpose``) for a 2-D ``B``; dtypes promote to a common one."""
    return _coo_call(mat, B, transpose, 2, "coo_matmat", "B")


def _coo_call(mat: Any, x: Any, transpose: bool, ndim: int, where: str, name: str) -> Any:
    if not isinstance(mat, COO):
        raise TypeError(f"{where}: expected a COO matrix first, got {type(mat).__name__}")
    return _checked_product(mat, x, transpose, ndim, where, name)


def _checked_product(mat: _Matrix, x: Any, transpose: bool, ndim: int, where: str, name: str) -> Any:
    size = mat.shape[0] if transpose else mat.shape[1]
    what = f"{name} (transpose=True)" if transpose else name
    x = _check_operand(x, ndim, size, where, what)
    data, x = _promote(mat.data, x)
    return mat._with_data(data)._product(x, bool(transpose))


# --- CSR and CSC ---------------------------------------------------------------------------------------

class _Compressed(_Matrix):
    """What CSR and CSC share: the buffers ``(data, indices, indptr)``, ``indptr`` running over axis ``_PTR_AXIS``
    of the shape, and the pytree (aux data ``{"shape": shape}``, as JAX)."""
    _PTR_AXIS = 0

    def __init__(self, args: tuple, *, shape: Sequence[int]):
        name = type(self).__name__
        self.data, self.indices, self.indptr = _buffers(args, name, "(data, indices, indptr)")
        super().__init__(args, shape=_matrix_shape(shape, name))
        _check_entries(name, self.data, ("indices",), self.indices)
        _check_indptr(name, self.indptr, self.shape[self._PTR_AXIS], ("rows", "columns")[self._PTR_AXIS])

    def tree_flatten(self):
        return (self.data, self.indices, self.indptr), {"shape": self.shape}

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        obj.shape = aux_data["shape"]
        return obj


@register_pytree_node_class
class CSR(_Compressed):
    """A 2-D sparse matrix in compressed-sparse-row format (as ``jax.experimental.sparse.CSR``).

    ``CSR((data, indices, indptr), shape=(m, n))``, SciPy's ``csr_matrix`` layout; a pytree (leaves ``data``,
    ``indices``, ``indptr``). ``.T`` is the transposed matrix as a :class:`CSC` with the same buffers.
    """
    _PTR_AXIS = 0

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> CSR:
        """The CSR matrix of the nonzero entries of the 2-D ``mat`` (see ``csr_fromdense``)."""
        return csr_fromdense(mat, nse=nse, index_dtype=index_dtype)

    @classmethod
    def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32") -> CSR:
        """An all-zero CSR matrix with no stored entries (``sparse.empty(..., sparse_format='csr')`` in JAX)."""
        shape = _matrix_shape(shape, "CSR")
        index_dtype = _index_dtype(index_dtype, "CSR._empty")
        return cls((jnp.zeros(0, dtype), jnp.zeros(0, index_dtype), jnp.zeros(shape[0] + 1, index_dtype)),
                   shape=shape)

    @classmethod
    def _eye(cls, N: int, M: int, k: int, *, dtype: Any = None, index_dtype: Any = "int32") -> CSR:
        """Ones on diagonal ``k`` of an ``N x M`` matrix (``sparse.eye(..., sparse_format='csr')`` in JAX)."""
        row, col = _diagonal(N, M, k)
        index_dtype = _index_dtype(index_dtype, "CSR._eye")
        indptr = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=N))]).astype(index_dtype)
        return cls((jnp.ones(row.size, dtype), jnp.asarray(col.astype(index_dtype)), jnp.asarray(indptr)),
                   shape=(N, M))

    def todense(self) -> Any:
        return csr_todense(self)

    def transpose(self, axes: Any = None) -> CSC:
        _no_axes(axes, "CSR")
        return CSC((self.data, self.indices, self.indptr), shape=self.shape[::-1])

    def _product(self, x: Any, transpose: bool) -> Any:
        row = _csr_rows(self.indices, self.indptr)
        row, col = (self.indices, row) if transpose else (row, self.indices)
        return _coo_product(self.data, row, col, x, self.shape[1 if transpose else 0])


@register_pytree_node_class
class CSC(_Compressed):
    """A 2-D sparse matrix in compressed-sparse-column format (as ``jax.experimental.sparse.CSC``).

    ``CSC((data, indices, indptr), shape=(m, n))``, SciPy's ``csc_matrix`` layout: column ``c`` holds the entries
    ``indptr[c]:indptr[c + 1]``, ``indices`` their rows. ``.T`` is a :class:`CSR` with the same buffers.
    """
    _PTR_AXIS = 1

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> CSC:
        """The CSC matrix of the nonzero entries of the 2-D ``mat`` (the CSR matrix of ``mat.T``, transposed)."""
        mat = _dense_matrix(mat, "CSC.fromdense")
        return csr_fromdense(mat.T, nse=nse, index_dtype=index_dtype).T

    @classmethod
    def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32") -> CSC:
        """An all-zero CSC matrix with no stored entries (``sparse.empty(..., sparse_format='csc')`` in JAX)."""
        return CSR._empty(_matrix_shape(shape, "CSC")[::-1], dtype=dtype, index_dtype=index_dtype).T

    @classmethod
    def _eye(cls, N: int, M: int, k: int, *, dtype: Any = None, index_dtype: Any = "int32") -> CSC:
        """Ones on diagonal ``k`` of an ``N x M`` matrix (``sparse.eye(..., sparse_format='csc')`` in JAX)."""
        return CSR._eye(M, N, -k, dtype=dtype, index_dtype=index_dtype).T

    def todense(self) -> Any:
        return csr_todense(self.T).T

    def transpose(self, axes: Any = None) -> CSR:
        _no_axes(axes, "CSC")
        return CSR((self.data, self.indices, self.indptr), shape=self.shape[::-1])

    def _product(self, x: Any, transpose: bool) -> Any:
        return self.T._product(x, not transpose)


def _no_axes(axes: Any, name: str) -> None:
    if axes is not None:
        raise NotImplementedError(f"{name}.transpose: the axes argument is not supported (as in JAX); a {name} "
                                  "matrix is 2-D, use .T or .transpose()")


def csr_fromdense(mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32) -> CSR:
    """The CSR matrix of the nonzero entries of the 2-D ``mat`` (SciPy's ``csr_matrix(mat)`` layout).

    ``nse``: the number of stored entries; by default the number of nonzeros, which needs a concrete ``mat``: under
    ``jit``/``vmap``/``grad`` pass ``nse=``. Extra entries are padding past ``indptr[-1]`` (data 0, column 0); with
    fewer, the last nonzeros are dropped.
    """
    mat = _dense_matrix(mat, "csr_fromdense")
    nse = _nse(mat, nse, "csr_fromdense")
    index_dtype = _index_dtype(index_dtype, "csr_fromdense")
    row, col = jnp.nonzero(mat, size=nse)
    stored = jnp.arange(nse) < jnp.sum(mat != 0)
    data = jnp.where(stored, mat[row, col], jnp.zeros((), mat.dtype))
    row = jnp.where(stored, row, mat.shape[0])  # padding rows are out of range: not counted in indptr
    indptr = _indptr_from_rows(row, mat.shape[0], index_dtype)
    return CSR((data, col.astype(index_dtype), indptr), shape=tuple(mat.shape))


def csr_todense(mat: CSR) -> Any:
    """The dense matrix of ``mat`` (duplicates summed, padding past ``indptr[-1]`` dropped)."""
    if not isinstance(mat, CSR):
        raise TypeError(f"csr_todense: expected a CSR matrix, got {type(mat).__name__}"
                        + ("; for a CSC matrix use .todense()" if isinstance(mat, CSC) else ""))
    row = _csr_rows(mat.indices, mat.indptr)
    return jnp.zeros(mat.shape, mat.dtype).at[row, mat.indices].add(mat.data, mode="drop")


def csr_matvec(mat: CSR, v: Any, transpose: bool = False) -> Any:
    """``mat @ v`` (or ``mat.T @ v`` when ``transpose``) for a 1-D ``v``; dtypes promote to a common one."""
    return _csr_call(mat, v, transpose, 1, "csr_matvec", "v")


def csr_matmat(mat: CSR, B: Any, *, transpose: bool = False) -> Any:
    """``mat @ B`` (or ``mat.T @ B`` when ``transpose``) for a 2-D ``B``; dtypes promote to a common one."""
    return _csr_call(mat, B, transpose, 2, "csr_matmat", "B")


def _csr_call(mat: Any, x: Any, transpose: bool, ndim: int, where: str, name: str) -> Any:
    if not isinstance(mat, CSR):
        raise TypeError(f"{where}: expected a CSR matrix first, got {type(mat).__name__}")
    return _checked_product(mat, x, transpose, ndim, where, name)
