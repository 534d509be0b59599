"""kiln IR: typed SSA. An IR is a list of equations over variables and literals.

    { lambda c:f32[3]; a:f32[2,3] b:f32[3,4]. let
        d:f32[2,4] = dot_general[dimension_numbers=(((1,), (0,)), ((), ()))] a b
        e:f32[2,4] = tanh d
      in (e,) }

Variables before ``;`` are constvars (closed-over arrays, passed in at run time), after it the
inputs. Literals are Python/NumPy scalars and small NumPy arrays (at most ``INLINE_CONSTANT_SIZE``
elements, printed ``[0,2]:i32[2]``) written inline; they become ``stablehlo.constant`` operations.
Sub-IRs (a ``jit_call``'s body, a loop body) are ``ClosedIR`` parameters of their equation and print
indented below it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .avals import ShapedArray


class Var:
    """An SSA variable. Identity is the variable; names are given when printing."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()})"


# NumPy arrays with at most this many elements that a traced function reads (a closed-over table, the bounds
# of a gather's indices) are written into the program as literals instead of becoming constvars (arguments
# of the compiled program), as JAX writes small constants inline.
INLINE_CONSTANT_SIZE = 64


class Literal:
    """A constant written into the IR: a 0-d NumPy value (a Python or NumPy scalar) or a small NumPy array
    (``INLINE_CONSTANT_SIZE`` elements at most; a read-only copy), with its abstract value."""

    __slots__ = ("val", "aval")

    def __init__(self, val: Any, aval: ShapedArray):
        if aval.shape:
            self.val = np.array(val, dtype=aval.dtype)  # a copy: the user may change the array later
            self.val.flags.writeable = False
        else:
            self.val = np.asarray(val, dtype=aval.dtype)
        self.aval = aval

    # Literals stand in for Python scalars in promotion: they answer like arrays do.
    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def ndim(self) -> int:
        return self.aval.ndim

    def __repr__(self) -> str:
        return f"Literal({self})"

    def __str__(self) -> str:
        if self.aval.shape:
            return f"{self.val.tolist()}:{self.aval.str_short()}".replace(" ", "")
        v = self.val.item()
        if isinstance(v, bool):
            return str(v)
        if self.aval.dtype.kind in "fc" and not isinstance(v, complex) and float(v).is_integer():
            return f"{v:.1f}"
        return repr(v)


Atom = Var | Literal


@dataclass(eq=False)
class Eqn:
    """``outputs = prim[params](*inputs)``."""

    prim: Any  # frontend.primitive.Primitive
    inputs: list[Atom]
    outputs: list[Var]
    params: dict[str, Any]
    # Where the user's code created it (a core.source_info.SourceInfo), or None when unknown.
    source: Any = None


@dataclass(eq=False)
class IR:
    constvars: list[Var]
    invars: list[Var]
    eqns: list[Eqn]
    outvars: list[Atom]

    def __str__(self) -> str:
        return print_ir(self)

    def pretty_print(self, *, source_info: bool = False) -> str:
        """The IR as text; ``source_info=True`` ends each equation's line with ``# file.py:12 (f)``, the
        user's line that created it."""
        return print_ir(self, source_info=source_info)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]


@dataclass(eq=False)
class ClosedIR:
    """An IR together with the values of its constvars."""

    ir: IR
    consts: list[Any] = field(default_factory=list)

    def __str__(self) -> str:
        return print_ir(self.ir)

    def __repr__(self) -> str:
        return print_ir(self.ir)

    def pretty_print(self, *, source_info: bool = False) -> str:
        """The IR as text; ``source_info=True`` ends each equation's line with ``# file.py:12 (f)``."""
        return print_ir(self.ir, source_info=source_info)

    # A ClosedIR is a parameter of call-like equations; parameters are compared when equations
    # are deduplicated (CSE) and cached, so compare and hash by identity.
    __hash__ = object.__hash__

    @property
    def jaxpr(self) -> IR:
        """The IR without its constants (JAX's ``ClosedJaxpr.jaxpr``: what ``kiln.core.eval_jaxpr`` takes)."""
        return self.ir

    @property
    def eqns(self) -> list:
        return self.ir.eqns

    @property
    def in_avals(self):
        return self.ir.in_avals

    @property
    def out_avals(self):
        return self.ir.out_avals


# ---------------------------------------------------------------------------------------------
# Printing

class _Namer:
    def __init__(self) -> None:
        self.names: dict[Var, str] = {}

    def __call__(self, v: Atom) -> str:
        if isinstance(v, Literal):
            return str(v)
        name = self.names.get(v)
        if name is None:
            name = self.names[v] = _index_to_name(len(self.names))
        return name


def _index_to_name(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    name = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        name = letters[r] + name
    return name


def _format_param(value: Any) -> str:
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return repr(value) if isinstance(value, str) else str(value)


def _is_sub_ir(value: Any) -> bool:
    return isinstance(value, (ClosedIR, IR)) or (isinstance(value, tuple) and bool(value)
                                                 and all(isinstance(v, (ClosedIR, IR)) for v in value))


def print_ir(ir: IR, indent: int = 0, namer: _Namer | None = None, source_info: bool = False) -> str:
    namer = namer or _Namer()
    pad = " " * indent

    def binder(v: Var) -> str:
        return f"{namer(v)}:{v.aval.str_short()}"

    lines = [f"{pad}{{ lambda {' '.join(map(binder, ir.constvars))}; "
             f"{' '.join(map(binder, ir.invars))}. let"]
    for eqn in ir.eqns:
        outs = " ".join(map(binder, eqn.outputs)) if eqn.outputs else "_"
        plain = {k: v for k, v in eqn.params.items() if not _is_sub_ir(v)}
        subs = {}
        for k, v in eqn.params.items():  # sub-IRs, and tuples of them (cond's branches), print below
            if isinstance(v, (ClosedIR, IR)):
                subs[k] = v
            elif _is_sub_ir(v):
                subs.update((f"{k}[{i}]", sub) for i, sub in enumerate(v))
        pstr = ""
        if plain:
            pstr = "[" + " ".join(f"{k}={_format_param(v)}" for k, v in plain.items()) + "]"
        args = " ".join(map(namer, eqn.inputs))
        line = f"{pad}    {outs} = {eqn.prim.name}{pstr} {args}".rstrip()
        if source_info and eqn.source is not None:
            line += f"  # {eqn.source.short()}"
        lines.append(line)
        for k, sub in subs.items():
            sub_ir = sub.ir if isinstance(sub, ClosedIR) else sub
            lines.append(f"{pad}      {k}=")
            lines.append(print_ir(sub_ir, indent + 8, _Namer(), source_info))
    outs = ", ".join(map(namer, ir.outvars))
    trailing = "," if len(ir.outvars) == 1 else ""
    lines.append(f"{pad}  in ({outs}{trailing}) }}")
    return "\n".join(lines)
