"""Emission rules for frontend/lax/special.py: CHLO and StableHLO elementwise ops.

CHLO ops (``chlo.erf``, ``chlo.lgamma``, ...) are emitted as they are: XLA's compile entry point
legalizes them to HLO (tests/lax/test_special.py compiles every one of them).
"""
from __future__ import annotations

import operator

import numpy as np
from kiln.frontend.core.folding import square_and_multiply

from ..hlo import V, convert, full, op, op_rule, out_type
from ..registry import register
from ..types import ranked_type

_OPS = {
    "asin": "chlo.asin", "acos": "chlo.acos", "atan": "chlo.atan", "sinh": "chlo.sinh",
    "cosh": "chlo.cosh", "asinh": "chlo.asinh", "acosh": "chlo.acosh", "atanh": "chlo.atanh",
    "erf": "chlo.erf", "erfc": "chlo.erfc", "erf_inv": "chlo.erf_inv", "lgamma": "chlo.lgamma",
    "digamma": "chlo.digamma", "nextafter": "chlo.next_after",
    "population_count": "stablehlo.popcnt", "clz": "stablehlo.count_leading_zeros",
    "real": "stablehlo.real", "imag": "stablehlo.imag", "complex": "stablehlo.complex",
    "bitcast_convert_type": "stablehlo.bitcast_convert",
}


for _kiln, _name in _OPS.items():
    register(_kiln)(op_rule(_name))


@register("conj")
def _conj(ctx, eqn, x):
    """complex(real(x), -imag(x)): StableHLO has no conjugate (XLA's HLO ``conj`` is what this becomes)."""
    aval = eqn.inputs[0].aval
    part = ranked_type(aval.shape, np.finfo(aval.dtype).dtype)  # the real dtype of the complex one
    re, im = op("stablehlo.real", [x], part), op("stablehlo.imag", [x], part)
    return op("stablehlo.complex", [re, op("stablehlo.negate", [im], part)], out_type(eqn))


@register("integer_pow")
def _integer_pow(ctx, eqn, x):
    """Square and multiply (JAX's order of products, the one constant folding uses), then 1 / acc for y < 0."""
    aval, y = eqn.inputs[0].aval, eqn.params["y"]
    if y == 0:
        return full(1, aval.shape, aval.dtype).v
    acc = square_and_multiply(V.of(x, aval), abs(y), operator.mul)
    return (1 / acc).v if y < 0 else acc.v


@register("mulhi")
def _mulhi(ctx, eqn, x, y):
    """The operands widened to twice their width (XLA has 64-bit integers whatever kiln's x64 flag), multiplied,
    and the product shifted down by the width (arithmetically for signed integers)."""
    aval = eqn.inputs[0].aval
    bits = 8 * aval.dtype.itemsize
    wide = np.dtype(f"{aval.dtype.kind}{2 * aval.dtype.itemsize}")
    prod = convert(V.of(x, aval), wide) * convert(V.of(y, aval), wide)
    shift = "stablehlo.shift_right_arithmetic" if aval.dtype.kind == "i" else "stablehlo.shift_right_logical"
    high = V(op(shift, [prod.v, full(bits, aval.shape, wide).v], prod.type), aval.shape, wide)
    return convert(high, aval.dtype).v
