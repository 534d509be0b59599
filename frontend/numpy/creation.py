"""Array creation: array, asarray, zeros, ones, full, *_like, arange, linspace, eye."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dispatch, dtypes, lax
from ..array import Array
from ..tracing import Tracer, abstractify
from ._util import is_array, static_int, static_shape


def _dtype_or_default(dtype, default) -> np.dtype:
    return dtypes.canonicalize_dtype(dtype) if dtype is not None else default


def array(object: Any, dtype=None, copy: bool = True, ndmin: int = 0) -> Any:  # noqa: A002
    """An array from an array, a NumPy array, a scalar or a (nested) list/tuple of them."""
    if is_array(object):
        out = object if dtype is None else astype(object, dtype)
    elif isinstance(object, (list, tuple)) and _contains_traced(object):
        out = _stack_nested(object, dtype)
    else:
        if object is None:
            raise TypeError("kiln.numpy.array: None is not a valid array value")
        host = np.asarray(object) if dtype is None else np.asarray(object, dtype=dtypes.canonicalize_dtype(dtype))
        if host.dtype == object or host.dtype.kind in "OSUMm":
            raise TypeError(f"kiln.numpy.array: cannot make an array from {type(object).__name__} "
                            f"({object!r:.60}) (NumPy made dtype {host.dtype})")
        weak = dtype is None and isinstance(object, (int, float, complex)) and not isinstance(object, bool)
        target_dtype = dtypes.dtype_of_value(object)[0] if weak else dtypes.canonicalize_dtype(host.dtype)
        out = dispatch.put(host.astype(target_dtype, copy=False), None, committed=False)
        if weak:
            out = Array(out._buf, out.aval.update(weak_type=True), out._device, False)
    ndim = abstractify(out).ndim
    if ndmin > ndim:
        out = lax.reshape(out, (1,) * (ndmin - ndim) + abstractify(out).shape)
    return out


def _contains_traced(obj) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_contains_traced(o) for o in obj)
    return isinstance(obj, (Tracer, Array))


def _stack_nested(obj, dtype):
    from .shape import stack
    items = [(_stack_nested(o, dtype) if isinstance(o, (list, tuple)) else o) for o in obj]
    items = [i if is_array(i) else asarray(i) for i in items]
    out = stack(items)
    return out if dtype is None else astype(out, dtype)


def asarray(a: Any, dtype=None, order=None, *, copy=None) -> Any:
    """Like :func:`array`, without copying kiln arrays."""
    return array(a, dtype=dtype)


def astype(x, dtype, /, *, copy: bool = False) -> Any:
    """``x`` converted to ``dtype`` (a strong type)."""
    return lax.convert_element_type(x if is_array(x) else asarray(x), dtype)


def full(shape, fill_value, dtype=None) -> Any:
    """An array of ``shape`` filled with ``fill_value``."""
    shape = static_shape("full", shape)
    if is_array(fill_value):
        fill = fill_value if dtype is None else astype(fill_value, dtype)
        from ._util import broadcast_to_shape
        return broadcast_to_shape(fill, shape)
    dt, weak = dtypes.dtype_of_value(fill_value)
    # As in JAX, a Python scalar fill without a dtype gives a weakly typed array.
    return lax.broadcast_in_dim(lax.literal(fill_value, _dtype_or_default(dtype, dt), weak and dtype is None),
                                shape, ())


def zeros(shape, dtype=None) -> Any:
    """An array of zeros (float32 unless ``dtype`` says otherwise)."""
    return full(shape, 0, _dtype_or_default(dtype, dtypes.default_float_dtype()))


def ones(shape, dtype=None) -> Any:
    """An array of ones (float32 unless ``dtype`` says otherwise)."""
    return full(shape, 1, _dtype_or_default(dtype, dtypes.default_float_dtype()))


def empty(shape, dtype=None) -> Any:
    """Same as :func:`zeros` (XLA has no uninitialised memory)."""
    return zeros(shape, dtype)


def _like(x, shape, dtype):
    aval = abstractify(x)
    return (aval.shape if shape is None else shape), _dtype_or_default(dtype, aval.dtype)


def full_like(a, fill_value, dtype=None, shape=None) -> Any:
    shape, dtype = _like(a, shape, dtype)
    return full(shape, fill_value, dtype)


def zeros_like(a, dtype=None, shape=None) -> Any:
    shape, dtype = _like(a, shape, dtype)
    return full(shape, 0, dtype)


def ones_like(a, dtype=None, shape=None) -> Any:
    shape, dtype = _like(a, shape, dtype)
    return full(shape, 1, dtype)


def empty_like(a, dtype=None, shape=None) -> Any:
    return zeros_like(a, dtype, shape)


def arange(start, stop=None, step=None, dtype=None) -> Any:
    """Evenly spaced values in ``[start, stop)``; the bounds must be static."""
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, Tracer):
            raise TypeError(f"kiln.numpy.arange: {name} must be a static value (the length of the result "
                            "depends on it); it is traced here. Mark it static with static_argnums, or use "
                            "kiln.lax.iota with a static length")
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if step == 0:
        raise ValueError("kiln.numpy.arange: step must not be zero")
    values = [v for v in (start, stop, step) if v is not None]
    if dtype is None:
        if builtins_any(isinstance(v, float) or isinstance(v, np.floating) or
                        (isinstance(v, Array) and v.dtype.kind == "f") for v in values):
            dtype = dtypes.default_float_dtype()
        else:
            dtype = dtypes.default_int_dtype()
    dtype = dtypes.canonicalize_dtype(dtype)
    start, stop, step = (v.item() if isinstance(v, Array) else v for v in (start, stop, step))
    n = builtins_max(0, math.ceil((stop - start) / step))
    out = lax.iota(dtype, n)
    if step != 1:
        out = lax.mul(out, lax.broadcast_in_dim(lax.literal(step, dtype), (n,), ()))
    if start != 0:
        out = lax.add(out, lax.broadcast_in_dim(lax.literal(start, dtype), (n,), ()))
    return out


builtins_any, builtins_max = any, max


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None, axis: int = 0):
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    num = static_int("linspace", "num", num)
    if num < 0:
        raise ValueError(f"kiln.numpy.linspace: num must be non-negative, got {num}")
    dtype = _dtype_or_default(dtype, dtypes.default_float_dtype())
    ftype = dtype if dtypes.is_inexact(dtype) else dtypes.default_float_dtype()
    div = (num - 1) if endpoint else num
    start_a, stop_a = astype(asarray(start), ftype), astype(asarray(stop), ftype)
    step = lax.div(lax.sub(stop_a, start_a), lax.literal(builtins_max(div, 1), ftype)) if div > 0 else \
        lax.sub(stop_a, start_a)
    idx = lax.iota(ftype, num)
    out = lax.add(lax.mul(idx, lax.broadcast_in_dim(step, (num,), ())), lax.broadcast_in_dim(start_a, (num,), ()))
    if endpoint and num > 1:
        out = lax.dynamic_update_slice(out, lax.reshape(stop_a, (1,)), [num - 1])
    out = astype(out, dtype)
    return (out, step) if retstep else out


def eye(N: int, M: int | None = None, k: int = 0, dtype=None) -> Any:
    """A 2-D array with ones on the k-th diagonal."""
    N = static_int("eye", "N", N)
    M = N if M is None else static_int("eye", "M", M)
    dtype = _dtype_or_default(dtype, dtypes.default_float_dtype())
    rows = lax.broadcasted_iota(dtypes.default_int_dtype(), (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.default_int_dtype(), (N, M), 1)
    if k:
        rows = lax.add(rows, lax.broadcast_in_dim(lax.literal(k, dtypes.default_int_dtype()), (N, M), ()))
    return lax.convert_element_type(lax.eq(rows, cols), dtype)


def identity(n: int, dtype=None) -> Any:
    return eye(n, dtype=dtype)
