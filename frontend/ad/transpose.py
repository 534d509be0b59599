"""Transposition of linear IR: from cotangents of the outputs to cotangents of the linear inputs.

``transpose_rules[prim](cts, *args, **params)`` gets the output cotangent(s) and the equation's
arguments, where the linear ones are :class:`UndefinedPrimal` (their values are unknown) and the
others are ordinary values; it returns one cotangent per argument (None for non-linear ones or
zero cotangents). Only linear primitives need a rule.
"""
from __future__ import annotations

import contextvars
import weakref
from typing import Any, Callable, Sequence

from ..core import caches
from ..core.avals import ShapedArray
from ..core.call import bind_call, call_body, call_p
from ..core.ir import IR, ClosedIR, Literal, Var
from ..core.primitive import Primitive
from ..core.source_info import at
from ..core.tracing import trace_to_ir
from .jvp import DifferentiationError
from .tangents import Zero, add_tangents, instantiate

transpose_rules: dict[Primitive, Callable] = {}

# Whether the backward pass running now is typed (ad/varying_transpose.py): the collectives' rules read it.
_typed = contextvars.ContextVar("kiln_typed_transposition", default=False)


def typed_transposition() -> bool:
    """Whether the innermost backward pass running is typed with varying axes (JAX's check_vma transposes)."""
    return _typed.get()


class UndefinedPrimal:
    """A linear input in a transpose rule: only its abstract value is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x: Any) -> bool:
    return isinstance(x, UndefinedPrimal)


def not_linear(what: str) -> TypeError:
    """The error of a transpose rule that meets a nonlinear use of the values being transposed ("mul of two
    linear values"). Reverse mode only transposes what kiln's own JVP rules emit, which is linear, so the cause
    is a user's rule: a custom_jvp rule whose tangent output is not linear in the tangents (JAX fails here with
    an internal AssertionError)."""
    return TypeError(f"kiln: {what} is not linear in the tangents, so reverse-mode differentiation cannot "
                     "transpose it. A custom_jvp rule's tangent output must be linear in its tangent inputs (no "
                     "product of two tangents, no tangent inside a nonlinear function such as sin or a division "
                     "by a tangent); write the rule so, or give the function a custom_vjp instead")


def backward_pass(ir: IR, consts: Sequence[Any], args: Sequence[Any], cts_out: Sequence[Any],
                  wanted: Sequence[bool] | None = None, typed: bool = False) -> list[Any]:
    """Cotangents of the linear inputs of ``ir``.

    ``args`` holds a value for each non-linear invar and an :class:`UndefinedPrimal` for each
    linear one; ``cts_out`` one cotangent (or Zero/None) per output. ``wanted`` (one flag per invar)
    names the linear inputs whose cotangents are asked for: equations that reach none of them are not
    transposed (``VJP.with_refs``' ``DontWant``), and the other inputs' cotangents are zeros. ``typed``: the IR's
    varying axes are explicit (ad/varying_transpose.py), and the collectives transpose as typed.
    """
    token = _typed.set(typed)
    try:
        return _backward_pass(ir, consts, args, cts_out, wanted)
    finally:
        _typed.reset(token)


def _backward_pass(ir: IR, consts: Sequence[Any], args: Sequence[Any], cts_out: Sequence[Any],
                   wanted: Sequence[bool] | None) -> list[Any]:
    linear: set[Var] = {v for v, a in zip(ir.invars, args) if is_undefined(a)}
    env: dict[Var, Any] = dict(zip(ir.constvars, consts))
    env.update((v, a) for v, a in zip(ir.invars, args) if not is_undefined(a))
    # Forward: evaluate the non-linear equations (those not reading a linear value).
    linear_eqns = []
    for eqn in ir.eqns:
        if _reads(eqn, linear):
            linear.update(eqn.outputs)
            linear_eqns.append(eqn)
        else:
            with at(eqn.source):
                outs = eqn.prim.bind(*[a if isinstance(a, Literal) else env[a] for a in eqn.inputs], **eqn.params)
            env.update(zip(eqn.outputs, outs if eqn.prim.multiple_results else [outs]))
    needed = None if wanted is None else _reaching(linear_eqns, [v for v, w in zip(ir.invars, wanted) if w])
    # Backward: accumulate cotangents.
    ct_env: dict[Var, Any] = {}
    for v, ct in zip(ir.outvars, cts_out):
        if isinstance(v, Var) and v in linear and ct is not None and not isinstance(ct, Zero):
            ct_env[v] = add_tangents(ct_env.get(v), ct)
    for eqn in reversed(linear_eqns):
        cts = [ct_env.pop(v, None) for v in eqn.outputs]
        if all(c is None for c in cts) or (needed is not None and not _reads(eqn, needed)):
            continue
        rule = transpose_rules.get(eqn.prim)
        if rule is None:
            raise DifferentiationError(f"kiln: reverse-mode differentiation of primitive {eqn.prim.name!r} is not "
                                       "implemented (it has no transpose rule): give it one with "
                                       "kiln.interpreters.ad.primitive_transposes[primitive] = rule")
        invals = [a if isinstance(a, Literal) else (UndefinedPrimal(a.aval) if a in linear else env[a])
                  for a in eqn.inputs]
        # The backward equations keep the forward equation's location (and XLA metadata), the additions of its
        # cotangents to the others' too.
        with at(eqn.source):
            if eqn.prim.multiple_results:
                cts = [c if c is not None else Zero(v.aval) for c, v in zip(cts, eqn.outputs)]
                in_cts = rule(cts, *invals, **eqn.params)
            else:
                in_cts = rule(cts[0], *invals, **eqn.params)
            for a, ct in zip(eqn.inputs, in_cts):
                if isinstance(a, Var) and a in linear and ct is not None and not isinstance(ct, Zero):
                    ct_env[a] = add_tangents(ct_env.get(a), ct)
    if needed is not None:
        ct_env = {v: ct for v, ct in ct_env.items() if v in needed}
    return [ct_env.get(v, Zero(v.aval)) if is_undefined(a) else None for v, a in zip(ir.invars, args)]


def _reads(eqn: Any, vars_: set[Var]) -> bool:
    return any(isinstance(a, Var) and a in vars_ for a in eqn.inputs)


def _reaching(linear_eqns: list, seeds: list[Var]) -> set[Var]:
    """The linear values that depend on ``seeds`` (in order: the equations are topologically sorted)."""
    reached = set(seeds)
    for eqn in linear_eqns:
        if _reads(eqn, reached):
            reached.update(eqn.outputs)
    return reached


_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_memo.clear)


def transpose_closed(closed: ClosedIR, linear: Sequence[bool]) -> ClosedIR:
    """The IR of ``(non-linear inputs, output cotangents) -> cotangents of the linear inputs``."""
    linear = tuple(bool(x) for x in linear)
    memo = _memo.setdefault(closed, {})
    if linear in memo:
        return memo[linear]
    in_avals = closed.in_avals
    nonlin_avals = [a for a, lin in zip(in_avals, linear) if not lin]

    def fun(*args):
        it = iter(args[:len(nonlin_avals)])
        cts = list(args[len(nonlin_avals):])
        full = [UndefinedPrimal(a) if lin else next(it) for a, lin in zip(in_avals, linear)]
        out = backward_pass(closed.ir, closed.consts, full, cts)
        return [instantiate(c) for c, lin in zip(out, linear) if lin]

    new, _ = trace_to_ir(fun, nonlin_avals + list(closed.out_avals), name="transpose")
    memo[linear] = new
    return new


def _call_transpose(cts, *args, ir: ClosedIR, name: str, inline: bool = False):
    body = call_body(ir)
    linear = [is_undefined(a) for a in args]
    t = transpose_closed(body, linear)
    cts = [instantiate(c) for c in cts]
    outs = iter(bind_call(t, [a for a in args if not is_undefined(a)] + cts, f"transpose({name})"))
    return [next(outs) if lin else None for lin in linear]


transpose_rules[call_p] = _call_transpose
