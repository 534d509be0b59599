"""Emission rule for ``reduce_window`` (``stablehlo.reduce_window`` with a monoid body)."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir

from ..module import op
from ..registry import register
from ..types import element_type, tensor_type

_COMBINE = {"add": "add", "mul": "multiply", "max": "maximum", "min": "minimum", "and": "and", "or": "or"}


def i64_pairs(pairs) -> ir.DenseIntElementsAttr:
    """A ``tensor<Nx2xi64>`` attribute of (low, high) pairs (``padding`` of windowed ops)."""
    array = np.asarray(pairs, np.int64).reshape(len(pairs), 2)
    return ir.DenseIntElementsAttr.get(array, type=ir.RankedTensorType.get(
        [len(pairs), 2], ir.IntegerType.get_signless(64)))


def i64_array(values) -> ir.DenseI64ArrayAttr:
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


@register("reduce_window")
def _reduce_window(ctx, eqn, x, init):
    p = eqn.params
    dtype = eqn.inputs[0].aval.dtype
    combine = _COMBINE[p["computation"]]
    if dtype == np.bool_ and combine in ("maximum", "minimum"):
        combine = "or" if combine == "maximum" else "and"
    scalar = ir.RankedTensorType.get([], element_type(dtype))
    rw = ir.Operation.create(
        "stablehlo.reduce_window", results=[tensor_type(eqn.outputs[0].aval)], operands=[x, init],
        attributes={"window_dimensions": i64_array(p["window_dimensions"]),
                    "window_strides": i64_array(p["window_strides"]),
                    "base_dilations": i64_array(p["base_dilation"]),
                    "window_dilations": i64_array(p["window_dilation"]),
                    "padding": i64_pairs(p["padding"])},
        regions=1)
    block = rw.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        ir.Operation.create("stablehlo.return", operands=[op(f"stablehlo.{combine}", list(block.arguments),
                                                             scalar)])
    return rw.result
