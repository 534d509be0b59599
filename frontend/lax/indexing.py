"""Gather, scatter and the indexing helpers of ``kiln.lax`` (``jax.lax``'s slicing API).

Primitives
----------
``gather`` and the scatter family (``scatter``, ``scatter_add``, ``scatter_mul``, ``scatter_min``,
``scatter_max``, ``scatter_apply``) map one to one onto ``stablehlo.gather`` / ``stablehlo.scatter``
with the index vector in the last dimension of the indices (as in JAX). The primitives have XLA's
semantics for out-of-bounds indices: a gather clamps each start index so that its whole window is
in bounds, a scatter skips an update window that is not entirely in bounds.

Modes
-----
The ``mode=`` of the lax functions is composed from other kiln primitives before the gather or
scatter, so the primitives themselves never see a mode:

- ``GatherScatterMode.CLIP`` (``'clip'``): indices are clamped explicitly so that every window is in
  bounds.
- ``GatherScatterMode.FILL_OR_DROP`` (``'fill'``/``'drop'``; the default of the scatters): a gather
  returns ``fill_value`` for every window that is not entirely in bounds (default: NaN for inexact
  dtypes, the minimum of signed, the maximum of unsigned integers, ``True`` for booleans); a scatter
  drops such windows.
- ``GatherScatterMode.PROMISE_IN_BOUNDS`` (``'promise_in_bounds'``; the default of ``gather``): no
  handling; out-of-bounds gathers clamp and out-of-bounds scatter windows are dropped (XLA's
  behaviour).

Negative indices are *not* wrapped by these functions (they are out of bounds); ``kiln.numpy``
indexing wraps them first.
"""
from __future__ import annotations

import enum
import functools
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ..core import dtypes, source_info
from ..core.avals import ShapedArray
from ..core.axes import canonical_axis
from ..core.config import config
from ..core.errors import KilnIndexError
from ..core.ir import ClosedIR, Literal
from ..core.primitive import Primitive
from ..core.tracing import Tracer, abstractify
from . import api

__all__ = [
    "IndexCheckError",
    "GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode",
    "gather", "scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max", "scatter_apply",
    "index_in_dim", "slice_in_dim", "dynamic_index_in_dim", "dynamic_slice_in_dim",
    "dynamic_update_index_in_dim", "dynamic_update_slice_in_dim", "index_take",
]


class GatherDimensionNumbers(NamedTuple):
    """How the dimensions of a gather's operand, start indices and output relate (as ``jax.lax``).

    offset_dims: output dimensions that hold the (non-collapsed) slice dimensions, ascending.
    collapsed_slice_dims: operand dimensions of slice size 1 that are dropped from the output.
    start_index_map: for each entry of the index vector (the last dimension of the indices), the
        operand dimension it starts.
    operand_batching_dims / start_indices_batching_dims: paired batch dimensions of the operand and
        the indices (the i-th index batch picks from the i-th operand batch).
    """

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How the dimensions of a scatter's operand, indices and updates relate (as ``jax.lax``).

    update_window_dims: dimensions of the updates that are window dimensions, ascending.
    inserted_window_dims: operand dimensions of window size 1 that the updates leave out.
    scatter_dims_to_operand_dims: for each entry of the index vector, the operand dimension it indexes.
    operand_batching_dims / scatter_indices_batching_dims: paired batch dimensions.
    """

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode(enum.Enum):
    """How gathers and scatters treat out-of-bounds indices (see the module docstring)."""

    CLIP = "clip"
    FILL_OR_DROP = "fill"
    PROMISE_IN_BOUNDS = "promise_in_bounds"

    @staticmethod
    def from_any(s: str | GatherScatterMode | None) -> GatherScatterMode:
        """Parse a mode: a ``GatherScatterMode``, ``'clip'``, ``'fill'``/``'drop'`` (also ``None``) or
        ``'promise_in_bounds'``."""
        if isinstance(s, GatherScatterMode):
            return s
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "clip":
            return GatherScatterMode.CLIP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f"kiln.lax: unknown gather/scatter mode {s!r}; expected one of 'clip', 'fill', 'drop', "
                         "'promise_in_bounds' or a kiln.lax.GatherScatterMode")


# ---------------------------------------------------------------------------------------------
# Argument normalisation

def _int_tuple(fname: str, what: str, value: Any) -> tuple[int, ...]:
    try:
        out = tuple(value)
    except TypeError:
        raise TypeError(f"kiln.lax.{fname}: {what} must be a sequence of ints, got {value!r}") from None
    for v in out:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"kiln.lax.{fname}: {what} must be a sequence of ints, got {value!r}")
    return tuple(int(v) for v in out)


def _gather_dnums(fname: str, dn: Any) -> GatherDimensionNumbers:
    if not isinstance(dn, (GatherDimensionNumbers, tuple, list)) or not 3 <= len(dn) <= 5:
        raise TypeError(f"kiln.lax.{fname}: dimension_numbers must be a kiln.lax.GatherDimensionNumbers, got "
                        f"{type(dn).__name__} {dn!r:.80}")
    fields = GatherDimensionNumbers._fields
    return GatherDimensionNumbers(*(_int_tuple(fname, f, v) for f, v in zip(fields, dn)))


def _scatter_dnums(fname: str, dn: Any) -> ScatterDimensionNumbers:
    if not isinstance(dn, (ScatterDimensionNumbers, tuple, list)) or not 3 <= len(dn) <= 5:
        raise TypeError(f"kiln.lax.{fname}: dimension_numbers must be a kiln.lax.ScatterDimensionNumbers, got "
                        f"{type(dn).__name__} {dn!r:.80}")
    fields = ScatterDimensionNumbers._fields
    return ScatterDimensionNumbers(*(_int_tuple(fname, f, v) for f, v in zip(fields, dn)))


# ---------------------------------------------------------------------------------------------
# Shape rules

def _check_dims(fname: str, what: str, dims: tuple[int, ...], rank: int, *, sorted_: bool) -> None:
    if any(not 0 <= d < rank for d in dims):
        raise ValueError(f"kiln.lax.{fname}: {what} {dims} must be dimensions in [0, {rank})")
    if len(set(dims)) != len(dims):
        raise ValueError(f"kiln.lax.{fname}: {what} {dims} has repeated dimensions")
    if sorted_ and list(dims) != sorted(dims):
        raise ValueError(f"kiln.lax.{fname}: {what} {dims} must be sorted in ascending order")


def _check_indices_aval(fname: str, indices: ShapedArray) -> None:
    if dtypes.kind(indices.dtype) not in "iu":
        raise TypeError(f"kiln.lax.{fname}: indices must have an integer dtype, got {indices.str_short()}")
    if indices.ndim < 1:
        raise ValueError(f"kiln.lax.{fname}: indices must have at least one dimension (the index vector is "
                         f"their last dimension), got shape {indices.shape}; add a trailing dimension of size 1")


def _check_batching(fname: str, operand: ShapedArray, indices: ShapedArray, op_dims: tuple[int, ...],
                    idx_dims: tuple[int, ...], idx_name: str) -> None:
    _check_dims(fname, "operand_batching_dims", op_dims, operand.ndim, sorted_=True)
    _check_dims(fname, f"{idx_name}_batching_dims", idx_dims, indices.ndim - 1, sorted_=False)
    if len(op_dims) != len(idx_dims):
        raise ValueError(f"kiln.lax.{fname}: operand_batching_dims {op_dims} and {idx_name}_batching_dims "
                         f"{idx_dims} must have the same length")
    for o, i in zip(op_dims, idx_dims):
        if operand.shape[o] != indices.shape[i]:
            raise ValueError(f"kiln.lax.{fname}: batching dimension {o} of the operand (size {operand.shape[o]}) "
                             f"and dimension {i} of the indices (size {indices.shape[i]}) differ in size")


def _gather_rule(operand: ShapedArray, indices: ShapedArray, *, dimension_numbers: GatherDimensionNumbers,
                 slice_sizes: tuple[int, ...], indices_are_sorted: bool, unique_indices: bool) -> ShapedArray:
    fname = "gather"
    dn = dimension_numbers
    _check_indices_aval(fname, indices)
    if len(slice_sizes) != operand.ndim:
        raise ValueError(f"kiln.lax.gather: slice_sizes {slice_sizes} must have one entry per dimension of the "
                         f"operand shape {operand.shape}")
    for d, (s, n) in enumerate(zip(slice_sizes, operand.shape)):
        if not 0 <= s <= n:
            raise ValueError(f"kiln.lax.gather: slice_sizes {slice_sizes} must fit in the operand shape "
                             f"{operand.shape} (dimension {d})")
    _check_dims(fname, "collapsed_slice_dims", dn.collapsed_slice_dims, operand.ndim, sorted_=True)
    _check_batching(fname, operand, indices, dn.operand_batching_dims, dn.start_indices_batching_dims,
                    "start_indices")
    for what, dims in (("collapsed_slice_dims", dn.collapsed_slice_dims),
                       ("operand_batching_dims", dn.operand_batching_dims)):
        for d in dims:
            if slice_sizes[d] > 1:
                raise ValueError(f"kiln.lax.gather: slice_sizes[{d}] is {slice_sizes[d]} but dimension {d} is in "
                                 f"{what}, which needs a slice size of 0 or 1")
    if set(dn.collapsed_slice_dims) & set(dn.operand_batching_dims):
        raise ValueError(f"kiln.lax.gather: collapsed_slice_dims {dn.collapsed_slice_dims} and "
                         f"operand_batching_dims {dn.operand_batching_dims} must be disjoint")
    _check_dims(fname, "start_index_map", dn.start_index_map, operand.ndim, sorted_=False)
    if set(dn.start_index_map) & set(dn.operand_batching_dims):
        raise ValueError(f"kiln.lax.gather: start_index_map {dn.start_index_map} and operand_batching_dims "
                         f"{dn.operand_batching_dims} must be disjoint")
    if len(dn.start_index_map) != indices.shape[-1]:
        raise ValueError(f"kiln.lax.gather: start_index_map {dn.start_index_map} needs one entry per element of "
                         f"the index vector (the last dimension of the indices, shape {indices.shape})")
    kept = [d for d in range(operand.ndim)
            if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    if len(dn.offset_dims) != len(kept):
        raise ValueError(f"kiln.lax.gather: offset_dims {dn.offset_dims} must have one entry per slice dimension "
                         f"that is neither collapsed nor batching ({len(kept)} for operand shape {operand.shape})")
    batch_shape = indices.shape[:-1]
    rank = len(batch_shape) + len(dn.offset_dims)
    _check_dims(fname, "offset_dims", dn.offset_dims, rank, sorted_=True)
    shape = []
    batch, offset = iter(batch_shape), iter(slice_sizes[d] for d in kept)
    for i in range(rank):
        shape.append(next(offset) if i in dn.offset_dims else next(batch))
    return ShapedArray(tuple(shape), operand.dtype, operand.weak_type)


gather_p = Primitive("gather", _gather_rule)


def _scatter_rule_named(fname: str):
    def rule(operand: ShapedArray, indices: ShapedArray, updates: ShapedArray, *,
             dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool, unique_indices: bool,
             **_: Any) -> ShapedArray:
        dn = dimension_numbers
        _check_indices_aval(fname, indices)
        if updates.dtype != operand.dtype:
            raise TypeError(f"kiln.lax.{fname}: updates dtype {updates.dtype.name} differs from the operand dtype "
                            f"{operand.dtype.name}")
        _check_dims(fname, "inserted_window_dims", dn.inserted_window_dims, operand.ndim, sorted_=True)
        _check_batching(fname, operand, indices, dn.operand_batching_dims, dn.scatter_indices_batching_dims,
                        "scatter_indices")
        if set(dn.inserted_window_dims) & set(dn.operand_batching_dims):
            raise ValueError(f"kiln.lax.{fname}: inserted_window_dims {dn.inserted_window_dims} and "
                             f"operand_batching_dims {dn.operand_batching_dims} must be disjoint")
        _check_dims(fname, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims, operand.ndim,
                    sorted_=False)
        if set(dn.scatter_dims_to_operand_dims) & set(dn.operand_batching_dims):
            raise ValueError(f"kiln.lax.{fname}: scatter_dims_to_operand_dims {dn.scatter_dims_to_operand_dims} "
                             f"and operand_batching_dims {dn.operand_batching_dims} must be disjoint")
        if len(dn.scatter_dims_to_operand_dims) != indices.shape[-1]:
            raise ValueError(f"kiln.lax.{fname}: scatter_dims_to_operand_dims {dn.scatter_dims_to_operand_dims} "
                             "needs one entry per element of the index vector (the last dimension of the "
                             f"indices, shape {indices.shape})")
        scatter_shape = indices.shape[:-1]
        if updates.ndim != len(dn.update_window_dims) + len(scatter_shape):
            raise ValueError(f"kiln.lax.{fname}: updates of shape {updates.shape} must have "
                             f"{len(dn.update_window_dims) + len(scatter_shape)} dimensions "
                             f"({len(dn.update_window_dims)} window dimensions and the {len(scatter_shape)} "
                             f"scatter dimensions of the indices, shape {indices.shape})")
        _check_dims(fname, "update_window_dims", dn.update_window_dims, updates.ndim, sorted_=True)
        window_operand_dims = [d for d in range(operand.ndim)
                               if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
        if len(dn.update_window_dims) != len(window_operand_dims):
            raise ValueError(f"kiln.lax.{fname}: update_window_dims {dn.update_window_dims} must have one entry "
                             "per operand dimension that is neither inserted nor batching "
                             f"({len(window_operand_dims)} for operand shape {operand.shape})")
        upd_scatter = tuple(s for i, s in enumerate(updates.shape) if i not in dn.update_window_dims)
        if upd_scatter != scatter_shape:
            raise ValueError(f"kiln.lax.{fname}: the scatter dimensions of the updates {upd_scatter} (shape "
                             f"{updates.shape}) must equal the batch dimensions of the indices {scatter_shape}")
        for u, d in zip(dn.update_window_dims, window_operand_dims):
            if updates.shape[u] > operand.shape[d]:
                raise ValueError(f"kiln.lax.{fname}: update window dimension {u} (size {updates.shape[u]}) is "
                                 f"larger than operand dimension {d} (size {operand.shape[d]})")
        return operand
    return rule


scatter_p = Primitive("scatter", _scatter_rule_named("scatter"))
scatter_add_p = Primitive("scatter_add", _scatter_rule_named("scatter_add"))
scatter_mul_p = Primitive("scatter_mul", _scatter_rule_named("scatter_mul"))
scatter_min_p = Primitive("scatter_min", _scatter_rule_named("scatter_min"))
scatter_max_p = Primitive("scatter_max", _scatter_rule_named("scatter_max"))


def _scatter_apply_rule(operand, indices, updates, *, update_ir: ClosedIR, **params):
    return _scatter_rule_named("scatter_apply")(operand, indices, updates, **params)


# ``update_ir`` is the traced scalar function: one input (the old value), one output.
scatter_apply_p = Primitive("scatter_apply", _scatter_apply_rule)


# ---------------------------------------------------------------------------------------------
# Mode handling, composed from kiln primitives

def _index_bounds(indices_aval: ShapedArray, operand_shape: Sequence[int], dims: Sequence[int],
                  window: Sequence[int]) -> np.ndarray:
    """Largest valid start index for each index-vector entry (operand size minus window size)."""
    return np.asarray([operand_shape[d] - window[d] for d in dims], dtype=indices_aval.dtype)


def _last_axis_table(table: np.ndarray, shape: tuple[int, ...]):
    """A (k,) constant broadcast along the last axis of ``shape``."""
    return api.broadcast_in_dim(table, shape, (len(shape) - 1,))


def _clamp_indices(indices, operand_shape, dims, window):
    aval = abstractify(indices)
    bounds = _index_bounds(aval, operand_shape, dims, window)
    if aval.size == 0:
        return indices
    hi = _last_axis_table(bounds, aval.shape)
    out = api.min(indices, hi)
    if dtypes.kind(aval.dtype) == "i":
        out = api.max(out, api.broadcast_in_dim(api.literal(0, aval.dtype), aval.shape, ()))
    return out


def _in_bounds_mask(indices, operand_shape, dims, window):
    """bool[batch...]: whether each index vector starts a window that lies entirely in bounds."""
    aval = abstractify(indices)
    bounds = _index_bounds(aval, operand_shape, dims, window)
    ok = api.le(indices, _last_axis_table(bounds, aval.shape))
    if dtypes.kind(aval.dtype) == "i":
        ok = api.bitwise_and(ok, api.ge(indices, api.broadcast_in_dim(api.literal(0, aval.dtype), aval.shape, ())))
    return api.reduce_and(ok, (aval.ndim - 1,))


class IndexCheckError(KilnIndexError):
    """``index_checks``: a gather, scatter or dynamic slice reached an index out of bounds at run time."""

    report_as_is = True  # raised by a host callback: the runtime passes it on instead of wrapping it


def _report_out_of_bounds(fname: str, idx: np.ndarray, shape: tuple, dims: tuple, window: tuple, fallback: str,
                          where: Any) -> None:
    """Raise :class:`IndexCheckError` for the first index vector of ``idx`` (host values) out of bounds."""
    vectors = np.asarray(idx).reshape(-1, len(dims))
    highs = np.asarray([shape[d] - window[d] for d in dims])
    bad = (vectors < 0) | (vectors > highs)
    if not bad.any():
        return
    row, col = (int(i[0]) for i in np.nonzero(bad))
    d, value = dims[col], int(vectors[row, col])
    at = f" (traced at {where})" if where is not None else ""
    span = (f"an index in 0..{shape[d] - 1}" if window[d] == 1 else
            f"a start in 0..{shape[d] - window[d]} (window of {window[d]})")
    position = "" if vectors.shape[0] == 1 else f" (index vector {row} of {vectors.shape[0]})"
    raise IndexCheckError(
        f"kiln index_checks: {fname}: index {value} is out of bounds for axis {d} of size {shape[d]}{position}, "
        f"which needs {span}; negative indices count from the end before this check{at}. Without "
        f"index_checks kiln {fallback}, as JAX does.")


def check_in_bounds(fname: str, indices, operand_shape: Sequence[int], dims: Sequence[int], window: Sequence[int],
                    fallback: str) -> None:
    """With ``index_checks`` on: make the program raise :class:`IndexCheckError` when an index vector (the last
    axis of ``indices``, one entry per operand dimension in ``dims``) starts a window of sizes ``window`` that
    leaves the operand. The test is compiled into the program; a host callback only reports a failure.
    Indices known now (Python ints, NumPy arrays) are checked right away."""
    shape, dims, window = tuple(operand_shape), tuple(dims), tuple(window)
    where = source_info.current()
    if isinstance(indices, (np.ndarray, np.generic)):
        _report_out_of_bounds(fname, indices, shape, dims, window, fallback, where)
        return
    if abstractify(indices).size == 0:
        return
    from .callbacks import debug_callback  # the callbacks family builds on this floor's primitives too

    def report(all_ok: np.ndarray, idx: np.ndarray) -> None:
        if not bool(all_ok):
            _report_out_of_bounds(fname, idx, shape, dims, window, fallback, where)

    ok = _in_bounds_mask(indices, shape, dims, window)
    all_ok = api.reduce_and(ok, tuple(range(abstractify(ok).ndim)))
    debug_callback(report, all_ok, indices)


def check_dynamic_slice(fname: str, start_indices: Sequence[Any], operand_shape: Sequence[int],
                        window: Sequence[int], fallback: str) -> None:
    """:func:`check_in_bounds` for the separate start indices of a dynamic (update) slice."""
    if not start_indices:
        return
    if all(isinstance(i, Literal) for i in start_indices):  # static starts: checked now
        vector = np.asarray([int(i.val) for i in start_indices])
    else:
        vector = api.concatenate([api.broadcast_in_dim(api.convert_element_type(i, np.int32), (1,), ())
                                  for i in start_indices], 0)
    check_in_bounds(fname, vector, operand_shape, range(len(operand_shape)), window, fallback)


def default_fill_value(dtype: np.dtype) -> Any:
    """JAX's fill for out-of-bounds gathers: NaN (inexact), min (signed), max (unsigned), True (bool)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return True
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtypes.kind(dtype) == "i":
        return int(dtypes.iinfo(dtype).min)
    return int(dtypes.iinfo(dtype).max)


def _fill_scalar(fname: str, fill_value: Any, dtype: np.dtype):
    if fill_value is None:
        return api.literal(default_fill_value(dtype), dtype)
    if isinstance(fill_value, (Tracer,)) or hasattr(fill_value, "aval"):
        aval = abstractify(fill_value)
        if aval.ndim != 0:
            raise ValueError(f"kiln.lax.{fname}: fill_value must be a scalar, got shape {aval.shape}")
        return api.convert_element_type(fill_value, dtype)
    value = np.asarray(fill_value)
    if value.ndim != 0:
        raise ValueError(f"kiln.lax.{fname}: fill_value must be a scalar, got shape {value.shape}")
    if dtypes.kind(value.dtype) not in "biufc":
        raise TypeError(f"kiln.lax.{fname}: fill_value must be a number, got {fill_value!r:.40}")
    with np.errstate(all="ignore"):
        return api.literal(value.astype(dtype) if dtypes.kind(dtype) != "b" else value.astype(bool), dtype)


# ---------------------------------------------------------------------------------------------
# Public functions

def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers, slice_sizes: Sequence[int], *,
           unique_indices: bool = False, indices_are_sorted: bool = False,
           mode: str | GatherScatterMode | None = None, fill_value=None):
    """Gather slices of ``operand`` at ``start_indices`` (XLA's Gather, as ``jax.lax.gather``).

    The index vectors are the last dimension of ``start_indices``. ``mode`` defaults to
    ``PROMISE_IN_BOUNDS`` (out-of-bounds windows are clamped); ``'clip'`` clamps explicitly, ``'fill'``
    returns ``fill_value`` for every window that is not entirely in bounds.
    """
    dn = _gather_dnums("gather", dimension_numbers)
    slice_sizes = _int_tuple("gather", "slice_sizes", slice_sizes)
    parsed = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else GatherScatterMode.from_any(mode)
    params = dict(dimension_numbers=dn, slice_sizes=slice_sizes, indices_are_sorted=bool(indices_are_sorted),
                  unique_indices=bool(unique_indices))
    op_aval, idx_aval = abstractify(operand), abstractify(start_indices)
    out_aval = _gather_rule(op_aval, idx_aval, **params)  # validate before any mode handling
    if parsed is GatherScatterMode.CLIP:
        start_indices = _clamp_indices(start_indices, op_aval.shape, dn.start_index_map, slice_sizes)
    elif parsed is GatherScatterMode.PROMISE_IN_BOUNDS and config.index_checks:
        check_in_bounds("gather", start_indices, op_aval.shape, dn.start_index_map, slice_sizes,
                        "clamps it into bounds")
    out = gather_p.bind(operand, start_indices, **params)
    if parsed is GatherScatterMode.FILL_OR_DROP and out_aval.size:
        fill = _fill_scalar("gather", fill_value, op_aval.dtype)
        mask = _in_bounds_mask(start_indices, op_aval.shape, dn.start_index_map, slice_sizes)
        batch_positions = tuple(i for i in range(out_aval.ndim) if i not in dn.offset_dims)
        mask = api.broadcast_in_dim(mask, out_aval.shape, batch_positions)
        out = api.select(mask, out, api.broadcast_in_dim(fill, out_aval.shape, ()))
    return out


def _scatter_windows(operand: ShapedArray, updates: ShapedArray, dn: ScatterDimensionNumbers) -> list[int]:
    """The window size of every operand dimension (1 for inserted and batching dimensions)."""
    window = [1] * operand.ndim
    dims = [d for d in range(operand.ndim) if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    for u, d in zip(dn.update_window_dims, dims):
        window[d] = updates.shape[u]
    return window


def _scatter(prim: Primitive, fname: str, operand, indices, updates, dimension_numbers, indices_are_sorted,
             unique_indices, mode, **extra):
    dn = _scatter_dnums(fname, dimension_numbers)
    op_aval = abstractify(operand)
    if api._is_py_scalar(updates):
        updates = api.literal(updates, op_aval.dtype, weak_type=True)
    params = dict(dimension_numbers=dn, indices_are_sorted=bool(indices_are_sorted),
                  unique_indices=bool(unique_indices), **extra)
    upd_aval = abstractify(updates)
    prim.shape_rule(op_aval, abstractify(indices), upd_aval, **params)  # validate before any mode handling
    if GatherScatterMode.from_any(mode) is GatherScatterMode.CLIP:
        indices = _clamp_indices(indices, op_aval.shape, dn.scatter_dims_to_operand_dims,
                                 _scatter_windows(op_aval, upd_aval, dn))
    elif mode in (None, GatherScatterMode.PROMISE_IN_BOUNDS, "promise_in_bounds") and config.index_checks:
        # Only without an explicit mode= (or with a promise): 'drop' and 'clip' ask for JAX's handling.
        check_in_bounds(fname, indices, op_aval.shape, dn.scatter_dims_to_operand_dims,
                        _scatter_windows(op_aval, upd_aval, dn), "skips the update")
    # FILL_OR_DROP and PROMISE_IN_BOUNDS: XLA's scatter skips windows that are not entirely in bounds.
    return prim.bind(operand, indices, updates, **params)


def scatter(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
            indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: str | GatherScatterMode | None = None):
    """``operand`` with ``updates`` written at ``scatter_indices`` (XLA's Scatter, as ``jax.lax.scatter``).

    When several updates hit one element, which one wins is unspecified. ``mode`` defaults to
    ``FILL_OR_DROP``: windows that are not entirely in bounds are dropped; ``'clip'`` clamps them.
    """
    return _scatter(scatter_p, "scatter", operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode)


def scatter_add(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    """``operand`` with ``updates`` added at ``scatter_indices`` (every duplicate index is applied)."""
    return _scatter(scatter_add_p, "scatter_add", operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode)


def scatter_mul(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    """``operand`` multiplied by ``updates`` at ``scatter_indices``."""
    return _scatter(scatter_mul_p, "scatter_mul", operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode)


def scatter_min(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    """The elementwise minimum of ``operand`` and ``updates`` at ``scatter_indices``."""
    return _scatter(scatter_min_p, "scatter_min", operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode)


def scatter_max(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    """The elementwise maximum of ``operand`` and ``updates`` at ``scatter_indices``."""
    return _scatter(scatter_max_p, "scatter_max", operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode)


@functools.lru_cache(maxsize=128)
def _trace_scalar_fn(func: Callable, dtype: np.dtype, weak_type: bool) -> ClosedIR:
    from ..core.tracing import trace_to_ir
    aval = ShapedArray((), dtype, weak_type)

    def body(x):
        out = func(x)
        if abstractify(out).shape != ():
            raise ValueError(f"kiln.lax.scatter_apply: func must map a scalar to a scalar, got an output of shape "
                             f"{abstractify(out).shape}")
        return [api.convert_element_type(out, dtype, weak_type=weak_type)]

    closed, _ = trace_to_ir(body, [aval], name=getattr(func, "__name__", "func"))
    for c in closed.consts:
        if isinstance(c, Tracer):
            raise TypeError("kiln.lax.scatter_apply: func closes over a traced value; it may only use its "
                            "argument and constants")
    return closed


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers: ScatterDimensionNumbers, *,
                  update_shape: Sequence[int] = (), indices_are_sorted: bool = False,
                  unique_indices: bool = False, mode: str | GatherScatterMode | None = None):
    """``operand`` with the scalar function ``func`` applied at ``scatter_indices`` (once per index, so a
    repeated index applies it repeatedly). ``update_shape`` is the shape the updates would have."""
    if not callable(func):
        raise TypeError(f"kiln.lax.scatter_apply: func must be callable, got {type(func).__name__}")
    aval = abstractify(operand)
    try:
        update_ir = _trace_scalar_fn(func, aval.dtype, aval.weak_type)
    except TypeError as e:
        if "unhashable" not in str(e):
            raise
        update_ir = _trace_scalar_fn.__wrapped__(func, aval.dtype, aval.weak_type)
    update_shape = _int_tuple("scatter_apply", "update_shape", update_shape)
    dummy = api.broadcast_in_dim(api.literal(0, aval.dtype), update_shape, ())
    return _scatter(scatter_apply_p, "scatter_apply", operand, scatter_indices, dummy, dimension_numbers,
                    indices_are_sorted, unique_indices, mode, update_ir=update_ir)


# ---------------------------------------------------------------------------------------------
# Helpers along one dimension

def slice_in_dim(operand, start_index: int | None, limit_index: int | None, stride: int = 1, axis: int = 0):
    """``operand`` sliced ``start_index:limit_index:stride`` along ``axis`` (static bounds; negative ones count
    from the end)."""
    aval = abstractify(operand)
    axis = canonical_axis("kiln.lax.slice_in_dim", axis, aval.ndim)
    n = aval.shape[axis]
    start = 0 if start_index is None else int(start_index)
    limit = n if limit_index is None else int(limit_index)
    start = start + n if start < 0 else start
    limit = limit + n if limit < 0 else limit
    starts, limits, strides = [0] * aval.ndim, list(aval.shape), [1] * aval.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
    return api.slice(operand, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """The static ``index`` along ``axis`` (negative counts from the end); ``keepdims`` keeps the axis."""
    aval = abstractify(operand)
    axis = canonical_axis("kiln.lax.index_in_dim", axis, aval.ndim)
    n = aval.shape[axis]
    i = int(index)
    if not -n <= i < n:
        raise IndexError(f"kiln.lax.index_in_dim: index {i} is out of bounds for axis {axis} with size {n}")
    i = i + n if i < 0 else i
    out = slice_in_dim(operand, i, i + 1, 1, axis)
    if keepdims:
        return out
    return api.reshape(out, aval.shape[:axis] + aval.shape[axis + 1:])


def _wrap_dynamic(index, size: int):
    """Negative dynamic indices count from the end (as JAX's dynamic_slice)."""
    if api._is_py_scalar(index) or isinstance(index, np.integer):
        i = int(index)
        return i + size if i < 0 else i
    aval = abstractify(index)
    if aval.ndim != 0 or dtypes.kind(aval.dtype) not in "iu":
        raise TypeError(f"kiln.lax: a start index must be an integer scalar, got {aval.str_short()}")
    if dtypes.kind(aval.dtype) == "u":
        return index
    zero, n = api.literal(0, aval.dtype), api.literal(size, aval.dtype)
    return api.select(api.lt(index, zero), api.add(index, n), index)


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0):
    """A ``slice_size`` slice along ``axis`` at a (possibly traced) start, clamped to stay in bounds."""
    aval = abstractify(operand)
    axis = canonical_axis("kiln.lax.dynamic_slice_in_dim", axis, aval.ndim)
    starts: list[Any] = [0] * aval.ndim
    starts[axis] = _wrap_dynamic(start_index, aval.shape[axis])
    sizes = list(aval.shape)
    sizes[axis] = int(slice_size)
    return api.dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    """The element at a (possibly traced) ``index`` along ``axis``, clamped to stay in bounds."""
    aval = abstractify(operand)
    axis = canonical_axis("kiln.lax.dynamic_index_in_dim", axis, aval.ndim)
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    if keepdims:
        return out
    return api.reshape(out, aval.shape[:axis] + aval.shape[axis + 1:])


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int = 0):
    """``operand`` with ``update`` written along ``axis`` at a (possibly traced) start."""
    aval = abstractify(operand)
    axis = canonical_axis("kiln.lax.dynamic_update_slice_in_dim", axis, aval.ndim)
    starts: list[Any] = [0] * aval.ndim
    starts[axis] = _wrap_dynamic(start_index, aval.shape[axis])
    return api.dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis: int = 0):
    """``operand`` with ``update`` written at a (possibly traced) ``index`` along ``axis``; ``update`` may
    leave out that axis."""
    aval = abstractify(operand)
    axis = canonical_axis("kiln.lax.dynamic_update_index_in_dim", axis, aval.ndim)
    upd = abstractify(update)
    if upd.ndim == aval.ndim - 1:
        update = api.reshape(update, upd.shape[:axis] + (1,) + upd.shape[axis:])
    elif upd.ndim != aval.ndim:
        raise ValueError(f"kiln.lax.dynamic_update_index_in_dim: update of shape {upd.shape} must have rank "
                         f"{aval.ndim} or {aval.ndim - 1} for an operand of shape {aval.shape}")
    return dynamic_update_slice_in_dim(operand, update, index, axis)


def index_take(src, idxs: Sequence[Any], axes: Sequence[int]):
    """``src[idxs[0], idxs[1], ...]`` along ``axes`` (integer index arrays of one shape), as ``jax.lax.index_take``:
    the index dimensions come first, followed by the remaining dimensions of ``src``."""
    aval = abstractify(src)
    axes = tuple(canonical_axis("kiln.lax.index_take", a, aval.ndim) for a in axes)
    if len(idxs) != len(axes):
        raise ValueError(f"kiln.lax.index_take: got {len(idxs)} index arrays for {len(axes)} axes")
    if not idxs:
        return src
    comps = []
    shape = abstractify(idxs[0]).shape
    for i in idxs:
        ia = abstractify(i)
        if ia.shape != shape:
            raise ValueError(f"kiln.lax.index_take: index arrays must have one shape, got {shape} and {ia.shape}")
        comps.append(api.reshape(api.convert_element_type(i, np.int32), shape + (1,)))
    indices = api.concatenate(comps, len(shape))
    rest = [d for d in range(aval.ndim) if d not in axes]
    slice_sizes = tuple(1 if d in axes else aval.shape[d] for d in range(aval.ndim))
    dn = GatherDimensionNumbers(offset_dims=tuple(range(len(shape), len(shape) + len(rest))),
                                collapsed_slice_dims=tuple(sorted(axes)), start_index_map=axes)
    return gather(src, indices, dn, slice_sizes)
