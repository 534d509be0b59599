"""Polynomials (poly, polyadd, polysub, polymul, polydiv, polyder, polyint, polyval, polyfit) and windows
(bartlett, blackman, hamming, hanning, kaiser) against NumPy; eager, jit, grad, vmap, and their errors."""
from __future__ import annotations

import numpy as np
import pytest
from _fd import check_grad, check_vmap, close

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(13)
P = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
Q = np.array([2.0, 1.0], np.float32)
IP = np.array([1, 2, 3], np.int32)


def test_poly_add_sub_mul():
    roots = np.array([1.0, 2.0, -0.5], np.float32)
    f = lambda p, q, r: (knp.poly(r), knp.polyadd(p, q), knp.polysub(q, p), knp.polymul(p, q),
                         knp.polyadd(IP, np.array([4, 5], np.int32)))
    expected = (np.poly(roots), np.polyadd(P, Q), np.polysub(Q, P), np.polymul(P, Q), np.polyadd(IP, [4, 5]))
    for fn in (f, kiln.jit(f)):
        for o, e, dt in zip(fn(P, Q, roots), expected, (np.float32,) * 4 + (np.int32,)):
            close(o, e, dtype=dt)
    close(knp.polymul(IP, IP), np.polymul(IP, IP), dtype=np.float32)  # as JAX: always inexact
    close(knp.polymul(np.array([0.0, 0.0, 1.0, 2.0]), Q, trim_leading_zeros=True), np.polymul([1.0, 2.0], Q))
    close(knp.poly(np.array([1.0 + 1j, 1.0 - 1j], np.complex64)), np.poly([1 + 1j, 1 - 1j]).astype(np.complex64))
    close(knp.poly(np.zeros(0, np.float32)), 1.0)
    check_grad(lambda r: knp.poly(r), roots)
    check_grad(lambda p: knp.polymul(p, Q) ** 2, P)
    check_vmap(lambda p: knp.polyadd(p, Q), np.stack([P, -P]))
    with pytest.raises(ValueError, match="poly: needs a 1-D array of roots or a non-empty square matrix"):
        knp.poly(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"polyadd: coefficients of shape \(2, 2\) do not broadcast into the last "
                                         r"rows of shape \(2,\)"):
        knp.polyadd(np.ones((2, 2)), np.ones(3))  # (as JAX, stacked coefficients run along axis 0)
    with pytest.raises(TypeError, match="polyadd: argument 0 is a list"):
        knp.polyadd([1.0], Q)


def test_polydiv():
    u = np.array([3.0, 5.0, 2.0, 1.0], np.float32)
    for fn in (knp.polydiv, kiln.jit(knp.polydiv)):
        q, r = fn(u, Q)
        eq, er = np.polydiv(u, Q)
        close(q, eq)
        close(r[-len(er):], er)
        close(r[:-len(er)], np.zeros(len(u) - len(er)))  # as JAX: the remainder keeps u's length
    q, r = knp.polydiv(u, Q, trim_leading_zeros=True)
    close(r, np.polydiv(u, Q)[1])
    check_grad(lambda u: knp.polydiv(u, Q)[0], u)
    with pytest.raises(TypeError, match="polydiv: trim_leading_zeros=True needs concrete values"):
        kiln.jit(lambda u: knp.polydiv(u, Q, trim_leading_zeros=True))(u)


def test_polyder_polyint():
    f = lambda p: (knp.polyder(p), knp.polyder(p, 2), knp.polyder(p, 0), knp.polyint(p), knp.polyint(p, 2, k=3.0),
                   knp.polyint(p, 2, k=np.array([1.0, 2.0])))
    expected = (np.polyder(P), np.polyder(P, 2), P, np.polyint(P), np.polyint(P, 2, k=3.0),
                np.polyint(P, 2, k=[1.0, 2.0]))
    for fn in (f, kiln.jit(f)):
        for o, e in zip(fn(P), expected):
            close(o, e, dtype=np.float32)
    close(knp.polyder(IP), np.polyder(IP), dtype=np.float32)
    check_grad(lambda p: knp.polyint(knp.polyder(p), k=1.0) ** 2, P)
    check_vmap(lambda p: knp.polyder(p, 2), np.stack([P, 2 * P]))
    with pytest.raises(ValueError, match="polyder: the order m must be non-negative"):
        knp.polyder(P, -1)
    with pytest.raises(ValueError, match=r"polyint: k must be a scalar or 2 values, got shape \(3,\)"):
        knp.polyint(P, 2, k=np.ones(3))


def test_polyval():
    x = np.linspace(-2, 2, 7).astype(np.float32)
    P2 = np.stack([P, -P, 2 * P], axis=1)  # one polynomial per column
    f = lambda p, x, p2: (knp.polyval(p, x), knp.polyval(p, 1.5), knp.polyval(p2, x[:3]), knp.polyval(IP, 2))
    expected = (np.polyval(P, x), np.polyval(P, np.float32(1.5)), np.polyval(P2, x[:3]), np.polyval(IP, 2))
    for fn in (f, kiln.jit(f)):
        for o, e in zip(fn(P, x, P2), expected):
            close(o, e, rtol=2e-6)
    check_grad(lambda p: knp.polyval(p, np.linspace(-1, 1, 5)), P)
    check_grad(lambda x: knp.polyval(P.astype(np.float64), x), x)
    check_vmap(lambda x: knp.polyval(P, x), x.reshape(7, 1))


def test_polyfit():
    x = np.linspace(0, 1, 9).astype(np.float32)
    y = (3 * x ** 2 - x + 0.5 + 0.01 * np.sin(7 * x)).astype(np.float32)
    w = np.linspace(1, 2, 9).astype(np.float32)
    Y = np.stack([y, 2 * y - 1], axis=1)
    for fn in (knp.polyfit, kiln.jit(knp.polyfit, static_argnums=2)):
        close(fn(x, y, 2), np.polyfit(x, y, 2), rtol=1e-3, atol=1e-4)
    close(knp.polyfit(x, Y, 2, w=w), np.polyfit(x, Y, 2, w=w), rtol=1e-3, atol=1e-4)
    c, resid, rank, s, rcond = knp.polyfit(x, y, 2, full=True)
    ec, eresid, erank, es, ercond = np.polyfit(x, y, 2, full=True)
    close(c, ec, rtol=1e-3, atol=1e-4)
    close(s, es, rtol=1e-4)
    assert int(rank) == erank
    np.testing.assert_allclose(float(resid), eresid[0], rtol=1e-2)
    c, cov = knp.polyfit(x, y, 2, cov=True)
    close(cov, np.polyfit(x, y, 2, cov=True)[1], rtol=2e-2, atol=1e-7)
    c, cov = knp.polyfit(x, Y, 1, cov=True)
    assert cov.shape == np.polyfit(x, Y, 1, cov=True)[1].shape == (2, 2, 2)
    check_grad(lambda y: knp.polyfit(x.astype(np.float64), y, 2), y, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="polyfit: deg must be non-negative"):
        knp.polyfit(x, y, -1)
    with pytest.raises(TypeError, match="polyfit: x and y must have the same length"):
        knp.polyfit(x, y[:3], 1)
    with pytest.raises(TypeError, match="polyfit: x must be 1-D"):
        knp.polyfit(Y, y, 1)


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows(name):
    kfn, nfn = getattr(knp, name), getattr(np, name)
    for M in (0, 1, 2, 5, 8):
        close(kfn(M), nfn(M), atol=2e-7, dtype=np.float32)
    close(kiln.jit(kfn, static_argnums=0)(6), nfn(6), atol=2e-7)
    with kiln.config.override("enable_x64", True):
        close(kfn(7), nfn(7), rtol=1e-14, atol=1e-15, dtype=np.float64)
    with pytest.raises(TypeError, match=f"{name}: M must be an integer"):
        kfn(2.5)


def test_kaiser():
    for M, beta in ((0, 5.0), (1, 5.0), (2, 0.0), (6, 5.0), (9, 14.0)):
        close(knp.kaiser(M, beta), np.kaiser(M, beta), rtol=2e-6, atol=1e-7, dtype=np.float32)
    close(kiln.jit(lambda b: knp.kaiser(7, b))(8.6), np.kaiser(7, 8.6), rtol=2e-6)
    check_grad(lambda b: knp.kaiser(6, b), np.array(3.0))
    check_vmap(lambda b: knp.kaiser(5, b), np.array([1.0, 4.0, 9.0], np.float32))
