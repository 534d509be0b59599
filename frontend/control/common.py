"""Helpers shared by the control-flow primitives: tracing Python callables into call bodies, and
checking that branches/iterations agree on types."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..core import dtypes, tree_util
from ..core.avals import ShapedArray
from ..core.errors import KilnError
from ..core.ir import ClosedIR
from ..core.source_info import fun_name  # noqa: F401  (the control-flow modules import it from here)
from ..core.tracing import abstractify, trace_to_ir


class ControlFlowError(KilnError, TypeError):
    """Branches or loop bodies whose types do not agree, or a bad predicate."""


def trace_callable(fun: Callable, in_tree, in_avals: Sequence[ShapedArray], name: str,
                   input_hints: Sequence[Any] | None = None,
                   check_out: Callable[[Any], None] | None = None,
                   ref_writes: list | None = None) -> tuple[ClosedIR, Any]:
    """Trace ``fun(*unflatten(in_tree, args))``; returns the ClosedIR (with consts) and the output tree.
    ``check_out`` is called with ``fun``'s output as it returned it; ``ref_writes`` collects the refs created
    outside that ``fun`` writes (see ``trace_to_ir``)."""
    out_tree_box = []

    def flat_fun(*tracers):
        out = fun(*tree_util.tree_unflatten(in_tree, list(tracers)))
        if check_out is not None:
            check_out(out)
        leaves, tree = tree_util.tree_flatten(out)
        out_tree_box.append(tree)
        return leaves

    closed, _ = trace_to_ir(flat_fun, list(in_avals), name=name, input_hints=input_hints, ref_writes=ref_writes)
    return closed, out_tree_box[0]


def check_callables(where: str, **funs: Any) -> None:
    """Raise a ControlFlowError naming the first argument of ``funs`` that is not callable."""
    for arg, f in funs.items():
        if not callable(f):
            raise ControlFlowError(f"{where}: {arg} must be a callable, got {type(f).__name__}: {f!r:.60}")


def avals_str(avals: Sequence[ShapedArray]) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def same_types(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def carry_compatible(before: ShapedArray, after: ShapedArray) -> bool:
    """Whether a loop body may turn a carry of type ``before`` into ``after``: the same shape and
    dtype, or a weakly typed carry (from a Python scalar) that the body promotes (as JAX)."""
    return before.shape == after.shape and (before.dtype == after.dtype or before.weak_type)


def promote_carry(before: Sequence[ShapedArray], after: Sequence[ShapedArray]) -> list[ShapedArray]:
    """The carry types to trace a loop body with again, as JAX's: a weakly typed carry whose dtype the body
    changes becomes the strongly typed dtype of their promotion (``0`` with ``c + 0.5`` becomes float32). One
    whose dtype the body keeps stays weak (JAX's types match but for weakness), though the loop's carry output
    has the body's type (``scan(lambda c, x: (c + x, c), 0.0, xs)``: a strong carry, weak ys)."""
    out = []
    for a, b in zip(before, after):
        if a.weak_type and a.dtype != b.dtype:
            a = a.update(dtype=dtypes.result_type(a, b), weak_type=False)
        out.append(a)
    return out


def cast_to(x, aval: ShapedArray):
    """``x`` converted to ``aval``'s dtype and weak type where a promoted carry needs it."""
    from .. import lax
    a = abstractify(x)
    if a.dtype != aval.dtype or (a.weak_type and not aval.weak_type):
        return lax.convert_element_type(x, aval.dtype, weak_type=aval.weak_type)
    return x


