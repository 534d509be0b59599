"""Emission rules for elementwise primitives."""
from __future__ import annotations

import numpy as np

from ..hlo import V, compare, imag, op, op_rule, out_type, real, select, unary
from ..registry import register
from ..types import tensor_type

# kiln primitive -> StableHLO op with the same meaning on operands of one type.
_SAME_NAME = {
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "rem": "remainder",
    "pow": "power", "max": "maximum", "min": "minimum", "and": "and", "or": "or", "xor": "xor",
    "not": "not", "shift_left": "shift_left", "shift_right_arithmetic": "shift_right_arithmetic",
    "shift_right_logical": "shift_right_logical", "atan2": "atan2", "neg": "negate", "sign": "sign",
    "abs": "abs", "exp": "exponential", "log": "log", "log1p": "log_plus_one",
    "expm1": "exponential_minus_one", "tan": "tan", "tanh": "tanh",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "floor": "floor",
    "ceil": "ceil", "is_finite": "is_finite",
}


for _kiln, _hlo in _SAME_NAME.items():
    register(_kiln)(op_rule(f"stablehlo.{_hlo}"))
register("clamp")(op_rule("stablehlo.clamp"))  # (operands min, x, max, as StableHLO's)


def _sin_cos_complex(x: V, cosine: bool) -> V:
    """sin or cos of a complex ``x`` from real operations, JAX's formulas op for op (XLA's own complex
    sine/cosine round differently): with ``a + ib = x``, ``sin(a) cosh(b) + i cos(a) sinh(b)`` and
    ``cos(a) cosh(b) - i sin(a) sinh(b)``, sinh and cosh through expm1 (no cancellation for a small b),
    and a zero imaginary (sin: real) part where ``a`` is zero (no NaN from inf * 0)."""
    a, b = real(x), imag(x)
    a_is_zero = a.eq(0)
    sn, cs = unary("sine", a), unary("cosine", a)
    e1m, e2m = unary("exponential_minus_one", b), unary("exponential_minus_one", -b)
    snh, csh = (e1m - e2m) / 2, (e1m + e2m + 2) / 2
    if cosine:
        re, im = cs * csh, -sn * snh
        re0, im0 = re, select(a_is_zero, 0, im)
    else:
        re, im = sn * csh, cs * snh
        re0, im0 = select(a_is_zero, 0, re), im
    return op("stablehlo.complex", [re0.v, im0.v], x.type)


@register("sin", "cos")
def _sin_cos(ctx, eqn, x):
    aval = eqn.inputs[0].aval
    if aval.dtype.kind == "c":
        return _sin_cos_complex(V.of(x, aval), eqn.prim.name == "cos")
    return op(f"stablehlo.{'cosine' if eqn.prim.name == 'cos' else 'sine'}", [x], out_type(eqn))


@register("logistic")
def _logistic(ctx, eqn, x):
    """``1 / (1 + exp(-x))``, JAX's lowering op for op. XLA's own expansion of ``stablehlo.logistic`` rounds
    bfloat16 differently (5.28125 gives 0.996094 where JAX's program gives 0.992188); float32 agrees."""
    x = V.of(x, eqn.inputs[0].aval)
    return (1 / (1 + unary("exponential", -x))).v


@register("square")
def _square(ctx, eqn, x):
    """JAX's lowering: ``chlo.square`` for floats and complex numbers (XLA legalizes it to ``x * x``; for complex
    to ``complex((re - im) * (re + im), re * im * 2)``, which rounds unlike a complex product), ``x * x`` for
    integers."""
    if eqn.inputs[0].aval.dtype.kind in "iu":
        return op("stablehlo.multiply", [x, x], out_type(eqn))
    return op("chlo.square", [x], out_type(eqn))


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
