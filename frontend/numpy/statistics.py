"""Order statistics and cumulative reductions of kiln.numpy: quantile, percentile, median (and
their NaN-ignoring variants), cumsum, cumprod, nancumsum, nancumprod, cumulative_sum,
cumulative_prod.

Quantiles sort along the reduced axes (``kiln.lax.sort``) and pick the order statistics with a
gather; cumulative reductions are ``kiln.lax.cumsum``/``cumprod`` (JAX's primitives: one reduce_window, which
XLA runs as a log-depth tree).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.tracing import abstractify, materialize
from ..driver.eager_jit import eager_jit
from ..lax.sharding import takes_out_sharding
from ._util import as_operand, canonical_axis, check_arraylike, convert, promote_dtypes, sorted_axes

__all__ = ["quantile", "percentile", "median", "nanquantile", "nanpercentile", "nanmedian",
           "corrcoef", "cov", "cumsum", "cumprod", "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod"]

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _no_out(fname: str, out: Any) -> None:
    if out is not None:
        raise TypeError(f"kiln.numpy.{fname}: out= is not supported (kiln arrays are immutable); use the return "
                        "value")


def _full(value: Any, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    return lax.broadcast_in_dim(lax.literal(value, dtype), shape, ())


# -- quantiles -------------------------------------------------------------------------------------
def _quantile(fname: str, a: Any, q: Any, axis: Any, method: str, keepdims: bool, ignore_nan: bool,
              scale: float = 1.0, weights: Any = None) -> Any:
    if method not in _METHODS + ("inverted_cdf",):
        raise ValueError(f"kiln.numpy.{fname}: method {method!r} is not supported; use one of "
                         f"{', '.join(map(repr, _METHODS + ('inverted_cdf',)))}")
    if weights is not None and method != "inverted_cdf":
        raise ValueError(f"kiln.numpy.{fname}: only method 'inverted_cdf' supports weights, got method {method!r}")
    check_arraylike(fname, a, q)
    (a,) = promote_dtypes(fname, a)
    a = as_operand(a)
    aval = abstractify(a)
    if dtypes.kind(aval.dtype) == "c":
        raise TypeError(f"kiln.numpy.{fname}: complex arrays have no order (got {aval.dtype.name})")
    if not dtypes.is_inexact(aval.dtype):
        a = convert(a, dtypes.default_float_dtype(), False)
        aval = abstractify(a)
    dtype = aval.dtype
    # Index arithmetic in at least float32 (a bfloat16 index would be off by whole positions).
    idx_float = dtype if dtype.itemsize >= 4 else dtypes.canonicalize_dtype(np.float32)
    q_host = q if isinstance(q, _HOST_Q) else None
    if q_host is not None:  # (its range checked by _quantiles, the one caller)
        q_op = np.asarray(q_host, idx_float)
        q_shape = q_op.shape
    else:
        q_aval = abstractify(q)
        if dtypes.kind(q_aval.dtype) == "c":
            raise TypeError(f"kiln.numpy.{fname}: q must be real, got {q_aval.dtype.name}")
        q_shape = q_aval.shape
        q_op = lax.convert_element_type(as_operand(q), idx_float)
    axes = sorted_axes(fname, axis, aval.ndim)
    kept = tuple(i for i in range(aval.ndim) if i not in axes)
    batch_shape = tuple(aval.shape[i] for i in kept)
    n = int(np.prod([aval.shape[i] for i in axes], dtype=np.int64))
    b = int(np.prod(batch_shape, dtype=np.int64))
    m = int(np.prod(q_shape, dtype=np.int64))
    out_shape = q_shape + (tuple(1 if i in axes else d for i, d in enumerate(aval.shape)) if keepdims
                           else batch_shape)
    if n == 0 or b == 0 or m == 0:
        return _full(np.nan if n == 0 else 0, dtype, out_shape)
    if method == "inverted_cdf":
        w = _weights(fname, weights, aval, axis, dtype)
        return _weighted_quantile_core(materialize(a), materialize(w),
                                       q_op if isinstance(q_op, np.ndarray) else materialize(q_op),
                                       perm=kept + axes, n_reduced=len(axes), out_shape=out_shape,
                                       ignore_nan=bool(ignore_nan), scale=float(scale))
    return _quantile_core(materialize(a), q_op if isinstance(q_op, np.ndarray) else materialize(q_op),
                          perm=kept + axes, n_reduced=len(axes), out_shape=out_shape, method=method,
                          ignore_nan=bool(ignore_nan), scale=float(scale))


def _weights(fname: str, weights: Any, aval: Any, axis: Any, dtype: np.dtype) -> Any:
    """``weights`` (None: all ones) of ``dtype`` broadcast to the shape of ``a``: the same shape, or (as NumPy)
    1-D along an integer ``axis``."""
    if weights is None:
        return _full(1, dtype, aval.shape)
    check_arraylike(fname, weights)
    w = convert(as_operand(weights), dtype, False)
    shape = abstractify(w).shape
    if shape == aval.shape:
        return w
    if isinstance(axis, (int, np.integer)) and len(shape) == 1 and aval.ndim and shape[0] == aval.shape[axis]:
        return lax.broadcast_in_dim(w, aval.shape, (canonical_axis(fname, axis, aval.ndim),))
    raise ValueError(f"kiln.numpy.{fname}: weights of shape {shape} do not fit a of shape {aval.shape} (they "
                     f"need its shape, or 1-D along an integer axis; axis={axis!r})")


@eager_jit("perm", "n_reduced", "out_shape", "ignore_nan", "scale")
def _weighted_quantile_core(a: Any, w: Any, q_op: Any, *, perm: tuple[int, ...], n_reduced: int,
                            out_shape: tuple[int, ...], ignore_nan: bool, scale: float) -> Any:
    """The 'inverted_cdf' quantiles (NumPy's method 1): over the last ``n_reduced`` dimensions of ``a``
    transposed by ``perm``, the first value in sorted order whose share of the total weight ``w`` up to it
    reaches ``q_op / scale``."""
    aval = abstractify(a)
    dtype = aval.dtype
    idx_float = abstractify(q_op).dtype
    m = int(np.prod(abstractify(q_op).shape, dtype=np.int64))
    b = int(np.prod(abstractify(lax.transpose(a, perm)).shape[:aval.ndim - n_reduced], dtype=np.int64))
    n = aval.size // b
    x = lax.reshape(lax.transpose(a, perm), (b, n))
    wt = lax.reshape(lax.transpose(w, perm), (b, n))
    if ignore_nan:  # a NaN weighs nothing
        wt = lax.select(lax.ne(x, x), _full(0, dtype, (b, n)), wt)
    x, wt = lax.sort((x, wt), dimension=1, num_keys=1)
    cdf = lax.convert_element_type(lax.cumsum(wt, axis=1), idx_float)
    total = lax.slice(cdf, (0, n - 1), (b, n))
    cdf = lax.div(cdf, lax.broadcast_in_dim(lax.reshape(total, (b,)), (b, n), (0,)))
    q = _as_1d(q_op, m)
    q = lax.div(q, _full(scale, idx_float, (m,))) if scale != 1.0 else q
    cdf_b = lax.broadcast_in_dim(cdf, (m, b, n), (1, 2))
    # (leading values of no weight are skipped, also for q = 0, as NumPy)
    below = lax.bitwise_or(lax.lt(cdf_b, lax.broadcast_in_dim(q, (m, b, n), (0,))),
                           lax.le(cdf_b, _full(0, idx_float, (m, b, n))))
    int_dtype = dtypes.default_int_dtype()
    count = lax.reduce_sum(lax.convert_element_type(below, int_dtype), (2,))
    i = lax.min(count, _full(n - 1, int_dtype, (m, b)))
    rows = lax.mul(lax.broadcasted_iota(int_dtype, (m, b), 1), _full(n, int_dtype, (m, b)))
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    out = lax.gather(lax.reshape(x, (b * n,)), lax.reshape(lax.add(rows, i), (m, b, 1)), dn, (1,))
    row_nan = lax.reshape(lax.slice(lax.ne(x, x), (0, n - 1), (b, n)), (b,))
    if ignore_nan:  # an all-NaN row
        row_nan = lax.reshape(lax.slice(lax.ne(x, x), (0, 0), (b, 1)), (b,))
    out = lax.select(lax.broadcast_in_dim(row_nan, (m, b), (1,)), _full(np.nan, dtype, (m, b)), out)
    return lax.reshape(out, out_shape)


@eager_jit("perm", "n_reduced", "out_shape", "method", "ignore_nan", "scale")
def _quantile_core(a: Any, q_op: Any, *, perm: tuple[int, ...], n_reduced: int, out_shape: tuple[int, ...],
                   method: str, ignore_nan: bool, scale: float) -> Any:
    """Quantiles at ``q_op / scale`` of ``a`` over its last ``n_reduced`` dimensions after transposing by
    ``perm``."""
    aval = abstractify(a)
    dtype = aval.dtype
    idx_float = abstractify(q_op).dtype
    m = int(np.prod(abstractify(q_op).shape, dtype=np.int64))
    x = lax.transpose(a, perm)
    b = int(np.prod(abstractify(x).shape[:aval.ndim - n_reduced], dtype=np.int64))
    n = aval.size // b
    x = lax.reshape(x, (b, n))
    x = lax.sort(x, dimension=1)
    int_dtype = dtypes.default_int_dtype()
    # The virtual index of each quantile in each row, shape (m, b).
    qb = lax.broadcast_in_dim(_as_1d(q_op, m), (m, b), (0,))
    is_nan = lax.ne(x, x)
    if ignore_nan:
        count = lax.reduce_sum(lax.convert_element_type(lax.bitwise_not(is_nan), int_dtype), (1,))
        last = lax.convert_element_type(lax.max(lax.sub(count, _full(1, int_dtype, (b,))),
                                                _full(0, int_dtype, (b,))), idx_float)
        last = lax.broadcast_in_dim(last, (m, b), (1,))
    else:
        last = _full(n - 1, idx_float, (m, b))
    # Virtual index q * (n - 1) as base + r / scale with an integer base and 0 <= r < scale: exact
    # decisions for the discrete methods even when q is a percentile (XLA divides by a constant
    # through its reciprocal, which would put 40 * 5 / 100 just below 2).
    w = lax.mul(qb, last)
    shape = (m, b)
    base = lax.floor(w if scale == 1.0 else lax.div(w, _full(scale, idx_float, shape)))
    if scale != 1.0:
        sc, one_f = _full(scale, idx_float, shape), _full(1, idx_float, shape)
        base = lax.select(lax.gt(lax.mul(base, sc), w), lax.sub(base, one_f), base)
        base = lax.select(lax.le(lax.mul(lax.add(base, one_f), sc), w), lax.add(base, one_f), base)
        r = lax.sub(w, lax.mul(base, sc))
    else:
        r = lax.sub(w, base)
    one_f = _full(1, idx_float, shape)
    zero_f = _full(0, idx_float, shape)
    lo_f = base
    hi_f = lax.select(lax.gt(r, zero_f), lax.add(base, one_f), base)
    if method == "nearest":  # round half to even, as NumPy's around
        twice = lax.add(r, r)
        half_scale = _full(scale, idx_float, shape)
        odd = lax.sub(base, lax.mul(_full(2, idx_float, shape), lax.floor(lax.mul(base, _full(0.5, idx_float,
                                                                                          shape)))))
        up = lax.bitwise_or(lax.gt(twice, half_scale), lax.bitwise_and(lax.eq(twice, half_scale),
                                                                        lax.eq(odd, one_f)))
        lo_f = hi_f = lax.select(up, lax.add(base, one_f), base)
    t_index = r if scale == 1.0 else lax.div(r, _full(scale, idx_float, shape))
    rows = lax.mul(lax.broadcasted_iota(int_dtype, (m, b), 1), _full(n, int_dtype, (m, b)))
    flat = lax.reshape(x, (b * n,))

    def pick(index_f):
        i = lax.convert_element_type(index_f, int_dtype)
        i = lax.min(lax.max(i, _full(0, int_dtype, (m, b))), _full(n - 1, int_dtype, (m, b)))
        dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
        return lax.gather(flat, lax.reshape(lax.add(rows, i), (m, b, 1)), dn, (1,))

    lo = pick(lo_f)
    if method in ("lower", "nearest"):
        out = lo
    elif method == "higher":
        out = pick(hi_f)
    else:
        hi = pick(hi_f)
        if method == "midpoint":
            out = lax.mul(lax.add(lo, hi), _full(0.5, dtype, (m, b)))
        else:  # linear: NumPy's lerp (from the nearer end), exact when lo == hi
            t = lax.convert_element_type(t_index, dtype)
            diff = lax.sub(hi, lo)
            one = _full(1, dtype, (m, b))
            from_lo = lax.add(lo, lax.mul(diff, t))
            from_hi = lax.sub(hi, lax.mul(diff, lax.sub(one, t)))
            out = lax.select(lax.ge(t, _full(0.5, dtype, (m, b))), from_hi, from_lo)
        out = lax.select(lax.eq(lo, hi), lo, out)
    if not ignore_nan:  # any NaN in a row makes its quantiles NaN (NaNs sort last)
        row_nan = lax.reshape(lax.slice(is_nan, (0, n - 1), (b, n)), (b,))
        out = lax.select(lax.broadcast_in_dim(row_nan, (m, b), (1,)), _full(np.nan, dtype, (m, b)), out)
    return lax.reshape(out, out_shape)


_HOST_Q = (int, float, np.ndarray, np.generic)


def _check_q(fname: str, q: Any, scale: float) -> None:
    """A host ``q`` in [0, 1] (``scale`` 1) or [0, 100] (``scale`` 100), checked at every call: inside the program
    that computes the quantiles it is a traced value."""
    if type(q) is float or type(q) is int:  # (the common case, without NumPy's microseconds)
        bad = not 0 <= q / scale <= 1
    elif isinstance(q, _HOST_Q):
        qs = np.asarray(q, np.float64) / scale
        bad = bool(np.any(~((qs >= 0) & (qs <= 1))))
    else:
        return
    if bad:
        lo_name, hi_name = ("0", "100") if scale != 1.0 else ("0", "1")
        raise ValueError(f"kiln.numpy.{fname}: q must be in the range [{lo_name}, {hi_name}], got {q!r}")


# The quantile functions called eagerly: one compiled program each (as JAX's jitted ones), q an argument of it.
_quantile_program = eager_jit("fname", "axis", "method", "keepdims", "ignore_nan", "scale")(_quantile)


def _quantiles(fname: str, a: Any, q: Any, axis: Any, method: str, keepdims: bool, ignore_nan: bool,
               scale: float = 1.0, weights: Any = None) -> Any:
    _check_q(fname, q, scale)
    if weights is not None:
        return _quantile(fname, a, q, axis, method, keepdims, ignore_nan, scale, weights)
    return _quantile_program(fname, a, q, axis=axis, method=method, keepdims=keepdims, ignore_nan=ignore_nan,
                             scale=scale)


def _as_1d(q: Any, m: int) -> Any:
    return q.reshape(m) if isinstance(q, np.ndarray) else lax.reshape(q, (m,))


def quantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None,
                interpolation: str | None = None) -> Any:
    """The ``q``-th quantiles of ``a`` over ``axis`` (all axes when None).

    ``q`` (in [0, 1]) may be an array: its dimensions come first in the result. ``method`` is
    'linear' (default), 'lower', 'higher', 'midpoint', 'nearest' (ties to even, as NumPy) or
    'inverted_cdf', the one that takes ``weights`` (of ``a``'s shape, or 1-D along an integer ``axis``). A
    slice containing NaN gives NaN. Integer inputs compute in the default float dtype (as JAX).
    """
    _no_out("quantile", out)
    return _quantiles("quantile", a, q, axis, interpolation or method, keepdims, False, weights=weights)


@takes_out_sharding
def percentile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights: Any = None,
                interpolation: str | None = None) -> Any:
    """The ``q``-th percentiles (``q`` in [0, 100]) of ``a``; see :func:`quantile`."""
    _no_out("percentile", out)
    return _quantiles("percentile", a, q, axis, interpolation or method, keepdims, False, scale=100.0,
                      weights=weights)


def median(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """The median of ``a`` over ``axis`` (NaN if the slice contains NaN)."""
    _no_out("median", out)
    return _quantiles("median", a, 0.5, axis, "linear", keepdims, False)


def nanquantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights: Any = None,
                interpolation: str | None = None) -> Any:
    """:func:`quantile` ignoring NaNs (an all-NaN slice gives NaN)."""
    _no_out("nanquantile", out)
    return _quantiles("nanquantile", a, q, axis, interpolation or method, keepdims, True, weights=weights)


def nanpercentile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, weights: Any = None,
                interpolation: str | None = None) -> Any:
    """:func:`percentile` ignoring NaNs."""
    _no_out("nanpercentile", out)
    return _quantiles("nanpercentile", a, q, axis, interpolation or method, keepdims, True, scale=100.0,
                      weights=weights)


def nanmedian(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    """:func:`median` ignoring NaNs."""
    _no_out("nanmedian", out)
    return _quantiles("nanmedian", a, 0.5, axis, "linear", keepdims, True)


# -- cumulative reductions -------------------------------------------------------------------------
def _accumulation_dtype(dtype: np.dtype) -> np.dtype | None:
    """Small integers and bools accumulate in the default integer (as JAX and NumPy)."""
    if dtype == np.bool_ or (dtypes.kind(dtype) == "i" and dtype.itemsize < dtypes.default_int_dtype().itemsize):
        return dtypes.default_int_dtype()
    if dtypes.kind(dtype) == "u" and dtype.itemsize < dtypes.default_uint_dtype().itemsize:
        return dtypes.default_uint_dtype()
    return None


def _cumulative(fname: str, lax_fn, a: Any, axis: Any, dtype: Any, nan_identity: Any = None,
                include_initial: bool = False, identity: Any = 0) -> Any:
    check_arraylike(fname, a)
    (a,) = promote_dtypes(fname, a)
    a = as_operand(a)
    aval = abstractify(a)
    if nan_identity is not None and dtypes.is_inexact(aval.dtype):
        a = lax.select(lax.ne(a, a), _full(nan_identity, aval.dtype, aval.shape), a)
    if axis is None:
        a = lax.reshape(a, (aval.size,))
        axis = 0
    else:
        axis = canonical_axis(fname, axis, aval.ndim)
    target = (dtypes.check_user_dtype(dtype, f"kiln.numpy.{fname}") if dtype is not None
              else _accumulation_dtype(aval.dtype))
    if target is not None:
        a = lax.convert_element_type(a, target)
    if target == np.bool_:
        raise TypeError(f"kiln.numpy.{fname}: cannot accumulate in dtype bool; pass an integer or float dtype=")
    out = convert(lax_fn(a, axis=axis), abstractify(a).dtype, False)  # strongly typed, as JAX's
    if include_initial:
        out_aval = abstractify(out)
        config = [(0, 0, 0)] * out_aval.ndim
        config[axis] = (1, 0, 0)
        out = lax.pad(out, lax.literal(identity, out_aval.dtype), config)
    return out


@eager_jit("axis", "dtype", "out")
def cumsum(a: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative sum along ``axis`` (of the flattened array when None). Bools and small integers
    accumulate in the default integer dtype."""
    _no_out("cumsum", out)
    return _cumulative("cumsum", lax.cumsum, a, axis, dtype)


@eager_jit("axis", "dtype", "out")
def cumprod(a: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative product along ``axis`` (of the flattened array when None)."""
    _no_out("cumprod", out)
    return _cumulative("cumprod", lax.cumprod, a, axis, dtype)


@eager_jit("axis", "dtype", "out")
def nancumsum(a: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative sum treating NaNs as 0."""
    _no_out("nancumsum", out)
    return _cumulative("nancumsum", lax.cumsum, a, axis, dtype, nan_identity=0)


@eager_jit("axis", "dtype", "out")
def nancumprod(a: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    """Cumulative product treating NaNs as 1."""
    _no_out("nancumprod", out)
    return _cumulative("nancumprod", lax.cumprod, a, axis, dtype, nan_identity=1)


def _array_api_axis(fname: str, x: Any, axis: Any) -> Any:
    check_arraylike(fname, x)
    ndim = abstractify(x).ndim
    if axis is None and ndim > 1:
        raise ValueError(f"kiln.numpy.{fname}: axis is required for arrays of more than one dimension "
                         f"(got {ndim} dimensions)")
    if ndim == 0:
        raise ValueError(f"kiln.numpy.{fname}: needs an array of at least one dimension, got a 0-d array")
    return axis


@eager_jit("axis", "dtype", "include_initial")
def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Any:
    """Array-API cumulative sum (``include_initial`` prepends the 0)."""
    axis = _array_api_axis("cumulative_sum", x, axis)
    return _cumulative("cumulative_sum", lax.cumsum, x, axis, dtype, include_initial=include_initial, identity=0)


@eager_jit("axis", "dtype", "include_initial")
def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    """Array-API cumulative product (``include_initial`` prepends the 1)."""
    axis = _array_api_axis("cumulative_prod", x, axis)
    return _cumulative("cumulative_prod", lax.cumprod, x, axis, dtype, include_initial=include_initial,
                       identity=1)


# -- covariance and correlation ----------------------------------------------------------------------
@eager_jit("rowvar", "bias", "ddof", "dtype")
def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: Any = None, aweights: Any = None, dtype: Any = None) -> Any:
    """The covariance matrix of the variables in the rows of ``m`` (columns when not ``rowvar``),
    with ``y``'s variables appended. Normalised by ``N - 1`` (``N`` with ``bias``, ``N - ddof`` with
    ``ddof``); ``fweights`` (integer repeat counts) and ``aweights`` (observation weights) as in NumPy,
    whose absolute values are used (NumPy rejects negative weights; as in JAX, they are not checked)."""
    from .creation import asarray, full
    from .products import dot
    from .reductions import average
    from .reductions import sum as _sum
    from .shape import atleast_2d, concatenate, squeeze
    from .ufuncs import abs as _abs
    from .ufuncs import conj
    check_arraylike("cov", m, *(v for v in (y, fweights, aweights) if v is not None))
    args = [m] if y is None else [m, y]
    common = dtypes.result_type(*args)
    common = common if dtypes.is_inexact(common) else dtypes.default_float_dtype()
    m = asarray(m).astype(common)
    if abstractify(m).ndim > 2:
        raise ValueError(f"kiln.numpy.cov: m must have at most 2 dimensions, got shape {abstractify(m).shape}")
    if dtype is not None and not dtypes.is_inexact(dtypes.canonicalize_dtype(dtype)):
        raise ValueError(f"kiln.numpy.cov: dtype must be a floating or complex dtype, got {np.dtype(dtype).name}")
    X = atleast_2d(m)
    if not rowvar and abstractify(m).ndim != 1:
        X = X.T
    if X.shape[0] == 0:
        return asarray(np.zeros((0, 0), common))
    if y is not None:
        y = asarray(y).astype(common)
        if abstractify(y).ndim > 2:
            raise ValueError(f"kiln.numpy.cov: y must have at most 2 dimensions, got shape {abstractify(y).shape}")
        Y = atleast_2d(y)
        if not rowvar and Y.shape[0] != 1:
            Y = Y.T
        X = concatenate([X, Y], axis=0)
    if X.shape[1] == 0:
        return full(() if X.shape[0] == 1 else (X.shape[0],) * 2, np.nan, dtype=common)
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    n = X.shape[1]
    if fweights is not None:
        fweights = asarray(fweights)
        if fweights.ndim != 1 or fweights.shape[0] != n:
            raise ValueError(f"kiln.numpy.cov: fweights must be 1-D with one weight per observation ({n}), got "
                             f"shape {fweights.shape}")
        if dtypes.kind(fweights.dtype) not in "iu":
            raise TypeError(f"kiln.numpy.cov: fweights must be integers, got {fweights.dtype.name}")
        w = _abs(fweights)
    if aweights is not None:
        aweights = asarray(aweights)
        if aweights.ndim != 1 or aweights.shape[0] != n:
            raise ValueError(f"kiln.numpy.cov: aweights must be 1-D with one weight per observation ({n}), got "
                             f"shape {aweights.shape}")
        aweights = _abs(aweights)
        w = aweights if w is None else w * aweights
    if dtype is not None:
        X = X.astype(dtype)
        w = w.astype(dtype) if w is not None else None
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = n - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * _sum(w * aweights) / w_sum
    X = X - avg[:, None]
    XT = (X if w is None else X * w).T
    return squeeze(dot(X, conj(XT)) / fact)


@eager_jit("rowvar", "dtype")
def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
    """The Pearson correlation coefficients of the variables (as :func:`cov`), clipped to [-1, 1]."""
    from .creation import diagonal
    from .ufuncs import clip, real, sqrt
    from .ufuncs import imag as _imag
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = diagonal(c)
    s = sqrt(real(d))
    c = c / s[:, None] / s[None, :]
    if dtypes.is_complex(c.dtype):
        from .. import lax
        return lax.complex(clip(real(c), -1, 1), clip(_imag(c), -1, 1))
    return clip(c, -1, 1)
