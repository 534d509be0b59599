"""Elementwise functions of kiln.numpy (NumPy's ufuncs), with promotion and broadcasting."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes, lax
from ..tracing import abstractify
from ._util import check_arraylike, promote_and_broadcast, promote_dtypes


def _float_dtype_args(fname: str, *args: Any) -> list[Any]:
    """Promote, then make integer/bool inputs floating (as NumPy's exp(1) is a float)."""
    args = promote_dtypes(fname, *args)
    aval = abstractify(args[0])
    if not dtypes.is_inexact(aval.dtype):
        ftype = dtypes.default_float_dtype()
        from ._util import convert
        args = [convert(a, ftype, aval.weak_type) for a in args]
    return args


def _unary_float(fname: str, lax_fn):
    def fn(x, /):
        (x,) = _float_dtype_args(fname, x)
        return lax_fn(x)
    fn.__name__ = fname
    fn.__doc__ = f"Elementwise {fname} (as ``numpy.{fname}``); integers are computed as floats."
    return fn


exp = _unary_float("exp", lax.exp)
log = _unary_float("log", lax.log)
log1p = _unary_float("log1p", lax.log1p)
expm1 = _unary_float("expm1", lax.expm1)
sin = _unary_float("sin", lax.sin)
cos = _unary_float("cos", lax.cos)
tan = _unary_float("tan", lax.tan)
tanh = _unary_float("tanh", lax.tanh)
sqrt = _unary_float("sqrt", lax.sqrt)
cbrt = _unary_float("cbrt", lax.cbrt)


def _binary(fname: str, lax_fn, doc: str):
    def fn(x, y, /):
        x, y = promote_and_broadcast(fname, x, y)
        return lax_fn(x, y)
    fn.__name__ = fname
    fn.__doc__ = doc
    return fn


add = _binary("add", lax.add, "Elementwise ``x + y``.")
subtract = _binary("subtract", lax.sub, "Elementwise ``x - y``.")
multiply = _binary("multiply", lax.mul, "Elementwise ``x * y``.")
maximum = _binary("maximum", lax.max, "Elementwise maximum (NaN propagates).")
minimum = _binary("minimum", lax.min, "Elementwise minimum (NaN propagates).")
equal = _binary("equal", lax.eq, "Elementwise ``x == y``.")
not_equal = _binary("not_equal", lax.ne, "Elementwise ``x != y``.")
less = _binary("less", lax.lt, "Elementwise ``x < y``.")
less_equal = _binary("less_equal", lax.le, "Elementwise ``x <= y``.")
greater = _binary("greater", lax.gt, "Elementwise ``x > y``.")
greater_equal = _binary("greater_equal", lax.ge, "Elementwise ``x >= y``.")


def _bitwise(fname: str, lax_fn):
    def fn(x, y, /):
        x, y = promote_and_broadcast(fname, x, y)
        if dtypes.is_inexact(abstractify(x).dtype):
            raise TypeError(f"kiln.numpy.{fname}: not supported for floating-point inputs "
                            f"({abstractify(x).dtype.name}); use integer or boolean arrays")
        return lax_fn(x, y)
    fn.__name__ = fname
    fn.__doc__ = f"Elementwise {fname} of integer or boolean arrays."
    return fn


bitwise_and = _bitwise("bitwise_and", lax.bitwise_and)
bitwise_or = _bitwise("bitwise_or", lax.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", lax.bitwise_xor)
left_shift = _bitwise("left_shift", lax.shift_left)


def right_shift(x, y, /):
    """Elementwise ``x >> y`` (arithmetic for signed, logical for unsigned integers)."""
    x, y = promote_and_broadcast("right_shift", x, y)
    dtype = abstractify(x).dtype
    if dtype.kind not in "iu":
        raise TypeError(f"kiln.numpy.right_shift: needs integer inputs, got {dtype.name}")
    return (lax.shift_right_logical if dtype.kind == "u" else lax.shift_right_arithmetic)(x, y)


def true_divide(x, y, /):
    """Elementwise ``x / y``; integers divide as floats."""
    x, y = promote_and_broadcast("true_divide", x, y)
    aval = abstractify(x)
    if not dtypes.is_inexact(aval.dtype):
        from ._util import convert
        ftype = dtypes.default_float_dtype()
        x, y = convert(x, ftype, aval.weak_type), convert(y, ftype, abstractify(y).weak_type)
    return lax.div(x, y)


divide = true_divide


def floor_divide(x, y, /):
    """Elementwise ``x // y``, rounding toward minus infinity as Python does."""
    x, y = promote_and_broadcast("floor_divide", x, y)
    dtype = abstractify(x).dtype
    if dtype.kind == "u" or dtype == np.bool_:
        return lax.div(x, y) if dtype != np.bool_ else lax.bitwise_and(x, y)
    if dtype.kind in "iu":
        q = lax.div(x, y)  # truncates toward zero
        # Step down where the signs differ and the division was inexact.
        fix = lax.bitwise_and(lax.ne(lax.lt(x, 0), lax.lt(y, 0)), lax.ne(lax.rem(x, y), 0))
        return lax.select(fix, lax.sub(q, 1), q)
    return lax.floor(lax.div(x, y)) if dtype.kind != "c" else _complex_unsupported("floor_divide")


def _complex_unsupported(fname: str):
    raise TypeError(f"kiln.numpy.{fname}: not supported for complex inputs")


def remainder(x, y, /):
    """Elementwise remainder with the sign of the divisor (Python's ``%``)."""
    x, y = promote_and_broadcast("remainder", x, y)
    dtype = abstractify(x).dtype
    if dtype.kind == "c":
        _complex_unsupported("remainder")
    r = lax.rem(x, y)  # sign of the dividend
    if dtype.kind == "u" or dtype == np.bool_:
        return r
    fix = lax.bitwise_and(lax.ne(r, 0), lax.ne(lax.lt(r, 0), lax.lt(y, 0)))
    return lax.select(fix, lax.add(r, y), r)


mod = remainder


def fmod(x, y, /):
    """Elementwise remainder with the sign of the dividend (C's fmod)."""
    x, y = promote_and_broadcast("fmod", x, y)
    return lax.rem(x, y)


def divmod(x, y, /):  # noqa: A001
    """``(x // y, x % y)``."""
    return floor_divide(x, y), remainder(x, y)


def power(x, y, /):
    """Elementwise ``x ** y``. A Python int exponent is exact repeated multiplication (as JAX's
    ``integer_pow``); integer arrays to traced integer powers stay integers."""
    check_arraylike("power", x, y)
    if type(y) is int:
        return _integer_power(x, y)
    x, y = promote_and_broadcast("power", x, y)
    if abstractify(x).dtype.kind in "iub":
        return _int_pow_traced(x, y)
    return lax.pow(x, y)


def _integer_power(x, n: int):
    """``x ** n`` for a static int ``n``, by repeated squaring."""
    (x,) = promote_dtypes("power", x)
    if n < 0:
        if not dtypes.is_inexact(abstractify(x).dtype):
            raise ValueError("kiln.numpy.power: integers to negative integer powers are not allowed")
        return lax.div(full_like_(x, 1), _integer_power(x, -n))
    result, base = full_like_(x, 1), x
    while n:
        if n & 1:
            result = base if result is None else lax.mul(result, base)
        n >>= 1
        if n:
            base = lax.mul(base, base)
    return result


def full_like_(x, value):
    aval = abstractify(x)
    return lax.broadcast_in_dim(lax.literal(value, aval.dtype, aval.weak_type), aval.shape, ())


def _int_pow_traced(x, y):
    """Integer ``x ** y`` for traced integer exponents: square-and-multiply over the bits of y."""
    aval = abstractify(x)
    bits = 8 * aval.dtype.itemsize
    acc = full_like_(x, 1)
    base = x
    for _ in range(bits):
        acc = lax.select(lax.ne(lax.bitwise_and(y, 1), 0), lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        y = lax.shift_right_logical(y, 1)
    return acc


def negative(x, /):
    """Elementwise ``-x``."""
    (x,) = promote_dtypes("negative", x)
    if abstractify(x).dtype == np.bool_:
        raise TypeError("kiln.numpy.negative: not supported for boolean arrays; use kiln.numpy.logical_not")
    return lax.neg(x)


def positive(x, /):
    """Elementwise ``+x``."""
    (x,) = promote_dtypes("positive", x)
    return x


def abs(x, /):  # noqa: A001
    """Elementwise absolute value (complex: the modulus)."""
    (x,) = promote_dtypes("abs", x)
    dtype = abstractify(x).dtype
    if dtype == np.bool_ or dtype.kind == "u":
        return x
    return lax.abs(x)


absolute = abs


def sign(x, /):
    """Elementwise sign: -1, 0 or 1 (NaN for NaN)."""
    (x,) = promote_dtypes("sign", x)
    dtype = abstractify(x).dtype
    if dtype.kind == "u":
        return lax.convert_element_type(lax.ne(x, 0), dtype)
    return lax.sign(x)


def invert(x, /):
    """Elementwise bitwise NOT (logical NOT for booleans)."""
    (x,) = promote_dtypes("invert", x)
    if dtypes.is_inexact(abstractify(x).dtype):
        raise TypeError("kiln.numpy.invert: not supported for floating-point inputs")
    return lax.bitwise_not(x)


bitwise_not = invert


def logical_not(x, /):
    (x,) = promote_dtypes("logical_not", x)
    return lax.bitwise_not(_to_bool(x))


def _to_bool(x):
    aval = abstractify(x)
    return x if aval.dtype == np.bool_ else lax.ne(x, lax.literal(0, aval.dtype) if aval.ndim == 0
                                                    else lax.broadcast_in_dim(lax.literal(0, aval.dtype),
                                                                              aval.shape, ()))


def _logical(fname: str, lax_fn):
    def fn(x, y, /):
        x, y = promote_and_broadcast(fname, x, y)
        return lax_fn(_to_bool(x), _to_bool(y))
    fn.__name__ = fname
    return fn


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


def floor(x, /):
    (x,) = promote_dtypes("floor", x)
    return x if dtypes.is_int(abstractify(x).dtype) or abstractify(x).dtype == np.bool_ else lax.floor(x)


def ceil(x, /):
    (x,) = promote_dtypes("ceil", x)
    return x if dtypes.is_int(abstractify(x).dtype) or abstractify(x).dtype == np.bool_ else lax.ceil(x)


def round(x, decimals: int = 0):  # noqa: A001
    """Round half to even (as NumPy), optionally to ``decimals`` decimal places."""
    (x,) = promote_dtypes("round", x)
    aval = abstractify(x)
    if not dtypes.is_inexact(aval.dtype):
        return x
    if decimals == 0:
        return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    scale = lax.literal(10.0 ** decimals, aval.dtype)
    scale = lax.broadcast_in_dim(scale, aval.shape, ()) if aval.ndim else scale
    return lax.div(lax.round(lax.mul(x, scale), lax.RoundingMethod.TO_NEAREST_EVEN), scale)


around = round


def rsqrt_(x):
    (x,) = _float_dtype_args("rsqrt", x)
    return lax.rsqrt(x)


def where(condition, x=None, y=None, /):
    """``x`` where ``condition`` else ``y``, with broadcasting and promotion of ``x`` and ``y``."""
    if x is None or y is None:
        raise ValueError("kiln.numpy.where: the one-argument form (nonzero indices) has a data-dependent "
                         "shape; pass x and y, or use kiln.numpy.nonzero with size=")
    check_arraylike("where", condition, x, y)
    x, y = promote_dtypes("where", x, y)
    c = _to_bool(condition if not isinstance(condition, (bool, np.bool_)) else np.asarray(condition))
    from ._util import broadcast_shapes, broadcast_to_shape
    shape = broadcast_shapes("where", abstractify(c).shape, abstractify(x).shape, abstractify(y).shape)
    return lax.select(*(broadcast_to_shape(a, shape) for a in (c, x, y)))


def clip(x, min=None, max=None, /):  # noqa: A002
    """Limit values to ``[min, max]``."""
    if min is not None:
        x = maximum(x, min)
    if max is not None:
        x = minimum(x, max)
    return x


def isfinite(x, /):
    (x,) = promote_dtypes("isfinite", x)
    aval = abstractify(x)
    if not dtypes.is_inexact(aval.dtype):
        return lax.broadcast_in_dim(lax.literal(True, np.bool_), aval.shape, ())
    return lax.is_finite(x)


def real(x, /):
    (x,) = promote_dtypes("real", x)
    if abstractify(x).dtype.kind != "c":
        return x
    raise NotImplementedError("kiln.numpy.real of complex arrays comes with the NumPy issue")


def imag(x, /):
    (x,) = promote_dtypes("imag", x)
    aval = abstractify(x)
    if aval.dtype.kind != "c":
        return lax.broadcast_in_dim(lax.literal(0, aval.dtype, aval.weak_type), aval.shape, ())
    raise NotImplementedError("kiln.numpy.imag of complex arrays comes with the NumPy issue")


def conj(x, /):
    (x,) = promote_dtypes("conj", x)
    if abstractify(x).dtype.kind != "c":
        return x
    raise NotImplementedError("kiln.numpy.conj of complex arrays comes with the NumPy issue")


conjugate = conj
