"""Emission rules for data-movement primitives."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ..hlo import V, convert, i64_array, i64_attr, op, out_type, wrap_inputs
from ..registry import register
from ..types import ranked_type


@register("broadcast_in_dim")
def _broadcast_in_dim(ctx, eqn, x):
    return op("stablehlo.broadcast_in_dim", [x], out_type(eqn),
              broadcast_dimensions=i64_array(eqn.params["broadcast_dimensions"]))


@register("reshape")
def _reshape(ctx, eqn, x):
    return op("stablehlo.reshape", [x], out_type(eqn))


@register("transpose")
def _transpose(ctx, eqn, x):
    return op("stablehlo.transpose", [x], out_type(eqn), permutation=i64_array(eqn.params["permutation"]))


@register("slice")
def _slice(ctx, eqn, x):
    p = eqn.params
    return op("stablehlo.slice", [x], out_type(eqn), start_indices=i64_array(p["start_indices"]),
              limit_indices=i64_array(p["limit_indices"]), strides=i64_array(p["strides"]))


def unify_indices(eqn, indices, first: int):
    """StableHLO wants all start indices of one integer type: convert them to i32 (or i64)."""
    avals = [a.aval for a in eqn.inputs[first:]]
    target = np.int64 if any(a.dtype.itemsize == 8 for a in avals) else np.int32
    return [convert(V.of(v, a), target).v for v, a in zip(indices, avals)]


@register("dynamic_slice")
def _dynamic_slice(ctx, eqn, x, *indices):
    return op("stablehlo.dynamic_slice", [x, *unify_indices(eqn, indices, 1)], out_type(eqn),
              slice_sizes=i64_array(eqn.params["slice_sizes"]))


@register("dynamic_update_slice")
def _dynamic_update_slice(ctx, eqn, x, update, *indices):
    return op("stablehlo.dynamic_update_slice", [x, update, *unify_indices(eqn, indices, 2)], out_type(eqn))


# XLA's CPU backend aborts the process compiling a concatenate of 2-bit integers (jaxlib 0.10.x): kiln
# concatenates them as 8-bit integers (an exact round trip) instead.
_WIDEN_FOR_CONCAT = {np.dtype(ml_dtypes.int2): np.dtype(np.int8), np.dtype(ml_dtypes.uint2): np.dtype(np.uint8)}


@register("concatenate")
def _concatenate(ctx, eqn, *xs):
    dim = i64_attr(eqn.params["dimension"])
    dtype, shape = eqn.outputs[0].aval.dtype, eqn.outputs[0].aval.shape
    wide = _WIDEN_FOR_CONCAT.get(dtype)
    if wide is None:
        return op("stablehlo.concatenate", xs, out_type(eqn), dimension=dim)
    vs = [convert(v, wide) for v in wrap_inputs(eqn, xs)]
    out = V(op("stablehlo.concatenate", [v.v for v in vs], ranked_type(shape, wide), dimension=dim), shape, wide)
    return convert(out, dtype).v


@register("pad")
def _pad(ctx, eqn, x, value):
    lo, hi, interior = zip(*eqn.params["padding_config"]) if eqn.params["padding_config"] else ((), (), ())
    return op("stablehlo.pad", [x, value], out_type(eqn), edge_padding_low=i64_array(lo),
              edge_padding_high=i64_array(hi), interior_padding=i64_array(interior))


@register("iota")
def _iota(ctx, eqn):
    return op("stablehlo.iota", [], out_type(eqn), iota_dimension=i64_attr(eqn.params["dimension"]))


@register("rev")
def _rev(ctx, eqn, x):
    return op("stablehlo.reverse", [x], out_type(eqn), dimensions=i64_array(eqn.params["dimensions"]))
