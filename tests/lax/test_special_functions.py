"""kiln.lax's igamma, igammac, igamma_grad_a, random_gamma_grad, betainc, zeta, polygamma, bessel_i0e and
bessel_i1e (frontend/special_functions.py) against SciPy, eagerly and under jit, with grad and vmap."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import kiln
from kiln import lax

rng = np.random.default_rng(14)
TOL = {np.float32: 2e-5, np.float64: 1e-10}


@pytest.fixture(autouse=True)
def _x64():
    """64-bit mode, so float64 operands stay float64 (float32 cases pass float32 arrays)."""
    with kiln.config.override("enable_x64", True):
        yield


def _pos(shape, dtype, lo=0.2, hi=8.0):
    return rng.uniform(lo, hi, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (7,), (2, 3)])
def test_against_scipy(dtype, shape):
    a, x, b, s = _pos(shape, dtype), _pos(shape, dtype), _pos(shape, dtype), _pos(shape, dtype, 1.5, 6.0)
    u = rng.uniform(0.01, 0.99, shape).astype(dtype)
    m = rng.integers(0, 4, shape).astype(dtype)
    z = rng.uniform(-30, 30, shape).astype(dtype)

    def all_fns(a, x, b, u, s, m, z):
        return (lax.igamma(a, x), lax.igammac(a, x), lax.betainc(a, b, u), lax.zeta(s, x),
                lax.polygamma(m, x), lax.bessel_i0e(z), lax.bessel_i1e(z))

    want = (sp.gammainc(a, x), sp.gammaincc(a, x), sp.betainc(a, b, u), sp.zeta(s, x), sp.polygamma(m, x),
            sp.i0e(z), sp.i1e(z))
    for fn in (all_fns, kiln.jit(all_fns)):
        got = fn(a, x, b, u, s, m, z)
        for g, w in zip(got, want):
            assert g.dtype == dtype and g.shape == shape
            np.testing.assert_allclose(np.asarray(g), w, rtol=TOL[dtype] * 20, atol=TOL[dtype])


def _fd(f, v, h=1e-6):
    return (f(v + h) - f(v - h)) / (2 * h)


def test_igamma_grad_a_and_random_gamma_grad():
    a = np.array([0.3, 1.0, 2.5, 7.0, 12.0])
    x = np.array([0.5, 3.0, 1.0, 9.0, 11.0])
    want_da = _fd(lambda v: sp.gammainc(v, x), a)
    fn = kiln.jit(lambda a, x: (lax.igamma_grad_a(a, x), lax.random_gamma_grad(a, x)))
    da, rgg = fn(a, x)
    np.testing.assert_allclose(np.asarray(da), want_da, rtol=1e-6)
    dx = np.exp((a - 1) * np.log(x) - x - sp.gammaln(a))  # d igamma / dx
    np.testing.assert_allclose(np.asarray(rgg), -want_da / dx, rtol=1e-6)
    # The sample x(a) with igamma(a, x(a)) = u fixed moves by random_gamma_grad.
    u = sp.gammainc(a, x)
    np.testing.assert_allclose(np.asarray(rgg), _fd(lambda v: sp.gammaincinv(v, u), a), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(lax.random_gamma_grad(a, x, dtype=np.float64)), np.asarray(rgg))
    edge = lax.random_gamma_grad(np.array([2.0, -1.0, 1.0]), np.array([0.0, 1.0, -1.0]))
    np.testing.assert_array_equal(np.isnan(np.asarray(edge)), [False, True, True])
    assert float(edge[0]) == 0.0


def test_grad_and_vmap():
    a, x = np.array([0.7, 2.0, 5.0]), np.array([1.5, 0.4, 6.0])
    g = kiln.grad(lambda x: lax.igamma(a, x).sum())(x)
    np.testing.assert_allclose(np.asarray(g), np.exp((a - 1) * np.log(x) - x - sp.gammaln(a)), rtol=1e-8)
    g = kiln.grad(lambda a: lax.igamma(a, x).sum())(a)
    np.testing.assert_allclose(np.asarray(g), _fd(lambda v: sp.gammainc(v, x), a), rtol=1e-6)
    gq = kiln.grad(lambda q: lax.zeta(np.full(3, 3.0), q).sum())(x)
    np.testing.assert_allclose(np.asarray(gq), -3 * sp.zeta(4.0, x), rtol=1e-8)
    rows_a, rows_x = _pos((4, 3), np.float32), _pos((4, 3), np.float32)
    got = kiln.vmap(lambda a, x: (lax.igammac(a, x), lax.bessel_i1e(x)))(rows_a, rows_x)
    for i in range(4):
        np.testing.assert_allclose(np.asarray(got[0][i]), np.asarray(lax.igammac(rows_a[i], rows_x[i])), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(got[1][i]), np.asarray(lax.bessel_i1e(rows_x[i])), rtol=1e-6)


def test_python_scalar_takes_the_array_dtype():
    x = np.array([0.5, 2.0], np.float32)
    out = lax.igamma(1.5, x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), sp.gammainc(1.5, x), rtol=1e-5)


def test_errors():
    f32, f64 = np.ones(2, np.float32), np.ones(2, np.float64)
    with pytest.raises(TypeError, match=r"kiln.lax.igamma: operands must have the same dtype, got float32 and "
                                        r"float64 .*convert_element_type"):
        lax.igamma(f32, f64)
    with pytest.raises(TypeError, match=r"kiln.lax.bessel_i0e: takes floating arrays, got int32"):
        lax.bessel_i0e(np.ones(2, np.int32))
    with pytest.raises(TypeError, match=r"kiln.lax.betainc: operand shapes \(2,\) and \(3,\) and \(2,\) do not "
                                         r"broadcast \(kiln.lax broadcasts rank-0 operands and axes of size 1"):
        lax.betainc(f64, np.ones(3), f64)
    with pytest.raises(TypeError, match=r"kiln.lax.random_gamma_grad: dtype=float32 differs from the operands' "
                                        r"float64"):
        lax.random_gamma_grad(f64, f64, dtype=np.float32)
