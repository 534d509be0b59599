"""``x[index]``: basic indexing (ints, slices with steps, None, Ellipsis) and traced scalar ints.

Out-of-bounds integer indices clamp, as in JAX (``arange(10)[11]`` is 9); traced indices go
through ``dynamic_slice``, which clamps the same way.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes, lax
from ..array import Array
from ..tracing import Tracer, abstractify


def _expand_index(index: Any, ndim: int, fname: str = "__getitem__") -> list[Any]:
    """The index as a list with Ellipsis expanded; each entry an int/scalar, slice or None."""
    if not isinstance(index, tuple):
        index = (index,)
    n_ellipsis = sum(1 for i in index if i is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("kiln: an index can only have a single ellipsis ('...')")
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    if consumed > ndim:
        raise IndexError(f"kiln: too many indices for array: array is {ndim}-dimensional, but {consumed} were "
                         "indexed")
    out = []
    for i in index:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(i)
    if n_ellipsis == 0:
        out.extend([slice(None)] * (ndim - consumed))
    return out


def _is_int_scalar(i: Any) -> bool:
    if isinstance(i, bool) or isinstance(i, np.bool_):
        return False
    if isinstance(i, (int, np.integer)):
        return True
    if isinstance(i, (Array, Tracer)):
        return i.ndim == 0 and i.dtype.kind in "iu"
    return False


def _check_entry(i: Any) -> None:
    if i is None or isinstance(i, slice) or _is_int_scalar(i):
        return
    if isinstance(i, (float, np.floating)) or (isinstance(i, (Array, Tracer, np.ndarray)) and i.dtype.kind == "f"):
        raise IndexError(f"kiln: indices must be integers, slices, None or '...', got a float index {i!r:.40}")
    raise IndexError(f"kiln: unsupported index {i!r:.60} of type {type(i).__name__}: this version supports "
                     "integers, slices, None and '...' (array and boolean-mask indexing come with the NumPy "
                     "issue)")


def getitem(x: Any, index: Any) -> Any:
    """``x[index]`` for basic indices."""
    aval = abstractify(x)
    entries = _expand_index(index, aval.ndim)
    for e in entries:
        _check_entry(e)
    # 1. Static slices (with steps) in one lax.slice, negative steps by rev.
    starts, limits, strides, rev_dims = [], [], [], []
    dim = 0
    for e in entries:
        if e is None:
            continue
        size = aval.shape[dim]
        if isinstance(e, slice):
            for part in (e.start, e.stop, e.step):
                if isinstance(part, (Tracer, Array)):
                    raise IndexError("kiln: slice bounds must be static Python ints; for a traced start use "
                                     "kiln.lax.dynamic_slice")
            start, stop, step = e.indices(size)
            if step > 0:
                n = max(0, -(-(stop - start) // step))
                starts.append(start)
                limits.append(start + (n - 1) * step + 1 if n else start)
                strides.append(step)
            else:
                n = max(0, -(-(start - stop) // -step))
                lo = start - (n - 1) * (-step) if n else start + 1
                starts.append(lo if n else 0)
                limits.append(start + 1 if n else 0)
                strides.append(-step)
                rev_dims.append(dim)
        else:
            starts.append(0)
            limits.append(size)
            strides.append(1)
        dim += 1
    if any((s, l, st) != (0, d, 1) for s, l, st, d in zip(starts, limits, strides, aval.shape)):
        x = lax.slice(x, starts, limits, strides)
    if rev_dims:
        x = lax.rev(x, rev_dims)
    # 2. Integer indices: dynamic_slice of size 1 (clamping), then drop those axes.
    int_dims = []
    dim = 0
    for e in entries:
        if e is None:
            continue
        if _is_int_scalar(e):
            int_dims.append((dim, e))
        dim += 1
    if int_dims:
        cur = abstractify(x)
        starts_dyn: list[Any] = [0] * cur.ndim
        sizes = list(cur.shape)
        for d, e in int_dims:
            starts_dyn[d] = _normalize_index(e, cur.shape[d])
            sizes[d] = 1
            if cur.shape[d] == 0:
                raise IndexError(f"kiln: index {e} is out of bounds for axis {d} with size 0")
        x = lax.dynamic_slice(x, starts_dyn, sizes)
    # 3. Final shape: drop integer-indexed axes, insert new axes for None.
    shape = []
    sliced = abstractify(x).shape
    dim = 0
    for e in entries:
        if e is None:
            shape.append(1)
            continue
        if not _is_int_scalar(e):
            shape.append(sliced[dim])
        dim += 1
    return lax.reshape(x, tuple(shape))


def _normalize_index(i: Any, size: int) -> Any:
    """Negative indices count from the end; static ones are clamped here, traced ones by XLA."""
    if isinstance(i, (int, np.integer)):
        i = int(i)
        i = i + size if i < 0 else i
        return min(max(i, 0), size - 1)
    idx_dtype = dtypes.canonicalize_dtype(abstractify(i).dtype)
    zero, n = lax.literal(0, idx_dtype), lax.literal(size, idx_dtype)
    return lax.select(lax.lt(i, zero), lax.add(i, n), i)
