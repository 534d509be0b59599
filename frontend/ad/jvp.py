"""Forward mode: evaluate an IR on (primal, tangent) pairs, equation by equation.

``jvp_rules[prim](primals, tangents, **params) -> (primal_out, tangent_out)`` (lists for primitives
with several results). Tangents may be :class:`Zero`; a rule is only called when at least one
input tangent is nonzero. Primitives without a derivative (comparisons, iota, ...) are listed in
:data:`non_differentiable`: their outputs get zero tangents.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

from ..core import caches
from ..core.call import bind_call, call_p
from ..core.errors import KilnError
from ..core.ir import IR, ClosedIR, Literal, Var
from ..core.primitive import Primitive
from ..core.source_info import at
from ..core.tracing import materialize, trace_to_ir
from .tangents import Zero, instantiate, is_differentiable_dtype, tangent_aval, zeros_like_aval

jvp_rules: dict[Primitive, Callable] = {}
non_differentiable: set[Primitive] = set()


class DifferentiationError(KilnError, TypeError, NotImplementedError):
    """A primitive without a derivative rule was differentiated (a ``TypeError``, and a ``NotImplementedError`` as
    JAX raises for a primitive without a rule)."""


def jvp_eval(ir: IR, consts: Sequence[Any], primals: Sequence[Any], tangents: Sequence[Any]):
    """Evaluate ``ir`` on primals and tangents; returns (primal outputs, tangent outputs)."""
    penv: dict[Var, Any] = dict(zip(ir.constvars, consts))
    penv.update(zip(ir.invars, primals))
    tenv: dict[Var, Any] = dict(zip(ir.invars, tangents))

    def read_p(a):
        return a if isinstance(a, Literal) else penv[a]

    def read_t(a):
        if isinstance(a, Literal):
            return Zero(tangent_aval(a.aval))
        t = tenv.get(a)
        return t if t is not None else Zero(tangent_aval(a.aval))

    for eqn in ir.eqns:
        with at(eqn.source):  # equations it creates keep eqn's location
            ps = [read_p(a) for a in eqn.inputs]
            ts = [read_t(a) for a in eqn.inputs]
            multi = eqn.prim.multiple_results
            if all(isinstance(t, Zero) for t in ts) or eqn.prim in non_differentiable:
                outs = eqn.prim.bind(*ps, **eqn.params)
                outs = outs if multi else [outs]
                touts = [Zero(tangent_aval(v.aval)) for v in eqn.outputs]
            else:
                rule = jvp_rules.get(eqn.prim)
                if rule is None:
                    raise DifferentiationError(f"kiln: differentiation of primitive {eqn.prim.name!r} is not "
                                               "implemented: give it a JVP rule with "
                                               "kiln.interpreters.ad.primitive_jvps[primitive] = rule")
                outs, touts = rule(ps, ts, **eqn.params)
                if not multi:
                    outs, touts = [outs], [touts]
        for v, o, t in zip(eqn.outputs, outs, touts):
            penv[v] = o
            # Integer and boolean results carry no derivative.
            tenv[v] = t if is_differentiable_dtype(v.aval.dtype) else Zero(tangent_aval(v.aval))
    out_p = [materialize(read_p(a)) for a in ir.outvars]
    out_t = [read_t(a) for a in ir.outvars]
    return out_p, out_t


_jvp_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_jvp_memo.clear)


def jvp_ir(closed: ClosedIR, nonzero: Sequence[bool], instantiate: Sequence[bool] | bool = False,
           known_primals: Sequence[Any] | None = None) -> tuple[ClosedIR, list[bool]]:
    """The IR of ``(primals, nonzero tangents) -> (outputs, nonzero output tangents)``.

    ``instantiate`` forces output tangents to be materialised (as zeros) even when they are zero
    (loops and conditionals need the same tangent structure in every branch and iteration).
    Memoised per (IR, pattern), so differentiating the same jitted function twice gives the
    same IR object (and hits the compile cache).

    ``known_primals``: the values of the primal inputs, when the caller has them (``grad`` or
    ``jvp`` outside jit). The trace then knows them, so user rules run while it is built
    (``custom_jvp``'s rule, ``custom_vjp``'s fwd) see primals with concrete values and may use
    Python control flow on them, as in JAX. Such an IR may be specialised to those values: it is
    not memoised.
    """
    nonzero = tuple(bool(n) for n in nonzero)
    n_out = len(closed.out_avals)
    inst = tuple([bool(instantiate)] * n_out if isinstance(instantiate, bool) else [bool(i) for i in instantiate])
    key = (nonzero, inst)
    memo = _jvp_memo.setdefault(closed, {}) if known_primals is None else {}
    if key in memo:
        return memo[key]
    if any(inst) and known_primals is None:
        # When the IR without instantiation already has nonzero tangents wherever they are asked for, it is the
        # answer: no second trace (which would call a custom_jvp rule inside it again; JAX calls it once).
        plain = memo.get((nonzero, (False,) * n_out))
        if plain is not None and all(nz or not i for nz, i in zip(plain[1], inst)):
            memo[key] = plain
            return plain
    in_avals = closed.in_avals
    t_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzero) if nz]
    out_nonzero: list[bool] = []

    def fun(*args):
        primals, rest = list(args[:len(in_avals)]), iter(args[len(in_avals):])
        tangents = [next(rest) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzero)]
        outs, touts = jvp_eval(closed.ir, closed.consts, primals, tangents)
        touts = [zeros_like_aval(t.aval) if isinstance(t, Zero) and i else t for t, i in zip(touts, inst)]
        out_nonzero.extend(not isinstance(t, Zero) for t in touts)
        return outs + [t for t in touts if not isinstance(t, Zero)]

    known = None if known_primals is None else list(known_primals) + [None] * len(t_avals)
    new, _ = trace_to_ir(fun, list(in_avals) + t_avals, name="jvp", known_values=known)
    memo[key] = (new, out_nonzero)
    return new, out_nonzero


def _call_jvp(primals, tangents, *, ir: ClosedIR, name: str, inline: bool = False):
    nonzero = [not isinstance(t, Zero) for t in tangents]
    new, out_nonzero = jvp_ir(ir, nonzero)
    outs = bind_call(new, [*primals, *[t for t in tangents if not isinstance(t, Zero)]], f"jvp({name})", inline)
    n = len(ir.out_avals)
    it = iter(outs[n:])
    touts = [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(ir.out_avals, out_nonzero)]
    return outs[:n], touts


jvp_rules[call_p] = _call_jvp


def linear_jvp(prim: Primitive) -> None:
    """Register the JVP of a linear primitive: the same primitive applied to the tangents."""
    def rule(primals, tangents, **params):
        return prim.bind(*primals, **params), prim.bind(*[instantiate(t) for t in tangents], **params)
    jvp_rules[prim] = rule
