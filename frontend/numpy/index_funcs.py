"""Index functions of kiln.numpy: take, take_along_axis, put_along_axis, nonzero, argwhere, flatnonzero.

Out-of-bounds indices follow JAX, not NumPy (which raises): ``take`` and ``take_along_axis`` return
invalid values (NaN for inexact dtypes, the minimum of signed integers, ...; ``fill_value``
overrides) unless ``mode='clip'`` or ``mode='wrap'``; ``put_along_axis`` drops out-of-bounds
updates.

``nonzero``/``argwhere``/``flatnonzero`` have a data-dependent output shape. Outside ``jit`` the
number of nonzero entries is computed first and read back (as static metadata: it decides the
shape); under ``jit`` pass ``size=`` (the result is truncated or padded with ``fill_value``,
default 0, to that length).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.errors import ConcretizationTypeError
from ..core.tracing import Tracer, abstractify, concrete, current_builder, materialize
from ._util import canonical_axis, check_arraylike, promote_dtypes, static_int
from .indexing import _as_index, _index_dtype

__all__ = ["argwhere", "flatnonzero", "nonzero", "put_along_axis", "take", "take_along_axis"]

_GSM = lax.GatherScatterMode


def _operand(fname: str, a: Any) -> Any:
    check_arraylike(fname, a)
    (a,) = promote_dtypes(fname, a)
    return materialize(a)


def _int_indices(fname: str, indices: Any) -> Any:
    check_arraylike(fname, indices)
    aval = abstractify(indices)
    if aval.dtype.kind not in "iu":
        raise TypeError(f"kiln.numpy.{fname}: indices must be integers, got an array of dtype {aval.dtype.name}")
    if isinstance(indices, (int, np.integer)):
        return np.asarray(indices)
    return indices


def _to_index_dtype(x: Any, size: int, wrap: bool) -> Any:
    """Integer indices as int32 (int64 for 64-bit ones with x64); negative ones wrapped if ``wrap``."""
    dtype = _index_dtype([x])
    if wrap:
        return _as_index(x, size, dtype)
    if isinstance(x, np.ndarray):
        info = np.iinfo(dtype)
        return np.clip(x, info.min, info.max).astype(dtype)
    aval = abstractify(x)
    if aval.dtype.kind == "u" and aval.dtype.itemsize >= dtype.itemsize:
        x = lax.min(x, lax.broadcast_in_dim(lax.literal(np.iinfo(dtype).max, aval.dtype), aval.shape, ()))
    return lax.convert_element_type(x, dtype)


def _zeros(shape: tuple[int, ...], aval) -> Any:
    return lax.broadcast_in_dim(lax.literal(0, aval.dtype, aval.weak_type), shape, ())


def take(a, indices, axis: int | None = None, out=None, mode: str | None = None, unique_indices: bool = False,
         indices_are_sorted: bool = False, fill_value=None):
    """Elements of ``a`` at ``indices`` along ``axis`` (the flattened array if None), as ``jax.numpy.take``.

    ``mode``: ``None``/``'fill'`` (default: out-of-bounds indices give ``fill_value``, NaN for inexact
    dtypes; negative indices count from the end), ``'clip'`` (clamp into range; negative indices
    become 0, as NumPy's clip mode), ``'wrap'`` (indices modulo the axis length). ``'raise'`` is not
    supported (no runtime errors from compiled code).
    """
    if out is not None:
        raise TypeError("kiln.numpy.take: out= is not supported (kiln arrays are immutable); use the return value")
    a = _operand("take", a)
    indices = _int_indices("take", indices)
    if axis is None:
        a = lax.reshape(a, (abstractify(a).size,))
        axis = 0
    aval = abstractify(a)
    axis = canonical_axis("take", axis, aval.ndim)
    n = aval.shape[axis]
    idx_aval = abstractify(indices)
    out_shape = aval.shape[:axis] + idx_aval.shape + aval.shape[axis + 1:]
    if mode is None or mode == "fill":
        gather_mode, indices = _GSM.FILL_OR_DROP, _to_index_dtype(indices, n, wrap=True)
    elif mode == "clip":
        gather_mode, indices = _GSM.CLIP, _to_index_dtype(indices, n, wrap=False)
    elif mode == "wrap":
        if n == 0 and idx_aval.size:
            raise IndexError("kiln.numpy.take: cannot do a non-empty take from an empty axis")
        indices = _to_index_dtype(indices, n, wrap=False)
        if isinstance(indices, np.ndarray):
            indices = np.mod(indices, max(n, 1)).astype(indices.dtype)
        else:
            from .ufuncs import remainder
            indices = remainder(indices, lax.broadcast_in_dim(lax.literal(max(n, 1), indices.dtype),
                                                              idx_aval.shape, ()))
        gather_mode = _GSM.PROMISE_IN_BOUNDS
    elif mode == "raise":
        raise NotImplementedError("kiln.numpy.take: mode='raise' is not supported (compiled code cannot raise); "
                                  "use 'fill', 'clip' or 'wrap'")
    else:
        raise ValueError(f"kiln.numpy.take: invalid mode {mode!r}; expected 'fill', 'clip' or 'wrap'")
    if n == 0:
        if idx_aval.size:
            raise IndexError("kiln.numpy.take: cannot do a non-empty take from an empty axis")
        return _zeros(out_shape, aval)
    if 0 in out_shape:
        return _zeros(out_shape, aval)
    nd = idx_aval.ndim
    idx = lax.reshape(indices, idx_aval.shape + (1,)) if not isinstance(indices, np.ndarray) else \
        indices.reshape(idx_aval.shape + (1,))
    slice_sizes = aval.shape[:axis] + (1,) + aval.shape[axis + 1:]
    dn = lax.GatherDimensionNumbers(
        offset_dims=tuple(range(axis)) + tuple(range(axis + nd, aval.ndim + nd - 1)),
        collapsed_slice_dims=(axis,), start_index_map=(axis,))
    return lax.gather(a, idx, dn, slice_sizes, mode=gather_mode, fill_value=fill_value,
                      unique_indices=unique_indices, indices_are_sorted=indices_are_sorted)


def take_along_axis(arr, indices, axis: int | None = -1, mode: str | None = None, fill_value=None):
    """``arr`` picked at ``indices`` along ``axis``, matching the other dimensions (as
    ``jax.numpy.take_along_axis``); ``indices`` and ``arr`` broadcast against each other outside ``axis``.

    ``mode``: ``None``/``'fill'`` (default: out-of-bounds indices give ``fill_value``), ``'clip'``,
    ``'promise_in_bounds'``. Negative indices count from the end (except with ``'promise_in_bounds'``).
    """
    a = _operand("take_along_axis", arr)
    indices = _int_indices("take_along_axis", indices)
    idx_aval = abstractify(indices)
    if axis is None:
        if idx_aval.ndim != 1:
            raise ValueError(f"kiln.numpy.take_along_axis: indices must be 1-D when axis=None, got shape "
                             f"{idx_aval.shape}")
        a = lax.reshape(a, (abstractify(a).size,))
        axis = 0
    aval = abstractify(a)
    if aval.ndim != idx_aval.ndim:
        raise ValueError(f"kiln.numpy.take_along_axis: indices and arr must have the same number of dimensions; "
                         f"{idx_aval.ndim} vs. {aval.ndim}")
    axis = canonical_axis("take_along_axis", axis, aval.ndim)
    if mode is None or isinstance(mode, _GSM) or mode in ("fill", "drop", "clip", "promise_in_bounds"):
        parsed = _GSM.from_any(mode)
    else:
        raise ValueError(f"kiln.numpy.take_along_axis: invalid mode {mode!r}; expected 'fill', 'clip' or "
                         "'promise_in_bounds'")
    n = aval.shape[axis]
    arr_shape = aval.shape[:axis] + (1,) + aval.shape[axis + 1:]
    try:
        out_shape = tuple(np.broadcast_shapes(idx_aval.shape, arr_shape))
    except ValueError:
        raise ValueError(f"kiln.numpy.take_along_axis: indices of shape {idx_aval.shape} and arr of shape "
                         f"{aval.shape} do not broadcast outside axis {axis}") from None
    if n == 0 or 0 in out_shape:
        return _zeros(out_shape, aval)
    indices = _to_index_dtype(indices, n, wrap=parsed is not _GSM.PROMISE_IN_BOUNDS)
    from ._util import broadcast_to_shape
    indices = broadcast_to_shape(indices, out_shape)
    a = broadcast_to_shape(a, out_shape[:axis] + (n,) + out_shape[axis + 1:])
    batch = tuple(d for d in range(aval.ndim) if d != axis)
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
                                    operand_batching_dims=batch, start_indices_batching_dims=batch)
    idx = lax.reshape(indices, out_shape + (1,))
    return lax.gather(a, idx, dn, (1,) * aval.ndim, mode=parsed, fill_value=fill_value)


def put_along_axis(arr, indices, values, axis: int | None, inplace: bool = True, *, mode: str | None = None):
    """``arr`` with ``values`` put at ``indices`` along ``axis`` (as ``jax.numpy.put_along_axis``).

    kiln arrays are immutable: pass ``inplace=False`` (the default ``True`` raises, as in JAX) and use the
    returned array. Out-of-bounds updates are dropped unless ``mode='clip'``.
    """
    if inplace:
        raise ValueError("kiln.numpy.put_along_axis: kiln arrays are immutable and cannot be modified in place; "
                         "pass inplace=False to get an updated copy")
    a = _operand("put_along_axis", arr)
    indices = _int_indices("put_along_axis", indices)
    check_arraylike("put_along_axis", values)
    original_shape = abstractify(a).shape
    if axis is None:
        a = lax.reshape(a, (abstractify(a).size,))
        axis = 0
    aval, idx_aval = abstractify(a), abstractify(indices)
    if aval.ndim != idx_aval.ndim:
        raise ValueError(f"kiln.numpy.put_along_axis: arr and indices must have the same number of dimensions; "
                         f"{aval.ndim} vs. {idx_aval.ndim}")
    axis = canonical_axis("put_along_axis", axis, aval.ndim)
    v_shape = abstractify(values).shape
    try:
        ok = tuple(np.broadcast_shapes(v_shape, idx_aval.shape)) == idx_aval.shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"kiln.numpy.put_along_axis: values of shape {v_shape} must broadcast to the shape of "
                         f"indices {idx_aval.shape}")
    index: list[Any] = []
    for d in range(aval.ndim):
        if d == axis:
            index.append(indices)
        else:
            shape = [1] * aval.ndim
            shape[d] = aval.shape[d]
            index.append(np.arange(aval.shape[d], dtype=np.int32).reshape(shape))
    from .indexing import _scatter_update
    out = _scatter_update("put_along_axis", a, tuple(index), values, "set", mode=mode, indices_are_sorted=False,
                          unique_indices=False)
    return lax.reshape(out, original_shape)


# ---------------------------------------------------------------------------------------------
# nonzero and friends

def _prefix_sum(x: Any) -> Any:
    """Inclusive prefix sum of a 1-D integer array: log2(n) shifted adds (Hillis-Steele)."""
    n = abstractify(x).shape[0]
    shift = 1
    zero = lax.literal(0, abstractify(x).dtype)
    while shift < n:
        x = lax.add(x, lax.pad(x, zero, [(shift, -shift, 0)]))
        shift *= 2
    return x


def _static_count(fname: str, count: Any) -> int:
    value = concrete(count) if isinstance(count, Tracer) else count
    if value is None:
        b = current_builder()
        where = f" {b.where()}" if b is not None else ""
        raise ConcretizationTypeError(
            f"kiln.numpy.{fname}: the number of nonzero elements decides the shape of the result, but the array is "
            f"traced{where}. Pass size= (a static int; the result is padded with fill_value or truncated) to use "
            f"{fname} under jit.")
    return int(np.asarray(value))


def _fill_values(fname: str, fill_value: Any, ndim: int) -> list[Any]:
    if fill_value is None:
        return [0] * ndim
    if isinstance(fill_value, (tuple, list)):
        if len(fill_value) != ndim:
            raise ValueError(f"kiln.numpy.{fname}: fill_value must be a scalar or a tuple of length {ndim} (one "
                             f"per dimension), got a tuple of length {len(fill_value)}")
        values = list(fill_value)
    else:
        values = [fill_value] * ndim
    out = []
    for v in values:
        aval = abstractify(v)
        if aval.ndim != 0:
            raise ValueError(f"kiln.numpy.{fname}: fill_value must be a scalar or a tuple of scalars, got shape "
                             f"{aval.shape}")
        out.append(v)
    return out


def _nonzero(fname: str, a: Any, size: Any, fill_value: Any) -> tuple[Any, ...]:
    aval = abstractify(a)
    if aval.dtype == np.bool_:
        mask = a
    else:
        mask = lax.ne(a, lax.broadcast_in_dim(lax.literal(0, aval.dtype), aval.shape, ()))
    n = aval.size
    flat = lax.reshape(mask, (n,))
    idx_dtype = dtypes.default_int_dtype()
    count = None
    if n:
        csum = _prefix_sum(lax.convert_element_type(flat, idx_dtype))
        count = lax.reshape(lax.slice(csum, (n - 1,), (n,)), ())
    if size is None:
        size = _static_count(fname, count) if n else 0
    else:
        size = static_int(fname, "size", size)
        if size < 0:
            raise ValueError(f"kiln.numpy.{fname}: size must be non-negative, got {size}")
    fills = _fill_values(fname, fill_value, aval.ndim)

    def full(v):
        from ._util import convert
        v = convert(v, idx_dtype, False)
        return lax.broadcast_in_dim(v, (size,), ())

    if n == 0 or size == 0:
        return tuple(full(v) for v in fills)
    # Scatter each True element's flat position to slot (count before it); others go out of bounds (dropped).
    target = lax.select(flat, lax.sub(csum, lax.broadcast_in_dim(lax.literal(1, idx_dtype), (n,), ())),
                        lax.broadcast_in_dim(lax.literal(size, idx_dtype), (n,), ()))
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    positions = lax.scatter(lax.broadcast_in_dim(lax.literal(0, idx_dtype), (size,), ()),
                            lax.reshape(target, (n, 1)), lax.iota(idx_dtype, n), dn,
                            indices_are_sorted=True, unique_indices=True, mode="drop")
    valid = lax.lt(lax.iota(idx_dtype, size), lax.broadcast_in_dim(count, (size,), ()))
    out = []
    stride = n
    for d, dim in enumerate(aval.shape):
        stride //= dim
        coord = positions
        if stride != 1:
            coord = lax.div(coord, lax.broadcast_in_dim(lax.literal(stride, idx_dtype), (size,), ()))
        if d > 0:
            coord = lax.rem(coord, lax.broadcast_in_dim(lax.literal(dim, idx_dtype), (size,), ()))
        out.append(lax.select(valid, coord, full(fills[d])))
    return tuple(out)


def nonzero(a, *, size: int | None = None, fill_value=None) -> tuple[Any, ...]:
    """Indices of the nonzero elements, one integer array per dimension (as ``jax.numpy.nonzero``).

    ``size``: the static length of the result (needed under ``jit``): truncated, or padded with
    ``fill_value`` (default 0; a scalar or one value per dimension).
    """
    a = _operand("nonzero", a)
    if abstractify(a).ndim == 0:
        raise ValueError("kiln.numpy.nonzero: calling nonzero on 0-d arrays is not allowed; use "
                         "kiln.numpy.atleast_1d(x).nonzero() or reshape it to 1-d")
    return _nonzero("nonzero", a, size, fill_value)


def flatnonzero(a, *, size: int | None = None, fill_value=None) -> Any:
    """Indices of the nonzero elements of the flattened array (``size``/``fill_value`` as ``nonzero``)."""
    a = _operand("flatnonzero", a)
    a = lax.reshape(a, (abstractify(a).size,))
    return _nonzero("flatnonzero", a, size, fill_value)[0]


def argwhere(a, *, size: int | None = None, fill_value=None) -> Any:
    """``(count, a.ndim)`` array of the indices of the nonzero elements (``size``/``fill_value`` as ``nonzero``)."""
    a = _operand("argwhere", a)
    aval = abstractify(a)
    if aval.ndim == 0:  # NumPy: shape (1, 0) for a nonzero scalar, (0, 0) for zero
        (col,) = _nonzero("argwhere", lax.reshape(a, (1,)), size, fill_value)
        k = abstractify(col).shape[0]
        return lax.broadcast_in_dim(lax.literal(0, abstractify(col).dtype), (k, 0), ())
    cols = _nonzero("argwhere", a, size, fill_value)
    k = abstractify(cols[0]).shape[0]
    return lax.concatenate([lax.reshape(c, (k, 1)) for c in cols], 1)

