"""Emission rules of the control-flow primitives: cond -> stablehlo.case, loops -> stablehlo.while."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir

from ..hlo import V, build_region, const, dyn_slice, dyn_update, full, reshape, while_values
from ..registry import register
from ..types import tensor_type


@register("cond")
def _cond(ctx, eqn, index, *operands):
    branches = eqn.params["branches"]
    out_types = [tensor_type(v.aval) for v in eqn.outputs]
    case = ir.Operation.create("stablehlo.case", results=out_types, operands=[index], regions=len(branches))
    for region, branch in zip(case.regions, branches):
        build_region(region, [], lambda: ctx.emit_body(branch.ir, list(operands)))
    return list(case.results)


def _emit_scan_steps(ctx, eqn, step_index: V, consts, carry, xs, ys):
    """Emit one scan step at (traced i32) ``step_index``; returns the new carry and ys accumulators."""
    p = eqn.params
    body, length = p["body"].ir, p["length"]
    idx = (length - 1) - step_index if p["reverse"] else step_index
    x_slices = []
    for x, var in zip(xs, eqn.inputs[p["num_consts"] + p["num_carry"]:]):
        x = V.of(x, var.aval)
        zero = const(0, np.int32)
        x_slices.append(reshape(dyn_slice(x, [idx] + [zero] * (x.ndim - 1), (1, *x.shape[1:])), x.shape[1:]).v)
    outs = ctx.emit_body(body, list(consts) + list(carry) + x_slices)
    nk = p["num_carry"]
    new_carry, y_vals = outs[:nk], outs[nk:]
    new_ys = []
    for acc, y, var in zip(ys, y_vals, eqn.outputs[nk:]):
        acc = V.of(acc, var.aval)
        y1 = reshape(V(y, acc.shape[1:], acc.dtype), (1, *acc.shape[1:]))
        zero = const(0, np.int32)
        new_ys.append(dyn_update(acc, y1, [idx] + [zero] * (acc.ndim - 1)).v)
    return new_carry, new_ys


@register("scan")
def _scan(ctx, eqn, *args):
    p = eqn.params
    nc, nk, length, unroll = p["num_consts"], p["num_carry"], p["length"], max(1, p["unroll"])
    consts, carry, xs = list(args[:nc]), list(args[nc:nc + nk]), list(args[nc + nk:])
    ys = [full(0, v.aval.shape, v.aval.dtype).v for v in eqn.outputs[nk:]]
    trips, rem = divmod(length, unroll)
    if trips > 0 and unroll < length:
        def cond(i, *_):
            return (V(i, (), np.int32) < trips).v

        def body(i, *state):
            i = V(i, (), np.int32)
            b_consts, b_carry = state[:nc], state[nc:nc + nk]
            b_xs, b_ys = state[nc + nk:nc + nk + len(xs)], state[nc + nk + len(xs):]
            base = i * unroll
            for u in range(unroll):
                b_carry, b_ys = _emit_scan_steps(ctx, eqn, base + u if u else base, b_consts, b_carry, b_xs, b_ys)
            return [(i + 1).v, *b_consts, *b_carry, *b_xs, *b_ys]

        res = while_values([const(0, np.int32).v, *consts, *carry, *xs, *ys], cond, body)
        carry, ys = res[1 + nc:1 + nc + nk], res[1 + nc + nk + len(xs):]
        start = trips * unroll
    else:
        start, rem = 0, length  # fully unrolled
    for s in range(start, start + rem):
        carry, ys = _emit_scan_steps(ctx, eqn, const(s, np.int32), consts, carry, xs, ys)
    return list(carry) + list(ys)


@register("while")
def _while(ctx, eqn, *args):
    """Loop state: cond consts, body consts, carry (the consts pass through unchanged)."""
    p = eqn.params
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]

    def cond(*state):
        return ctx.emit_body(p["cond"].ir, [*state[:ncc], *state[ncc + nbc:]])

    def body(*state):
        return [*state[:ncc + nbc], *ctx.emit_body(p["body"].ir, list(state[ncc:]))]

    return while_values(list(args), cond, body)[ncc + nbc:]
