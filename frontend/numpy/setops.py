"""Set operations of kiln.numpy on flattened arrays: isin, union1d, intersect1d, setdiff1d, setxor1d.

Membership is a binary search in the sorted test values (or, for ``isin``'s ``'compare_all'``, a
comparison of every pair). The set results have a data-dependent length: outside ``jit`` it is read
from the device; under ``jit`` pass ``size=`` (the result is padded with ``fill_value``, by default
its smallest value, or truncated), as in JAX.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import dtypes
from ..core.errors import ConcretizationTypeError
from ..core.tracing import abstractify, materialize
from ..driver.eager_jit import eager_jit
from ._util import check_arraylike, promote_dtypes, static_int
from .creation import asarray, ones, zeros
from .index_funcs import _nonzero, take
from .reductions import all as _all
from .reductions import any as _any
from .shape import concatenate, ravel, reshape
from .sorting import argsort, lexsort, searchsorted, sort, unique
from .ufuncs import where

__all__ = ["intersect1d", "isin", "setdiff1d", "setxor1d", "union1d"]

_ISIN_METHODS = ("auto", "compare_all", "binary_search", "sort")


def _flat_pair(fname: str, ar1: Any, ar2: Any) -> tuple[Any, Any]:
    check_arraylike(fname, ar1, ar2)
    a1, a2 = promote_dtypes(fname, ar1, ar2)
    return ravel(asarray(materialize(a1))), ravel(asarray(materialize(a2)))


def _member(x: Any, test: Any) -> Any:
    """For each element of 1-D ``x``: is it in 1-D ``test`` (binary search in the sorted ``test``)?"""
    n = abstractify(test).shape[0]
    if n == 0 or abstractify(x).shape[0] == 0:
        return zeros(abstractify(x).shape, bool)
    s = sort(test)
    i = searchsorted(s, x)
    return take(s, where(i < n, i, n - 1)) == x


@eager_jit("assume_unique", "invert", "method")
def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, *,
         method: str = "auto") -> Any:
    """Elementwise: is ``element`` among the values of ``test_elements``? (``invert``: is it not?)
    The result has ``element``'s shape. ``method``: ``'auto'`` or ``'compare_all'`` compare every pair
    (as JAX's default), ``'binary_search'`` or ``'sort'`` search the sorted test values."""
    if method not in _ISIN_METHODS:
        raise ValueError(f"kiln.numpy.isin: method must be one of {', '.join(map(repr, _ISIN_METHODS))}, got "
                         f"{method!r}")
    check_arraylike("isin", element, test_elements)
    shape = abstractify(element).shape
    x, t = _flat_pair("isin", element, test_elements)
    if abstractify(x).shape[0] == 0 or abstractify(t).shape[0] == 0:
        return (ones if invert else zeros)(shape, bool)
    if method in ("auto", "compare_all"):
        out = _all(x[:, None] != t[None, :], axis=-1) if invert else _any(x[:, None] == t[None, :], axis=-1)
    else:
        found = _member(x, t)
        out = ~found if invert else found
    return reshape(out, shape)


def _unique_valid(fname: str, a: Any, assume_unique: bool) -> tuple[Any, Any, Any]:
    """Sorted values of 1-D ``a`` (its unique values unless ``assume_unique``), the index of each in
    ``a``, and which of them are real (the rest pad a static length ``a.size``)."""
    n = abstractify(a).shape[0]
    if assume_unique:
        order = argsort(a)
        return take(a, order), order, ones((n,), bool)
    values, index, counts = unique(a, return_index=True, return_counts=True, size=n)
    return values, index, counts > 0


def _select(fname: str, values: Any, mask: Any, size: Any, fill_value: Any, *extra: Any) -> Any:
    """The entries of ``values`` (and of each of ``extra``) where ``mask`` is true, in order; with
    ``size``, padded (``fill_value``, default the first selected value) or truncated to it."""
    if size is not None:
        size = static_int(fname, "size", size)
        if size < 0:
            raise ValueError(f"kiln.numpy.{fname}: size must be non-negative, got {size}")
    n = abstractify(values).shape[0]
    if n == 0:
        k = 0 if size is None else size
        fill = 0 if fill_value is None else fill_value
        out = [zeros((k,), abstractify(values).dtype) + asarray(fill, dtype=abstractify(values).dtype)]
        return out + [zeros((k,), abstractify(e).dtype) for e in extra]
    try:
        (pos,) = _nonzero(fname, mask, size, None)
    except ConcretizationTypeError:
        raise ConcretizationTypeError(
            f"kiln.numpy.{fname}: the number of values in the result depends on the data, so it cannot be known under "
            "jit: pass size= (a static int; the result is padded with fill_value or truncated)") from None
    k = abstractify(pos).shape[0]
    picked = take(values, pos)
    if size is not None and k:
        count = mask.astype(dtypes.default_int_dtype()).sum()
        valid = np.arange(k) < count
        fill = picked[0] if fill_value is None else asarray(fill_value, dtype=abstractify(values).dtype)
        picked = where(valid, picked, fill)
        return [picked] + [where(valid, take(e, pos), 0) for e in extra]
    return [picked] + [take(e, pos) for e in extra]


def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted unique values that are in either array (flattened)."""
    a1, a2 = _flat_pair("union1d", ar1, ar2)
    try:
        return unique(concatenate([a1, a2]), size=size, fill_value=fill_value)
    except ConcretizationTypeError:
        raise ConcretizationTypeError(
            "kiln.numpy.union1d: the number of values in the union depends on the data, so it cannot be known under "
            "jit: pass size= (a static int; the result is padded with fill_value or truncated)") from None


@eager_jit("op", "assume_unique")
def _candidates(a1: Any, a2: Any, *, op: str, assume_unique: bool) -> tuple[Any, ...]:
    """The sorted candidate values of a set operation, which of them belong to the result, and (for
    ``intersect1d``) each one's first index in ``a1`` and ``a2``: static shapes, one compiled program
    when called eagerly."""
    if op == "setxor1d":
        u1, _, valid1 = _unique_valid(op, a1, assume_unique)
        u2, _, valid2 = _unique_valid(op, a2, assume_unique)
        # Each array's values that the other lacks (a NaN is in nothing, so each array's NaN counts, as
        # NumPy), the chosen ones sorted to the front.
        values = concatenate([u1, u2])
        chosen = concatenate([valid1 & ~_member(u1, a2), valid2 & ~_member(u2, a1)])
        order = lexsort((values, ~chosen))
        return take(values, order), take(chosen, order)
    u1, i1, valid = _unique_valid(op, a1, assume_unique)
    if op == "setdiff1d":
        return u1, valid & ~_member(u1, a2)
    mask = valid & _member(u1, a2)
    n2 = abstractify(a2).shape[0]
    if n2:
        order2 = argsort(a2)  # stable: the first occurrence of equal values comes first
        j = searchsorted(take(a2, order2), u1)
        i2 = take(order2, where(j < n2, j, n2 - 1))
    else:
        i2 = zeros(abstractify(u1).shape, dtypes.default_int_dtype())
    return u1, mask, i1, i2


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False, *,
                size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted unique values that are in both arrays (flattened); with ``return_indices``, also the
    index of each one's first occurrence in ``ar1`` and in ``ar2`` (0 in padded entries)."""
    a1, a2 = _flat_pair("intersect1d", ar1, ar2)
    u1, mask, i1, i2 = _candidates(a1, a2, op="intersect1d", assume_unique=bool(assume_unique))
    if not return_indices:
        return _select("intersect1d", u1, mask, size, fill_value)[0]
    values, idx1, idx2 = _select("intersect1d", u1, mask, size, fill_value, i1, i2)
    return values, idx1, idx2


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
              fill_value: Any = None) -> Any:
    """The sorted unique values of ``ar1`` that are not in ``ar2`` (both flattened)."""
    a1, a2 = _flat_pair("setdiff1d", ar1, ar2)
    values, chosen = _candidates(a1, a2, op="setdiff1d", assume_unique=bool(assume_unique))
    return _select("setdiff1d", values, chosen, size, fill_value)[0]


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
             fill_value: Any = None) -> Any:
    """The sorted unique values that are in exactly one of the arrays (flattened)."""
    a1, a2 = _flat_pair("setxor1d", ar1, ar2)
    values, chosen = _candidates(a1, a2, op="setxor1d", assume_unique=bool(assume_unique))
    return _select("setxor1d", values, chosen, size, fill_value)[0]
