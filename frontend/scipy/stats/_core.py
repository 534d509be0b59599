"""kiln.scipy.stats's functions of samples: rankdata, mode, sem (as ``jax.scipy.stats``)."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ... import lax
from ... import numpy as jnp
from ...core import dtypes
from ...numpy._util import canonical_axis, check_arraylike

__all__ = ["rankdata", "mode", "sem", "ModeResult"]


class ModeResult(NamedTuple):
    mode: Any
    count: Any


def _nan_policy(where: str, nan_policy: str) -> None:
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"kiln.scipy.stats.{where}: nan_policy must be 'propagate', 'omit' or 'raise', got "
                         f"{nan_policy!r}")
    if nan_policy != "propagate":
        raise NotImplementedError(f"kiln.scipy.stats.{where}: nan_policy={nan_policy!r} is not supported (as in "
                                  "JAX); use nan_policy='propagate'")


def _groups(s):
    """For values sorted along the last axis: the first and last sorted index of each value's run of
    equal values, and the run number (dense rank, from 1)."""
    n = s.shape[-1]
    idx = jnp.broadcast_to(jnp.arange(n), s.shape)
    new = jnp.concatenate([jnp.ones(s.shape[:-1] + (1,), bool), s[..., 1:] != s[..., :-1]], axis=-1)
    last = jnp.concatenate([s[..., 1:] != s[..., :-1], jnp.ones(s.shape[:-1] + (1,), bool)], axis=-1)
    first_i = lax.cummax(jnp.where(new, idx, 0), axis=s.ndim - 1)
    last_i = lax.cummin(jnp.where(last, idx, n - 1), axis=s.ndim - 1, reverse=True)
    dense = jnp.cumsum(new.astype(jnp.int32), axis=-1)
    return first_i, last_i, dense


def rankdata(a, method: str = "average", *, axis: int | None = None, nan_policy: str = "propagate"):
    """Ranks of the data from 1, ties resolved by ``method`` ('average', 'min', 'max', 'dense' or
    'ordinal'); along ``axis``, or over the flattened array. Floats (the default float dtype) as JAX; a
    slice holding a NaN ranks as all NaN."""
    check_arraylike("kiln.scipy.stats.rankdata", a)
    _nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"kiln.scipy.stats.rankdata: unknown method {method!r}; use 'average', 'min', 'max', "
                         "'dense' or 'ordinal'")
    a = jnp.asarray(a)
    if axis is None:
        a, axis = jnp.ravel(a), 0
    axis = canonical_axis("kiln.scipy.stats.rankdata", axis, a.ndim)
    x = jnp.moveaxis(a, axis, -1)
    out_dtype = dtypes.default_float_dtype()
    if x.shape[-1] == 0:
        return jnp.moveaxis(jnp.zeros(x.shape, out_dtype), -1, axis)
    perm = jnp.argsort(x, axis=-1, stable=True)
    inv = jnp.argsort(perm, axis=-1)
    s = jnp.take_along_axis(x, perm, axis=-1)
    first_i, last_i, dense = _groups(s)
    if method == "ordinal":
        ranks = jnp.broadcast_to(jnp.arange(1, s.shape[-1] + 1), s.shape).astype(out_dtype)
    elif method == "min":
        ranks = (first_i + 1).astype(out_dtype)
    elif method == "max":
        ranks = (last_i + 1).astype(out_dtype)
    elif method == "dense":
        ranks = dense.astype(out_dtype)
    else:
        ranks = (first_i + last_i + 2).astype(out_dtype) / 2
    ranks = jnp.take_along_axis(ranks, inv, axis=-1)
    if dtypes.is_inexact(x.dtype):
        ranks = jnp.where(jnp.any(jnp.isnan(x), axis=-1, keepdims=True), np.nan, ranks)
    return jnp.moveaxis(ranks, -1, axis)


def mode(a, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False) -> ModeResult:
    """The most common value along ``axis`` (the smallest of equally common ones) and its count."""
    check_arraylike("kiln.scipy.stats.mode", a)
    _nan_policy("mode", nan_policy)
    x = jnp.atleast_1d(jnp.asarray(a))
    if axis is None:
        x, axis = jnp.ravel(x), 0
        shape = (1,) * jnp.asarray(a).ndim if keepdims else ()
    else:
        axis = canonical_axis("kiln.scipy.stats.mode", axis, x.ndim)
        shape = x.shape[:axis] + ((1,) if keepdims else ()) + x.shape[axis + 1:]
    x = jnp.moveaxis(x, axis, -1)
    if x.shape[-1] == 0:
        raise ValueError("kiln.scipy.stats.mode: the axis has length 0; a mode needs at least one value")
    s = jnp.sort(x, axis=-1)
    first_i, last_i, _ = _groups(s)
    counts = last_i - first_i + 1
    best = jnp.argmax(counts, axis=-1, keepdims=True)
    vals = jnp.take_along_axis(s, best, axis=-1)[..., 0]
    cnt = jnp.take_along_axis(counts, best, axis=-1)[..., 0]
    return ModeResult(jnp.reshape(vals, shape), jnp.reshape(cnt, shape))


def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *, keepdims: bool = False):
    """The standard error of the mean, ``std(a, ddof=ddof) / sqrt(n)`` along ``axis`` (None: all).

    ``nan_policy='omit'`` ignores NaNs; 'propagate' lets them through.
    """
    check_arraylike("kiln.scipy.stats.sem", a)
    if nan_policy not in ("propagate", "omit"):
        raise ValueError(f"kiln.scipy.stats.sem: nan_policy must be 'propagate' or 'omit', got {nan_policy!r}")
    b = jnp.asarray(a)
    if not dtypes.is_inexact(b.dtype):
        b = b.astype(dtypes.default_float_dtype())
    if axis is None:
        b, axis = jnp.ravel(b), 0
        if keepdims:
            b = jnp.reshape(b, (1,) * (jnp.asarray(a).ndim - 1) + (-1,))
            axis = b.ndim - 1
    if nan_policy == "omit":
        n = jnp.sum(~jnp.isnan(b), axis=axis, keepdims=keepdims)
        return jnp.nanstd(b, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(n.astype(b.dtype))
    n = b.shape[axis]
    return jnp.std(b, axis=axis, ddof=ddof, keepdims=keepdims) / np.sqrt(n)
