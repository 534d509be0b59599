"""Samplers: random values of the common distributions, drawn from PRNG keys.

Each sampler follows JAX's algorithm step by step (same bits, same operations), so that for the
same key, shape and dtype it returns JAX's values, whichever the key's PRNG implementation. A public
function checks its arguments (a typed or raw key, static shapes and dtypes) and calls a jitted
implementation on the key (``K.sampler_key``: threefry2x32 keys as their raw data, others as typed key arrays,
whose implementation is static there); the implementations nest under ``jit``, ``vmap``, ``grad`` and ``scan``
like any kiln code.
"""
from __future__ import annotations

import functools
import math
from functools import partial
from typing import Any, Sequence

import numpy as np

from .. import numpy as knp
from ..ad.custom import custom_jvp
from ..core import dtypes
from ..core.axes import canonical_axis
from ..core.errors import TypePromotionError
from ..core.tracing import Tracer, abstractify, concrete, materialize
from ..driver.array import Array
from ..driver.jit import jit
from ..lax import api as lax
from ..lax import sorting as lax_sorting
from ..lax import special as lax_special
from ..lax.sharding import takes_out_sharding
from ..numpy._util import check_array_argument
from . import keys as K
from .impls import threefry_prng_impl

__all__ = [
    "uniform", "normal", "truncated_normal", "bernoulli", "randint", "permutation", "choice", "categorical",
    "gumbel", "exponential", "laplace", "logistic", "rademacher", "multivariate_normal", "orthogonal", "gamma",
    "loggamma", "beta", "dirichlet", "poisson", "cauchy", "lognormal", "chisquare", "t", "pareto", "maxwell",
    "rayleigh", "weibull_min", "geometric", "triangular", "wald", "f", "double_sided_maxwell", "generalized_normal",
    "ball", "binomial", "multinomial",
]

_UINT = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}


# -- helpers ---------------------------------------------------------------------------------------

_REAL_SCALARS = frozenset({int, float, bool})


def _check_params(fname: str, **params: Any) -> None:
    """Each distribution parameter must be a numeric array or a scalar: not a string, a list, None or a key."""
    for name, x in params.items():
        if type(x) in _REAL_SCALARS:  # (the common case, checked first: eager samplers run this on every call)
            continue
        if type(x) is Array or isinstance(x, Tracer):
            if fname not in ("permutation", "choice") and abstractify(x).dtype.kind == "c":
                raise TypePromotionError(f"kiln.random.{fname}: {name} must be real, got dtype "
                                         f"{abstractify(x).dtype.name} (cannot safely cast it to a real dtype)")
            continue
        if isinstance(x, K.KeyArray):
            raise TypeError(f"kiln.random.{fname}: {name} is a PRNG key array; pass the key as the first argument "
                            f"and a numeric array or scalar as {name}")
        check_array_argument(f"kiln.random.{fname}", name, x, library="kiln.random")
        if isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind not in "biufc":
            raise TypeError(f"kiln.random.{fname}: {name} must be a numeric array, got a NumPy array of dtype "
                            f"{x.dtype}")
        if fname not in ("permutation", "choice") and dtypes.is_complex(dtypes.result_type(x)):
            raise TypePromotionError(f"kiln.random.{fname}: {name} must be real, got dtype "
                                     f"{dtypes.result_type(x).name} (cannot safely cast it to a real dtype)")


def _float_dtype(fname: str, dtype: Any, allow_complex: bool = False) -> np.dtype:
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
    if not (dtypes.is_float(dt) or (allow_complex and dtypes.is_complex(dt))):
        kinds = "a float or complex" if allow_complex else "a float"
        raise ValueError(f"kiln.random.{fname}: dtype must be {kinds} dtype, got {dt.name}")
    if dtypes.itemsize_bits(dt) not in _UINT and dtypes.is_float(dt):  # float4_e2m1fn, float6_*: as JAX
        raise TypeError(f"kiln.random.{fname}: random floats are drawn for 8-, 16-, 32- or 64-bit dtypes only, "
                        f"got {dt.name} ({dtypes.itemsize_bits(dt)} bits); draw float8_e4m3fn or float32 "
                        f"values and cast them with .astype('{dt.name}')")
    return dt


def _int_dtype(fname: str, dtype: Any) -> np.dtype:
    dt = dtypes.default_int_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
    if not dtypes.is_int(dt):
        raise TypeError(f"kiln.random.{fname}: dtype must be an integer dtype, got {dt.name}")
    return dt


def _shape_of(x: Any) -> tuple[int, ...]:
    if type(x) is float or type(x) is int:  # (the defaults: minval=0.0, maxval=1.0)
        return ()
    if isinstance(x, (Array, Tracer)):
        return tuple(x.shape)
    return tuple(np.shape(x))


def _check_shape(fname: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]) -> None:
    """Parameters must broadcast to exactly ``shape`` (as JAX)."""
    if not any(param_shapes):  # none, or all 0-d: they broadcast to any shape
        return
    try:
        out = tuple(np.broadcast_shapes(shape, *param_shapes))
    except ValueError:
        out = None
    if out != shape:
        raise ValueError(f"kiln.random.{fname}: parameter shapes {', '.join(str(s) for s in param_shapes)} must "
                         f"broadcast to the shape argument {shape}, but give "
                         f"{'no common shape' if out is None else out}")


def _broadcast_shapes(fname: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"kiln.random.{fname}: parameter shapes {', '.join(str(s) for s in shapes)} do not "
                         "broadcast together") from None


def _opt_shape(fname: str, shape: Any) -> tuple[int, ...] | None:
    return None if shape is None else K.canonical_shape(fname, shape)


def _sample_shape(fname: str, shape: Any, *params: Any) -> tuple[int, ...]:
    """The output shape: ``shape``, which the parameters must broadcast to, or when it is None the
    parameters' broadcast shape (as JAX)."""
    shape = _opt_shape(fname, shape)
    param_shapes = [_shape_of(p) for p in params]
    if shape is None:
        return _broadcast_shapes(fname, *param_shapes)
    _check_shape(fname, shape, *param_shapes)
    return shape


def _split(key: Any, num: int = 2) -> list[Any]:
    return K.unstack_keys(K.split_keys(key, num))


def _bits(data: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    return K.random_bits(data, bit_width, shape)


def _const(value: Any, dtype: np.dtype) -> Any:
    """A scalar constant of ``dtype`` (a tracer when tracing, else an Array)."""
    return materialize(lax.literal(value, dtype))


def _full(value: Any, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    c = lax.literal(value, dtype)
    return lax.broadcast_in_dim(c, shape, ()) if shape else materialize(c)


def _to_rank(x: Any, rank: int) -> Any:
    """Prepend size-1 dimensions up to ``rank`` (as ``lax.broadcast_to_rank``)."""
    s = abstractify(x).shape
    if len(s) >= rank:
        return x
    return lax.reshape(x, (1,) * (rank - len(s)) + tuple(s))


def _concrete_value(x: Any) -> np.ndarray | None:
    if isinstance(x, Tracer):
        v = concrete(x)
        return None if v is None else np.asarray(v)
    if isinstance(x, Array):
        return np.asarray(x)
    try:
        return np.asarray(x)
    except Exception:
        return None


# -- uniform and normal ------------------------------------------------------------------------------

@partial(jit, static_argnums=(3, 4))
def _uniform(data, minval, maxval, shape, dtype):
    minval = _to_rank(lax.convert_element_type(minval, dtype), len(shape))
    maxval = _to_rank(lax.convert_element_type(maxval, dtype), len(shape))
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    rng_bits = 8 if nmant < 8 else nbits
    uint_dtype = _UINT[nbits]
    bits = _bits(data, rng_bits, shape)
    if rng_bits != nbits:
        bits = lax.convert_element_type(bits, uint_dtype)
    # Random mantissa bits under the exponent of 1.0 give a float in [1, 2); minus 1 gives [0, 1).
    one_bits = int(np.array(1.0, dtype).view(uint_dtype))
    float_bits = lax.bitwise_or(lax.shift_right_logical(bits, rng_bits - nmant), one_bits)
    floats = lax.sub(lax_special.bitcast_convert_type(float_bits, dtype), 1.0)
    scaled = knp.add(knp.multiply(floats, knp.subtract(maxval, minval)), minval)
    return knp.maximum(minval, lax.reshape(scaled, shape))


@takes_out_sharding
def uniform(key: Any, shape: Sequence[int] = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0) -> Any:
    """Uniform random values in ``[minval, maxval)`` of ``shape`` and float ``dtype``."""
    data = K.sampler_key("uniform", key)
    _check_params("uniform", minval=minval, maxval=maxval)
    dtype = _float_dtype("uniform", dtype)
    shape = K.canonical_shape("uniform", shape)
    _check_shape("uniform", shape, _shape_of(minval), _shape_of(maxval))
    return _uniform(data, minval, maxval, shape, dtype)


def _normal_lo(dtype: np.dtype) -> float:
    """The float after -1 towards 0 (uniform draws in (-1, 1) keep erf_inv finite)."""
    return float(-(1 - dtypes.finfo(dtype).epsneg))


@partial(jit, static_argnums=(1, 2))
def _normal_real(data, shape, dtype):
    u = _uniform(data, np.array(_normal_lo(dtype), dtype), np.array(1.0, dtype), shape, dtype)
    return lax.mul(float(np.sqrt(2)), lax_special.erf_inv(u))


@partial(jit, static_argnums=(1, 2))
def _normal(data, shape, dtype):
    if dtypes.is_complex(dtype):
        real = dtypes.float32 if dtype == dtypes.complex64 else dtypes.float64
        k_re, k_im = _split(data)
        re = _normal_real(k_re, shape, real)
        im = _normal_real(k_im, shape, real)
        z = lax_special.complex(re, im)
        return knp.divide(z, np.array(np.sqrt(2), dtype))
    return _normal_real(data, shape, dtype)


@takes_out_sharding
def normal(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard normal random values of ``shape`` (float or complex ``dtype``)."""
    data = K.sampler_key("normal", key)
    dtype = _float_dtype("normal", dtype, allow_complex=True)
    shape = K.canonical_shape("normal", shape)
    return _normal(data, shape, dtype)


@partial(jit, static_argnums=(3, 4))
def _truncated_normal(data, lower, upper, shape, dtype):
    sqrt2 = np.array(np.sqrt(2), dtype)
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax_special.erf(knp.divide(lower, sqrt2))
    b = lax_special.erf(knp.divide(upper, sqrt2))
    u = _uniform(data, a, b, shape, dtype)
    out = knp.multiply(sqrt2, lax_special.erf_inv(u))
    lo = knp.nextafter(lax.stop_gradient(lower), np.array(np.inf, dtype))
    hi = knp.nextafter(lax.stop_gradient(upper), np.array(-np.inf, dtype))
    return knp.clip(out, lo, hi)


@takes_out_sharding
def truncated_normal(key: Any, lower: Any, upper: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Standard normal values truncated to the open interval ``(lower, upper)``."""
    data = K.sampler_key("truncated_normal", key)
    _check_params("truncated_normal", lower=lower, upper=upper)
    dtype = _float_dtype("truncated_normal", dtype)
    shape = _sample_shape("truncated_normal", shape, lower, upper)
    return _truncated_normal(data, lower, upper, shape, dtype)


# -- discrete ----------------------------------------------------------------------------------------

@partial(jit, static_argnums=(2, 3))
def _bernoulli(data, p, shape, mode):
    dtype = abstractify(p).dtype
    if mode == "high":
        u = _uniform(data, 0.0, 1.0, (2,) + shape, dtype)
        u1 = lax.reshape(lax.slice(u, (0,) * (len(shape) + 1), (1,) + shape), shape)
        u2 = lax.reshape(lax.slice(u, (1,) + (0,) * len(shape), (2,) + shape), shape)
        u2 = knp.multiply(u2, np.array(2.0 ** -dtypes.finfo(dtype).nmant, dtype))
        return knp.less(u2, knp.subtract(p, u1))
    return knp.less(_uniform(data, 0.0, 1.0, shape, dtype), p)


@takes_out_sharding
def bernoulli(key: Any, p: Any = 0.5, shape: Sequence[int] | None = None, mode: str = "low") -> Any:
    """Booleans that are True with probability ``p`` (shape ``shape``, default ``p``'s shape)."""
    data = K.sampler_key("bernoulli", key)
    _check_params("bernoulli", p=p)
    if mode not in ("high", "low"):
        raise ValueError(f"kiln.random.bernoulli: mode must be 'high' or 'low', got {mode!r}")
    shape = _opt_shape("bernoulli", shape)
    p_dtype = dtypes.result_type(p)
    if not dtypes.is_float(p_dtype):
        raise TypeError(f"kiln.random.bernoulli: the probability p must have a floating dtype, got {p_dtype.name}")
    # (a Python float as a NumPy scalar: the compiled call takes it, without a transfer of its own)
    p = np.asarray(p, dtype=p_dtype) if type(p) is float else knp.asarray(p, dtype=p_dtype)
    if shape is None:
        shape = tuple(p.shape)
    else:
        _check_shape("bernoulli", shape, tuple(p.shape))
    return _bernoulli(data, p, shape, mode)


@takes_out_sharding
def rademacher(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Random signs: -1 or +1 with equal probability (integer ``dtype`` by default)."""
    data = K.sampler_key("rademacher", key)
    dtype = dtypes.default_int_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
    shape = K.canonical_shape("rademacher", shape)
    return _rademacher(data, shape, dtype)


@partial(jit, static_argnums=(1, 2))
def _rademacher(data, shape, dtype):
    b = _bernoulli(data, np.array(0.5, dtypes.default_float_dtype()), shape, "low").astype(dtype)
    return knp.subtract(knp.multiply(2, b), 1).astype(dtype)


def _convert_and_clip_integer(val: Any, dtype: np.dtype) -> Any:
    """``val`` in integer ``dtype``, clipped to its range instead of wrapping."""
    src = abstractify(val).dtype
    lo = max(int(dtypes.iinfo(dtype).min), int(dtypes.iinfo(src).min))
    hi = min(int(dtypes.iinfo(dtype).max), int(dtypes.iinfo(src).max))
    return knp.clip(val, np.array(lo, src), np.array(hi, src)).astype(dtype)


@partial(jit, static_argnums=(3, 4))
def _randint(data, minval, maxval, shape, dtype):
    minval, maxval = knp.asarray(minval), knp.asarray(maxval)
    if not dtypes.is_int(minval.dtype):
        minval = minval.astype(dtypes.default_int_dtype())
    if not dtypes.is_int(maxval.dtype):
        maxval = maxval.astype(dtypes.default_int_dtype())
    # randint(key, shape, 0, 256, uint8): maxval above the dtype's range means a span one larger.
    top = _convert_and_clip_integer(_const(dtypes.iinfo(dtype).max, dtype), maxval.dtype)
    maxval_out_of_range = knp.greater(maxval, top)
    minval = _convert_and_clip_integer(minval, dtype)
    maxval = _convert_and_clip_integer(maxval, dtype)
    minval, maxval, maxval_out_of_range = (knp.broadcast_to(x, shape) for x in (minval, maxval, maxval_out_of_range))
    nbits = dtypes.iinfo(dtype).bits
    # Twice the bits of the dtype, combined modulo the span, keep the modulo bias small.
    k1, k2 = _split(data)
    higher_bits, lower_bits = _bits(k1, nbits, shape), _bits(k2, nbits, shape)
    unsigned = _UINT[nbits]
    span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)
    empty = lax.le(maxval, minval)
    span = lax.select(empty, _full(1, unsigned, shape), span)
    span = lax.select(lax.bitwise_and(maxval_out_of_range, lax.bitwise_not(empty)), lax.add(span, 1), span)
    multiplier = lax.rem(_full(2 ** (nbits // 2), unsigned, shape), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier), lax.rem(lower_bits, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


@takes_out_sharding
def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Uniform random integers in ``[minval, maxval)`` of ``shape`` (default dtype int32, int64 with x64).

    With concrete bounds, ``maxval <= minval`` anywhere is an error (JAX silently returns minval;
    under ``jit`` with traced bounds kiln does the same).
    """
    data = K.sampler_key("randint", key)
    _check_params("randint", minval=minval, maxval=maxval)
    dtype = _int_dtype("randint", dtype)
    shape = K.canonical_shape("randint", shape)
    _check_shape("randint", shape, _shape_of(minval), _shape_of(maxval))
    lo, hi = _concrete_value(minval), _concrete_value(maxval)
    if lo is not None and hi is not None and lo.dtype.kind in "iufb" and hi.dtype.kind in "iufb":
        bad = np.broadcast_to(np.asarray(hi) <= np.asarray(lo), np.broadcast_shapes(lo.shape, hi.shape))
        if bad.any():
            where = "" if bad.ndim == 0 else f" at index {tuple(int(i) for i in np.argwhere(bad)[0])}"
            lo_v = np.broadcast_to(lo, bad.shape)[tuple(np.argwhere(bad)[0])] if bad.ndim else lo
            hi_v = np.broadcast_to(hi, bad.shape)[tuple(np.argwhere(bad)[0])] if bad.ndim else hi
            raise ValueError(f"kiln.random.randint: maxval must be greater than minval, got minval={lo_v} and "
                             f"maxval={hi_v}{where} (the range [minval, maxval) is empty)")
    info = dtypes.iinfo(dtype)
    if info.bits < 32:
        # Sample 8- and 16-bit integers in 32 bits (less bias), then narrow.
        i32 = dtypes.int32
        minval = knp.clip(knp.asarray(minval).astype(i32), int(info.min), int(info.max))
        maxval = knp.clip(knp.asarray(maxval).astype(i32), int(info.min), int(info.max) + 1)
        return _randint(data, minval, maxval, shape, i32).astype(dtype)
    return _randint(data, minval, maxval, shape, dtype)


# -- permutations and choices ------------------------------------------------------------------------

@partial(jit, static_argnums=(2,))
def _shuffle(data, x, axis):
    # Sort by random 32-bit keys; repeated rounds make ties (and so any bias) negligible.
    size = int(np.prod(x.shape, dtype=np.int64))
    num_rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(num_rounds):
        data, subkey = _split(data)
        sort_keys = _bits(subkey, 32, tuple(x.shape))
        _, x = lax_sorting.sort_key_val(sort_keys, x, axis)
    return x


def _static_int(fname: str, x: Any, what: str) -> int:
    v = _concrete_value(x)
    if v is None:
        raise TypeError(f"kiln.random.{fname}: {what} must be a concrete integer, got a traced value (mark it "
                        "static with static_argnums)")
    if v.dtype.kind not in "iub" or v.ndim != 0:
        also = " or an array of at least one dimension" if fname in ("permutation", "choice") else ""
        raise TypeError(f"kiln.random.{fname}: {what} must be an integer{also}, got {v.dtype.name} {v!r}")
    return int(v)


@takes_out_sharding
def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``arange(x)`` (an int) or of ``x`` along ``axis``.

    With ``independent=True`` every slice along ``axis`` is shuffled on its own.
    """
    data = K.sampler_key("permutation", key)
    _check_params("permutation", x=x)
    if isinstance(x, (list, tuple)):
        raise TypeError(f"kiln.random.permutation: x must be an int or an array, got {type(x).__name__}")
    ndim = len(_shape_of(x))
    axis = canonical_axis("kiln.random.permutation", axis, ndim or 1)
    if not ndim:
        n = _static_int("permutation", x, "x")
        if n < 0:
            raise ValueError(f"kiln.random.permutation: x must be non-negative, got {n}")
        return _shuffle(data, knp.arange(n), axis)
    x = knp.asarray(x)
    if independent or ndim == 1:
        return _shuffle(data, x, axis)
    ind = _shuffle(data, knp.arange(x.shape[axis]), 0)
    return knp.take(x, ind, axis=axis)


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None, axis: int = 0,
           mode: str | None = None) -> Any:
    """Random samples from the entries of ``a`` along ``axis`` (or from ``arange(a)`` for an int).

    ``replace=False`` draws without replacement; ``p`` gives the probability of each entry.
    """
    data = K.sampler_key("choice", key)
    _check_params("choice", a=a)
    key = K.as_typed(data)  # typed for the samplers it calls: a raw key is reported once, here
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"kiln.random.choice: shape must be a sequence (tuple) of ints, got "
                        f"{type(shape).__name__} {shape!r}")
    shape = K.canonical_shape("choice", shape)
    arr = knp.asarray(a)
    if arr.ndim == 0:
        n_inputs = _static_int("choice", a, "a")
    else:
        axis = canonical_axis("kiln.random.choice", axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return knp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError(f"kiln.random.choice: a must be greater than 0 unless no samples are taken, got {n_inputs}")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"kiln.random.choice: cannot take a larger sample (size {n_draws}) than the population "
                         f"(size {n_inputs}) when replace=False")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else knp.take(arr, ind, axis=axis)
        else:
            perm = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)
            nd = perm.ndim
            result = lax.slice(perm, (0,) * nd, tuple(n_draws if i == axis else d for i, d in enumerate(perm.shape)))
    else:
        p_arr = knp.asarray(p)
        if not dtypes.is_inexact(p_arr.dtype):
            p_arr = p_arr.astype(dtypes.default_float_dtype())
        if tuple(p_arr.shape) != (n_inputs,):
            raise ValueError(f"kiln.random.choice: p must be None or a 1-D vector with the same size as "
                             f"a.shape[axis]; p has shape {tuple(p_arr.shape)} and a.shape[axis] is {n_inputs}")
        if replace:
            ind = _choice_p_replace(data, p_arr, shape)
        else:
            g = knp.add(gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode), knp.log(p_arr))
            ind = lax_sorting.top_k(g, n_draws)[1].astype(dtypes.default_int_dtype())
        result = ind if arr.ndim == 0 else knp.take(arr, ind, axis=axis)
    out_shape = shape if arr.ndim == 0 else tuple(arr.shape[:axis]) + shape + tuple(arr.shape[axis + 1:])
    return knp.reshape(result, out_shape)


@partial(jit, static_argnums=(2,))
def _choice_p_replace(data, p_arr, shape):
    p_cuml = knp.cumsum(p_arr)
    total = p_cuml[-1]
    r = knp.multiply(total, knp.subtract(1, _uniform(data, 0.0, 1.0, shape, p_cuml.dtype)))
    return knp.searchsorted(p_cuml, r).astype(dtypes.default_int_dtype())


@takes_out_sharding
def categorical(key: Any, logits: Any, axis: int = -1, shape: Sequence[int] | None = None, replace: bool = True,
                mode: str | None = None) -> Any:
    """Random category indices along ``axis`` of unnormalised log-probabilities ``logits`` (Gumbel-max)."""
    data = K.sampler_key("categorical", key)
    _check_params("categorical", logits=logits)
    key = K.as_typed(data)  # typed for the samplers it calls: a raw key is reported once, here
    logits = knp.asarray(logits)
    if not dtypes.is_float(logits.dtype):
        raise TypeError(f"kiln.random.categorical: logits must be a floating-point array, got {logits.dtype.name}")
    if logits.ndim == 0:
        raise ValueError("kiln.random.categorical: logits must have at least one dimension (the categories)")
    axis = canonical_axis("kiln.random.categorical", axis, logits.ndim)
    batch_shape = tuple(s for i, s in enumerate(logits.shape) if i != axis)
    if shape is None:
        shape = batch_shape
    else:
        shape = K.canonical_shape("categorical", shape)
        _check_shape("categorical", shape, batch_shape)
    shape_prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis, logits.shape[axis])
        g = gumbel(key, (*shape_prefix, *logits_shape), logits.dtype, mode=mode)
        expanded = knp.expand_dims(logits, tuple(range(len(shape_prefix)))) if shape_prefix else logits
        return knp.argmax(knp.add(g, expanded), axis=axis + len(shape_prefix))
    k = math.prod(shape_prefix)
    if k > logits.shape[axis]:
        raise ValueError(f"kiln.random.categorical: the number of samples without replacement ({k}) cannot exceed "
                         f"the number of categories ({logits.shape[axis]})")
    noisy = knp.add(logits, gumbel(key, tuple(logits.shape), logits.dtype, mode=mode))
    _, indices = lax_sorting.top_k(knp.moveaxis(noisy, axis, -1), k)
    nd = indices.ndim
    return lax.reshape(indices, shape, (nd - 1, *range(nd - 1)))


# -- continuous distributions from one uniform draw ------------------------------------------------------

@partial(jit, static_argnums=(1, 2, 3))
def _gumbel(data, shape, dtype, mode):
    info = dtypes.finfo(dtype)
    if mode == "highest" and dtype == dtypes.float32:
        return _gumbel_highest(data, shape)
    if mode in ("high", "highest"):
        u = _uniform(data, 0.0, 1.0, (2,) + shape, dtype)
        high = lax.reshape(lax.slice(u, (0,) * (len(shape) + 1), (1,) + shape), shape)
        low = lax.reshape(lax.slice(u, (1,) + (0,) * len(shape), (2,) + shape), shape)
        x = knp.where(knp.greater_equal(high, 0.5), high,
                      knp.add(knp.add(high, knp.multiply(np.array(2.0 ** -info.nmant, dtype), low)),
                              np.array(info.tiny, dtype)))
        return knp.negative(knp.log(knp.negative(knp.log1p(knp.negative(x)))))
    u = _uniform(data, np.array(info.tiny, dtype), 1.0, shape, dtype)
    return knp.negative(knp.log(knp.negative(knp.log(u))))


def _safe_int_to_float(hi, lo):
    """A float32 in (0, 1) from 64 random bits (hi, lo), with the full dynamic range near 0."""
    u32 = dtypes.uint32
    hiclz, loclz = lax_special.clz(hi), lax_special.clz(lo)
    hi_all_zero = knp.equal(hiclz, 32)
    mantissa = knp.bitwise_or(lax.shift_left(hi, hiclz),
                              knp.where(hi_all_zero, lax.shift_left(lo, loclz),
                                        lax.shift_right_logical(lo, lax.sub(_full(32, u32, hi.shape), hiclz))))
    mantissa = lax.shift_right_logical(mantissa, 32 - 23 - 1)
    mantissa = lax.bitwise_and(mantissa, (1 << 23) - 1)
    exp = knp.subtract(np.uint32(126), knp.where(hi_all_zero, knp.add(np.uint32(32), loclz), hiclz))
    exp = lax.shift_left(exp, 23)
    exp = lax.bitwise_and(exp, (1 << 30) - (1 << 22))
    return lax_special.bitcast_convert_type(lax.bitwise_or(exp, mantissa), dtypes.float32)


def _gumbel_highest(data, shape):
    u32 = dtypes.uint32
    bits = _bits(data, 32, (2,) + shape)
    neg = lax.bitwise_not(bits)
    b0 = lax.reshape(lax.slice(bits, (0,) * (len(shape) + 1), (1,) + shape), shape)
    b1 = lax.reshape(lax.slice(bits, (1,) + (0,) * len(shape), (2,) + shape), shape)
    n0 = lax.reshape(lax.slice(neg, (0,) * (len(shape) + 1), (1,) + shape), shape)
    n1 = lax.reshape(lax.slice(neg, (1,) + (0,) * len(shape), (2,) + shape), shape)
    # neg + [lo == 0xffffffff, 1]: the two's complement negation of the 64-bit value.
    n0 = lax.add(n0, lax.convert_element_type(knp.equal(n1, np.uint32(0xFFFFFFFF)), u32))
    n1 = lax.add(n1, 1)
    flip = knp.less(b0, np.uint32(1 << 31))
    x = _safe_int_to_float(knp.where(flip, b0, n0), knp.where(flip, b1, n1))
    return knp.where(flip, knp.negative(knp.log(knp.negative(knp.log1p(knp.negative(x))))),
                     knp.negative(knp.log(knp.negative(knp.log(x)))))


@takes_out_sharding
def gumbel(key: Any, shape: Sequence[int] = (), dtype: Any = None, mode: str | None = None) -> Any:
    """Standard Gumbel values. ``mode='high'`` (or ``'highest'``) resolves tiny probabilities better."""
    data = K.sampler_key("gumbel", key)
    dtype = _float_dtype("gumbel", dtype)
    shape = K.canonical_shape("gumbel", shape)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"kiln.random.gumbel: mode must be 'low', 'high' or 'highest', got {mode!r}")
    return _gumbel(data, shape, dtype, mode)


def _simple(name: str, body):
    impl = partial(jit, static_argnums=(1, 2))(body)

    def sampler(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
        data = K.sampler_key(name, key)
        dtype = _float_dtype(name, dtype)
        shape = K.canonical_shape(name, shape)
        return impl(data, shape, dtype)
    sampler.__name__ = sampler.__qualname__ = name
    return takes_out_sharding(sampler)


def _exponential_body(data, shape, dtype):
    u = _uniform(data, 0.0, 1.0, shape, dtype)
    return lax.neg(lax.log1p(lax.neg(u)))


def _laplace_body(data, shape, dtype):
    u = _uniform(data, np.array(-1.0 + dtypes.finfo(dtype).epsneg, dtype), 1.0, shape, dtype)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def _logistic_body(data, shape, dtype):
    x = _uniform(data, np.array(dtypes.finfo(dtype).tiny, dtype), 1.0, shape, dtype)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def _cauchy_body(data, shape, dtype):
    u = _uniform(data, np.array(dtypes.finfo(dtype).eps, dtype), 1.0, shape, dtype)
    return lax.tan(knp.multiply(np.array(np.pi, dtype), lax.sub(u, 0.5)))


def _maxwell_body(data, shape, dtype):
    norm = _normal(data, shape + (3,), dtype)
    return knp.linalg.norm(norm, axis=-1)


exponential = _simple("exponential", _exponential_body)
exponential.__doc__ = "Standard exponential values (rate 1): ``-log1p(-u)``."
laplace = _simple("laplace", _laplace_body)
laplace.__doc__ = "Standard Laplace values (location 0, scale 1)."
logistic = _simple("logistic", _logistic_body)
logistic.__doc__ = "Standard logistic values: ``log(u) - log1p(-u)``."
cauchy = _simple("cauchy", _cauchy_body)
cauchy.__doc__ = "Standard Cauchy values: ``tan(pi * (u - 1/2))``."
maxwell = _simple("maxwell", _maxwell_body)
maxwell.__doc__ = "Maxwell values: the norm of three standard normals."


def _param_sampler(name: str, fn):
    """``sample(key, param, shape, dtype)`` for a distribution whose one parameter broadcasts to ``shape``."""
    impl = partial(jit, static_argnums=(2, 3))(fn)

    def sample(key: Any, param: Any, shape: Sequence[int] | None, dtype: Any) -> Any:
        data = K.sampler_key(name, key)
        dtype = _float_dtype(name, dtype)
        return impl(data, param, _sample_shape(name, shape, param), dtype)
    return sample


def _lognormal_body(data, sigma, shape, dtype):
    sigma = lax.convert_element_type(sigma, dtype)
    return knp.exp(knp.multiply(_normal(data, shape, dtype), sigma))


def _pareto_body(data, b, shape, dtype):
    b = lax.convert_element_type(b, dtype)
    return knp.exp(knp.divide(_exponential_body(data, shape, dtype), b))


def _rayleigh_body(data, scale, shape, dtype):
    u = _uniform(data, 0.0, 1.0, shape, dtype)
    scale = knp.broadcast_to(knp.asarray(scale).astype(dtype), shape)
    return knp.multiply(scale, knp.sqrt(knp.multiply(knp.log(u), np.array(-2, dtype))))


def _wald_body(data, mean, shape, dtype):
    k1, k2 = _split(data)
    mean = knp.broadcast_to(knp.asarray(mean).astype(dtype), shape)
    v = _normal(k1, shape, dtype)
    z = _uniform(k2, 0.0, 1.0, shape, dtype)
    y = knp.multiply(v, v)
    y_sq = knp.multiply(y, y)
    mean_sq = knp.multiply(mean, mean)
    sqrt_term = knp.sqrt(knp.add(knp.multiply(knp.multiply(4, mean), y), knp.multiply(mean_sq, y_sq)))
    x = knp.subtract(knp.add(mean, knp.divide(knp.multiply(mean_sq, y), 2)),
                     knp.multiply(knp.divide(mean, 2), sqrt_term))
    return knp.where(knp.less_equal(z, knp.divide(mean, knp.add(mean, x))), x, knp.divide(mean_sq, x))


_lognormal = _param_sampler("lognormal", _lognormal_body)
_pareto = _param_sampler("pareto", _pareto_body)
_rayleigh = _param_sampler("rayleigh", _rayleigh_body)
_wald = _param_sampler("wald", _wald_body)


@takes_out_sharding
def lognormal(key: Any, sigma: Any = 1.0, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Log-normal values ``exp(sigma * normal)`` (shape ``shape``, default ``sigma``'s shape)."""
    _check_params("lognormal", sigma=sigma)
    return _lognormal(key, sigma, shape, dtype)


@takes_out_sharding
def pareto(key: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Pareto values with shape parameter ``b`` (support ``[1, inf)``)."""
    _check_params("pareto", b=b)
    return _pareto(key, b, shape, dtype)


@takes_out_sharding
def rayleigh(key: Any, scale: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Rayleigh values with ``scale``."""
    _check_params("rayleigh", scale=scale)
    return _rayleigh(key, scale, shape, dtype)


@takes_out_sharding
def wald(key: Any, mean: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Wald (inverse Gaussian) values with ``mean`` and scale 1."""
    _check_params("wald", mean=mean)
    return _wald(key, mean, shape, dtype)


@takes_out_sharding
def geometric(key: Any, p: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Geometric values: the number of trials up to the first success of probability ``p`` (integers)."""
    data = K.sampler_key("geometric", key)
    _check_params("geometric", p=p)
    dtype = _int_dtype("geometric", dtype)
    shape = _sample_shape("geometric", shape, p)
    p = knp.asarray(p)
    if not dtypes.is_inexact(p.dtype):
        p = p.astype(dtypes.default_float_dtype())
    return _geometric(data, p, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _geometric(data, p, shape, dtype):
    u = _uniform(data, 0.0, 1.0, shape, p.dtype)
    u = knp.where(knp.equal(u, 0), np.array(1, p.dtype), u)  # as JAX: u = 0 maps to 1 (no infinite log)
    log_one_minus_p = knp.broadcast_to(knp.log1p(knp.negative(p)), shape)
    g = knp.add(lax.floor(lax.div(lax.log(u), log_one_minus_p)), np.array(1, p.dtype))
    return g.astype(dtype)


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Weibull values with ``scale`` and ``concentration`` (by the inverse CDF)."""
    data = K.sampler_key("weibull_min", key)
    _check_params("weibull_min", scale=scale, concentration=concentration)
    dtype = _float_dtype("weibull_min", dtype)
    shape = K.canonical_shape("weibull_min", shape)
    return _weibull_min(data, scale, concentration, shape, dtype)


@partial(jit, static_argnums=(3, 4))
def _weibull_min(data, scale, concentration, shape, dtype):
    u = _uniform(data, 0.0, 1.0, shape, dtype)
    return knp.multiply(knp.power(knp.negative(knp.log1p(knp.negative(u))), knp.divide(1.0, concentration)), scale)


@takes_out_sharding
def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Sequence[int] | None = None,
               dtype: Any = None) -> Any:
    """Triangular values on ``[left, right]`` with the peak at ``mode``."""
    data = K.sampler_key("triangular", key)
    _check_params("triangular", left=left, mode=mode, right=right)
    dtype = _float_dtype("triangular", dtype)
    shape = _sample_shape("triangular", shape, left, mode, right)
    return _triangular(data, left, mode, right, shape, dtype)


@partial(jit, static_argnums=(4, 5))
def _triangular(data, left, mode, right, shape, dtype):
    left, right, mode = (knp.broadcast_to(lax.convert_element_type(x, dtype), shape) for x in (left, right, mode))
    fc = knp.divide(knp.subtract(mode, left), knp.subtract(right, left))
    u = _uniform(data, 0.0, 1.0, shape, dtype)
    out1 = knp.add(left, knp.sqrt(knp.multiply(knp.multiply(u, knp.subtract(right, left)), knp.subtract(mode, left))))
    out2 = knp.subtract(right, knp.sqrt(knp.multiply(knp.multiply(knp.subtract(1, u), knp.subtract(right, left)),
                                                     knp.subtract(right, mode))))
    return lax.select(knp.less(u, fc), out1, out2)


# -- multivariate ------------------------------------------------------------------------------------

@takes_out_sharding
def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Sequence[int] | None = None, dtype: Any = None,
                        method: str = "cholesky") -> Any:
    """Multivariate normal values with ``mean`` (``(..., n)``) and covariance ``cov`` (``(..., n, n)``).

    ``method`` factors ``cov``: ``'cholesky'`` (default), ``'eigh'`` or ``'svd'`` (for singular ``cov``).
    Result shape: ``shape + (n,)``, or the broadcast batch shapes of ``mean`` and ``cov`` plus ``(n,)``.
    """
    data = K.sampler_key("multivariate_normal", key)
    _check_params("multivariate_normal", mean=mean, cov=cov)
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError(f"kiln.random.multivariate_normal: method must be 'svd', 'eigh' or 'cholesky', got "
                         f"{method!r}")
    mean, cov = knp.asarray(mean), knp.asarray(cov)
    ft = dtypes.result_type(mean, cov)
    if not dtypes.is_inexact(ft):
        ft = dtypes.default_float_dtype()
    mean, cov = mean.astype(ft), cov.astype(ft)
    dtype = _float_dtype("multivariate_normal", ft if dtype is None else dtype)
    if mean.ndim < 1:
        raise ValueError(f"kiln.random.multivariate_normal: mean must have at least one dimension, got "
                         f"mean.ndim == {mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"kiln.random.multivariate_normal: cov must have at least two dimensions, got "
                         f"cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if tuple(cov.shape[-2:]) != (n, n):
        raise ValueError(f"kiln.random.multivariate_normal: cov must have shape (..., {n}, {n}) to match mean of "
                         f"shape {tuple(mean.shape)}, got {tuple(cov.shape)}")
    if shape is None:
        shape = _broadcast_shapes("multivariate_normal", tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    else:
        shape = K.canonical_shape("multivariate_normal", shape)
        _check_shape("multivariate_normal", shape, tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    return _multivariate_normal(data, mean, cov, shape, dtype, method)


@partial(jit, static_argnums=(3, 4, 5))
def _multivariate_normal(data, mean, cov, shape, dtype, method):
    if method == "svd":
        u, s, _ = knp.linalg.svd(cov)
        factor = knp.multiply(u, knp.sqrt(knp.expand_dims(s, -2)))
    elif method == "eigh":
        w, v = knp.linalg.eigh(cov)
        factor = knp.multiply(v, knp.sqrt(knp.expand_dims(w, -2)))
    else:
        factor = knp.linalg.cholesky(cov)
    samples = _normal(data, shape + tuple(mean.shape[-1:]), dtype)
    return knp.add(mean, knp.einsum("...ij,...j->...i", factor, samples))


@takes_out_sharding
def orthogonal(key: Any, n: int, shape: Sequence[int] = (), dtype: Any = None, m: int | None = None) -> Any:
    """Random orthogonal (``n x n``) or semi-orthogonal (``n x m``) matrices, uniform over the group
    (Haar measure; QR of a normal matrix with the signs fixed). Shape ``shape + (n, m)``."""
    data = K.sampler_key("orthogonal", key)
    dtype = _float_dtype("orthogonal", dtype, allow_complex=True)
    shape = K.canonical_shape("orthogonal", shape)
    n = _static_int("orthogonal", n, "n")
    m = n if m is None else _static_int("orthogonal", m, "m")
    if n < 0 or m < 0:
        raise ValueError(f"kiln.random.orthogonal: n and m must be non-negative, got n={n}, m={m}")
    return _orthogonal(data, n, m, shape, dtype)


@partial(jit, static_argnums=(1, 2, 3, 4))
def _orthogonal(data, n, m, shape, dtype):
    z = _normal(data, (*shape, max(n, m), min(n, m)), dtype)
    q, r = knp.linalg.qr(z)
    d = knp.diagonal(r, axis1=-2, axis2=-1)
    x = knp.multiply(q, knp.expand_dims(knp.sign(d), -2))
    return knp.swapaxes(x, -1, -2) if n < m else x


# -- gamma family (rejection sampling in while loops) ------------------------------------------------

def _gamma_one(data, alpha, log_space: bool):
    """One gamma(alpha) sample by Marsaglia and Tsang's method (alpha < 1 boosted through alpha + 1)."""
    from ..control.api import while_loop
    dtype = abstractify(alpha).dtype
    zero, one = _const(0, dtype), _const(1, dtype)
    minus_one, two = _const(-1, dtype), _const(2, dtype)
    one_over_two, one_over_three = _const(0.5, dtype), _const(1.0 / 3.0, dtype)
    squeeze_const = _const(0.0331, dtype)

    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, one_over_three)
    c = lax.div(one_over_three, lax.sqrt(d))

    def cond_fn(state):
        _, X, V, U = state
        return lax.bitwise_and(
            lax.ge(U, lax.sub(one, lax.mul(squeeze_const, lax.mul(X, X)))),
            lax.ge(lax.log(U), lax.add(lax.mul(X, one_over_two), lax.mul(d, lax.add(lax.sub(one, V), lax.log(V))))))

    def body_fn(state):
        def next_kxv(kxv):
            k = kxv[0]
            k, subkey = _split(k)
            x = _normal(subkey, (), dtype)
            v = lax.add(one, lax.mul(x, c))
            return k, x, v

        k = state[0]
        k, x_key, u_key = _split(k, 3)
        _, x, v = while_loop(lambda kxv: lax.le(kxv[2], zero), next_kxv, (x_key, zero, minus_one))
        X = lax.mul(x, x)
        V = lax.mul(lax.mul(v, v), v)
        U = _uniform(u_key, 0.0, 1.0, (), dtype)
        return k, X, V, U

    data, subkey = _split(data)
    _, _, V, _ = while_loop(cond_fn, body_fn, (data, zero, one, two))
    if log_space:
        log_samples = lax.neg(_exponential_body(subkey, (), dtype))
        log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, zero)), zero,
                               lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
    samples = lax.sub(one, _uniform(subkey, 0.0, 1.0, (), dtype))
    boost = lax.select(boost_mask, one, lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, V), boost)


def _gamma_samples(data, a, log_space):
    """Gamma samples of the shape of ``a``: one key per element, split from ``data`` (as JAX)."""
    from ..batching.api import vmap
    impl = K.impl_of(data)
    if impl is not threefry_prng_impl:
        return _gamma_mapped(impl, log_space)(K.raw_data(data), a)
    shape = tuple(abstractify(a).shape)
    size = math.prod(shape)
    keys = K.split_keys(data, size)
    samples = vmap(partial(_gamma_one, log_space=log_space))(keys, lax.reshape(a, (size,)))
    return lax.reshape(samples, shape)


@functools.cache
def _gamma_mapped(impl, log_space: bool):
    """Gamma samples for keys of another implementation than threefry2x32, as JAX draws them: the keys (raw
    data ``K + key_shape``, ``a`` of shape ``K + s``) are split ``prod(s)`` ways under ``vmap`` and the samples
    drawn one key after the other (``lax.map``), never under ``vmap`` (whose rule for XLA's generator would draw
    them all from one key). Under ``vmap`` the batch joins ``K`` (a custom_vmap rule, as JAX's gamma primitive
    batches), so the numbers do not depend on how the calls are batched."""
    from ..batching.api import vmap
    from ..batching.custom_vmap import custom_vmap
    from ..control.loops import map as lax_map
    ks = impl.key_shape

    def draw(key_data, a):
        a_shape = tuple(abstractify(a).shape)
        nbatch = abstractify(key_data).ndim - len(ks)
        count = math.prod(a_shape[nbatch:])
        keys = lax.reshape(key_data, (math.prod(abstractify(key_data).shape[:nbatch]),) + ks)
        keys = vmap(lambda k: impl.split(k, (count,)))(keys)
        keys = lax.reshape(keys, (math.prod(a_shape),) + ks)
        samples = lax_map(lambda ka: _gamma_one(K.KeyArray(ka[0], impl), ka[1], log_space),
                          (keys, lax.reshape(a, (math.prod(a_shape),))))
        return lax.reshape(samples, a_shape)

    mapped = custom_vmap(draw)

    @mapped.def_vmap
    def _rule(size, in_batched, key_data, a):
        key_batched, a_batched = in_batched
        if not key_batched:
            key_data = knp.broadcast_to(key_data, (size,) + tuple(abstractify(key_data).shape))
        if not a_batched:
            a = knp.broadcast_to(a, (size,) + tuple(abstractify(a).shape))
        return mapped(key_data, a), True

    return mapped


def _gamma_jvp(log_space, primals, tangents):
    raise NotImplementedError(
        "kiln.random.gamma: derivatives of the samples with respect to the shape parameter a are not implemented "
        "(JAX's implicit reparameterization gradient); wrap a in kiln.lax.stop_gradient to differentiate other "
        "inputs. This also applies to loggamma, beta, dirichlet, chisquare and t.")


_gamma_samples_cj = custom_jvp(_gamma_samples, nondiff_argnums=(2,))
_gamma_samples_cj.defjvp(_gamma_jvp)


@partial(jit, static_argnums=(2, 3, 4))
def _gamma(data, a, shape, dtype, log_space):
    a = lax.convert_element_type(a, dtype)
    if tuple(abstractify(a).shape) != shape:
        a = knp.broadcast_to(a, shape)
    if math.prod(shape) == 0:
        return knp.zeros(shape, dtype)
    return _gamma_samples_cj(data, a, log_space)


def _gamma_public(fname: str, key: Any, a: Any, shape: Any, dtype: Any, log_space: bool) -> Any:
    data = K.sampler_key(fname, key)
    dtype = _float_dtype(fname, dtype)
    return _gamma(data, a, _sample_shape(fname, shape, a), dtype, log_space)


@takes_out_sharding
def gamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Gamma values with shape parameter ``a`` (scale 1); Marsaglia–Tsang rejection sampling."""
    _check_params("gamma", a=a)
    return _gamma_public("gamma", key, a, shape, dtype, False)


@takes_out_sharding
def loggamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """The log of gamma values with shape ``a``, computed in log space (accurate for small ``a``)."""
    _check_params("loggamma", a=a)
    return _gamma_public("loggamma", key, a, shape, dtype, True)


@takes_out_sharding
def chisquare(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Chi-square values with ``df`` degrees of freedom (``2 * gamma(df / 2)``)."""
    data = K.sampler_key("chisquare", key)
    _check_params("chisquare", df=df)
    dtype = _float_dtype("chisquare", dtype)
    shape = _sample_shape("chisquare", shape, df)
    return _chisquare(data, df, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _chisquare(data, df, shape, dtype):
    df = lax.convert_element_type(df, dtype)
    two = np.array(2, dtype)
    half_df = knp.divide(df, two)
    log_g = _gamma(data, half_df, shape, dtype, True)
    return knp.multiply(knp.exp(log_g), two)


@takes_out_sharding
def t(key: Any, df: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Student's t values with ``df`` degrees of freedom."""
    data = K.sampler_key("t", key)
    _check_params("t", df=df)
    dtype = _float_dtype("t", dtype)
    shape = K.canonical_shape("t", shape)
    _check_shape("t", shape, _shape_of(df))
    return _t(data, df, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _t(data, df, shape, dtype):
    df = lax.convert_element_type(df, dtype)
    key_n, key_g = _split(data)
    n = _normal(key_n, shape, dtype)
    two = np.array(2, dtype)
    half_df = knp.divide(df, two)
    g = _gamma(key_g, half_df, shape, dtype, False)
    return knp.multiply(n, knp.sqrt(knp.divide(half_df, g)))


@takes_out_sharding
def beta(key: Any, a: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Beta values with parameters ``a`` and ``b`` (from two log-gamma draws)."""
    data = K.sampler_key("beta", key)
    _check_params("beta", a=a, b=b)
    dtype = _float_dtype("beta", dtype)
    shape = _sample_shape("beta", shape, a, b)
    return _beta(data, a, b, shape, dtype)


@partial(jit, static_argnums=(3, 4))
def _beta(data, a, b, shape, dtype):
    a = lax.convert_element_type(a, dtype)
    b = lax.convert_element_type(b, dtype)
    key_a, key_b = _split(data)
    a, b = knp.broadcast_to(a, shape), knp.broadcast_to(b, shape)
    log_gamma_a = _gamma(key_a, a, shape, dtype, True)
    log_gamma_b = _gamma(key_b, b, shape, dtype, True)
    log_max = knp.maximum(log_gamma_a, log_gamma_b)
    gamma_a_scaled = knp.exp(knp.subtract(log_gamma_a, log_max))
    gamma_b_scaled = knp.exp(knp.subtract(log_gamma_b, log_max))
    return knp.divide(gamma_a_scaled, knp.add(gamma_a_scaled, gamma_b_scaled))


@takes_out_sharding
def dirichlet(key: Any, alpha: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Dirichlet values with concentrations ``alpha`` (``(..., k)``); shape ``shape + (k,)``."""
    data = K.sampler_key("dirichlet", key)
    _check_params("dirichlet", alpha=alpha)
    dtype = _float_dtype("dirichlet", dtype)
    a_shape = _shape_of(alpha)
    if len(a_shape) < 1:
        raise ValueError(f"kiln.random.dirichlet: alpha must have at least one dimension, got alpha.ndim == "
                         f"{len(a_shape)}")
    shape = _opt_shape("dirichlet", shape)
    if shape is None:
        shape = a_shape[:-1]
    else:
        _check_shape("dirichlet", shape, a_shape[:-1])
    return _dirichlet(data, alpha, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _dirichlet(data, alpha, shape, dtype):
    from ..nn import softmax
    alpha = lax.convert_element_type(alpha, dtype)
    log_gamma_samples = _gamma(data, alpha, shape + tuple(abstractify(alpha).shape[-1:]), dtype, True)
    return softmax(log_gamma_samples, axis=-1)


# -- poisson -----------------------------------------------------------------------------------------

def _poisson_knuth(data, lam, shape, dtype, max_iters):
    from ..control.api import while_loop

    def body_fn(carry):
        i, k, rng, log_prod = carry
        rng, subkey = _split(rng)
        k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, 1), k)
        u = _uniform(subkey, 0.0, 1.0, shape, dtypes.float32)
        return lax.add(i, 1), k, rng, lax.add(log_prod, lax.log(u))

    def cond_fn(carry):
        i, log_prod = carry[0], carry[3]
        return lax.bitwise_and(knp.any(lax.gt(log_prod, lax.neg(lam))), lax.lt(i, max_iters))

    k_init = knp.zeros(shape, dtype)
    log_rate_init = knp.zeros(shape, dtypes.float32)
    i0 = _const(0, dtype)
    k = while_loop(cond_fn, body_fn, (i0, k_init, data, log_rate_init))[1]
    return lax.sub(k, 1).astype(dtype)


def _poisson_rejection(data, lam, shape, dtype, max_iters):
    from ..control.api import while_loop
    log_lam = lax.log(lam)
    b = knp.add(0.931, knp.multiply(2.53, lax.sqrt(lam)))
    a = knp.add(-0.059, knp.multiply(0.02483, b))
    inv_alpha = knp.add(1.1239, knp.divide(1.1328, knp.subtract(b, 3.4)))
    v_r = knp.subtract(0.9277, knp.divide(3.6224, knp.subtract(b, 2)))
    ft = abstractify(lam).dtype

    def body_fn(carry):
        i, k_out, accepted, rng = carry
        rng, subkey_0, subkey_1 = _split(rng, 3)
        u = knp.subtract(_uniform(subkey_0, 0.0, 1.0, shape, ft), 0.5)
        v = _uniform(subkey_1, 0.0, 1.0, shape, ft)
        u_shifted = knp.subtract(0.5, knp.abs(u))
        k = lax.floor(knp.add(knp.add(knp.multiply(knp.add(knp.divide(knp.multiply(2, a), u_shifted), b), u), lam),
                              0.43))
        s = knp.log(knp.divide(knp.multiply(v, inv_alpha),
                               knp.add(knp.divide(a, knp.multiply(u_shifted, u_shifted)), b)))
        tt = knp.subtract(knp.add(knp.negative(lam), knp.multiply(k, log_lam)), lax_special.lgamma(knp.add(k, 1)))
        accept1 = knp.logical_and(knp.greater_equal(u_shifted, 0.07), knp.less_equal(v, v_r))
        reject = knp.logical_or(knp.less(k, 0),
                                knp.logical_and(knp.less(u_shifted, 0.013), knp.greater(v, u_shifted)))
        accept2 = knp.less_equal(s, tt)
        accept = knp.logical_or(accept1, knp.logical_and(knp.logical_not(reject), accept2))
        k_out = lax.select(accept, k, k_out)
        accepted = knp.logical_or(accepted, accept)
        return lax.add(i, 1), k_out, accepted, rng

    def cond_fn(carry):
        i, _, accepted, _ = carry
        return lax.bitwise_and(knp.any(knp.logical_not(accepted)), lax.lt(i, max_iters))

    k_init = knp.full(shape, -1, ft)
    accepted = knp.zeros(shape, dtypes.bool_)
    i0 = _const(0, dtype)
    k = while_loop(cond_fn, body_fn, (i0, k_init, accepted, data))[1]
    return k.astype(dtype)


@partial(jit, static_argnums=(2, 3))
def _poisson(data, lam, shape, dtype):
    # Knuth's multiplication method for small rates, transformed rejection (Hörmann) for large ones.
    use_knuth = knp.logical_or(knp.isnan(lam), knp.less(lam, 10))
    lam_knuth = lax.select(use_knuth, lam, knp.zeros_like(lam))
    lam_rejection = lax.select(use_knuth, knp.full_like(lam, 1e5), lam)
    max_iters = np.array(dtypes.iinfo(dtype).max, dtype)
    result = lax.select(use_knuth, _poisson_knuth(data, lam_knuth, shape, dtype, max_iters),
                        _poisson_rejection(data, lam_rejection, shape, dtype, max_iters))
    return lax.select(knp.equal(lam, 0), knp.zeros_like(result), result)


@takes_out_sharding
def poisson(key: Any, lam: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Poisson values with rate ``lam`` (integer ``dtype``, default int32 / int64 with x64)."""
    data = K.sampler_key("poisson", key)
    _check_params("poisson", lam=lam)
    if K.impl_of(data) is not threefry_prng_impl:  # as JAX
        raise NotImplementedError(f"kiln.random.poisson: implemented for threefry2x32 keys only (as JAX's "
                                  f"poisson), not {K.impl_of(data).name} keys (dtype {data.dtype.name})")
    dtype = _int_dtype("poisson", dtype)
    shape = _sample_shape("poisson", shape, lam)
    lam = knp.broadcast_to(knp.asarray(lam), shape).astype(dtypes.float32)
    return _poisson(data, lam, shape, dtype)


# -- F, double-sided Maxwell, generalized normal, ball -------------------------------------------------

def _check_castable(fname: str, dtype: np.dtype, *args: Any) -> None:
    """As JAX: a parameter whose dtype would widen ``dtype`` cannot be cast to it silently."""
    for a in args:
        if dtypes.result_type(a, dtype) != dtype:
            from ..core.errors import TypePromotionError
            raise TypePromotionError(f"kiln.random.{fname}: cannot safely cast a parameter of dtype "
                                     f"{dtypes.result_type(a).name} to {dtype.name}; pass dtype= accordingly or "
                                     "cast the parameter")


@takes_out_sharding
def f(key: Any, dfnum: Any, dfden: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """F-distributed values with ``dfnum`` and ``dfden`` degrees of freedom (a ratio of scaled chi-squares)."""
    data = K.sampler_key("f", key)
    _check_params("f", dfnum=dfnum, dfden=dfden)
    dtype = _float_dtype("f", dtype)
    shape = _sample_shape("f", shape, dfnum, dfden)
    _check_castable("f", dtype, dfnum, dfden)
    return _f(data, dfnum, dfden, shape, dtype)


@partial(jit, static_argnums=(3, 4))
def _f(data, dfnum, dfden, shape, dtype):
    dfden = lax.convert_element_type(dfden, dtype)
    dfnum = lax.convert_element_type(dfnum, dtype)
    key_den, key_num = _split(data)
    chi2_num = _chisquare(key_num, dfnum, shape, dtype)
    chi2_den = _chisquare(key_den, dfden, shape, dtype)
    return knp.divide(knp.divide(chi2_num, dfnum), knp.divide(chi2_den, dfden))


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Double-sided Maxwell values with ``loc`` and ``scale``: a Maxwell value with a random sign. As JAX, the
    result has shape ``shape + broadcast(loc, scale).shape``, where an empty ``shape`` stands for the
    parameters' shape (so scalar parameters give ``shape``, parameters of shape ``(2,)`` and ``shape=()``
    give ``(2, 2)``)."""
    data = K.sampler_key("double_sided_maxwell", key)
    _check_params("double_sided_maxwell", loc=loc, scale=scale)
    dtype = _float_dtype("double_sided_maxwell", dtype)
    shape = K.canonical_shape("double_sided_maxwell", shape)
    params = _broadcast_shapes("double_sided_maxwell", _shape_of(loc), _shape_of(scale))
    return _double_sided_maxwell(data, loc, scale, (shape or params) + params, dtype)


@partial(jit, static_argnums=(3, 4))
def _double_sided_maxwell(data, loc, scale, shape, dtype):
    key_maxwell, key_sign = _split(data)
    rvs = _maxwell_body(key_maxwell, shape, dtype)
    sign = _rademacher(key_sign, shape, dtype)
    return knp.add(knp.multiply(knp.multiply(sign, rvs), scale), loc)


@takes_out_sharding
def generalized_normal(key: Any, p: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Generalized normal values with shape parameter ``p`` (density proportional to ``exp(-|x|**p)``):
    ``sign * gamma(1/p) ** (1/p)``. ``p = 2`` is a normal with variance 1/2, ``p = 1`` a Laplace."""
    data = K.sampler_key("generalized_normal", key)
    _check_params("generalized_normal", p=p)
    dtype = _float_dtype("generalized_normal", dtype)
    shape = K.canonical_shape("generalized_normal", shape)
    return _generalized_normal(data, p, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _generalized_normal(data, p, shape, dtype):
    key_g, key_r = _split(data)
    inv_p = knp.divide(1, p)
    g = _gamma(key_g, inv_p, shape, dtype, False)
    r = _rademacher(key_r, shape, dtype)
    return knp.multiply(r, knp.power(g, inv_p))


@takes_out_sharding
def ball(key: Any, d: int, p: float = 2, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Points uniformly distributed in the ``d``-dimensional unit ``p``-norm ball: shape ``shape + (d,)``."""
    data = K.sampler_key("ball", key)
    _check_params("ball", p=p)
    dtype = _float_dtype("ball", dtype)
    shape = K.canonical_shape("ball", shape)
    d = _static_int("ball", d, "d")
    if d < 0:
        raise ValueError(f"kiln.random.ball: the dimension d must be non-negative, got {d}")
    return _ball(data, p, d, shape, dtype)


@partial(jit, static_argnums=(2, 3, 4))
def _ball(data, p, d, shape, dtype):
    k1, k2 = _split(data)
    g = _generalized_normal(k1, p, shape + (d,), dtype)
    e = _exponential_body(k2, shape, dtype)
    radius = knp.power(knp.add(knp.sum(knp.power(knp.abs(g), p), axis=-1), e), knp.divide(1, p))
    return knp.divide(g, radius[..., None])


# -- binomial and multinomial ---------------------------------------------------------------------------

def binomial(key: Any, n: Any, p: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Binomial values: successes in ``n`` trials of probability ``p`` (a float ``dtype``, as JAX). Inversion
    for ``n * min(p, 1 - p) <= 10``, Hörmann's BTRS rejection above; NaN for a NaN or negative ``n`` or an
    invalid ``p``, inf for ``n = inf``."""
    data = K.sampler_key("binomial", key)
    _check_params("binomial", n=n, p=p)
    dtype = _float_dtype("binomial", dtype)
    shape = _sample_shape("binomial", shape, n, p)
    p = knp.asarray(p)
    if not dtypes.is_inexact(p.dtype):
        p = p.astype(dtypes.default_float_dtype())
    return _binomial(data, n, p, shape, dtype)


def _binomial_impl(data, count, prob, shape, dtype):
    count = lax.convert_element_type(count, abstractify(prob).dtype)
    count = knp.broadcast_to(count, shape)
    prob = knp.broadcast_to(prob, shape)
    p_lt_half = knp.less(prob, 0.5)
    q = lax.select(p_lt_half, prob, knp.subtract(1.0, prob))
    count_nan_or_neg = knp.logical_or(knp.isnan(count), knp.less(count, 0.0))
    count_inf = knp.isinf(count)
    q_is_nan = knp.isnan(q)
    q_lt_0 = knp.less(q, 0.0)
    q = lax.select(knp.logical_or(q_is_nan, q_lt_0), knp.full_like(q, 0.01), q)
    use_inversion = knp.logical_or(count_nan_or_neg, knp.less_equal(knp.multiply(count, q), 10.0))
    count = knp.floor(count)
    count_inv = lax.select(use_inversion, count, knp.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, knp.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, knp.full_like(q, 0.5), q)
    max_iters = np.array(dtypes.finfo(dtype).max, dtype)
    samples = lax.select(use_inversion, _binomial_inversion(data, count_inv, q, shape, dtype, max_iters),
                         _btrs(data, count_btrs, q_btrs, shape, dtype, max_iters))
    invalid = knp.logical_or(knp.logical_or(q_lt_0, q_is_nan), count_nan_or_neg)
    samples = lax.select(invalid, knp.full_like(samples, np.nan), samples)
    samples = lax.select(knp.logical_and(count_inf, knp.logical_not(invalid)), knp.full_like(samples, np.inf),
                         samples)
    keep = knp.logical_or(knp.logical_or(p_lt_half, count_nan_or_neg), knp.logical_or(q_is_nan, count_inf))
    return lax.select(keep, samples, knp.subtract(count.astype(dtype), samples))


_binomial = partial(jit, static_argnums=(3, 4))(_binomial_impl)


def _binomial_inversion(data, count, prob, shape, dtype, max_iters):
    """Count geometric waiting times until they pass ``count`` (for small means)."""
    from ..control.api import while_loop
    ft = abstractify(prob).dtype
    log1minusprob = knp.log1p(knp.negative(prob))

    def body_fn(carry):
        i, num_geom, geom_sum, rng = carry
        subkey, rng = _split(rng)
        num_geom_out = lax.select(knp.less_equal(geom_sum, count), knp.add(num_geom, 1), num_geom)
        u = _uniform(subkey, 0.0, 1.0, shape, ft)
        geom = knp.ceil(knp.divide(knp.log(u), log1minusprob))
        return knp.add(i, 1), num_geom_out, knp.add(geom_sum, geom), rng

    def cond_fn(carry):
        i, geom_sum = carry[0], carry[2]
        return knp.logical_and(knp.any(knp.less_equal(geom_sum, count)), knp.less(i, max_iters))

    zeros = knp.zeros(shape, ft)
    k = while_loop(cond_fn, body_fn, (_const(0, dtypes.int32), zeros, zeros, data))[1]
    return knp.subtract(k, 1).astype(dtype)


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)


def _stirling_approx_tail(k):
    """``log(k!) - (Stirling's approximation)``: tabulated for ``k <= 9``, its series above."""
    ft = abstractify(k).dtype
    table = knp.asarray(np.array(_STIRLING_TAIL, ft))
    use_table = knp.less_equal(k, 9)
    # As JAX (bit for bit): the series is evaluated at k clamped to [0, 9].
    kc = knp.clip(k, 0.0, 9.0).astype(ft)
    kp1sq = knp.multiply(knp.add(kc, 1), knp.add(kc, 1))
    approx = knp.divide(knp.subtract(1.0 / 12, knp.divide(knp.subtract(1.0 / 360, knp.divide(1.0 / 1260, kp1sq)),
                                                           kp1sq)), knp.add(kc, 1))
    return lax.select(use_table, table[knp.floor(kc).astype(dtypes.int32)], approx)


def _btrs(data, count, prob, shape, dtype, max_iters):
    """Hörmann's transformed rejection with squeeze (BTRS) for large means."""
    from ..control.api import while_loop
    ft = abstractify(prob).dtype
    stddev = knp.sqrt(knp.multiply(knp.multiply(count, prob), knp.subtract(1, prob)))
    b = knp.add(1.15, knp.multiply(2.53, stddev))
    a = knp.add(knp.add(-0.0873, knp.multiply(0.0248, b)), knp.multiply(0.01, prob))
    c = knp.add(knp.multiply(count, prob), 0.5)
    v_r = knp.subtract(0.92, knp.divide(4.2, b))
    r = knp.divide(prob, knp.subtract(1, prob))
    alpha = knp.multiply(knp.add(2.83, knp.divide(5.1, b)), stddev)
    m = knp.floor(knp.multiply(knp.add(count, 1), prob))

    def body_fn(carry):
        i, k_out, accepted, rng = carry
        rng, subkey_0, subkey_1 = _split(rng, 3)
        u = _uniform(subkey_0, 0.0, 1.0, shape, ft)
        v = _uniform(subkey_1, 0.0, 1.0, shape, ft)
        u = knp.subtract(u, 0.5)
        us = knp.subtract(0.5, knp.abs(u))
        accept1 = knp.logical_and(knp.greater_equal(us, 0.07), knp.less_equal(v, v_r))
        k = knp.floor(knp.add(knp.multiply(knp.add(knp.divide(knp.multiply(2, a), us), b), u), c))
        reject = knp.logical_or(knp.less(k, 0), knp.greater(k, count))
        v = knp.log(knp.divide(knp.multiply(v, alpha), knp.add(knp.divide(a, knp.multiply(us, us)), b)))
        ub = (knp.multiply(knp.add(m, 0.5), knp.log(knp.divide(knp.add(m, 1),
                                                               knp.multiply(r, knp.add(knp.subtract(count, m), 1)))))
              + knp.multiply(knp.add(count, 1), knp.log(knp.divide(knp.add(knp.subtract(count, m), 1),
                                                                   knp.add(knp.subtract(count, k), 1))))
              + knp.multiply(knp.add(k, 0.5), knp.log(knp.divide(knp.multiply(r, knp.add(knp.subtract(count, k), 1)),
                                                                 knp.add(k, 1))))
              + _stirling_approx_tail(m)
              + _stirling_approx_tail(knp.subtract(count, m))
              - _stirling_approx_tail(k)
              - _stirling_approx_tail(knp.subtract(count, k)))
        accept2 = knp.less_equal(v, ub)
        accept = knp.logical_or(accept1, knp.logical_and(knp.logical_not(reject), accept2))
        return knp.add(i, 1), lax.select(accept, k, k_out), knp.logical_or(accepted, accept), rng

    def cond_fn(carry):
        i, accepted = carry[0], carry[2]
        return knp.logical_and(knp.any(knp.logical_not(accepted)), knp.less(i, max_iters))

    k_init = knp.full(shape, -1, ft)
    k = while_loop(cond_fn, body_fn, (_const(0, dtypes.int32), k_init, knp.zeros(shape, dtypes.bool_), data))[1]
    return k.astype(dtype)


def multinomial(key: Any, n: Any, p: Any, *, shape: Sequence[int] | None = None, dtype: Any = None,
                unroll: int | bool = 1) -> Any:
    """Multinomial counts of ``n`` trials over the categories of ``p`` (last axis): shape ``shape`` (default
    ``p``'s), each category drawn as a binomial of the trials left (float ``dtype``, default ``p``'s)."""
    data = K.sampler_key("multinomial", key)
    _check_params("multinomial", n=n, p=p)
    n, p = knp.asarray(n), knp.asarray(p)
    common = dtypes.result_type(n, p)
    if not dtypes.is_inexact(common):
        common = dtypes.result_type(common, dtypes.default_float_dtype())
    n, p = n.astype(common), p.astype(common)
    shape = _opt_shape("multinomial", shape)
    if shape is None:
        shape = tuple(p.shape)
    if len(shape) < 1:
        raise ValueError("kiln.random.multinomial: p (or shape) needs at least one dimension: the categories")
    out_dtype = common if dtype is None else dtypes.check_user_dtype(dtype)
    try:
        n = knp.broadcast_to(n, shape[:-1])
        p = knp.broadcast_to(p, shape)
    except ValueError:
        raise ValueError(f"kiln.random.multinomial: n of shape {n.shape} and p of shape {p.shape} do not broadcast "
                         f"to the shape {shape} (n to {shape[:-1]})") from None
    return _multinomial(data, n, p, unroll, out_dtype)


@partial(jit, static_argnums=(3, 4))
def _multinomial(data, n, p, unroll, dtype):
    from ..control.api import scan
    from ..lax.windowed import reduce_window_sum
    ft = abstractify(p).dtype
    p = knp.moveaxis(p, -1, 0)
    cats = abstractify(p).shape[0]
    # The probability mass from each category on (a reversed cumulative sum, as a window sum like JAX's).
    window = (cats,) + (1,) * (p.ndim - 1)
    pads = [(0, cats - 1)] + [(0, 0)] * (p.ndim - 1)
    remaining = reduce_window_sum(p, window, (1,) * p.ndim, pads)
    ratios = knp.divide(p, knp.where(knp.equal(remaining, 0), np.array(1, ft), remaining))
    keys = K.split_keys(data, cats)

    def step(remainder, ratio_key):
        ratio, k = ratio_key
        prob = knp.clip(ratio, 0, 1)
        count = _binomial_impl(k, remainder, prob, tuple(abstractify(remainder).shape), ft)
        return knp.subtract(remainder, count), count

    _, counts = scan(step, n, (ratios, keys), unroll=unroll)
    return knp.moveaxis(counts, 0, -1).astype(dtype)
