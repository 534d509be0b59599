"""``kiln.ops``: segment reductions (as ``jax.ops``): ``segment_sum``, ``segment_prod``, ``segment_max``,
``segment_min``. Each scatters ``data`` into ``num_segments`` rows by ``segment_ids`` (one id per row of
``data``); ids outside ``[0, num_segments)`` are dropped (JAX's default mode), and an empty segment
holds the reduction's identity (0, 1, the dtype's lowest or highest value)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .core import dtypes
from .core.tracing import Tracer, abstractify
from .numpy import creation as _creation

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def _identity(op: str, dtype: np.dtype) -> Any:
    if op == "add":
        return 0
    if op == "multiply":
        return 1
    if dtypes.kind(dtype) in "biuf":
        return dtypes.lowest(dtype) if op == "max" else dtypes.highest(dtype)
    raise TypeError(f"kiln.ops.segment_{op}: {dtype.name} data has no ordering (max/min need a real dtype)")


_NAMES = {"add": "segment_sum", "multiply": "segment_prod", "max": "segment_max", "min": "segment_min"}


def _segment(op: str, data: Any, segment_ids: Any, num_segments: int | None, indices_are_sorted: bool,
             unique_indices: bool, bucket_size: int | None, mode: Any) -> Any:
    name = f"kiln.ops.{_NAMES[op]}"
    data = _creation.asarray(data)
    segment_ids = _creation.asarray(segment_ids)
    d_aval, s_aval = abstractify(data), abstractify(segment_ids)
    if not dtypes.is_int(s_aval.dtype):
        raise TypeError(f"{name}: segment_ids must be integers, got {s_aval.dtype.name}")
    if s_aval.ndim != 1 or d_aval.ndim < 1 or s_aval.shape[0] != d_aval.shape[0]:
        raise ValueError(f"{name}: segment_ids must be 1-D with one id per row of data; got segment_ids of shape "
                         f"{s_aval.shape} for data of shape {d_aval.shape}")
    if op == "add" and d_aval.dtype.kind == "b":
        raise TypeError(f"{name}: bool data cannot be summed; cast it (data.astype(int)) first")
    if mode not in (None, "drop", "fill", "promise_in_bounds", "clip"):
        mode = getattr(mode, "name", str(mode)).lower()
        mode = {"fill_or_drop": "drop"}.get(mode, mode)
    if mode in (None, "fill"):
        mode = "drop"
    if num_segments is None:
        if isinstance(segment_ids, Tracer):
            raise TypeError(f"{name}: num_segments must be given when segment_ids is traced (under jit, vmap or "
                            "grad): the number of output rows must be known when tracing")
        ids_host = np.asarray(segment_ids)
        num_segments = int(ids_host.max()) + 1 if ids_host.size else 0
    if isinstance(num_segments, bool) or not isinstance(num_segments, (int, np.integer)):
        raise TypeError(f"{name}: num_segments must be a Python int, got {type(num_segments).__name__}")
    num_segments = int(num_segments)
    if num_segments < 0:
        raise ValueError(f"{name}: num_segments must be non-negative, got {num_segments}")
    dtype = d_aval.dtype
    init = _identity(op, dtype)
    # Negative ids are out of range (dropped or clamped by mode), not counted from the end.
    kw = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
              wrap_negative_indices=False)
    if bucket_size is None:
        out = _creation.full((num_segments,) + d_aval.shape[1:], init, dtype)
        return getattr(out.at[segment_ids], op)(data, **kw)
    if isinstance(bucket_size, bool) or not isinstance(bucket_size, (int, np.integer)) or bucket_size < 1:
        raise ValueError(f"{name}: bucket_size must be a positive int, got {bucket_size!r}")
    # Reduce each bucket of bucket_size rows on its own, then the buckets (JAX's numerically steadier order).
    n = d_aval.shape[0]
    n_buckets = -(-n // int(bucket_size))
    out = _creation.full((n_buckets, num_segments) + d_aval.shape[1:], init, dtype)
    bucket = np.arange(n) // int(bucket_size)
    out = getattr(out.at[bucket, segment_ids], op)(data, **{**kw, "unique_indices": False})
    from .numpy import reductions as _red
    reducer = {"add": _red.sum, "multiply": _red.prod, "max": _red.max, "min": _red.min}[op]
    return reducer(out, axis=0).astype(dtype)


def segment_sum(data, segment_ids, num_segments: int | None = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: int | None = None, mode=None):
    """Sum of the rows of ``data`` per segment: ``out[s] = sum(data[i] for i with segment_ids[i] == s)``."""
    return _segment("add", data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode)


def segment_prod(data, segment_ids, num_segments: int | None = None, indices_are_sorted: bool = False,
                 unique_indices: bool = False, bucket_size: int | None = None, mode=None):
    """Product of the rows of ``data`` per segment (1 for an empty segment)."""
    return _segment("multiply", data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size,
                    mode)


def segment_max(data, segment_ids, num_segments: int | None = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: int | None = None, mode=None):
    """Maximum of the rows of ``data`` per segment (-inf, or the dtype's lowest value, for an empty one)."""
    return _segment("max", data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode)


def segment_min(data, segment_ids, num_segments: int | None = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: int | None = None, mode=None):
    """Minimum of the rows of ``data`` per segment (inf, or the dtype's highest value, for an empty one)."""
    return _segment("min", data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode)
