"""``kiln.nn.dot_product_attention`` (the XLA implementation's semantics) and the small functions of
``jax.nn`` that build on kiln.numpy: ``logmeanexp``, ``log1mexp``, ``sparse_plus``, ``sparse_sigmoid``,
``identity``, ``tanh``."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as jnp
from ..ad.custom import custom_jvp
from ..core import dtypes
from ..core.axes import sorted_axes
from ..core.tracing import abstractify
from ..driver.eager_jit import eager_jit
from ..lax.api import stop_gradient
from .functions import _mask, float_args, logsumexp, logsumexp_impl, softmax

__all__ = ["dot_product_attention", "identity", "log1mexp", "logmeanexp", "sparse_plus", "sparse_sigmoid", "tanh"]


@eager_jit()
def identity(x):
    """``x`` itself, as an array (the identity activation)."""
    return jnp.asarray(x)


@eager_jit()
def tanh(x):
    """The hyperbolic tangent (``kiln.numpy.tanh``)."""
    return jnp.tanh(x)


@eager_jit()
def sparse_plus(x):
    """0 for ``x <= -1``, ``x`` for ``x >= 1``, ``(x + 1)**2 / 4`` between: a smooth, sparse softplus."""
    (x,) = float_args("kiln.nn.sparse_plus", x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@eager_jit()
def sparse_sigmoid(x):
    """``clip((x + 1) / 2, 0, 1)``: the derivative of :func:`sparse_plus`."""
    (x,) = float_args("kiln.nn.sparse_sigmoid", x)
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


@custom_jvp
def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x >= 0``, accurately: ``log(-expm1(-x))`` below ``log 2``, ``log1p(-exp(-x))``
    above (Mächler's split)."""
    (x,) = float_args("kiln.nn.log1mexp", x)
    return jnp.where(x < np.log(2.0), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


@log1mexp.defjvp
def _log1mexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1mexp(x), t / jnp.expm1(x)


@eager_jit("axis", "keepdims")
def logmeanexp(x, axis: Any = None, where: Any = None, keepdims: bool = False):
    """``log(mean(exp(x)))`` over ``axis``: ``logsumexp(x) - log(n)``, ``n`` counting only the entries
    ``where`` selects."""
    (x,) = float_args("kiln.nn.logmeanexp", x)
    aval = abstractify(x)
    lse = logsumexp_impl("kiln.nn.logmeanexp", x, axis, None, keepdims, False, where)
    axes = sorted_axes("kiln.nn.logmeanexp", axis, aval.ndim)
    if where is None:
        count = jnp.asarray(float(np.prod([aval.shape[a] for a in axes])) if axes else 1.0, lse.dtype)
    else:
        mask = _mask("kiln.nn.logmeanexp", where, aval.shape)
        count = jnp.sum(mask, axis=axes, keepdims=keepdims, dtype=lse.dtype)
    return lse - jnp.log(count)


# -- attention -------------------------------------------------------------------------------------------
def _large_negative(dtype: np.dtype) -> float:
    """The logit that masks an entry out: -0.7 of the largest finite value (float32's at most, as the
    softmax runs in float32)."""
    return -0.7 * min(float(dtypes.finfo(dtype).max), float(np.finfo(np.float32).max))


def _as_4d(x: Any) -> Any:
    x = jnp.asarray(x)
    return jnp.reshape(x, (1,) * (4 - x.ndim) + x.shape) if x.ndim < 4 else x


def _check(t: Any, shape: list[int], dtype: Any, name: str) -> None:
    if t is None:
        return
    if t.ndim != len(shape):
        raise ValueError(f"kiln.nn.dot_product_attention: {name} must have {len(shape)} dimensions, got shape "
                         f"{t.shape}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"kiln.nn.dot_product_attention: {name} must have dtype {np.dtype(dtype).name} (the key's "
                         f"dtype for query and value), got {t.dtype.name}")
    if any(want != -1 and got != want for want, got in zip(shape, t.shape)):
        want = tuple("*" if w == -1 else w for w in shape)
        raise ValueError(f"kiln.nn.dot_product_attention: {name} must have shape {want}, got {t.shape}")


def _grouped(t: Any, n_kv: int, groups: int) -> Any:
    """A (B, N or 1, T, S) bias or mask as (B, K, G, T, S) (query head n = k * G + g)."""
    if t is None:
        return None
    b, n, tt, s = t.shape
    if n == 1:
        return jnp.broadcast_to(t[:, :, None], (b, 1, groups, tt, s))
    if n != n_kv * groups:
        raise ValueError(f"kiln.nn.dot_product_attention: bias and mask must have 1 or {n_kv * groups} heads (the "
                         f"query's), got {n}")
    return jnp.reshape(t, (b, n_kv, groups, tt, s))


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale: float | None = None,
                          is_causal: bool = False, query_seq_lengths=None, key_value_seq_lengths=None,
                          local_window_size: int | tuple[int, int] | None = None, implementation: str | None = None,
                          return_residual: bool = False):
    """Scaled dot-product attention, ``softmax(Q K^T * scale + bias) V`` per head, as JAX's XLA implementation.

    Shapes: ``query`` (B, T, N, H), ``key`` and ``value`` (B, S, K, H) with N a multiple of K (grouped-query
    attention), or the same without B. ``bias`` and ``mask`` (bool, True keeps) broadcast to (B, N, T, S).
    ``scale`` defaults to ``1/sqrt(H)``; ``is_causal`` keeps key ``s <= t``; ``local_window_size`` ``(l, r)``
    keeps ``t - l <= s <= t + r``; the sequence lengths (int32, one per batch entry) mask padding (padded
    query rows are 0). Logits accumulate in at least float32 and the softmax runs in float32.
    ``return_residual`` also returns the logsumexp of the logits, shaped (B, T, N).
    """
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise NotImplementedError("kiln.nn.dot_product_attention: kiln has no cuDNN attention kernel; use "
                                      "implementation=None or 'xla' (the same numbers up to rounding)")
        raise ValueError(f"kiln.nn.dot_product_attention: unknown implementation {implementation!r}; use None, "
                         "'xla' or 'cudnn'")
    out_shape = jnp.shape(query)
    q, k, v = _as_4d(query), _as_4d(key), _as_4d(value)
    bias = None if bias is None else _as_4d(bias)
    mask = None if mask is None else _as_4d(mask)
    q_len = None if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
    kv_len = None if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    B, S, K, H = k.shape
    _check(v, [B, S, K, H], k.dtype, "value")
    _check(q, [B, -1, -1, H], k.dtype, "query")
    _check(mask, [-1] * 4, np.dtype(bool), "mask")
    _check(bias, [-1] * 4, None, "bias")
    _check(q_len, [B], np.dtype("int32"), "query_seq_lengths")
    _check(kv_len, [B], np.dtype("int32"), "key_value_seq_lengths")
    T, N = q.shape[1], q.shape[2]
    if N % K:
        raise ValueError(f"kiln.nn.dot_product_attention: the number of query heads ({N}) must be a multiple of the "
                         f"number of key/value heads ({K})")
    G = N // K
    scale = 1.0 / np.sqrt(H) if scale is None else scale
    logits_dtype = jnp.promote_types(q.dtype, np.float32)
    qg = jnp.reshape(q, (B, T, K, G, H))
    logits = jnp.einsum("btkgh,bskh->bkgts", qg, k, preferred_element_type=logits_dtype)
    logits = logits * jnp.asarray(scale, logits.dtype)
    if bias is not None:
        logits = (logits + _grouped(bias, K, G)).astype(logits.dtype)
    keep = None
    if mask is not None:
        keep = _grouped(mask, K, G)
    t_pos, s_pos = np.arange(T)[:, None], np.arange(S)[None, :]
    static_keep = np.ones((T, S), bool)
    if is_causal:
        static_keep &= s_pos <= t_pos
    if local_window_size is not None:
        left, right = local_window_size
        static_keep &= (t_pos <= s_pos + left) & (t_pos >= s_pos - right)
    if is_causal or local_window_size is not None:
        keep = static_keep if keep is None else jnp.logical_and(keep, static_keep)
    if q_len is not None or kv_len is not None:
        pad = jnp.ones((B, T, S), bool)
        if q_len is not None:
            pad = jnp.logical_and(pad, np.arange(T)[None, :, None] < q_len[:, None, None])
        if kv_len is not None:
            pad = jnp.logical_and(pad, np.arange(S)[None, None, :] < kv_len[:, None, None])
        pad = pad[:, None, None]
        keep = pad if keep is None else jnp.logical_and(keep, pad)
    if keep is not None:
        logits = jnp.where(keep, logits, jnp.asarray(_large_negative(logits.dtype), logits.dtype))
    logits32 = logits.astype(np.float32)
    probs = softmax(logits32, axis=-1).astype(k.dtype)
    encoded = jnp.einsum("bkgts,bskh->btkgh", probs, v)
    encoded = jnp.reshape(encoded, (B, T, N, H))
    if q_len is not None:
        encoded = encoded * (np.arange(T)[None, :] < q_len[:, None]).astype(encoded.dtype)[:, :, None, None]
    encoded = jnp.reshape(encoded, out_shape)
    if not return_residual:
        return encoded
    lse = logsumexp(logits32, axis=-1).astype(k.dtype)  # (B, K, G, T)
    lse = jnp.reshape(jnp.moveaxis(lse, -1, 1), (B, T, N))
    return encoded, jnp.reshape(stop_gradient(lse), out_shape[:-1])
