"""Reductions of kiln.numpy: sum, prod, max, min, any, all, mean, var, std, argmax, argmin, ptp, average,
count_nonzero and the NaN-ignoring nan* variants, with JAX's dtype rules.

- ``sum``/``prod`` of bool and of integers narrower than the default int accumulate in the default
  int (int32, or int64 with x64); unsigned ones in the default unsigned int.
- ``mean``/``var``/``std`` of bool and integers are floats (float32 by default).
- float16/bfloat16 are accumulated in float32 and the result cast back.
- ``var`` is two-pass (mean first, then the mean squared deviation), stable for data with a large mean.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.tracing import abstractify, materialize
from ..driver.eager_jit import eager_jit
from ._util import broadcast_shapes, broadcast_to_shape, canonical_axis, convert, promote_dtypes, sorted_axes

__all__ = [
    "all", "amax", "amin", "any", "argmax", "argmin", "average", "count_nonzero", "max", "mean", "min",
    "nanargmax", "nanargmin", "nanmax", "nanmean", "nanmin", "nanprod", "nanstd", "nansum", "nanvar", "prod", "ptp",
    "std", "sum", "var",
]

_SMALL_FLOATS = (dtypes.float16, dtypes.bfloat16)


def _no_out(fname: str, out) -> None:
    if out is not None:
        raise TypeError(f"kiln.numpy.{fname}: out= is not supported (kiln arrays are immutable); "
                        "use the return value")


def _operand(fname: str, a):
    (a,) = promote_dtypes(fname, a)
    return materialize(a)


def _keepdims(x, axes: tuple[int, ...], in_shape: tuple[int, ...]):
    return lax.reshape(x, tuple(1 if i in axes else d for i, d in enumerate(in_shape)))


def _full(value, aval_like, shape=None):
    shape = aval_like.shape if shape is None else shape
    lit = lax.literal(value, aval_like.dtype, aval_like.weak_type)
    return lax.broadcast_in_dim(lit, shape, ()) if shape else materialize(lit)


def _where_mask(fname: str, where, shape: tuple[int, ...]):
    """``where`` as a boolean array of ``shape`` (it must broadcast to it)."""
    (w,) = promote_dtypes(fname, where)
    w = materialize(w)
    ws = abstractify(w).shape
    if broadcast_shapes(fname, ws, shape) != shape:
        raise ValueError(f"kiln.numpy.{fname}: where= of shape {ws} does not broadcast to the array's shape {shape}")
    if abstractify(w).dtype != np.bool_:
        w = lax.ne(w, _full(0, abstractify(w)))
    return broadcast_to_shape(w, shape)


def _select_fill(mask, x, value):
    """``x`` where ``mask``, else ``value`` (a Python scalar or a 0-d array)."""
    aval = abstractify(x)
    if isinstance(value, (bool, int, float, complex)):
        fill = _full(value, aval)
    else:
        fill = broadcast_to_shape(convert(value, aval.dtype, aval.weak_type), aval.shape)
    return lax.select(mask, x, fill)


def _isnan(x):
    aval = abstractify(x)
    if dtypes.is_inexact(aval.dtype):
        return lax.ne(x, x)
    return _full(False, aval.update(dtype=np.dtype(np.bool_), weak_type=False))


def _promote_int(dtype: np.dtype) -> np.dtype | None:
    """The accumulation dtype of sum/prod of bool and narrow integers (as JAX)."""
    if dtype == np.bool_ or (dtypes.kind(dtype) == "i" and dtype.itemsize < dtypes.default_int_dtype().itemsize):
        return dtypes.default_int_dtype()
    if dtypes.kind(dtype) == "u" and dtype.itemsize < dtypes.default_uint_dtype().itemsize:
        return dtypes.default_uint_dtype()
    return None


_COMBINE = {"sum": lax.add, "prod": lax.mul, "max": lax.max, "min": lax.min}


def _reduce(fname: str, kind: str, a, axis, dtype, keepdims: bool, where, initial, identity):
    """The common path of sum/prod/max/min: dtype, where=, initial=, keepdims."""
    a = _operand(fname, a)
    aval = abstractify(a)
    axes = sorted_axes(fname, axis, aval.ndim)
    if dtype is not None:
        a = convert(a, dtypes.check_user_dtype(dtype, f"kiln.numpy.{fname}"), False)
    out_aval = abstractify(a)
    if out_aval.dtype in _SMALL_FLOATS and kind in ("sum", "prod"):
        a = convert(a, dtypes.float32, out_aval.weak_type)  # accumulate in float32
    if where is not None:
        fill = identity if identity is not None else initial
        if fill is None:
            raise ValueError(f"kiln.numpy.{fname}: reduction with where= needs initial= (the {fname} of an empty "
                             "selection is undefined)")
        a = _select_fill(_where_mask(fname, where, aval.shape), a, fill)
    if identity is None and initial is None and builtins.any(aval.shape[ax] == 0 for ax in axes):
        raise ValueError(f"kiln.numpy.{fname}: zero-size array to reduction operation {fname} which has no "
                         "identity; pass initial=")
    lax_fn = {"sum": lax.reduce_sum, "prod": lax.reduce_prod, "max": lax.reduce_max, "min": lax.reduce_min}[kind]
    cur = abstractify(a)
    if cur.dtype == np.bool_ and kind in ("max", "min"):
        lax_fn = lax.reduce_or if kind == "max" else lax.reduce_and
    out = lax_fn(a, axes)
    if initial is not None:
        oa = abstractify(out)
        init = broadcast_to_shape(convert(initial if not isinstance(initial, (np.ndarray, np.generic))
                                          else np.asarray(initial), oa.dtype, oa.weak_type), oa.shape)
        if abstractify(init).ndim != len(oa.shape):
            raise ValueError(f"kiln.numpy.{fname}: initial must be a scalar")
        combine = _COMBINE[kind]
        if oa.dtype == np.bool_:
            combine = lax.bitwise_or if kind in ("max", "sum") else lax.bitwise_and
        out = combine(out, init)
    out = convert(out, out_aval.dtype, False)  # a reduction's result is strongly typed, a weak operand's too (as JAX)
    if keepdims:
        out = _keepdims(out, axes, aval.shape)
    return out


def _sum_like(fname: str, kind: str, a, axis, dtype, out, keepdims, initial, where, promote_integers, identity):
    _no_out(fname, out)
    a = _operand(fname, a)
    if dtype is None and promote_integers:
        dtype = _promote_int(abstractify(a).dtype)
    if dtype is None and abstractify(a).dtype == np.bool_:
        dtype = dtypes.default_int_dtype()
    return _reduce(fname, kind, a, axis, dtype, keepdims, where, initial, identity)


@eager_jit("axis", "dtype", "out", "keepdims", "promote_integers")
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,  # noqa: A001
        promote_integers: bool = True):
    """Sum of elements over ``axis`` (an int, a tuple or None for all)."""
    return _sum_like("sum", "sum", a, axis, dtype, out, keepdims, initial, where, promote_integers, 0)


@eager_jit("axis", "dtype", "out", "keepdims", "promote_integers")
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers: bool = True):
    """Product of elements over ``axis``."""
    return _sum_like("prod", "prod", a, axis, dtype, out, keepdims, initial, where, promote_integers, 1)


@eager_jit("axis", "out", "keepdims")
def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Maximum over ``axis`` (NaN propagates). ``where=`` needs ``initial=``."""
    _no_out("max", out)
    return _reduce("max", "max", a, axis, None, keepdims, where, initial, None)


@eager_jit("axis", "out", "keepdims")
def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Minimum over ``axis`` (NaN propagates). ``where=`` needs ``initial=``."""
    _no_out("min", out)
    return _reduce("min", "min", a, axis, None, keepdims, where, initial, None)


amax, amin = max, min


def _to_bool(fname: str, x):
    x = _operand(fname, x)
    aval = abstractify(x)
    return x if aval.dtype == np.bool_ else lax.ne(x, _full(0, aval))


def _logical(fname: str, a, axis, keepdims, where, identity: bool):
    a = _to_bool(fname, a)
    aval = abstractify(a)
    axes = sorted_axes(fname, axis, aval.ndim)
    if where is not None:
        a = _select_fill(_where_mask(fname, where, aval.shape), a, identity)
    out = convert((lax.reduce_and if identity else lax.reduce_or)(a, axes), np.dtype(np.bool_), False)  # strong
    return _keepdims(out, axes, aval.shape) if keepdims else out


@eager_jit("axis", "out", "keepdims")
def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """Whether any element over ``axis`` is true."""
    _no_out("any", out)
    return _logical("any", a, axis, keepdims, where, False)


@eager_jit("axis", "out", "keepdims")
def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    """Whether all elements over ``axis`` are true."""
    _no_out("all", out)
    return _logical("all", a, axis, keepdims, where, True)


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _inexact(dtype: np.dtype) -> np.dtype:
    return dtype if dtypes.is_inexact(dtype) else dtypes.default_float_dtype()


def _upcast(dtype: np.dtype) -> np.dtype:
    return dtypes.float32 if dtype in _SMALL_FLOATS else dtype


def _mean_parts(fname: str, a, axes, where, compute: np.dtype, keepdims: bool, mask=None):
    """Sum and count (both of ``compute`` dtype) of the selected elements."""
    aval = abstractify(a)
    sel = None if where is None else _where_mask(fname, where, aval.shape)
    if mask is not None:
        sel = mask if sel is None else lax.bitwise_and(sel, mask)
    x = convert(a, compute, False)
    if sel is not None:
        x = _select_fill(sel, x, 0)
    total = lax.reduce_sum(x, axes)
    if sel is None:
        count = _full(_count(aval.shape, axes), abstractify(total))
    else:
        count = lax.reduce_sum(lax.convert_element_type(sel, compute), axes)
    if keepdims:
        total, count = _keepdims(total, axes, aval.shape), _keepdims(count, axes, aval.shape)
    return total, count


@eager_jit("axis", "dtype", "out", "keepdims")
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis``; bool and integers average as floats."""
    _no_out("mean", out)
    a = _operand("mean", a)
    aval = abstractify(a)
    axes = sorted_axes("mean", axis, aval.ndim)
    result = dtypes.check_user_dtype(dtype, "kiln.numpy.mean") if dtype is not None else _inexact(aval.dtype)
    total, count = _mean_parts("mean", a, axes, where, _upcast(result), keepdims)
    return lax.convert_element_type(lax.div(total, count), result)


def _var(fname: str, a, axis, dtype, ddof, keepdims, where, correction, nan: bool):
    if correction is not None:
        if ddof != 0:
            raise ValueError(f"kiln.numpy.{fname}: pass ddof or correction, not both")
        ddof = correction
    a = _operand(fname, a)
    aval = abstractify(a)
    if dtypes.kind(aval.dtype) == "c":
        return _complex_var(fname, a, axis, dtype, ddof, keepdims, where, nan)
    axes = sorted_axes(fname, axis, aval.ndim)
    result = dtypes.check_user_dtype(dtype, f"kiln.numpy.{fname}") if dtype is not None else _inexact(aval.dtype)
    compute = _upcast(_inexact(result))
    mask = lax.bitwise_not(_isnan(a)) if nan and dtypes.is_inexact(aval.dtype) else None
    x = convert(a, compute, False)
    if axes and builtins.all(aval.shape[ax] for ax in axes):
        # Shift by one sample of each slice first: the mean of the shifted data is small, so its
        # rounding error no longer swamps the deviations (data with a large mean, e.g. 1e4 + noise).
        shift = lax.slice(x, (0,) * aval.ndim, tuple(1 if i in axes else d for i, d in enumerate(aval.shape)))
        shift = _select_fill(lax.is_finite(shift), shift, 0)  # a NaN/inf sample (maybe masked out) is no shift
        x = lax.sub(x, broadcast_to_shape(shift, aval.shape))
    total, count = _mean_parts(fname, x, axes, where, compute, True, mask)
    centre = lax.div(total, count)
    dev = lax.sub(x, broadcast_to_shape(centre, aval.shape))
    sq = lax.mul(dev, dev)
    sel = None if where is None else _where_mask(fname, where, aval.shape)
    if mask is not None:
        sel = mask if sel is None else lax.bitwise_and(sel, mask)
    if sel is not None:
        sq = _select_fill(sel, sq, 0)
    ss = lax.reduce_sum(sq, axes)
    count = lax.reshape(count, abstractify(ss).shape)
    ddof_v = ddof if isinstance(ddof, (int, float, np.number)) else convert(ddof, compute, False)
    ca = abstractify(count)
    norm = lax.max(lax.sub(count, broadcast_to_shape(convert(ddof_v, compute, False), ca.shape)), _full(0, ca))
    out = lax.convert_element_type(lax.div(ss, norm), result)
    return _keepdims(out, axes, aval.shape) if keepdims else out


def _complex_var(fname: str, a, axis, dtype, ddof, keepdims, where, nan: bool):
    """The variance of complex data, mean |x - mean|², is the sum of its real and imaginary parts'
    variances; it is real, as NumPy's and JAX's."""
    if nan:
        raise NotImplementedError(f"kiln.numpy.{fname} of complex arrays is not supported yet (a NaN in either "
                                  "part must drop the whole sample); use var/std with where=~isnan(x)")
    if dtype is not None:
        try:
            dtype = np.finfo(dtypes.canonicalize_dtype(dtype)).dtype  # complex64 -> float32, float32 stays
        except dtypes.DtypeArgumentError as e:
            raise e.named(f"kiln.numpy.{fname}") from None
    parts = [_var(fname, part(a), axis, dtype, ddof, keepdims, where, None, False) for part in (lax.real, lax.imag)]
    return lax.add(*parts)


@eager_jit("axis", "dtype", "out", "ddof", "keepdims", "correction")
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """Variance over ``axis`` (two-pass: mean first, then the mean squared deviation, divided by N - ddof)."""
    _no_out("var", out)
    return _var("var", a, axis, dtype, ddof, keepdims, where, correction, False)


@eager_jit("axis", "dtype", "out", "ddof", "keepdims", "correction")
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """Standard deviation over ``axis``."""
    _no_out("std", out)
    v = _var("std", a, axis, dtype, ddof, keepdims, where, correction, False)
    return _sqrt(v)


def _sqrt(v):
    aval = abstractify(v)
    if dtypes.is_inexact(aval.dtype):
        return lax.convert_element_type(lax.sqrt(convert(v, _upcast(aval.dtype), False)), aval.dtype)
    return lax.convert_element_type(lax.sqrt(convert(v, dtypes.default_float_dtype(), False)), aval.dtype)


def _arg(fname: str, lax_fn, a, axis, keepdims: bool):
    a = _operand(fname, a)
    aval = abstractify(a)
    if dtypes.kind(aval.dtype) == "c":
        raise TypeError(f"kiln.numpy.{fname}: complex arrays have no order")
    idx_dtype = dtypes.default_int_dtype()
    if axis is None:
        if aval.size == 0:
            raise ValueError(f"kiln.numpy.{fname}: attempt to get {fname} of an empty sequence")
        out = lax_fn(lax.reshape(a, (aval.size,)), 0, idx_dtype)
        return lax.reshape(out, (1,) * aval.ndim) if keepdims else out
    ax = canonical_axis(fname, axis, aval.ndim)
    if aval.shape[ax] == 0:
        raise ValueError(f"kiln.numpy.{fname}: attempt to get {fname} of an empty sequence (axis {ax} of shape "
                         f"{aval.shape} has size 0)")
    out = lax_fn(a, ax, idx_dtype)
    return _keepdims(out, (ax,), aval.shape) if keepdims else out


@eager_jit("axis", "out", "keepdims")
def argmax(a, axis=None, out=None, keepdims=False):
    """Index of the first maximum (over the flattened array when ``axis`` is None); NaN counts as maximal."""
    _no_out("argmax", out)
    return _arg("argmax", lax.argmax, a, axis, keepdims)


@eager_jit("axis", "out", "keepdims")
def argmin(a, axis=None, out=None, keepdims=False):
    """Index of the first minimum (over the flattened array when ``axis`` is None); NaN counts as minimal."""
    _no_out("argmin", out)
    return _arg("argmin", lax.argmin, a, axis, keepdims)


@eager_jit("axis", "out", "keepdims")
def ptp(a, axis=None, out=None, keepdims=False):
    """Range (maximum minus minimum) over ``axis``."""
    _no_out("ptp", out)
    a = _operand("ptp", a)
    if abstractify(a).dtype == np.bool_:
        raise TypeError("kiln.numpy.ptp: not supported for boolean arrays (the subtraction of booleans is "
                        "undefined); convert to an integer dtype first")
    return lax.sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


@eager_jit("axis", "keepdims")
def count_nonzero(a, axis=None, keepdims=False):
    """Number of non-zero elements over ``axis`` (default int dtype)."""
    b = _to_bool("count_nonzero", a)
    return sum(b, axis=axis, dtype=dtypes.default_int_dtype(), keepdims=keepdims)


@eager_jit("axis", "returned", "keepdims")
def average(a, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
    """Weighted average over ``axis`` (``returned=True`` also gives the sum of the weights)."""
    a = _operand("average", a)
    aval = abstractify(a)
    axes = sorted_axes("average", axis, aval.ndim)
    if weights is None:
        avg = mean(a, axis=axes, keepdims=keepdims)
        if not returned:
            return avg
        av = abstractify(avg)
        return avg, _full(_count(aval.shape, axes), av)
    a, w = promote_dtypes("average", a, weights)
    dtype = _inexact(abstractify(a).dtype)
    a, w = convert(a, dtype, False), convert(w, dtype, False)
    ws = abstractify(w).shape
    if ws != aval.shape:
        if axis is None:
            raise ValueError(f"kiln.numpy.average: axis must be given when the shapes of a {aval.shape} and "
                             f"weights {ws} differ")
        if len(ws) != 1:
            raise ValueError(f"kiln.numpy.average: 1-D weights expected when the shapes of a {aval.shape} and "
                             f"weights {ws} differ")
        if len(axes) != 1:
            raise ValueError("kiln.numpy.average: weights of a different shape than a need a single axis")
        if ws[0] != aval.shape[axes[0]]:
            raise ValueError(f"kiln.numpy.average: length of weights {ws[0]} differs from the length "
                             f"{aval.shape[axes[0]]} of axis {axes[0]}")
        w = lax.broadcast_in_dim(w, aval.shape, (axes[0],))
    # JAX's sum(a * w) / sum(w): the product and the quotient in the arrays' dtype (bfloat16 too), only the
    # sums accumulate in float32
    wsum = sum(w, axis=axes)
    avg = lax.div(sum(lax.mul(a, w), axis=axes), wsum)
    if keepdims:
        avg, wsum = _keepdims(avg, axes, aval.shape), _keepdims(wsum, axes, aval.shape)
    return (avg, wsum) if returned else avg


# ---------------------------------------------------------------------------------------------
# NaN-ignoring reductions
# ---------------------------------------------------------------------------------------------

def _nan_filled(fname: str, a, value):
    a = _operand(fname, a)
    if not dtypes.is_inexact(abstractify(a).dtype):
        return a, None
    nan = _isnan(a)
    return _select_fill(lax.bitwise_not(nan), a, value), nan


@eager_jit("axis", "dtype", "out", "keepdims")
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum over ``axis``, treating NaN as zero."""
    a, _ = _nan_filled("nansum", a, 0)
    try:
        return sum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)
    except dtypes.DtypeArgumentError as e:
        raise e.named("kiln.numpy.nansum") from None


@eager_jit("axis", "dtype", "out", "keepdims")
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product over ``axis``, treating NaN as one."""
    a, _ = _nan_filled("nanprod", a, 1)
    try:
        return prod(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)
    except dtypes.DtypeArgumentError as e:
        raise e.named("kiln.numpy.nanprod") from None


def _nan_extreme(fname: str, fn, fill, a, axis, out, keepdims, initial, where):
    _no_out(fname, out)
    filled, nan = _nan_filled(fname, a, fill)
    res = fn(filled, axis=axis, keepdims=keepdims, initial=initial, where=where)
    if nan is None:
        return res
    all_nan = all(nan, axis=axis, keepdims=keepdims)  # an all-NaN slice gives NaN
    return _select_fill(lax.bitwise_not(all_nan), res, float("nan"))


@eager_jit("axis", "out", "keepdims")
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum over ``axis``, ignoring NaN (NaN for an all-NaN slice)."""
    return _nan_extreme("nanmax", max, float("-inf"), a, axis, out, keepdims, initial, where)


@eager_jit("axis", "out", "keepdims")
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum over ``axis``, ignoring NaN (NaN for an all-NaN slice)."""
    return _nan_extreme("nanmin", min, float("inf"), a, axis, out, keepdims, initial, where)


@eager_jit("axis", "dtype", "out", "keepdims")
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Mean over ``axis`` of the non-NaN elements (NaN for an all-NaN slice)."""
    _no_out("nanmean", out)
    a = _operand("nanmean", a)
    aval = abstractify(a)
    if not dtypes.is_inexact(aval.dtype):
        return mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    axes = sorted_axes("nanmean", axis, aval.ndim)
    result = dtypes.check_user_dtype(dtype, "kiln.numpy.nanmean") if dtype is not None else aval.dtype
    total, count = _mean_parts("nanmean", a, axes, where, _upcast(_inexact(result)), keepdims,
                               lax.bitwise_not(_isnan(a)))
    return lax.convert_element_type(lax.div(total, count), result)


@eager_jit("axis", "dtype", "out", "ddof", "keepdims", "correction")
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """Variance over ``axis`` of the non-NaN elements."""
    _no_out("nanvar", out)
    return _var("nanvar", a, axis, dtype, ddof, keepdims, where, correction, True)


@eager_jit("axis", "dtype", "out", "ddof", "keepdims", "correction")
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    """Standard deviation over ``axis`` of the non-NaN elements."""
    _no_out("nanstd", out)
    return _sqrt(_var("nanstd", a, axis, dtype, ddof, keepdims, where, correction, True))


def _nan_arg(fname: str, fn, fill, a, axis, out, keepdims):
    _no_out(fname, out)
    filled, nan = _nan_filled(fname, a, fill)
    res = fn(filled, axis=axis, keepdims=keepdims)
    if nan is None:
        return res
    all_nan = all(nan, axis=axis, keepdims=keepdims)  # an all-NaN slice gives -1, as JAX
    return _select_fill(lax.bitwise_not(all_nan), res, -1)


@eager_jit("axis", "out", "keepdims")
def nanargmax(a, axis=None, out=None, keepdims=False):
    """Index of the maximum ignoring NaN (-1 for an all-NaN slice)."""
    return _nan_arg("nanargmax", argmax, float("-inf"), a, axis, out, keepdims)


@eager_jit("axis", "out", "keepdims")
def nanargmin(a, axis=None, out=None, keepdims=False):
    """Index of the minimum ignoring NaN (-1 for an all-NaN slice)."""
    return _nan_arg("nanargmin", argmin, float("inf"), a, axis, out, keepdims)
