"""Reductions over axes (sum, max, min, prod, and, or, argmax, argmin) and dot_general."""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.errors import ShapeError
from ..core.primitive import Primitive


def _check_axes(name: str, x: ShapedArray, axes: tuple[int, ...]) -> None:
    if any(not 0 <= a < x.ndim for a in axes) or len(set(axes)) != len(axes):
        raise ValueError(f"kiln.lax.{name}: axes {axes} are not distinct axes of an array of shape {x.shape}")


def _reduce_rule(name: str, kinds: str):
    def rule(x: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
        _check_axes(name, x, axes)
        kind = dtypes.kind(x.dtype)
        if kind not in kinds:
            raise TypeError(f"kiln.lax.{name}: does not accept dtype {x.dtype.name}")
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type)
    return rule


REDUCTIONS = {"reduce_sum": "iufc", "reduce_prod": "iufc", "reduce_max": "biuf",
              "reduce_min": "biuf", "reduce_and": "biu", "reduce_or": "biu"}
reduce_prims = {name: Primitive(name, _reduce_rule(name, kinds)) for name, kinds in REDUCTIONS.items()}


def _arg_rule(name: str):
    def rule(x: ShapedArray, *, axis: int, index_dtype: np.dtype) -> ShapedArray:
        if not 0 <= axis < x.ndim:
            raise ValueError(f"kiln.lax.{name}: axis {axis} is out of range for an operand of shape {x.shape}; "
                             f"kiln.lax takes an axis in [0, {x.ndim}) (kiln.numpy.{name} takes negative axes too)")
        if x.shape[axis] == 0:
            raise ValueError(f"kiln.lax.{name}: cannot take {name} over an axis of size 0 "
                             f"(shape {x.shape}, axis {axis})")
        if x.dtype.kind == "c":
            raise TypeError(f"kiln.lax.{name}: complex arrays have no order")
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
        return ShapedArray(shape, index_dtype, False)
    return rule


argmax_p = Primitive("argmax", _arg_rule("argmax"))
argmin_p = Primitive("argmin", _arg_rule("argmin"))


def _dot_general_rule(x: ShapedArray, y: ShapedArray, *, dimension_numbers, precision, preferred_element_type):
    del precision  # (None, a pair of lax.Precision or a dot algorithm): how XLA computes, not what
    (xc, yc), (xb, yb) = dimension_numbers
    if len(xc) != len(yc) or len(xb) != len(yb):
        raise ShapeError(f"kiln.lax.dot_general: contracting {xc}/{yc} and batch {xb}/{yb} dimensions "
                         "must come in pairs")
    for a, b in list(zip(xc, yc)) + list(zip(xb, yb)):
        if not (0 <= a < x.ndim and 0 <= b < y.ndim):
            raise ShapeError(f"kiln.lax.dot_general: dimension numbers {dimension_numbers} are out of range "
                             f"for shapes {x.shape} and {y.shape}")
        if x.shape[a] != y.shape[b]:
            raise ShapeError(f"kiln.lax.dot_general: shapes {x.shape} and {y.shape} do not match on the "
                             f"paired dimensions {a} and {b} ({x.shape[a]} != {y.shape[b]})")
    if x.dtype != y.dtype:
        raise TypeError(f"kiln.lax.dot_general: operands must have one dtype, got {x.dtype.name} and "
                        f"{y.dtype.name}")
    batch = tuple(x.shape[a] for a in xb)
    x_free = tuple(d for i, d in enumerate(x.shape) if i not in xc and i not in xb)
    y_free = tuple(d for i, d in enumerate(y.shape) if i not in yc and i not in yb)
    dtype = x.dtype if preferred_element_type is None else preferred_element_type
    return ShapedArray(batch + x_free + y_free, dtype, x.weak_type and y.weak_type)


dot_general_p = Primitive("dot_general", _dot_general_rule)
