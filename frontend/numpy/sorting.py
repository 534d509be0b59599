"""Sorting and searching of kiln.numpy: sort, argsort, lexsort, searchsorted, unique (and the
array-API ``unique_*`` variants).

All of it is built on the ``sort`` primitive (``kiln.lax.sort``), ``gather`` and elementwise ops.
Floats sort as NumPy sorts them: NaNs last, ``-0.0 == 0.0``; sorts are always stable.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.errors import AxisError, ConcretizationTypeError
from ..core.tracing import abstractify, materialize
from ..driver.eager_jit import eager_jit
from ._util import as_operand, canonical_axis, check_arraylike, promote_dtypes, static_int

__all__ = [
    "argpartition", "partition", "sort", "sort_complex", "argsort", "lexsort", "searchsorted", "unique",
    "unique_values", "unique_counts", "unique_inverse", "unique_all",
]


def _operand(fname: str, a: Any) -> Any:
    check_arraylike(fname, a)
    return as_operand(promote_dtypes(fname, a)[0])


def _no_order(fname: str, order: Any) -> None:
    if order is not None:
        raise TypeError(f"kiln.numpy.{fname}: order= is not supported (kiln arrays have no structured dtypes)")


def _flatten_or_axis(fname: str, a: Any, axis: Any) -> tuple[Any, int]:
    aval = abstractify(a)
    if axis is None:
        return lax.reshape(a, (aval.size,)), 0
    return a, canonical_axis(fname, axis, aval.ndim)


@eager_jit("axis", "kind", "order", "stable", "descending")
def sort(a: Any, axis: int | None = -1, *, kind: str | None = None, order: Any = None, stable: bool = True,
         descending: bool = False) -> Any:
    """A sorted copy of ``a`` along ``axis`` (flattened when ``axis`` is None).

    NaNs sort last (first when ``descending``). The sort is always stable; ``kind`` is ignored.
    """
    _no_order("sort", order)
    a = _operand("sort", a)
    a, axis = _flatten_or_axis("sort", a, axis)
    if descending:
        return lax.rev(lax.sort(lax.rev(a, (axis,)), dimension=axis), (axis,))
    return lax.sort(a, dimension=axis)


def _kth(fname: str, a: Any, kth: Any, axis: Any) -> tuple[Any, int]:
    a = _operand(fname, a)
    aval = abstractify(a)
    if aval.ndim == 0:
        raise AxisError(f"kiln.numpy.{fname}: needs an array of at least one dimension, got a 0-d array")
    axis = canonical_axis(fname, axis, aval.ndim)
    if not isinstance(kth, (int, np.integer)) or isinstance(kth, bool):
        raise TypeError(f"kiln.numpy.{fname}: kth must be a static int (as in JAX; sequences of kth are not "
                        f"supported), got {kth!r}")
    n = aval.shape[axis]
    if not -n <= kth < n:
        raise ValueError(f"kiln.numpy.{fname}: kth {kth} is out of bounds for an axis of length {n}")
    return a, axis


@eager_jit("kth", "axis")
def partition(a: Any, kth: int, axis: int = -1) -> Any:
    """``a`` rearranged along ``axis`` so that position ``kth`` holds the value it would have sorted,
    smaller-or-equal values before it and larger-or-equal after (the order within each side is
    unspecified, as in NumPy; kiln returns them sorted). ``kth`` is a static int."""
    a, axis = _kth("partition", a, kth, axis)
    return lax.sort(a, dimension=axis)


@eager_jit("kth", "axis")
def argpartition(a: Any, kth: int, axis: int = -1) -> Any:
    """Indices that partition ``a`` along ``axis`` around position ``kth`` (see :func:`partition`)."""
    a, axis = _kth("argpartition", a, kth, axis)
    return lax.argsort(a, dimension=axis, index_dtype=dtypes.default_int_dtype())


@eager_jit()
def sort_complex(a: Any) -> Any:
    """``a`` sorted along its last axis, as a complex array (by real part, then imaginary part)."""
    out = sort(a, axis=-1)
    dtype = dtypes.result_type(abstractify(out).dtype, dtypes.complex64)
    return lax.convert_element_type(out, dtype) if abstractify(out).dtype != dtype else out


@eager_jit("axis", "kind", "order", "stable", "descending")
def argsort(a: Any, axis: int | None = -1, kind: str | None = None, order: Any = None, *, stable: bool = True,
            descending: bool = False) -> Any:
    """Indices that sort ``a`` along ``axis`` (stable: equal elements keep their order, also when
    ``descending``). NaNs sort last (first when descending)."""
    _no_order("argsort", order)
    a = _operand("argsort", a)
    a, axis = _flatten_or_axis("argsort", a, axis)
    return lax.argsort(a, dimension=axis, descending=descending, index_dtype=dtypes.default_int_dtype())


@eager_jit("axis", sequences=("keys",))
def lexsort(keys: Any, axis: int = -1) -> Any:
    """Indices that sort by several keys: the last key is the primary one (as ``numpy.lexsort``).

    ``keys`` is a sequence of arrays of one shape, or an array whose first axis indexes the keys.
    """
    if isinstance(keys, (tuple, list)):
        keys = [_operand("lexsort", k) for k in keys]
    else:
        arr = _operand("lexsort", keys)
        aval = abstractify(arr)
        if aval.ndim == 0:
            raise TypeError("kiln.numpy.lexsort: keys must be a sequence of arrays or an array of at least one "
                            "dimension, got a 0-d array")
        keys = [lax.reshape(lax.slice(arr, (i,) + (0,) * (aval.ndim - 1), (i + 1,) + aval.shape[1:]),
                            aval.shape[1:]) for i in range(aval.shape[0])]
    if not keys:
        raise TypeError("kiln.numpy.lexsort: needs at least one key")
    shapes = {abstractify(k).shape for k in keys}
    if len(shapes) != 1:
        raise ValueError(f"kiln.numpy.lexsort: all keys need the same shape, got {sorted(shapes)}")
    shape = shapes.pop()
    if not shape:
        raise ValueError("kiln.numpy.lexsort: keys must have at least one dimension (got 0-d keys)")
    axis = canonical_axis("lexsort", axis, len(shape))
    idx = lax.broadcasted_iota(dtypes.default_int_dtype(), shape, axis)
    if shape[axis] <= 1:
        return idx
    out = lax.sort((*reversed(keys), idx), dimension=axis, num_keys=len(keys))
    return out[-1]


# -- searchsorted ----------------------------------------------------------------------------------
def _isnan(x: Any) -> Any:
    return lax.ne(x, x)


def _order_lt(x: Any, y: Any) -> Any:
    """``x < y`` in sort order (NaN after everything; complex: by real part, then imaginary)."""
    dtype = abstractify(x).dtype
    if dtype.kind == "c":
        xr, yr, xi, yi = lax.real(x), lax.real(y), lax.imag(x), lax.imag(y)
        re_eq = lax.bitwise_or(lax.eq(xr, yr), lax.bitwise_and(_isnan(xr), _isnan(yr)))
        return lax.bitwise_or(_order_lt(xr, yr), lax.bitwise_and(re_eq, _order_lt(xi, yi)))
    if dtypes.is_inexact(dtype):
        return lax.bitwise_or(lax.lt(x, y), lax.bitwise_and(_isnan(y), lax.bitwise_not(_isnan(x))))
    return lax.lt(x, y)


def _take_1d(a: Any, idx: Any) -> Any:
    """``a[idx]`` for a 1-D ``a`` and in-bounds integer ``idx`` of any shape."""
    shape = abstractify(idx).shape
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    return lax.gather(a, lax.reshape(idx, shape + (1,)), dn, (1,))


@eager_jit("side", "method")
def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *, method: str = "scan") -> Any:
    """Indices at which to insert ``v`` into the sorted 1-D ``a`` to keep it sorted.

    ``side='left'`` gives the first suitable index, ``'right'`` the last. ``sorter`` (indices that
    sort ``a``) lets ``a`` be unsorted. ``method='scan'`` (default; also ``'scan_unrolled'``,
    ``'sort'``) is a binary search of ceil(log2(n + 1)) vectorised steps; ``'compare_all'``
    compares every pair (O(n * m), fast for small arrays).
    """
    if side not in ("left", "right"):
        raise ValueError(f"kiln.numpy.searchsorted: side must be 'left' or 'right', got {side!r}")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"kiln.numpy.searchsorted: unknown method {method!r}; use 'scan', 'scan_unrolled', "
                         "'sort' or 'compare_all'")
    check_arraylike("searchsorted", a, v)
    a, v = (as_operand(x) for x in promote_dtypes("searchsorted", a, v))
    a_aval, v_aval = abstractify(a), abstractify(v)
    if a_aval.ndim != 1:
        raise ValueError(f"kiln.numpy.searchsorted: a must be 1-D, got shape {a_aval.shape}")
    index_dtype = dtypes.default_int_dtype()
    n = a_aval.shape[0]
    if sorter is not None:
        check_arraylike("searchsorted", sorter)
        s_aval = abstractify(sorter)
        if s_aval.shape != (n,) or s_aval.dtype.kind not in "iu":
            raise ValueError(f"kiln.numpy.searchsorted: sorter must be a 1-D integer array of a's length {n}, "
                             f"got {s_aval.str_short()}")
        sorter = materialize(as_operand(sorter))
    if n == 0 or v_aval.size == 0:
        return lax.broadcast_in_dim(lax.literal(0, index_dtype), v_aval.shape, ())
    return _searchsorted(materialize(a), materialize(v), sorter, side=side, compare_all=method == "compare_all")


@eager_jit("side", "compare_all")
def _searchsorted(a: Any, v: Any, sorter: Any, *, side: str, compare_all: bool) -> Any:
    index_dtype = dtypes.default_int_dtype()
    n = abstractify(a).shape[0]
    v_aval = abstractify(v)
    if sorter is not None:
        a = _take_1d(a, sorter)

    def goes_right(a_val, v_val):  # True: v belongs after a_val
        return lax.bitwise_not(_order_lt(v_val, a_val)) if side == "right" else _order_lt(a_val, v_val)

    if compare_all:
        shape = v_aval.shape + (n,)
        a_b = lax.broadcast_in_dim(a, shape, (len(shape) - 1,))
        v_b = lax.broadcast_in_dim(v, shape, tuple(range(v_aval.ndim)))
        hits = lax.convert_element_type(goes_right(a_b, v_b), index_dtype)
        return lax.reduce_sum(hits, (len(shape) - 1,))

    def full(value):
        return lax.broadcast_in_dim(lax.literal(value, index_dtype), v_aval.shape, ())
    # Binary search: the answer is in [lo, hi]; every step halves hi - lo.
    lo, hi, one = full(0), full(n), full(1)
    for _ in range(n.bit_length()):
        mid = lax.shift_right_logical(lax.add(lo, hi), one)
        right = goes_right(_take_1d(a, lax.min(mid, full(n - 1))), v)
        active = lax.lt(lo, hi)
        lo = lax.select(lax.bitwise_and(active, right), lax.add(mid, one), lo)
        hi = lax.select(lax.bitwise_and(active, lax.bitwise_not(right)), mid, hi)
    return lo


# -- unique ----------------------------------------------------------------------------------------
class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _resize(x: Any, k: int, fill: Any) -> Any:
    """The first ``k`` entries of ``x`` along axis 0, padded with ``fill`` when ``x`` is shorter."""
    aval = abstractify(x)
    n = aval.shape[0]
    if k <= n:
        return lax.slice(x, (0,) * aval.ndim, (k,) + aval.shape[1:])
    config = [(0, k - n, 0)] + [(0, 0, 0)] * (aval.ndim - 1)
    return lax.pad(x, lax.literal(fill, aval.dtype), config)


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None, *, equal_nan: bool = True, size: int | None = None, fill_value: Any = None,
           sorted: bool = True) -> Any:  # noqa: A002 - NumPy's name
    """The sorted unique values of ``ar`` (flattened when ``axis`` is None; unique slices along
    ``axis`` otherwise), optionally with the index of each one's first occurrence, the inverse
    indices (``values[inverse]`` rebuilds ``ar``) and the counts.

    The number of unique values is data-dependent: under ``jit`` pass ``size=`` (static); the result
    then has exactly ``size`` entries, the missing ones filled with ``fill_value`` (default: the
    smallest unique value), their index with 0 and their count with 0. Outside ``jit``, ``size=None``
    reads the number of unique values from the device.
    """
    fname = "unique"
    x = materialize(_operand(fname, ar))
    aval = abstractify(x)
    if size is not None:
        size = static_int(fname, "size", size)
        if size < 0:
            raise ValueError(f"kiln.numpy.unique: size must be non-negative, got {size}")
    int_dtype = dtypes.default_int_dtype()
    if axis is None:
        slice_shape: tuple[int, ...] = ()
        inverse_shape, ax, n = aval.shape, 0, aval.size
    else:
        ax = canonical_axis(fname, axis, aval.ndim)
        slice_shape = tuple(d for i, d in enumerate(aval.shape) if i != ax)
        inverse_shape, n = (aval.shape[ax],), aval.shape[ax]
    k = int(np.prod(slice_shape, dtype=np.int64))
    fill = None if fill_value is None else materialize(_scalar_of(fname, fill_value, aval.dtype))
    if n == 0:
        count = 0 if size is None else size
        if count and fill is None:
            raise ValueError("kiln.numpy.unique: an empty array has no unique values to fill with; pass fill_value=")
        values = lax.broadcast_in_dim(lax.literal(0, aval.dtype) if fill is None else fill, (count, k), ())
        zeros = lax.broadcast_in_dim(lax.literal(0, int_dtype), (count,), ())
        inverse = lax.broadcast_in_dim(lax.literal(0, int_dtype), inverse_shape, ())
        return _unique_result(values, zeros, inverse, zeros, slice_shape, ax, aval.ndim, axis,
                              return_index, return_inverse, return_counts)
    values, index, inverse, counts, n_unique = _unique_core(
        x, fill, axis=ax if axis is not None else None, equal_nan=bool(equal_nan),
        size=n if size is None else size, with_inverse=bool(return_inverse))
    if size is None:
        try:
            size = int(n_unique)
        except ConcretizationTypeError:
            raise ConcretizationTypeError(
                "kiln.numpy.unique: the number of unique values depends on the data, so it cannot be known "
                "while tracing (under jit): pass a static size= (the result is padded with fill_value or "
                "truncated to it)") from None
        values, index, counts = (_resize(v, size, 0) for v in (values, index, counts))
    return _unique_result(values, index, inverse, counts, slice_shape, ax, aval.ndim, axis,
                          return_index, return_inverse, return_counts)


@eager_jit("axis", "equal_nan", "size", "with_inverse")
def _unique_core(x: Any, fill: Any, *, axis: int | None, equal_nan: bool, size: int, with_inverse: bool):
    """Unique rows of ``x`` (its flattened elements, or its slices along ``axis``): values as rows
    ``(size, k)``, first-occurrence index, inverse (or None), counts, and the number of unique rows."""
    aval = abstractify(x)
    int_dtype = dtypes.default_int_dtype()
    if axis is None:
        rows = lax.reshape(x, (aval.size, 1))
    else:
        moved = lax.transpose(x, (axis,) + tuple(i for i in range(aval.ndim) if i != axis))
        rows = lax.reshape(moved, (aval.shape[axis], int(np.prod(abstractify(moved).shape[1:], dtype=np.int64))))
    n, k = abstractify(rows).shape
    # 1. Sort the rows lexicographically (stable, so each group starts with its first occurrence).
    cols = [lax.reshape(lax.slice(rows, (0, j), (n, j + 1)), (n,)) for j in range(k)]
    iota = lax.iota(int_dtype, n)
    if k:
        *sorted_cols, perm = lax.sort((*cols, iota), dimension=0, num_keys=k)
    else:
        sorted_cols, perm = [], iota
    # 2. Where does a new group start?
    new = lax.broadcast_in_dim(lax.literal(False, np.bool_), (n - 1,), ())  # rows of size 0 are all equal
    for c in sorted_cols:
        a, b = lax.slice(c, (1,), (n,)), lax.slice(c, (0,), (n - 1,))
        differ = lax.ne(a, b)
        if equal_nan and dtypes.is_inexact(aval.dtype):
            differ = lax.bitwise_and(differ, lax.bitwise_not(lax.bitwise_and(_isnan(a), _isnan(b))))
        new = lax.bitwise_or(new, differ)
    first = lax.concatenate([lax.broadcast_in_dim(lax.literal(True, np.bool_), (1,), ()), new], 0)
    group = lax.sub(lax.cumsum(lax.convert_element_type(first, int_dtype)), lax.broadcast_in_dim(
        lax.literal(1, int_dtype), (n,), ()))
    n_unique = lax.add(lax.reshape(lax.slice(group, (n - 1,), (n,)), ()), lax.literal(1, int_dtype))
    # 3. Move each group's first row to the front (a stable sort on "is not first").
    _, first_pos, first_idx = lax.sort((lax.bitwise_not(first), iota, perm), dimension=0, num_keys=1)
    valid = lax.lt(iota, lax.broadcast_in_dim(n_unique, (n,), ()))
    full_n = lax.broadcast_in_dim(lax.literal(n, int_dtype), (n,), ())
    first_pos = lax.select(valid, first_pos, full_n)
    next_pos = lax.concatenate([lax.slice(first_pos, (1,), (n,)), lax.slice(full_n, (0,), (1,))], 0)
    counts = lax.sub(next_pos, first_pos)  # 0 past the last group
    first_idx = lax.select(valid, first_idx, lax.broadcast_in_dim(lax.literal(0, int_dtype), (n,), ()))
    # Values: the rows at the first occurrences; past the last group, the fill value.
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    values = lax.gather(rows, lax.reshape(first_idx, (n, 1)), dn, (1, k))
    fill_row = (lax.reshape(lax.slice(values, (0, 0), (1, k)), (k,)) if fill is None
                else lax.broadcast_in_dim(fill, (k,), ()))
    values = lax.select(lax.broadcast_in_dim(valid, (n, k), (0,)), values,
                        lax.broadcast_in_dim(fill_row, (n, k), (1,)))
    if size > n:
        values = lax.concatenate([values, lax.broadcast_in_dim(fill_row, (size - n, k), (1,))], 0)
    else:
        values = _resize(values, size, 0)
    inverse = None
    if with_inverse:  # each element's group, back in the original order (sort the groups by ``perm``)
        _, inv = lax.sort((perm, group), dimension=0, num_keys=1)
        inverse = lax.reshape(inv, aval.shape if axis is None else (n,))
    return values, _resize(first_idx, size, 0), inverse, _resize(counts, size, 0), n_unique


def _scalar_of(fname: str, value: Any, dtype: np.dtype) -> Any:
    check_arraylike(fname, value)
    if isinstance(value, (bool, int, float, complex, np.ndarray, np.generic)):
        if np.ndim(value) != 0:
            raise ValueError(f"kiln.numpy.{fname}: fill_value must be a scalar, got shape {np.shape(value)}")
        return lax.literal(np.asarray(value).astype(dtype), dtype)
    if abstractify(value).ndim != 0:
        raise ValueError(f"kiln.numpy.{fname}: fill_value must be a scalar, got shape {abstractify(value).shape}")
    return lax.convert_element_type(value, dtype)


def _unique_result(values, index, inverse, counts, slice_shape, ax, ndim, axis, return_index, return_inverse,
                   return_counts):
    m = abstractify(values).shape[0]
    if axis is None:
        values = lax.reshape(values, (m,))
    else:
        values = lax.reshape(values, (m,) + tuple(slice_shape))
        perm = list(range(1, ndim))
        perm.insert(ax, 0)
        values = lax.transpose(values, perm)
    out = [values]
    if return_index:
        out.append(index)
    if return_inverse:
        out.append(inverse)
    if return_counts:
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


def unique_values(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted unique values of ``x`` (flattened), as ``unique(x)``."""
    return unique(x, size=size, fill_value=fill_value)


def unique_counts(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> UniqueCountsResult:
    """``(values, counts)`` of the unique values of ``x``."""
    return UniqueCountsResult(*unique(x, return_counts=True, size=size, fill_value=fill_value))


def unique_inverse(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> UniqueInverseResult:
    """``(values, inverse_indices)``; ``inverse_indices`` has ``x``'s shape."""
    return UniqueInverseResult(*unique(x, return_inverse=True, size=size, fill_value=fill_value))


def unique_all(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> UniqueAllResult:
    """``(values, indices, inverse_indices, counts)`` of the unique values of ``x``."""
    return UniqueAllResult(*unique(x, return_index=True, return_inverse=True, return_counts=True, size=size,
                                   fill_value=fill_value))
