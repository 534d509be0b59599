"""Emission rules for data-movement primitives."""
from __future__ import annotations

from jaxlib.mlir import ir

from ..module import op
from ..registry import register
from ..types import tensor_type


def _i64_array(values) -> ir.DenseI64ArrayAttr:
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def _i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


def _out(eqn):
    return tensor_type(eqn.outputs[0].aval)


@register("broadcast_in_dim")
def _broadcast_in_dim(ctx, eqn, x):
    return op("stablehlo.broadcast_in_dim", [x], _out(eqn),
              broadcast_dimensions=_i64_array(eqn.params["broadcast_dimensions"]))


@register("reshape")
def _reshape(ctx, eqn, x):
    return op("stablehlo.reshape", [x], _out(eqn))


@register("transpose")
def _transpose(ctx, eqn, x):
    return op("stablehlo.transpose", [x], _out(eqn), permutation=_i64_array(eqn.params["permutation"]))


@register("slice")
def _slice(ctx, eqn, x):
    p = eqn.params
    return op("stablehlo.slice", [x], _out(eqn), start_indices=_i64_array(p["start_indices"]),
              limit_indices=_i64_array(p["limit_indices"]), strides=_i64_array(p["strides"]))


def unify_indices(ctx, eqn, indices, first: int):
    """StableHLO wants all start indices of one integer type: convert them to i32 (or i64)."""
    avals = [a.aval for a in eqn.inputs[first:]]
    target = "int64" if any(a.dtype.itemsize == 8 for a in avals) else "int32"
    out = []
    for v, a in zip(indices, avals):
        if a.dtype.name != target:
            v = op("stablehlo.convert", [v], tensor_type(a.update(dtype=target)))
        out.append(v)
    return out


@register("dynamic_slice")
def _dynamic_slice(ctx, eqn, x, *indices):
    return op("stablehlo.dynamic_slice", [x, *unify_indices(ctx, eqn, indices, 1)], _out(eqn),
              slice_sizes=_i64_array(eqn.params["slice_sizes"]))


@register("dynamic_update_slice")
def _dynamic_update_slice(ctx, eqn, x, update, *indices):
    return op("stablehlo.dynamic_update_slice", [x, update, *unify_indices(ctx, eqn, indices, 2)], _out(eqn))


@register("concatenate")
def _concatenate(ctx, eqn, *xs):
    return op("stablehlo.concatenate", xs, _out(eqn), dimension=_i64(eqn.params["dimension"]))


@register("pad")
def _pad(ctx, eqn, x, value):
    lo, hi, interior = zip(*eqn.params["padding_config"]) if eqn.params["padding_config"] else ((), (), ())
    return op("stablehlo.pad", [x, value], _out(eqn), edge_padding_low=_i64_array(lo),
              edge_padding_high=_i64_array(hi), interior_padding=_i64_array(interior))


@register("iota")
def _iota(ctx, eqn):
    return op("stablehlo.iota", [], _out(eqn), iota_dimension=_i64(eqn.params["dimension"]))


@register("rev")
def _rev(ctx, eqn, x):
    return op("stablehlo.reverse", [x], _out(eqn), dimensions=_i64_array(eqn.params["dimensions"]))
