"""Reductions of kiln.numpy: sum, prod, max, min, any, all, mean, var, std, argmax, argmin."""
from __future__ import annotations

import numpy as np

from .. import dtypes, lax
from ..tracing import abstractify
from ._util import canonical_axes, canonical_axis, convert, promote_dtypes


def _keepdims(x, axes: tuple[int, ...], in_shape: tuple[int, ...]):
    shape = tuple(1 if i in axes else d for i, d in enumerate(in_shape))
    return lax.reshape(x, shape)


def _reduction(fname: str, lax_fn, x, axis, dtype, keepdims: bool, where, initial, identity):
    (x,) = promote_dtypes(fname, x)
    aval = abstractify(x)
    axes = canonical_axes(fname, axis, aval.ndim)
    if dtype is not None:
        x = convert(x, dtypes.canonicalize_dtype(dtype), False)
        aval = abstractify(x)
    if where is not None:
        if identity is None:
            raise ValueError(f"kiln.numpy.{fname}: where= needs initial= (the reduction has no identity)")
        from .ufuncs import where as _where
        x = _where(where, x, identity)
    if identity is None and any(aval.shape[a] == 0 for a in axes) and initial is None:
        raise ValueError(f"kiln.numpy.{fname}: zero-size array to reduction operation {fname} which has no "
                         "identity; pass initial=")
    out = lax_fn(x, axes)
    if initial is not None:
        from .ufuncs import add, maximum, minimum, multiply
        combine = {"max": maximum, "min": minimum, "sum": add, "prod": multiply}[fname]
        out = convert(combine(out, initial), abstractify(out).dtype, abstractify(out).weak_type)
    if keepdims:
        out = _keepdims(out, axes, aval.shape)
    return out


def _sum_dtype(x):
    """Accumulate small ints in the default int, as JAX (bool/int8 sums give int32)."""
    aval = abstractify(x)
    if aval.dtype == np.bool_ or (aval.dtype.kind == "i" and aval.dtype.itemsize < dtypes.default_int_dtype().itemsize):
        return dtypes.default_int_dtype()
    if aval.dtype.kind == "u" and aval.dtype.itemsize < dtypes.default_uint_dtype().itemsize:
        return dtypes.default_uint_dtype()
    return None


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Sum of elements over ``axis`` (NumPy's signature; ``out`` is not supported)."""
    _no_out("sum", out)
    (a,) = promote_dtypes("sum", a)
    dtype = dtype if dtype is not None else _sum_dtype(a)
    return _reduction("sum", lax.reduce_sum, a, axis, dtype, keepdims, where, initial, 0)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product of elements over ``axis``."""
    _no_out("prod", out)
    (a,) = promote_dtypes("prod", a)
    dtype = dtype if dtype is not None else _sum_dtype(a)
    return _reduction("prod", lax.reduce_prod, a, axis, dtype, keepdims, where, initial, 1)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Maximum over ``axis`` (NaN propagates)."""
    _no_out("max", out)
    return _reduction("max", lax.reduce_max, a, axis, None, keepdims, where, initial,
                      None if initial is None else initial)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Minimum over ``axis`` (NaN propagates)."""
    _no_out("min", out)
    return _reduction("min", lax.reduce_min, a, axis, None, keepdims, where, initial,
                      None if initial is None else initial)


amax, amin = max, min


def _to_bool(x):
    from .ufuncs import _to_bool as tb
    (x,) = promote_dtypes("any", x)
    return tb(x)


def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """Whether any element over ``axis`` is true."""
    _no_out("any", out)
    return _reduction("any", lax.reduce_or, _to_bool(a), axis, None, keepdims, where, None, False)


def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """Whether all elements over ``axis`` are true."""
    _no_out("all", out)
    return _reduction("all", lax.reduce_and, _to_bool(a), axis, None, keepdims, where, None, True)


def _count(fname: str, shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis``; integers average as floats."""
    _no_out("mean", out)
    (a,) = promote_dtypes("mean", a)
    aval = abstractify(a)
    axes = canonical_axes("mean", axis, aval.ndim)
    if dtype is None:
        dtype = aval.dtype if dtypes.is_inexact(aval.dtype) else dtypes.default_float_dtype()
    dtype = dtypes.canonicalize_dtype(dtype)
    total = sum(a, axis=axes, dtype=dtype, keepdims=keepdims, where=where)
    if where is not None:
        count = sum(_broadcast_where(where, aval.shape), axis=axes, dtype=dtype, keepdims=keepdims)
        from .ufuncs import true_divide
        return true_divide(total, count)
    n = _count("mean", aval.shape, axes)
    return lax.div(total, _full_like(total, n))


def _broadcast_where(where, shape):
    from ._util import broadcast_to_shape
    return broadcast_to_shape(where, shape)


def _full_like(x, value):
    aval = abstractify(x)
    lit = lax.literal(value, aval.dtype, aval.weak_type)
    return lax.broadcast_in_dim(lit, aval.shape, ()) if aval.shape else lit


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    """Variance over ``axis`` (two-pass: mean first, then mean squared deviation)."""
    _no_out("var", out)
    (a,) = promote_dtypes("var", a)
    aval = abstractify(a)
    axes = canonical_axes("var", axis, aval.ndim)
    if dtype is None:
        dtype = aval.dtype if dtypes.is_inexact(aval.dtype) else dtypes.default_float_dtype()
    a = convert(a, dtypes.canonicalize_dtype(dtype), aval.weak_type)
    centered = lax.sub(a, _broadcast_back(mean(a, axis=axes, keepdims=True, where=where), abstractify(a).shape))
    if abstractify(centered).dtype.kind == "c":
        raise NotImplementedError("kiln.numpy.var of complex arrays comes with the NumPy issue")
    sq = lax.mul(centered, centered)
    if where is not None:
        from .ufuncs import where as _where
        sq = _where(where, sq, 0)
        count = sum(_broadcast_where(where, aval.shape), axis=axes, dtype=abstractify(sq).dtype, keepdims=keepdims)
        from .ufuncs import subtract, true_divide
        return true_divide(sum(sq, axis=axes, keepdims=keepdims), subtract(count, ddof))
    n = _count("var", aval.shape, axes) - ddof
    total = sum(sq, axis=axes, keepdims=keepdims)
    return lax.div(total, _full_like(total, n if n > 0 else np.nan))


def _broadcast_back(x, shape):
    from ._util import broadcast_to_shape
    return broadcast_to_shape(x, shape)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    """Standard deviation over ``axis``."""
    return lax.sqrt(var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where))


def _arg(fname: str, lax_fn, a, axis, keepdims: bool):
    (a,) = promote_dtypes(fname, a)
    aval = abstractify(a)
    if axis is None:
        if aval.size == 0:
            raise ValueError(f"kiln.numpy.{fname}: attempt to get {fname} of an empty sequence")
        a = lax.reshape(a, (aval.size,))
        out = lax_fn(a, 0, dtypes.default_int_dtype())
        return lax.reshape(out, (1,) * aval.ndim) if keepdims else out
    ax = canonical_axis(fname, axis, aval.ndim)
    if aval.shape[ax] == 0:
        raise ValueError(f"kiln.numpy.{fname}: attempt to get {fname} of an empty sequence")
    out = lax_fn(a, ax, dtypes.default_int_dtype())
    return _keepdims(out, (ax,), aval.shape) if keepdims else out


def argmax(a, axis=None, out=None, keepdims=False):
    """Index of the first maximum (over the flattened array when ``axis`` is None)."""
    _no_out("argmax", out)
    return _arg("argmax", lax.argmax, a, axis, keepdims)


def argmin(a, axis=None, out=None, keepdims=False):
    """Index of the first minimum (over the flattened array when ``axis`` is None)."""
    _no_out("argmin", out)
    return _arg("argmin", lax.argmin, a, axis, keepdims)


def _no_out(fname: str, out) -> None:
    if out is not None:
        raise TypeError(f"kiln.numpy.{fname}: out= is not supported (kiln arrays are immutable); "
                        "use the return value")
