"""Emission rule for ``reduce_window`` (``stablehlo.reduce_window`` with a monoid body)."""
from __future__ import annotations

from jaxlib.mlir import ir

from ..hlo import build_region, i64_array, i64_pairs, monoid, op, out_type
from ..registry import register
from ..types import scalar_type

_COMBINE = {"add": "add", "mul": "multiply", "max": "maximum", "min": "minimum", "and": "and", "or": "or"}


@register("reduce_window")
def _reduce_window(ctx, eqn, x, init):
    p = eqn.params
    dtype = eqn.inputs[0].aval.dtype
    combine = monoid(_COMBINE[p["computation"]], dtype)
    scalar = scalar_type(dtype)
    rw = ir.Operation.create(
        "stablehlo.reduce_window", results=[out_type(eqn)], operands=[x, init],
        attributes={"window_dimensions": i64_array(p["window_dimensions"]),
                    "window_strides": i64_array(p["window_strides"]),
                    "base_dilations": i64_array(p["base_dilation"]),
                    "window_dilations": i64_array(p["window_dilation"]),
                    "padding": i64_pairs(p["padding"])},
        regions=1)
    build_region(rw.regions[0], [scalar, scalar], lambda a, b: op(f"stablehlo.{combine}", [a, b], scalar))
    return rw.result
