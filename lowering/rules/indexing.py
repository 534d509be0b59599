"""Emission rules for gather and the scatter family (``stablehlo.gather`` / ``stablehlo.scatter``)."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo
from kiln.frontend.core.tracing import Tracer

from ..module import op
from ..registry import register
from ..types import element_type, tensor_type


def _indices(eqn, value: ir.Value) -> ir.Value:
    """Unsigned indices as signed 64-bit ones (StableHLO and XLA index with signless integers)."""
    aval = eqn.inputs[1].aval
    if aval.dtype.kind == "u":
        value = op("stablehlo.convert", [value], tensor_type(aval.update(dtype=np.dtype(np.int64))))
    return value


@register("gather")
def _gather(ctx, eqn, operand, indices):
    p = eqn.params
    dn = p["dimension_numbers"]
    attr = hlo.GatherDimensionNumbers.get(
        offset_dims=list(dn.offset_dims), collapsed_slice_dims=list(dn.collapsed_slice_dims),
        operand_batching_dims=list(dn.operand_batching_dims),
        start_indices_batching_dims=list(dn.start_indices_batching_dims),
        start_index_map=list(dn.start_index_map), index_vector_dim=eqn.inputs[1].aval.ndim - 1)
    return op("stablehlo.gather", [operand, _indices(eqn, indices)], tensor_type(eqn.outputs[0].aval),
              dimension_numbers=attr, slice_sizes=ir.DenseI64ArrayAttr.get(list(p["slice_sizes"])),
              indices_are_sorted=ir.BoolAttr.get(bool(p["indices_are_sorted"])))


def _combiner(name: str, dtype: np.dtype):
    """The StableHLO op combining the old value and an update (booleans: or/and)."""
    if dtype == np.bool_:
        return {"scatter_add": "or", "scatter_mul": "and", "scatter_max": "or", "scatter_min": "and"}[name]
    return {"scatter_add": "add", "scatter_mul": "multiply", "scatter_max": "maximum",
            "scatter_min": "minimum"}[name]


def _emit_scatter(ctx, eqn, operand, indices, updates, body):
    p = eqn.params
    dn = p["dimension_numbers"]
    attr = hlo.ScatterDimensionNumbers.get(
        update_window_dims=list(dn.update_window_dims), inserted_window_dims=list(dn.inserted_window_dims),
        input_batching_dims=list(dn.operand_batching_dims),
        scatter_indices_batching_dims=list(dn.scatter_indices_batching_dims),
        scattered_dims_to_operand_dims=list(dn.scatter_dims_to_operand_dims),
        index_vector_dim=eqn.inputs[1].aval.ndim - 1)
    scatter = hlo.ScatterOp([tensor_type(eqn.outputs[0].aval)], [operand], _indices(eqn, indices), [updates], attr,
                            indices_are_sorted=bool(p["indices_are_sorted"]),
                            unique_indices=bool(p["unique_indices"]))
    scalar = ir.RankedTensorType.get([], element_type(eqn.inputs[0].aval.dtype))
    block = scatter.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        hlo.ReturnOp([body(*block.arguments)])
    return scatter.results[0]


@register("scatter")
def _scatter(ctx, eqn, operand, indices, updates):
    return _emit_scatter(ctx, eqn, operand, indices, updates, lambda old, new: new)


def _make_combining(name: str):
    def rule(ctx, eqn, operand, indices, updates):
        dtype = eqn.inputs[0].aval.dtype
        combine = _combiner(name, dtype)
        return _emit_scatter(ctx, eqn, operand, indices, updates,
                             lambda old, new: op(f"stablehlo.{combine}", [old, new], old.type))
    return rule


for _name in ("scatter_add", "scatter_mul", "scatter_min", "scatter_max"):
    register(_name)(_make_combining(_name))


@register("scatter_apply")
def _scatter_apply(ctx, eqn, operand, indices, updates):
    closed = eqn.params["update_ir"]

    def body(old, new):
        consts = []
        for c in closed.consts:
            if isinstance(c, Tracer):  # checked when tracing; kept as a guard
                raise TypeError("kiln.lax.scatter_apply: func closes over a traced value")
            consts.append(ctx.constant(np.asarray(c), np.asarray(c).dtype))
        (out,) = ctx.emit_ir(closed.ir, consts + [old])
        return out

    return _emit_scatter(ctx, eqn, operand, indices, updates, body)
