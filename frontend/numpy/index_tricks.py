"""Index helpers of kiln.numpy: flat <-> multi-dimensional indices (unravel_index, ravel_multi_index),
open meshes (ix_), the grid and concatenation objects (mgrid, ogrid, r_, c_), the indices of
triangles and diagonals (tril_indices, triu_indices, diag_indices, mask_indices and their ``*_from``
forms) and fill_diagonal.

Index arrays that depend only on static sizes are computed with NumPy at trace time (as constants);
everything that depends on array values goes through kiln's operations.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core import dtypes
from ..core.errors import ConcretizationTypeError
from ..core.tracing import Tracer, abstractify, concrete
from ..driver.eager_jit import eager_jit
from ._util import check_arraylike, is_array, static_int
from .creation import arange, array, asarray, linspace, meshgrid, ones
from .index_funcs import nonzero
from .shape import concatenate, expand_dims, ravel, reshape, stack, transpose
from .ufuncs import clip, where

__all__ = [
    "c_", "diag_indices", "diag_indices_from", "fill_diagonal", "ix_", "mask_indices", "mgrid", "ogrid", "r_",
    "ravel_multi_index", "tril_indices", "tril_indices_from", "triu_indices", "triu_indices_from", "unravel_index",
]


def _index_array(values: np.ndarray) -> Any:
    return asarray(np.asarray(values).astype(dtypes.default_int_dtype()))


def _integer_array(fname: str, x: Any, what: str) -> Any:
    check_arraylike(fname, x)
    x = asarray(x)
    if abstractify(x).dtype.kind not in "iu":
        raise TypeError(f"kiln.numpy.{fname}: {what} must be integers, got {abstractify(x).dtype.name}")
    return x


# -- flat and multi-dimensional indices --------------------------------------------------------------
@eager_jit("shape")
def unravel_index(indices: Any, shape: Any) -> tuple[Any, ...]:
    """The multi-dimensional indices into an array of ``shape`` of the flat ``indices``.

    As in JAX, negative indices (down to ``-size``) count from the end, and out-of-bounds indices are
    clipped to the first or last element instead of raising.
    """
    idx = _integer_array("unravel_index", indices, "indices")
    dims = list(shape) if isinstance(shape, (tuple, list)) else [shape]
    dims = [static_int("unravel_index", "each dimension of shape", d) for d in dims]
    out: list[Any] = [None] * len(dims)
    rest = idx
    for i in range(len(dims) - 1, -1, -1):
        rest, out[i] = rest // dims[i], rest % dims[i]
    above = rest > 0
    below = rest < -1 if abstractify(idx).dtype.kind == "i" else None
    result = []
    for d, o in zip(dims, out):
        o = where(above, d - 1, o)
        if below is not None:
            o = where(below, 0, o)
        result.append(o)
    return tuple(result)


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise", order: str = "C", *,
                      dtype: Any = None) -> Any:
    """The flat indices into an array of shape ``dims`` of the multi-dimensional ``multi_index``.

    ``mode``: ``'raise'`` (out-of-bounds indices are an error: needs concrete indices, so not under
    ``jit``), ``'wrap'``, ``'clip'`` or ``'ignore'``; ``order``: ``'C'`` (row-major) or ``'F'``.
    """
    if mode not in ("raise", "wrap", "clip", "ignore"):
        raise ValueError(f"kiln.numpy.ravel_multi_index: mode must be 'raise', 'wrap', 'clip' or 'ignore', "
                         f"got {mode!r}")
    if order not in ("C", "F"):
        raise ValueError(f"kiln.numpy.ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    dims = tuple(static_int("ravel_multi_index", "each entry of dims", d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"kiln.numpy.ravel_multi_index: got {len(multi_index)} index arrays for {len(dims)} "
                         "dimensions")
    idx = [_integer_array("ravel_multi_index", i, "the indices") for i in multi_index]
    out_dtype = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.result_type(
        dtypes.default_int_dtype(), *idx)
    if out_dtype.kind not in "iu":
        raise ValueError(f"kiln.numpy.ravel_multi_index: dtype must be an integer type, got {out_dtype.name}")
    if int(np.prod(dims, dtype=object)) - 1 > np.iinfo(out_dtype).max:
        raise ValueError(f"kiln.numpy.ravel_multi_index: dtype {out_dtype.name} cannot hold the flat indices of "
                         f"an array of shape {dims}; pass a wider dtype=")
    if mode == "raise":
        for i, d in zip(idx, dims):
            if isinstance(i, Tracer) and concrete(i) is None:
                raise ConcretizationTypeError(
                    "kiln.numpy.ravel_multi_index: mode='raise' checks the indices' values, which are not known "
                    "under jit; use mode='wrap' or mode='clip'")
            v = np.asarray(concrete(i))
            if np.any((v < 0) | (v >= d)):
                raise ValueError(f"kiln.numpy.ravel_multi_index: an index is out of bounds for dimension of size "
                                 f"{d}; use mode='wrap' or mode='clip'")
    elif mode == "clip":
        idx = [clip(i, 0, d - 1) for i, d in zip(idx, dims)]
    elif mode == "wrap":
        idx = [i % d for i, d in zip(idx, dims)]
    strides = np.ones(len(dims), dtype=object)
    order_dims = range(len(dims) - 2, -1, -1) if order == "C" else range(1, len(dims))
    for k in order_dims:
        strides[k] = strides[k + 1] * dims[k + 1] if order == "C" else strides[k - 1] * dims[k - 1]
    out = asarray(0, dtype=out_dtype)
    for i, s in zip(idx, strides):
        out = out + i.astype(out_dtype) * asarray(int(s), dtype=out_dtype)
    return out


def ix_(*args: Any) -> tuple[Any, ...]:
    """An open mesh from 1-D sequences: argument ``k`` reshaped to have its length on axis ``k`` and 1
    elsewhere, so that ``a[ix_(rows, cols)]`` selects the cross product. Boolean arguments stand for
    their nonzero positions (which need concrete values)."""
    check_arraylike("ix_", *args)
    n = len(args)
    out = []
    for k, a in enumerate(args):
        a = asarray(a)
        aval = abstractify(a)
        if aval.ndim != 1:
            raise ValueError(f"kiln.numpy.ix_: each argument must be 1-D, got shape {aval.shape} for argument {k}")
        if aval.dtype == np.bool_:
            a = nonzero(a)[0]
        shape = [1] * n
        shape[k] = abstractify(a).shape[0]
        out.append(reshape(a, tuple(shape)))
    return tuple(out)


# -- mgrid, ogrid, r_, c_ ----------------------------------------------------------------------------
def _static_part(name: str, what: str, value: Any) -> Any:
    if isinstance(value, Tracer):
        c = concrete(value)
        if c is None:
            raise ConcretizationTypeError(f"kiln.numpy.{name}: the slice {what} must be static (a Python or NumPy "
                                          "number), not a traced value")
        value = np.asarray(c)[()]
    elif is_array(value):
        value = np.asarray(value)[()]
    return value


def _grid_1d(key: slice, name: str) -> Any:
    start = _static_part(name, "start", key.start)
    stop = _static_part(name, "stop", key.stop)
    step = _static_part(name, "step", key.step)
    start = 0 if start is None else start
    step = 1 if step is None else step
    if stop is None:
        raise ValueError(f"kiln.numpy.{name}: every slice needs a stop value, got {key}")
    if isinstance(step, (complex, np.complexfloating)):
        return linspace(start, stop, int(abs(step)))
    return arange(start, stop, step)


class _Grid:
    def __init__(self, name: str, sparse: bool):
        self._name, self._sparse = name, sparse

    def __getitem__(self, key: slice | tuple[slice, ...]) -> Any:
        if isinstance(key, slice):
            return _grid_1d(key, self._name)
        if not isinstance(key, tuple) or not all(isinstance(k, slice) for k in key):
            raise TypeError(f"kiln.numpy.{self._name}: index with slices, as {self._name}[0:5, 0:3:4j]")
        axes = [_grid_1d(k, self._name) for k in key]
        if not axes:
            return arange(0) if not self._sparse else []
        dtype = dtypes.result_type(*axes)
        axes = [a.astype(dtype) for a in axes]
        grids = meshgrid(*axes, indexing="ij", sparse=self._sparse)
        return grids if self._sparse else stack(grids, 0)

    def __repr__(self) -> str:
        return f"kiln.numpy.{self._name}"


mgrid = _Grid("mgrid", sparse=False)
mgrid.__doc__ = ("A dense mesh: ``mgrid[0:3, 0:4]`` is ``stack(meshgrid(arange(3), arange(4), indexing='ij'))``; "
                 "a complex step ``5j`` means 5 points from start to stop inclusive, as linspace.")
ogrid = _Grid("ogrid", sparse=True)
ogrid.__doc__ = "An open (sparse) mesh: as ``mgrid``, but a list of broadcastable arrays."


class _Concat:
    """``r_``/``c_``: concatenate slices (as ranges), scalars and arrays along an axis."""

    def __init__(self, name: str, axis: int, ndmin: int, trans1d: int):
        self._name, self._params = name, (axis, ndmin, trans1d)

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self._params
        matrix = -1
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                matrix = 0 if directive == "r" else 1
            else:
                parts = directive.split(",")
                try:
                    values = [int(p) for p in parts[:3]]
                except ValueError:
                    raise ValueError(f"kiln.numpy.{self._name}: could not understand the directive {directive!r}; "
                                     "expected 'r', 'c' or 'axis[,ndmin[,trans1d]]' of integers") from None
                params = [axis, ndmin, trans1d]
                params[:len(values)] = values
                axis, ndmin, trans1d = params
        out = []
        for item in items:
            if isinstance(item, str):
                raise ValueError(f"kiln.numpy.{self._name}: a string directive must come first, got {item!r} later")
            if isinstance(item, slice):
                obj, item_ndim = _grid_1d(item, self._name), 0
            else:
                obj = array(item, copy=False) if not is_array(item) else item
                item_ndim = abstractify(obj).ndim
            obj = array(obj, copy=False, ndmin=ndmin)
            if trans1d != -1 and item_ndim < ndmin:
                k2, k1 = ndmin - item_ndim, trans1d
                if k1 < 0:
                    k1 += k2 + 1
                defaxes = list(range(ndmin))
                obj = transpose(obj, defaxes[:k1] + defaxes[k2:] + defaxes[k1:k2])
            out.append(obj)
        if not out:
            return asarray(np.zeros((0,), dtypes.default_float_dtype()))
        res = concatenate(out, axis=axis)
        if matrix != -1 and abstractify(res).ndim == 1:
            res = expand_dims(res, matrix)
        return res

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"kiln.numpy.{self._name}"


r_ = _Concat("r_", 0, 1, -1)
r_.__doc__ = "Concatenate along the first axis: ``r_[1:4, 0, array([7, 8])]``; slices become ranges."
c_ = _Concat("c_", -1, 2, 0)
c_.__doc__ = "Concatenate along the last axis, 1-D items as columns: ``c_[array([1, 2]), array([3, 4])]``."


# -- triangles and diagonals -------------------------------------------------------------------------
def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """The row and column indices of the lower triangle (on and below diagonal ``k``) of an
    ``(n, m)`` array (static sizes)."""
    n, k = static_int("tril_indices", "n", n), static_int("tril_indices", "k", k)
    m = n if m is None else static_int("tril_indices", "m", m)
    return tuple(_index_array(i) for i in np.tril_indices(n, k, m))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """The row and column indices of the upper triangle (on and above diagonal ``k``) of an
    ``(n, m)`` array (static sizes)."""
    n, k = static_int("triu_indices", "n", n), static_int("triu_indices", "k", k)
    m = n if m is None else static_int("triu_indices", "m", m)
    return tuple(_index_array(i) for i in np.triu_indices(n, k, m))


def _shape_2d(fname: str, arr: Any) -> tuple[int, ...]:
    shape = tuple(np.shape(arr)) if not hasattr(arr, "shape") else tuple(arr.shape)
    if len(shape) != 2:
        raise ValueError(f"kiln.numpy.{fname}: needs a 2-D array, got shape {shape}")
    return shape


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    """The lower-triangle indices of a 2-D array (of its shape)."""
    n, m = _shape_2d("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    """The upper-triangle indices of a 2-D array (of its shape)."""
    n, m = _shape_2d("triu_indices_from", arr)
    return triu_indices(n, k, m)


def diag_indices(n: int, ndim: int = 2) -> tuple[Any, ...]:
    """``ndim`` copies of ``arange(n)``: the indices of the main diagonal of an ``(n,) * ndim`` array."""
    n, ndim = static_int("diag_indices", "n", n), static_int("diag_indices", "ndim", ndim)
    if n < 0 or ndim < 0:
        raise ValueError(f"kiln.numpy.diag_indices: n and ndim must be non-negative, got n={n}, ndim={ndim}")
    return (_index_array(np.arange(n)),) * ndim


def diag_indices_from(arr: Any) -> tuple[Any, ...]:
    """The main-diagonal indices of ``arr``, which must have at least 2 dimensions, all of one size."""
    check_arraylike("diag_indices_from", arr)
    shape = abstractify(arr).shape
    if len(shape) < 2:
        raise ValueError(f"kiln.numpy.diag_indices_from: needs at least 2 dimensions, got shape {shape}")
    if len(set(shape)) != 1:
        raise ValueError(f"kiln.numpy.diag_indices_from: all dimensions must have one size, got shape {shape}")
    return diag_indices(shape[0], len(shape))


def mask_indices(n: int, mask_func: Callable[[Any, int], Any], k: int = 0, *,
                 size: int | None = None) -> tuple[Any, Any]:
    """The indices where ``mask_func(ones((n, n)), k)`` is nonzero (``mask_func`` as ``triu``/``tril``).
    ``size`` as in :func:`nonzero` (needed under ``jit`` when the mask depends on traced values)."""
    n = static_int("mask_indices", "n", n)
    return nonzero(mask_func(ones((n, n)), k), size=size)


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """``a`` with its main diagonal set to ``val`` (repeated cyclically along it). A 2-D ``a`` may be
    rectangular (``wrap`` restarts the diagonal every ``ncols + 1`` rows of a tall array); more
    dimensions must all have one size.

    kiln arrays are immutable: pass ``inplace=False`` (the default ``True`` is an error, as in JAX);
    the result is a new array.
    """
    if inplace:
        raise ValueError("kiln.numpy.fill_diagonal: kiln arrays are immutable, so the diagonal cannot be filled in "
                         "place; pass inplace=False and use the returned array")
    check_arraylike("fill_diagonal", a, val)
    a = asarray(a)
    shape = abstractify(a).shape
    if len(shape) < 2:
        raise ValueError(f"kiln.numpy.fill_diagonal: needs an array of at least 2 dimensions, got shape {shape}")
    if len(shape) == 2:
        step = shape[1] + 1
        end = abstractify(a).size if wrap else min(shape[0], shape[1]) * shape[1]
    else:
        if len(set(shape)) != 1:
            raise ValueError(f"kiln.numpy.fill_diagonal: all dimensions must have one size, got shape {shape}")
        step = 1 + int(np.cumprod(shape[:-1]).sum())
        end = abstractify(a).size
    positions = np.arange(0, end, step)
    if positions.size == 0:
        return a
    v = ravel(asarray(val))
    nv = abstractify(v).shape[0]
    if nv == 0:
        return a
    if nv != positions.size:
        v = v[_index_array(np.arange(positions.size) % nv)]
    flat = ravel(a).at[_index_array(positions)].set(v)
    return reshape(flat, shape)

