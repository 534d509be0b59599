"""kiln.nn.dot_product_attention (JAX's XLA semantics) against a NumPy implementation of the formula, and
the small jax.nn functions kiln added with it: logmeanexp, log1mexp, sparse_plus, sparse_sigmoid,
identity, tanh."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import kiln
import kiln.numpy as knp
from kiln import nn
from kiln.test_util import check_grads

RNG = np.random.RandomState(0)


def _attention(q, k, v, bias=None, mask=None, causal=False, scale=None, q_len=None, kv_len=None, window=None):
    """softmax(q k^T * scale + bias, masked) v, per batch and head, in float64."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    B, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    G = N // K
    scale = 1 / np.sqrt(H) if scale is None else scale
    out = np.zeros((B, T, N, H))
    for b in range(B):
        for n in range(N):
            logits = q[b, :, n] @ k[b, :, n // G].T * scale
            if bias is not None:
                logits = logits + np.broadcast_to(bias, (B, N, T, S))[b, n]
            keep = np.ones((T, S), bool)
            if mask is not None:
                keep &= np.broadcast_to(mask, (B, N, T, S))[b, n]
            t, s = np.arange(T)[:, None], np.arange(S)[None, :]
            if causal:
                keep &= s <= t
            if window is not None:
                keep &= (t - window[0] <= s) & (s <= t + window[1])
            if q_len is not None:
                keep &= t < q_len[b]
            if kv_len is not None:
                keep &= s < kv_len[b]
            logits = np.where(keep, logits, -0.7 * np.finfo(np.float32).max)
            w = np.exp(logits - logits.max(-1, keepdims=True))
            out[b, :, n] = (w / w.sum(-1, keepdims=True)) @ v[b, :, n // G]
            if q_len is not None:
                out[b, q_len[b]:, n] = 0
    return out


def _qkv(B=2, T=5, S=6, N=4, K=2, H=8, dtype=np.float32):
    return (RNG.randn(B, T, N, H).astype(dtype), RNG.randn(B, S, K, H).astype(dtype),
            RNG.randn(B, S, K, H).astype(dtype))


def test_matches_the_formula_with_every_option():
    q, k, v = _qkv()
    bias = RNG.randn(1, 4, 5, 6).astype(np.float32)
    mask = RNG.rand(2, 1, 5, 6) > 0.3
    q_len, kv_len = np.array([3, 5], np.int32), np.array([4, 6], np.int32)
    cases = [
        ({}, {}),
        (dict(bias=bias, mask=mask, is_causal=True, scale=0.3), dict(bias=bias, mask=mask, causal=True, scale=0.3)),
        (dict(query_seq_lengths=q_len, key_value_seq_lengths=kv_len, local_window_size=(1, 2)),
         dict(q_len=q_len, kv_len=kv_len, window=(1, 2))),
        (dict(local_window_size=1), dict(window=(1, 1))),
    ]
    for kw, ref_kw in cases:
        got = np.asarray(nn.dot_product_attention(q, k, v, **kw))
        np.testing.assert_allclose(got, _attention(q, k, v, **ref_kw), rtol=2e-5, atol=2e-6, err_msg=str(kw))
    jitted = kiln.jit(lambda q, k, v, b, m: nn.dot_product_attention(q, k, v, b, m, is_causal=True))
    np.testing.assert_allclose(np.asarray(jitted(q, k, v, bias, mask)),
                               _attention(q, k, v, bias=bias, mask=mask, causal=True), rtol=2e-5, atol=2e-6)


def test_unbatched_inputs_residual_and_low_precision():
    q, k, v = _qkv(B=1)
    out = nn.dot_product_attention(q[0], k[0], v[0])
    assert out.shape == q[0].shape
    np.testing.assert_allclose(np.asarray(out), _attention(q, k, v)[0], rtol=2e-5, atol=2e-6)
    out, lse = nn.dot_product_attention(q, k, v, is_causal=True, return_residual=True)
    assert lse.shape == (1, 5, 4)
    logits = np.einsum("btnh,bsnh->bnts", q.astype(np.float64), np.repeat(k, 2, axis=2)) / np.sqrt(8)
    logits = np.where(np.tril(np.ones((5, 6), bool)), logits, -0.7 * np.finfo(np.float32).max)
    np.testing.assert_allclose(np.asarray(lse), sp.logsumexp(logits, -1).transpose(0, 2, 1), rtol=1e-5)
    qb, kb, vb = (knp.asarray(a).astype(knp.bfloat16) for a in (q, k, v))
    low = nn.dot_product_attention(qb, kb, vb)
    assert low.dtype == knp.bfloat16
    np.testing.assert_allclose(np.asarray(low.astype(np.float32)), _attention(qb.astype(np.float32),
                               kb.astype(np.float32), vb.astype(np.float32)), atol=0.05)


def test_grad_and_vmap():
    q, k, v = _qkv(B=1, T=3, S=4, N=2, K=1, H=4)
    bias = RNG.randn(1, 2, 3, 4).astype(np.float32)
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    with kiln.enable_x64():  # the softmax runs in float32 (as JAX's): float32 tolerances
        check_grads(lambda q, k, v: nn.dot_product_attention(q, k, v, bias.astype(np.float64), is_causal=True),
                    (q, k, v), order=1, modes=["rev"], atol=2e-3, rtol=2e-3)
    qs, ks, vs = _qkv(B=3, T=2, S=3, N=2, K=2, H=4)
    batched = np.asarray(kiln.vmap(nn.dot_product_attention)(qs, ks, vs))
    loop = np.stack([np.asarray(nn.dot_product_attention(qs[i], ks[i], vs[i])) for i in range(3)])
    # A few float32 ulps: the batched program may sum the softmax in another order than the unbatched one.
    np.testing.assert_allclose(batched, loop, rtol=1e-6, atol=1e-6)


def test_attention_errors():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"dot_product_attention: value must have shape \(2, 6, 2, 8\)"):
        nn.dot_product_attention(q, k, v[:, :5])
    with pytest.raises(ValueError, match=r"dot_product_attention: query must have dtype float32"):
        nn.dot_product_attention(q.astype(np.float16), k, v)
    with pytest.raises(ValueError, match=r"query heads \(3\) must be a multiple of the number of key/value heads"):
        nn.dot_product_attention(q[:, :, :3], k, v)
    with pytest.raises(ValueError, match=r"mask must have dtype bool"):
        nn.dot_product_attention(q, k, v, mask=np.ones((2, 1, 5, 6), np.float32))
    with pytest.raises(ValueError, match=r"query_seq_lengths must have dtype int32"):
        nn.dot_product_attention(q, k, v, query_seq_lengths=np.array([1.0, 2.0]))
    with pytest.raises(NotImplementedError, match=r"no cuDNN attention kernel"):
        nn.dot_product_attention(q, k, v, implementation="cudnn")
    with pytest.raises(ValueError, match=r"unknown implementation 'fast'"):
        nn.dot_product_attention(q, k, v, implementation="fast")
    with pytest.raises(ValueError, match=r"bias and mask must have 1 or 4 heads"):
        nn.dot_product_attention(q, k, v, bias=np.zeros((2, 3, 5, 6), np.float32))


def test_small_functions_against_numpy():
    x = np.linspace(0.01, 6, 13).astype(np.float32)
    np.testing.assert_allclose(np.asarray(nn.log1mexp(x)), np.log(-np.expm1(-x.astype(np.float64))), rtol=2e-6)
    np.testing.assert_allclose(np.asarray(kiln.grad(lambda x: nn.log1mexp(x).sum())(x)),
                               1 / np.expm1(x.astype(np.float64)), rtol=2e-6)
    a = RNG.randn(3, 4).astype(np.float32)
    where = RNG.rand(3, 4) > 0.3
    np.testing.assert_allclose(np.asarray(nn.logmeanexp(a)), sp.logsumexp(a) - np.log(12), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(nn.logmeanexp(a, axis=1, where=where, keepdims=True)),
                               sp.logsumexp(np.where(where, a, -np.inf), axis=1, keepdims=True)
                               - np.log(where.sum(1, keepdims=True)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(kiln.jit(lambda a: nn.logmeanexp(a, axis=(0, 1)))(a)),
                               sp.logsumexp(a) - np.log(12), rtol=1e-6)
    t = np.linspace(-2, 2, 17).astype(np.float32)
    np.testing.assert_allclose(np.asarray(nn.sparse_plus(t)),
                               np.where(t <= -1, 0, np.where(t >= 1, t, (t + 1) ** 2 / 4)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(nn.sparse_sigmoid(t)), np.clip((t + 1) / 2, 0, 1), rtol=1e-6)
    # sparse_sigmoid is sparse_plus's derivative
    np.testing.assert_allclose(np.asarray(kiln.vmap(kiln.grad(nn.sparse_plus))(t)), np.clip((t + 1) / 2, 0, 1))
    np.testing.assert_array_equal(np.asarray(nn.identity(t)), t)
    np.testing.assert_allclose(np.asarray(nn.tanh(t)), np.tanh(t), rtol=1e-6)
    assert nn.sparse_plus(np.arange(3)).dtype == np.float32  # integers compute in the default float
    with pytest.raises(TypeError, match=r"kiln.nn.log1mexp: argument 0 of type str"):
        nn.log1mexp("x")
    with pytest.raises(ValueError, match=r"kiln.nn.logmeanexp: where= of shape \(2,\) does not broadcast"):
        nn.logmeanexp(a, where=np.ones(2, bool))
