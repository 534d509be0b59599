"""Transposition with JAX's varying-axes types (JEP 17111), inside ``shard_map`` bodies that check them.

kiln keeps varying axes out of its types (``core/varying.py`` computes them from an IR). Untyped, a transpose
works with per-device *partial* cotangents: every device's copy of a value is its own variable, ``psum``
transposes to ``psum``, and a value that is the same on every device gets the sum of its copies' cotangents where
the shard_map begins. Typed, as JAX's, a value that is the same along a mesh axis is *one* variable: its cotangent
is one value, the sum over the devices happens where it meets varying values, and ``psum`` transposes to the
identity. Both give the same gradient of a whole shard_map, but only the typed one gives JAX's gradient of a
function of a replicated value *inside* a body (the sum over the devices), and its programs communicate less.

``backward_pass_typed`` makes the types explicit in the linear part of an IR, then transposes it with the
collectives' typed rules (``transpose.typed_transposition()``: psum transposes to pvary, pvary to psum, an
invariant all_gather to a slice):

* a linear value meeting values that vary along more mesh axes goes through a ``pvary`` of the axes it lacks
  (JAX's implicit pvary), placed before any broadcast or reshape that made it; so does a collective's operand
  that does not vary along the collective's axes; a ``pvary`` of axes the value already varies along is dropped;
* an equation with sub-programs (scan, cond, while, calls) stays untyped inside: its linear operands are made
  varying along every mesh axis, and its results count as varying along every axis. Untyped rules are exact for
  varying values, so this costs at most a collective, never a wrong value.

A cotangent comes in typed as its output (``out_vma``); where the explicit types make an output vary along more
axes (a result of a sub-program), its cotangent goes to the first device along those axes, as untyped.
"""
from __future__ import annotations

from typing import Any, Sequence

from .. import lax
from ..core.ir import IR, Eqn, Literal, Var
from ..core.tracing import abstractify
from ..core.varying import eqn_varying_axes, has_sub_programs, varying_axes, varying_of_values
from ..lax.collectives import _names, axis_index_p, pvary_p
from .tangents import Zero
from .transpose import backward_pass, is_undefined

# Collectives whose operand must vary along their axes (a pvary first where it does not).
_COLLECTIVE_AXES = {"psum", "all_gather", "psum_scatter", "ppermute", "all_to_all"}

# One-operand ops that change a value's shape, not its values: a cast goes before them (not before a dtype
# conversion: the sum over the devices stays in the type JAX sums in).
_RESHAPING = {"broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims"}


def first_along(x, axes: Sequence[str]):
    """``x`` on the devices at index 0 along ``axes``, zeros elsewhere (``x`` itself for no axes): one device's
    copy carries a value that is the same on all of them."""
    if not axes:
        return x
    aval = abstractify(x)
    first = None
    for a in axes:
        idx = axis_index_p.bind(axis_name=a)
        at0 = lax.eq(idx, lax.full_like(idx, 0))
        first = at0 if first is None else lax.bitwise_and(first, at0)
    return lax.select(lax.broadcast_in_dim(first, aval.shape, ()), x, lax.full_like(x, 0))


class _Typing:
    """The explicit-types rewrite of one IR: new equations, each value's varying axes, renamed values."""

    def __init__(self, mesh_names: tuple[str, ...]) -> None:
        self.order = tuple(mesh_names)
        self.names = frozenset(mesh_names)
        self.eqns: list[Eqn] = []
        self.vma: dict[Var, frozenset] = {}
        self.renamed: dict[Var, Any] = {}
        self.casts: dict[tuple, Any] = {}    # (value, axes) -> the value cast
        self.shaped: dict[Var, Eqn] = {}     # a linear value made from one other by an op of _RESHAPING

    def read(self, a):
        return a if isinstance(a, Literal) else self.renamed.get(a, a)

    def of(self, a) -> frozenset:
        return frozenset() if isinstance(a, Literal) else self.vma[a]

    def cast(self, a, axes: frozenset, source: Any):
        """``a`` made to vary along ``axes`` too (a pvary of what it lacks). Where ``a`` is a broadcast (reshape,
        transpose...) of one value, that value is cast and the broadcast done again: the transpose then sums the
        smaller cotangent over the devices, as JAX's (which casts before it broadcasts)."""
        missing = (axes & self.names) - self.of(a)
        if not missing or isinstance(a, Literal):
            return a
        key = (a, missing)
        if key in self.casts:
            return self.casts[key]
        made = self.shaped.get(a)
        out = Var(a.aval)
        if made is not None:
            self.eqns.append(Eqn(made.prim, [self.cast(made.inputs[0], axes, source)], [out], made.params,
                                 made.source))
        else:
            self.eqns.append(Eqn(pvary_p, [a], [out], {"axes": tuple(n for n in self.order if n in missing)},
                                 source))
        self.vma[out] = self.of(a) | missing
        self.casts[key] = out
        return out

    def emit(self, eqn: Eqn, inputs: list, outs_vma=None) -> None:
        new = Eqn(eqn.prim, inputs, eqn.outputs, eqn.params, eqn.source)
        self.eqns.append(new)
        if outs_vma is None:
            outs_vma = eqn_varying_axes(new, [self.of(a) for a in inputs], self.names)
        self.vma.update(zip(eqn.outputs, outs_vma))

    def linear_eqn(self, eqn: Eqn, ins: list, linear: set) -> None:
        name, src = eqn.prim.name, eqn.source
        if name == "pvary":  # the cast itself, of the axes the value does not vary along yet
            self.renamed[eqn.outputs[0]] = self.cast(ins[0], frozenset(_names(eqn.params["axes"])), src)
        elif name in _COLLECTIVE_AXES:
            self.emit(eqn, [self.cast(ins[0], frozenset(_names(eqn.params["axis_name"])), src)])
        elif has_sub_programs(eqn):
            every = self.names
            self.emit(eqn, [self.cast(a, every, src) if _is_linear(o, linear) else a
                            for o, a in zip(eqn.inputs, ins)], outs_vma=[every] * len(eqn.outputs))
        else:
            joint = frozenset().union(*[self.of(a) for a in ins])
            self.emit(eqn, [self.cast(a, joint, src) if _is_linear(o, linear) else a
                            for o, a in zip(eqn.inputs, ins)])
            if name in _RESHAPING and len(ins) == 1:
                self.shaped[eqn.outputs[0]] = self.eqns[-1]


def _is_linear(a, linear: set) -> bool:
    return isinstance(a, Var) and a in linear


def explicit_varying(ir: IR, linear_in: Sequence[bool], in_vma: Sequence[frozenset],
                     const_vma: Sequence[frozenset], out_vma: Sequence[frozenset],
                     mesh_names: Sequence[str]) -> tuple[IR, list[frozenset]]:
    """``ir`` with the varying-axes types of its linear part explicit (the module's docstring), its outputs
    made to vary along at least ``out_vma``; and the varying axes of its outputs."""
    typing = _Typing(tuple(mesh_names))
    typing.vma.update(zip(ir.constvars, const_vma))
    typing.vma.update(zip(ir.invars, in_vma))
    linear = {v for v, lin in zip(ir.invars, linear_in) if lin}
    for eqn in ir.eqns:
        ins = [typing.read(a) for a in eqn.inputs]
        if any(_is_linear(a, linear) for a in eqn.inputs):
            linear.update(eqn.outputs)
            typing.linear_eqn(eqn, ins, linear)
        else:
            typing.emit(eqn, ins)
    outs = [typing.cast(typing.read(a), frozenset(v), None) if _is_linear(a, linear) else typing.read(a)
            for a, v in zip(ir.outvars, out_vma)]
    return IR(list(ir.constvars), list(ir.invars), typing.eqns, outs), [typing.of(a) for a in outs]


def backward_pass_typed(ir: IR, consts: Sequence[Any], args: Sequence[Any], cts_out: Sequence[Any], *,
                        in_vma: Sequence[frozenset], const_vma: Sequence[frozenset], out_vma: Sequence[frozenset],
                        mesh_names: Sequence[str], wanted: Sequence[bool] | None = None) -> list[Any]:
    """``transpose.backward_pass`` with varying-axes types: ``in_vma``/``const_vma`` say what the invars and
    constvars vary along, ``out_vma`` what each output cotangent does (an invariant one is one value)."""
    typed, typed_out = explicit_varying(ir, [is_undefined(a) for a in args], in_vma, const_vma, out_vma, mesh_names)
    order = tuple(mesh_names)
    cts = [c if c is None or isinstance(c, Zero) else first_along(c, [n for n in order if n in t - o])
           for c, t, o in zip(cts_out, typed_out, out_vma)]
    return backward_pass(typed, consts, args, cts, wanted, typed=True)


def typing_in_body(primals: Sequence[Any], residuals: Sequence[Any], lin_consts: Sequence[Any], lin_ir: IR,
                   nonzero: Sequence[bool]) -> dict | None:
    """For a linearization done right in a ``shard_map`` body that checks varying axes (``grad``/``vjp``/
    ``linear_transpose`` of the body's values): ``backward_pass_typed``'s keywords, for a linear IR whose invars
    are the residuals then the tangents of the ``nonzero`` primals. None anywhere else (outside bodies, in
    ``check_vma=False`` ones, and inside a ``jit`` or loop within a body, where the untyped rules stay)."""
    found = varying_of_values([*primals, *residuals, *lin_consts])
    if found is None or not found[2]:
        return None
    vmas, mesh_names, _ = found
    p_vma, rest = vmas[:len(primals)], vmas[len(primals):]
    in_vma = rest[:len(residuals)] + [v for v, nz in zip(p_vma, nonzero) if nz]
    const_vma = rest[len(residuals):]
    out_vma = varying_axes(lin_ir, in_vma, frozenset(mesh_names), const_vma)
    return {"in_vma": in_vma, "const_vma": const_vma, "out_vma": out_vma, "mesh_names": mesh_names}
