"""More elementwise primitives: inverse trig and hyperbolic functions, special functions, bit
counting, ``nextafter``, ``mulhi``, complex parts and ``bitcast_convert_type``; and the lax compositions over
them (``exp2``, ``integer_pow``, ``reciprocal``, ``conj``).

Each primitive here has a direct StableHLO or CHLO op (CHLO ops are legalized by XLA's compile
entry point; see ``lowering/rules/special.py``). Everything else is a composition of primitives,
so it needs no derivative or batching rule of its own.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.tracing import abstractify
from . import api
from .elementwise import _FLOAT, _INEXACT, _INT, _binary_rule, _check_kind, _unary_rule

__all__ = [
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "erf", "erfc", "erf_inv", "lgamma", "digamma",
    "population_count", "clz", "nextafter", "real", "imag", "complex", "conj",
    "bitcast_convert_type", "exp2", "integer_pow", "reciprocal",
]

# name -> accepted dtype kinds. The output has the input's dtype.
SPECIAL_UNARY = {
    "asin": _INEXACT, "acos": _INEXACT, "atan": _INEXACT, "sinh": _INEXACT, "cosh": _INEXACT,
    "asinh": _INEXACT, "acosh": _INEXACT, "atanh": _INEXACT,
    "erf": _FLOAT, "erfc": _FLOAT, "erf_inv": _FLOAT, "lgamma": _FLOAT, "digamma": _FLOAT,
    "population_count": _INT, "clz": _INT,
}
special_unary_prims = {name: Primitive(name, _unary_rule(name, kinds)) for name, kinds in SPECIAL_UNARY.items()}
nextafter_p = Primitive("nextafter", _binary_rule("nextafter", _FLOAT))
# The high half of the double-width product of integers of at most 32 bits (kiln.lax.mulhi; 64-bit operands are
# a composition there): emitted as a product in the double-width type, which XLA has whatever kiln's x64 flag.
mulhi_p = Primitive("mulhi", _binary_rule("mulhi", _INT))


def _unary(name: str, doc: str):
    prim = special_unary_prims[name]

    def fn(x):
        return prim.bind(x)
    fn.__name__ = name
    fn.__doc__ = doc
    return fn


asin = _unary("asin", "Elementwise arc sine (kiln primitive; floating or complex).")
acos = _unary("acos", "Elementwise arc cosine (kiln primitive; floating or complex).")
atan = _unary("atan", "Elementwise arc tangent (kiln primitive; floating or complex).")
sinh = _unary("sinh", "Elementwise hyperbolic sine (kiln primitive; floating or complex).")
cosh = _unary("cosh", "Elementwise hyperbolic cosine (kiln primitive; floating or complex).")
asinh = _unary("asinh", "Elementwise inverse hyperbolic sine (kiln primitive; floating or complex).")
acosh = _unary("acosh", "Elementwise inverse hyperbolic cosine (kiln primitive; floating or complex).")
atanh = _unary("atanh", "Elementwise inverse hyperbolic tangent (kiln primitive; floating or complex).")
erf = _unary("erf", "Elementwise error function (kiln primitive; floating).")
erfc = _unary("erfc", "Elementwise complementary error function ``1 - erf(x)``, accurate for large x.")
erf_inv = _unary("erf_inv", "Elementwise inverse of the error function (kiln primitive; floating).")
lgamma = _unary("lgamma", "Elementwise log of the absolute value of the gamma function (floating).")
digamma = _unary("digamma", "Elementwise digamma function, the derivative of lgamma (floating).")
population_count = _unary("population_count", "Elementwise number of set bits (integers).")
clz = _unary("clz", "Elementwise number of leading zero bits (integers).")


def nextafter(x1, x2):
    """The next floating-point value after ``x1`` in the direction of ``x2``, elementwise."""
    return nextafter_p.bind(*api._operands(x1, x2))


# -- complex numbers ------------------------------------------------------------------------

def _complex_part_rule(name: str):
    def rule(x: ShapedArray) -> ShapedArray:
        if x.dtype.kind != "c":
            raise TypeError(f"kiln.lax.{name}: takes a complex array, got {x.dtype.name} "
                            f"(kiln.numpy.{name} also accepts real arrays)")
        return ShapedArray(x.shape, _REAL_OF[x.dtype], x.weak_type)
    return rule


_REAL_OF = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}
_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}
real_p = Primitive("real", _complex_part_rule("real"))
imag_p = Primitive("imag", _complex_part_rule("imag"))


def _complex_rule(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    out = _binary_rule("complex", _FLOAT)(x, y)
    if x.dtype not in _COMPLEX_OF:
        raise TypeError(f"kiln.lax.complex: takes float32 or float64 parts, got {x.dtype.name}")
    return out.update(dtype=_COMPLEX_OF[x.dtype])


complex_p = Primitive("complex", _complex_rule)


def _conj_rule(x: ShapedArray) -> ShapedArray:
    if x.dtype.kind != "c":
        raise TypeError(f"kiln.lax.conj: the primitive takes a complex array, got {x.dtype.name}")
    return x


# A primitive of its own (not complex(real(x), -imag(x))) for its transpose, conj of the cotangent: composed,
# the transpose adds 0 + -0 and loses the sign of a zero imaginary part (JAX's grad(conj) at 3+4j is 1-0j).
conj_p = Primitive("conj", _conj_rule)


def real(x):
    """The real part of a complex array (kiln primitive)."""
    return real_p.bind(x)


def imag(x):
    """The imaginary part of a complex array (kiln primitive)."""
    return imag_p.bind(x)


def complex(x, y):  # noqa: A001 - jax.lax's name
    """The complex array ``x + i*y`` from two float32 (or float64) arrays of one shape."""
    return complex_p.bind(*api._operands(x, y))


def conj(x):
    """Complex conjugate; as in JAX, a real floating input gives a complex result."""
    aval = abstractify(x)
    if aval.dtype.kind == "c":
        return conj_p.bind(x)
    _check_kind("conj", aval, _FLOAT)
    if aval.dtype not in _COMPLEX_OF:
        x = api.convert_element_type(x, dtypes.float32, weak_type=aval.weak_type)
    return complex(x, _zeros_like(x))


# -- bitcast ---------------------------------------------------------------------------------

def _bitcast_rule(x: ShapedArray, *, new_dtype: np.dtype) -> ShapedArray:
    for dt in (x.dtype, new_dtype):
        if dt == np.bool_:
            raise TypeError(f"kiln.lax.bitcast_convert_type: bool is not allowed (from {x.dtype.name} "
                            f"to {new_dtype.name}); convert to uint8 first")
        if dt.kind == "c":  # (XLA refuses to compile it)
            raise TypeError(f"kiln.lax.bitcast_convert_type: complex values are not allowed (from {x.dtype.name} "
                            f"to {new_dtype.name}); bitcast kiln.lax.real(x) and kiln.lax.imag(x) apart")
    old_bits, new_bits = x.dtype.itemsize, new_dtype.itemsize
    if old_bits == new_bits:
        return ShapedArray(x.shape, new_dtype, False)
    if old_bits > new_bits:
        return ShapedArray(x.shape + (old_bits // new_bits,), new_dtype, False)
    ratio = new_bits // old_bits
    if not x.shape or x.shape[-1] != ratio:
        raise ValueError(f"kiln.lax.bitcast_convert_type: casting {x.dtype.name} to the wider "
                         f"{new_dtype.name} needs a last dimension of size {ratio}, got shape {x.shape}")
    return ShapedArray(x.shape[:-1], new_dtype, False)


bitcast_convert_type_p = Primitive("bitcast_convert_type", _bitcast_rule)


def bitcast_convert_type(x, new_dtype):
    """Reinterpret the bits of ``x`` as ``new_dtype``.

    To a narrower dtype, a trailing dimension of size ``old_bits // new_bits`` is added; to a
    wider one, the trailing dimension (of size ``new_bits // old_bits``) is consumed.
    """
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    if abstractify(x).dtype == new_dtype:
        return x
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype)


# -- compositions ----------------------------------------------------------------------------

def _full_like(x, value):
    aval = abstractify(x)
    lit = api.literal(value, aval.dtype, aval.weak_type)
    return api.broadcast_in_dim(lit, aval.shape, ()) if aval.shape else lit


def _zeros_like(x):
    return _full_like(x, 0)


def exp2(x, *, accuracy=None):
    """Elementwise ``2 ** x`` (floating or complex). ``accuracy`` (as JAX's) is checked and ignored."""
    from .precision import check_accuracy
    check_accuracy("exp2", accuracy)
    _check_kind("exp2", abstractify(x), _INEXACT)
    return api.pow(_full_like(x, 2), x)


def reciprocal(x):
    """Elementwise ``1 / x``."""
    return api.div(_full_like(x, 1), x)


def _integer_pow_rule(x: ShapedArray, *, y: int) -> ShapedArray:
    return x


# A primitive, as JAX's (emitted as square-and-multiply, lowering/rules/special.py): its derivative is then
# y * x**(y - 1), JAX's formula and numbers, rather than the product rule through a chain of multiplies.
integer_pow_p = Primitive("integer_pow", _integer_pow_rule)


def integer_pow(x, y: Any):
    """``x ** y`` for a static Python int ``y``, by repeated squaring (exact for integers)."""
    if isinstance(y, bool) or not isinstance(y, (int, np.integer)):
        raise TypeError(f"kiln.lax.integer_pow: the exponent must be a static Python int, got "
                        f"{type(y).__name__} {y!r:.40}")
    y = int(y)
    aval = abstractify(x)
    _check_kind("integer_pow", aval, "iufc")
    if y < 0 and not dtypes.is_inexact(aval.dtype):
        raise ValueError(f"kiln.lax.integer_pow: integers to negative powers are not allowed "
                         f"(exponent {y}, dtype {aval.dtype.name})")
    return integer_pow_p.bind(x, y=y)
