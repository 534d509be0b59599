"""kiln.numpy.convolve / correlate against NumPy (all modes, both length orders, dtypes, jit, grad)."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp

RNG = np.random.default_rng(0)
LENGTHS = [(5, 3), (3, 5), (4, 4), (1, 6), (7, 1)]


@pytest.mark.parametrize("fname", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,m", LENGTHS)
def test_matches_numpy(fname, mode, n, m):
    a = RNG.standard_normal(n).astype(np.float32)
    v = RNG.standard_normal(m).astype(np.float32)
    want = getattr(np, fname)(a, v, mode)
    got = getattr(knp, fname)(a, v, mode)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    jitted = kiln.jit(lambda a, v: getattr(knp, fname)(a, v, mode, precision="highest"))(a, v)
    np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-5, atol=1e-5)


def test_integers_give_floats_and_complex_correlate_conjugates():
    a, v = np.arange(5), np.array([1, 2, 3])
    out = knp.convolve(a, v)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), np.convolve(a, v))
    ca = (RNG.standard_normal(6) + 1j * RNG.standard_normal(6)).astype(np.complex64)
    cv = (RNG.standard_normal(3) + 1j * RNG.standard_normal(3)).astype(np.complex64)
    for mode in ("full", "same", "valid"):
        np.testing.assert_allclose(np.asarray(knp.correlate(ca, cv, mode)), np.correlate(ca, cv, mode), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(np.asarray(knp.correlate(cv, ca, mode)), np.correlate(cv, ca, mode), rtol=1e-5,
                                   atol=1e-5)


def test_gradient_is_the_correlation():
    a = RNG.standard_normal(6).astype(np.float32)
    v = RNG.standard_normal(3).astype(np.float32)
    g = kiln.grad(lambda a: knp.sum(knp.convolve(a, v) ** 2))(a)
    eps, num = 1e-3, []
    for i in range(6):
        d = np.zeros(6, np.float32)
        d[i] = eps
        num.append((np.sum(np.convolve(a + d, v) ** 2) - np.sum(np.convolve(a - d, v) ** 2)) / (2 * eps))
    np.testing.assert_allclose(np.asarray(g), num, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("call,message", [
    (lambda: knp.convolve(np.ones((2, 2)), np.ones(2)), "only 1-D inputs"),
    (lambda: knp.correlate(np.ones(0), np.ones(2)), "cannot be empty"),
    (lambda: knp.convolve(np.ones(3), np.ones(2), mode="circular"), "mode must be"),
])
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_array_dot_takes_precision():
    h = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = knp.asarray(h)
    np.testing.assert_allclose(np.asarray(x.dot(x.T, precision="highest")), h @ h.T, rtol=1e-6)
