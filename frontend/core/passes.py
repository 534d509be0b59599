"""IR-to-IR passes run before emission: inline calls, algebraic simplification, dead
code."""
from __future__ import annotations

import weakref
from typing import Any

from kiln.frontend.core import folding
from kiln.frontend.core.ir import IR, Atom, ClosedIR, Eqn, Literal, Var


def _sub_irs(eqn: Eqn):
    for value in eqn.params.values():
        if isinstance(value, ClosedIR):
            yield value.ir
        elif isinstance(value, IR):
            yield value
        elif isinstance(value, tuple) and value and all(isinstance(v, (ClosedIR, IR)) for v in value):
            yield from (v.ir if isinstance(v, ClosedIR) else v for v in value)


# IR -> (has effects, has ordered effects), computed once per IR.
_effects_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def ir_effects(ir: IR) -> tuple[bool, bool]:
    """Whether ``ir`` (or a sub-IR of one of its equations) has an equation with effects (a host callback
    that is not pure), and whether one of them is ordered (``ordered=True``)."""
    hit = _effects_memo.get(ir)
    if hit is None:
        any_, ordered = False, False
        for eqn in ir.eqns:
            if eqn.prim.effects_of(eqn.params):
                any_ = True
                ordered = ordered or bool(eqn.params.get("ordered", False))
            for sub in _sub_irs(eqn):
                a, o = ir_effects(sub)
                any_, ordered = any_ or a, ordered or o
            if ordered:
                break
        hit = _effects_memo[ir] = (any_, ordered)
    return hit


def has_effects(eqn: Eqn) -> bool:
    """Whether running ``eqn`` has an effect besides its results (it must then run even when its results
    are unused, and as often as the program says): a primitive with effects, or a call, loop or branch
    whose body has one."""
    if eqn.prim.effects_of(eqn.params):
        return True
    return any(ir_effects(sub)[0] for sub in _sub_irs(eqn))


def has_ordered_effects(ir: IR) -> bool:
    return ir_effects(ir)[1]


def _read(env: dict[Var, Atom], atoms: list[Atom]) -> list[Atom]:
    """``atoms`` with each variable ``env`` replaces replaced (literals are never keys of ``env``: they hash by
    identity and come back as they are). A C-level map: the passes read every input of every equation."""
    return list(map(env.get, atoms, atoms))


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
            ins = _read(env, eqn.inputs)
            sub = _body(eqn)
            if sub is not None:
                outs = inline(sub, dict(zip(sub.invars, ins)))
            else:
                outs = [Var(v.aval) for v in eqn.outputs]
                eqns.append(Eqn(eqn.prim, ins, outs, eqn.params, eqn.source))
            env.update(zip(eqn.outputs, outs))
        return _read(env, body.outvars)

    outvars = inline(ir, {})
    return IR(ir.constvars, ir.invars, eqns, outvars)


def eliminate_dead_code(ir: IR) -> IR:
    """Drop equations whose results are never used (primitives with effects are kept)."""
    # (literals go into the live set too: they hash by identity and are never an equation's output)
    live = set(ir.outvars)
    kept = []
    for eqn in reversed(ir.eqns):
        if not live.isdisjoint(eqn.outputs) or has_effects(eqn):
            kept.append(eqn)
            live.update(eqn.inputs)
    kept.reverse()
    return IR(ir.constvars, ir.invars, kept, ir.outvars)


def _aval(a: Atom):
    return a.aval


def _scalar_value(a: Atom, defs: dict[Var, Eqn]) -> Any:
    """The value of ``a`` if it is a scalar literal or a broadcast of one, else None."""
    if isinstance(a, Var) and a in defs and defs[a].prim.name == "broadcast_in_dim":
        a = defs[a].inputs[0]
    if isinstance(a, Literal) and not a.aval.shape:
        return a.val
    return None


def _is_identity(x: Atom, out: Var) -> bool:
    return _aval(x) == out.aval


def _is(value: Any, target: int) -> bool:
    return value is not None and value.dtype != bool and bool(value == target)


def _fold(eqn: Eqn, ins: list[Atom], defs: dict[Var, Eqn]) -> Atom | Eqn | None:
    """An elementwise equation whose operands are all constants (scalar literals, or broadcasts of one), as a
    literal (a scalar result) or a broadcast of one; None where it is not folded (``folding.fold``)."""
    out = eqn.outputs[0]
    if eqn.prim.name == "select" and isinstance(ins[0], Literal) and not ins[0].aval.shape:  # picks a case
        case = ins[1] if bool(ins[0].val) else ins[2]
        return case if _is_identity(case, out) else None
    if eqn.prim.name not in folding.FOLDABLE:
        return None
    broadcast = None
    values = []
    for a in ins:
        if isinstance(a, Var) and a in defs and defs[a].prim.name == "broadcast_in_dim":
            broadcast = defs[a]
            a = broadcast.inputs[0]
        if not isinstance(a, Literal) or a.aval.shape:  # (an array literal is left to XLA)
            return None
        values.append(a.val)
    value = folding.fold(eqn.prim.name, eqn.params, values, out.aval.dtype)
    if value is None:
        return None
    literal = Literal(value, out.aval.update(shape=()))
    if broadcast is None:
        return literal
    return Eqn(broadcast.prim, [literal], eqn.outputs, {"shape": out.aval.shape, "broadcast_dimensions": ()},
               eqn.source)


def _simplify_eqn(eqn: Eqn, ins: list[Atom], defs: dict[Var, Eqn]) -> Atom | Eqn:
    """A replacement atom for the equation's (single) output, or the equation, maybe rewritten."""
    name, params = eqn.prim.name, eqn.params
    unchanged = eqn if ins == eqn.inputs else Eqn(eqn.prim, ins, eqn.outputs, params, eqn.source)
    if eqn.prim.multiple_results or len(eqn.outputs) != 1:
        return unchanged
    out = eqn.outputs[0]
    folded = _fold(eqn, ins, defs) if ins else None
    if folded is not None:
        return folded
    x = ins[0] if ins else None
    inner = defs.get(x) if isinstance(x, Var) else None
    inner_name = inner.prim.name if inner is not None else None
    if name == "transpose":
        perm = params["permutation"]
        if inner_name == "transpose":  # transpose(transpose(y, q), p) == transpose(y, q[p])
            x = inner.inputs[0]
            perm = tuple(inner.params["permutation"][i] for i in perm)
        if perm == tuple(range(len(perm))):
            return x
        return Eqn(eqn.prim, [x], eqn.outputs, {"permutation": perm}, eqn.source) if x is not ins[0] else unchanged
    if name == "reshape":
        if inner_name == "reshape":
            x = inner.inputs[0]
        if _is_identity(x, out):
            return x
        return Eqn(eqn.prim, [x], eqn.outputs, params, eqn.source) if x is not ins[0] else unchanged
    if name == "broadcast_in_dim":
        dims = params["broadcast_dimensions"]
        widens = any(n == 1 and params["shape"][d] != 1 for n, d in zip(_aval(x).shape, dims))
        if inner_name == "broadcast_in_dim" and not widens:  # an operand dim d of y lands in dims[inner_dims[d]]
            x = inner.inputs[0]
            dims = tuple(dims[d] for d in inner.params["broadcast_dimensions"])
        if _is_identity(x, out) and dims == tuple(range(len(dims))):
            return x
        if x is ins[0]:
            return unchanged
        return Eqn(eqn.prim, [x], eqn.outputs, {"shape": params["shape"], "broadcast_dimensions": dims},
                   eqn.source)
    if name == "convert_element_type" and _is_identity(x, out):
        return x
    if name == "neg" and inner_name == "neg" and _is_identity(inner.inputs[0], out):
        return inner.inputs[0]
    if name in ("mul", "add", "sub"):
        neutral = 1 if name == "mul" else 0
        a, b = ins
        if _is(_scalar_value(b, defs), neutral) and _is_identity(a, out):
            return a
        if name != "sub" and _is(_scalar_value(a, defs), neutral) and _is_identity(b, out):
            return b
    return unchanged


def simplify(ir: IR) -> IR:
    """Local algebraic simplifications, mostly of what the transformations leave behind: a transpose of a
    transpose, a reshape of a reshape, a broadcast of a broadcast become one op (or none, when the result
    is the operand); identity reshapes, transposes, broadcasts and conversions, the negation of a
    negation, multiplications by one and additions of zero disappear; elementwise arithmetic, comparisons
    and conversions of constants (scalar literals or broadcasts of one) become constants, computed at trace
    time where the result is the one XLA would compute (``folding.py``: ``-1.0 / 128.0`` becomes
    ``-0.0078125``), and a select with a constant predicate becomes its case. The equations left unused are
    for dead-code elimination to remove."""
    env: dict[Var, Atom] = {}
    defs: dict[Var, Eqn] = {}
    eqns = []
    for eqn in ir.eqns:
        ins = _read(env, eqn.inputs)
        new = _simplify_eqn(eqn, ins, defs)
        if not isinstance(new, Eqn):
            env[eqn.outputs[0]] = new
            continue
        eqns.append(new)
        if len(new.outputs) == 1:
            defs[new.outputs[0]] = new
    return IR(ir.constvars, ir.invars, eqns, _read(env, ir.outvars))


def used_inputs(ir: IR) -> list[bool]:
    """For each of constvars + invars: is it read by an equation or returned?"""
    used = set(ir.outvars)  # (literals too, as in eliminate_dead_code)
    for eqn in ir.eqns:
        used.update(eqn.inputs)
    return [v in used for v in ir.constvars + ir.invars]



def read_constants_inline(ir: IR, values: list) -> IR:
    """``ir`` reading the constvars whose entry in ``values`` (one per constvar) is a host array as literals, so
    that the passes and XLA fold them as constants of the program, as JAX writes closed-over arrays into its
    modules; those constvars stay in the signature, unused (lowering drops them). None: a parameter still."""
    env = {v: Literal(value, v.aval) for v, value in zip(ir.constvars, values) if value is not None}
    if not env:
        return ir
    eqns = [Eqn(e.prim, _read(env, e.inputs), e.outputs, e.params, e.source) for e in ir.eqns]
    return IR(ir.constvars, ir.invars, eqns, _read(env, ir.outvars))

def optimize(ir: IR) -> IR:
    """The standard pipeline: inline, simplify, DCE. No common subexpressions are merged: XLA merges them, after its
    simplifier, which rewrites a value with one user (``x / broadcast(s)``) otherwise than a shared one, so that a
    program deduplicated before XLA rounds otherwise than JAX's (which reach XLA as they are)."""
    return eliminate_dead_code(simplify(inline_calls(ir)))
