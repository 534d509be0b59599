"""Emission rules of the control-flow primitives: cond -> stablehlo.case, loops -> stablehlo.while.

A body with ordered effects (host callbacks with ``ordered=True``) threads the module's token: the loop
carries it, a branch takes it from outside and returns it (see rules/callbacks.py)."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from kiln.frontend.core import passes

from ..hlo import V, build_region, const, dyn_slice, dyn_update, full, reshape, while_values
from ..registry import register
from ..types import tensor_type


@register("cond")
def _cond(ctx, eqn, index, *operands):
    branches = eqn.params["branches"]
    out_types = [tensor_type(v.aval) for v in eqn.outputs]
    threaded = ctx.threads_token(*[b.ir for b in branches])
    token = ctx.token
    if threaded:
        out_types.append(token.type)
    case = ir.Operation.create("stablehlo.case", results=out_types, operands=[index], regions=len(branches))

    def emit(branch):
        ctx.token = token  # every branch starts from the token before the cond
        outs = ctx.emit_body(branch.ir, list(operands))
        return outs + [ctx.token] if threaded else outs
    for region, branch in zip(case.regions, branches):
        build_region(region, [], lambda: emit(branch))
    results = list(case.results)
    if threaded:
        ctx.token, results = results[-1], results[:-1]
    else:
        ctx.token = token
    return results


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
        threaded = ctx.threads_token(p["body"].ir)
        tok = [ctx.token] if threaded else []

        def cond(i, *_):
            return (V(i, (), np.int32) < trips).v

        def body(i, *state):
            if threaded:
                ctx.token, state = state[-1], state[:-1]
            i = V(i, (), np.int32)
            b_consts, b_carry = state[:nc], state[nc:nc + nk]
            b_xs, b_ys = state[nc + nk:nc + nk + len(xs)], state[nc + nk + len(xs):]
            base = i * unroll if unroll > 1 else i  # (no multiplication by 1 in every trip)
            for u in range(unroll):
                b_carry, b_ys = _emit_scan_steps(ctx, eqn, base + u if u else base, b_consts, b_carry, b_xs, b_ys)
            return [(i + 1).v, *b_consts, *b_carry, *b_xs, *b_ys] + ([ctx.token] if threaded else [])

        res = while_values([const(0, np.int32).v, *consts, *carry, *xs, *ys, *tok], cond, body)
        if threaded:
            ctx.token, res = res[-1], res[:-1]
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
    if passes.has_ordered_effects(p["cond"].ir):
        return _while_with_ordered_cond(ctx, eqn, *args)
    threaded = ctx.threads_token(p["body"].ir)
    tok = [ctx.token] if threaded else []

    def cond(*state):
        state = state[:-1] if threaded else state
        return ctx.emit_body(p["cond"].ir, [*state[:ncc], *state[ncc + nbc:]])

    def body(*state):
        if threaded:
            ctx.token, state = state[-1], state[:-1]
        outs = [*state[:ncc + nbc], *ctx.emit_body(p["body"].ir, list(state[ncc:]))]
        return outs + [ctx.token] if threaded else outs

    res = while_values(list(args) + tok, cond, body)
    if threaded:
        ctx.token, res = res[-1], res[:-1]
    return res[ncc + nbc:]


def _while_with_ordered_cond(ctx, eqn, *args):
    """A while whose cond_fun has ordered effects (an ordered print): a StableHLO while's condition region returns
    only its predicate, not the token, so cond_fun runs once before the loop and then at the end of each trip of
    the body, its predicate carried (as JAX lowers it): the effects run in the same order, once per evaluation."""
    p = eqn.params
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    ctx.threads_token(p["cond"].ir)  # (makes the token)
    cond_consts = list(args[:ncc])
    first = ctx.emit_body(p["cond"].ir, [*cond_consts, *args[ncc + nbc:]])[0]

    def cond(*state):
        return [state[-2]]

    def body(*state):
        ctx.token, state = state[-1], state[:-2]
        carry = ctx.emit_body(p["body"].ir, list(state[ncc:]))
        pred = ctx.emit_body(p["cond"].ir, [*state[:ncc], *carry])[0]
        return [*state[:ncc + nbc], *carry, pred, ctx.token]

    res = while_values([*args, first, ctx.token], cond, body)
    ctx.token = res[-1]
    return res[ncc + nbc:-2]

