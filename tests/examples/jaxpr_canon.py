"""kiln's and JAX's jaxprs of the same function, written out alike so that the against_jax tests can compare them
equation by equation (tests/examples/test_docs_jaxpr_against_jax.py, test_docs_tracing_against_jax.py).

``canonical(closed)`` reads a ``make_jaxpr`` result of either library (by duck typing: no import of either) and
writes it in the jaxpr grammar with its own variable names (``v0``, ``v1``, ... in each (sub-)jaxpr, in order of
definition), each binder with its dtype, shape and weak type, each literal with its value and type, and each
equation's parameters, the sub-jaxprs among them written the same way, recursively. It takes out what kiln names or
writes otherwise on purpose (README, "Differences from JAX": `jit_call`/`ir=` for JAX's `jit`/`jaxpr=`, and the
parameters JAX's types carry that kiln's have none of: shardings, layouts, meshes and pjit's compiler settings, and
parameters whose value is None; what is left out is returned, per primitive, for the tests to check), and, on
request, one difference at a time that a test checks on its own:

- ``scalar_broadcasts``: a ``broadcast_in_dim`` of a rank-0 operand whose result only feeds elementwise equations is
  taken out, its operand used in its place (kiln broadcasts the scalar operand of a binary operation, JAX 0.10.2's
  binary primitives take it as it is). Applied to both libraries' jaxprs alike.
- ``weak_only_converts``: a ``convert_element_type`` to its operand's own dtype that changes only the weak type is
  taken out (kiln makes a branch's result as weakly typed as the cond's, JAX 0.10.2 leaves the branch as it is).
"""
from __future__ import annotations

from typing import Any

import numpy as np

# kiln's names for JAX's (README: `jit_call`/`ir=` for `pjit`/`jaxpr=`; a scan's `body` is printed as `jaxpr`).
PRIMITIVE_NAMES = {"jit_call": "jit"}
PARAM_NAMES = {"jit": {"ir": "jaxpr"}, "scan": {"body": "jaxpr"}, "while": {"body": "body_jaxpr", "cond": "cond_jaxpr"}}
# JAX's parameters that kiln's equations do not have because kiln's types carry no shardings or layouts, and pjit's
# compilation settings (kiln's jit_call equation has only `ir` and `name`).
ABSENT_IN_KILN = {"sharding", "out_sharding", "in_shardings", "out_shardings", "in_layouts", "out_layouts", "ctx_mesh",
                  "donated_invars", "keep_unused", "inline", "compiler_options_kvs"}
ELEMENTWISE = {"add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "and", "or", "xor", "eq", "ne", "lt",
               "le", "gt", "ge", "nextafter", "select_n", "clamp"}


def _jaxpr(x: Any) -> Any:
    """The open jaxpr of a closed one (JAX's ClosedJaxpr.jaxpr, kiln's ClosedIR.jaxpr), or x."""
    return getattr(x, "jaxpr", getattr(x, "ir", x))


def _is_sub(x: Any) -> bool:
    return hasattr(_jaxpr(x), "eqns")


def _is_literal(a: Any) -> bool:
    return type(a).__name__ == "Literal"


def _type(aval: Any) -> str:
    return f"{np.dtype(aval.dtype).name}{list(aval.shape)}{'~' if getattr(aval, 'weak_type', False) else ''}"


def _plain(value: Any) -> Any:
    """A parameter's value as plain Python (tuples, ints, strings) for comparison."""
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return np.dtype(value).name
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    return value


class _Writer:
    def __init__(self, scalar_broadcasts: bool, weak_only_converts: bool) -> None:
        self.scalar_broadcasts = scalar_broadcasts
        self.weak_only_converts = weak_only_converts
        self.dropped: dict[str, set[str]] = {}

    def write(self, jaxpr: Any, indent: str = "") -> str:
        names: dict[int, str] = {}
        alias: dict[int, Any] = {}  # id(var) of a taken-out equation's result -> the atom used instead

        def bind(v: Any, result: bool = True) -> str:
            # an unused result is "_" (JAX's DropVar, kiln's unread top-level result)
            if type(v).__name__ == "DropVar" or (result and id(v) not in uses):
                return f"_:{_type(v.aval)}"
            names[id(v)] = name = f"v{len(names)}"
            return f"{name}:{_type(v.aval)}"

        def atom(a: Any) -> str:
            while id(a) in alias:
                a = alias[id(a)]
            if _is_literal(a):
                return f"{np.asarray(a.val).item()!r}:{_type(a.aval)}"
            return names[id(a)]

        uses: dict[int, set[str]] = {}
        for eqn in jaxpr.eqns:
            for a in eqn.invars:
                uses.setdefault(id(a), set()).add(eqn.primitive.name)
        for v in jaxpr.outvars:
            uses.setdefault(id(v), set()).add("<out>")

        head = (f"{{ lambda {' '.join(bind(v, False) for v in jaxpr.constvars)} ; "
                f"{' '.join(bind(v, False) for v in jaxpr.invars)} .")
        lines = [head]
        for eqn in jaxpr.eqns:
            name = PRIMITIVE_NAMES.get(eqn.primitive.name, eqn.primitive.name)
            ins, outs = list(eqn.invars), list(eqn.outvars)
            if (self.scalar_broadcasts and name == "broadcast_in_dim" and ins[0].aval.shape == ()
                    and uses.get(id(outs[0]), set()) <= ELEMENTWISE):
                alias[id(outs[0])] = ins[0]
                continue
            if (self.weak_only_converts and name == "convert_element_type" and not _is_literal(ins[0])
                    and np.dtype(eqn.params["new_dtype"]) == np.dtype(ins[0].aval.dtype)):
                alias[id(outs[0])] = ins[0]
                continue
            renames = PARAM_NAMES.get(name, {})
            params = {renames.get(k, k): v for k, v in eqn.params.items()}
            for k in sorted(params):
                if k in ABSENT_IN_KILN or params[k] is None:
                    self.dropped.setdefault(name, set()).add(k)
            shown = []
            for k in sorted(k for k in params if k not in self.dropped.get(name, ())):
                v = params[k]
                if _is_sub(v):
                    shown.append(f"{k}=" + self.write(_jaxpr(v), indent + "    "))
                elif isinstance(v, (tuple, list)) and v and all(_is_sub(s) for s in v):
                    shown.append(f"{k}=(" + " ".join(self.write(_jaxpr(s), indent + "    ") for s in v) + ")")
                else:
                    shown.append(f"{k}={_plain(v)!r}")
            args = " ".join(atom(a) for a in ins)
            lines.append(f"{indent}  {' '.join(bind(v) for v in outs)} = {name}[{' '.join(shown)}] {args}")
        lines.append(f"{indent}  in ({' '.join(atom(v) for v in jaxpr.outvars)}) }}")
        return "\n".join(lines)


def canonical(closed: Any, *, scalar_broadcasts: bool = False, weak_only_converts: bool = False
              ) -> tuple[str, dict[str, set[str]]]:
    """(the jaxpr written out as above, {primitive: the parameters left out}): those in ABSENT_IN_KILN and those
    whose value is None (JAX's defaults that kiln's primitives do not take: `mul`'s `out_dtype`, `sin`'s
    `accuracy`); the tests check which were left out."""
    writer = _Writer(scalar_broadcasts, weak_only_converts)
    text = writer.write(_jaxpr(closed))
    consts = getattr(closed, "consts", [])
    text += "\nconsts: " + "; ".join(f"{_type(np.asarray(c))} {np.asarray(c).tolist()!r}" for c in consts)
    return text, writer.dropped
