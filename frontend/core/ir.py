"""kiln IR: typed SSA. An IR is a list of equations over variables and literals.

    { lambda a:f32[3]; b:f32[4,3] c:f32[3]. let
        d:f32[4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] b c
        e:f32[4] = tanh d
        f:f32[4] = mul e 2.0:f32[]
      in (f,) }

Variables before ``;`` are constvars (closed-over arrays, passed in at run time), after it the
inputs. Literals are Python/NumPy scalars (printed with their type, ``2.0:f32[]``) and small NumPy
arrays (at most ``INLINE_CONSTANT_SIZE`` elements, printed ``[0,2]:i32[2]``) written inline; they
become ``stablehlo.constant`` operations. Sub-IRs (a ``jit_call``'s body, a loop body) are
``ClosedIR`` parameters of their equation and print inline as its parameters. The text is laid out as
JAX lays out a jaxpr (see Printing below).
"""
from __future__ import annotations

import re
from collections import deque
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
        """``1.0:f32[]``, ``True:bool[]``: the value as JAX prints a literal, and its type; a small array
        ``[0,2]:i32[2]`` (JAX would pass it in as a constvar instead).

        JAX prints a literal's value as Python prints it: a strongly typed one (a NumPy scalar) as the exact
        value of its dtype (``0.10000000149011612``), a weakly typed one as the Python number written in the
        program (``0.1``), which kiln does not keep: it prints the shortest decimal that rounds to the
        literal's value in its dtype, which is that number whenever it has no more digits than the dtype
        holds."""
        return f"{self.value_text()}:{self.aval.str_short()}"

    def value_text(self) -> str:
        """The value part of ``str(literal)``."""
        if self.aval.shape:
            return str(self.val.tolist()).replace(" ", "")
        value = self.val.item()
        if self.aval.weak_type and isinstance(value, (float, complex)):
            v = self.val[()]
            if isinstance(v, np.floating):
                value = _shortest(v)
            elif isinstance(v, np.complexfloating):
                value = complex(_shortest(v.real), _shortest(v.imag))
            else:  # bfloat16, the float8 types
                value = _shortest_by_digits(value, self.aval.dtype)
        return str(value)


def _shortest(v: np.floating) -> float:
    """The Python float with the fewest significant digits that rounds to NumPy float ``v`` in its dtype."""
    return float(np.format_float_scientific(v, unique=True))


def _shortest_by_digits(x: float, dtype: np.dtype) -> float:
    """As ``_shortest``, for dtypes NumPy's formatting does not know (bfloat16, the float8 types)."""
    if not np.isfinite(x):
        return x
    target = np.asarray(x).astype(dtype)
    for digits in range(1, 18):
        y = float(f"{x:.{digits}g}")
        if np.asarray(y).astype(dtype) == target:
            return y
    return x


Atom = Var | Literal


@dataclass(eq=False)
class Eqn:
    """``outputs = prim[params](*inputs)``."""

    prim: Any  # frontend.primitive.Primitive
    inputs: list[Atom]
    outputs: list[Var]
    params: dict[str, Any]
    # Where the user's code created it (a core.source_info.SourceInfo, which also carries the XLA metadata in effect
    # there), or None when unknown.
    source: Any = None

    # JAX's names for the fields (``JaxprEqn.primitive``, ``.invars``, ``.outvars``), for interpreters written
    # against jaxprs.
    @property
    def primitive(self) -> Any:
        return self.prim

    @property
    def invars(self) -> list[Atom]:
        return self.inputs

    @property
    def outvars(self) -> list[Var]:
        return self.outputs

    def __str__(self) -> str:
        """The equation as JAX prints a ``JaxprEqn`` (``a:f32[] = mul b 2.0:f32[]``), its variables named in
        the order they are printed."""
        return _render(_Printer(IR([], [], [], []), source_info=False).eqn(self))


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
    # are cached, so compare and hash by identity.
    __hash__ = object.__hash__

    @property
    def jaxpr(self) -> IR:
        """The IR without its constants (JAX's ``ClosedJaxpr.jaxpr``: what ``kiln.core.eval_jaxpr`` takes)."""
        return self.ir

    @property
    def literals(self) -> list[Any]:
        """The values of the constvars (JAX's ``ClosedJaxpr.literals``, another name of ``consts``)."""
        return self.consts

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
#
# The text is laid out as JAX lays out a jaxpr, so that a program that prints ``make_jaxpr(f)(x)`` prints
# the same text under kiln wherever kiln's IR holds the same equations:
#
# * a group (an IR, a list of binders, an equation's ``[params]``) goes on one line when it fits in 80
#   columns from where it starts, else its breaks become newlines (equations separated by ``"; "`` on one
#   line, one per line otherwise);
# * one set of variable names for the IR and its sub-IRs, ``a`` ... ``z``, ``ba``, ``bb`` ... given in the
#   order they are printed; the results nothing reads in the printed IR itself (not its sub-IRs) are
#   ``_`` and take no name;
# * literals with their type (``1.0:f32[]``, see ``Literal.__str__``);
# * parameters sorted by name (``name`` first for ``jit_call`` and the custom-derivative calls), sub-IRs
#   written inline as parameter values; a sub-IR that appears more than once, or that has more than 10
#   equations, printed first as ``let name = { lambda ... } in`` and referred to by name;
# * with ``source_info=True``, each equation's source line as a ``# file.py:12 (f)`` note after the line
#   that binds its results, the notes lined up one column past the longest line.

_WIDTH = 80

# Layout documents: ("text", str, note or None), ("cat", [docs]), ("brk", str: its text when not broken),
# ("group", doc), ("nest", extra indent, doc).
_NIL = ("cat", [])


def _text(s: str, note: str | None = None) -> tuple:
    return ("text", s, note)


def _cat(*docs: tuple) -> tuple:
    return ("cat", list(docs))


def _brk(s: str = " ") -> tuple:
    return ("brk", s)


def _group(doc: tuple) -> tuple:
    return ("group", doc)


def _nest(n: int, doc: tuple) -> tuple:
    return ("nest", n, doc)


def _join(sep: tuple, docs: list) -> tuple:
    out = []
    for i, d in enumerate(docs):
        if i:
            out.append(sep)
        out.append(d)
    return ("cat", out)


def _fits(doc: tuple, room: int) -> bool:
    """Whether ``doc`` laid out on one line takes at most ``room`` columns."""
    todo = [doc]
    while todo and room >= 0:
        d = todo.pop()
        kind = d[0]
        if kind == "text" or kind == "brk":
            room -= len(d[1])
        elif kind == "cat":
            todo.extend(reversed(d[1]))
        else:  # group, nest
            todo.append(d[-1])
    return room >= 0


def _render(doc: tuple, width: int = _WIDTH) -> str:
    lines: list[tuple[str, int, list[str]]] = []  # (text, width, notes)
    parts: list[str] = []
    notes: list[str] = []
    col = 0
    todo = [(0, False, doc)]  # (indent, laid out on one line, doc)
    while todo:
        indent, flat, d = todo.pop()
        kind = d[0]
        if kind == "text":
            parts.append(d[1])
            col += len(d[1])
            if d[2] is not None:
                notes.append(d[2])
        elif kind == "cat":
            todo.extend([(indent, flat, c) for c in reversed(d[1])])
        elif kind == "brk":
            if flat:
                parts.append(d[1])
                col += len(d[1])
            else:
                lines.append(("".join(parts), col, notes))
                parts, notes, col = [" " * indent], [], indent
        elif kind == "group":
            todo.append((indent, _fits(d[1], width - col), d[1]))
        else:  # nest
            todo.append((indent + d[1], flat, d[2]))
    lines.append(("".join(parts), col, notes))
    widest = max(w for _, w, _ in lines)
    out = []
    for text, w, line_notes in lines:
        for i, note in enumerate(line_notes):
            text += (" " * (widest - w) if i == 0 else "\n" + " " * widest) + " # " + note
        out.append(text)
    return "\n".join(out)


def _var_name(i: int) -> str:
    """The ``i``-th variable name: a ... z, ba ... bz, ca ... (base 26, ``a`` the digit 0)."""
    name = ""
    while not name or i:
        i, r = divmod(i, 26)
        name = chr(ord("a") + r) + name
    return name


def _format_param(value: Any) -> str:
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    if isinstance(value, frozenset):
        try:
            items = sorted(value)
        except TypeError:
            items = sorted(value, key=repr)
        return f"frozenset({{{', '.join(map(repr, items))}}})"
    return re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)), str(value))


def _sub_irs(value: Any) -> list[IR]:
    """The IRs a parameter holds: itself, or the elements of a tuple of them (cond's branches)."""
    items = value if isinstance(value, tuple) else (value,)
    return [v.ir if isinstance(v, ClosedIR) else v for v in items if isinstance(v, (ClosedIR, IR))]


def _is_sub_ir_tuple(value: Any) -> bool:
    return type(value) is tuple and all(isinstance(v, (ClosedIR, IR)) for v in value)


# Parameters left out or written differently, per primitive, as JAX prints its counterparts.
def _broadcast_in_dim_params(params: dict) -> dict:
    params = {k: v for k, v in params.items() if k != "shape"}  # the result's type says it
    if not params.get("broadcast_dimensions", True):
        del params["broadcast_dimensions"]
    return params


def _dot_general_params(params: dict) -> dict:
    params = {k: v for k, v in params.items() if v is not None}
    (lhs_c, rhs_c), (lhs_b, rhs_b) = params["dimension_numbers"]
    params["dimension_numbers"] = ((list(lhs_c), list(rhs_c)), (list(lhs_b), list(rhs_b)))
    return params


def _renamed(names: dict[str, str]):
    """Parameters printed under JAX's names (kiln's ``body`` of a scan is JAX's ``jaxpr``)."""
    def rule(params: dict) -> dict:
        return {names.get(k, k): v for k, v in params.items()}
    return rule


_PARAM_RULES = {"broadcast_in_dim": _broadcast_in_dim_params, "dot_general": _dot_general_params,
                "while": _renamed({"body": "body_jaxpr", "cond": "cond_jaxpr"}), "scan": _renamed({"body": "jaxpr"}),
                "iota": lambda params: {**params, "sharding": params.get("sharding")}}  # JAX shows sharding=None
_NAME_FIRST = ("jit_call", "custom_jvp_call", "custom_vjp_call")


class _Printer:
    def __init__(self, top: IR, source_info: bool) -> None:
        self.source_info = source_info
        self.shorts: dict[ShapedArray, str] = {}  # aval -> its str_short(), computed once
        self.names: dict[Var, str] = {}
        self.next_name = 0
        # The top IR's results that nothing reads are "_" (JAX's rule: the top IR only).
        read = {v for v in top.outvars if isinstance(v, Var)}
        for eqn in reversed(top.eqns):
            for v in eqn.outputs:
                if v not in read:
                    self.names[v] = "_"
            read.update(v for v in eqn.inputs if isinstance(v, Var))
        self.shared: dict[int, str] = {}  # id(IR) -> name, for sub-IRs printed once, first
        self.shared_irs: list[IR] = []
        self._find_shared(top)
        self.taken = set(self.shared.values())  # no variable takes a shared IR's name

    def _find_shared(self, top: IR) -> None:
        counts: dict[int, int] = {}
        irs: dict[int, IR] = {}
        labels: dict[int, str] = {}
        queue = deque([top])
        while queue:
            ir = queue.popleft()
            key = id(ir)
            irs[key] = ir
            counts[key] = counts.get(key, 0) + 1 + (ir is not top and len(ir.eqns) > 10)
            for eqn in ir.eqns:
                name = eqn.params.get("name")
                for value in eqn.params.values():
                    for sub in _sub_irs(value):
                        queue.append(sub)
                        if isinstance(name, str):
                            labels.setdefault(id(sub), name.strip("<>"))
        used: dict[str, int] = {}
        for key, count in counts.items():
            if count == 1:
                continue
            name = labels.get(key, "jaxpr")
            seen = used.get(name, 0)
            used[name] = seen + 1
            if seen:
                name += str(seen)
                used[name] = used.get(name, 0) + 1
            self.shared[key] = name
            self.shared_irs.append(irs[key])

    def name(self, v: Var) -> str:
        name = self.names.get(v)
        if name is None:
            while True:
                name = _var_name(self.next_name)
                self.next_name += 1
                if name not in self.taken:
                    break
            self.names[v] = name
        return name

    def short(self, aval: ShapedArray) -> str:
        text = self.shorts.get(aval)
        if text is None:
            text = self.shorts[aval] = aval.str_short()
        return text

    def atom(self, v: Atom) -> str:
        return f"{v.value_text()}:{self.short(v.aval)}" if isinstance(v, Literal) else self.name(v)

    def atoms(self, vs: list, sep: str = "", binders: bool = False) -> tuple:
        if binders:
            items = [_text(f"{self.name(v)}:{self.short(v.aval)}") for v in vs]
        else:
            items = [_text(self.atom(v)) for v in vs]
        if len(items) < 2:  # no break inside: the group and the nesting would change nothing
            return items[0] if items else _NIL
        return _nest(2, _group(_join(_cat(_text(sep), _group(_brk())), items)))

    def suggest(self, inner: list, outer: list) -> None:
        """Name ``inner`` (a sub-IR's inputs or results) after ``outer`` (the equation's), where free."""
        if len(inner) != len(outer):
            return
        given = set()
        for i, o in zip(inner, outer):
            if isinstance(o, Var) and o not in given and isinstance(i, Var) and i not in self.names:
                given.add(o)
                self.names[i] = self.name(o)

    def top(self, ir: IR) -> tuple:
        docs = [_cat(_text(f"let {self.shared[id(s)]} = "), self.skeleton(s), _text(" in"), _brk())
                for s in self.shared_irs]
        return _cat(*docs, self.ir(ir))

    def ir(self, ir: IR) -> tuple:
        name = self.shared.get(id(ir))
        return _text(name) if name is not None else self.skeleton(ir)

    def skeleton(self, ir: IR) -> tuple:
        consts = self.atoms(ir.constvars, binders=True)
        ins = self.atoms(ir.invars, binders=True)
        eqns = _join(_brk("; "), [self.eqn(e) for e in ir.eqns])
        outs = self.atoms(ir.outvars, sep=",")
        close = ",)" if len(ir.outvars) == 1 else ")"
        return _cat(_group(_nest(2, _cat(
            _text("{ lambda "), consts, _text("; "), ins, _text(". let"), _nest(2, _cat(_brk(), eqns)), _brk(),
            _text("in "), _text("("), outs, _text(close)))), _text(" }"))

    def eqn(self, eqn: Eqn) -> tuple:
        prim = eqn.prim.name
        params = dict(eqn.params)
        rule = _PARAM_RULES.get(prim)
        if rule is not None:
            params = rule(params)
        order = sorted(params)
        if prim in _NAME_FIRST and "name" in params:
            order = ["name"] + [k for k in order if k != "name"]
        if prim == "jit_call":
            for value in params.values():
                for sub in _sub_irs(value):
                    if id(sub) not in self.shared:
                        self.suggest(sub.invars, eqn.inputs)
                        self.suggest(sub.outvars, eqn.outputs)
        lhs = self.atoms(eqn.outputs, binders=True)
        note = eqn.source.short() if self.source_info and eqn.source is not None else None
        rhs = [_text(prim), self.params([(k, params[k]) for k in order]), _cat(_text(" "), self.atoms(eqn.inputs))]
        if eqn.outputs:
            return _cat(lhs, _text(" = ", note), *rhs)
        return _cat(*rhs)

    def params(self, items: list) -> tuple:
        if not items:
            return _NIL
        docs = [_cat(_text(f"{k}="), self.value(v)) for k, v in items]
        return _group(_cat(_nest(2, _cat(_text("["), _brk(""), _join(_brk(), docs))), _brk(""), _text("]")))

    def value(self, v: Any) -> tuple:
        if _is_sub_ir_tuple(v):
            docs = [self.ir(s) for s in _sub_irs(v)]
            return _group(_cat(_nest(2, _cat(_text("("), _brk(""), _join(_brk(), docs))), _brk(""), _text(")")))
        if isinstance(v, (ClosedIR, IR)):
            return self.ir(v.ir if isinstance(v, ClosedIR) else v)
        return _text(_format_param(v))


def print_ir(ir: IR, source_info: bool = False) -> str:
    """``ir`` as text, laid out as JAX lays out a jaxpr (see above)."""
    printer = _Printer(ir, source_info)
    return _render(printer.top(ir))
