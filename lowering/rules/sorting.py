"""Emission rule for ``sort``: ``stablehlo.sort`` with a lexicographic "less than" comparator."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir

from ..module import op
from ..registry import register
from ..types import element_type, tensor_type
from .elementwise import compare


def _scalar(dtype) -> ir.Type:
    return ir.RankedTensorType.get([], element_type(dtype))


def _or(a: ir.Value, b: ir.Value) -> ir.Value:
    return op("stablehlo.or", [a, b], a.type)


def _and(a: ir.Value, b: ir.Value) -> ir.Value:
    return op("stablehlo.and", [a, b], a.type)


def _not(a: ir.Value) -> ir.Value:
    return op("stablehlo.not", [a], a.type)


def _float_lt_eq(a: ir.Value, b: ir.Value, dtype: np.dtype, need_eq: bool) -> tuple[ir.Value, ir.Value | None]:
    """NumPy's float order: NaN after everything, all NaNs equal, -0.0 == 0.0."""
    a_nan, b_nan = compare(a, a, "NE", dtype), compare(b, b, "NE", dtype)
    lt = _or(compare(a, b, "LT", dtype), _and(b_nan, _not(a_nan)))
    eq = _or(compare(a, b, "EQ", dtype), _and(a_nan, b_nan)) if need_eq else None
    return lt, eq


def lt_eq(a: ir.Value, b: ir.Value, dtype: np.dtype, need_eq: bool = True) -> tuple[ir.Value, ir.Value | None]:
    """``(a < b, a == b)`` of two scalars of ``dtype`` in kiln's sort order (``a == b`` only if needed)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        part = np.dtype(np.float64 if dtype == np.complex128 else np.float32)
        t = _scalar(part)
        re_lt, re_eq = _float_lt_eq(op("stablehlo.real", [a], t), op("stablehlo.real", [b], t), part, True)
        im_lt, im_eq = _float_lt_eq(op("stablehlo.imag", [a], t), op("stablehlo.imag", [b], t), part, need_eq)
        return _or(re_lt, _and(re_eq, im_lt)), (_and(re_eq, im_eq) if need_eq else None)
    if dtype.kind in "fV":
        return _float_lt_eq(a, b, dtype, need_eq)
    return compare(a, b, "LT", dtype), (compare(a, b, "EQ", dtype) if need_eq else None)


@register("sort")
def _sort(ctx, eqn, *operands):
    avals = [v.aval for v in eqn.inputs]
    num_keys = eqn.params["num_keys"]
    sort_op = ir.Operation.create(
        "stablehlo.sort", results=[tensor_type(a) for a in avals], operands=list(operands),
        attributes={"dimension": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), eqn.params["dimension"]),
                    "is_stable": ir.BoolAttr.get(bool(eqn.params["is_stable"]))},
        regions=1)
    arg_types = [t for a in avals for t in (_scalar(a.dtype), _scalar(a.dtype))]
    block = sort_op.regions[0].blocks.append(*arg_types)
    with ir.InsertionPoint(block):
        args = block.arguments
        # Lexicographic: key 0 decides; on a tie, key 1; ... (built from the last key outwards).
        result = None
        for k in reversed(range(num_keys)):
            lt, eq = lt_eq(args[2 * k], args[2 * k + 1], avals[k].dtype, need_eq=result is not None)
            result = lt if result is None else _or(lt, _and(eq, result))
        ir.Operation.create("stablehlo.return", operands=[result])
    return list(sort_op.results)


@register("top_k")
def _top_k(ctx, eqn, x):
    """XLA's TopK (``chlo.top_k``, legalised by XLA): the k largest along the last axis, ties by index."""
    return op("chlo.top_k", [x], [tensor_type(v.aval) for v in eqn.outputs],
              k=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), eqn.params["k"]))
