"""Emission rules for elementwise primitives."""
from __future__ import annotations

import numpy as np

from ..hlo import V, compare, op, op_rule, out_type, real
from ..registry import register
from ..types import tensor_type

# kiln primitive -> StableHLO op with the same meaning on operands of one type.
_SAME_NAME = {
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "rem": "remainder",
    "pow": "power", "max": "maximum", "min": "minimum", "and": "and", "or": "or", "xor": "xor",
    "not": "not", "shift_left": "shift_left", "shift_right_arithmetic": "shift_right_arithmetic",
    "shift_right_logical": "shift_right_logical", "atan2": "atan2", "neg": "negate", "sign": "sign",
    "abs": "abs", "exp": "exponential", "log": "log", "log1p": "log_plus_one",
    "expm1": "exponential_minus_one", "sin": "sine", "cos": "cosine", "tan": "tan", "tanh": "tanh",
    "logistic": "logistic", "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "floor": "floor",
    "ceil": "ceil", "is_finite": "is_finite",
}


for _kiln, _hlo in _SAME_NAME.items():
    register(_kiln)(op_rule(f"stablehlo.{_hlo}"))


@register("eq", "ne", "lt", "le", "gt", "ge")
def _compare(ctx, eqn, x, y):
    return compare(x, y, eqn.prim.name.upper(), eqn.inputs[0].aval.dtype)


@register("round")
def _round(ctx, eqn, x):
    name = "round_nearest_even" if eqn.params["rounding_method"] == 1 else "round_nearest_afz"
    return op(f"stablehlo.{name}", [x], out_type(eqn))


@register("select")
def _select(ctx, eqn, pred, on_true, on_false):
    return op("stablehlo.select", [pred, on_true, on_false], out_type(eqn))


@register("convert_element_type")
def _convert(ctx, eqn, x):
    src, out = eqn.inputs[0].aval, eqn.outputs[0].aval
    if src.dtype == out.dtype:
        return x
    x = V.of(x, src)
    if out.dtype == np.bool_ and src.dtype != np.bool_:
        # NumPy semantics: nonzero is True (a plain convert would truncate floats first).
        return x.ne(0).v
    if src.dtype.kind == "c" and out.dtype.kind != "c":
        # StableHLO converts complex to real only through the real part, as NumPy does.
        x = real(x)
    return op("stablehlo.convert", [x.v], tensor_type(out))


@register("stop_gradient")
def _stop_gradient(ctx, eqn, x):
    return x
