"""Elementwise functions of kiln.numpy (NumPy's ufuncs), with promotion and broadcasting."""
from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from .. import lax
from ..ad.custom import custom_jvp
from ..ad.logaddexp import logaddexp_2 as _logaddexp_2
from ..ad.logaddexp import logaddexp_e
from ..core import dtypes
from ..core.ir import Literal
from ..core.tracing import abstractify, materialize
from ..driver.array import Array
from ..driver.eager_jit import eager_jit
from . import _util, key_arrays
from ._util import check_arraylike, convert, is_array
from .index_funcs import nonzero

__all__ = [
    "abs", "absolute", "acos", "acosh", "add", "allclose", "angle", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "around", "array_equal", "array_equiv", "asin", "asinh", "atan", "atan2", "atanh",
    "bitwise_and", "bitwise_count", "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "cbrt", "ceil", "clip", "conj", "conjugate", "copysign", "cos", "cosh",
    "deg2rad", "degrees", "divide", "divmod", "equal", "exp", "exp2", "expm1", "fabs", "fix", "float_power", "frexp",
    "floor", "floor_divide", "fmax", "fmin", "fmod", "gcd", "i0", "lcm", "greater", "greater_equal", "heaviside",
    "hypot", "imag", "invert", "isclose", "iscomplex", "iscomplexobj", "isfinite", "isinf", "isnan", "isneginf",
    "isposinf", "isreal", "isrealobj", "ldexp", "left_shift", "less", "less_equal", "log", "log10", "log1p", "log2",
    "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "mod",
    "modf", "multiply", "nan_to_num", "negative", "nextafter", "not_equal", "positive", "pow", "power", "rad2deg",
    "radians", "real", "reciprocal", "remainder", "right_shift", "rint", "round", "sign", "signbit", "sin", "sinc",
    "sinh", "spacing", "sqrt", "square", "subtract", "tan", "tanh", "true_divide", "trunc", "where",
]




promote_dtypes = _util.promote_dtypes
promote_and_broadcast = _util.promote_and_broadcast


def _as_array(x: Any) -> Any:
    """A result that is an input returned unchanged, as a kiln array (not a host value or a Literal)."""
    if isinstance(x, Literal):
        return materialize(x)
    if is_array(x):
        return x
    from .creation import asarray
    return asarray(x)

def _float_dtype_args(fname: str, *args: Any) -> list[Any]:
    """Promote, then make integer/bool inputs floating (as NumPy's exp(1) is a float)."""
    return _inexact(promote_dtypes(fname, *args))


def _inexact(args: list[Any]) -> list[Any]:
    """Arguments of one (promoted) dtype, converted to the default float if not inexact."""
    aval = abstractify(args[0])
    if not dtypes.is_inexact(aval.dtype):
        ftype = dtypes.default_float_dtype()
        args = [convert(a, ftype, aval.weak_type) for a in args]
    return args


def _unary_float(fname: str, lax_fn):
    def fn(x, /):
        (x,) = _float_dtype_args(fname, x)
        return lax_fn(x)
    fn.__name__ = fname
    fn.__doc__ = f"Elementwise {fname} (as ``numpy.{fname}``); integers are computed as floats."
    return eager_jit()(fn)


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


def _binary(fname: str, lax_fn, doc: str, bool_fn=None):
    def fn(x, y, /):
        x, y = promote_and_broadcast(fname, x, y)
        if bool_fn is not None and abstractify(x).dtype == np.bool_:
            return bool_fn(x, y)  # NumPy's boolean add/multiply are logical or/and
        return lax_fn(x, y)
    fn.__name__ = fname
    fn.__doc__ = doc
    return eager_jit()(fn)


def _bool_subtract(x, y):
    raise TypeError("kiln.numpy.subtract: boolean subtract (the - operator) is not supported, as in NumPy; "
                    "use kiln.numpy.logical_xor (the ^ operator) or convert to an integer dtype first")


add = _binary("add", lax.add, "Elementwise ``x + y``.", lax.bitwise_or)
subtract = _binary("subtract", lax.sub, "Elementwise ``x - y``.", _bool_subtract)
multiply = _binary("multiply", lax.mul, "Elementwise ``x * y``.", lax.bitwise_and)
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
    return eager_jit()(fn)


bitwise_and = _bitwise("bitwise_and", lax.bitwise_and)
bitwise_or = _bitwise("bitwise_or", lax.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", lax.bitwise_xor)
left_shift = _bitwise("left_shift", lax.shift_left)


@eager_jit()
def right_shift(x, y, /):
    """Elementwise ``x >> y`` (arithmetic for signed, logical for unsigned integers)."""
    x, y = promote_and_broadcast("right_shift", x, y)
    dtype = abstractify(x).dtype
    if dtypes.kind(dtype) not in "iu":
        raise TypeError(f"kiln.numpy.right_shift: needs integer inputs, got {dtype.name}")
    return (lax.shift_right_logical if dtypes.kind(dtype) == "u" else lax.shift_right_arithmetic)(x, y)


@eager_jit()
def true_divide(x, y, /):
    """Elementwise ``x / y``; integers divide as floats."""
    x, y = promote_and_broadcast("true_divide", x, y)
    aval = abstractify(x)
    if not dtypes.is_inexact(aval.dtype):
        ftype = dtypes.default_float_dtype()
        x, y = convert(x, ftype, aval.weak_type), convert(y, ftype, abstractify(y).weak_type)
    return lax.div(x, y)


divide = true_divide


@eager_jit()
def floor_divide(x, y, /):
    """Elementwise ``x // y``, rounding toward minus infinity as Python does."""
    x, y = promote_and_broadcast("floor_divide", x, y)
    dtype = abstractify(x).dtype
    if dtypes.kind(dtype) == "u" or dtype == np.bool_:
        return lax.div(x, y) if dtype != np.bool_ else lax.bitwise_and(x, y)
    if dtypes.kind(dtype) in "iu":
        q = lax.div(x, y)  # truncates toward zero (and is -1 for a zero divisor, XLA's)
        # Step down where the signs differ and the division was inexact (signs as JAX compares them: x // 0 is
        # then -2 where x is not 0, JAX's number).
        fix = lax.bitwise_and(lax.ne(lax.sign(x), lax.sign(y)), lax.ne(lax.rem(x, y), 0))
        return lax.select(fix, lax.sub(q, 1), q)
    if dtypes.kind(dtype) == "c":
        _complex_unsupported("floor_divide")
    return _float_floor_divide(x, y)


def _float_floor_divide(x, y):
    """``x // y`` for floats as NumPy and CPython compute it, from the exact remainder: ``(x - fmod(x, y)) / y``,
    one less where the remainder's sign is not the divisor's, rounded to the nearest integer. ``floor(x / y)``
    differs where ``x / y`` rounds up to an integer (``1.0 // 0.1`` is 9.0, ``floor(1.0 / 0.1)`` 10.0)."""
    mod = lax.rem(x, y)
    exact = lax.select(lax.eq(y, full_like_(y, 0)), x, lax.sub(x, mod))  # (x / 0: inf or nan, as x / y)
    quotient = lax.div(exact, y)
    step = lax.bitwise_and(lax.ne(mod, full_like_(mod, 0)), lax.ne(lax.sign(y), lax.sign(mod)))
    return lax.round(lax.select(step, lax.sub(quotient, full_like_(quotient, 1)), quotient))


def _complex_unsupported(fname: str):
    raise TypeError(f"kiln.numpy.{fname}: not supported for complex inputs")


@eager_jit()
def remainder(x, y, /):
    """Elementwise remainder with the sign of the divisor (Python's ``%``)."""
    x, y = promote_and_broadcast("remainder", x, y)
    dtype = abstractify(x).dtype
    if dtypes.kind(dtype) == "c":
        _complex_unsupported("remainder")
    if dtypes.kind(dtype) in "iu":  # x % 0 is 0, as NumPy and JAX (XLA's remainder would give x)
        y = lax.select(lax.eq(y, full_like_(y, 0)), full_like_(y, 1), y)
    r = lax.rem(x, y)  # sign of the dividend
    if dtypes.kind(dtype) == "u" or dtype == np.bool_:
        return r
    fix = lax.bitwise_and(lax.ne(r, 0), lax.ne(lax.lt(r, 0), lax.lt(y, 0)))
    return lax.select(fix, lax.add(r, y), r)


mod = remainder


@eager_jit()
def fmod(x, y, /):
    """Elementwise remainder with the sign of the dividend (C's fmod)."""
    x, y = promote_and_broadcast("fmod", x, y)
    return lax.rem(x, y)


@eager_jit()
def divmod(x, y, /):  # noqa: A001
    """``(x // y, x % y)``."""
    return floor_divide(x, y), remainder(x, y)


def power(x, y, /):
    """Elementwise ``x ** y``. A concrete integer scalar exponent (a Python or NumPy int, a 0-d integer array not
    being traced) is exact repeated multiplication (as JAX's ``integer_pow``); integer arrays to traced integer
    powers stay integers."""
    if type(y) is int:
        return _integer_power(x, y)
    n = _concrete_int(y)
    return _power(x, y) if n is None else _integer_power(x, n)


def _concrete_int(y) -> int | None:
    """``y`` as a Python int when it is a concrete integer scalar other than a Python int, else None. JAX's power
    takes these as it takes a Python int (``0.999 ** count`` with a concrete int32 count is exact
    multiplication there too)."""
    if isinstance(y, (np.integer, np.ndarray, Array)) and np.ndim(y) == 0 and dtypes.kind(y.dtype) in "iu":
        return int(y)
    return None


@eager_jit()
def _power(x, y):
    check_arraylike("power", x, y)
    x, y = promote_and_broadcast("power", x, y)
    if dtypes.kind(abstractify(x).dtype) in "iub":
        return _int_pow_traced(x, y)
    return lax.pow(x, y)


@eager_jit("n")  # eagerly, one program per exponent (it is a parameter of integer_pow)
def _integer_power(x, n: int):
    """``x ** n`` for a static int ``n``: ``lax.integer_pow`` after kiln.numpy's promotion. The powers 0 and
    1 need no multiplication, so they take every dtype (bool too)."""
    check_arraylike("power", x)
    (x,) = promote_dtypes("power", x)
    if n < 0 and not dtypes.is_inexact(abstractify(x).dtype):
        raise ValueError("kiln.numpy.power: integers to negative integer powers are not allowed")
    if n == 0:
        return full_like_(x, 1)
    return x if n == 1 else lax.integer_pow(x, n)


full_like_ = lax.full_like


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


@eager_jit()
def negative(x, /):
    """Elementwise ``-x``."""
    (x,) = promote_dtypes("negative", x)
    if abstractify(x).dtype == np.bool_:
        raise TypeError("kiln.numpy.negative: not supported for boolean arrays; use kiln.numpy.logical_not")
    return lax.neg(x)


@eager_jit()
def positive(x, /):
    """Elementwise ``+x``."""
    (x,) = promote_dtypes("positive", x)
    return _as_array(x)


@eager_jit()
def abs(x, /):  # noqa: A001
    """Elementwise absolute value (complex: the modulus)."""
    (x,) = promote_dtypes("abs", x)
    dtype = abstractify(x).dtype
    if dtype == np.bool_ or dtypes.kind(dtype) == "u":
        return _as_array(x)
    return lax.abs(x)


absolute = abs


@eager_jit()
def sign(x, /):
    """Elementwise sign: -1, 0 or 1 (NaN for NaN)."""
    (x,) = promote_dtypes("sign", x)
    dtype = abstractify(x).dtype
    if dtypes.kind(dtype) == "u":
        return lax.convert_element_type(lax.ne(x, 0), dtype)
    return lax.sign(x)


@eager_jit()
def invert(x, /):
    """Elementwise bitwise NOT (logical NOT for booleans)."""
    (x,) = promote_dtypes("invert", x)
    if dtypes.is_inexact(abstractify(x).dtype):
        raise TypeError("kiln.numpy.invert: not supported for floating-point inputs")
    return lax.bitwise_not(x)


bitwise_not = invert


@eager_jit()
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
    return eager_jit()(fn)


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


@eager_jit()
def floor(x, /):
    (x,) = promote_dtypes("floor", x)
    return _as_array(x) if dtypes.is_int(abstractify(x).dtype) or abstractify(x).dtype == np.bool_ else lax.floor(x)


@eager_jit()
def ceil(x, /):
    (x,) = promote_dtypes("ceil", x)
    return _as_array(x) if dtypes.is_int(abstractify(x).dtype) or abstractify(x).dtype == np.bool_ else lax.ceil(x)


@eager_jit("decimals")
def round(x, decimals: int = 0):  # noqa: A001
    """Round half to even (as NumPy), optionally to ``decimals`` decimal places."""
    decimals = _util.static_int("round", "decimals", decimals)
    (x,) = promote_dtypes("round", x)
    aval = abstractify(x)
    if not dtypes.is_inexact(aval.dtype):
        return _as_array(x)
    if aval.dtype.kind == "c":  # the real and imaginary parts rounded apart, as NumPy's
        return lax.complex(round(lax.real(x), decimals), round(lax.imag(x), decimals))
    if decimals == 0:
        return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    scale = lax.literal(10.0 ** decimals, aval.dtype)
    scale = lax.broadcast_in_dim(scale, aval.shape, ()) if aval.ndim else scale
    return lax.div(lax.round(lax.mul(x, scale), lax.RoundingMethod.TO_NEAREST_EVEN), scale)


around = round


def rsqrt_(x):
    (x,) = _float_dtype_args("rsqrt", x)
    return lax.rsqrt(x)


def _condition_alone(args: tuple, kwargs: dict) -> bool:
    return len(args) < 3  # where(condition): nonzero, whose shape depends on the values (or a missing y's error)


@eager_jit(op_by_op=_condition_alone)
def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``x`` where ``condition`` else ``y``, with broadcasting and promotion of ``x`` and ``y``; with ``condition``
    alone, its nonzero indices (:func:`~kiln.numpy.nonzero`, which ``size`` and ``fill_value`` go to; ``size`` is
    needed under ``jit``), as in JAX and NumPy."""
    if x is None and y is None:
        check_arraylike("where", condition)
        return nonzero(condition, size=size, fill_value=fill_value)
    if size is not None or fill_value is not None:
        raise ValueError("kiln.numpy.where: size and fill_value apply to the one-argument form (the indices of "
                         "condition's nonzero elements) only; leave them out when passing x and y")
    if x is None or y is None:
        raise ValueError("kiln.numpy.where: pass both x and y (the values where condition is true and false), or "
                         f"neither (for condition's nonzero indices); got {'y' if x is None else 'x'} alone")
    if key_arrays.any_key(x, y):
        return key_arrays.rule("where")(condition, x, y)
    check_arraylike("where", condition, x, y)
    x, y = promote_dtypes("where", x, y)
    c = _to_bool(condition if not isinstance(condition, (bool, np.bool_)) else np.asarray(condition))
    from ._util import broadcast_shapes, broadcast_to_shape
    shape = broadcast_shapes("where", abstractify(c).shape, abstractify(x).shape, abstractify(y).shape)
    return lax.select(*(broadcast_to_shape(a, shape) for a in (c, x, y)))


# ---------------------------------------------------------------------------------------------
# Clipping, classification, complex parts
# ---------------------------------------------------------------------------------------------

_UNSET = object()


@eager_jit()
def clip(arr=None, /, min=None, max=None, *, a=_UNSET, a_min=_UNSET, a_max=_UNSET):  # noqa: A002
    """Limit values to ``[min, max]`` (either may be None). ``a``/``a_min``/``a_max`` are the older
    NumPy names, accepted as keywords. Where ``min > max`` the result is ``max``, as NumPy's."""
    if a is not _UNSET:
        if arr is not None:
            raise TypeError("kiln.numpy.clip: pass the array once, positionally or as a=, not both")
        arr = a
    if arr is None:
        raise TypeError("kiln.numpy.clip: missing the array argument")
    for old, value, new, new_value in (("a_min", a_min, "min", min), ("a_max", a_max, "max", max)):
        if value is not _UNSET and new_value is not None:
            raise TypeError(f"kiln.numpy.clip: pass {new}= or {old}=, not both")
    min = min if a_min is _UNSET else a_min  # noqa: A001
    max = max if a_max is _UNSET else a_max  # noqa: A001
    check_arraylike("clip", arr, *(v for v in (min, max) if v is not None))
    if _kind(arr) == "c" or any(v is not None and _kind(v) == "c" for v in (min, max)):
        raise TypeError("kiln.numpy.clip: complex values have no ordering; clip the real and imaginary "
                        "parts separately")
    if min is not None:
        arr = maximum(arr, min)
    if max is not None:
        arr = minimum(arr, max)
    return _as_array(arr)


def _kind(x) -> str:
    return dtypes.kind(abstractify(x).dtype)


def _zeros_bool(x):
    return lax.broadcast_in_dim(lax.literal(False, np.bool_), abstractify(x).shape, ())


def _ones_bool(x):
    return lax.broadcast_in_dim(lax.literal(True, np.bool_), abstractify(x).shape, ())


@eager_jit()
def isfinite(x, /):
    """Elementwise: neither infinite nor NaN (complex: both parts finite)."""
    (x,) = promote_dtypes("isfinite", x)
    kind = _kind(x)
    if kind == "c":
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    if not dtypes.is_inexact(abstractify(x).dtype):
        return _ones_bool(x)
    return lax.is_finite(x)


@eager_jit()
def isnan(x, /):
    """Elementwise: is NaN (complex: either part is NaN)."""
    (x,) = promote_dtypes("isnan", x)
    if not dtypes.is_inexact(abstractify(x).dtype):
        return lax.ne(x, x)  # all False, weakly typed like x (as JAX's)
    return _isnan(x)


def _isnan(x):  # x: one already promoted operand (Literals included)
    if not dtypes.is_inexact(abstractify(x).dtype):
        return _zeros_bool(x)
    return lax.ne(x, x)


@eager_jit()
def isinf(x, /):
    """Elementwise: is positive or negative infinity (complex: either part is)."""
    (x,) = promote_dtypes("isinf", x)
    return _isinf(x)


def _isinf(x):
    aval = abstractify(x)
    if dtypes.kind(aval.dtype) == "c":
        return lax.bitwise_or(_isinf(lax.real(x)), _isinf(lax.imag(x)))
    if not dtypes.is_inexact(aval.dtype):
        return _zeros_bool(x)
    return _strong_bool(lax.eq(lax.abs(x), full_like_(x, np.inf)))


def _strong_bool(b):
    """``b`` (bool) strongly typed: a test against a dtype's constant (inf) gives a strong bool in JAX."""
    return lax.convert_element_type(b, np.bool_)


def _strong(x):
    """``x`` strongly typed (same dtype)."""
    return lax.convert_element_type(x, abstractify(x).dtype)


def _isinf_signed(fname: str, value: float):
    def fn(x, /):
        (x,) = promote_dtypes(fname, x)
        aval = abstractify(x)
        if dtypes.kind(aval.dtype) == "c":
            raise TypeError(f"kiln.numpy.{fname}: not supported for complex inputs ({aval.dtype.name})")
        if not dtypes.is_inexact(aval.dtype):
            return _zeros_bool(x)
        return _strong_bool(lax.eq(x, full_like_(x, value)))
    fn.__name__ = fname
    fn.__doc__ = f"Elementwise: is {'positive' if value > 0 else 'negative'} infinity (real inputs)."
    return eager_jit()(fn)


isposinf = _isinf_signed("isposinf", np.inf)
isneginf = _isinf_signed("isneginf", -np.inf)


@eager_jit()
def real(x, /):
    """The real part (a real array is returned as it is)."""
    (x,) = promote_dtypes("real", x)
    return lax.real(x) if _kind(x) == "c" else _as_array(x)


@eager_jit()
def imag(x, /):
    """The imaginary part (zeros for a real array)."""
    (x,) = promote_dtypes("imag", x)
    if _kind(x) == "c":
        return lax.imag(x)
    return full_like_(x, 0)


@eager_jit()
def conj(x, /):
    """Complex conjugate (a real array is returned as it is, as in NumPy)."""
    (x,) = promote_dtypes("conj", x)
    return lax.conj(x) if _kind(x) == "c" else _as_array(x)


conjugate = conj


@eager_jit("deg")
def angle(z, deg: bool = False):
    """The counterclockwise angle from the positive real axis, in radians (or degrees)."""
    (z,) = _float_dtype_args("angle", z)
    if _kind(z) == "c":
        re, im = lax.real(z), lax.imag(z)
    else:
        re, im = z, full_like_(z, 0)
    out = lax.atan2(im, re)
    return lax.mul(out, full_like_(out, 180 / np.pi)) if deg else out


@eager_jit()
def isreal(x, /):
    """Elementwise: the imaginary part is zero."""
    (x,) = promote_dtypes("isreal", x)
    if _kind(x) != "c":
        return _ones_bool(x)
    im = lax.imag(x)
    return lax.eq(im, full_like_(im, 0))


@eager_jit()
def iscomplex(x, /):
    """Elementwise: the imaginary part is nonzero."""
    return logical_not(isreal(x))


def iscomplexobj(x, /) -> bool:
    """Whether ``x`` has a complex dtype (static)."""
    return dtypes.kind(abstractify(x).dtype) == "c"


def isrealobj(x, /) -> bool:
    """Whether ``x`` has a non-complex dtype (static)."""
    return not iscomplexobj(x)


# ---------------------------------------------------------------------------------------------
# Trigonometric, hyperbolic, exponential and logarithmic functions
# ---------------------------------------------------------------------------------------------

arcsin = asin = _unary_float("arcsin", lax.asin)
arccos = acos = _unary_float("arccos", lax.acos)
arctan = atan = _unary_float("arctan", lax.atan)
sinh = _unary_float("sinh", lax.sinh)
cosh = _unary_float("cosh", lax.cosh)
arcsinh = asinh = _unary_float("arcsinh", lax.asinh)
arccosh = acosh = _unary_float("arccosh", lax.acosh)
arctanh = atanh = _unary_float("arctanh", lax.atanh)
exp2 = _unary_float("exp2", lax.exp2)


def _log_base(fname: str, base: float):
    def fn(x, /):
        (x,) = _float_dtype_args(fname, x)
        y = lax.log(x)
        if _kind(y) == "c":  # scale the parts: a complex division would turn log(0) = -inf+0j into NaNs
            re, im = lax.real(y), lax.imag(y)
            return lax.complex(lax.div(re, full_like_(re, np.log(base))), lax.div(im, full_like_(im, np.log(base))))
        return lax.div(y, full_like_(y, np.log(base)))
    fn.__name__ = fname
    fn.__doc__ = f"Elementwise base-{base:g} logarithm."
    return eager_jit()(fn)


log2 = _log_base("log2", 2)
log10 = _log_base("log10", 10)


def _real_float_args(fname: str, *args, promoted: bool = False):
    """Promote to a real floating dtype (integers as the default float); complex is an error."""
    args = _inexact(list(args)) if promoted else _float_dtype_args(fname, *args)
    dtype = abstractify(args[0]).dtype
    if dtypes.kind(dtype) == "c":
        raise TypeError(f"kiln.numpy.{fname}: not supported for complex inputs ({dtype.name})")
    return args


def _binary_float(fname: str, *args):
    args = promote_and_broadcast(fname, *args)
    return _real_float_args(fname, *args, promoted=True)


@eager_jit()
def arctan2(x1, x2, /):
    """Elementwise arc tangent of ``x1 / x2`` choosing the quadrant by the signs of both."""
    x1, x2 = _binary_float("arctan2", x1, x2)
    return lax.atan2(x1, x2)


atan2 = arctan2


@eager_jit()
def float_power(x, y, /):
    """Elementwise ``x ** y`` computed in an inexact dtype (integers as the default float)."""
    x, y = promote_and_broadcast("float_power", x, y)
    x, y = _inexact([x, y])
    return lax.pow(x, y)


@eager_jit()
def square(x, /):
    """Elementwise ``x * x`` (booleans count as integers): kiln.lax.square, JAX's primitive."""
    (x,) = promote_dtypes("square", x)
    if abstractify(x).dtype == np.bool_:
        x = convert(x, dtypes.default_int_dtype(), False)
    return lax.square(x)


@eager_jit()
def reciprocal(x, /):
    """Elementwise ``1 / x``; integers are computed as floats (as JAX)."""
    (x,) = _float_dtype_args("reciprocal", x)
    return lax.reciprocal(x)


@eager_jit()
def hypot(x1, x2, /):
    """Elementwise ``sqrt(x1**2 + x2**2)``, without overflow or underflow in the squares."""
    scalars = np.ndim(x1) == 0 and np.ndim(x2) == 0
    x1, x2 = _binary_float("hypot", x1, x2)
    if not scalars:  # weakly typed only for two scalars, as JAX's (its constants are strong arrays)
        x1, x2 = _strong(x1), _strong(x2)
    a1, a2 = lax.abs(x1), lax.abs(x2)
    big, small = lax.max(a1, a2), lax.min(a1, a2)
    one, inf = full_like_(big, 1), full_like_(big, np.inf)
    ratio = lax.div(small, lax.select(lax.eq(big, full_like_(big, 0)), one, big))
    out = lax.mul(big, lax.sqrt(lax.add(one, lax.mul(ratio, ratio))))
    # An infinite operand wins over NaN (as C's hypot); max() would propagate the NaN.
    return lax.select(lax.bitwise_or(lax.eq(a1, inf), lax.eq(a2, inf)), inf, out)


@eager_jit()
def sinc(x, /):
    """Normalized sinc, ``sin(pi x) / (pi x)``, with ``sinc(0) = 1``."""
    (x,) = _float_dtype_args("sinc", x)
    zero = lax.eq(x, full_like_(x, 0))
    pix = lax.mul(x, full_like_(x, np.pi))
    safe = lax.select(zero, full_like_(x, 1), pix)
    return lax.select(zero, _sinc_at_zero(0, pix), lax.div(lax.sin(safe), safe))


@partial(custom_jvp, nondiff_argnums=(0,))
def _sinc_at_zero(k: int, t):
    """The ``k``-th derivative of ``sin(t) / t`` at ``t = 0``, shaped like ``t`` (used only where t == 0):
    its Maclaurin series ``sum_n (-1)^n t^2n / (2n+1)!`` gives ``(-1)^(k/2) / (k+1)`` for even ``k``, 0 for
    odd ``k``. Its derivative is the next one, so every order of ``grad`` of ``sinc`` is right at 0."""
    return full_like_(t, 0.0 if k % 2 else (-1) ** (k // 2) / (k + 1))


@_sinc_at_zero.defjvp
def _sinc_at_zero_jvp(k, primals, tangents):
    (t,), (dt,) = primals, tangents
    return _sinc_at_zero(k, t), lax.mul(_sinc_at_zero(k + 1, t), dt)


def _scale(fname: str, factor: float, doc: str):
    def fn(x, /):
        (x,) = _real_float_args(fname, x)
        return lax.mul(x, full_like_(x, factor))
    fn.__name__ = fname
    fn.__doc__ = doc
    return eager_jit()(fn)


deg2rad = _scale("deg2rad", np.pi / 180, "Convert angles from degrees to radians.")
radians = _scale("radians", np.pi / 180, "Convert angles from degrees to radians.")
rad2deg = _scale("rad2deg", 180 / np.pi, "Convert angles from radians to degrees.")
degrees = _scale("degrees", 180 / np.pi, "Convert angles from radians to degrees.")


@eager_jit()
def logaddexp(x1, x2, /):
    """Elementwise ``log(exp(x1) + exp(x2))`` without overflow."""
    x1, x2 = _binary_float("logaddexp", x1, x2)
    return logaddexp_e(x1, x2)


@eager_jit()
def logaddexp2(x1, x2, /):
    """Elementwise ``log2(2**x1 + 2**x2)`` without overflow."""
    x1, x2 = _binary_float("logaddexp2", x1, x2)
    return _logaddexp_2(x1, x2)




# ---------------------------------------------------------------------------------------------
# Rounding, signs, floating-point functions
# ---------------------------------------------------------------------------------------------

@eager_jit()
def fabs(x, /):
    """Elementwise absolute value as a float (complex is an error, as in NumPy)."""
    (x,) = _real_float_args("fabs", x)
    return lax.abs(x)


@eager_jit()
def trunc(x, /):
    """Round toward zero (integers are returned as they are)."""
    (x,) = promote_dtypes("trunc", x)
    aval = abstractify(x)
    if dtypes.kind(aval.dtype) == "c":
        _complex_unsupported("trunc")
    if not dtypes.is_inexact(aval.dtype):
        return _as_array(x)
    return lax.select(lax.lt(x, full_like_(x, 0)), lax.ceil(x), lax.floor(x))


fix = trunc


@eager_jit()
def rint(x, /):
    """Round to the nearest integer, ties to even (integers become floats, as in NumPy)."""
    (x,) = _float_dtype_args("rint", x)
    if _kind(x) == "c":
        return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


@eager_jit()
def modf(x, /):
    """``(fractional part, integral part)``, both with the sign of ``x``."""
    (x,) = _real_float_args("modf", x)
    whole = trunc(x)
    # inf - inf would be NaN: NumPy's fractional part of +-inf is 0. It carries the sign of x
    # (also for -0.0 and negative integers).
    frac = lax.select(lax.eq(lax.abs(x), full_like_(x, np.inf)), full_like_(x, 0), lax.sub(x, whole))
    return copysign(frac, x), whole


@eager_jit()
def signbit(x, /):
    """Elementwise: the sign bit is set (true for -0.0 and negative NaNs too)."""
    (x,) = promote_dtypes("signbit", x)
    return _signbit(x)


def _signbit(x):
    aval = abstractify(x)
    kind = dtypes.kind(aval.dtype)
    if kind == "c":
        _complex_unsupported("signbit")
    if kind == "f":
        bits = lax.bitcast_convert_type(x, np.dtype(f"int{8 * aval.dtype.itemsize}"))
        return lax.lt(bits, full_like_(bits, 0))
    if kind == "i":
        return lax.lt(x, full_like_(x, 0))
    return _zeros_bool(x)


@eager_jit()
def copysign(x1, x2, /):
    """``x1`` with the sign of ``x2``, elementwise (floating result)."""
    x1, x2 = _binary_float("copysign", x1, x2)
    mag = lax.abs(x1)
    return lax.select(_signbit(x2), lax.neg(mag), mag)


@eager_jit()
def heaviside(x1, x2, /):
    """Heaviside step: 0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 where ``x1 > 0`` (NaN stays NaN)."""
    scalar_x1 = np.ndim(x1) == 0
    x1, x2 = _binary_float("heaviside", x1, x2)
    if not scalar_x1:  # weakly typed only for a scalar x1, as JAX's (its constants are strong arrays)
        x1, x2 = _strong(x1), _strong(x2)
    out = lax.select(lax.gt(x1, full_like_(x1, 0)), full_like_(x1, 1), x2)
    out = lax.select(lax.lt(x1, full_like_(x1, 0)), full_like_(x1, 0), out)
    return lax.select(lax.ne(x1, x1), x1, out)


@eager_jit("copy", "nan", "posinf", "neginf")
def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN by ``nan`` and infinities by ``posinf``/``neginf`` (default: the largest finite
    values of the dtype). Complex arrays are treated part by part; integers are returned as is."""
    check_arraylike("nan_to_num", x)
    (x,) = promote_dtypes("nan_to_num", x)
    aval = abstractify(x)
    if dtypes.kind(aval.dtype) == "c":
        return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    if not dtypes.is_inexact(aval.dtype):
        return _as_array(x)
    info = dtypes.finfo(aval.dtype)
    from ._util import broadcast_to_shape

    def value(v, default):
        v = default if v is None else v
        check_arraylike("nan_to_num", v)
        return broadcast_to_shape(convert(v, aval.dtype, aval.weak_type), aval.shape)

    out = lax.select(lax.ne(x, x), value(nan, 0.0), x)
    out = lax.select(lax.eq(x, full_like_(x, np.inf)), value(posinf, float(info.max)), out)
    return lax.select(lax.eq(x, full_like_(x, -np.inf)), value(neginf, float(info.min)), out)


# (total bits, mantissa bits, exponent bias) of each floating dtype: for frexp and ldexp.
_FLOAT_LAYOUT = {dtypes.float16: (16, 10, 15), dtypes.bfloat16: (16, 7, 127), dtypes.float32: (32, 23, 127),
                 dtypes.float64: (64, 52, 1023)}


def _int_full(like, value):
    return full_like_(like, value)


@eager_jit()
def frexp(x, /):
    """Split ``x`` into ``(mantissa, exponent)`` with ``x = mantissa * 2**exponent`` and
    ``0.5 <= |mantissa| < 1`` (0, inf and NaN give themselves and exponent 0). The exponent is int32."""
    (x,) = _real_float_args("frexp", x)
    dtype = abstractify(x).dtype
    nbits, mbits, bias = _FLOAT_LAYOUT[dtype]
    itype = np.dtype(f"int{nbits}")
    bits = lax.bitcast_convert_type(x, itype)
    mant_mask = _int_full(bits, (1 << mbits) - 1)
    field = lax.bitwise_and(lax.shift_right_logical(bits, _int_full(bits, mbits)),
                            _int_full(bits, (1 << (nbits - mbits - 1)) - 1))
    m = lax.bitwise_and(bits, mant_mask)
    sign = lax.bitwise_and(bits, _int_full(bits, -(1 << (nbits - 1))))
    # Normal numbers: exponent field - (bias - 1); subnormals: from the bit length p of the mantissa.
    p = lax.sub(_int_full(m, nbits), lax.clz(m))
    sub_e = lax.add(p, _int_full(p, 1 - bias - mbits))
    sub_frac = lax.bitwise_and(lax.shift_left(m, lax.sub(_int_full(p, mbits + 1), p)), mant_mask)
    is_sub = lax.eq(field, _int_full(field, 0))
    e = lax.select(is_sub, sub_e, lax.sub(field, _int_full(field, bias - 1)))
    frac = lax.select(is_sub, sub_frac, m)
    mant_bits = lax.bitwise_or(lax.bitwise_or(sign, frac), _int_full(bits, (bias - 1) << mbits))
    mantissa = lax.bitcast_convert_type(mant_bits, dtype)
    # Zero, inf and NaN from the bits: a float comparison would also count subnormals as zero (XLA
    # flushes them on CPU), and NumPy splits those.
    # (Not "bits & 0x7f.. == 0": LLVM turns that into a float compare, which flushes subnormals.)
    zero = lax.bitwise_and(is_sub, lax.eq(p, _int_full(p, 0)))
    special = lax.bitwise_or(zero, lax.eq(field, _int_full(field, (1 << (nbits - mbits - 1)) - 1)))
    mantissa = lax.select(special, x, mantissa)
    e = lax.select(special, _int_full(e, 0), e)
    return mantissa, lax.convert_element_type(e, np.int32)


@eager_jit()
def ldexp(x1, x2, /):
    """``x1 * 2**x2`` elementwise, for integer ``x2``, without overflow in the power of two."""
    check_arraylike("ldexp", x1, x2)
    (n,) = promote_dtypes("ldexp", x2)
    if dtypes.kind(abstractify(n).dtype) not in "iu":
        raise TypeError(f"kiln.numpy.ldexp: the exponent must be an integer array, got {abstractify(n).dtype.name}")
    (x,) = _real_float_args("ldexp", x1)
    x, n = _broadcast_pair("ldexp", x, n)
    dtype = abstractify(x).dtype
    nbits, mbits, bias = _FLOAT_LAYOUT[dtype]
    itype = np.dtype(f"int{nbits}")
    # Beyond +-limit every finite x overflows or underflows; clamp, then split into three powers of
    # two that are each representable, and multiply them in (each product is exact or final).
    limit = 2 * bias + mbits + 1
    wide = dtypes.default_int_dtype() if itype.itemsize < 4 else itype
    n = lax.convert_element_type(n, wide)
    n = lax.min(lax.max(n, _int_full(n, -limit)), _int_full(n, limit))
    a = floor_divide(n, 3)
    b = floor_divide(lax.sub(n, a), 2)
    c = lax.sub(lax.sub(n, a), b)
    for k in (a, b, c):
        k = lax.convert_element_type(lax.add(k, _int_full(k, bias)), itype)
        x = lax.mul(x, lax.bitcast_convert_type(lax.shift_left(k, _int_full(k, mbits)), dtype))
    return x


def _broadcast_pair(fname: str, x, n):
    from ._util import broadcast_shapes, broadcast_to_shape
    shape = broadcast_shapes(fname, abstractify(x).shape, abstractify(n).shape)
    return broadcast_to_shape(x, shape), broadcast_to_shape(n, shape)


@eager_jit()
def nextafter(x1, x2, /):
    """The next representable floating value after ``x1`` toward ``x2``, elementwise."""
    x1, x2 = _binary_float("nextafter", x1, x2)
    return lax.nextafter(x1, x2)


@eager_jit()
def spacing(x, /):
    """The distance from ``x`` to the next representable value away from zero (negative for x < 0)."""
    (x,) = _real_float_args("spacing", x)
    away = lax.select(_signbit(x), full_like_(x, -np.inf), full_like_(x, np.inf))
    # Below the smallest normal number the gap is the smallest subnormal one: taken from nextafter(0, away),
    # as the subtraction would flush it to zero where the backend flushes subnormal results (XLA's CPU).
    tiny = full_like_(x, float(dtypes.finfo(abstractify(x).dtype).smallest_normal))
    subnormal = lax.nextafter(full_like_(x, 0), away)
    return lax.select(lax.lt(lax.abs(x), tiny), subnormal, lax.sub(lax.nextafter(x, away), x))


# NumPy 2 / array API names.
pow = power  # noqa: A001
bitwise_invert = invert
bitwise_left_shift = left_shift
bitwise_right_shift = right_shift


@eager_jit()
def bitwise_count(x, /):
    """Elementwise number of set bits in ``|x|`` (as NumPy's ``bitwise_count``; uint8 result)."""
    (x,) = promote_dtypes("bitwise_count", x)
    dtype = abstractify(x).dtype
    if dtypes.kind(dtype) not in "iub":
        raise TypeError(f"kiln.numpy.bitwise_count: needs integer or boolean inputs, got {dtype.name}")
    if dtype == np.bool_:
        return lax.convert_element_type(x, np.uint8)
    if dtypes.kind(dtype) == "i":
        x = lax.abs(x)
    return lax.convert_element_type(lax.population_count(x), np.uint8)


# ---------------------------------------------------------------------------------------------
# Comparisons of whole arrays
# ---------------------------------------------------------------------------------------------

@eager_jit("equal_nan")
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Elementwise ``|a - b| <= atol + rtol * |b|``; infinities are close only to themselves, NaN
    to nothing unless ``equal_nan``."""
    a, b = promote_and_broadcast("isclose", a, b)
    a, b = _inexact([a, b])
    diff = lax.abs(lax.sub(a, b))
    out = less_equal(diff, add(atol, multiply(rtol, lax.abs(b))))
    out = lax.select(lax.bitwise_or(_isinf(a), _isinf(b)), lax.eq(a, b), out)
    if equal_nan:
        out = lax.bitwise_or(out, lax.bitwise_and(_isnan(a), _isnan(b)))
    return _strong_bool(out)


@eager_jit("equal_nan")
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether every element of ``a`` is close to ``b`` (see :func:`isclose`); a 0-d bool array."""
    out = isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    return lax.reduce_and(out, tuple(range(abstractify(out).ndim)))


@eager_jit("equal_nan")
def array_equal(a1, a2, equal_nan: bool = False):
    """Whether ``a1`` and ``a2`` have the same shape and elements (a 0-d bool array)."""
    check_arraylike("array_equal", a1, a2)
    if abstractify(a1).shape != abstractify(a2).shape:
        return _false()
    return _all_equal("array_equal", a1, a2, equal_nan)


@eager_jit()
def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` broadcast to one shape and are equal there (a 0-d bool array)."""
    check_arraylike("array_equiv", a1, a2)
    try:
        np.broadcast_shapes(abstractify(a1).shape, abstractify(a2).shape)
    except ValueError:
        return _false()
    return _all_equal("array_equiv", a1, a2, False)


def _false():
    return materialize(lax.literal(False, np.bool_))


def _all_equal(fname: str, a1, a2, equal_nan: bool):
    a1, a2 = promote_and_broadcast(fname, a1, a2)
    eq = lax.eq(a1, a2)
    if equal_nan:
        eq = lax.bitwise_or(eq, lax.bitwise_and(_isnan(a1), _isnan(a2)))
    return lax.reduce_and(eq, tuple(range(abstractify(eq).ndim)))


# ---------------------------------------------------------------------------------------------
# NaN-ignoring extrema, integer gcd/lcm, the Bessel function i0
# ---------------------------------------------------------------------------------------------

def _nan_ignoring(fname: str, pick):
    def fn(x1, x2, /):
        x1, x2 = promote_and_broadcast(fname, x1, x2)
        if not dtypes.is_inexact(abstractify(x1).dtype):
            return pick(x1, x2)
        n1, n2 = _isnan(x1), _isnan(x2)
        return lax.select(n1, x2, lax.select(n2, x1, pick(x1, x2)))
    fn.__name__ = fname
    fn.__doc__ = (f"Elementwise {fname[1:]}imum that ignores NaNs: where one operand is NaN the other is the "
                  "result (NaN only where both are).")
    return eager_jit()(fn)


fmax = _nan_ignoring("fmax", lambda a, b: maximum(a, b))
fmin = _nan_ignoring("fmin", lambda a, b: minimum(a, b))


def _integer_operands(fname: str, x1, x2):
    x1, x2 = promote_and_broadcast(fname, x1, x2)
    dtype = abstractify(x1).dtype
    if dtypes.kind(dtype) not in "iu":
        raise TypeError(f"kiln.numpy.{fname}: needs integer inputs, got {dtype.name}")
    return x1, x2


def _gcd(a, b):
    from ..control.api import while_loop
    a, b = abs(a), abs(b)
    zero = lax.full_like(b, 0)

    def body(ab):
        a, b = ab
        nonzero = lax.ne(b, zero)
        safe = lax.select(nonzero, b, lax.full_like(b, 1))
        return lax.select(nonzero, b, a), lax.select(nonzero, lax.rem(a, safe), zero)

    def cond(ab):
        return lax.reduce_or(lax.ne(ab[1], zero), tuple(range(abstractify(zero).ndim)))

    return while_loop(cond, body, (a, b))[0]


@eager_jit()
def gcd(x1, x2, /):
    """Elementwise greatest common divisor of integers (non-negative; ``gcd(0, 0) == 0``)."""
    x1, x2 = _integer_operands("gcd", x1, x2)
    return _gcd(materialize(x1), materialize(x2))


@eager_jit()
def lcm(x1, x2, /):
    """Elementwise least common multiple of integers (non-negative; 0 where either is 0)."""
    x1, x2 = _integer_operands("lcm", x1, x2)
    x1, x2 = materialize(x1), materialize(x2)
    d = _gcd(x1, x2)
    zero = lax.full_like(d, 0)
    is_zero = lax.eq(d, zero)
    return lax.select(is_zero, zero, abs(lax.mul(lax.div(x1, lax.select(is_zero, lax.full_like(d, 1), d)), x2)))


# Cephes' Chebyshev coefficients of exp(-x) i0(x) on [0, 8] (A) and of sqrt(x) exp(-x) i0(x) on (8, inf) (B).
_I0_A = (
    -4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16, 1.715391285555133e-15,
    -1.1685332877993451e-14, 7.676185498604936e-14, -4.856446783111929e-13, 2.95505266312964e-12,
    -1.726826291441556e-11, 9.675809035373237e-11, -5.189795601635263e-10, 2.6598237246823866e-09,
    -1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07, 1.1173875391201037e-06,
    -4.4167383584587505e-06, 1.6448448070728896e-05, -5.754195010082104e-05, 0.00018850288509584165,
    -0.0005763755745385824, 0.0016394756169413357, -0.004324309995050576, 0.010546460394594998,
    -0.02373741480589947, 0.04930528423967071, -0.09490109704804764, 0.17162090152220877, -0.3046826723431984,
    0.6767952744094761,
)
_I0_B = (
    -7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17, 3.461222867697461e-17,
    -2.8276239805165836e-16, -3.425485619677219e-16, 1.7725601330565263e-15, 3.8116806693526224e-15,
    -9.554846698828307e-15, -4.150569347287222e-14, 1.54008621752141e-14, 3.8527783827421426e-13,
    7.180124451383666e-13, -1.7941785315068062e-12, -1.3215811840447713e-11, -3.1499165279632416e-11,
    1.1889147107846439e-11, 4.94060238822497e-10, 3.3962320257083865e-09, 2.266668990498178e-08,
    2.0489185894690638e-07, 2.8913705208347567e-06, 6.889758346916825e-05, 0.0033691164782556943,
    0.8044904110141088,
)


def _chbevl(x, coeffs):
    b0, b1, b2 = lax.full_like(x, coeffs[0]), lax.full_like(x, 0.0), lax.full_like(x, 0.0)
    for c in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = lax.add(lax.sub(lax.mul(x, b1), b2), lax.full_like(x, c))
    return lax.mul(lax.sub(b0, b2), lax.full_like(x, 0.5))


@eager_jit()
def i0(x, /):
    """The modified Bessel function of the first kind, order 0, elementwise (real inputs; integers are
    computed as floats). Evaluated with Cephes' Chebyshev expansions, as NumPy does."""
    (x,) = _float_dtype_args("i0", x)
    if _kind(x) == "c":
        raise ValueError("kiln.numpy.i0: complex input is not supported")
    return _i0(materialize(x))


@eager_jit()
def _i0(x):
    """i0 of a float array: ~120 primitives, compiled as one program when called eagerly."""
    ax = abs(x)
    small = lax.le(ax, lax.full_like(ax, 8.0))
    # Each branch sees an argument inside its own interval (so neither produces inf or NaN).
    xs = lax.select(small, ax, lax.full_like(ax, 8.0))
    xl = lax.select(small, lax.full_like(ax, 9.0), ax)
    ys = _chbevl(lax.sub(lax.mul(xs, lax.full_like(ax, 0.5)), lax.full_like(ax, 2.0)), _I0_A)
    yl = lax.div(_chbevl(lax.sub(lax.div(lax.full_like(ax, 32.0), xl), lax.full_like(ax, 2.0)), _I0_B), lax.sqrt(xl))
    return lax.mul(lax.exp(ax), lax.select(small, ys, yl))
