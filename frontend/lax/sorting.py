"""Sorting: the ``sort`` primitive (``stablehlo.sort``) and the lax functions over it
(``sort``, ``sort_key_val``, ``argsort``, ``top_k``), plus ``clamp``.

``sort`` orders its operands along one dimension by the first ``num_keys`` of them
(lexicographically). Floating-point keys sort as NumPy sorts them: ascending, ``-0.0`` and ``0.0``
equal (a stable sort keeps their order), NaNs last; complex keys by real part, then imaginary part.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.axes import canonical_axis
from ..core.errors import ShapeError
from ..core.primitive import Primitive
from ..core.tracing import abstractify
from . import api

__all__ = ["sort", "sort_key_val", "argsort", "top_k", "clamp"]


def _sort_rule(*operands: ShapedArray, dimension: int, is_stable: bool, num_keys: int) -> list[ShapedArray]:
    if not operands:
        raise ValueError("kiln.lax.sort: needs at least one operand")
    shape = operands[0].shape
    for o in operands[1:]:
        if o.shape != shape:
            raise ValueError("kiln.lax.sort: all operands must have the same shape, got "
                             + ", ".join(str(x.shape) for x in operands))
    if not 0 <= dimension < len(shape):
        raise ValueError(f"kiln.lax.sort: dimension {dimension} is out of range for operands of shape {shape}")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"kiln.lax.sort: num_keys={num_keys} must be between 1 and the number of operands "
                         f"({len(operands)})")
    return list(operands)


sort_p = Primitive("sort", _sort_rule, multiple_results=True)


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sort ``operand`` (an array, or a tuple of arrays of one shape) along ``dimension``.

    With several operands, all are permuted by the order of the first ``num_keys`` of them
    (lexicographic: the first key decides, ties go to the next). Returns an array for an array, a
    tuple for a sequence. Floats sort NaNs last with ``-0.0 == 0.0``, as NumPy.
    """
    single = not isinstance(operand, (tuple, list))
    operands = [operand] if single else list(operand)
    if not operands:
        raise ValueError("kiln.lax.sort: needs at least one operand")
    avals = [abstractify(o) for o in operands]
    if isinstance(num_keys, bool) or not isinstance(num_keys, (int, np.integer)):
        raise TypeError(f"kiln.lax.sort: num_keys must be an int, got {num_keys!r}")
    if avals[0].ndim == 0:
        raise ValueError("kiln.lax.sort: cannot sort a 0-d array (it has no dimension to sort along)")
    dim = canonical_axis("kiln.lax.sort", dimension, avals[0].ndim, what="dimension")
    if all(a.shape == avals[0].shape for a in avals) and 1 <= num_keys <= len(avals) and avals[0].shape[dim] <= 1:
        outs = operands  # nothing to reorder
    else:
        outs = sort_p.bind(*operands, dimension=dim, is_stable=bool(is_stable), num_keys=int(num_keys))
    return outs[0] if single else tuple(outs)


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True) -> tuple[Any, Any]:
    """Sort ``keys`` along ``dimension`` and permute ``values`` the same way."""
    return sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)


def argsort(operand: Any, dimension: int = -1, is_stable: bool = True, descending: bool = False,
            index_dtype=np.int32) -> Any:
    """Indices that sort ``operand`` along ``dimension`` (ties keep their order when stable).

    ``descending=True`` orders largest first (NaNs first), equal elements still in index order.
    """
    aval = abstractify(operand)
    if aval.ndim == 0:
        raise ValueError("kiln.lax.argsort: cannot sort a 0-d array (it has no dimension to sort along)")
    dim = canonical_axis("kiln.lax.argsort", dimension, aval.ndim, what="dimension")
    idx = api.broadcasted_iota(dtypes.canonicalize_dtype(index_dtype), aval.shape, dim)
    if descending:
        return _sort_descending((operand, idx), dim, is_stable)[1]
    return sort((operand, idx), dimension=dim, is_stable=is_stable, num_keys=1)[1]


def _sort_descending(operands: Sequence[Any], dim: int, is_stable: bool = True) -> tuple[Any, ...]:
    """Largest first, by the first operand; equal keys keep their index order (when stable)."""
    rev = [api.rev(o, (dim,)) for o in operands]
    out = sort(tuple(rev), dimension=dim, is_stable=is_stable, num_keys=1)
    return tuple(api.rev(o, (dim,)) for o in out)


def _top_k_rule(x: ShapedArray, *, k: int) -> list[ShapedArray]:
    if x.ndim == 0 or not 0 <= k <= x.shape[-1]:
        raise ValueError(f"kiln.lax.top_k: k={k} must be between 0 and the size of the last axis of {x.str_short()}")
    shape = x.shape[:-1] + (k,)
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.dtype(np.int32))]


# The k largest along the last axis (XLA's TopK, ``chlo.top_k``): no full sort of the axis.
top_k_p = Primitive("top_k", _top_k_rule, multiple_results=True)


def top_k(operand: Any, k: int) -> tuple[Any, Any]:
    """The ``k`` largest entries along the last axis and their indices (int32).

    Largest first; equal values in index order (lower index first); NaN counts as the largest; ``-0.0``
    ranks below ``0.0`` (XLA's TopK order, as JAX). Booleans are ordered by a sort.
    """
    aval = abstractify(operand)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"kiln.lax.top_k: k must be a static int, got {type(k).__name__} {k!r}")
    if aval.ndim == 0:
        raise ValueError("kiln.lax.top_k: the operand must have at least one dimension, got a 0-d array")
    n = aval.shape[-1]
    if not 0 <= k <= n:
        raise ValueError(f"kiln.lax.top_k: k={k} must be between 0 and the size of the last axis ({n})")
    if aval.dtype.kind == "c":
        raise TypeError("kiln.lax.top_k: complex arrays have no order")
    if aval.dtype == np.bool_:
        dim = aval.ndim - 1
        idx = api.broadcasted_iota(np.int32, aval.shape, dim)
        values, indices = _sort_descending((operand, idx), dim)
        if k < n:
            start, limit = (0,) * aval.ndim, aval.shape[:-1] + (k,)
            values, indices = api.slice(values, start, limit), api.slice(indices, start, limit)
        return values, indices
    if dtypes.is_inexact(aval.dtype):  # XLA ranks a NaN with its sign bit set lowest: make every NaN positive
        operand = api.select(api.ne(operand, operand), api.full_like(operand, np.nan), operand)
    values, indices = top_k_p.bind(operand, k=int(k))
    return values, indices


def _clamp_rule(lo: ShapedArray, x: ShapedArray, hi: ShapedArray) -> ShapedArray:
    for name, b in (("min", lo), ("max", hi)):
        if b.dtype != x.dtype:
            raise TypeError(f"kiln.lax.clamp: {name} has dtype {b.dtype.name} but x has {x.dtype.name} (kiln.lax does "
                            "not promote)")
        if b.shape != x.shape:
            raise ShapeError(f"kiln.lax.clamp: {name} must be a scalar or have x's shape {x.shape}, got shape "
                             f"{b.shape}")
    return ShapedArray(x.shape, x.dtype, lo.weak_type and x.weak_type and hi.weak_type)


# One primitive, as JAX's (StableHLO's clamp): its derivative at the bounds is JAX's (a tangent passes only strictly
# inside them), not that of the min and max it computes.
clamp_p = Primitive("clamp", _clamp_rule)


def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: A002 - JAX's names
    """``x`` clipped to ``[min, max]`` elementwise; ``min``/``max`` may be scalars (as in JAX)."""
    x_aval = abstractify(x)
    bounds = []
    for b in (min, max):
        if api._is_py_scalar(b):
            b = api.literal(b, x_aval.dtype, x_aval.weak_type)
        b_aval = abstractify(b)
        if b_aval.shape == () and x_aval.shape != () and b_aval.dtype == x_aval.dtype:
            b = api.broadcast_in_dim(b, x_aval.shape, ())
        bounds.append(b)
    return clamp_p.bind(bounds[0], x, bounds[1])
