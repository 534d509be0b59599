"""Which mesh axes a value inside a ``shard_map`` body may differ along between devices ("varying manual
axes", JAX's ``vma``). kiln keeps them out of the types: this analysis follows an IR instead, for
``shard_map``'s ``check_vma`` and for ``kiln.typeof`` inside a body.

Rules: a value varies along what its operands vary along; ``psum``/``pmax``/``pmin`` and
``all_gather(..., to="invarying")`` remove their axes; ``axis_index``, ``ppermute``, ``all_to_all``, ``psum_scatter``,
``all_gather`` and ``pvary`` (``pcast(..., to="varying")``) add theirs (as JAX's types: an all_gather's result
varies, JEP 17111); calls are followed; loops and branches go to a fixed point; other sub-programs pass on what
varies in plus what their bodies introduce.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .ir import IR, Literal
from .tracing import Tracer, VaryingInput, current_builder

__all__ = ["VaryingInput"]  # (defined with the traces that carry it)


# The primitives that make their results vary along some axes, and the parameter naming them.
_INTRODUCES = {"axis_index": "axis_name", "ppermute": "axis_name", "all_to_all": "axis_name",
               "psum_scatter": "axis_name", "pvary": "axes", "all_gather": "axis_name"}
_REMOVES = {"psum", "pmax", "pmin"}


def _removes(eqn) -> bool:
    return eqn.prim.name in _REMOVES or (eqn.prim.name == "all_gather" and eqn.params.get("to") == "invarying")


def _names(axis_name: Any) -> frozenset:
    return frozenset(axis_name if isinstance(axis_name, tuple) else (axis_name,))


def _introduced_inside(ir: IR, mesh_names: frozenset) -> frozenset:
    found: frozenset = frozenset()
    for eqn in ir.eqns:
        if eqn.prim.name in _INTRODUCES and not _removes(eqn):
            found |= _names(eqn.params[_INTRODUCES[eqn.prim.name]]) & mesh_names
        for sub in _sub_irs(eqn.params):
            found |= _introduced_inside(sub, mesh_names)
    return found


def _sub_irs(params: dict):
    for value in params.values():
        for v in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(v, "ir", v)
            if isinstance(inner, IR):
                yield inner


def has_sub_programs(eqn) -> bool:
    """Whether ``eqn`` runs sub-programs (a call, a loop, a branch, a custom rule...)."""
    return bool(eqn.prim.inline_param) or any(True for _ in _sub_irs(eqn.params))


def varying_axes(ir: IR, in_vma: Sequence[frozenset], mesh_names: frozenset,
                 const_vma: Sequence[frozenset] | None = None) -> list[frozenset]:
    """For each output of ``ir``, the mesh axes along which it may differ between devices, given those of the
    inputs (and of the constvars: none unless given). Conservative inside loops and branches: what varies in goes
    out varying."""
    env: dict = dict(zip(ir.constvars, const_vma)) if const_vma is not None else {v: frozenset() for v in ir.constvars}
    env.update(zip(ir.invars, in_vma))

    def read(a):
        return frozenset() if isinstance(a, Literal) else env[a]

    for eqn in ir.eqns:
        env.update(zip(eqn.outputs, eqn_varying_axes(eqn, [read(a) for a in eqn.inputs], mesh_names)))
    return [read(a) for a in ir.outvars]


def eqn_varying_axes(eqn, in_vma: Sequence[frozenset], mesh_names: frozenset) -> list[frozenset]:
    """For each output of ``eqn``, the mesh axes it may differ along, given those of its inputs."""
    ins = frozenset().union(*in_vma)
    name = eqn.prim.name
    if _removes(eqn):
        return [ins - _names(eqn.params["axis_name"])]
    if name in _INTRODUCES:
        return [ins | (_names(eqn.params[_INTRODUCES[name]]) & mesh_names)] * len(eqn.outputs)
    if eqn.prim.inline_param:
        sub = eqn.params[eqn.prim.inline_param]
        return varying_axes(getattr(sub, "ir", sub), in_vma, mesh_names)
    if name in _STRUCTURED:
        return _STRUCTURED[name](eqn.params, list(in_vma), mesh_names)
    extra = frozenset().union(*[_introduced_inside(s, mesh_names) for s in _sub_irs(eqn.params)])
    return [ins | extra] * len(eqn.outputs)


def _cond_vma(params: dict, ins: list, names: frozenset) -> list[frozenset]:
    index, ops = ins[0], ins[1:]
    per_branch = [varying_axes(b.ir, ops, names) for b in params["branches"]]
    return [index.union(*outs) for outs in zip(*per_branch)]


def _carry_fixed_point(step: Callable, carry: list) -> list:
    """Loop carries vary along what they start with and whatever an iteration adds: iterate to the fixed point."""
    while True:
        new = [c | n for c, n in zip(carry, step(carry))]
        if new == carry:
            return carry
        carry = new


def _scan_vma(params: dict, ins: list, names: frozenset) -> list[frozenset]:
    nc, ncarry = params["num_consts"], params["num_carry"]
    consts, xs = ins[:nc], ins[nc + ncarry:]
    body = params["body"].ir

    def step(carry):
        return varying_axes(body, consts + carry + xs, names)[:ncarry]
    carry = _carry_fixed_point(step, ins[nc:nc + ncarry])
    return carry + varying_axes(body, consts + carry + xs, names)[ncarry:]


def _while_vma(params: dict, ins: list, names: frozenset) -> list[frozenset]:
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    cond_consts, body_consts, init = ins[:cn], ins[cn:cn + bn], ins[cn + bn:]

    def step(carry):
        (pred,) = varying_axes(params["cond"].ir, cond_consts + carry, names)
        # Where the predicate varies, the number of iterations does: every carry varies along it too.
        return [v | pred for v in varying_axes(params["body"].ir, body_consts + carry, names)]
    return _carry_fixed_point(step, list(init))


def _remat_vma(params: dict, ins: list, names: frozenset) -> list[frozenset]:
    return varying_axes(params["body"].ir, ins, names)  # a call, kept as one (not inlined by kiln's passes)


# Structured primitives whose outputs' varying axes follow their bodies (others: see varying_axes).
_STRUCTURED: dict[str, Callable] = {"cond": _cond_vma, "scan": _scan_vma, "while": _while_vma, "remat": _remat_vma}


def values_vma(xs: Sequence[Any]) -> list[frozenset]:
    """For each value, the mesh axes it varies along so far: a tracer of a ``shard_map`` body's trace (or of a
    trace opened inside one) from one pass over its trace; everything else (constants, values of traces outside
    every body) is the same on every device."""
    out = [frozenset()] * len(xs)
    groups: dict[int, tuple[Any, list[int]]] = {}
    for i, x in enumerate(xs):
        if isinstance(x, Tracer) and x.builder.varying is not None:
            groups.setdefault(id(x.builder), (x.builder, []))[1].append(i)
    for b, where in groups.values():
        in_vma = [b.input_hints[v].axes for v in b.invars]
        const_vma = values_vma(b.const_values)  # what it closes over: values of the traces around it
        sofar = IR(list(b.constvars), list(b.invars), list(b.eqns), [xs[i].ir_var for i in where])
        for i, vma in zip(where, varying_axes(sofar, in_vma, frozenset(b.varying[0]), const_vma)):
            out[i] = vma
    return out


def nested_hints(outer: Sequence[Any]) -> list[VaryingInput] | None:
    """For a trace opened inside a ``shard_map`` body (a loop's or branch's body, a jit's, vmap's or grad's
    function): one hint per input, the mesh axes of the value of the enclosing trace it stands for. None outside
    bodies."""
    parent = current_builder()
    if parent is None or parent.varying is None:
        return None
    mesh_axes, typed = parent.varying
    return [VaryingInput(v, mesh_axes, typed) for v in values_vma(outer)]


def widened_carry(closed: Any, hints: Sequence[VaryingInput], n_carry: int) -> list[VaryingInput] | None:
    """A loop body traced with ``hints``, whose first ``n_carry`` inputs and outputs are the carry: where a carry
    comes out varying along more axes than it went in, the hints to trace it again with (a carry varies along what
    it starts with and what any iteration adds); None when they agree."""
    mesh_axes, typed = hints[0].mesh_axes, hints[0].typed
    out = varying_axes(closed.ir, [h.axes for h in hints], frozenset(mesh_axes), values_vma(closed.consts))
    new = [h if o <= h.axes else VaryingInput(h.axes | o, mesh_axes, typed) for h, o in zip(hints[:n_carry], out)]
    return None if all(a is b for a, b in zip(new, hints)) else new + list(hints[n_carry:])


def varying_of_values(xs: Sequence[Any]) -> tuple[list[frozenset], tuple[str, ...], bool] | None:
    """For values seen inside a ``shard_map`` body (or a trace opened inside one), where the trace being recorded
    now is one: the mesh axes each varies along so far, the mesh's axis names, and whether the shard_map checks
    them. None elsewhere."""
    b = current_builder()
    if b is None or b.varying is None:
        return None
    return values_vma(xs), b.varying[0], b.varying[1]


def varying_in_trace(x: Any) -> tuple[frozenset, tuple[str, ...]] | None:
    """For a traced value of a ``shard_map`` body (or of a trace opened inside one): the mesh axes it varies along
    so far, and the mesh's axis names; None for any other value."""
    if not isinstance(x, Tracer) or x.builder.varying is None:
        return None
    return values_vma([x])[0], x.builder.varying[0]
