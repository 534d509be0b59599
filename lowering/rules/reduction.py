"""Emission rules for reductions (stablehlo.reduce with a body region) and dot_general."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..module import op
from ..registry import register
from ..types import tensor_type
from .elementwise import compare


def reduce(ctx, operands: Sequence[ir.Value], inits: Sequence[ir.Value], axes: Sequence[int],
           out_types: Sequence[ir.Type], scalar_types: Sequence[ir.Type],
           body: Callable[..., Sequence[ir.Value]]) -> list[ir.Value]:
    """``stablehlo.reduce`` over ``axes``; ``body(*accumulators, *elements)`` returns the new accumulators."""
    red = ir.Operation.create("stablehlo.reduce", results=list(out_types), operands=[*operands, *inits],
                              attributes={"dimensions": ir.DenseI64ArrayAttr.get(list(axes))}, regions=1)
    block = red.regions[0].blocks.append(*scalar_types, *scalar_types)
    with ir.InsertionPoint(block):
        ir.Operation.create("stablehlo.return", operands=list(body(*block.arguments)))
    return list(red.results)


def _scalar_type(dtype) -> ir.Type:
    from ..types import element_type
    return ir.RankedTensorType.get([], element_type(dtype))


def _identity(name: str, dtype: np.dtype):
    if name == "reduce_sum" or name == "reduce_or":
        return 0
    if name == "reduce_prod":
        return 1
    if name == "reduce_and":
        return True if dtype == np.bool_ else -1 if dtype.kind == "i" else np.iinfo(dtype).max
    kind = "f" if dtype.kind == "V" else dtype.kind
    if kind == "f":
        return -np.inf if name == "reduce_max" else np.inf
    if kind == "b":
        return name == "reduce_min"
    info = np.iinfo(dtype)
    return info.min if name == "reduce_max" else info.max


_COMBINE = {"reduce_sum": "add", "reduce_prod": "multiply", "reduce_max": "maximum",
            "reduce_min": "minimum", "reduce_and": "and", "reduce_or": "or"}


def _make_reduce(name: str):
    def rule(ctx, eqn, x):
        dtype = eqn.inputs[0].aval.dtype
        combine = _COMBINE[name]
        if dtype == np.bool_ and combine in ("maximum", "minimum"):
            combine = "or" if combine == "maximum" else "and"
        scalar = _scalar_type(dtype)
        init = ctx.constant(_identity(name, dtype), dtype)
        return reduce(ctx, [x], [init], eqn.params["axes"], [tensor_type(eqn.outputs[0].aval)], [scalar],
                      lambda acc, el: [op(f"stablehlo.{combine}", [acc, el], scalar)])
    return rule


for _name in _COMBINE:
    register(_name)(_make_reduce(_name))


def _make_arg_reduce(direction: str):
    """argmax/argmin: reduce (value, index) pairs; NaN wins, ties go to the lower index."""
    def rule(ctx, eqn, x):
        aval, out = eqn.inputs[0].aval, eqn.outputs[0].aval
        axis, index_dtype = eqn.params["axis"], eqn.params["index_dtype"]
        idx = op("stablehlo.iota", [], tensor_type(aval.update(dtype=index_dtype)),
                 iota_dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), axis))
        vs, is_ = _scalar_type(aval.dtype), _scalar_type(index_dtype)
        is_float = aval.dtype.kind in "fV"
        init_v = ctx.constant(_identity("reduce_max" if direction == "GT" else "reduce_min", aval.dtype),
                              aval.dtype)
        init_i = ctx.constant(0, index_dtype)

        def body(acc_v, acc_i, v, i):
            better = compare(v, acc_v, direction, aval.dtype)
            if is_float:  # NaN beats everything (NumPy returns the first NaN's index)
                v_nan = compare(v, v, "NE", aval.dtype)
                acc_nan = compare(acc_v, acc_v, "NE", aval.dtype)
                better = op("stablehlo.or", [better, op("stablehlo.and", [v_nan, op(
                    "stablehlo.not", [acc_nan], acc_nan.type)], v_nan.type)], v_nan.type)
                equal = op("stablehlo.or", [compare(v, acc_v, "EQ", aval.dtype),
                                            op("stablehlo.and", [v_nan, acc_nan], v_nan.type)], v_nan.type)
            else:
                equal = compare(v, acc_v, "EQ", aval.dtype)
            lower = compare(i, acc_i, "LT", np.dtype(index_dtype))
            take = op("stablehlo.or", [better, op("stablehlo.and", [equal, lower], lower.type)], lower.type)
            return [op("stablehlo.select", [take, v, acc_v], vs), op("stablehlo.select", [take, i, acc_i], is_)]

        results = reduce(ctx, [x, idx], [init_v, init_i], [axis],
                         [tensor_type(out.update(dtype=aval.dtype)), tensor_type(out)], [vs, is_], body)
        return results[1]
    return rule


register("argmax")(_make_arg_reduce("GT"))
register("argmin")(_make_arg_reduce("LT"))


@register("dot_general")
def _dot_general(ctx, eqn, x, y):
    (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
    dn = hlo.DotDimensionNumbers.get(lhs_batching_dimensions=list(xb), rhs_batching_dimensions=list(yb),
                                     lhs_contracting_dimensions=list(xc), rhs_contracting_dimensions=list(yc))
    return op("stablehlo.dot_general", [x, y], tensor_type(eqn.outputs[0].aval), dot_dimension_numbers=dn)
