"""Elementwise primitives: unary math, binary arithmetic, comparisons, logic, select, convert.

At this level there is no implicit promotion or broadcasting (as in ``jax.lax``): operands have
equal shapes and dtypes. ``kiln.numpy`` promotes and broadcasts before calling these.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.errors import ShapeError
from ..core.primitive import Primitive

# Which dtype kinds each primitive accepts: b=bool, i=signed, u=unsigned, f=float, c=complex.
_NUM = "iufc"
_INEXACT = "fc"
_FLOAT = "f"
_INT = "iu"
_LOGIC = "biu"
_ANY = "biufc"


def _kind(dtype: np.dtype) -> str:
    return dtypes.kind(dtype)


def _check_kind(name: str, aval: ShapedArray, kinds: str) -> None:
    if _kind(aval.dtype) not in kinds:
        names = {"b": "bool", "i": "signed integer", "u": "unsigned integer", "f": "floating", "c": "complex"}
        allowed = ", ".join(names[k] for k in kinds)
        raise TypeError(f"kiln.lax.{name}: does not accept dtype {aval.dtype.name}; "
                        f"it takes {allowed} arrays")


def _unary_rule(name: str, kinds: str, out_dtype=None):
    def rule(x: ShapedArray) -> ShapedArray:
        _check_kind(name, x, kinds)
        dt = x.dtype if out_dtype is None else out_dtype(x.dtype)
        return ShapedArray(x.shape, dt, x.weak_type)
    return rule


def _binary_rule(name: str, kinds: str, out_bool: bool = False):
    def rule(x: ShapedArray, y: ShapedArray) -> ShapedArray:
        if x.dtype != y.dtype:
            raise TypeError(f"kiln.lax.{name}: operands must have the same dtype, got {x.dtype.name} and "
                            f"{y.dtype.name} (kiln.lax does not promote: convert one with "
                            "kiln.lax.convert_element_type, or use kiln.numpy)")
        if x.shape != y.shape:
            raise ShapeError(f"kiln.lax.{name}: operand shapes {x.shape} and {y.shape} do not broadcast (kiln.lax "
                             "broadcasts rank-0 operands and axes of size 1, as JAX's lax does; use kiln.numpy, or "
                             "kiln.lax.broadcast_in_dim)")
        _check_kind(name, x, kinds)
        # Weakly typed when both operands are, a comparison's bool too (as JAX's: promotion treats a weak bool
        # as bool, and the weak type shows in reprs).
        return ShapedArray(x.shape, np.dtype(bool) if out_bool else x.dtype, x.weak_type and y.weak_type)
    return rule


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dtype == np.complex128 else (
        np.dtype(np.float32) if dtype == np.complex64 else dtype)


UNARY = {  # name -> accepted kinds, output-dtype function (None: same dtype)
    "neg": (_NUM, None), "sign": (_NUM, None), "abs": (_NUM, _real_dtype), "square": (_NUM, None),
    "exp": (_INEXACT, None), "log": (_INEXACT, None), "log1p": (_INEXACT, None),
    "expm1": (_INEXACT, None), "sin": (_INEXACT, None), "cos": (_INEXACT, None),
    "tan": (_INEXACT, None), "tanh": (_INEXACT, None), "logistic": (_INEXACT, None),
    "sqrt": (_INEXACT, None), "rsqrt": (_INEXACT, None), "cbrt": (_FLOAT, None),
    "floor": (_FLOAT, None), "ceil": (_FLOAT, None), "not": (_LOGIC, None),
    "is_finite": (_FLOAT, lambda d: np.dtype(bool)),
}
BINARY = {  # name -> accepted kinds, returns bool?
    "add": (_NUM, False), "sub": (_NUM, False), "mul": (_NUM, False), "div": (_NUM, False),
    "rem": (_NUM, False), "pow": (_INEXACT, False), "max": (_ANY, False), "min": (_ANY, False),
    "and": (_LOGIC, False), "or": (_LOGIC, False), "xor": (_LOGIC, False),
    "shift_left": (_INT, False), "shift_right_arithmetic": (_INT, False),
    "shift_right_logical": (_INT, False), "atan2": (_FLOAT, False),
    "eq": (_ANY, True), "ne": (_ANY, True), "lt": (_ANY, True), "le": (_ANY, True),
    "gt": (_ANY, True), "ge": (_ANY, True),
}

unary_prims = {name: Primitive(name, _unary_rule(name, kinds, out))
               for name, (kinds, out) in UNARY.items()}
binary_prims = {name: Primitive(name, _binary_rule(name, kinds, out_bool))
                for name, (kinds, out_bool) in BINARY.items()}
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


def _round_rule(x: ShapedArray, *, rounding_method: int) -> ShapedArray:
    _check_kind("round", x, _FLOAT)
    return x


round_p = Primitive("round", _round_rule)  # rounding_method: 0 away from zero, 1 to nearest even


def _select_rule(pred: ShapedArray, on_true: ShapedArray, on_false: ShapedArray) -> ShapedArray:
    if pred.dtype != np.bool_:
        raise TypeError(f"kiln.lax.select: the predicate must be boolean, got {pred.dtype.name}")
    if on_true.dtype != on_false.dtype or on_true.shape != on_false.shape:
        raise TypeError("kiln.lax.select: both cases must have the same shape and dtype, got "
                        f"{on_true.str_short()} and {on_false.str_short()}")
    if pred.shape not in ((), on_true.shape):
        raise ShapeError(f"kiln.lax.select: the predicate's shape {pred.shape} must be () or the cases' "
                         f"shape {on_true.shape}")
    return ShapedArray(on_true.shape, on_true.dtype, on_true.weak_type and on_false.weak_type)


select_p = Primitive("select", _select_rule)


def _convert_rule(x: ShapedArray, *, new_dtype: np.dtype, weak_type: bool) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype, weak_type)


convert_p = Primitive("convert_element_type", _convert_rule)


def _identity_rule(x: ShapedArray) -> ShapedArray:
    return x


# Identity whose derivative is zero (kiln.lax.stop_gradient).
stop_gradient_p = Primitive("stop_gradient", _identity_rule)
