"""Partial evaluation: split an IR into the part computable from known inputs and the rest.

Used by reverse mode: the JVP IR's primal half is *known* (computed in the forward pass), its
tangent half is *unknown* (it becomes the linear function that is transposed). Values the unknown
half needs from the known half are *residuals*.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Callable, Sequence

from ..core import caches
from ..core.call import call_body, call_p, inline_marked_calls
from ..core.ir import IR, ClosedIR, Eqn, Var
from ..core.primitive import Primitive
from ..lax.structural import broadcast_in_dim_p, iota_p

# Rules for primitives whose equations can be split themselves (calls, later loops):
# rule(eqn, unknown_inputs) -> (known_eqns, unknown_eqns, out_unknown, residual_vars)
pe_rules: dict[Primitive, Callable] = {}


@dataclass
class Split:
    known: IR          # constvars + known invars -> known outputs + residuals
    unknown: IR        # residuals + unknown invars -> unknown outputs
    out_unknown: list[bool]
    num_residuals: int


def partial_eval(ir: IR, unknown_inputs: list[bool], force_unknown: Sequence[bool] | None = None) -> Split:
    """Split ``ir`` given which of its invars are unknown (constvars are known).

    ``force_unknown`` makes outputs unknown even if they are computable from known inputs (the
    unknown half then returns them, taking them as residuals): loop carries and conditional
    branches need one split for every iteration and branch.
    """
    unknown: set[Var] = {v for v, u in zip(ir.invars, unknown_inputs) if u}
    known_eqns: list[Eqn] = []
    unknown_eqns: list[Eqn] = []
    for eqn in ir.eqns:
        ins_unknown = [isinstance(a, Var) and a in unknown for a in eqn.inputs]
        if not any(ins_unknown):
            known_eqns.append(eqn)
        elif eqn.prim in pe_rules:
            k, u, out_unknown = pe_rules[eqn.prim](eqn, ins_unknown)
            known_eqns.extend(k)
            unknown_eqns.extend(u)
            unknown.update(v for v, uk in zip(eqn.outputs, out_unknown) if uk)
        else:
            unknown_eqns.append(eqn)
            unknown.update(eqn.outputs)
    unknown_eqns = _recompute_constants(known_eqns, unknown_eqns)
    out_unknown = [isinstance(a, Var) and a in unknown for a in ir.outvars]
    if force_unknown is not None:
        out_unknown = [u or bool(f) for u, f in zip(out_unknown, force_unknown)]
    # Residuals: known variables read by the unknown half (or returned by it).
    known_defined = set(ir.constvars) | {v for v in ir.invars if v not in unknown}
    for e in known_eqns:
        known_defined.update(e.outputs)
    residuals: list[Var] = []
    seen: set[Var] = set()
    forced = [a for a, u in zip(ir.outvars, out_unknown) if u and isinstance(a, Var) and a in known_defined]
    for a in [x for e in unknown_eqns for x in e.inputs] + forced:
        if isinstance(a, Var) and a in known_defined and a not in seen:
            seen.add(a)
            residuals.append(a)
    known_ir = IR(ir.constvars, [v for v, u in zip(ir.invars, unknown_inputs) if not u], known_eqns,
                  [a for a, u in zip(ir.outvars, out_unknown) if not u] + residuals)
    unknown_ir = IR([], residuals + [v for v, u in zip(ir.invars, unknown_inputs) if u], unknown_eqns,
                    [a for a, u in zip(ir.outvars, out_unknown) if u])
    # The linear halves of library functions (calls marked inline) dissolve into the linear IR, as in JAX: the
    # backward pass runs their primitives one by one.
    return Split(known_ir, inline_marked_calls(unknown_ir), out_unknown, len(residuals))


# Primitives whose equations with literal inputs only make a constant (a Python scalar broadcast to a shape, an
# iota) that the unknown half computes again rather than take as a residual: a residual is kept in memory from the
# forward pass to the backward one, and across a cond's branches or a program boundary XLA cannot fold it.
_RECOMPUTED = frozenset({broadcast_in_dim_p, iota_p})


def _recompute_constants(known_eqns: list[Eqn], unknown_eqns: list[Eqn]) -> list[Eqn]:
    """``unknown_eqns`` with the constants they read from the known half made by equations of their own (on
    fresh variables: the known half may read the constant too)."""
    constants = {e.outputs[0]: e for e in known_eqns
                 if e.prim in _RECOMPUTED and not any(isinstance(a, Var) for a in e.inputs)}
    if not constants:
        return unknown_eqns
    fresh: dict[Var, Var] = {}
    ahead: list[Eqn] = []
    for e in unknown_eqns:
        for a in e.inputs:
            if isinstance(a, Var) and a in constants and a not in fresh:
                fresh[a] = Var(a.aval)
                c = constants[a]
                ahead.append(Eqn(c.prim, list(c.inputs), [fresh[a]], c.params, c.source))
    if not fresh:
        return unknown_eqns
    return ahead + [Eqn(e.prim, [fresh.get(a, a) if isinstance(a, Var) else a for a in e.inputs], e.outputs,
                        e.params, e.source) for e in unknown_eqns]


_call_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_call_memo.clear)


def _split_call(body: ClosedIR, unknown_inputs: tuple[bool, ...]) -> tuple[ClosedIR, ClosedIR, list[bool], int]:
    memo = _call_memo.setdefault(body, {})
    if unknown_inputs not in memo:
        split = partial_eval(body.ir, list(unknown_inputs))
        memo[unknown_inputs] = (ClosedIR(split.known, []), ClosedIR(split.unknown, []),
                                split.out_unknown, split.num_residuals)
    return memo[unknown_inputs]


def _call_partial_eval(eqn: Eqn, unknown_inputs: list[bool]):
    """A call splits into a known call (also returning residuals) and an unknown call."""
    body = call_body(eqn.params["ir"])
    known, unk, out_unknown, n_res = _split_call(body, tuple(unknown_inputs))
    name = eqn.params["name"]
    known_outs = [v for v, u in zip(eqn.outputs, out_unknown) if not u]
    residuals = [Var(a) for a in known.ir.out_avals[len(known_outs):]]
    k_in = [a for a, u in zip(eqn.inputs, unknown_inputs) if not u]
    u_in = [a for a, u in zip(eqn.inputs, unknown_inputs) if u]
    # A library function's halves stay marked inline: partial_eval inlines the linear one (see core/call.py), and
    # the known one, differentiated again (grad of grad), splits the same way, as JAX's pjit keeps inline=True.
    inline = {"inline": True} if eqn.params.get("inline") else {}
    known_eqn = Eqn(call_p, k_in, known_outs + residuals, {"ir": known, "name": name, **inline}, eqn.source)
    lin_params = {"ir": unk, "name": f"{name}_lin", **inline}
    unknown_eqn = Eqn(call_p, residuals + u_in, [v for v, u in zip(eqn.outputs, out_unknown) if u], lin_params,
                      eqn.source)
    return [known_eqn], [unknown_eqn], out_unknown


pe_rules[call_p] = _call_partial_eval
