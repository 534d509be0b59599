"""``kiln.ad_checkpoint``'s inspection helpers: which values reverse mode saves for the backward pass
(``saved_residuals``, ``print_saved_residuals``); ``checkpoint_name`` is in remat.py.

The residuals are those of ``kiln.vjp``: the known (forward) half of the partially evaluated JVP IR
returns them. Each is described as JAX describes it: an argument, a constant, or the output of an
equation with the user's line that created it.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from ..core import dtypes, tree_util
from ..core.avals import ShapedArray
from ..core.call import call_p
from ..core.ir import Eqn, Literal
from ..core.tracing import abstractify
from .api import _check_arrays, _fun_name, _trace_flat
from .jvp import jvp_ir
from .partial_eval import partial_eval
from .remat import name_p, remat_p


def _arg_names(fun: Callable, args: tuple, kwargs: dict) -> list[str]:
    """``W1``, ``params[0]``, ``kw['a']``: the path of every leaf of ``(args, kwargs)``, headed by the
    parameter's name where the signature gives one (``args[2]`` otherwise)."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = []
    for path, _ in tree_util.tree_flatten_with_path((args, kwargs))[0]:
        if path[0].idx == 0:
            i = path[1].idx
            head = positional[i] if i < len(positional) else f"args[{i}]"
        else:
            head = str(path[1].key)
        names.append(head + tree_util.keystr(path[2:]))
    return names


def _where(source: Any) -> str:
    """``file:line:column (function)`` (no column when it is 0), as JAX summarizes a location."""
    if source is None:
        return "unknown"
    line, col = source.position
    fun = getattr(source.code, "co_qualname", source.function)
    return f"{source.file}:{line}:{col} ({fun})" if col else f"{source.file}:{line} ({fun})"


def _producer(eqn: Eqn, index: int) -> tuple[Eqn, int]:
    """The equation (and output index) that computes output ``index`` of ``eqn``, looking into the body of
    a checkpoint's forward half (JAX inlines that half, so it names the equation inside)."""
    while eqn.prim is remat_p:
        ir = eqn.params["body"].ir
        out = ir.outvars[index]
        inner = next(((e, e.outputs.index(out)) for e in ir.eqns if out in e.outputs), None)
        if inner is None:
            break
        eqn, index = inner
    return eqn, index


def saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> list[tuple[ShapedArray, str]]:
    """The values ``kiln.vjp(f, *args, **kwargs)`` saves for the backward pass: ``(aval, where from)``
    for each, arguments first, then the outputs of equations in program order."""
    flat, in_tree = tree_util.tree_flatten(((args, kwargs),))
    _check_arrays("saved_residuals", flat)
    # Staged, as JAX's (make_jaxpr): kiln.numpy's functions are inlined, so residuals name their primitives.
    closed, _ = _trace_flat(lambda ak: f(*ak[0], **ak[1]), flat, in_tree, _fun_name(f), keeps_calls=False)
    nonzero = [dtypes.is_inexact(abstractify(p).dtype) for p in flat]
    jvp_closed, _ = jvp_ir(closed, nonzero, known_primals=flat)
    split = partial_eval(jvp_closed.ir, [False] * len(flat) + [True] * sum(nonzero))
    known = split.known
    res = known.outvars[len(known.outvars) - split.num_residuals:]
    res_vars = {v for v in res if not isinstance(v, Literal)}
    results: list[tuple[ShapedArray, str]] = [(v.aval, "from a literal") for v in res if isinstance(v, Literal)]
    results += [(v.aval, "from a constant") for v in known.constvars if v in res_vars]
    names = _arg_names(f, args, kwargs)
    results += [(v.aval, f"from the argument {name}") for v, name in zip(known.invars, names) if v in res_vars]
    for outer in known.eqns:
        for i, v in enumerate(outer.outputs):
            if v in res_vars:
                eqn, _ = _producer(outer, i)
                if eqn.prim is call_p:
                    name = eqn.params["name"]
                    while name.startswith("jvp(") and name.endswith(")"):  # (JAX's differentiated call keeps
                        name = name[4:-1]                                   # the function's own name)
                    what = f"output of jitted function '{name}'"
                elif eqn.prim is name_p:
                    what = f"named '{eqn.params['name']}'"
                else:
                    what = f"output of {eqn.prim.name}"
                results.append((v.aval, f"{what} from {_where(eqn.source)}"))
    return results


def print_saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> None:
    """Print ``saved_residuals(f, *args, **kwargs)``, one ``f32[4,4] from the argument x`` line each."""
    for aval, src in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {src}")
