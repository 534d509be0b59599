"""IR-to-IR passes run before emission: inline calls, common subexpressions, dead code."""
from __future__ import annotations

from typing import Any

from kiln.frontend.ir import IR, Atom, Eqn, Literal, Var


def _read(env: dict[Var, Atom], a: Atom) -> Atom:
    return env.get(a, a) if isinstance(a, Var) else a


def _body(eqn: Eqn):
    """The inlinable body of a call-like equation (``jit_call``, custom derivative calls), or None."""
    param = eqn.prim.inline_param
    return eqn.params[param].ir if param else None


def inline_calls(ir: IR) -> IR:
    """Replace every call-like equation by the equations of its body (with fresh variables)."""
    if not any(e.prim.inline_param for e in ir.eqns):
        return ir
    eqns: list[Eqn] = []

    def inline(body: IR, env: dict[Var, Atom]) -> list[Atom]:
        for eqn in body.eqns:
            ins = [_read(env, a) for a in eqn.inputs]
            sub = _body(eqn)
            if sub is not None:
                outs = inline(sub, dict(zip(sub.invars, ins)))
            else:
                outs = [Var(v.aval) for v in eqn.outputs]
                eqns.append(Eqn(eqn.prim, ins, outs, eqn.params))
            env.update(zip(eqn.outputs, outs))
        return [_read(env, a) for a in body.outvars]

    outvars = inline(ir, {})
    return IR(ir.constvars, ir.invars, eqns, outvars)


def _atom_key(a: Atom) -> Any:
    if isinstance(a, Literal):
        return ("literal", a.aval, a.val.tobytes())
    return a


def _params_key(params: dict) -> Any:
    key = tuple(sorted(params.items()))
    hash(key)  # TypeError for unhashable parameters: such equations are not deduplicated
    return key


def eliminate_common_subexpressions(ir: IR) -> IR:
    """Reuse the result of an identical earlier equation (same primitive, inputs, parameters)."""
    seen: dict[Any, list[Var]] = {}
    env: dict[Var, Atom] = {}
    eqns = []
    for eqn in ir.eqns:
        ins = [_read(env, a) for a in eqn.inputs]
        try:
            key = (eqn.prim, tuple(_atom_key(a) for a in ins), _params_key(eqn.params))
        except TypeError:
            key = None
        if key is not None and not getattr(eqn.prim, "has_effects", False) and key in seen:
            env.update(zip(eqn.outputs, seen[key]))
            continue
        if key is not None:
            seen[key] = eqn.outputs
        eqns.append(Eqn(eqn.prim, ins, eqn.outputs, eqn.params) if ins != eqn.inputs else eqn)
    return IR(ir.constvars, ir.invars, eqns, [_read(env, a) for a in ir.outvars])


def eliminate_dead_code(ir: IR) -> IR:
    """Drop equations whose results are never used (primitives with effects are kept)."""
    live = {a for a in ir.outvars if isinstance(a, Var)}
    kept = []
    for eqn in reversed(ir.eqns):
        if getattr(eqn.prim, "has_effects", False) or any(o in live for o in eqn.outputs):
            kept.append(eqn)
            live.update(a for a in eqn.inputs if isinstance(a, Var))
    kept.reverse()
    return IR(ir.constvars, ir.invars, kept, ir.outvars)


def used_inputs(ir: IR) -> list[bool]:
    """For each of constvars + invars: is it read by an equation or returned?"""
    used = {a for a in ir.outvars if isinstance(a, Var)}
    for eqn in ir.eqns:
        used.update(a for a in eqn.inputs if isinstance(a, Var))
    return [v in used for v in ir.constvars + ir.invars]


def optimize(ir: IR) -> IR:
    """The standard pipeline: inline, CSE, DCE."""
    return eliminate_dead_code(eliminate_common_subexpressions(inline_calls(ir)))
