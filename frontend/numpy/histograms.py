"""Counting and binning of kiln.numpy: bincount, digitize, histogram, histogram_bin_edges,
histogram2d, histogramdd.

Counts are a scatter-add (``.at[...].add``) of the weights into one slot per bin, found by a binary
search (``searchsorted``) of the bin edges. The number of bins is static: ``bins`` is an int or an
array of edges, and ``bincount`` needs ``length=`` under ``jit``.
"""
from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from ..core import dtypes
from ..core.errors import ConcretizationTypeError
from ..core.tracing import Tracer, abstractify, concrete
from ..driver.eager_jit import eager_jit
from ..lax.sharding import takes_out_sharding
from ._util import check_arraylike, static_int
from .creation import asarray, linspace, ones_like, zeros
from .index_tricks import ix_, ravel_multi_index
from .numerical import diff
from .reductions import max as _max
from .reductions import min as _min
from .reductions import sum as _sum
from .shape import reshape
from .sorting import searchsorted
from .ufuncs import clip, where

__all__ = ["bincount", "digitize", "histogram", "histogram2d", "histogram_bin_edges", "histogramdd"]


@takes_out_sharding
def bincount(x: Any, weights: Any = None, minlength: int = 0, *, length: int | None = None) -> Any:
    """The number of occurrences of each value ``0 .. length - 1`` in the non-negative integer 1-D
    ``x`` (or the sum of ``weights`` at them).

    ``length`` (static) is the output length; without it the length is ``max(x) + 1`` (at least
    ``minlength``), which needs concrete values, so pass ``length=`` under ``jit``. As in JAX, values
    at or past ``length`` are dropped and negative values count as 0.
    """
    check_arraylike("bincount", x)
    x = asarray(x)
    aval = abstractify(x)
    if aval.dtype == np.bool_:
        x = x.astype(dtypes.default_int_dtype())
    elif aval.dtype.kind not in "iu":
        raise TypeError(f"kiln.numpy.bincount: x must be integers, got {aval.dtype.name}")
    if aval.ndim != 1:
        raise ValueError(f"kiln.numpy.bincount: x must be 1-D, got shape {aval.shape}")
    minlength = static_int("bincount", "minlength", minlength)
    if minlength < 0:
        raise ValueError(f"kiln.numpy.bincount: minlength must be non-negative, got {minlength}")
    if length is None:
        value = concrete(x) if isinstance(x, Tracer) else x
        if value is None:
            raise ConcretizationTypeError(
                "kiln.numpy.bincount: the output length max(x) + 1 depends on the data, so it cannot be known under "
                "jit: pass a static length=")
        v = np.asarray(value)
        length = max(minlength, int(max(0, v.max())) + 1 if v.size else 0)
    else:
        length = static_int("bincount", "length", length)
    if weights is None:
        w: Any = asarray(1, dtype=dtypes.default_int_dtype())
    else:
        check_arraylike("bincount", weights)
        w = asarray(weights)
        if abstractify(w).shape != aval.shape:
            raise ValueError(f"kiln.numpy.bincount: weights must have x's shape {aval.shape}, got "
                             f"{abstractify(w).shape}")
    return zeros(length, abstractify(w).dtype).at[clip(x, 0)].add(w, mode="drop")


@eager_jit("right", "method")
def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Any:
    """The index of the bin of each element of ``x``: ``i`` with ``bins[i-1] <= x < bins[i]``
    (``<`` and ``<=`` swapped when ``right``), for increasing or decreasing 1-D ``bins``."""
    check_arraylike("digitize", x, bins)
    bins = asarray(bins)
    if abstractify(bins).ndim != 1:
        raise ValueError(f"kiln.numpy.digitize: bins must be 1-D, got shape {abstractify(bins).shape}")
    n = abstractify(bins).shape[0]
    if n == 0:
        return zeros(abstractify(asarray(x)).shape, dtypes.default_int_dtype())
    side = "left" if right else "right"
    kw = {} if method is None else {"method": method}
    up = searchsorted(bins, x, side=side, **kw)
    down = n - searchsorted(bins[::-1], x, side=side, **kw)
    return where(bins[-1] >= bins[0], up, down)


def _inexact_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if dtypes.is_inexact(dtype) else dtypes.default_float_dtype()


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:  # noqa: A002
    """The edges of the bins :func:`histogram` uses: ``bins`` itself when it is an array of edges,
    else ``bins + 1`` evenly spaced edges over ``range`` (default ``(a.min(), a.max())``; an empty
    range is widened by 0.5 on each side). String ``bins`` are not supported (as in JAX)."""
    if isinstance(bins, str):
        raise NotImplementedError("kiln.numpy.histogram_bin_edges: string bins (estimators such as 'auto') are not "
                                  "supported, as in JAX; pass a number of bins or the edges")
    check_arraylike("histogram_bin_edges", a)
    arr = asarray(a)
    dtype = _inexact_dtype(abstractify(arr).dtype)
    if np.ndim(bins) == 1 or (not isinstance(bins, (int, np.integer)) and hasattr(bins, "shape")
                              and len(bins.shape) == 1):
        return asarray(bins, dtype=dtype)
    nbins = static_int("histogram_bin_edges", "bins", bins)
    if nbins < 1:
        raise ValueError(f"kiln.numpy.histogram_bin_edges: bins must be positive, got {nbins}")
    if range is None:
        lo, hi = _min(arr), _max(arr)
    else:
        if len(range) != 2:
            raise ValueError(f"kiln.numpy.histogram_bin_edges: range must be a pair (min, max), got {range!r}")
        lo, hi = range
    lo, hi = asarray(lo, dtype=dtype), asarray(hi, dtype=dtype)
    empty = lo == hi
    lo, hi = where(empty, lo - 0.5, lo), where(empty, hi + 0.5, hi)
    return linspace(lo, hi, nbins + 1, dtype=dtype)


def _inexact_pair(fname: str, a: Any, weights: Any) -> tuple[Any, Any]:
    check_arraylike(fname, a)
    a = asarray(a)
    if weights is None:
        a = a.astype(_inexact_dtype(abstractify(a).dtype))
        return a, None
    check_arraylike(fname, weights)
    weights = asarray(weights)
    dtype = _inexact_dtype(dtypes.result_type(a, weights))
    return a.astype(dtype), weights.astype(dtype)


@eager_jit("bins", "range", "density")
def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None,  # noqa: A002
              density: bool | None = None) -> tuple[Any, Any]:
    """``(counts, bin_edges)`` of the flattened ``a``: the last bin includes its right edge; values
    outside the edges are not counted. ``weights`` (``a``'s shape) are summed instead of counting;
    ``density`` normalises the counts to a probability density."""
    a, weights = _inexact_pair("histogram", a, weights)
    if weights is not None and abstractify(weights).shape != abstractify(a).shape:
        raise ValueError(f"kiln.numpy.histogram: weights must have a's shape {abstractify(a).shape}, got "
                         f"{abstractify(weights).shape}")
    if weights is None:
        weights = ones_like(a)
    edges = histogram_bin_edges(a, bins, range, weights)
    n = abstractify(edges).shape[0]
    idx = searchsorted(edges, a, side="right")
    idx = where(a == edges[-1], n - 1, idx)
    counts = zeros(n, abstractify(weights).dtype).at[idx].add(weights, mode="drop")[1:]
    if density:
        counts = counts / diff(edges) / _sum(counts)
    return counts, edges


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, weights: Any = None,  # noqa: A002
                density: bool | None = None) -> tuple[Any, list[Any]]:
    """The D-dimensional histogram of ``N`` points ``sample`` (shape ``(N, D)``): ``(counts, edges)``
    with one list of edges per dimension. ``bins`` is one spec for all dimensions or one per
    dimension (an int or edges), ``range`` a pair or None per dimension."""
    sample, weights = _inexact_pair("histogramdd", sample, weights)
    shape = abstractify(sample).shape
    if len(shape) != 2:
        raise ValueError(f"kiln.numpy.histogramdd: sample must be 2-D (N points, D dimensions), got shape {shape}")
    N, D = shape
    if weights is not None and abstractify(weights).shape != (N,):
        raise ValueError(f"kiln.numpy.histogramdd: weights must have one value per point, shape {(N,)}, got "
                         f"{abstractify(weights).shape}")
    if range is not None and (len(range) != D or any(r is not None and len(r) != 2 for r in range)):
        raise ValueError(f"kiln.numpy.histogramdd: range must be {D} pairs (or Nones), one per dimension, got "
                         f"{range!r}")
    if isinstance(bins, (int, np.integer)) or (hasattr(bins, "shape") and len(bins.shape) == 0):
        per_dim = [bins] * D
    else:
        per_dim = list(bins)
        if len(per_dim) != D:
            raise ValueError(f"kiln.numpy.histogramdd: bins must be one spec or {D} specs, got {len(per_dim)}")
    idxs, edges = [], []
    for i in builtins.range(D):
        col = sample[:, i]
        e = histogram_bin_edges(col, per_dim[i], None if range is None else range[i])
        idx = searchsorted(e, col, side="right")
        idxs.append(where(col == e[-1], idx - 1, idx))
        edges.append(e)
    nbins = tuple(abstractify(e).shape[0] + 1 for e in edges)
    flat = ravel_multi_index(tuple(idxs), nbins, mode="clip")
    hist = reshape(bincount(flat, weights, length=math.prod(nbins)), nbins)
    hist = hist[(slice(1, -1),) * D]
    if density:
        hist = hist.astype(abstractify(sample).dtype)
        hist = hist / _sum(hist)
        for width in ix_(*[diff(e) for e in edges]):
            hist = hist / width
    return hist, edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, weights: Any = None,  # noqa: A002
                density: bool | None = None) -> tuple[Any, Any, Any]:
    """The 2-D histogram of the points ``(x[i], y[i])``: ``(counts, x_edges, y_edges)``; ``bins`` is
    one spec or a pair (an int or edges each)."""
    check_arraylike("histogram2d", x, y)
    x, y = asarray(x), asarray(y)
    if abstractify(x).shape != abstractify(y).shape or abstractify(x).ndim != 1:
        raise ValueError(f"kiln.numpy.histogram2d: x and y must be 1-D of one length, got shapes "
                         f"{abstractify(x).shape} and {abstractify(y).shape}")
    dtype = dtypes.result_type(x, y)
    from .shape import stack
    sample = stack([x.astype(dtype), y.astype(dtype)], axis=1)
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in (1, 2):  # one array of edges for both dimensions
        bins = [bins, bins]
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]
