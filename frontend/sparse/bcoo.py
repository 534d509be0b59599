"""``kiln.experimental.sparse``'s BCOO arrays (JAX's batched-COO format), built from kiln.numpy ops.

A BCOO array of shape ``batch + sparse + dense`` stores ``nse`` entries: ``data`` of shape
``batch + (nse,) + dense`` and ``indices`` of shape ``batch + (nse, n_sparse)``, the position of each entry
in the sparse dimensions. Duplicate indices are summed; an index out of range (``fromdense`` pads with
``shape`` itself, and ``data`` with 0) marks a padding entry that ``todense`` and products drop.

Every operation is made of kiln.numpy gathers, scatter-adds and elementwise ops, so it runs eagerly, under
``kiln.jit`` and ``kiln.vmap``, and differentiates through kiln's autodiff (w.r.t. ``data`` and the dense
operand; ``indices`` are integers). Products with dense arrays need ``n_dense == 0`` and map over batch axes with
``kiln.vmap``; ``fromdense``, ``todense``, ``sum``, ``transpose`` and elementwise products support every layout.
"""
from __future__ import annotations

import functools
import math
import operator
from typing import Any, Sequence

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..batching.api import vmap
from ..core import dtypes
from ..core.call import bind_call
from ..core.config import config
from ..core.errors import ConcretizationTypeError
from ..core.ir import IR, ClosedIR, Var
from ..core.tracing import Tracer, active_traces
from ..core.tree_util import register_pytree_node_class, tree_leaves
from ..driver.array import Array
from ..driver.eager_jit import eager_jit
from .base import JAXSparse, mapped_nse_axis_error, static_int

__all__ = ["BCOO", "bcoo_dot_general", "bcoo_eliminate_zeros", "bcoo_fromdense", "bcoo_multiply_dense",
           "bcoo_reduce_sum", "bcoo_sort_indices", "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose", "empty",
           "eye", "fromdense", "todense"]

_FORMATS = ("bcoo", "bcsr", "coo", "csr", "csc")


def one_program(*static_argnames: str, pytrees: tuple[str, ...] = ("mat",), dense_ok: bool = False,
                nse_needed: bool = False) -> Any:
    """Decorator for a sparse operation: called eagerly, one compiled program per signature (see ``eager_jit``), its
    sparse arguments (``pytrees``, its leading positional parameters) taken as pytrees of their leaves; inside a
    trace, inlined. ``static_argnames`` must be hashable (public wrappers pass lists as tuples, see :func:`frozen`).

    A call runs op by op where a ``pytrees`` argument is no sparse array (unless ``dense_ok``): the implementation's
    error names its type, which a traced stand-in would not have. With ``nse_needed``, a call whose ``nse=`` is
    None runs op by op too: its ``nse`` depends on the values, so public wrappers compute it first (with another
    program, see :func:`eager_now`), as JAX computes it concretely before binding its primitive."""
    def wrap(fun: Any) -> Any:
        where = f"kiln.experimental.sparse.{fun.__name__.lstrip('_')}"
        n = len(pytrees)

        def op_by_op(args: tuple, kwargs: dict) -> bool:
            if nse_needed and kwargs.get("nse") is None:
                return True
            if dense_ok:
                return False
            given = [*args[:n], *(kwargs[k] for k in pytrees if k in kwargs)]
            return not all(isinstance(v, JAXSparse) for v in given)
        return eager_jit(*static_argnames, pytrees=pytrees, where=where, op_by_op=op_by_op)(fun)
    return wrap


def frozen(value: Any) -> Any:
    """``value`` with its lists (nested in tuples or lists too) as tuples, so that a static option hashes."""
    if type(value) is list or type(value) is tuple:
        return tuple(frozen(v) for v in value)
    return value


def eager_now(*values: Any) -> bool:
    """Whether an operation on ``values`` runs eagerly on concrete arrays now (outside any trace, not op by op
    for ``disable_jit``/``debug_nans``): then a value-dependent static option (``nse``) is computed first."""
    if active_traces() or config._python_dispatch:
        return False
    return all(type(leaf) is Array for v in values for leaf in tree_leaves(v))


def _index(value: Any, what: str, where: str) -> int:
    """``value`` as a static non-negative Python int; a traced value gets JAX's ConcretizationTypeError."""
    hint = (" In order for BCOO.fromdense() to be used in traced/compiled code, pass a concrete Python int as nse "
            "(number of stored elements)") if what == "nse" else ""
    return static_int(value, what, where, hint)


def _validate(data_shape: tuple, indices_shape: tuple, shape: tuple) -> tuple[int, int, int, int]:
    """(n_batch, n_sparse, n_dense, nse) of a BCOO with these shapes, or a ValueError saying what is wrong."""
    if len(indices_shape) < 2:
        raise ValueError(f"BCOO: indices must have shape batch + (nse, n_sparse), at least 2-D; got indices of shape "
                         f"{indices_shape} for shape={shape}")
    n_batch = len(indices_shape) - 2
    nse, n_sparse = indices_shape[-2:]
    n_dense = len(shape) - n_batch - n_sparse
    if n_dense < 0:
        raise ValueError(f"BCOO: indices of shape {indices_shape} (n_batch={n_batch}, n_sparse={n_sparse}) do not fit "
                         f"shape={shape} of rank {len(shape)}: the rank must be at least n_batch + n_sparse")
    if tuple(indices_shape[:n_batch]) != tuple(shape[:n_batch]):
        raise ValueError(f"BCOO: the batch dimensions of indices {indices_shape[:n_batch]} differ from those of "
                         f"shape={shape}")
    want = tuple(shape[:n_batch]) + (nse,) + tuple(shape[n_batch + n_sparse:])
    if tuple(data_shape) != want:
        raise ValueError(f"BCOO: data of shape {tuple(data_shape)} does not fit indices of shape {indices_shape} and "
                         f"shape={shape}: data must have shape batch + (nse,) + dense = {want} (nse={nse}, "
                         f"n_batch={n_batch}, n_dense={n_dense})")
    return n_batch, n_sparse, n_dense, nse


def _shape_for_leaves(shape: tuple, data: Any, indices: Any) -> tuple:
    """The shape of a BCOO rebuilt from ``data``/``indices`` whose batch dimensions ``kiln.vmap`` changed.

    Inside ``vmap`` the leaves lose the mapped batch axis (a BCOO with ``n_batch=1`` becomes one unbatched
    BCOO per example, as in JAX); on the way out they gain one (unbatched results stack into ``n_batch=1``).
    The stored shape is corrected to match; leaves that are not arrays (tree_map's placeholders) keep it.
    """
    try:
        d_shape, i_shape = tuple(data.shape), tuple(indices.shape)
    except AttributeError:
        return shape
    if len(i_shape) < 2:
        return shape
    n_batch = len(i_shape) - 2
    n_sparse, n_dense = i_shape[-1], len(d_shape) - 1 - n_batch
    rank = n_batch + n_sparse + n_dense
    batch = i_shape[:n_batch]
    if rank == len(shape) - 1:  # one batch axis mapped away
        for k in range(n_batch + 1):
            cand = shape[:k] + shape[k + 1:]
            if cand[:n_batch] == batch:
                return cand
    elif rank == len(shape) + 1 and n_batch >= 1:  # one batch axis stacked on
        for k in range(n_batch):
            cand = shape[:k] + (i_shape[k],) + shape[k:]
            if cand[:n_batch] == batch:
                return cand
    return shape


@register_pytree_node_class
class BCOO(JAXSparse):
    """A sparse array in batched-COO format (as ``jax.experimental.sparse.BCOO``).

    ``BCOO((data, indices), shape=shape)``: ``data`` of shape ``batch + (nse,) + dense``, ``indices`` of shape
    ``batch + (nse, n_sparse)`` holding each entry's position in the sparse dimensions. A pytree (leaves
    ``data`` and ``indices``), so it passes through ``kiln.jit``, ``kiln.vmap`` and ``kiln.grad``.

    >>> M = BCOO.fromdense(jnp.array([[0., 2., 0.], [1., 0., 4.]]))
    >>> M
    BCOO(float32[2, 3], nse=3)
    >>> M @ jnp.ones(3)
    Array([2., 5.], dtype=float32)
    """
    __array_ufunc__ = None  # NumPy defers ``ndarray @ BCOO`` to BCOO.__rmatmul__
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, args: tuple, *, shape: Sequence[int], indices_sorted: bool = False,
                 unique_indices: bool = False):
        if not isinstance(args, (tuple, list)) or len(args) != 2:
            raise TypeError(f"BCOO: the first argument must be the pair (data, indices), got {type(args).__name__}; "
                            "write BCOO((data, indices), shape=shape)")
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        self.shape = tuple(_index(s, "each entry of shape", "BCOO") for s in shape)
        self.data, self.indices = jnp.asarray(args[0]), jnp.asarray(args[1])
        if not dtypes.is_int(self.indices.dtype):
            raise TypeError(f"BCOO: indices must be integers, got {self.indices.dtype}")
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)
        _validate(tuple(self.data.shape), tuple(self.indices.shape), self.shape)

    # --- layout ------------------------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def nse(self) -> int:
        return self.indices.shape[self.n_batch]  # indices: batch + (nse, n_sparse)

    @property
    def n_batch(self) -> int:
        if self._lost_nse_axis is not None:
            raise self._lost_nse_axis
        return self.indices.ndim - 2

    @property
    def n_sparse(self) -> int:
        return self.indices.shape[-1]

    @property
    def n_dense(self) -> int:
        return self.data.ndim - 1 - self.n_batch

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def T(self) -> BCOO:
        return self.transpose()

    def __repr__(self) -> str:
        try:
            extra = f", nse={self.nse}"
            if self.n_batch:
                extra += f", n_batch={self.n_batch}"
            if self.n_dense:
                extra += f", n_dense={self.n_dense}"
            text = f"BCOO({np.dtype(self.dtype).name}{list(self.shape)}{extra})"
        except Exception:  # a BCOO rebuilt around non-array leaves (tree_map placeholders)
            text = "BCOO(<invalid>)"
        if isinstance(self.data, Tracer):
            text = f"Tracer[{text}]"
        return text

    # --- pytree ------------------------------------------------------------------------------------
    def tree_flatten(self):
        return (self.data, self.indices), (self.shape, self.indices_sorted, self.unique_indices)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        obj = object.__new__(cls)
        shape, obj.indices_sorted, obj.unique_indices = aux_data
        obj.data, obj.indices = children
        obj.shape = _shape_for_leaves(shape, obj.data, obj.indices)
        obj._lost_nse_axis = mapped_nse_axis_error(obj, 2)
        return obj

    def block_until_ready(self) -> BCOO:
        self.data.block_until_ready()
        self.indices.block_until_ready()
        return self

    # --- conversions -------------------------------------------------------------------------------
    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32, n_dense: int = 0,
                  n_batch: int = 0) -> BCOO:
        """A BCOO array holding the nonzero entries of the dense array ``mat`` (``nse``: see bcoo_fromdense)."""
        return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch)

    @classmethod
    def from_scipy_sparse(cls, mat: Any, *, index_dtype: Any = None, n_dense: int = 0, n_batch: int = 0) -> BCOO:
        """A BCOO matrix from a 2-D ``scipy.sparse`` matrix or array (any format with ``.tocoo()``).

        Duplicate entries are kept (and summed by every operation), as in JAX.
        """
        if n_dense != 0 or n_batch != 0:
            raise NotImplementedError("BCOO.from_scipy_sparse: only n_batch=0 and n_dense=0 are supported (as in "
                                      "JAX); convert with BCOO.fromdense(mat.toarray(), n_batch=..., n_dense=...)")
        if not hasattr(mat, "tocoo"):
            raise TypeError(f"BCOO.from_scipy_sparse: expected a scipy.sparse matrix or array (with .tocoo()), got "
                            f"{type(mat).__name__}; for a dense array use BCOO.fromdense")
        coo = mat.tocoo()
        shape = tuple(coo.shape)
        if len(shape) != 2:
            raise ValueError(f"BCOO.from_scipy_sparse: expected a 2-D sparse matrix, got shape {shape}; for other "
                             "ranks use BCOO.fromdense(mat.toarray())")
        row, col, data = np.asarray(coo.row), np.asarray(coo.col), np.asarray(coo.data)
        if not (row.ndim == col.ndim == data.ndim == 1 and row.shape == col.shape == data.shape):
            raise ValueError(f"BCOO.from_scipy_sparse: the COO form of the input has row, col and data of shapes "
                             f"{row.shape}, {col.shape}, {data.shape}; they must be 1-D of one length (nse)")
        indices = jnp.asarray(np.stack([row, col], axis=1)).astype(index_dtype or np.int32)
        return cls((jnp.asarray(data), indices), shape=shape)

    def todense(self) -> Any:
        """The dense array (duplicates summed, out-of-range padding entries dropped)."""
        return bcoo_todense(self)

    def astype(self, dtype: Any) -> BCOO:
        """The same sparse array with ``data`` cast to ``dtype``."""
        return self._with_data(self.data.astype(dtype))

    def _with_data(self, data: Any) -> BCOO:
        return BCOO((data, self.indices), shape=self.shape, indices_sorted=self.indices_sorted,
                    unique_indices=self.unique_indices)

    def sort_indices(self) -> BCOO:
        """The same array with its entries in lexicographic order of their indices (duplicates kept)."""
        return bcoo_sort_indices(self)

    def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> BCOO:
        """The same array with duplicate indices summed, sorted; explicit zeros dropped when ``remove_zeros``.

        ``nse``: the number of entries of the result (padded or truncated); by default the number needed, which
        needs concrete values: under ``jit``/``vmap``/``grad`` pass ``nse=``.
        """
        if remove_zeros:
            return bcoo_eliminate_zeros(self, nse=nse)
        return bcoo_sum_duplicates(self, nse=nse)

    # --- operations --------------------------------------------------------------------------------
    def transpose(self, axes: Sequence[int] | None = None) -> BCOO:
        """The transposed array (``axes`` as ``numpy.transpose``; the default reverses them)."""
        perm = list(range(self.ndim))[::-1] if axes is None else list(axes)
        return bcoo_transpose(self, permutation=perm)

    def sum(self, axis: int | Sequence[int] | None = None) -> Any:
        """The sum over ``axis`` (all axes by default): a BCOO array, or a dense scalar when no axis is left."""
        if axis is None:
            axes = tuple(range(self.ndim))
        else:
            axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
            axes = tuple(_axis(a, self.ndim, "BCOO.sum") for a in axes)
        return _bcoo_sum(self, axes=axes)

    def __matmul__(self, other: Any) -> Any:
        return self._matmul(other, sparse_left=True)

    def __rmatmul__(self, other: Any) -> Any:
        return self._matmul(other, sparse_left=False)

    def _matmul(self, other: Any, sparse_left: bool) -> Any:
        """``self @ other`` or ``other @ self`` with NumPy's matmul rules for 1-D and 2-D operands."""
        if isinstance(other, BCOO):
            return _sparse_matmul(*((self, other) if sparse_left else (other, self)))
        other = jnp.asarray(other)
        if self.n_batch:
            return self._batched_matmul(other, sparse_left)
        _unbatched(self, "a matrix product")
        if self.ndim not in (1, 2) or other.ndim not in (1, 2):
            shapes = (self.shape, tuple(other.shape)) if sparse_left else (tuple(other.shape), self.shape)
            raise NotImplementedError(f"{'BCOO @ x' if sparse_left else 'x @ BCOO'}: supported for 1-D or 2-D "
                                      f"operands, got shapes {shapes[0]} and {shapes[1]}; for stacked operands use "
                                      "kiln.vmap over the batch axis")
        if sparse_left:  # contract self's last axis with other's first (vector) or second-to-last axis
            dims = ([self.ndim - 1], [0 if other.ndim == 1 else other.ndim - 2])
            return bcoo_dot_general(self, other, dimension_numbers=(dims, ([], [])))
        dims = ([other.ndim - 1], [0 if self.ndim == 1 else self.ndim - 2])
        return bcoo_dot_general(other, self, dimension_numbers=(dims, ([], [])))

    def _batched_matmul(self, other: Any, sparse_left: bool) -> Any:
        """matmul with a BCOO that has batch dimensions (its leading axes): NumPy's broadcasting over them, as a
        ``kiln.vmap`` of the unbatched product. ``other`` is 1-D/2-D (shared by every batch element) or has the
        same batch axes."""
        _unbatched(self, "a matrix product", batch_ok=True)
        nb = self.n_batch
        if other.ndim <= 2 and (sparse_left or self.n_sparse == 2):
            in_axes = (0, None)
        elif self.n_sparse == 2 and other.ndim == self.ndim and tuple(other.shape[:nb]) == self.shape[:nb]:
            in_axes = (0, 0)
        else:
            shapes = (self.shape, tuple(other.shape)) if sparse_left else (tuple(other.shape), self.shape)
            raise NotImplementedError(
                f"{'BCOO @ x' if sparse_left else 'x @ BCOO'} with a batched BCOO (n_batch={nb}, shapes {shapes[0]} "
                f"and {shapes[1]}): supported when the BCOO's last two axes are sparse and x is 1-D, 2-D or has the "
                "same batch axes (or, for BCOO @ x, a stack of sparse vectors); map with kiln.vmap yourself or use "
                ".todense()")

        def fn(a, x):
            return a._matmul(x, sparse_left)
        for _ in range(nb):
            fn = vmap(fn, in_axes=in_axes)
        return fn(self, other)

    def _scalar(self, other: Any, op: str) -> Any:
        if isinstance(other, BCOO) or (not isinstance(other, (int, float, complex, np.generic))
                                       and getattr(other, "ndim", None) != 0):
            raise NotImplementedError(f"BCOO {op} x is supported for a scalar x only (got "
                                      f"{type(other).__name__}); for an array use A.todense() {op} x")
        return other

    def __mul__(self, other: Any) -> BCOO:
        if isinstance(other, BCOO):
            from .products import bcoo_multiply_sparse  # products imports this module
            return bcoo_multiply_sparse(self, other)
        return self._with_data(bcoo_multiply_dense(self, other))

    def __rmul__(self, other: Any) -> BCOO:
        return self.__mul__(other)

    def __truediv__(self, other: Any) -> BCOO:
        return self._with_data(self.data / self._scalar(other, "/"))

    def __neg__(self) -> BCOO:
        return self._with_data(-self.data)

    def __pos__(self) -> BCOO:
        return self

    # Through ``sparsify``, as JAX defines them: sparse + sparse stores both sets of entries, sparse + dense is dense.
    def __abs__(self) -> BCOO:
        return _sparsified_abs(self)

    def __add__(self, other: Any) -> Any:
        return _sparsified_binary(self, other, "add")

    def __radd__(self, other: Any) -> Any:
        return _sparsified_binary(other, self, "add")

    def __sub__(self, other: Any) -> Any:
        return _sparsified_binary(self, other, "subtract")

    def __rsub__(self, other: Any) -> Any:
        return _sparsified_binary(other, self, "subtract")

    def __pow__(self, other: Any) -> Any:
        return _sparsified_power(self, other)

    def __rpow__(self, other: Any) -> Any:
        return _sparsified_binary(other, self, "power")

    def __rtruediv__(self, other: Any) -> Any:
        return _sparsified_binary(other, self, "divide")

    # --- structure (bcoo_structure.py imports this module: its functions are imported when called) ---------
    def reshape(self, *shape: Any, order: str = "C") -> BCOO:
        """The array reshaped to ``shape`` (ints, or one sequence; one entry may be -1), as ``jax.numpy.reshape``.

        Batch, sparse and dense dimensions reshape within their groups (see ``bcoo_reshape``)."""
        from .bcoo_structure import bcoo_reshape  # bcoo_structure imports this module
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        sizes = _reshape_sizes(shape, self.shape)
        if order == "F":  # column-major: reverse the axes around a row-major reshape
            return self.transpose().reshape(sizes[::-1]).transpose()
        if order != "C":
            raise NotImplementedError(f"BCOO.reshape: order={order!r} is not supported; use 'C' or 'F'")
        return self if sizes == self.shape else bcoo_reshape(self, new_sizes=sizes)

    def update_layout(self, *, n_batch: int | None = None, n_dense: int | None = None,
                      on_inefficient: str | None = "error") -> BCOO:
        """The same array stored with ``n_batch`` batch and ``n_dense`` dense dimensions (see
        ``bcoo_update_layout``: increasing either can store many zeros, which raises a SparseEfficiencyError
        unless ``on_inefficient`` is ``'warn'`` or ``None``)."""
        from .bcoo_structure import bcoo_update_layout  # bcoo_structure imports this module
        return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense, on_inefficient=on_inefficient)

    def __getitem__(self, idx: Any) -> BCOO:
        """``mat[idx]`` for integers, slices, ``None`` and ``...`` (see ``bcoo_getitem``): a BCOO array."""
        from .bcoo_structure import bcoo_getitem  # bcoo_structure imports this module
        return bcoo_getitem(self, idx)

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d BCOO array")
        return (self[i] for i in range(self.shape[0]))


def _sparse_matmul(lhs: BCOO, rhs: BCOO) -> BCOO:
    """``lhs @ rhs`` of two BCOO arrays of one or two dimensions (a BCOO result, as JAX's)."""
    from .products import bcoo_spdot_general  # products imports this module
    if lhs.ndim not in (1, 2) or rhs.ndim not in (1, 2):
        raise NotImplementedError(f"BCOO @ BCOO: supported for 1-D or 2-D operands, got shapes {lhs.shape} and "
                                  f"{rhs.shape}; for stacked operands use bcoo_dot_general with batch dimensions")
    dims = (([lhs.ndim - 1], [0 if rhs.ndim == 1 else rhs.ndim - 2]), ([], []))
    return bcoo_spdot_general(lhs, rhs, dimension_numbers=dims)


def _sparsified(fn: Any) -> Any:
    from .transform import sparsify  # transform imports this module: imported when called
    return sparsify(fn)


# BCOO's operators, sparsified ``kiln.numpy`` functions: called eagerly, each one compiled program per signature (the
# sparse rules keep nse static, so the program's result is the one sparsify computes op by op), not a trace of the
# function and an interpretation of it at every call.
@one_program("op", pytrees=("x", "y"), dense_ok=True)
def _sparsified_binary(x: Any, y: Any, op: str) -> Any:
    return _sparsified(getattr(jnp, op))(x, y)


@one_program()
def _sparsified_abs(mat: BCOO) -> BCOO:
    return _sparsified(jnp.abs)(mat)


@one_program("exponent")
def _sparsified_power(mat: BCOO, exponent: Any) -> BCOO:
    return _sparsified(lambda x: jnp.power(x, exponent))(mat)


def _reshape_sizes(shape: Sequence[Any], old: tuple) -> tuple:
    """``shape`` with its -1 entry (at most one) resolved for an array of shape ``old``."""
    sizes = [-1 if isinstance(s, (int, np.integer)) and s == -1 else _index(s, "each entry of shape", "BCOO.reshape")
             for s in shape]
    if sizes.count(-1) > 1:
        raise ValueError(f"BCOO.reshape: can only specify one unknown dimension (-1), got shape {tuple(shape)}")
    if -1 in sizes:
        known = math.prod(s for s in sizes if s != -1)
        if known == 0 or math.prod(old) % known:
            raise ValueError(f"BCOO.reshape: cannot reshape an array of shape {old} into shape {tuple(shape)}")
        sizes[sizes.index(-1)] = math.prod(old) // known
    return tuple(sizes)


def _axis(a: Any, ndim: int, where: str) -> int:
    a = operator.index(a)
    if not -ndim <= a < ndim:
        raise ValueError(f"{where}: axis {a} is out of range for an array of rank {ndim}")
    return a % ndim


def _unbatched(mat: BCOO, what: str, dense_ok: bool = False, batch_ok: bool = False) -> None:
    if mat.n_batch and not batch_ok:
        raise NotImplementedError(
            f"kiln.experimental.sparse: {what} of a BCOO with batch dimensions (n_batch={mat.n_batch}) is not "
            "supported yet; map over the batch axis with kiln.vmap (each example is an unbatched BCOO), or use "
            ".todense()")
    if mat.n_dense and not dense_ok:
        raise NotImplementedError(
            f"kiln.experimental.sparse: {what} of a BCOO with dense dimensions (n_dense={mat.n_dense}) is not "
            "supported yet; build it with n_dense=0 (BCOO.fromdense(x)), or use .todense()")


def _in_range(mat: BCOO) -> Any:
    """batch + (nse,) bool: which entries lie inside the sparse shape (the others are padding)."""
    bound = np.asarray(mat.shape[mat.n_batch:mat.n_batch + mat.n_sparse], dtype=np.dtype(mat.indices.dtype))
    return jnp.all((mat.indices >= 0) & (mat.indices < bound), axis=-1)


def _nest(fn: Any, n_batch: int) -> Any:
    """``fn`` mapped over ``n_batch`` leading axes of every argument."""
    for _ in range(n_batch):
        fn = vmap(fn)
    return fn


# --- fromdense / todense ---------------------------------------------------------------------------

def bcoo_fromdense(mat: Any, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype: Any = np.int32) -> BCOO:
    """A BCOO array of the nonzero entries of ``mat`` (as ``jax.experimental.sparse.bcoo_fromdense``).

    ``nse``: the number of stored entries (per batch element); by default the number of nonzeros, which needs a
    concrete ``mat``: under ``jit``/``vmap``/``grad`` pass ``nse=``. When ``nse`` exceeds the nonzeros, the rest is
    padding (index ``shape``, data 0); when it is smaller, the last nonzeros are dropped.
    """
    nse = stored_count_now(mat, nse, n_batch, n_dense)
    return _bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)


def stored_count_now(mat: Any, nse: Any, n_batch: Any, n_dense: Any) -> Any:
    """``nse`` as given, or (None given, a concrete dense ``mat`` called eagerly with valid ``n_batch``/``n_dense``)
    its number of nonzeros computed now by one program: the static ``nse`` a ``fromdense`` conversion needs.
    Invalid options stay None, for the conversion's own error."""
    if (nse is None and type(mat) in (Array, np.ndarray) and type(n_batch) is int and type(n_dense) is int
            and 0 <= n_batch and 0 <= n_dense and n_batch + n_dense <= mat.ndim and eager_now()):
        return int(_stored_count(mat, n_batch=n_batch, n_dense=n_dense))
    return nse


@one_program("n_batch", "n_dense", pytrees=())
def _stored_count(mat: Any, *, n_batch: int, n_dense: int) -> Any:
    """The largest number of nonzeros (positions of the sparse dimensions) of a batch element of ``mat``."""
    mask = jnp.asarray(mat) != 0
    if n_dense:
        mask = jnp.any(mask, axis=tuple(range(mat.ndim - n_dense, mat.ndim)))
    counts = jnp.sum(mask, axis=tuple(range(n_batch, mask.ndim)))
    return jnp.max(counts) if counts.size else jnp.zeros((), counts.dtype)


@one_program("nse", "n_batch", "n_dense", "index_dtype", nse_needed=True, pytrees=())
def _bcoo_fromdense(mat: Any, *, nse: int | None, n_batch: int, n_dense: int, index_dtype: Any) -> BCOO:
    mat = jnp.asarray(mat)
    n_batch = _index(n_batch, "n_batch", "bcoo_fromdense")
    n_dense = _index(n_dense, "n_dense", "bcoo_fromdense")
    n_sparse = mat.ndim - n_batch - n_dense
    if n_sparse < 0:
        raise ValueError(f"bcoo_fromdense: n_batch={n_batch} + n_dense={n_dense} exceeds the rank {mat.ndim} of the "
                         f"input of shape {tuple(mat.shape)}")
    if nse is None:
        if isinstance(mat, Tracer):
            raise ConcretizationTypeError(
                "bcoo_fromdense: the number of stored elements (nse) depends on the values of a traced array (under "
                "jit, vmap or grad). In order for BCOO.fromdense() to be used in traced/compiled code, you must pass "
                "a concrete value to the nse (number of stored elements) argument, e.g. BCOO.fromdense(m, nse=100)")
        mask = mat != 0
        if n_dense:
            mask = jnp.any(mask, axis=tuple(range(n_batch + n_sparse, mat.ndim)))
        counts = jnp.sum(mask, axis=tuple(range(n_batch, mask.ndim)))
        nse = int(jnp.max(counts)) if counts.size else 0
    nse = _index(nse, "nse", "bcoo_fromdense")
    index_dtype = np.dtype(index_dtype)
    if not dtypes.is_int(index_dtype):
        raise TypeError(f"bcoo_fromdense: index_dtype must be an integer dtype, got {index_dtype}")

    def one(m):
        return _fromdense_unbatched(m, nse, n_dense, index_dtype)

    data, indices = _nest(one, n_batch)(mat)
    return BCOO((data, indices), shape=tuple(mat.shape), indices_sorted=True, unique_indices=True)


def _fromdense_unbatched(mat: Any, nse: int, n_dense: int, index_dtype: np.dtype) -> tuple[Any, Any]:
    n_sparse = mat.ndim - n_dense
    if n_sparse == 0:
        raise NotImplementedError("bcoo_fromdense: an array with no sparse dimensions (n_sparse=0) is not supported; "
                                  "lower n_dense or n_batch")
    mask = mat != 0
    if n_dense:
        mask = jnp.any(mask, axis=tuple(range(n_sparse, mat.ndim)))
    sparse_shape = tuple(mat.shape[:n_sparse])
    idx = jnp.nonzero(mask, size=nse, fill_value=sparse_shape)
    data = mat.at[idx].get(mode="fill", fill_value=0)
    indices = jnp.stack([i.astype(index_dtype) for i in idx], axis=1)
    return data, indices


@one_program()
def bcoo_todense(mat: BCOO) -> Any:
    """The dense array of ``mat`` (duplicates summed, out-of-range padding entries dropped)."""
    if not isinstance(mat, BCOO):
        raise TypeError(f"bcoo_todense: expected a BCOO array, got {type(mat).__name__}")
    n_batch, n_sparse = mat.n_batch, mat.n_sparse
    sparse_shape = mat.shape[n_batch:n_batch + n_sparse]
    dense_shape = mat.shape[n_batch + n_sparse:]
    sorted_, unique = mat.indices_sorted, mat.unique_indices

    def one(data, indices):
        if n_sparse == 0:
            return jnp.sum(data, axis=0)
        out = jnp.zeros(sparse_shape + dense_shape, data.dtype)
        idx = tuple(indices[:, i] for i in range(n_sparse))
        return out.at[idx].add(data, mode="drop", indices_are_sorted=sorted_, unique_indices=unique)

    return _nest(one, n_batch)(mat.data, mat.indices)


# The name of the identity call that ``todense`` records on a traced dense value: ``sparsify`` densifies there.
TODENSE_CALL = "sparse.todense"


def todense(arr: Any) -> Any:
    """The dense form of ``arr``: ``arr.todense()`` for a BCOO array, anything else unchanged.

    On a traced value it records an identity call (``sparse.todense``), where ``sparsify`` (which traces with dense
    stand-ins for BCOO arguments) converts a sparse value to dense, as JAX's ``todense_p``."""
    if isinstance(arr, BCOO):
        return arr.todense()
    if isinstance(arr, Tracer):
        var = Var(arr.aval)
        (out,) = bind_call(ClosedIR(IR([], [var], [], [var]), []), [arr], name=TODENSE_CALL)
        return out
    return arr


def fromdense(mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32, n_dense: int = 0,
              n_batch: int = 0) -> BCOO:
    """``BCOO.fromdense(mat, ...)`` (kiln's only sparse format is BCOO)."""
    return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch)


@one_program()
def bcoo_sort_indices(mat: BCOO) -> BCOO:
    """``mat`` with its entries sorted by index (lexicographically, stable), as JAX's ``bcoo_sort_indices``."""
    ns = mat.n_sparse
    if ns == 0:
        return mat

    def one(data, indices):
        iota = jnp.arange(indices.shape[0], dtype=indices.dtype)
        *cols, perm = lax.sort(tuple(indices[:, i] for i in range(ns)) + (iota,), num_keys=ns)
        return data[perm], jnp.stack(cols, axis=1)
    data, indices = _nest(one, mat.n_batch)(mat.data, mat.indices)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=mat.unique_indices)


def bcoo_sum_duplicates(mat: BCOO, nse: int | None = None) -> BCOO:
    """``mat`` with duplicate indices summed and sorted indices (as JAX's ``bcoo_sum_duplicates``).

    ``nse``: the number of entries of the result; by default the number of distinct in-range indices (per batch
    element), which needs a concrete ``mat``. Out-of-range (padding) entries collect in trailing padding.
    """
    if nse is None and isinstance(mat, BCOO) and mat.n_sparse and eager_now(mat):
        nse = int(_distinct_count(mat, drop_zeros=False))
    return _bcoo_sum_duplicates(mat, nse=nse)


def _unique_indices(mat: BCOO) -> tuple[Any, Any, np.ndarray]:
    """(the distinct indices of ``mat``'s entries (padding ones: index ``shape``), each entry's position among
    them, the sparse shape as an index array) per batch element."""
    nb, ns = mat.n_batch, mat.n_sparse
    bound_np = np.asarray(mat.shape[nb:nb + ns], dtype=np.dtype(mat.indices.dtype))
    size = mat.nse

    def unique_one(indices):
        oob = jnp.any((indices < 0) | (indices >= bound_np), axis=1, keepdims=True)
        indices = jnp.where(oob, bound_np, indices)
        uniq, inverse = jnp.unique(indices, axis=0, return_inverse=True, size=size, fill_value=int(bound_np.max()))
        uniq = jnp.where(jnp.any(uniq >= bound_np, axis=1, keepdims=True), bound_np, uniq)  # padding: index = shape
        return uniq, inverse.reshape(-1)
    uniq, inverse = _nest(unique_one, nb)(mat.indices)
    return uniq, inverse, bound_np


@one_program("drop_zeros")
def _distinct_count(mat: BCOO, *, drop_zeros: bool) -> Any:
    """The ``nse`` that ``sum_duplicates`` (after dropping explicit zeros with ``drop_zeros``) needs: the largest
    number of distinct in-range indices of a batch element."""
    uniq, _, bound_np = _unique_indices(_zeros_dropped(mat) if drop_zeros else mat)
    in_range = jnp.all(uniq < bound_np, axis=-1)
    return jnp.max(jnp.sum(in_range, axis=-1)) if in_range.size else jnp.zeros((), np.int32)


@one_program("nse", nse_needed=True)
def _bcoo_sum_duplicates(mat: BCOO, *, nse: int | None) -> BCOO:
    nb, ns = mat.n_batch, mat.n_sparse
    if ns == 0:
        raise NotImplementedError("bcoo_sum_duplicates: a BCOO without sparse dimensions (n_sparse=0) is not "
                                  "supported; use .todense()")
    size = mat.nse
    uniq, inverse, bound_np = _unique_indices(mat)
    if nse is None:
        if isinstance(mat.data, Tracer) or isinstance(mat.indices, Tracer):
            raise ConcretizationTypeError(
                "bcoo_sum_duplicates: the number of stored elements (nse) of the result depends on the values of a "
                "traced array (under jit, vmap or grad); pass a concrete nse=, e.g. A.sum_duplicates(nse=A.nse)")
        in_range = jnp.all(uniq < bound_np, axis=-1)
        nse = int(jnp.max(jnp.sum(in_range, axis=-1))) if in_range.size else 0
    nse = _index(nse, "nse", "bcoo_sum_duplicates")
    if nse <= size:
        indices = uniq[..., :nse, :]
    else:
        pad = np.broadcast_to(bound_np, tuple(uniq.shape[:-2]) + (nse - size, ns))
        indices = jnp.concatenate([uniq, jnp.asarray(pad)], axis=-2)

    def add_one(data, inv):
        out = jnp.zeros((nse,) + tuple(data.shape[1:]), data.dtype)
        return out.at[inv].add(data, mode="drop")
    data = _nest(add_one, nb)(mat.data, inverse)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_eliminate_zeros(mat: BCOO, nse: int | None = None) -> BCOO:
    """``mat`` without its explicit zeros, duplicates summed (``BCOO.sum_duplicates(remove_zeros=True)``)."""
    if nse is None and isinstance(mat, BCOO) and mat.n_sparse and eager_now(mat):
        nse = int(_distinct_count(mat, drop_zeros=True))
    return _bcoo_eliminate_zeros(mat, nse=nse)


def _zeros_dropped(mat: BCOO) -> BCOO:
    """``mat`` with its explicit zeros made padding (index ``shape``)."""
    nb, ns = mat.n_batch, mat.n_sparse
    zero = jnp.all(mat.data == 0, axis=tuple(range(nb + 1, mat.data.ndim)))
    bound = np.asarray(mat.shape[nb:nb + ns], dtype=np.dtype(mat.indices.dtype))
    indices = jnp.where(zero[..., None], bound, mat.indices)
    return BCOO((mat.data, indices), shape=mat.shape)


@one_program("nse", nse_needed=True)
def _bcoo_eliminate_zeros(mat: BCOO, *, nse: int | None) -> BCOO:
    return bcoo_sum_duplicates(_zeros_dropped(mat), nse=nse)


# --- structural ops --------------------------------------------------------------------------------

def bcoo_transpose(mat: BCOO, *, permutation: Sequence[int]) -> BCOO:
    """``mat`` with its axes permuted (``permutation[i]`` is the input axis of output axis ``i``); batch, sparse and
    dense axes each permute among themselves (as in JAX)."""
    return _bcoo_transpose(mat, permutation=frozen(permutation))


@one_program("permutation")
def _bcoo_transpose(mat: BCOO, *, permutation: Sequence[int]) -> BCOO:
    perm = [_axis(p, mat.ndim, "bcoo_transpose") for p in permutation]
    if sorted(perm) != list(range(mat.ndim)):
        raise ValueError(f"bcoo_transpose: permutation {list(permutation)} is not a permutation of the "
                         f"{mat.ndim} axes of an array of shape {mat.shape}")
    nb, ns = mat.n_batch, mat.n_sparse

    def group(a: int) -> int:
        return 0 if a < nb else 1 if a < nb + ns else 2
    if any(group(p) != group(i) for i, p in enumerate(perm)):
        raise NotImplementedError(f"bcoo_transpose: permutation {perm} moves axes between the batch (n_batch={nb}), "
                                  f"sparse (n_sparse={ns}) and dense dimensions, which BCOO cannot do (as in JAX); "
                                  "use .todense() first")
    batch_perm, sparse_perm = perm[:nb], [p - nb for p in perm[nb:nb + ns]]
    dense_perm = [p - nb - ns for p in perm[nb + ns:]]
    indices, data = mat.indices, mat.data
    if sparse_perm != list(range(ns)):
        indices = jnp.stack([indices[..., p] for p in sparse_perm], axis=-1)
    if batch_perm != list(range(nb)):
        indices = jnp.transpose(indices, batch_perm + [nb, nb + 1])
    data_perm = batch_perm + [nb] + [nb + 1 + d for d in dense_perm]
    if data_perm != list(range(data.ndim)):
        data = jnp.transpose(data, data_perm)
    sorted_ = mat.indices_sorted and sparse_perm == list(range(ns))
    return BCOO((data, indices), shape=tuple(mat.shape[p] for p in perm), indices_sorted=sorted_,
                unique_indices=mat.unique_indices)


def bcoo_reduce_sum(mat: BCOO, *, axes: Sequence[int]) -> BCOO:
    """The sum of ``mat`` over ``axes``, as a BCOO array (of shape ``()`` when every axis is summed). Summed batch
    axes merge into the stored entries (``nse`` grows by their size), as in JAX."""
    return _bcoo_reduce_sum(mat, axes=frozen(axes))


@one_program("axes")
def _bcoo_sum(mat: BCOO, *, axes: tuple[int, ...]) -> Any:
    """``BCOO.sum``: the sum over ``axes``, dense when no axis is left."""
    out = _bcoo_reduce_sum(mat, axes=axes)
    return out.todense() if out.ndim == 0 else out


@one_program("axes")
def _bcoo_reduce_sum(mat: BCOO, *, axes: Sequence[int]) -> BCOO:
    axes = sorted({_axis(a, mat.ndim, "bcoo_reduce_sum") for a in axes})
    nb, ns = mat.n_batch, mat.n_sparse
    batch_axes = [a for a in axes if a < nb]
    sparse_kept = [d for d in range(ns) if d + nb not in axes]
    dense_axes = tuple(a - ns + 1 for a in axes if a >= nb + ns)  # axes of data (nse sits where sparse ones start)
    data, indices = mat.data, mat.indices
    if dense_axes:
        data = jnp.sum(data, axis=dense_axes)
    if len(sparse_kept) < ns:
        # Entries out of range in a summed dimension would become in range: zero them first.
        mask = _in_range(mat).reshape(tuple(indices.shape[:-1]) + (1,) * (data.ndim - nb - 1))
        data = jnp.where(mask, data, jnp.zeros((), data.dtype))
        indices = jnp.stack([indices[..., d] for d in sparse_kept], axis=-1) if sparse_kept else \
            jnp.zeros(tuple(indices.shape[:-1]) + (0,), indices.dtype)
    if batch_axes:
        kept = [b for b in range(nb) if b not in batch_axes]
        lead = tuple(mat.shape[b] for b in kept)
        nse = mat.nse * math.prod(mat.shape[b] for b in batch_axes)
        data = jnp.transpose(data, kept + batch_axes + list(range(nb, data.ndim)))
        data = data.reshape(lead + (nse,) + tuple(data.shape[nb + 1:]))
        indices = jnp.transpose(indices, kept + batch_axes + [nb, nb + 1])
        indices = indices.reshape(lead + (nse, indices.shape[-1]))
    shape = tuple(s for i, s in enumerate(mat.shape) if i not in axes)
    untouched = not batch_axes and len(sparse_kept) == ns
    return BCOO((data, indices), shape=shape, indices_sorted=mat.indices_sorted and untouched,
                unique_indices=mat.unique_indices and untouched)


# --- products --------------------------------------------------------------------------------------

def bcoo_dot_general(lhs: Any, rhs: Any, *, dimension_numbers: Any, precision: Any = None,
                     preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """``lax.dot_general`` with one BCOO operand and one dense one; the result is dense.

    ``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``; the output has the batch
    dimensions, then the lhs's free dimensions, then the rhs's (as ``lax.dot_general``). The BCOO's batch dimensions
    in ``dimension_numbers`` must be its leading batch axes. The product is one gather of the dense operand at the
    stored indices, one multiply by ``data`` and one scatter-add (per batch element)."""
    return _bcoo_dot_general(lhs, rhs, dimension_numbers=frozen_dimension_numbers(dimension_numbers),
                             precision=precision, preferred_element_type=preferred_element_type,
                             out_sharding=out_sharding)


def frozen_dimension_numbers(dimension_numbers: Any) -> Any:
    """``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` of lists as tuples (hashable); anything
    else (a malformed value, which the implementation names in its error) as it is."""
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        return dimension_numbers
    parts = (lc, rc, lb, rb)
    if not all(type(p) is list or type(p) is tuple for p in parts):
        return dimension_numbers
    return ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))


@one_program("dimension_numbers", "precision", "preferred_element_type", "out_sharding", pytrees=("lhs", "rhs"),
             dense_ok=True)
def _bcoo_dot_general(lhs: Any, rhs: Any, *, dimension_numbers: Any, precision: Any,
                      preferred_element_type: Any, out_sharding: Any) -> Any:
    del precision, out_sharding
    try:
        (lc, rc), (lb, rb) = dimension_numbers
        lc, rc, lb, rb = (tuple(operator.index(d) for d in ds) for ds in (lc, rc, lb, rb))
    except (TypeError, ValueError):
        raise TypeError(f"bcoo_dot_general: dimension_numbers must be ((lhs_contracting, rhs_contracting), "
                        f"(lhs_batch, rhs_batch)), got {dimension_numbers!r}") from None
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        from .products import bcoo_spdot_general  # products imports this module
        return bcoo_spdot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                                  preferred_element_type=preferred_element_type)
    if not isinstance(lhs, BCOO) and not isinstance(rhs, BCOO):
        raise TypeError("bcoo_dot_general: one operand must be a BCOO array; for two dense arrays use "
                        "kiln.lax.dot_general")
    left = isinstance(lhs, BCOO)
    sp, de = (lhs, rhs) if left else (rhs, lhs)
    sc, dc, sb, db = (lc, rc, lb, rb) if left else (rc, lc, rb, lb)
    out = _batched_sparse_dense(sp, jnp.asarray(de), sc, dc, sb, db, preferred_element_type, left)
    if left:
        return out
    # out is (batch, the sparse operand's free axes, the dense operand's): put the dense (lhs) operand's first.
    k, n_sp = len(sb), sp.ndim - len(sc) - len(sb)
    perm = list(range(k)) + list(range(k + n_sp, out.ndim)) + list(range(k, k + n_sp))
    return jnp.transpose(out, perm) if perm != list(range(out.ndim)) else out


def _batched_sparse_dense(mat: BCOO, x: Any, mc: tuple, xc: tuple, mb: tuple, xb: tuple,
                          preferred_element_type: Any, sparse_left: bool) -> Any:
    """The product over the BCOO's batch axes: the dot batch dimensions (its leading ones) map with the dense
    operand's, its other batch axes are free; a ``kiln.vmap`` per batch axis around the unbatched product."""
    nb = mat.n_batch
    mb = tuple(_axis(d, mat.ndim, "bcoo_dot_general") for d in mb)
    xb = tuple(_axis(d, x.ndim, "bcoo_dot_general") for d in xb)
    if len(mb) != len(xb):
        raise TypeError(f"bcoo_dot_general: {len(mb)} batch dimension(s) for one operand but {len(xb)} for the other")
    k = len(mb)
    if mb != tuple(range(k)) or k > nb:
        raise NotImplementedError(f"bcoo_dot_general: the batch dimensions {mb} of the BCOO operand must be its "
                                  f"leading batch axes (0, 1, ...; it has n_batch={nb}); move them there with "
                                  "bcoo_transpose, or map with kiln.vmap")
    if any(_axis(d, mat.ndim, "bcoo_dot_general") < nb for d in mc):
        raise NotImplementedError(f"bcoo_dot_general: contracting over a batch axis of a BCOO (n_batch={nb}, "
                                  f"contracting dimensions {tuple(mc)}) is not supported; use .todense()")
    if tuple(mat.shape[:k]) != tuple(x.shape[d] for d in xb):
        raise TypeError(f"bcoo_dot_general requires batch dimensions to have the same shape, got {mat.shape[:k]} "
                        f"and {tuple(x.shape[d] for d in xb)}")
    if not nb:
        return _sparse_dense(mat, x, mc, xc, preferred_element_type, sparse_left)
    rest = [d for d in range(x.ndim) if d not in xb]
    if list(xb) + rest != list(range(x.ndim)):
        x = jnp.transpose(x, list(xb) + rest)
    mc_in = tuple(_axis(d, mat.ndim, "bcoo_dot_general") - nb for d in mc)
    xc_in = tuple(rest.index(_axis(d, x.ndim, "bcoo_dot_general")) for d in xc)

    def fn(a, xx):
        return _sparse_dense(a, xx, mc_in, xc_in, preferred_element_type, sparse_left)
    for _ in range(nb - k):  # free batch axes of the BCOO: x is shared
        fn = vmap(fn, in_axes=(0, None))
    for _ in range(k):  # dot batch axes: mapped together (outermost first)
        fn = vmap(fn, in_axes=(0, 0))
    return fn(mat, x)


def _sparse_dense(mat: BCOO, x: Any, mc: tuple, xc: tuple, preferred_element_type: Any, sparse_left: bool) -> Any:
    _unbatched(mat, "a matrix product")
    side = ("lhs", "rhs") if sparse_left else ("rhs", "lhs")
    if len(mc) != len(xc):
        raise TypeError(f"bcoo_dot_general: {len(mc)} contracting dimension(s) for the {side[0]} but {len(xc)} for "
                        f"the {side[1]}")
    mc = tuple(_axis(d, mat.ndim, "bcoo_dot_general") for d in mc)
    xc = tuple(_axis(d, x.ndim, "bcoo_dot_general") for d in xc)
    if len(set(mc)) != len(mc) or len(set(xc)) != len(xc):
        raise ValueError(f"bcoo_dot_general: repeated contracting dimensions {mc}, {xc}")
    m_sizes, x_sizes = tuple(mat.shape[d] for d in mc), tuple(x.shape[d] for d in xc)
    if m_sizes != x_sizes:
        shapes = (mat.shape, tuple(x.shape)) if sparse_left else (tuple(x.shape), mat.shape)
        sizes = (m_sizes, x_sizes) if sparse_left else (x_sizes, m_sizes)
        raise TypeError(f"bcoo_dot_general requires contracting dimensions to have the same shape, got {sizes[0]} "
                        f"and {sizes[1]} (operands of shapes {shapes[0]} and {shapes[1]}); check the orientation "
                        "of the operands (A @ x contracts A's last axis with x's first or second-to-last)")
    dtype = jnp.result_type(mat.data, x) if preferred_element_type is None else np.dtype(preferred_element_type)
    data = mat.data.astype(dtype)
    x = x.astype(dtype)
    m_free = [d for d in range(mat.ndim) if d not in mc]
    x_free = [d for d in range(x.ndim) if d not in xc]
    perm = list(xc) + x_free
    if perm != list(range(x.ndim)):
        x = jnp.transpose(x, perm)
    # The index columns, contracted first, taken with one gather (not per-column slices): XLA then computes them in a
    # kernel of their own instead of again for every element of the (nse, ...) product that reads them (a fusion of
    # slices into the gather); measured on XLA's CPU compiler, Cora-sized A @ h ran 5-8% faster.
    picked = mat.indices[:, np.asarray(list(mc) + m_free, np.int32)] if mc else mat.indices
    cols = tuple(picked[:, i] for i in range(len(mc)))
    out_shape = tuple(mat.shape[d] for d in m_free) + tuple(x.shape[len(xc):])
    if not m_free:  # a full contraction: entries out of range read 0
        gathered = x.at[cols].get(mode="fill", fill_value=0) if cols else \
            jnp.broadcast_to(x, (mat.nse,) + tuple(x.shape))
        return jnp.sum(data.reshape((mat.nse,) + (1,) * (gathered.ndim - 1)) * gathered, axis=0)
    rows = tuple(picked[:, len(mc) + i] for i in range(len(m_free)))
    if cols:
        # An entry whose contracted index is out of range adds nothing (JAX reads 0 there): send its output index
        # out of range too, so that the scatter drops it, and clamp the gather's index (XLA's gather clamps anyway).
        # This keeps the (nse, ...)-sized product free of masking.
        sizes = [mat.shape[d] for d in mc]
        ok = functools.reduce(operator.and_, [(c >= -n) & (c < n) for c, n in zip(cols, sizes)])
        rows = (jnp.where(ok, rows[0], out_shape[0]),) + rows[1:]
        cols = tuple(jnp.clip(c, -n, n - 1) for c, n in zip(cols, sizes))
        gathered = x.at[cols].get(mode="promise_in_bounds")
    else:
        gathered = jnp.broadcast_to(x, (mat.nse,) + tuple(x.shape))
    prod = data.reshape((mat.nse,) + (1,) * (gathered.ndim - 1)) * gathered
    prefix = m_free == list(range(len(m_free)))
    return jnp.zeros(out_shape, dtype).at[rows].add(prod, mode="drop",
                                                    indices_are_sorted=mat.indices_sorted and prefix,
                                                    unique_indices=mat.unique_indices and len(m_free) == mat.ndim)


@one_program(pytrees=("sp_mat",))
def bcoo_multiply_dense(sp_mat: BCOO, v: Any) -> Any:
    """The ``data`` of the elementwise product of ``sp_mat`` and the dense ``v`` (broadcast to ``sp_mat.shape``), as
    ``jax.experimental.sparse.bcoo_multiply_dense``; ``BCOO * v`` wraps it as a BCOO with ``sp_mat``'s indices."""
    if not isinstance(sp_mat, BCOO):
        raise TypeError(f"bcoo_multiply_dense: expected a BCOO array first, got {type(sp_mat).__name__}")
    v = jnp.asarray(v)
    if v.ndim == 0:
        return sp_mat.data * v
    try:
        ok = np.broadcast_shapes(tuple(v.shape), sp_mat.shape) == sp_mat.shape
    except ValueError:
        ok = False
    if not ok:
        raise NotImplementedError(f"BCOO * x: multiplication between sparse and dense is only implemented where the "
                                  f"output shape is the sparse array's; got shape={sp_mat.shape} and x of shape "
                                  f"{tuple(v.shape)}; use A.todense() * x")
    v = v.reshape((1,) * (sp_mat.ndim - v.ndim) + tuple(v.shape))
    n_sparse = sp_mat.n_sparse

    def one(data, indices, w):
        idx = tuple(indices[:, i] if w.shape[i] != 1 else 0 for i in range(n_sparse))
        return data * w.at[idx].get(mode="fill", fill_value=0)

    def nest(data, indices, w, n_batch):
        if not n_batch:
            return one(data, indices, w)
        if w.shape[0] == 1:
            return vmap(lambda d, i: nest(d, i, w[0], n_batch - 1))(data, indices)
        return vmap(lambda d, i, ww: nest(d, i, ww, n_batch - 1))(data, indices, w)
    return nest(sp_mat.data, sp_mat.indices, v, sp_mat.n_batch)


# --- constructors ----------------------------------------------------------------------------------

def _format_class(sparse_format: str, where: str, formats: Sequence[str] = _FORMATS) -> Any:
    """The class of ``sparse_format`` other than BCOO (None for 'bcoo'), as JAX's ``sparse.empty``/``eye`` pick it."""
    if sparse_format not in formats:
        raise ValueError(f"{where}: sparse_format={sparse_format!r} not recognized; must be one of {list(formats)}")
    if sparse_format == "bcoo":
        return None
    from .bcsr import BCSR  # bcsr and coo_csr import this module
    from .coo_csr import COO, CSC, CSR
    return {"bcsr": BCSR, "coo": COO, "csr": CSR, "csc": CSC}[sparse_format]


def _layout_options(**options: int) -> dict:
    """The layout options given (not 0), passed on to another format's constructor, which refuses those it lacks."""
    return {name: value for name, value in options.items() if value}


def empty(shape: Sequence[int], dtype: Any = None, index_dtype: Any = "int32", sparse_format: str = "bcoo", *,
          n_batch: int = 0, n_dense: int = 0, nse: int = 0) -> BCOO:
    """An all-zero BCOO array of ``shape`` with ``nse`` padding entries (as ``jax.experimental.sparse.empty``), or
    an empty array of another ``sparse_format`` ('bcsr', 'coo', 'csr', 'csc')."""
    cls = _format_class(sparse_format, "sparse.empty")
    if cls is not None:
        return cls._empty(tuple(shape), dtype=dtype, index_dtype=index_dtype,
                          **_layout_options(n_batch=n_batch, n_dense=n_dense, nse=nse))
    shape = tuple(_index(s, "each entry of shape", "sparse.empty") for s in shape)
    n_batch, n_dense = _index(n_batch, "n_batch", "sparse.empty"), _index(n_dense, "n_dense", "sparse.empty")
    nse = _index(nse, "nse", "sparse.empty")
    n_sparse = len(shape) - n_batch - n_dense
    if n_sparse < 0:
        raise ValueError(f"sparse.empty: n_batch={n_batch} + n_dense={n_dense} exceeds the rank of shape={shape}")
    batch, sparse, dense = shape[:n_batch], shape[n_batch:n_batch + n_sparse], shape[n_batch + n_sparse:]
    data = jnp.zeros(batch + (nse,) + dense, dtype)
    indices = jnp.asarray(np.broadcast_to(np.asarray(sparse, np.dtype(index_dtype)), batch + (nse, n_sparse)))
    return BCOO((data, indices), shape=shape, indices_sorted=True, unique_indices=True)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, index_dtype: Any = "int32",
        sparse_format: str = "bcoo", *, n_batch: int = 0, n_dense: int = 0) -> BCOO:
    """The ``N x M`` sparse identity with ones on diagonal ``k`` (as ``jax.experimental.sparse.eye``), in BCOO or
    another ``sparse_format`` ('coo', 'csr', 'csc'; JAX has no BCSR identity)."""
    cls = _format_class(sparse_format, "sparse.eye", formats=("bcoo", "coo", "csr", "csc"))
    N = _index(N, "N", "sparse.eye")
    M = N if M is None else _index(M, "M", "sparse.eye")
    if isinstance(k, Tracer):
        raise ConcretizationTypeError("sparse.eye: k must be a static Python int, got a traced value")
    k = operator.index(k)
    if cls is not None:
        return cls._eye(N, M, k, dtype=dtype, index_dtype=index_dtype,
                        **_layout_options(n_batch=n_batch, n_dense=n_dense))
    if n_batch or n_dense:
        return bcoo_fromdense(jnp.eye(N, M, k, dtype=dtype), n_batch=n_batch, n_dense=n_dense,
                              index_dtype=index_dtype)
    size = min(N, M - k) if k > 0 else min(N + k, M)
    if size <= 0:
        return empty((N, M), dtype=dtype, index_dtype=index_dtype)
    i = np.arange(size)
    indices = np.stack([i + max(-k, 0), i + max(k, 0)], axis=1).astype(np.dtype(index_dtype))
    return BCOO((jnp.ones(size, dtype), jnp.asarray(indices)), shape=(N, M), indices_sorted=True,
                unique_indices=True)
