"""diff, ediff1d, gradient, trapezoid, interp, unwrap, vander, fmax/fmin, gcd/lcm, i0, sort_complex against
NumPy, eagerly and under jit, with their derivatives (finite differences) and vmap (a Python loop)."""
from __future__ import annotations

import numpy as np
import pytest
from _fd import check_grad, check_vmap, close

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(7)
A = rng.normal(size=(3, 5)).astype(np.float32)
V = rng.normal(size=6).astype(np.float32)
I = rng.integers(-9, 9, size=(4, 3)).astype(np.int32)
B = rng.random((2, 4)) > 0.5


def test_diff_family():
    def f(a, v, i, b):
        return (knp.diff(a), knp.diff(a, n=2, axis=0), knp.diff(a, prepend=0.5, append=a[:, :1]), knp.diff(v, 3),
                knp.diff(i, axis=0), knp.diff(b), knp.ediff1d(a), knp.ediff1d(v, to_end=knp.ones(2), to_begin=-1.0))
    expected = (np.diff(A), np.diff(A, 2, axis=0), np.diff(A, prepend=0.5, append=A[:, :1]), np.diff(V, 3),
                np.diff(I, axis=0), np.diff(B), np.ediff1d(A), np.ediff1d(V, to_end=np.ones(2), to_begin=-1.0))
    for fn in (f, kiln.jit(f)):
        for out, exp in zip(fn(A, V, I, B), expected):
            close(out, exp, dtype=exp.dtype if exp.dtype != np.float64 else np.float32)
    close(knp.diff(A, n=0), A)
    check_grad(lambda a: knp.diff(a, 2) ** 2, A)
    check_vmap(lambda a: knp.diff(a, prepend=0.0), A)


def test_diff_errors():
    with pytest.raises(ValueError, match="diff: the order n must be non-negative"):
        knp.diff(A, -1)
    with pytest.raises(ValueError, match="diff: needs an array of at least one dimension"):
        knp.diff(knp.asarray(1.0))


def test_gradient():
    x = np.array([0.0, 1.0, 3.0, 7.0, 8.0], np.float32)
    f = lambda a: (knp.gradient(a), knp.gradient(a, 2.0, x), knp.gradient(a, axis=-1), knp.gradient(a, x, axis=1))
    expected = (np.gradient(A), np.gradient(A, 2.0, x), np.gradient(A, axis=-1), np.gradient(A, x, axis=1))
    for fn in (f, kiln.jit(f)):
        out = fn(A)
        for o, e in zip(out[0] + out[1], expected[0] + expected[1]):
            close(o, e)
        close(out[2], expected[2])
        close(out[3], expected[3])
    close(knp.gradient(I[:, 0]), np.gradient(I[:, 0]), dtype=np.float32)
    check_grad(lambda a: knp.gradient(a, x, axis=1) ** 2, A)
    check_vmap(lambda a: knp.gradient(a), A)
    with pytest.raises(NotImplementedError, match="edge_order is not supported"):
        knp.gradient(A, edge_order=2)
    with pytest.raises(ValueError, match="at least 2 samples"):
        knp.gradient(np.ones((1, 3), np.float32))
    with pytest.raises(TypeError, match="got 3 spacing arguments for 2 axes"):
        knp.gradient(A, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="must have the length of its axis"):
        knp.gradient(V, np.arange(3.0))


def test_trapezoid():
    x = np.sort(rng.normal(size=5)).astype(np.float32)
    f = lambda a: (knp.trapezoid(a), knp.trapezoid(a, x), knp.trapezoid(a, dx=0.5, axis=0),
                   knp.trapezoid(a, x=np.tile(x, (3, 1))))
    expected = (np.trapezoid(A), np.trapezoid(A, x), np.trapezoid(A, dx=0.5, axis=0),
                np.trapezoid(A, x=np.tile(x, (3, 1))))
    for fn in (f, kiln.jit(f)):
        for o, e in zip(fn(A), expected):
            close(o, e)
    check_grad(lambda a: knp.trapezoid(a ** 2, x), A)
    check_vmap(lambda a: knp.trapezoid(a, dx=0.3), A)
    with pytest.raises(ValueError, match="trapezoid: y must have at least one dimension"):
        knp.trapezoid(1.0)


def test_interp():
    xp = np.array([0.0, 1.0, 2.5, 4.0], np.float32)
    fp = np.array([1.0, -1.0, 3.0, 0.5], np.float32)
    x = np.array([-1.0, 0.0, 0.3, 1.0, 2.0, 3.9, 4.0, 5.0], np.float32)
    f = lambda x, xp, fp: (knp.interp(x, xp, fp), knp.interp(x, xp, fp, left=-7.0, right=9.0),
                           knp.interp(x, xp, fp, period=3.0))
    expected = (np.interp(x, xp, fp), np.interp(x, xp, fp, left=-7.0, right=9.0), np.interp(x, xp, fp, period=3.0))
    for fn in (f, kiln.jit(f)):
        for o, e in zip(fn(x, xp, fp), expected):
            close(o, e)
    ext = knp.interp(np.array([-1.0, 5.0]), xp, fp, left="extrapolate", right="extrapolate")
    close(ext, [1.0 + (-1.0 - 1.0) * -1.0, 0.5 + (0.5 - 3.0) / 1.5 * 1.0])  # the end segments, extended
    close(knp.interp(x, xp[:1], fp[:1]), np.interp(x, xp[:1], fp[:1]))
    close(knp.interp(x, xp, fp.astype(np.complex64)), np.interp(x, xp, fp.astype(np.complex64)))
    check_grad(lambda fp: knp.interp(x[1:-1], xp, fp), fp)
    check_grad(lambda x: knp.interp(x, xp, fp), np.array([0.3, 1.7, 3.2]))
    check_vmap(lambda fp: knp.interp(x, xp, fp), np.stack([fp, 2 * fp]))
    with pytest.raises(ValueError, match="left must be a value, None or 'extrapolate'"):
        knp.interp(x, xp, fp, left="wrong")
    with pytest.raises(ValueError, match="xp and fp must be 1-D arrays of one length"):
        knp.interp(x, xp, fp[:2])
    with pytest.raises(ValueError, match="x and xp must be real"):
        knp.interp(x.astype(np.complex64), xp, fp)


def test_unwrap():
    p = np.cumsum(rng.uniform(-3, 3, size=(2, 9)), axis=1).astype(np.float32) % (2 * np.pi)
    f = lambda p: (knp.unwrap(p), knp.unwrap(p, axis=0), knp.unwrap(p, discont=4.0), knp.unwrap(p, period=4.0))
    expected = (np.unwrap(p), np.unwrap(p, axis=0), np.unwrap(p, discont=4.0), np.unwrap(p, period=4.0))
    for fn in (f, kiln.jit(f)):
        for o, e in zip(fn(p), expected):
            close(o, e, rtol=1e-5, atol=1e-5)
    q = np.array([0, 5, 9, 1, 14], np.int32)
    close(knp.unwrap(q, period=8), np.unwrap(q, period=8), dtype=np.int32)
    check_grad(lambda p: knp.unwrap(p) ** 2, p[0])
    check_vmap(lambda p: knp.unwrap(p), p)
    with pytest.raises(ValueError, match="unwrap: complex input is not supported"):
        knp.unwrap(np.ones(3, np.complex64))


def test_vander():
    x = np.array([1.0, 2.0, -0.5], np.float32)
    f = lambda x, i: (knp.vander(x), knp.vander(x, 5), knp.vander(x, 2, increasing=True), knp.vander(i, 4),
                      knp.vander(x, 0))
    expected = (np.vander(x), np.vander(x, 5), np.vander(x, 2, increasing=True), np.vander(I[:, 0], 4),
                np.vander(x, 0))
    for fn in (f, kiln.jit(f)):
        for o, e, dt in zip(fn(x, I[:, 0]), expected, (np.float32,) * 3 + (np.int32, np.float32)):
            close(o, e, dtype=dt)
    check_grad(lambda x: knp.vander(x, 4), x)
    check_vmap(lambda x: knp.vander(x, 3), np.stack([x, -x]))
    with pytest.raises(ValueError, match="vander: x must be 1-D"):
        knp.vander(A)


def test_fmax_fmin():
    x = np.array([1.0, np.nan, 3.0, np.nan, -2.0], np.float32)
    y = np.array([2.0, 1.0, np.nan, np.nan, -3.0], np.float32)
    f = lambda x, y: (knp.fmax(x, y), knp.fmin(x, y), knp.fmax(x, 0.0), knp.fmin(I, 2))
    expected = (np.fmax(x, y), np.fmin(x, y), np.fmax(x, np.float32(0)), np.fmin(I, 2))
    for fn in (f, kiln.jit(f)):
        for o, e in zip(fn(x, y), expected):
            close(o, e, dtype=e.dtype)
    check_grad(lambda a: knp.fmax(a, 0.1) + knp.fmin(a, -0.1), A)
    check_vmap(knp.fmax, A, A[::-1])


def test_gcd_lcm():
    x = rng.integers(-30, 30, size=(3, 4)).astype(np.int32)
    y = rng.integers(-30, 30, size=(4,)).astype(np.int32)
    x[0, 0], y[0] = 0, 0
    f = lambda x, y: (knp.gcd(x, y), knp.lcm(x, y), knp.gcd(x, 6), knp.lcm(x.astype(np.uint8), np.uint8(4)))
    expected = (np.gcd(x, y), np.lcm(x, y), np.gcd(x, 6), np.lcm(np.abs(x).astype(np.uint8), np.uint8(4)))
    for fn in (f, kiln.jit(f)):
        out = fn(x, y)
        for o, e in zip(out[:3], expected[:3]):
            close(o, e, dtype=np.int32)
    close(knp.lcm(np.abs(x).astype(np.uint8), np.uint8(4)), expected[3], dtype=np.uint8)
    check_vmap(knp.gcd, x, x[::-1])
    with pytest.raises(TypeError, match="gcd: needs integer inputs, got float32"):
        knp.gcd(A, 2)


def test_i0():
    x = np.array([-30.0, -8.5, -1.0, 0.0, 0.5, 3.0, 8.0, 8.01, 20.0], np.float32)
    for fn in (knp.i0, kiln.jit(knp.i0)):
        close(fn(x), np.i0(x), rtol=2e-6)
    close(knp.i0(np.array([1, 2])), np.i0([1.0, 2.0]), dtype=np.float32)
    with kiln.config.override("enable_x64", True):
        close(knp.i0(x.astype(np.float64)), np.i0(x.astype(np.float64)), rtol=1e-13)
    check_grad(knp.i0, np.array([-9.0, -2.0, 0.3, 4.0, 12.0]), rtol=1e-6)
    check_vmap(knp.i0, A)
    with pytest.raises(ValueError, match="i0: complex input is not supported"):
        knp.i0(np.ones(2, np.complex64))


def test_sort_complex():
    x = np.array([3.0, 1.0, 2.0 + 1j, 2.0 - 1j], np.complex64)
    close(knp.sort_complex(x), np.sort_complex(x), dtype=np.complex64)
    close(kiln.jit(knp.sort_complex)(I), np.sort_complex(I).astype(np.complex64), dtype=np.complex64)
