"""Array creation: array, asarray, zeros, ones, full, *_like, arange, linspace, logspace, geomspace,
eye, identity, tri, meshgrid, diag, diagonal, diagflat, copy, indices."""
from __future__ import annotations

import functools
import math
from typing import Any, Sequence

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.config import config
from ..core.errors import ConcretizationTypeError, IntegerOverflowError, NegativeDimensionError
from ..core.tracing import Tracer, abstractify, materialize
from ..driver import dispatch
from ..driver.array import Array
from ..driver.dlpack import from_dlpack  # noqa: F401  (kiln.numpy.from_dlpack)
from ..driver.eager_jit import eager_jit
from ..driver.jit import jit
from ..driver.placement import device_put
from ..lax.sharding import apply_out_sharding, takes_out_sharding
from . import key_arrays
from ._util import (
    broadcast_shapes,
    broadcast_to_shape,
    canonical_axis,
    check_arraylike,
    convert,
    is_array,
    promote_dtypes,
    static_int,
    static_shape,
)

__all__ = [
    "arange", "array", "asarray", "astype", "copy", "diag", "diagflat", "diagonal", "empty", "empty_like", "eye",
    "from_dlpack", "full", "full_like", "geomspace", "identity", "indices", "linspace", "logspace", "meshgrid", "ones",
    "ones_like", "tri", "vander", "zeros", "zeros_like",
]

builtins_any, builtins_max, builtins_min = any, max, min


def _dtype_or_default(dtype, default, fname: str) -> np.dtype:
    """``dtype`` checked (a bad one is reported by ``kiln.numpy.<fname>``), or ``default`` when it is None."""
    if dtype is None:
        return default
    try:
        return dtypes.check_user_dtype(dtype)
    except dtypes.DtypeArgumentError as e:
        raise e.named(f"kiln.numpy.{fname}") from None


def _placed(out: Any, device: Any) -> Any:
    """``out`` committed to ``device`` (a device or a sharding), as JAX's ``device=`` of its creation functions;
    ``out`` itself when it is None."""
    return out if device is None else device_put(out, device)


def takes_device(fn):
    """Decorator: ``fn``'s keyword ``device=`` commits its result there (:func:`_placed`); ``fn`` itself is called
    without it, so that an eagerly compiled ``fn`` (``eager_jit``) keeps one program for every device."""
    @functools.wraps(fn)
    def placed(*args, device=None, **kwargs):
        return _placed(fn(*args, **kwargs), device)
    return placed


def _check_python_ints(fname: str, obj: Any, target: np.dtype, explicit: bool = False) -> None:
    """Python ints that do not fit the target integer dtype are an error (as in JAX), not a wrap-around.
    ``explicit``: the target is a ``dtype=`` argument (not the default integer dtype)."""
    if target.kind not in "iu":
        return
    info = np.iinfo(target)

    def walk(o):
        if isinstance(o, (list, tuple)):
            for i in o:
                walk(i)
        elif type(o) is int and not info.min <= o <= info.max:
            raise dtypes.int_overflow_error(f"kiln.numpy.{fname}", o, target,
                                            source="explicit" if explicit else "default")
    walk(obj)


def _check_huge_ints(fname: str, obj: Any) -> None:
    """A Python int beyond int64 and uint64 (NumPy makes an object array of it): an overflow error."""
    if isinstance(obj, (list, tuple)):
        for o in obj:
            _check_huge_ints(fname, o)
    elif type(obj) is int and not -(2**63) <= obj < 2**64:
        raise dtypes.int_overflow_error(f"kiln.numpy.{fname}", obj, np.int64 if config.enable_x64 else np.int32)


def array(object: Any, dtype=None, copy: bool = True, order=None, ndmin: int = 0, *,  # noqa: A002
          device: Any = None, out_sharding: Any = None) -> Any:
    """An array from an array, a NumPy array, a scalar or a (nested) list/tuple of them (laid out by
    ``out_sharding`` if given, committed to ``device`` if given).

    Python scalars give weakly typed arrays (as in JAX); 64-bit host data becomes 32-bit unless
    ``enable_x64`` is on.
    """
    # array and asarray are called everywhere: out_sharding by hand, without takes_out_sharding's wrapper
    if key_arrays.any_key(object):
        return apply_out_sharding(_placed(key_arrays.rule("asarray")(object, dtype, copy), device), out_sharding,
                                  "kiln.numpy.array")
    try:
        out = _array(object, dtype, ndmin)
    except dtypes.DtypeArgumentError as e:
        raise e.named("kiln.numpy.array") from None
    if copy and out is object and type(out) is Array:
        # a concrete kiln array: a new buffer, so that deleting or donating the copy leaves ``object`` alive
        out = _copy_program()(out)
    return apply_out_sharding(_placed(out, device), out_sharding, "kiln.numpy.array")


def _copy_program():
    global _COPY
    if _COPY is None:
        _COPY = jit(lambda x: x)  # a jitted program's outputs never alias its (undonated) arguments
    return _COPY


_COPY = None


def _array(object: Any, dtype: Any, ndmin: int) -> Any:  # noqa: A002
    ndmin = static_int("array", "ndmin", ndmin)
    if dtype is not None:  # a 64-bit dtype= without x64 warns that it is truncated, as JAX's array and asarray
        dtype = dtypes.check_user_dtype(dtype)
    if is_array(object):
        out = object if dtype is None else astype(object, dtype)
    elif isinstance(object, (list, tuple)) and _contains_traced(object):
        out = _stack_nested(object, dtype)
        aval = abstractify(out)
        if aval.weak_type:  # as JAX (and as outside a trace): a list makes a strongly typed array
            out = convert(out, aval.dtype, False)
    else:
        if _contains_none(object):  # a ValueError, as JAX's
            raise ValueError("kiln.numpy.array: None is not a valid array value"
                             + ("" if object is None else f" (in {object!r:.80})"))
        try:
            host = np.asarray(object) if dtype is None else np.asarray(object,
                                                                       dtype=dtypes.canonicalize_dtype(dtype))
        except OverflowError:  # a Python int beyond the explicit integer dtype
            target = dtypes.canonicalize_dtype(dtype)
            _check_huge_ints("array", object)
            _check_python_ints("array", object, target, explicit=True)
            raise
        except ValueError as e:
            raise ValueError(f"kiln.numpy.array: cannot make an array from {type(object).__name__} "
                             f"({object!r:.60}): {e}") from None
        if dtypes.kind(host.dtype) in "OSUMmV":  # (ml_dtypes' types are kind V in NumPy)
            if host.dtype.kind == "O":
                _check_huge_ints("array", object)
            raise TypeError(f"kiln.numpy.array: cannot make an array from {type(object).__name__} "
                            f"({object!r:.60}) (NumPy made dtype {host.dtype})")
        # (NumPy scalars are strongly typed, as in JAX: np.float64 and np.complex128 subclass float and complex)
        weak = (dtype is None and isinstance(object, (int, float, complex))
                and not isinstance(object, (bool, np.generic)))
        try:
            target_dtype = dtypes.dtype_of_value(object)[0] if weak else dtypes.canonicalize_dtype(host.dtype)
        except IntegerOverflowError as e:  # name the function
            raise IntegerOverflowError(f"kiln.numpy.array: {str(e).removeprefix('kiln: ')}") from None
        if isinstance(object, (list, tuple, int)):
            _check_python_ints("array", object, target_dtype, explicit=dtype is not None)
        out = dispatch.put(host.astype(target_dtype, copy=False), None, committed=False)
        if weak:
            out = Array(out._buf, out.aval.update(weak_type=True), out._device, False)
    ndim = abstractify(out).ndim
    if ndmin > ndim:
        out = lax.reshape(out, (1,) * (ndmin - ndim) + abstractify(out).shape)
    return out


def _contains_traced(obj) -> bool:
    if isinstance(obj, (list, tuple)):
        return builtins_any(_contains_traced(o) for o in obj)
    return isinstance(obj, (Tracer, Array))


def _contains_none(obj) -> bool:
    if isinstance(obj, (list, tuple)):
        return builtins_any(_contains_none(o) for o in obj)
    return obj is None


def _stack_nested(obj, dtype):
    from .shape import stack
    items = [(_stack_nested(o, dtype) if isinstance(o, (list, tuple)) else o) for o in obj]
    items = [i if is_array(i) else asarray(i) for i in items]
    out = stack(items)
    return out if dtype is None else astype(out, dtype)


def asarray(a: Any, dtype=None, order=None, *, copy=None, device=None, out_sharding: Any = None) -> Any:
    """Like :func:`array`, without copying kiln arrays."""
    if key_arrays.any_key(a):
        return apply_out_sharding(_placed(key_arrays.rule("asarray")(a, dtype, False), device), out_sharding,
                                  "kiln.numpy.asarray")
    try:
        out = _array(a, dtype, 0)
    except dtypes.DtypeArgumentError as e:
        raise e.named("kiln.numpy.asarray") from None
    return apply_out_sharding(_placed(out, device), out_sharding, "kiln.numpy.asarray")


def copy(a: Any, order=None) -> Any:
    """A copy of ``a``: a kiln array gets a new buffer (deleting or donating one leaves the other)."""
    return array(a, copy=True)


def astype(x, dtype, /, *, copy: bool = False, device=None) -> Any:
    """``x`` converted to ``dtype`` (a strong type)."""
    try:
        dtype = dtypes.check_user_dtype(dtype)  # (warns of a 64-bit dtype without x64, as JAX's astype)
        return lax.convert_element_type(x if is_array(x) else asarray(x), dtype)
    except dtypes.DtypeArgumentError as e:
        raise e.named("kiln.numpy.astype") from None


def _host_prototype(args: tuple, kwargs: dict) -> bool:
    """A ``*_like`` call on a NumPy array: op by op, which reads its shape and dtype without copying its data to
    the device (the compiled program would take it as an argument)."""
    a = args[0] if args else kwargs.get("a")
    return isinstance(a, (np.ndarray, np.generic))


# The creation functions called eagerly run as one compiled program per shape and dtype (eager_jit): no transfer of
# the fill value and no separate execution that broadcasts it. device= is applied to the result (takes_device).
@takes_out_sharding
@takes_device
@eager_jit("shape", "dtype")
def full(shape, fill_value, dtype=None, *, device=None) -> Any:
    """An array of ``shape`` filled with ``fill_value`` (a scalar or an array broadcast to ``shape``)."""
    shape = static_shape("full", shape)
    if isinstance(fill_value, (list, tuple)) or (isinstance(fill_value, np.ndarray) and fill_value.ndim):
        fill_value = asarray(fill_value)
    if is_array(fill_value):
        try:
            fill = fill_value if dtype is None else astype(fill_value, dtype)
        except dtypes.DtypeArgumentError as e:
            raise e.named("kiln.numpy.full") from None
        fill_shape = abstractify(fill).shape
        if fill_shape:  # (a 0-d fill, a Python scalar's under eager_jit, goes to any shape: lax checks the shape)
            try:
                target = broadcast_shapes("full", fill_shape, shape)
            except ValueError:
                target = None
            if target != shape:
                raise ValueError(f"kiln.numpy.full: fill_value of shape {fill_shape} cannot be broadcast to shape "
                                 f"{shape}")
        return broadcast_to_shape(fill, shape)
    check_arraylike("full", fill_value)
    dt, weak = dtypes.dtype_of_value(fill_value)
    # As in JAX, a Python scalar fill without a dtype gives a weakly typed array.
    lit = lax.literal(fill_value, _dtype_or_default(dtype, dt, "full"), weak and dtype is None)
    return lax.broadcast_in_dim(lit, shape, ())


@takes_out_sharding
@takes_device
@eager_jit("shape", "dtype")
def zeros(shape, dtype=None, *, device=None) -> Any:
    """An array of zeros (float32 unless ``dtype`` says otherwise)."""
    return full(shape, 0, _dtype_or_default(dtype, dtypes.default_float_dtype(), "zeros"))


@takes_out_sharding
@takes_device
@eager_jit("shape", "dtype")
def ones(shape, dtype=None, *, device=None) -> Any:
    """An array of ones (float32 unless ``dtype`` says otherwise)."""
    return full(shape, 1, _dtype_or_default(dtype, dtypes.default_float_dtype(), "ones"))


@takes_out_sharding
@takes_device
@eager_jit("shape", "dtype")
def empty(shape, dtype=None, *, device=None) -> Any:
    """Same as :func:`zeros` (XLA has no uninitialised memory)."""
    return full(shape, 0, _dtype_or_default(dtype, dtypes.default_float_dtype(), "empty"))


def _duck_aval(x) -> ShapedArray | None:
    """The shape and dtype of an object that is no array but has both (``kiln.ShapeDtypeStruct``), else None."""
    if isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or not (hasattr(x, "shape") and hasattr(x, "dtype")):
        return None
    try:
        return ShapedArray(tuple(x.shape), dtypes.canonicalize_dtype(x.dtype), bool(getattr(x, "weak_type", False)))
    except (TypeError, ValueError):
        return None  # (check_arraylike then explains what it is)


def _filled_like(fname, x, fill_value, shape, dtype):
    """``full`` with the shape and dtype of ``x`` (unless given). As in JAX, the result is weakly typed when
    ``x`` is, no dtype is given and the fill is a scalar: ``zeros_like(1.0) + bfloat16_array`` stays bfloat16."""
    aval = _duck_aval(x)  # as JAX's: anything with a shape and a dtype (a ShapeDtypeStruct) gives them
    if aval is None:
        check_arraylike(fname, x)
        aval = abstractify(x)
    shape = aval.shape if shape is None else static_shape(fname, shape)
    if dtype is None and aval.weak_type and np.ndim(fill_value) == 0:  # (an array fill keeps its strong type)
        check_arraylike(fname, x, fill_value)
        return lax.broadcast_in_dim(convert(fill_value, aval.dtype, True), shape, ())
    return full(shape, fill_value, _dtype_or_default(dtype, aval.dtype, fname))


@takes_out_sharding
@takes_device
@eager_jit("dtype", "shape", op_by_op=_host_prototype)
def full_like(a, fill_value, dtype=None, shape=None, *, device=None) -> Any:
    """An array with the shape and dtype of ``a`` filled with ``fill_value``."""
    return _filled_like("full_like", a, fill_value, shape, dtype)


@takes_out_sharding
@takes_device
@eager_jit("dtype", "shape", op_by_op=_host_prototype)
def zeros_like(a, dtype=None, shape=None, *, device=None) -> Any:
    """An array of zeros with the shape and dtype of ``a``."""
    return _filled_like("zeros_like", a, 0, shape, dtype)


@takes_out_sharding
@takes_device
@eager_jit("dtype", "shape", op_by_op=_host_prototype)
def ones_like(a, dtype=None, shape=None, *, device=None) -> Any:
    """An array of ones with the shape and dtype of ``a``."""
    return _filled_like("ones_like", a, 1, shape, dtype)


@takes_device
@eager_jit("dtype", "shape", op_by_op=_host_prototype)
def empty_like(a, dtype=None, shape=None, *, device=None) -> Any:
    """Same as :func:`zeros_like`."""
    return _filled_like("empty_like", a, 0, shape, dtype)


def _static_scalar(fname: str, name: str, v):
    """A static Python number from an argument that decides a shape."""
    if isinstance(v, Tracer):
        from ..core.tracing import concrete
        value = concrete(v)
        if value is None:
            raise ConcretizationTypeError(  # (a TypeError, as before; JAX's class)
                f"kiln.numpy.{fname}: {name} must be a static value (the length of the result depends on it); it "
                "is traced here. Mark it static with static_argnums, or use kiln.lax.iota with a static length")
        v = value
    if isinstance(v, (Array, np.ndarray, np.generic)):
        if np.ndim(v) != 0:
            raise ValueError(f"kiln.numpy.{fname}: {name} must be a scalar, got an array of shape {np.shape(v)}")
        v = np.asarray(v).item()
    if isinstance(v, complex):
        raise TypeError(f"kiln.numpy.{fname}: {name} must be real, got {v!r}")
    if not isinstance(v, (bool, int, float)):
        raise TypeError(f"kiln.numpy.{fname}: {name} must be a number, got {type(v).__name__} {v!r:.40}")
    return v


@takes_out_sharding
@takes_device
@eager_jit("start", "stop", "step", "dtype")
def arange(start, stop=None, step=None, dtype=None, *, device=None) -> Any:
    """Evenly spaced values in ``[start, stop)``; the bounds must be static (they decide the length)."""
    raw = [v for v in (start, stop, step) if v is not None]
    start = _static_scalar("arange", "start", start)
    stop = None if stop is None else _static_scalar("arange", "stop", stop)
    step = None if step is None else _static_scalar("arange", "step", step)
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if step == 0:
        raise ZeroDivisionError("kiln.numpy.arange: step must not be zero (division by zero computing the length)")
    if dtype is None:
        is_float = builtins_any(isinstance(v, (float, np.floating)) or
                                (is_array(v) and dtypes.kind(abstractify(v).dtype) == "f") or
                                (isinstance(v, np.ndarray) and v.dtype.kind == "f") for v in raw)
        dtype = dtypes.default_float_dtype() if is_float else dtypes.default_int_dtype()
    else:
        dtype = dtypes.check_user_dtype(dtype, "kiln.numpy.arange")
    if builtins_all_int(start, stop, step):
        n = builtins_max(0, -(-(int(stop) - int(start)) // int(step)))
    else:
        n = builtins_max(0, math.ceil((stop - start) / step))
    if dtype == np.bool_:
        if n > 2:
            raise ValueError(f"kiln.numpy.arange: a bool arange cannot have {n} elements")
        return lax.ne(lax.iota(dtypes.default_int_dtype(), n), 0)
    cdtype = dtype
    if not dtypes.is_inexact(dtype) and not builtins_all_int(start, stop, step):
        # Fractional bounds with an integer dtype: NumPy (and so JAX) casts the first two values and
        # steps by their difference.
        first = np.asarray(start).astype(dtype).item()
        start, step = first, np.asarray(start + step).astype(dtype).item() - first
    out = lax.iota(cdtype, n)
    if step != 1:
        out = lax.mul(out, lax.broadcast_in_dim(lax.literal(step, cdtype), (n,), ()))
    if start != 0:
        out = lax.add(out, lax.broadcast_in_dim(lax.literal(start, cdtype), (n,), ()))
    return lax.convert_element_type(out, dtype)


def builtins_all_int(*vs) -> bool:
    return all(isinstance(v, (int, np.integer)) for v in vs)


def _float_type(dtype: np.dtype) -> np.dtype:
    return dtype if dtypes.is_inexact(dtype) else dtypes.default_float_dtype()


def _bounds(fname: str, start, stop, dtype):
    """``start`` and ``stop`` promoted, as arrays of the computation dtype broadcast to one shape."""
    check_arraylike(fname, start, stop)
    start_a, stop_a = promote_dtypes(fname, start, stop)
    if dtype is None:
        dtype = _float_type(abstractify(start_a).dtype)
    try:
        dtype = dtypes.canonicalize_dtype(dtype)
    except dtypes.DtypeArgumentError as e:
        raise e.named(f"kiln.numpy.{fname}") from None
    ctype = _float_type(dtype)
    if dtypes.is_complex(ctype):
        raise NotImplementedError(f"kiln.numpy.{fname}: complex bounds are not supported yet")
    start_a, stop_a = (lax.convert_element_type(materialize(x), ctype) for x in (start_a, stop_a))
    shape = broadcast_shapes(fname, abstractify(start_a).shape, abstractify(stop_a).shape)
    return broadcast_to_shape(start_a, shape), broadcast_to_shape(stop_a, shape), shape, dtype, ctype


def _along(x, shape, axis: int):
    """``x`` (of shape ``shape`` minus ``axis``) broadcast along a new ``axis`` of ``shape``."""
    return lax.broadcast_in_dim(x, shape, tuple(d for d in range(len(shape)) if d != axis))


@takes_device
@eager_jit("num", "endpoint", "retstep", "dtype", "axis", ints_to_inexact=True)
def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None,
             axis: int = 0, *, device=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (arrays of bounds give one series each,
    along ``axis`` of the result). Integer dtypes round toward minus infinity, as NumPy 2."""
    num = static_int("linspace", "num", num)
    if num < 0:
        raise ValueError(f"kiln.numpy.linspace: num must be non-negative, got {num}")
    start_a, stop_a, bshape, dtype, ctype = _bounds("linspace", start, stop, dtype)
    axis = canonical_axis("linspace", axis, len(bshape) + 1)
    shape = bshape[:axis] + (num,) + bshape[axis:]
    div = (num - 1) if endpoint else num
    # (no step: a scalar NaN, as JAX, whatever the shape of the bounds)
    step = lax.div(lax.sub(stop_a, start_a), _fill(div, ctype, bshape)) if div > 0 else _fill(np.nan, ctype, ())
    if num > 1:
        out = _interpolate(start_a, stop_a, div, axis)
        if endpoint:  # stop itself, appended (as JAX): the formula would round it
            out = lax.concatenate([out, _along(stop_a, bshape[:axis] + (1,) + bshape[axis:], axis)], axis)
    else:  # nothing, or start alone (no arithmetic, as JAX: 0 * stop would be NaN for an infinite stop)
        out = _along(start_a, shape, axis)
    if not dtypes.is_inexact(dtype):
        out = lax.floor(out)
    out = lax.convert_element_type(out, dtype)
    return (out, step) if retstep else out


def _interpolate(start, stop, n: int, axis: int):
    """``start * (1 - f) + stop * f`` for ``f = i / n``, ``i < n`` along a new ``axis``: JAX's formula, op for
    op, so that the values round as JAX's (``start + i * step`` differs in the last place for half of them).
    Compiled, XLA rewrites the division by the constant ``n`` and reassociates the products, for JAX's program
    as for this one; op by op (``disable_jit``, eager transformations) the ops round as written."""
    bshape, ctype = abstractify(start).shape, abstractify(start).dtype
    shape = bshape[:axis] + (n,) + bshape[axis:]
    f = lax.div(lax.broadcasted_iota(ctype, shape, axis), _fill(n, ctype, shape))
    one_minus_f = lax.sub(_fill(1, ctype, shape), f)
    return lax.add(lax.mul(_along(start, shape, axis), one_minus_f), lax.mul(_along(stop, shape, axis), f))


def _fill(value, dtype, shape):
    lit = lax.literal(value, dtype)
    return lax.broadcast_in_dim(lit, shape, ()) if shape else materialize(lit)


@eager_jit("num", "endpoint", "dtype", "axis", ints_to_inexact=True)
def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None, axis: int = 0):
    """``base ** linspace(start, stop, ...)``."""
    dtype = None if dtype is None else dtypes.check_user_dtype(dtype, "kiln.numpy.logspace")
    lin = linspace(start, stop, num, endpoint=endpoint, dtype=None if dtype is None else _float_type(dtype),
                   axis=axis)
    from .ufuncs import power
    out = power(base, lin) if is_array(base) or not isinstance(base, int) else power(float(base), lin)
    if dtype is not None:
        out = lax.convert_element_type(out, dtype)
    return out


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """Numbers spaced evenly on a log scale, from ``start`` to ``stop`` (both non-zero, same sign)."""
    for name, v in (("start", start), ("stop", stop)):  # Python numbers: checked before they are traced
        if isinstance(v, (int, float)) and v == 0:
            raise ValueError(f"kiln.numpy.geomspace: {name} must be non-zero (geometric sequence cannot include "
                             "zero)")
    return _geomspace(start, stop, num, endpoint, dtype, axis)


@eager_jit("num", "endpoint", "dtype", "axis", where="kiln.numpy.geomspace")
def _geomspace(start, stop, num, endpoint, dtype, axis):
    num = static_int("geomspace", "num", num)
    start_a, stop_a, bshape, dtype, ctype = _bounds("geomspace", start, stop, dtype)
    sign = lax.sign(start_a)
    lo, hi = lax.log(lax.abs(start_a)), lax.log(lax.abs(stop_a))
    t = linspace(lo, hi, num, endpoint=endpoint, dtype=ctype, axis=axis)
    axis = canonical_axis("geomspace", axis, len(bshape) + 1)
    shape = bshape[:axis] + (num,) + bshape[axis:]
    out = lax.mul(_along(sign, shape, axis), lax.exp(t))
    if num > 0:  # exact end points, as NumPy
        pos = lax.broadcasted_iota(dtypes.int32, shape, axis)
        out = lax.select(lax.eq(pos, 0), _along(start_a, shape, axis), out)
        if endpoint and num > 1:
            out = lax.select(lax.eq(pos, num - 1), _along(stop_a, shape, axis), out)
    return lax.convert_element_type(out, dtype)


def _mask_to_dtype(mask, dtype):
    return lax.convert_element_type(mask, dtype)


def _diag_mask(N: int, M: int, k: int):
    """Boolean (N, M) with True where ``col - row == k``."""
    i32 = dtypes.int32
    k = min(max(k, -N), M)  # col - row lies in [1 - N, M - 1]: beyond, the mask is the same, and k fits int32
    rows = lax.broadcasted_iota(i32, (N, M), 0)
    cols = lax.broadcasted_iota(i32, (N, M), 1)
    return lax.eq(lax.sub(cols, rows), lax.broadcast_in_dim(lax.literal(k, i32), (N, M), ()))


@takes_device
@eager_jit("N", "M", "k", "dtype")
def eye(N: int, M: int | None = None, k: int = 0, dtype=None, *, device=None) -> Any:
    """A 2-D array with ones on the ``k``-th diagonal (``k > 0`` above the main one)."""
    N = static_int("eye", "N", N)
    M = N if M is None else static_int("eye", "M", M)
    k = static_int("eye", "k", k)
    if N < 0 or M < 0:
        raise NegativeDimensionError(f"kiln.numpy.eye: negative dimensions are not allowed, got N={N}, M={M}")
    dtype = _dtype_or_default(dtype, dtypes.default_float_dtype(), "eye")
    return _mask_to_dtype(_diag_mask(N, M, k), dtype)


def identity(n: int, dtype=None) -> Any:
    """The ``n`` x ``n`` identity matrix."""
    return eye(static_int("identity", "n", n), dtype=dtype)


def _tri_mask(N: int, M: int, k: int):
    """Boolean (N, M) with True where ``col <= row + k``."""
    i32 = dtypes.int32
    k = min(max(k, -N), M)  # col - row lies in [1 - N, M - 1]: beyond, the mask is the same, and k fits int32
    rows = lax.broadcasted_iota(i32, (N, M), 0)
    cols = lax.broadcasted_iota(i32, (N, M), 1)
    return lax.le(lax.sub(cols, rows), lax.broadcast_in_dim(lax.literal(k, i32), (N, M), ()))


@eager_jit("N", "M", "k", "dtype")
def tri(N: int, M: int | None = None, k: int = 0, dtype=None) -> Any:
    """Ones at and below the ``k``-th diagonal, zeros elsewhere."""
    N = static_int("tri", "N", N)
    M = N if M is None else static_int("tri", "M", M)
    k = static_int("tri", "k", k)
    if N < 0 or M < 0:
        raise NegativeDimensionError(f"kiln.numpy.tri: negative dimensions are not allowed, got N={N}, M={M}")
    return _mask_to_dtype(_tri_mask(N, M, k), _dtype_or_default(dtype, dtypes.default_float_dtype(), "tri"))


@eager_jit("copy", "sparse", "indexing")
def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list[Any]:
    """Coordinate arrays from 1-D coordinate vectors (``indexing='xy'`` swaps the first two axes)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"kiln.numpy.meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    check_arraylike("meshgrid", *xi)
    args = [asarray(x) for x in xi]
    for i, a in enumerate(args):
        if a.ndim != 1:
            raise ValueError(f"kiln.numpy.meshgrid: each argument must be 1-D, got shape {a.shape} for "
                             f"argument {i}")
    shape = [a.shape[0] for a in args]
    if indexing == "xy" and len(args) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(args):
        dim = i
        if indexing == "xy" and len(args) >= 2 and i < 2:
            dim = 1 - i
        if sparse:
            out.append(lax.reshape(a, tuple(s if d == dim else 1 for d, s in enumerate(shape))))
        else:
            out.append(lax.broadcast_in_dim(a, tuple(shape), (dim,)))
    return out


def indices(dimensions: Sequence[int], dtype=None, sparse: bool = False):
    """An array (or, with ``sparse``, a tuple of arrays) of the indices of a grid."""
    dims = static_shape("indices", dimensions)
    dtype = _dtype_or_default(dtype, dtypes.default_int_dtype(), "indices")
    if sparse:
        return tuple(lax.broadcasted_iota(dtype, tuple(d if j == i else 1 for j, d in enumerate(dims)), i)
                     for i in range(len(dims)))
    parts = [lax.broadcasted_iota(dtype, (1,) + dims, i + 1) for i in range(len(dims))]
    if not parts:
        return zeros((0,), dtype)
    return lax.concatenate(parts, 0)


def _array_arg(fname: str, x):
    check_arraylike(fname, x)
    (x,) = promote_dtypes(fname, x)
    return materialize(x)


@eager_jit("offset", "axis1", "axis2")
def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The ``offset``-th diagonal over ``axis1`` and ``axis2`` (appended as the last axis)."""
    return _diagonal("diagonal", a, offset, axis1, axis2)


def _diagonal(fname: str, a, offset, axis1, axis2):
    a = _array_arg(fname, a)
    aval = abstractify(a)
    if aval.ndim < 2:
        raise ValueError(f"kiln.numpy.{fname}: the array must be at least 2-D, got shape {aval.shape}")
    offset = static_int(fname, "offset", offset)
    ax1 = canonical_axis(fname, axis1, aval.ndim)
    ax2 = canonical_axis(fname, axis2, aval.ndim)
    if ax1 == ax2:
        raise ValueError(f"kiln.numpy.{fname}: axis1 and axis2 cannot be the same (both {ax1})")
    rest = [d for d in range(aval.ndim) if d not in (ax1, ax2)]
    a = lax.transpose(a, rest + [ax1, ax2])
    lead = tuple(aval.shape[d] for d in rest)
    n, m = aval.shape[ax1], aval.shape[ax2]
    length = builtins_max(0, builtins_min(n, m - offset) if offset >= 0 else builtins_min(n + offset, m))
    if length == 0:
        return zeros(lead + (0,), aval.dtype)
    # Diagonal elements of the flattened (n*m) matrix sit at a fixed stride of m + 1.
    flat = lax.reshape(a, lead + (n * m,))
    start = offset if offset >= 0 else -offset * m
    limit = start + (length - 1) * (m + 1) + 1
    nl = len(lead)
    return lax.slice(flat, (0,) * nl + (start,), lead + (limit,), (1,) * nl + (m + 1,))


@eager_jit("k")
def diag(v, k: int = 0):
    """A 1-D ``v`` as a 2-D array with ``v`` on its ``k``-th diagonal; a 2-D ``v``'s ``k``-th diagonal."""
    v = _array_arg("diag", v)
    k = static_int("diag", "k", k)
    aval = abstractify(v)
    if aval.ndim == 2:
        return diagonal(v, k)
    if aval.ndim != 1:
        raise ValueError(f"kiln.numpy.diag: the input must be 1-D or 2-D, got shape {aval.shape}")
    n = aval.shape[0]
    size = n + abs(k)
    # Row i holds v[i] (k >= 0) or column j holds v[j] (k < 0); pad v to the full size first.
    padded = lax.pad(v, lax.literal(0, aval.dtype, aval.weak_type), [(0, abs(k), 0)])
    vals = lax.broadcast_in_dim(padded, (size, size), (0,) if k >= 0 else (1,))
    zero = lax.broadcast_in_dim(lax.literal(0, aval.dtype, aval.weak_type), (size, size), ())
    return lax.select(_diag_mask(size, size, k), vals, zero)


def diagflat(v, k: int = 0):
    """The flattened ``v`` on the ``k``-th diagonal of a 2-D array."""
    v = _array_arg("diagflat", v)
    return diag(lax.reshape(v, (abstractify(v).size,)), k)


@eager_jit("N", "increasing")
def vander(x, N: int | None = None, increasing: bool = False):
    """The Vandermonde matrix of the 1-D ``x``: column ``j`` is ``x ** (N - 1 - j)`` (``x ** j`` when
    ``increasing``), built by repeated multiplication as NumPy does. ``N`` (default ``len(x)``) is static."""
    check_arraylike("vander", x)
    (x,) = promote_dtypes("vander", x)
    x = materialize(x)
    aval = abstractify(x)
    if aval.ndim != 1:
        raise ValueError(f"kiln.numpy.vander: x must be 1-D, got shape {aval.shape}")
    n = aval.shape[0] if N is None else static_int("vander", "N", N)
    if n < 0:
        raise ValueError(f"kiln.numpy.vander: N must be non-negative, got {n}")
    from .statistics import cumprod
    cols = [lax.full_like(x, 1)] + [x] * builtins_max(n - 1, 0)
    out = cumprod(lax.concatenate([lax.reshape(c, (aval.shape[0], 1)) for c in cols[:n]], 1), axis=1) if n \
        else lax.broadcast_in_dim(lax.literal(0, aval.dtype), (aval.shape[0], 0), ())
    return out if increasing else lax.rev(out, (1,))
