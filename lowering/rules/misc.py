"""Emission rules for frontend/lax/misc.py: ``stablehlo.reduce_precision``,
``stablehlo.optimization_barrier``, ``stablehlo.rng_bit_generator``, the general ``stablehlo.reduce``, and
``xla_metadata_value`` (frontend attributes on the operation producing a value)."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from ..hlo import add_frontend_attributes, build_region, const, frontend_attributes, i64_array, op
from ..registry import register
from ..types import element_type, tensor_type


def _i32(v: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(v))


@register("reduce_precision")
def _reduce_precision(ctx, eqn, x):
    p = eqn.params
    return op("stablehlo.reduce_precision", [x], tensor_type(eqn.outputs[0].aval),
              exponent_bits=_i32(p["exponent_bits"]), mantissa_bits=_i32(p["mantissa_bits"]))


@register("xla_metadata_value")
def _xla_metadata_value(ctx, eqn, x):
    # (JAX's rule: the operation producing the value gets the metadata; an input of the program has none)
    owner = x.owner
    if not isinstance(owner, ir.Block):
        add_frontend_attributes(owner.operation, frontend_attributes(eqn.params["xla_metadata_kvs"]))
    return x


@register("optimization_barrier")
def _optimization_barrier(ctx, eqn, *xs):
    return op("stablehlo.optimization_barrier", xs, [x.type for x in xs])


_ALGORITHMS = {0: "DEFAULT", 1: "THREE_FRY", 2: "PHILOX"}


@register("rng_bit_generator")
def _rng_bit_generator(ctx, eqn, key):
    key_aval, bits_aval = eqn.outputs[0].aval, eqn.outputs[1].aval
    u64 = ir.IntegerType.get_unsigned(64)
    state_type = ir.RankedTensorType.get([2], u64)
    if key_aval.dtype == np.uint32:  # XLA's state is u64[2]: view the u32[4] key as such
        pairs = op("stablehlo.reshape", [key], ir.RankedTensorType.get([2, 2], element_type(np.uint32)))
        key = op("stablehlo.bitcast_convert", [pairs], state_type)
    new_state, bits = op("stablehlo.rng_bit_generator", [key], [state_type, tensor_type(bits_aval)],
                         rng_algorithm=hlo.RngAlgorithmAttr.get(_ALGORITHMS[int(eqn.params["algorithm"])]))
    if key_aval.dtype == np.uint32:
        pairs = op("stablehlo.bitcast_convert", [new_state], ir.RankedTensorType.get([2, 2], element_type(np.uint32)))
        new_state = op("stablehlo.reshape", [pairs], tensor_type(key_aval))
    return [new_state, bits]


@register("reduce")
def _reduce(ctx, eqn, *args):
    n = len(args) // 2
    closed = eqn.params["computation"]
    scalar_types = [ir.RankedTensorType.get([], element_type(v.aval.dtype)) for v in eqn.inputs[:n]]

    def body(*block_args):  # constants inside the region: it may not read values from outside
        consts = [const(np.asarray(c), np.asarray(c).dtype).v for c in closed.consts]
        return ctx.emit_ir(closed.ir, consts + list(block_args))
    red = ir.Operation.create("stablehlo.reduce", results=[tensor_type(v.aval) for v in eqn.outputs],
                              operands=list(args), attributes={"dimensions": i64_array(eqn.params["dimensions"])},
                              regions=1)
    build_region(red.regions[0], scalar_types * 2, body)
    return list(red.results)


@register("platform_index")
def _platform_index(ctx, eqn):
    platforms, has_default = eqn.params["platforms"], eqn.params["has_default"]
    for i, names in enumerate(platforms):
        if ctx.platform in names:
            return const(i, np.int32).v
    if has_default:
        return const(len(platforms), np.int32).v
    from ..module import LoweringError
    raise LoweringError(f"kiln.lax.platform_dependent: no branch for platform {ctx.platform!r} (branches for "
                        f"{sorted({n for names in platforms for n in names})}) and no default")
