"""Constant folding: the value of an elementwise primitive applied to constants, computed at trace time.

``fold(name, params, values, out_dtype)`` computes, with NumPy on the operands' own dtype, what XLA would
compute at run time for the primitive ``name`` (kiln's ``add``, ``mul``, ``div``, ``neg``, ``max``, the
comparisons, ``convert_element_type``, ...) on the 0-d NumPy values ``values``, or returns None when it cannot
promise the same bits. The IR pass that uses it (``passes.simplify``) replaces the equation by the constant.

Only operations whose result is defined to the bit are folded:

* ``add``, ``sub``, ``mul``, ``square``, ``div`` on float16, bfloat16, float32 and float64, which IEEE 754
  rounds correctly to the nearest value (NumPy computes float16 and bfloat16 in float32 and rounds once more;
  that second rounding never changes a correctly rounded sum, difference, product or quotient, as float32 has
  more than twice their precision plus two bits); ``neg`` and ``abs``, exact;
* ``add``, ``sub``, ``mul``, ``square``, ``neg``, ``abs`` on integers, which wrap around (two's complement) as
  XLA's do;
  integer ``div`` and ``rem`` are left alone (NumPy's and XLA's answers differ for a zero divisor and for
  ``INT_MIN / -1``);
* ``max``, ``min`` (NaN propagates on both sides; a pair of zeros of opposite signs is left alone);
* the comparisons, ``and``, ``or``, ``xor``, ``not``, exact;
* ``convert_element_type`` between bool, the integers and the floats above, except where NumPy's and XLA's
  conversions may differ: a float that does not fit the integer type (NaN, infinities, out of range), and
  float64, or an integer above 2**24 in magnitude, to float16 or bfloat16 (conversions NumPy makes through
  float32, rounding twice).

Subnormal operands or results are not folded (a backend may flush them to zero at run time), nor complex
numbers, nor the narrow float8/int4 types, nor transcendental functions (``exp``, ``log``, ``sin``, ``pow``,
``sqrt``, ...: NumPy's and XLA's implementations may differ in the last place).
"""
from __future__ import annotations

from typing import Any, Callable

import ml_dtypes
import numpy as np

_FLOATS = frozenset(np.dtype(d) for d in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64))
_INTS = frozenset(np.dtype(d) for d in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                        np.uint64))
_BOOL = np.dtype(np.bool_)

# name -> (NumPy function, the operand dtypes it is folded for)
_ARITH = _FLOATS | _INTS
_ALL = _FLOATS | _INTS | {_BOOL}
_LOGIC = _INTS | {_BOOL}
_OPS: dict[str, tuple[Callable[..., Any], frozenset]] = {
    "add": (np.add, _ARITH), "sub": (np.subtract, _ARITH), "mul": (np.multiply, _ARITH), "square": (np.square, _ARITH),
    "div": (np.divide, _FLOATS), "neg": (np.negative, _ARITH), "abs": (np.abs, _ARITH - {np.dtype(d) for d in (
        np.uint8, np.uint16, np.uint32, np.uint64)}),
    "max": (np.maximum, _ALL), "min": (np.minimum, _ALL),
    "eq": (np.equal, _ALL), "ne": (np.not_equal, _ALL), "lt": (np.less, _ALL), "le": (np.less_equal, _ALL),
    "gt": (np.greater, _ALL), "ge": (np.greater_equal, _ALL),
    "and": (np.bitwise_and, _LOGIC), "or": (np.bitwise_or, _LOGIC), "xor": (np.bitwise_xor, _LOGIC),
    "not": (np.invert, _LOGIC),
}

FOLDABLE = frozenset(_OPS) | {"convert_element_type", "integer_pow"}


def square_and_multiply(x: Any, n: int, mul: Callable[[Any, Any], Any]) -> Any:
    """``x`` to the static power ``n >= 1`` under the product ``mul``: the squares of ``x`` for the set bits of
    ``n``, multiplied in from the lowest bit up. One order for every use, so that they agree to the bit: the
    emission of ``integer_pow`` (as JAX's), its constant folding, and ``kiln.numpy.linalg.matrix_power``."""
    result = None
    while True:
        if n & 1:
            result = x if result is None else mul(result, x)
        n >>= 1
        if not n:
            return result
        x = mul(x, x)


def _integer_pow(v: np.ndarray, y: int) -> np.ndarray | None:
    """``v ** y`` as the emitted program computes it (correctly rounded products, then ``1 / acc`` for y < 0),
    or None when a product is subnormal (a backend may flush it to zero)."""
    if v.dtype not in _ARITH or (y < 0 and v.dtype not in _FLOATS):
        return None
    if y == 0:
        return np.ones((), v.dtype)
    subnormal = []

    def mul(a, b):
        out = np.multiply(a, b)
        subnormal.append(_subnormal(out))
        return out
    with np.errstate(all="ignore"):
        acc = square_and_multiply(v, abs(y), mul)
        out = np.asarray(np.divide(np.ones((), v.dtype), acc) if y < 0 else acc)
    return None if any(subnormal) else out


def _subnormal(v: np.ndarray) -> bool:
    if v.dtype not in _FLOATS:
        return False
    a = abs(float(v))
    return 0.0 < a < float(ml_dtypes.finfo(v.dtype).tiny)


def _convert(v: np.ndarray, out_dtype: np.dtype) -> np.ndarray | None:
    src = v.dtype
    if out_dtype == _BOOL:
        return np.asarray(v != 0)
    if src in _FLOATS and out_dtype in _INTS:
        x = float(v)
        if not np.isfinite(x):
            return None
        t = np.trunc(x)  # XLA, as C, converts toward zero; exact in float64 for every float of _FLOATS
        info = np.iinfo(out_dtype)
        if not info.min <= t <= info.max:
            return None
        return np.asarray(int(t), out_dtype)
    narrow = out_dtype in (np.float16, ml_dtypes.bfloat16)
    if narrow and (src == np.float64 or (src in _INTS and abs(int(v)) > 2**24)):
        return None  # NumPy goes through float32 here: two roundings, where XLA may round once
    return np.asarray(v).astype(out_dtype)


def fold(name: str, params: dict, values: list[np.ndarray], out_dtype: np.dtype) -> np.ndarray | None:
    """The 0-d result of primitive ``name`` on the 0-d constants ``values`` (with the primitive's
    ``params``), of dtype ``out_dtype``, or None where folding could change the result (see the module)."""
    if any(v.dtype not in _ALL or _subnormal(v) for v in values):
        return None
    if name == "integer_pow":
        out = _integer_pow(values[0], params["y"])
    elif name == "convert_element_type":
        if out_dtype not in _ALL:
            return None
        with np.errstate(all="ignore"):  # a float too large for float16 becomes inf, as in XLA
            out = _convert(values[0], np.dtype(out_dtype))
    else:
        fn, dtypes = _OPS.get(name, (None, None))
        if fn is None or any(v.dtype not in dtypes for v in values):
            return None
        if name in ("max", "min") and values[0].dtype in _FLOATS and float(values[0]) == 0.0 == float(values[1]):
            return None  # max(-0.0, 0.0): which zero comes out is up to the backend
        with np.errstate(all="ignore"):  # integers wrap around; inf and NaN as IEEE 754 says
            out = np.asarray(fn(*values))
    if out is None or out.dtype != out_dtype or _subnormal(out):
        return None
    return out
