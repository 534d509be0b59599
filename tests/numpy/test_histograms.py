"""bincount, digitize, histogram, histogram_bin_edges, histogram2d, histogramdd, cov and corrcoef against
NumPy; eager, jit, grad (weights, data), vmap, and their errors."""
from __future__ import annotations

import numpy as np
import pytest
from _fd import check_grad, check_vmap, close

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(5)
A = rng.normal(size=40).astype(np.float32)
W = rng.random(40).astype(np.float32)
S = rng.normal(size=(30, 3)).astype(np.float32)
M = rng.normal(size=(3, 7)).astype(np.float32)


def test_bincount():
    x = np.array([0, 1, 1, 3, 2, 1, 7], np.int32)
    w = np.linspace(0, 1, 7).astype(np.float32)
    close(knp.bincount(x), np.bincount(x), dtype=np.int32)
    close(knp.bincount(x, w, minlength=10), np.bincount(x, w, minlength=10), dtype=np.float32)
    close(knp.bincount(np.array([True, False, True])), np.bincount([1, 0, 1]))
    out = kiln.jit(lambda x, w: knp.bincount(x, w, length=5))(x, w)
    close(out, np.bincount(x, w)[:5])  # values past length are dropped, as JAX
    close(knp.bincount(np.array([-2, 1]), length=3), [1, 1, 0])  # negative values count as 0, as JAX
    check_grad(lambda w: knp.bincount(x, w, length=8) ** 2, w)
    check_vmap(lambda x: knp.bincount(x, length=8), np.stack([x, x[::-1]]))
    with pytest.raises(TypeError, match="bincount: the output length max.*pass a static length="):
        kiln.jit(knp.bincount)(x)
    with pytest.raises(TypeError, match="bincount: x must be integers"):
        knp.bincount(w)
    with pytest.raises(ValueError, match="bincount: x must be 1-D"):
        knp.bincount(x.reshape(1, 7))
    with pytest.raises(ValueError, match="weights must have x's shape"):
        knp.bincount(x, w[:3])


def test_digitize():
    bins = np.array([0.0, 1.0, 2.5, 4.0], np.float32)
    x = np.array([-1, 0, 0.5, 1, 2.5, 3, 4, 5], np.float32)
    f = lambda x, b: (knp.digitize(x, b), knp.digitize(x, b, right=True), knp.digitize(x, b[::-1]),
                      knp.digitize(x, b[::-1], True))
    expected = (np.digitize(x, bins), np.digitize(x, bins, True), np.digitize(x, bins[::-1]),
                np.digitize(x, bins[::-1], True))
    for fn in (f, kiln.jit(f)):
        for o, e in zip(fn(x, bins), expected):
            close(o, e, dtype=np.int32)
    close(knp.digitize(x, np.zeros(0, np.float32)), np.zeros(8, np.int64))
    check_vmap(lambda x: knp.digitize(x, bins), x.reshape(2, 4))
    with pytest.raises(ValueError, match="digitize: bins must be 1-D"):
        knp.digitize(x, bins.reshape(2, 2))


def test_histogram():
    edges = np.array([-2.0, -0.5, 0.0, 1.0, 3.0], np.float32)
    cases = [dict(bins=5), dict(bins=edges), dict(bins=3, range=(0.0, 1.0)), dict(bins=4, weights=W),
             dict(bins=edges, weights=W, density=True), dict(bins=6, density=True)]
    for kw in cases:
        kkw = {k: (v if k != "range" else v) for k, v in kw.items()}
        fn = kiln.jit(lambda a, kw=kkw: knp.histogram(a, **kw))
        for counts, edges_out in (knp.histogram(A, **kkw), fn(A)):
            ec, ee = np.histogram(A, **kw)
            close(counts, ec, rtol=1e-5)
            close(edges_out, ee, rtol=1e-6)
            assert counts.dtype == np.float32  # as JAX: the counts are sums of (unit) weights
    close(knp.histogram_bin_edges(A, 4), np.histogram_bin_edges(A, 4))
    close(knp.histogram_bin_edges(np.ones(3, np.float32), 2), np.histogram_bin_edges(np.ones(3), 2))
    check_grad(lambda w: knp.histogram(A, edges, weights=w)[0] ** 2, W)
    check_vmap(lambda a: knp.histogram(a, edges)[0], A.reshape(4, 10))
    with pytest.raises(NotImplementedError, match="string bins"):
        knp.histogram(A, bins="auto")
    with pytest.raises(ValueError, match="histogram: weights must have a's shape"):
        knp.histogram(A, weights=W[:3])
    with pytest.raises(ValueError, match="range must be a pair"):
        knp.histogram_bin_edges(A, 3, range=(1.0,))


def test_histogramdd_histogram2d():
    bins = (2, 3, np.array([-1.0, 0.0, 1.0]))
    h, e = knp.histogramdd(S, bins)
    h2, e2 = np.histogramdd(S, bins)
    close(h, h2)
    for a, b in zip(e, e2):
        close(a, b, rtol=1e-6)
    fn = kiln.jit(lambda s, w: knp.histogramdd(s, 3, range=[(-1, 1), None, (0, 2)], weights=w, density=True))
    h, e = fn(S, W[:30])
    h2, e2 = np.histogramdd(S, 3, range=[(-1, 1), None, (0, 2)], weights=W[:30], density=True)
    close(h, h2, rtol=1e-4)
    h, ex, ey = kiln.jit(lambda x, y: knp.histogram2d(x, y, bins=[3, 4]))(S[:, 0], S[:, 1])
    h2, ex2, ey2 = np.histogram2d(S[:, 0], S[:, 1], bins=[3, 4])
    close(h, h2)
    close(ex, ex2, rtol=1e-6)
    close(ey, ey2, rtol=1e-6)
    close(knp.histogram2d(S[:, 0], S[:, 1], bins=np.array([-2.0, 0.0, 2.0]))[0],
          np.histogram2d(S[:, 0], S[:, 1], bins=np.array([-2.0, 0.0, 2.0]))[0])
    with pytest.raises(ValueError, match="histogramdd: sample must be 2-D"):
        knp.histogramdd(A)
    with pytest.raises(ValueError, match="range must be 3 pairs"):
        knp.histogramdd(S, range=[(0, 1)])
    with pytest.raises(ValueError, match="histogram2d: x and y must be 1-D of one length"):
        knp.histogram2d(S[:, 0], S[:5, 1])


def test_cov_corrcoef():
    fw = np.array([1, 2, 1, 3, 1, 1, 2], np.int32)
    aw = np.linspace(0.1, 1, 7).astype(np.float32)
    cases = [((M,), {}), ((M,), dict(bias=True)), ((M,), dict(ddof=3)), ((M,), dict(fweights=fw)),
             ((M,), dict(aweights=aw)), ((M,), dict(fweights=fw, aweights=aw)), ((M.T,), dict(rowvar=False)),
             ((M[0], M[1]), {}), ((M[0],), {}), ((M[:2], M[2]), dict(rowvar=True))]
    for args, kw in cases:
        close(knp.cov(*args, **kw), np.cov(*args, **kw), rtol=2e-5, atol=1e-6)
    f = kiln.jit(lambda m, w: (knp.cov(m, aweights=w), knp.corrcoef(m), knp.corrcoef(m[0], m[1])))
    out = f(M, aw)
    close(out[0], np.cov(M, aweights=aw), rtol=2e-5)
    close(out[1], np.corrcoef(M), rtol=2e-5, atol=1e-6)
    close(out[2], np.corrcoef(M[0], M[1]), rtol=2e-5, atol=1e-6)
    mc = (M + 1j * M[::-1]).astype(np.complex64)
    close(knp.cov(mc), np.cov(mc), rtol=2e-5, atol=1e-6)
    close(knp.corrcoef(mc), np.corrcoef(mc), rtol=2e-5, atol=1e-6)
    close(knp.cov(np.arange(6).reshape(2, 3)), np.cov(np.arange(6).reshape(2, 3)), dtype=np.float32)
    assert knp.cov(M, dtype=np.float32).dtype == np.float32
    check_grad(lambda m: knp.cov(m), M)
    check_grad(lambda m: knp.corrcoef(m) ** 2, M, rtol=1e-4)
    check_vmap(knp.cov, np.stack([M, 2 * M]), rtol=1e-5)
    with pytest.raises(ValueError, match="cov: m must have at most 2 dimensions"):
        knp.cov(np.ones((2, 2, 2)))
    with pytest.raises(TypeError, match="cov: fweights must be integers"):
        knp.cov(M, fweights=aw)
    with pytest.raises(ValueError, match="aweights must be 1-D with one weight per observation"):
        knp.cov(M, aweights=aw[:3])
    with pytest.raises(ValueError, match="cov: dtype must be a floating or complex dtype"):
        knp.cov(M, dtype=np.int32)
