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
            outs = ctx.emit_body(branch.ir, list(operands))
            ir.Operation.create("stablehlo.return", operands=outs)
    return list(case.results)


def _scalar_i32(ctx, value: int):
    return ctx.constant(value, "int32")


def _op(name, operands, result_type, **attrs):
    return ir.Operation.create(name, results=[result_type], operands=list(operands), attributes=attrs).result


def _emit_scan_steps(ctx, eqn, step_index, consts, carry, xs, ys):
    """Emit one scan step at (traced i32) ``step_index``; returns the new carry and ys accumulators."""
    p = eqn.params
    body, length = p["body"].ir, p["length"]
    idx = step_index
    if p["reverse"]:
        idx = _op("stablehlo.subtract", [_scalar_i32(ctx, length - 1), idx], idx.type)
    x_slices = []
    for x, var in zip(xs, eqn.inputs[p["num_consts"] + p["num_carry"]:]):
        shape = var.aval.shape
        zero = _scalar_i32(ctx, 0)
        sl_type = tensor_type(var.aval.update(shape=(1,) + shape[1:]))
        sl = _op("stablehlo.dynamic_slice", [x, idx] + [zero] * (len(shape) - 1), sl_type,
                 slice_sizes=ir.DenseI64ArrayAttr.get([1] + list(shape[1:])))
        x_slices.append(_op("stablehlo.reshape", [sl], tensor_type(var.aval.update(shape=shape[1:]))))
    outs = ctx.emit_body(body, list(consts) + list(carry) + x_slices)
    nk = p["num_carry"]
    new_carry, y_vals = outs[:nk], outs[nk:]
    new_ys = []
    for acc, y, var in zip(ys, y_vals, eqn.outputs[nk:]):
        shape = var.aval.shape
        y1 = _op("stablehlo.reshape", [y], tensor_type(var.aval.update(shape=(1,) + shape[1:])))
        zero = _scalar_i32(ctx, 0)
        new_ys.append(_op("stablehlo.dynamic_update_slice", [acc, y1, idx] + [zero] * (len(shape) - 1),
                          tensor_type(var.aval)))
    return new_carry, new_ys


@register("scan")
def _scan(ctx, eqn, *args):
    p = eqn.params
    nc, nk, length, unroll = p["num_consts"], p["num_carry"], p["length"], max(1, p["unroll"])
    consts, carry, xs = list(args[:nc]), list(args[nc:nc + nk]), list(args[nc + nk:])
    ys = [ctx.full(0, v.aval) for v in eqn.outputs[nk:]]
    trips, rem = divmod(length, unroll)
    if trips > 0 and unroll < length:
        i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
        state = [_scalar_i32(ctx, 0)] + consts + carry + xs + ys
        loop = ir.Operation.create("stablehlo.while", results=[v.type for v in state], operands=state, regions=2)
        cond_block = loop.regions[0].blocks.append(*[v.type for v in state])
        with ir.InsertionPoint(cond_block):
            import numpy as np

            from .elementwise import compare
            pred = compare(cond_block.arguments[0], _scalar_i32(ctx, trips), "LT", np.dtype("int32"))
            ir.Operation.create("stablehlo.return", operands=[pred])
        body_block = loop.regions[1].blocks.append(*[v.type for v in state])
        with ir.InsertionPoint(body_block):
            a = list(body_block.arguments)
            i, b_consts, b_carry = a[0], a[1:1 + nc], a[1 + nc:1 + nc + nk]
            b_xs, b_ys = a[1 + nc + nk:1 + nc + nk + len(xs)], a[1 + nc + nk + len(xs):]
            base = _op("stablehlo.multiply", [i, _scalar_i32(ctx, unroll)], i32)
            for u in range(unroll):
                step = _op("stablehlo.add", [base, _scalar_i32(ctx, u)], i32) if u else base
                b_carry, b_ys = _emit_scan_steps(ctx, eqn, step, b_consts, b_carry, b_xs, b_ys)
            nxt = _op("stablehlo.add", [i, _scalar_i32(ctx, 1)], i32)
            ir.Operation.create("stablehlo.return", operands=[nxt] + list(b_consts) + list(b_carry) + list(b_xs)
                                + list(b_ys))
        res = list(loop.results)
        carry, ys = res[1 + nc:1 + nc + nk], res[1 + nc + nk + len(xs):]
        start = trips * unroll
    else:
        start, rem = 0, length  # fully unrolled
    for s in range(start, start + rem):
        carry, ys = _emit_scan_steps(ctx, eqn, _scalar_i32(ctx, s), consts, carry, xs, ys)
    return list(carry) + list(ys)


@register("while")
def _while(ctx, eqn, *args):
    """Loop state: cond consts, body consts, carry (the consts pass through unchanged)."""
    p = eqn.params
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    state = list(args)
    loop = ir.Operation.create("stablehlo.while", results=[v.type for v in state], operands=state, regions=2)
    cond_block = loop.regions[0].blocks.append(*[v.type for v in state])
    with ir.InsertionPoint(cond_block):
        a = list(cond_block.arguments)
        (pred,) = ctx.emit_body(p["cond"].ir, a[:ncc] + a[ncc + nbc:])
        ir.Operation.create("stablehlo.return", operands=[pred])
    body_block = loop.regions[1].blocks.append(*[v.type for v in state])
    with ir.InsertionPoint(body_block):
        a = list(body_block.arguments)
        new = ctx.emit_body(p["body"].ir, a[ncc:])
        ir.Operation.create("stablehlo.return", operands=a[:ncc + nbc] + list(new))
    return list(loop.results)[ncc + nbc:]
