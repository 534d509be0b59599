"""Tangent and cotangent values: symbolic zeros, float0, accumulation."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.avals import ShapedArray

# JAX's dtype for tangents of integer and boolean values: carries no data.
float0 = np.dtype([("float0", np.void, 0)])


class Zero:
    """A tangent (or cotangent) known to be zero; never materialised unless needed."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


def is_differentiable_dtype(dtype: np.dtype) -> bool:
    return dtypes.is_inexact(dtype)


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """The abstract value of a tangent of ``aval`` (integer/bool primals have float0 tangents)."""
    if is_differentiable_dtype(aval.dtype):
        return aval
    return ShapedArray(aval.shape, float0, False)


def zeros_like_aval(aval: ShapedArray) -> Any:
    """A concrete zero array of ``aval`` (a traced one inside a trace)."""
    if aval.dtype == float0:
        return np.zeros(aval.shape, float0)
    return lax.broadcast_in_dim(lax.literal(0, aval.dtype, aval.weak_type), aval.shape, ())


def instantiate(t: Any) -> Any:
    """Materialise a symbolic zero."""
    return zeros_like_aval(t.aval) if isinstance(t, Zero) else t


def add_tangents(a: Any, b: Any) -> Any:
    """Sum of two tangents, keeping symbolic zeros symbolic."""
    if isinstance(a, Zero) or a is None:
        return b
    if isinstance(b, Zero) or b is None:
        return a
    return lax.add(a, b)
