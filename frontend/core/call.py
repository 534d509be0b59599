"""``jit_call``: an equation whose body is another IR (a jitted function called inside a trace).

Lowering inlines it; transformations (jvp, batching) transform its body, so the derivative of a
jitted function is still one compiled call.

``inline=True`` marks the call of a library function (kiln.numpy's, recorded under an eager grad/vjp/jvp/vmap:
see ``tracing.calls_kept``), as JAX marks its jitted jax.numpy functions ``jit(inline=True)``: its primal, its
tangent (forward mode) and its batched form stay one compiled call, but reverse mode's linear half is inlined
into the linear IR (JAX stages it into the linear jaxpr, where inline calls dissolve), so the backward pass runs
those primitives one by one, as JAX's does.
"""
from __future__ import annotations

import weakref

from . import caches
from .avals import ShapedArray
from .ir import IR, Atom, ClosedIR, Eqn, Var
from .primitive import Primitive


def _call_rule(*in_avals: ShapedArray, ir: ClosedIR, name: str, inline: bool = False) -> list[ShapedArray]:
    expected = ir.in_avals
    if len(in_avals) != len(expected) or any(
            a.shape != e.shape or a.dtype != e.dtype for a, e in zip(in_avals, expected)):
        got = ", ".join(a.str_short() for a in in_avals)
        want = ", ".join(e.str_short() for e in expected)
        raise TypeError(f"kiln: call of {name} with arguments ({got}); its IR takes ({want})")
    return ir.out_avals


call_p = Primitive("jit_call", _call_rule, multiple_results=True, inline_param="ir")


_bodies: "weakref.WeakKeyDictionary[ClosedIR, ClosedIR]" = weakref.WeakKeyDictionary()
caches.register(_bodies.clear)


def call_body(closed: ClosedIR) -> ClosedIR:
    """``closed`` as a call body: its constvars become leading inputs (memoised: same IR, same body)."""
    if not closed.ir.constvars:
        return closed
    body = _bodies.get(closed)
    if body is None:
        ir = closed.ir
        body = _bodies[closed] = ClosedIR(IR([], ir.constvars + ir.invars, ir.eqns, ir.outvars), [])
    return body


def bind_call(closed: ClosedIR, args, name: str, inline: bool = False) -> list:
    """Record (or run) one ``jit_call`` of ``closed`` on ``args`` (``inline``: see the module's docstring)."""
    if inline:
        return call_p.bind(*closed.consts, *args, ir=call_body(closed), name=name, inline=True)
    return call_p.bind(*closed.consts, *args, ir=call_body(closed), name=name)


def inline_marked_calls(ir: IR) -> IR:
    """``ir`` with each of its own ``jit_call`` equations marked ``inline`` replaced by the equations of its body
    (fresh variables; uses of the call's results read the body's results instead). Other equations, and the
    sub-IRs inside them, are left as they are."""
    if not any(e.prim is call_p and e.params.get("inline") for e in ir.eqns):
        return ir
    env: dict[Var, Atom] = {}
    eqns: list[Eqn] = []

    def read(scope: dict, a: Atom) -> Atom:
        return scope.get(a, a) if isinstance(a, Var) else a

    for eqn in ir.eqns:
        ins = [read(env, a) for a in eqn.inputs]
        if eqn.prim is call_p and eqn.params.get("inline"):
            body = eqn.params["ir"].ir
            scope: dict[Var, Atom] = dict(zip(body.invars, ins))
            for inner in body.eqns:
                outs = [Var(v.aval) for v in inner.outputs]
                eqns.append(Eqn(inner.prim, [read(scope, a) for a in inner.inputs], outs, inner.params, inner.source))
                scope.update(zip(inner.outputs, outs))
            env.update(zip(eqn.outputs, [read(scope, a) for a in body.outvars]))
        elif any(a is not b for a, b in zip(ins, eqn.inputs)):
            eqns.append(Eqn(eqn.prim, ins, eqn.outputs, eqn.params, eqn.source))
        else:
            eqns.append(eqn)
    return IR(ir.constvars, ir.invars, eqns, [read(env, a) for a in ir.outvars])
