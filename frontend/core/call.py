"""``jit_call``: an equation whose body is another IR (a jitted function called inside a trace).

Lowering inlines it; transformations (jvp, batching) transform its body, so the derivative of a
jitted function is still one compiled call.
"""
from __future__ import annotations

import weakref

from . import caches
from .avals import ShapedArray
from .ir import IR, ClosedIR
from .primitive import Primitive


def _call_rule(*in_avals: ShapedArray, ir: ClosedIR, name: str) -> list[ShapedArray]:
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


def bind_call(closed: ClosedIR, args, name: str) -> list:
    """Record (or run) one ``jit_call`` of ``closed`` on ``args``."""
    return call_p.bind(*closed.consts, *args, ir=call_body(closed), name=name)
