"""Emission rules of the control-flow primitives: cond -> stablehlo.case, loops -> stablehlo.while."""
from __future__ import annotations

from jaxlib.mlir import ir

from ..registry import register
from ..types import tensor_type


@register("cond")
def _cond(ctx, eqn, index, *operands):
    branches = eqn.params["branches"]
    out_types = [tensor_type(v.aval) for v in eqn.outputs]
    case = ir.Operation.create("stablehlo.case", results=out_types, operands=[index], regions=len(branches))
    for region, branch in zip(case.regions, branches):
        block = region.blocks.append()
        with ir.InsertionPoint(block):
            outs = ctx.emit_ir(branch.ir, list(operands))
            ir.Operation.create("stablehlo.return", operands=outs)
    return list(case.results)
