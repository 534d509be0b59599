"""Emission rules for frontend/lax/misc.py: ``stablehlo.reduce_precision``,
``stablehlo.optimization_barrier``, ``stablehlo.rng_bit_generator``, the general ``stablehlo.reduce``,
``xla_metadata_value`` (frontend attributes on the operation producing a value), and ``xla_metadata_call``
(frontend/xla_metadata_call.py: a function called through a tagged ``func.call``)."""
from __future__ import annotations

import itertools

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func
from jaxlib.mlir.dialects import stablehlo as hlo
from kiln.frontend.core import passes

from ..hlo import add_frontend_attributes, build_region, const, enclosing, frontend_attributes, i64_array, op
from ..module import MissingLoweringRule
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


@register("xla_metadata_call")
def _xla_metadata_call(ctx, eqn, *args):
    """The body as a private function ``@xla_metadata_call`` (``_0``, ``_1``, ... when taken) before the function
    being built, and a ``func.call`` of it carrying the metadata, as JAX's lowering (XLA copies the attributes onto
    the operations it inlines)."""
    body = eqn.params["ir"].ir
    if passes.has_ordered_effects(body):
        raise MissingLoweringRule(
            "kiln: xla_metadata_call of a function with ordered effects (io_callback(..., ordered=True), "
            "debug.print(..., ordered=True)) is not supported: call the ordered callback outside the tagged "
            "function, or tag the operations with `with set_xla_metadata(...)` instead")
    module, top = enclosing(ir.InsertionPoint.current.block.owner.operation, "builtin.module")
    table = ir.SymbolTable(module)
    names = itertools.chain(["xla_metadata_call"], (f"xla_metadata_call_{i}" for i in itertools.count()))
    name = next(n for n in names if n not in table)
    in_types = [tensor_type(v.aval) for v in body.invars]
    out_types = [tensor_type(a.aval) for a in eqn.outputs]
    with ir.InsertionPoint(top):
        callee = func.FuncOp(name, ir.FunctionType.get(in_types, out_types))
    callee.attributes["sym_visibility"] = ir.StringAttr.get("private")
    entry = callee.add_entry_block()
    with ir.InsertionPoint(entry):
        func.ReturnOp(ctx.emit_body(body, list(entry.arguments)))
    call = func.CallOp(out_types, ir.FlatSymbolRefAttr.get(name), list(args))
    if eqn.params["xla_metadata"]:
        call.operation.attributes["mhlo.frontend_attributes"] = frontend_attributes(eqn.params["xla_metadata"])
    return list(call.results)


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
