"""``x[index]`` and ``x.at[index]``: NumPy indexing with JAX's semantics.

Supported index entries: integers (Python, NumPy, or integer 0-d kiln arrays, traced or not),
slices with static bounds and steps, ``None``, ``...``, integer arrays (kiln, NumPy, or lists of
ints) and boolean masks, in any mixture.

- **Basic indexing** (integers, slices, ``None``, ``...``) is a static ``slice`` (``rev`` for negative
  steps; static integers are slices of size 1) followed by a ``dynamic_slice`` for traced integers
  (or integer kiln arrays), and a reshape that drops the integer-indexed axes.
- **Advanced indexing** (integer arrays and masks) follows NumPy: the advanced indices (integer
  scalars count as advanced as soon as there is an array) broadcast together; their dimensions
  replace the indexed dimensions in place when the advanced indices are adjacent in the index,
  and go first when a slice, ``None`` or ``...`` separates them. It is one ``gather``.
- **Boolean masks** select the positions where they are True; the result's shape depends on how
  many there are, so the mask must be concrete (its positions are read as static metadata, as in
  JAX). Under ``jit`` a traced mask raises :class:`NonConcreteBooleanIndexError`, pointing to
  ``kiln.numpy.where`` and ``kiln.numpy.nonzero(..., size=)``.

Out-of-bounds indices behave as in JAX, not as in NumPy (which raises): negative indices count
from the end once (``-n <= i < 0`` means ``i + n``); beyond that, ``x[i]`` and ``x.at[i].get()``
*clamp* (``arange(10)[11]`` is 9, ``arange(10)[-12]`` is 0) and the updates ``x.at[i].set(v)``,
``.add(v)``, ... *drop* out-of-bounds updates. ``mode=`` changes this (``'clip'``, ``'drop'``,
``'fill'`` with ``fill_value=`` for ``get``, ``'promise_in_bounds'``).

Arrays are immutable: ``x[i] = v`` raises a TypeError; write ``x = x.at[i].set(v)``. When an index
repeats, ``.add``/``.multiply``/``.min``/``.max`` apply every update (NumPy's ``x[i] += v`` applies one);
for ``.set`` which update wins is unspecified.
"""
from __future__ import annotations

import functools
import inspect
import operator
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import lax
from ..core import dtypes, tree_util
from ..core.config import config
from ..core.errors import ConcretizationTypeError, IndexTypeError, KilnIndexError
from ..core.tracing import Tracer, abstractify, active_traces, concrete, current_builder
from ..driver.array import Array
from ..driver.eager_jit import eager_jit
from ..lax.sharding import apply_out_sharding

__all__: list[str] = []


class NonConcreteBooleanIndexError(ConcretizationTypeError, KilnIndexError):
    """A boolean mask index whose value is not known while tracing (the result's shape depends on it): a
    JAXIndexError (kiln.errors' name for KilnIndexError), as JAX's, and a ConcretizationTypeError."""


_GSM = lax.GatherScatterMode


# ---------------------------------------------------------------------------------------------
# Parsing an index into entries

class _Arr:
    """An integer index array entry (kiln or NumPy value, ndim >= 1, or a scalar bool's positions)."""

    __slots__ = ("value", "new_axis")

    def __init__(self, value: Any, new_axis: bool = False):
        self.value = value
        self.new_axis = new_axis  # it indexes a new axis of size 1 (a scalar boolean index)

    @property
    def shape(self) -> tuple[int, ...]:
        return abstractify(self.value).shape


def _is_kiln(x: Any) -> bool:
    return isinstance(x, (Array, Tracer))


def _is_int_scalar(i: Any) -> bool:
    if isinstance(i, (bool, np.bool_)):
        return False
    if isinstance(i, (int, np.integer)):
        return True
    if _is_kiln(i):
        return i.ndim == 0 and i.dtype.kind in "iu"
    return False


def _float_error(fname: str, i: Any) -> IndexTypeError:
    return IndexTypeError(f"kiln.numpy.{fname}: indices must be integers, slices, None, '...', integer arrays or "
                          f"boolean arrays, got a float index {i!r:.60}")


def _where() -> str:
    b = current_builder()
    return f" {b.where()}" if b is not None else ""


def _concrete_mask(fname: str, mask: Any) -> np.ndarray:
    if isinstance(mask, np.ndarray):
        return mask
    value = concrete(mask) if isinstance(mask, Tracer) else mask
    if value is None:
        aval = abstractify(mask)
        raise NonConcreteBooleanIndexError(
            f"kiln.numpy.{fname}: a boolean mask index needs a concrete value (the result's shape depends on how "
            f"many entries are True), but got a traced {aval.str_short()} array{_where()}. Use "
            "kiln.numpy.where(mask, x, other) to select elementwise, or kiln.numpy.nonzero(mask, size=...) for "
            "integer indices of a static size.")
    return np.asarray(value)


def _contains_kiln(obj: Any) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_contains_kiln(o) for o in obj)
    return _is_kiln(obj)


def _has_non_array_entry(seq: list) -> bool:
    """Whether a list index holds a slice, None or Ellipsis (at any depth): a non-tuple sequence meant as a
    multi-dimensional index, which JAX rejects."""
    return any(e is None or e is Ellipsis or isinstance(e, slice)
               or (isinstance(e, (list, tuple)) and _has_non_array_entry(list(e))) for e in seq)


def _convert_entry(fname: str, i: Any) -> Any:
    """One entry of the index tuple: None, Ellipsis, slice, an int scalar, or a bool/int array."""
    if i is None or i is Ellipsis or isinstance(i, slice):
        return i
    if isinstance(i, (bool, np.bool_)):
        return np.asarray(i)
    if isinstance(i, (int, np.integer)):
        return int(i)
    if isinstance(i, (float, complex, np.floating, np.complexfloating)):
        raise _float_error(fname, i)
    if isinstance(i, Slice):
        raise NotImplementedError(f"kiln.numpy.{fname}: a kiln.ds slice is supported in reads (x[kiln.ds(i, n)]) "
                                  "but not in x.at[...] updates; use kiln.lax.dynamic_update_slice_in_dim")
    if isinstance(i, (list, tuple)):
        from .creation import asarray
        if _contains_kiln(i):
            i = asarray(i)
        else:
            try:
                i = np.asarray(i)
            except ValueError:
                raise IndexError(f"kiln.numpy.{fname}: an index list must be rectangular, got {i!r:.60}") from None
            if i.size == 0:
                i = i.astype(np.int32)
    if isinstance(i, np.ndarray) or _is_kiln(i):
        kind = dtypes.kind(i.dtype)
        if kind in "fc":
            raise _float_error(fname, i)
        if kind not in "biu":
            raise IndexTypeError(f"kiln.numpy.{fname}: unsupported index array of dtype {i.dtype}")
        if kind in "iu" and i.ndim == 0:
            return int(i) if isinstance(i, np.ndarray) else i
        return i
    raise IndexTypeError(f"kiln.numpy.{fname}: unsupported index {i!r:.60} of type {type(i).__name__}; indices "
                         "must be integers, slices, None, '...', integer arrays or boolean arrays")


def _parse(fname: str, index: Any, ndim: int, shape: tuple[int, ...]) -> list[Any]:
    """The index as a list of entries, one per consumed dimension (plus None for new axes).

    Entries: ``None`` (new axis), ``slice`` (static), int / integer scalar array, or :class:`_Arr`.
    Boolean masks are expanded into one integer array per dimension they cover.
    """
    if isinstance(index, list):
        if _has_non_array_entry(index):
            raise IndexTypeError(f"kiln.numpy.{fname}: a list containing slices, None or Ellipsis cannot be a "
                                 "multi-dimensional index (as in JAX and NumPy >= 1.23): use arr[tuple(seq)] "
                                 "instead of arr[seq]")
        index = (index,)
    elif not isinstance(index, tuple):
        index = (index,)
    entries = [_convert_entry(fname, i) for i in index]
    if sum(1 for e in entries if e is Ellipsis) > 1:
        raise IndexError(f"kiln.numpy.{fname}: an index can only have a single ellipsis ('...')")

    def consumed(e):
        if e is None or e is Ellipsis:
            return 0
        if (isinstance(e, np.ndarray) or _is_kiln(e)) and e.dtype == np.bool_:
            return e.ndim
        return 1

    used = sum(consumed(e) for e in entries)
    if used > ndim:
        raise IndexError(f"kiln.numpy.{fname}: too many indices for array: array is {ndim}-dimensional, but "
                         f"{used} were indexed")
    out: list[Any] = []
    dim = 0
    for e in entries:
        if e is Ellipsis:
            out.extend([slice(None)] * (ndim - used))
            dim += ndim - used
            continue
        if (isinstance(e, np.ndarray) or _is_kiln(e)) and e.dtype == np.bool_:
            mask = _concrete_mask(fname, e)
            if mask.ndim == 0:  # a new axis of length 1 (True) or 0 (False), indexed as an array
                out.append(_Arr(np.zeros(1 if mask else 0, np.int32), new_axis=True))
                continue
            for k, n in enumerate(mask.shape):
                if n != shape[dim + k]:
                    raise IndexError(f"kiln.numpy.{fname}: boolean index did not match indexed array along axis "
                                     f"{dim + k}; size of axis is {shape[dim + k]} but size of corresponding "
                                     f"boolean axis is {n}")
            out.extend(_Arr(p.astype(np.int32) if p.size == 0 or p.max() < 2**31 else p)
                       for p in np.nonzero(mask))
            dim += mask.ndim
            continue
        if (isinstance(e, np.ndarray) or _is_kiln(e)) and e.ndim >= 1:
            out.append(_Arr(e))
        else:
            out.append(e)
        if e is not None:
            dim += 1
    if not any(e is Ellipsis for e in entries):
        out.extend([slice(None)] * (ndim - used))
    return out


def _slice_part(fname: str, v: Any) -> int | None:
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)) or isinstance(v, (float, np.floating)):
        raise IndexTypeError(f"kiln.numpy.{fname}: slice bounds must be integers or None, got {v!r}")
    try:
        return operator.index(v)
    except ConcretizationTypeError:
        raise IndexError(f"kiln.numpy.{fname}: slice bounds must be static integers, got a traced value{_where()}; "
                         "for a traced start use kiln.lax.dynamic_slice or kiln.lax.dynamic_slice_in_dim") from None
    except TypeError:
        raise IndexTypeError(f"kiln.numpy.{fname}: slice bounds must be integers or None, got {v!r:.40}") from None


def _slice_indices(fname: str, s: slice, size: int) -> tuple[int, int, int]:
    """(start, step, length) of a static slice over a dimension of ``size``."""
    start, stop, step = (_slice_part(fname, v) for v in (s.start, s.stop, s.step))
    if step == 0:
        raise ValueError(f"kiln.numpy.{fname}: slice step cannot be zero")
    start, stop, step = slice(start, stop, step).indices(size)
    n = len(range(start, stop, step))
    return start, step, n


# ---------------------------------------------------------------------------------------------
# Basic indexing (no arrays): static slice + dynamic_slice of the traced integers

def _normalize_index(i: Any, size: int) -> Any:
    """Negative indices count from the end; static ones are clamped here, traced ones by XLA."""
    if isinstance(i, (int, np.integer)):
        i = int(i)
        i = i + size if i < 0 else i
        return min(max(i, 0), size - 1)
    idx_dtype = dtypes.canonicalize_dtype(abstractify(i).dtype)
    if idx_dtype.kind == "u":
        return i
    zero, n = lax.literal(0, idx_dtype), lax.literal(size, idx_dtype)
    return lax.select(lax.lt(i, zero), lax.add(i, n), i)


def _is_static_int(i: Any) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _basic_getitem(fname: str, x: Any, entries: list[Any]) -> Any:
    aval = abstractify(x)
    # 1. Static slices (with steps) in one lax.slice, negative steps by rev.
    starts, limits, strides, rev_dims = [], [], [], []
    dim = 0
    for e in entries:
        if e is None:
            continue
        size = aval.shape[dim]
        if isinstance(e, slice):
            start, step, n = _slice_indices(fname, e, size)
            if step > 0:
                starts.append(start)
                limits.append(start + (n - 1) * step + 1 if n else start)
                strides.append(step)
            else:
                lo = start + (n - 1) * step if n else 0
                starts.append(lo)
                limits.append(start + 1 if n else 0)
                strides.append(-step)
                rev_dims.append(dim)
        elif _is_static_int(e):  # a static integer is part of the static slice (size 1, dropped below)
            if size == 0:
                raise IndexError(f"kiln.numpy.{fname}: index {e} is out of bounds for axis {dim} with size 0")
            if config.index_checks and not -size <= int(e) < size:  # JAX clamps it; index_checks refuses
                raise lax.IndexCheckError(
                    f"kiln index_checks: {fname}: index {int(e)} is out of bounds for axis {dim} of size {size}; "
                    "without index_checks kiln clamps it into bounds, as JAX does.")
            if -size <= int(e) < size:
                i = _normalize_index(e, size)
                starts.append(i)
                limits.append(i + 1)
                strides.append(1)
            else:  # out of bounds: a dynamic_slice below, which clamps it (JAX's too: checkify's index_checks see it)
                starts.append(0)
                limits.append(size)
                strides.append(1)
        else:
            starts.append(0)
            limits.append(size)
            strides.append(1)
        dim += 1
    if any((s, lim, st) != (0, d, 1) for s, lim, st, d in zip(starts, limits, strides, aval.shape)):
        x = lax.slice(x, starts, limits, strides)
    if rev_dims:
        x = lax.rev(x, rev_dims)
    # 2. Traced (or device) integer indices: dynamic_slice of size 1 (clamping), then drop those axes.
    int_dims = []
    dim = 0
    for e in entries:
        if e is None:
            continue
        if _is_int_scalar(e) and (not _is_static_int(e) or not -aval.shape[dim] <= int(e) < aval.shape[dim]):
            int_dims.append((dim, e))
        dim += 1
    if int_dims:
        cur = abstractify(x)
        starts_dyn: list[Any] = [0] * cur.ndim
        sizes = list(cur.shape)
        for d, e in int_dims:
            if cur.shape[d] == 0:
                raise IndexError(f"kiln.numpy.{fname}: index {e} is out of bounds for axis {d} with size 0")
            starts_dyn[d] = (int(e) + cur.shape[d] if int(e) < 0 else int(e)) if _is_static_int(e) else \
                _normalize_index(e, cur.shape[d])
            sizes[d] = 1
        x = lax.dynamic_slice(x, starts_dyn, sizes, allow_negative_indices=False)  # normalized above
    # 3. Final shape: drop integer-indexed axes, insert new axes for None.
    shape = []
    sliced = abstractify(x).shape
    dim = 0
    for e in entries:
        if e is None:
            shape.append(1)
            continue
        if not _is_int_scalar(e):
            shape.append(sliced[dim])
        dim += 1
    return lax.reshape(x, tuple(shape))


# ---------------------------------------------------------------------------------------------
# General indexing: one gather / scatter

@dataclass
class _Indexer:
    """``x[index]`` as one gather over ``x`` reshaped to ``operand_shape`` (None axes inserted)."""

    operand_shape: tuple[int, ...]
    result_shape: tuple[int, ...]
    indices: Any                  # int array of shape batch_shape + (k,), k >= 1
    window_positions: tuple[int, ...]  # result dims that are slice windows (ascending)
    collapsed: tuple[int, ...]    # operand dims indexed by one index (size-1 windows, dropped)
    index_map: tuple[int, ...]    # operand dim of each index-vector entry
    slice_sizes: tuple[int, ...]
    has_arrays: bool              # advanced indices present (else the indices are unique)
    ascending: bool               # no arrays and no negative-step slice: the index vectors are sorted

    def gather_dnums(self) -> lax.GatherDimensionNumbers:
        return lax.GatherDimensionNumbers(offset_dims=self.window_positions, collapsed_slice_dims=self.collapsed,
                                          start_index_map=self.index_map)

    def scatter_dnums(self) -> lax.ScatterDimensionNumbers:
        return lax.ScatterDimensionNumbers(update_window_dims=self.window_positions,
                                           inserted_window_dims=self.collapsed,
                                           scatter_dims_to_operand_dims=self.index_map)


def _index_dtype(comps: list[Any]) -> np.dtype:
    big = dtypes.canonicalize_dtype(np.int64)
    for c in comps:
        dt = np.asarray(c).dtype if not _is_kiln(c) else c.dtype
        if dt.itemsize == 8 or (dt.kind == "u" and dt.itemsize == 4):
            return big
    return np.dtype(np.int32)


def _as_index(c: Any, size: int, dtype: np.dtype, wrap_negative: bool) -> Any:
    """An integer index (host or kiln) as ``dtype``, negative values counted from the end (``wrap_negative``) or
    left negative, out of bounds."""
    if not _is_kiln(c):
        arr = np.asarray(c)
        arr = np.where(arr < 0, arr + size, arr) if arr.dtype.kind == "i" and wrap_negative else arr
        info = dtypes.iinfo(dtype)
        return np.clip(arr, info.min, info.max).astype(dtype)
    aval = abstractify(c)
    if aval.dtype.kind == "u":
        if aval.dtype.itemsize >= dtype.itemsize:  # keep huge values out of bounds, not negative
            c = lax.min(c, lax.broadcast_in_dim(lax.literal(dtypes.iinfo(dtype).max, aval.dtype), aval.shape, ()))
        return lax.convert_element_type(c, dtype)
    c = lax.convert_element_type(c, dtype)
    if not wrap_negative:
        return c
    zero = lax.broadcast_in_dim(lax.literal(0, dtype), aval.shape, ())
    n = lax.broadcast_in_dim(lax.literal(size, dtype), aval.shape, ())
    return lax.select(lax.lt(c, zero), lax.add(c, n), c)


def _advanced_contiguous(entries: list[Any], raw_index: Any) -> bool:
    """NumPy: advanced indices keep their place only if nothing separates them in the index as written."""
    positions = [k for k, e in enumerate(entries) if isinstance(e, _Arr) or _is_int_scalar(e)]
    if not positions:
        return True
    if positions[-1] - positions[0] + 1 != len(positions):
        return False
    # An Ellipsis that expanded to nothing between two advanced indices still separates them.
    raw = raw_index if isinstance(raw_index, tuple) else (raw_index,)
    seen_adv = seen_sep = False
    for i in raw:
        is_adv = (not (i is None or i is Ellipsis or isinstance(i, slice)))
        if is_adv:
            if seen_adv and seen_sep:
                return False
            seen_adv = True
        elif seen_adv:
            seen_sep = True
    return True


def _make_indexer(fname: str, shape: tuple[int, ...], entries: list[Any], raw_index: Any,
                  wrap_negative: bool = True) -> _Indexer:
    # Operand with a size-1 axis for every None / scalar-bool entry; None becomes a full slice of it.
    op_shape: list[int] = []
    kinds: list[Any] = []  # per operand dim: ("window", start, size) | ("strided", start, step, n) | ("adv", entry)
    dim = 0
    for e in entries:
        if e is None:
            op_shape.append(1)
            kinds.append(("window", 0, 1))
            continue
        if isinstance(e, _Arr) and e.new_axis:
            op_shape.append(1)
            kinds.append(("adv", e))
            continue
        size = shape[dim]
        op_shape.append(size)
        if isinstance(e, slice):
            start, step, n = _slice_indices(fname, e, size)
            if step == 1 or n <= 1:
                kinds.append(("window", start if n else 0, n))
            else:
                kinds.append(("strided", start, step, n))
        else:
            if size == 0 and not (isinstance(e, _Arr) and 0 in e.shape):
                raise IndexError(f"kiln.numpy.{fname}: index is out of bounds for axis {dim} with size 0")
            kinds.append(("adv", e))
        dim += 1
    if not kinds:  # a 0-d array indexed by (): view it as shape (1,) indexed by 0
        op_shape, kinds = [1], [("adv", 0)]

    adv_dims = [d for d, k in enumerate(kinds) if k[0] == "adv"]
    adv_shapes = [k[1].shape if isinstance(k[1], _Arr) else () for k in kinds if k[0] == "adv"]
    try:
        bshape = tuple(np.broadcast_shapes(*adv_shapes)) if adv_shapes else ()
    except ValueError:
        raise IndexError(f"kiln.numpy.{fname}: shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {' '.join(str(s) for s in adv_shapes)}") from None
    has_arrays = any(isinstance(k[1], _Arr) for k in kinds if k[0] == "adv")
    contiguous = _advanced_contiguous(entries, raw_index)

    # Result dimensions: ("adv", j) for the broadcast dims, ("dim", d) for operand dim d (slice/window).
    non_adv = [d for d, k in enumerate(kinds) if k[0] != "adv"]
    adv_block = [("adv", j) for j in range(len(bshape))]
    if contiguous and adv_dims:
        first = adv_dims[0]
        layout = ([("dim", d) for d in non_adv if d < first] + adv_block + [("dim", d) for d in non_adv if d > first])
    else:
        layout = adv_block + [("dim", d) for d in non_adv]
    result_shape = []
    for kind, j in layout:
        if kind == "adv":
            result_shape.append(bshape[j])
        else:
            k = kinds[j]
            result_shape.append(k[2] if k[0] == "window" else k[3])
    window_positions = tuple(p for p, (kind, j) in enumerate(layout) if kind == "dim" and kinds[j][0] == "window")
    batch_layout = [item for item in layout if not (item[0] == "dim" and kinds[item[1]][0] == "window")]
    batch_shape = tuple(result_shape[p] for p, item in enumerate(layout) if item in batch_layout)
    adv_start = next((p for p, item in enumerate(batch_layout) if item[0] == "adv"), 0)

    # Index-vector entries: advanced and strided dims, windows not starting at 0.
    index_map, comps = [], []  # comps: (value, batch dims it spans) with value host or kiln
    for d, k in enumerate(kinds):
        if k[0] == "adv":
            e = k[1]
            value = e.value if isinstance(e, _Arr) else e
            nd = len(e.shape) if isinstance(e, _Arr) else 0
            dims_ = tuple(range(adv_start + len(bshape) - nd, adv_start + len(bshape)))
            index_map.append(d)
            comps.append((value, dims_, op_shape[d]))
        elif k[0] == "strided":
            _, start, step, n = k
            pos = batch_layout.index(("dim", d))
            index_map.append(d)
            comps.append((np.arange(n, dtype=np.int64) * step + start, (pos,), op_shape[d]))
        elif k[2] and k[1] != 0:
            index_map.append(d)
            comps.append((k[1], (), op_shape[d]))
    if not comps:  # every dimension a full window: index one of them at 0 (k >= 1 keeps XLA simple)
        d = next(d for d, k in enumerate(kinds) if k[0] == "window")
        index_map.append(d)
        comps.append((0, (), op_shape[d]))

    dtype = _index_dtype([c for c, _, _ in comps])
    cols = []
    host = all(not _is_kiln(c) for c, _, _ in comps)
    for c, dims_, size in comps:
        v = _as_index(c, size, dtype, wrap_negative)
        if host:
            layout_shape = [1] * len(batch_shape)
            for p, n in zip(dims_, np.shape(v)):
                layout_shape[p] = n
            cols.append(np.broadcast_to(np.reshape(v, layout_shape), batch_shape))
        else:
            cols.append(lax.reshape(lax.broadcast_in_dim(v, batch_shape, dims_), batch_shape + (1,)))
    indices: Any = np.stack(cols, axis=-1) if host else lax.concatenate(cols, len(batch_shape))

    collapsed = tuple(d for d, k in enumerate(kinds) if k[0] != "window")
    slice_sizes = tuple(k[2] if k[0] == "window" else 1 for k in kinds)
    ascending = not has_arrays and not any(k[0] == "strided" and k[2] < 0 for k in kinds)
    return _Indexer(tuple(op_shape), tuple(result_shape), indices, window_positions, collapsed,
                    tuple(index_map), slice_sizes, has_arrays, ascending)


def _needs_gather(entries: list[Any]) -> bool:
    return any(isinstance(e, _Arr) for e in entries)


def _zeros(shape: tuple[int, ...], aval) -> Any:
    return lax.broadcast_in_dim(lax.literal(0, aval.dtype, aval.weak_type), shape, ())


def _parse_mode(fname: str, mode: Any) -> Any:
    if mode is None:
        return None
    try:
        return _GSM.from_any(mode)
    except ValueError:
        raise ValueError(f"kiln.numpy.{fname}: unknown mode {mode!r}; expected 'clip', 'drop', 'fill' or "
                         "'promise_in_bounds'") from None


def _array_operand(fname: str, x: Any) -> Any:
    if _is_kiln(x):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        from .creation import asarray
        return asarray(x)
    raise TypeError(f"kiln.numpy.{fname}: expected an array, got {type(x).__name__}")


def _gather(fname: str, x: Any, index: Any, *, mode: Any = None, fill_value: Any = None,
            indices_are_sorted: bool = False, unique_indices: bool = False, wrap_negative: bool = True) -> Any:
    x = _array_operand(fname, x)
    if isinstance(index, Slice) or (isinstance(index, tuple) and any(isinstance(p, Slice) for p in index)):
        x, index = _apply_dynamic_slices(fname, x, index)
    aval = abstractify(x)
    entries = _parse(fname, index, aval.ndim, aval.shape)
    parsed_mode = _parse_mode(fname, mode)
    # (the static slice path counts a negative integer from the end)
    basic = wrap_negative or not any(_is_int_scalar(e) for e in entries)
    if basic and not _needs_gather(entries) and parsed_mode in (None, _GSM.CLIP, _GSM.PROMISE_IN_BOUNDS):
        return _basic_getitem(fname, x, entries)
    indexer = _make_indexer(fname, aval.shape, entries, index, wrap_negative)
    if 0 in indexer.result_shape:
        return _zeros(indexer.result_shape, aval)
    operand = lax.reshape(x, indexer.operand_shape)
    if parsed_mode is not _GSM.FILL_OR_DROP:
        fill_value = None
    return lax.gather(operand, indexer.indices, indexer.gather_dnums(), indexer.slice_sizes,
                      indices_are_sorted=bool(indices_are_sorted) or indexer.ascending,
                      unique_indices=bool(unique_indices) or not indexer.has_arrays,
                      mode=parsed_mode or _GSM.PROMISE_IN_BOUNDS, fill_value=fill_value)


class Slice:
    """``size`` elements from ``start`` with ``stride`` along one axis, where ``start`` may be traced (JAX's
    ``jax.ds`` / ``pl.ds`` slice): ``x[ds(i, n)]`` is ``lax.dynamic_slice_in_dim(x, i, n)`` (``start``
    clamped so the window fits, as ``dynamic_slice``). A pytree: a traced ``start`` is its leaf."""

    __slots__ = ("start", "size", "stride")

    def __init__(self, start: Any, size: Any, stride: int = 1):
        if stride < 0:
            raise ValueError(f"kiln.ds: stride must be >= 0, got {stride}")
        self.start, self.size, self.stride = start, size, stride

    def __repr__(self) -> str:
        return f"Slice(start={self.start!r}, size={self.size!r}, stride={self.stride!r})"

    def __eq__(self, other: Any) -> bool:
        return type(other) is Slice and (self.start, self.size, self.stride) == (other.start, other.size,
                                                                                 other.stride)

    __hash__ = None  # type: ignore[assignment]  (a traced start is not hashable)

    def tree_flatten(self):
        dyn_start = not isinstance(self.start, (int, np.integer))
        dyn_size = not isinstance(self.size, (int, np.integer))
        children = (self.start if dyn_start else None, self.size if dyn_size else None)
        aux = (None if dyn_start else self.start, None if dyn_size else self.size, self.stride)
        return children, aux

    @classmethod
    def tree_unflatten(cls, aux, children):
        start, size = (c if c is not None else a for c, a in zip(children, aux[:2]))
        return cls(start, size, aux[2])


tree_util.register_pytree_node_class(Slice)


def ds(start: Any, size: Any = None, stride: int | None = None) -> Any:
    """A slice with a possibly traced start, as ``jax.ds``: ``ds(None)`` is ``:``, ``ds(j)`` is ``:j``,
    ``ds(i, n)`` is ``i:i+n`` and ``ds(i, n, k)`` is ``i:i+n:k`` (n elements, every k-th)."""
    if start is None:
        return slice(None)
    if stride is None:
        stride = 1
    if not isinstance(stride, (int, np.integer)):
        raise ValueError(f"kiln.ds: stride must be a static int, got {type(stride).__name__}")
    if size is None:
        start, size = 0, start
    return Slice(start, size, int(stride))


def _apply_dynamic_slices(fname: str, x: Any, index: Any) -> tuple[Any, Any]:
    """``x`` with each :class:`Slice` of ``index`` applied as a dynamic slice of its axis, and the index with
    those entries replaced by ``:`` (or ``::stride``)."""
    parts = list(index) if isinstance(index, tuple) else [index]

    def consumed(p):
        if p is None or p is Ellipsis:
            return 0
        if isinstance(p, (list, np.ndarray)) or _is_kiln(p):
            a = np.asarray(p) if isinstance(p, list) else p
            return a.ndim if a.dtype == np.bool_ else 1
        return 1

    ndim = abstractify(x).ndim
    used = sum(consumed(p) for p in parts)
    axis = 0
    for k, p in enumerate(parts):
        if p is Ellipsis:
            axis += ndim - used
            continue
        if isinstance(p, Slice):
            if axis >= ndim:
                raise IndexError(f"kiln.numpy.{fname}: too many indices for array: array is {ndim}-dimensional")
            try:
                size = operator.index(p.size)
            except TypeError:
                raise IndexTypeError(f"kiln.numpy.{fname}: the size of a kiln.ds slice must be a static int, got "
                                     f"{type(p.size).__name__}") from None
            step = max(p.stride, 1)
            window = (size - 1) * step + 1 if size else 0
            x = lax.dynamic_slice_in_dim(x, p.start, window, axis)
            parts[k] = slice(None, None, step)
        axis += consumed(p)
    return x, tuple(parts) if isinstance(index, tuple) else parts[0]


def getitem(x: Any, index: Any) -> Any:
    """``x[index]``: NumPy indexing with JAX's out-of-bounds rules (see the module docstring)."""
    if type(x) is Array and not active_traces():
        # Eagerly, an index of ints, slices, None, Ellipsis and integer kiln arrays is one compiled program per
        # (shape, index) rather than one execution per primitive of the gather.
        arrays: list = []
        key = _static_index_key(index, arrays)
        if key is not None:
            return _getitem_arrays(x, key, *arrays) if arrays else _getitem_static(x, key)
    return _gather("__getitem__", x, index)


# A static index key holds ints, None, a (start, stop, step) tuple per slice, and these strings per Ellipsis
# and per integer array (passed beside the key): values jit hashes as static options (an Ellipsis or a slice
# object would send the call op by op).
_ELLIPSIS, _ARRAY = "...", "array"


def _static_index_key(index: Any, arrays: list) -> Any:
    """A hashable stand-in for an index made only of Python ints, slices of ints, None, Ellipsis and integer
    kiln arrays (appended to ``arrays``), alone or in a tuple; None for any other index (boolean masks, whose
    result shape depends on their values, lists, NumPy arrays: they take the general path)."""
    parts = index if type(index) is tuple else (index,)
    key = []
    for p in parts:
        t = type(p)
        if t is int or p is None:
            key.append(p)
        elif p is Ellipsis:
            key.append(_ELLIPSIS)
        elif t is slice and all(type(v) is int or v is None for v in (p.start, p.stop, p.step)):
            key.append((p.start, p.stop, p.step))
        elif t is Array and dtypes.kind(p.dtype) in "iu":
            key.append(_ARRAY)
            arrays.append(p)
        else:
            return None
    return (type(index) is tuple, tuple(key))


def _index_of_key(key: Any, arrays: Any) -> Any:
    is_tuple, parts = key
    arrays = iter(arrays)
    index = tuple(slice(*p) if type(p) is tuple else Ellipsis if p == _ELLIPSIS else next(arrays) if p == _ARRAY
                  else p for p in parts)
    return index if is_tuple else index[0]


@eager_jit("key", where="kiln.Array.__getitem__")
def _getitem_static(x: Any, key: Any) -> Any:
    return _gather("__getitem__", x, _index_of_key(key, ()))


@eager_jit("key", where="kiln.Array.__getitem__")
def _getitem_arrays(x: Any, key: Any, *arrays: Any) -> Any:
    return _gather("__getitem__", x, _index_of_key(key, arrays))


# ---------------------------------------------------------------------------------------------
# Functional updates: x.at[index].set(v), ...

def _safe_to_cast(value_dtype: np.dtype, value_weak: bool, target: np.dtype) -> bool:
    if value_dtype == target:
        return True
    return dtypes.result_type(target, _Weak(value_dtype, value_weak)) == target


class _Weak:
    """A stand-in value with a dtype and weak type, for dtypes.result_type."""

    def __init__(self, dtype: np.dtype, weak: bool):
        self.dtype = dtype
        self.weak_type = weak


_SCATTERS = {"set": lax.scatter, "add": lax.scatter_add, "mul": lax.scatter_mul, "min": lax.scatter_min,
             "max": lax.scatter_max}


def _scatter_update(fname: str, x: Any, index: Any, values: Any, kind: str, *, mode: Any,
                    indices_are_sorted: bool, unique_indices: bool, func: Callable | None = None,
                    wrap_negative: bool = True) -> Any:
    from ._util import broadcast_shapes, broadcast_to_shape, check_arraylike, promote_dtypes
    from .creation import asarray
    x = _array_operand(fname, x)
    aval = abstractify(x)
    if kind != "apply":
        if isinstance(values, (list, tuple)):
            values = asarray(values)
        check_arraylike(fname, values)
        v_aval = abstractify(values)
        if not _safe_to_cast(v_aval.dtype, v_aval.weak_type, aval.dtype):
            warnings.warn(f"kiln.numpy.{fname}: scatter inputs have incompatible types: cannot safely cast value "
                          f"from dtype={v_aval.dtype.name} to dtype={aval.dtype.name}; the values are converted "
                          "(JAX warns the same; this will become an error)", FutureWarning, stacklevel=4)
    parsed_mode = _parse_mode(fname, mode)
    if 0 in aval.shape:
        return x  # an array without elements has nothing to update, in every mode (as JAX's)
    entries = _parse(fname, index, aval.ndim, aval.shape)
    indexer = _make_indexer(fname, aval.shape, entries, index, wrap_negative)
    if 0 in indexer.result_shape:
        if kind != "apply":
            v_shape = abstractify(values).shape
            broadcast_shapes(fname, v_shape, indexer.result_shape)
        return x
    operand = lax.reshape(x, indexer.operand_shape)
    kw = dict(indices_are_sorted=bool(indices_are_sorted) or indexer.ascending,
              unique_indices=bool(unique_indices) or not indexer.has_arrays, mode=parsed_mode)
    if kind == "apply":
        out = lax.scatter_apply(operand, indexer.indices, func, indexer.scatter_dnums(),
                                update_shape=indexer.result_shape, **kw)
        return lax.reshape(out, aval.shape)
    operand, values = promote_dtypes(fname, operand, values)
    v_shape = abstractify(values).shape
    try:
        ok = broadcast_shapes(fname, v_shape, indexer.result_shape) == indexer.result_shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"kiln.numpy.{fname}: shape mismatch: value array of shape {v_shape} could not be "
                         f"broadcast to indexing result of shape {indexer.result_shape}")
    values = broadcast_to_shape(values, indexer.result_shape)
    if kind == "sub":  # x - v as x + (-v), after promotion (negating unsigned values wraps, as the sum does)
        if abstractify(values).dtype == np.bool_:
            raise TypeError(f"kiln.numpy.{fname}: not supported for boolean arrays (NumPy's boolean subtract is "
                            "an error too); use .set with kiln.numpy.logical_xor")
        values, kind = lax.neg(values), "add"
    out = _SCATTERS[kind](operand, indexer.indices, values, indexer.scatter_dnums(), **kw)
    out = lax.reshape(out, aval.shape)
    return lax.convert_element_type(out, aval.dtype, weak_type=aval.weak_type)


@eager_jit("key", "name", "kind", "mode", "indices_are_sorted", "unique_indices", "wrap_negative",
           where="kiln.Array.at[]")
def _update_eagerly(x: Any, values: Any, key: Any, name: str, kind: str, mode: Any, indices_are_sorted: bool,
                    unique_indices: bool, wrap_negative: bool, *arrays: Any) -> Any:
    return _scatter_update(f"at[].{name}", x, _index_of_key(key, arrays), values, kind, mode=mode,
                           indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                           wrap_negative=wrap_negative)


def _takes_jax_options(method: Callable) -> Callable:
    """An ``.at[]`` method with JAX's ``out_sharding=`` (the result laid out so, as :func:`kiln.reshard`) and
    ``wrap_negative_indices=`` (True: negative integer indices count from the end; False: they are out of bounds,
    handled by ``mode``: dropped updates, clamped or filled reads)."""
    where = f"kiln.numpy.at[].{method.__name__}"

    @functools.wraps(method)
    def call(self, *args: Any, out_sharding: Any = None, wrap_negative_indices: bool = True, **kwargs: Any) -> Any:
        if not wrap_negative_indices:
            self = _IndexUpdateRef(self.array, self.index, wrap_negative=False)
        return apply_out_sharding(method(self, *args, **kwargs), out_sharding, where)
    sig = inspect.signature(method)
    extra = [inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY, default=None),
             inspect.Parameter("wrap_negative_indices", inspect.Parameter.KEYWORD_ONLY, default=True)]
    call.__signature__ = sig.replace(parameters=[*sig.parameters.values(), *extra])
    return call


class _IndexUpdateRef:
    """``x.at[index]``: the pending update; call one of its methods to get the updated array."""

    __slots__ = ("array", "index", "wrap_negative")

    def __init__(self, array: Any, index: Any, wrap_negative: bool = True):
        self.array = array
        self.index = index
        self.wrap_negative = wrap_negative  # (an option of the method called, set by _takes_jax_options)

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    @_takes_jax_options
    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False, mode: Any = None,
            fill_value: Any = None) -> Any:
        """``x[index]``; ``mode='fill'`` returns ``fill_value`` for out-of-bounds indices."""
        return _gather("at[].get", self.array, self.index, mode=mode, fill_value=fill_value,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                       wrap_negative=self.wrap_negative)

    def _update(self, name: str, kind: str, values: Any, indices_are_sorted: bool, unique_indices: bool,
                mode: Any) -> Any:
        x = self.array
        if type(x) is Array and not active_traces():  # eagerly: one program, as for x[index]
            arrays: list = []
            key = _static_index_key(self.index, arrays)
            if key is not None:
                return _update_eagerly(x, values, key, name, kind, mode, indices_are_sorted, unique_indices,
                                       self.wrap_negative, *arrays)
        return _scatter_update(f"at[].{name}", x, self.index, values, kind, mode=mode,
                               indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                               wrap_negative=self.wrap_negative)

    @_takes_jax_options
    def set(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None) -> Any:
        """``x[index] = values``, functionally (out-of-bounds updates are dropped by default)."""
        return self._update("set", "set", values, indices_are_sorted, unique_indices, mode)

    @_takes_jax_options
    def add(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None) -> Any:
        """``x[index] += values``; repeated indices add every value."""
        return self._update("add", "add", values, indices_are_sorted, unique_indices, mode)

    @_takes_jax_options
    def subtract(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
                 mode: Any = None) -> Any:
        """``x[index] -= values``; repeated indices subtract every value."""
        return self._update("subtract", "sub", values, indices_are_sorted, unique_indices, mode)

    @_takes_jax_options
    def multiply(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
                 mode: Any = None) -> Any:
        """``x[index] *= values``; repeated indices multiply by every value."""
        return self._update("multiply", "mul", values, indices_are_sorted, unique_indices, mode)

    mul = multiply

    @_takes_jax_options
    def divide(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
               mode: Any = None) -> Any:
        """``x[index] /= values`` (true division: the result is inexact, as ``x / y``)."""
        from .creation import ones_like
        from .ufuncs import true_divide
        denom = _scatter_update("at[].divide", ones_like(self.array), self.index, values, "mul", mode=mode,
                                indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                                wrap_negative=self.wrap_negative)
        return true_divide(self.array, denom)

    @_takes_jax_options
    def power(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
              mode: Any = None) -> Any:
        """``x[index] **= values``."""
        from .creation import ones_like
        from .ufuncs import power
        exponent = _scatter_update("at[].power", ones_like(self.array), self.index, values, "mul", mode=mode,
                                   indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                                   wrap_negative=self.wrap_negative)
        return power(self.array, exponent)

    @_takes_jax_options
    def min(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None) -> Any:  # noqa: A003
        """``x[index] = minimum(x[index], values)``."""
        return self._update("min", "min", values, indices_are_sorted, unique_indices, mode)

    @_takes_jax_options
    def max(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None) -> Any:  # noqa: A003
        """``x[index] = maximum(x[index], values)``."""
        return self._update("max", "max", values, indices_are_sorted, unique_indices, mode)

    @_takes_jax_options
    def apply(self, func: Callable, *, indices_are_sorted: bool = False, unique_indices: bool = False,
              mode: Any = None) -> Any:
        """``func`` (a scalar function) applied at ``index``, once per occurrence (as ``ufunc.at``)."""
        if not callable(func):
            raise TypeError(f"kiln.numpy.at[].apply: func must be callable, got {type(func).__name__}")
        return _scatter_update("at[].apply", self.array, self.index, None, "apply", mode=mode,
                               indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, func=func,
                               wrap_negative=self.wrap_negative)


class _IndexUpdateHelper:
    """``x.at``: index it (``x.at[idx]``) to update ``x`` functionally, JAX style.

    ``x.at[idx].set(v)``, ``.add(v)``, ``.subtract(v)``, ``.multiply(v)``, ``.divide(v)``, ``.power(v)``,
    ``.min(v)``, ``.max(v)``, ``.apply(f)`` return a new array; ``.get()`` is ``x[idx]`` with options.
    Keyword options: ``mode`` ('clip', 'drop', 'fill', 'promise_in_bounds'), ``indices_are_sorted``,
    ``unique_indices``, and ``fill_value`` for ``get``.
    """

    __slots__ = ("array",)

    def __init__(self, array: Any):
        self.array = array

    def __getitem__(self, index: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"
