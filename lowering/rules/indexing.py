"""Emission rules for gather and the scatter family (``stablehlo.gather`` / ``stablehlo.scatter``)."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo
from kiln.frontend.core.tracing import Tracer

from ..hlo import V, build_region, const, convert, i64_array, monoid, op, out_type
from ..registry import register
from ..types import scalar_type


def _indices(eqn, value: ir.Value) -> ir.Value:
    """Unsigned indices as signed 64-bit ones (StableHLO and XLA index with signless integers)."""
    aval = eqn.inputs[1].aval
    return convert(V.of(value, aval), np.int64).v if aval.dtype.kind == "u" else value


@register("gather")
def _gather(ctx, eqn, operand, indices):
    p = eqn.params
    dn = p["dimension_numbers"]
    attr = hlo.GatherDimensionNumbers.get(
        offset_dims=list(dn.offset_dims), collapsed_slice_dims=list(dn.collapsed_slice_dims),
        operand_batching_dims=list(dn.operand_batching_dims),
        start_indices_batching_dims=list(dn.start_indices_batching_dims),
        start_index_map=list(dn.start_index_map), index_vector_dim=eqn.inputs[1].aval.ndim - 1)
    return op("stablehlo.gather", [operand, _indices(eqn, indices)], out_type(eqn),
              dimension_numbers=attr, slice_sizes=i64_array(p["slice_sizes"]),
              indices_are_sorted=ir.BoolAttr.get(bool(p["indices_are_sorted"])))


# The StableHLO op combining the old value and an update (on booleans: or/and, see hlo.monoid).
_COMBINE = {"scatter_add": "add", "scatter_mul": "multiply", "scatter_min": "minimum", "scatter_max": "maximum"}


def _emit_scatter(ctx, eqn, operand, indices, updates, body):
    p = eqn.params
    dn = p["dimension_numbers"]
    attr = hlo.ScatterDimensionNumbers.get(
        update_window_dims=list(dn.update_window_dims), inserted_window_dims=list(dn.inserted_window_dims),
        input_batching_dims=list(dn.operand_batching_dims),
        scatter_indices_batching_dims=list(dn.scatter_indices_batching_dims),
        scattered_dims_to_operand_dims=list(dn.scatter_dims_to_operand_dims),
        index_vector_dim=eqn.inputs[1].aval.ndim - 1)
    scatter = hlo.ScatterOp([out_type(eqn)], [operand], _indices(eqn, indices), [updates], attr,
                            indices_are_sorted=bool(p["indices_are_sorted"]),
                            unique_indices=bool(p["unique_indices"]))
    scalar = scalar_type(eqn.inputs[0].aval.dtype)
    build_region(scatter.regions[0], [scalar, scalar], body)
    return scatter.results[0]


@register("scatter")
def _scatter(ctx, eqn, operand, indices, updates):
    return _emit_scatter(ctx, eqn, operand, indices, updates, lambda old, new: new)


def _make_combining(name: str):
    def rule(ctx, eqn, operand, indices, updates):
        combine = monoid(_COMBINE[name], eqn.inputs[0].aval.dtype)
        return _emit_scatter(ctx, eqn, operand, indices, updates,
                             lambda old, new: op(f"stablehlo.{combine}", [old, new], old.type))
    return rule


for _name in _COMBINE:
    register(_name)(_make_combining(_name))


@register("scatter_apply")
def _scatter_apply(ctx, eqn, operand, indices, updates):
    closed = eqn.params["update_ir"]

    def body(old, new):
        consts = []
        for c in closed.consts:
            if isinstance(c, Tracer):  # checked when tracing; kept as a guard
                raise TypeError("kiln.lax.scatter_apply: func closes over a traced value")
            c = np.asarray(c)
            consts.append(const(c, c.dtype).v)
        (out,) = ctx.emit_ir(closed.ir, consts + [old])
        return out

    return _emit_scatter(ctx, eqn, operand, indices, updates, body)
