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
from ..core.tracing import Tracer, abstractify, active_traces, concrete, current_builder, materialize
from ..driver.eager_jit import eager_jit
from . import key_arrays
from ._util import canonical_axis, check_arraylike, promote_dtypes, static_int
from .indexing import _as_index, _index_dtype

__all__ = [
    "argwhere", "choose", "compress", "extract", "flatnonzero", "nonzero", "place", "put", "put_along_axis", "take",
    "take_along_axis",
]

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
    return _as_index(x, size, _index_dtype([x]), wrap)


def _zeros(shape: tuple[int, ...], aval) -> Any:
    return lax.broadcast_in_dim(lax.literal(0, aval.dtype, aval.weak_type), shape, ())


@eager_jit("axis", "out", "mode", "unique_indices", "indices_are_sorted")
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
    if key_arrays.any_key(a):
        return key_arrays.rule("take")(a, indices, axis, mode=mode, unique_indices=unique_indices,
                                       indices_are_sorted=indices_are_sorted, fill_value=fill_value)
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


@eager_jit("axis", "mode")
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


@eager_jit("axis", "inplace", "mode")
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


def _eager_size(a: Any, size: Any) -> Any:
    """``size`` for the compiled program of an eager call: when it is None, the number of nonzero elements of
    the concrete ``a`` (one small program and a wait for its value, as JAX's eager nonzero). Under a trace it
    stays None, and the implementation explains that size= is needed there."""
    if size is not None or isinstance(a, Tracer) or active_traces():
        return size
    from .reductions import count_nonzero
    return int(count_nonzero(a))


def nonzero(a, *, size: int | None = None, fill_value=None) -> tuple[Any, ...]:
    """Indices of the nonzero elements, one integer array per dimension (as ``jax.numpy.nonzero``).

    ``size``: the static length of the result (needed under ``jit``): truncated, or padded with
    ``fill_value`` (default 0; a scalar or one value per dimension).
    """
    a = _operand("nonzero", a)
    if abstractify(a).ndim == 0:
        raise ValueError("kiln.numpy.nonzero: calling nonzero on 0-d arrays is not allowed; use "
                         "kiln.numpy.atleast_1d(x).nonzero() or reshape it to 1-d")
    return _nonzero_sized(a, size=_eager_size(a, size), fill_value=fill_value)


@eager_jit("size", "fill_value", where="kiln.numpy.nonzero")
def _nonzero_sized(a, size, fill_value):
    return _nonzero("nonzero", a, size, fill_value)


def flatnonzero(a, *, size: int | None = None, fill_value=None) -> Any:
    """Indices of the nonzero elements of the flattened array (``size``/``fill_value`` as ``nonzero``)."""
    a = _operand("flatnonzero", a)
    return _flatnonzero_sized(a, size=_eager_size(a, size), fill_value=fill_value)


@eager_jit("size", "fill_value", where="kiln.numpy.flatnonzero")
def _flatnonzero_sized(a, size, fill_value):
    a = lax.reshape(a, (abstractify(a).size,))
    return _nonzero("flatnonzero", a, size, fill_value)[0]


def argwhere(a, *, size: int | None = None, fill_value=None) -> Any:
    """``(count, a.ndim)`` array of the indices of the nonzero elements (``size``/``fill_value`` as ``nonzero``)."""
    a = _operand("argwhere", a)
    return _argwhere_sized(a, size=_eager_size(a, size), fill_value=fill_value)


@eager_jit("size", "fill_value", where="kiln.numpy.argwhere")
def _argwhere_sized(a, size, fill_value):
    aval = abstractify(a)
    if aval.ndim == 0:  # NumPy: shape (1, 0) for a nonzero scalar, (0, 0) for zero
        (col,) = _nonzero("argwhere", lax.reshape(a, (1,)), size, fill_value)
        k = abstractify(col).shape[0]
        return lax.broadcast_in_dim(lax.literal(0, abstractify(col).dtype), (k, 0), ())
    cols = _nonzero("argwhere", a, size, fill_value)
    k = abstractify(cols[0]).shape[0]
    return lax.concatenate([lax.reshape(c, (k, 1)) for c in cols], 1)



# ---------------------------------------------------------------------------------------------
# choose, compress, extract, place, put

def choose(a, choices, out=None, mode: str = "raise"):
    """Pick, elementwise, from the ``choices`` arrays: ``choices[a[i]][i]`` (all broadcast together).

    ``mode``: ``'raise'`` (an index outside ``[0, len(choices))`` is an error; needs concrete indices,
    so not under ``jit``), ``'wrap'`` or ``'clip'``.
    """
    from .creation import asarray
    from .shape import broadcast_arrays, stack
    from .ufuncs import clip
    if out is not None:
        raise NotImplementedError("kiln.numpy.choose: out= is not supported (kiln arrays are immutable)")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"kiln.numpy.choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    check_arraylike("choose", a)
    a = asarray(a)
    if abstractify(a).dtype.kind not in "iu":
        raise TypeError(f"kiln.numpy.choose: a must be integers, got {abstractify(a).dtype.name}")
    if not isinstance(choices, (list, tuple)):
        check_arraylike("choose", choices)
    choices = list(choices)
    n = len(choices)
    if n == 0:
        raise ValueError("kiln.numpy.choose: choices must not be empty")
    check_arraylike("choose", *choices)
    if mode == "raise":
        value = concrete(a) if isinstance(a, Tracer) else a
        if value is None:
            raise ConcretizationTypeError("kiln.numpy.choose: mode='raise' checks the indices' values, which are not "
                                          "known under jit; use mode='wrap' or mode='clip'")
        v = np.asarray(value)
        if np.any((v < 0) | (v >= n)):
            raise ValueError(f"kiln.numpy.choose: an entry of a is outside [0, {n}); use mode='wrap' or 'clip'")
    elif mode == "wrap":
        a = a % n
    else:
        a = clip(a, 0, n - 1)
    a, *choices = broadcast_arrays(a, *choices)
    stacked = stack(promote_dtypes("choose", *choices), 0)
    return take_along_axis(stacked, a[None], axis=0)[0]


def _selected(fname: str, condition, arr, axis: int, size, fill_value):
    """The slices of ``arr`` along ``axis`` where the 1-D ``condition`` is true (padded or truncated to
    ``size`` with ``fill_value``)."""
    from .creation import asarray
    from .shape import moveaxis
    from .ufuncs import where
    n = abstractify(arr).shape[axis]
    cond = asarray(condition)
    if abstractify(cond).dtype != np.bool_:
        cond = cond != 0
    m = abstractify(cond).shape[0]
    if m > n:
        extra = concrete(cond[n:]) if isinstance(cond, Tracer) else cond[n:]
        if extra is None or np.any(np.asarray(extra)):
            raise ValueError(f"kiln.numpy.{fname}: condition has {m} entries for an axis of length {n} (entries past "
                             "the axis must be False, and known)")
        cond = cond[:n]
    elif m < n:
        cond = lax.pad(cond, lax.literal(False, np.bool_), [(0, n - m, 0)])
    if size is not None:
        size = static_int(fname, "size", size)
    (idx,) = _nonzero(fname, cond, size, None)
    k = abstractify(idx).shape[0]
    moved = moveaxis(arr, axis, 0)
    out = take(moved, idx, axis=0, mode="clip") if n else moved[:0]
    if size is not None and k:
        count = lax.reduce_sum(lax.convert_element_type(cond, dtypes.default_int_dtype()), (0,))
        valid = lax.lt(lax.iota(dtypes.default_int_dtype(), k), lax.broadcast_in_dim(count, (k,), ()))
        valid = lax.broadcast_in_dim(valid, abstractify(out).shape, (0,))
        out = where(valid, out, asarray(fill_value, dtype=abstractify(out).dtype))
    return moveaxis(out, 0, axis)


def compress(condition, a, axis: int | None = None, *, size: int | None = None, fill_value=0, out=None):
    """The slices of ``a`` along ``axis`` (of the flattened ``a`` when None) where the 1-D ``condition``
    is true. The length is data-dependent: under ``jit`` pass ``size=`` (padded with ``fill_value``
    or truncated)."""
    from .creation import asarray
    from .shape import ravel
    if out is not None:
        raise NotImplementedError("kiln.numpy.compress: out= is not supported (kiln arrays are immutable)")
    check_arraylike("compress", condition, a)
    cond = asarray(condition)
    if abstractify(cond).ndim != 1:
        raise ValueError(f"kiln.numpy.compress: condition must be 1-D, got shape {abstractify(cond).shape}")
    arr = asarray(a)
    if axis is None:
        arr, axis = ravel(arr), 0
    else:
        axis = canonical_axis("compress", axis, abstractify(arr).ndim)
    return _selected("compress", cond, arr, axis, size, fill_value)


def extract(condition, arr, *, size: int | None = None, fill_value=0):
    """The elements of ``arr`` where ``condition`` is nonzero (both flattened): ``size``/``fill_value``
    as :func:`compress`."""
    from .creation import asarray
    from .shape import ravel
    check_arraylike("extract", condition, arr)
    return _selected("extract", ravel(asarray(condition)), ravel(asarray(arr)), 0, size, fill_value)


def _immutable(fname: str, inplace: bool) -> None:
    if inplace:
        raise ValueError(f"kiln.numpy.{fname}: kiln arrays are immutable, so it cannot change its argument in "
                         "place; pass inplace=False and use the returned array")


def _cycled(v, k: int):
    """The flat ``v`` repeated cyclically to length ``k``."""
    from .creation import asarray
    from .shape import ravel
    v = ravel(asarray(v))
    nv = abstractify(v).shape[0]
    if nv == k:
        return v
    if nv == 0:
        raise ValueError("kiln.numpy: the values to insert must not be empty")
    return take(v, np.arange(k) % nv)


def place(arr, mask, vals, *, inplace: bool = True):
    """``arr`` with the positions where ``mask`` is true set to ``vals``, in order and repeated
    cyclically (as ``numpy.place``). Needs ``inplace=False``: kiln arrays are immutable."""
    from .creation import asarray
    from .shape import ravel, reshape
    _immutable("place", inplace)
    check_arraylike("place", arr, mask, vals)
    data, m = asarray(arr), asarray(mask)
    if abstractify(m).shape != abstractify(data).shape:
        raise ValueError(f"kiln.numpy.place: mask must have arr's shape {abstractify(data).shape}, got "
                         f"{abstractify(m).shape}")
    n = abstractify(data).size
    if n == 0:
        return data
    flat_mask = ravel(m) if abstractify(m).dtype == np.bool_ else ravel(m) != 0
    (idx,) = _nonzero("place", flat_mask, n, n)
    out = ravel(data).at[idx].set(_cycled(vals, n).astype(abstractify(data).dtype), mode="drop")
    return reshape(out, abstractify(data).shape)


def put(a, ind, v, mode: str | None = None, *, inplace: bool = True):
    """``a`` with the flat positions ``ind`` set to ``v`` (repeated cyclically). ``mode``: None (as in
    JAX, out-of-bounds indices are dropped), ``'clip'`` or ``'wrap'``; ``'raise'`` is not supported.
    Needs ``inplace=False``: kiln arrays are immutable."""
    from .creation import asarray
    from .shape import ravel, reshape
    _immutable("put", inplace)
    check_arraylike("put", a, ind, v)
    arr = asarray(a)
    idx = ravel(asarray(ind))
    if abstractify(idx).dtype.kind not in "iu":
        raise TypeError(f"kiln.numpy.put: ind must be integers, got {abstractify(idx).dtype.name}")
    n = abstractify(arr).size
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        from .ufuncs import clip
        idx, scatter_mode = clip(idx, 0, n - 1), "clip"
    elif mode == "wrap":
        idx, scatter_mode = idx % n, "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("kiln.numpy.put: mode='raise' is not supported (as in JAX); use None (drop out-of-"
                                  "bounds indices), 'clip' or 'wrap'")
    else:
        raise ValueError(f"kiln.numpy.put: mode must be None, 'clip' or 'wrap', got {mode!r}")
    k = abstractify(idx).shape[0]
    if k == 0:
        return arr
    vals = _cycled(v, k).astype(abstractify(arr).dtype)
    return reshape(ravel(arr).at[idx].set(vals, mode=scatter_mode), abstractify(arr).shape)
