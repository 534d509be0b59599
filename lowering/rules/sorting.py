"""Emission rule for ``sort``: ``stablehlo.sort`` with a lexicographic "less than" comparator."""
from __future__ import annotations

from kiln.frontend.core import dtypes

from ..hlo import V, i64_attr, imag, logical_not, op, real, sort, wrap_inputs
from ..registry import register
from ..types import tensor_type


def _float_lt_eq(a: V, b: V, need_eq: bool) -> tuple[V, V | None]:
    """NumPy's float order: NaN after everything, all NaNs equal, -0.0 == 0.0."""
    a_nan, b_nan = a.ne(a), b.ne(b)
    lt = (a < b) | (b_nan & logical_not(a_nan))
    eq = (a.eq(b) | (a_nan & b_nan)) if need_eq else None
    return lt, eq


def lt_eq(a: V, b: V, need_eq: bool = True) -> tuple[V, V | None]:
    """``(a < b, a == b)`` of two scalars in kiln's sort order (``a == b`` only if needed)."""
    if a.dtype.kind == "c":
        re_lt, re_eq = _float_lt_eq(real(a), real(b), True)
        im_lt, im_eq = _float_lt_eq(imag(a), imag(b), need_eq)
        return re_lt | (re_eq & im_lt), ((re_eq & im_eq) if need_eq else None)
    if dtypes.kind(a.dtype) == "f":
        return _float_lt_eq(a, b, need_eq)
    return a < b, (a.eq(b) if need_eq else None)


@register("sort")
def _sort(ctx, eqn, *operands):
    num_keys = eqn.params["num_keys"]

    def less(*args):
        # Lexicographic: key 0 decides; on a tie, key 1; ... (built from the last key outwards).
        result = None
        for k in reversed(range(num_keys)):
            lt, eq = lt_eq(args[2 * k], args[2 * k + 1], need_eq=result is not None)
            result = lt if result is None else lt | (eq & result)
        return result

    out = sort(wrap_inputs(eqn, operands), eqn.params["dimension"], bool(eqn.params["is_stable"]), less)
    return [x.v for x in out]


@register("top_k")
def _top_k(ctx, eqn, x):
    """XLA's TopK (``chlo.top_k``, legalised by XLA): the k largest along the last axis, ties by index."""
    return op("chlo.top_k", [x], [tensor_type(v.aval) for v in eqn.outputs],
              k=i64_attr(eqn.params["k"]))
