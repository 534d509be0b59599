"""kiln.scipy.special's gamma/beta family, incomplete gamma/beta, zeta, Bessel, normal-tail and
exponential-integral functions against scipy.special: eager and jit, float32 and float64, grad, vmap."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import kiln
import kiln.numpy as knp
from kiln.scipy import special as ks

rng = np.random.default_rng(7)


def _u(lo, hi, n=12):
    return rng.uniform(lo, hi, n)


# name -> (kiln function, scipy reference, argument arrays (float64))
CASES = {
    "gamma": (ks.gamma, sp.gamma, [np.r_[_u(-5, 10), -0.5, 0.5]]),
    "gammasgn": (ks.gammasgn, sp.gammasgn, [np.r_[_u(-5, 5), 0.0, -0.0, -1.0, -2.5, np.inf, -np.inf, np.nan]]),
    "loggamma": (ks.loggamma, sp.loggamma, [_u(0.01, 30)]),
    "betaln": (ks.betaln, sp.betaln, [np.r_[_u(0.1, 40), 1.0, 3.0], np.r_[_u(0.1, 40), 1e4, 2e6]]),
    "beta": (ks.beta, sp.beta, [_u(-3.5, 8), _u(0.2, 4)]),
    "factorial": (ks.factorial, sp.factorial, [np.r_[np.arange(-2.0, 15), 3.5]]),
    "comb": (ks.comb, sp.comb, [np.arange(0.0, 20), np.arange(20.0) % 7 - 1]),
    "poch": (ks.poch, sp.poch, [_u(-4, 8), _u(-3, 3)]),
    "gammainc": (ks.gammainc, sp.gammainc, [np.r_[_u(0.05, 20), 3.0, 100.0, 2.0, 0.0],
                                             np.r_[_u(0, 30), 0.0, 120.0, np.inf, 1.0]]),
    "gammaincc": (ks.gammaincc, sp.gammaincc, [np.r_[_u(0.05, 20), 3.0, 100.0, 2.0, 0.0],
                                               np.r_[_u(0, 30), 0.0, 120.0, np.inf, 1.0]]),
    "betainc": (ks.betainc, sp.betainc, [np.r_[_u(0.1, 20), 60.0, 2.0], np.r_[_u(0.1, 20), 40.0, 3.0],
                                         np.r_[_u(0, 1), 0.6, 1.0]]),
    "zeta": (ks.zeta, sp.zeta, [np.r_[_u(1.1, 20), 3.0], np.r_[_u(0.1, 10), -1.5]]),
    "polygamma": (ks.polygamma, sp.polygamma, [np.arange(12.0) % 4, _u(0.2, 10)]),
    "i0": (ks.i0, sp.i0, [np.r_[_u(-30, 30), 0.0, 19.9, 20.1]]),
    "i0e": (ks.i0e, sp.i0e, [np.r_[_u(-30, 30), 0.0, 19.9, 20.1, 500.0]]),
    "i1": (ks.i1, sp.i1, [np.r_[_u(-30, 30), 0.0, 19.9, 20.1]]),
    "i1e": (ks.i1e, sp.i1e, [np.r_[_u(-30, 30), 0.0, 19.9, 20.1, 500.0]]),
    "erfcx": (ks.erfcx, sp.erfcx, [np.r_[_u(-8, 30), 7.9, 8.1, 11.9, 12.1, 1e4]]),
    "log_ndtr": (ks.log_ndtr, sp.log_ndtr, [np.r_[_u(-40, 8), -1.0, -0.999, -1.001, -300.0]]),
    "ndtri": (ks.ndtri, sp.ndtri, [np.r_[_u(0, 1), 1e-30, 1e-8, 0.999, 1 - 1e-6, 0.0, 1.0, -0.1, 1.1]]),
    "exp1": (ks.exp1, sp.exp1, [np.r_[_u(0, 5), 0.0, 1.0, 1.001, 50.0, -1.0]]),
    "expn": (ks.expn, sp.expn, [np.r_[np.arange(12.0) % 5, 2.0, 0.0], np.r_[_u(0, 4), 0.0, 0.0]]),
    "expi": (ks.expi, sp.expi, [np.r_[_u(-20, 60), 0.0, 39.9, 40.1, -0.5]]),
    "rel_entr": (ks.rel_entr, sp.rel_entr, [np.r_[0.0, 0.0, 1.0, _u(0, 2)], np.r_[0.0, 1.0, 0.0, _u(0, 2)]]),
    "kl_div": (ks.kl_div, sp.kl_div, [np.r_[0.0, 0.0, 1.0, _u(0, 2)], np.r_[0.0, 1.0, 0.0, _u(0, 2)]]),
    "boxcox": (ks.boxcox, sp.boxcox, [_u(0.1, 5), np.r_[0.0, _u(-2, 2, 11)]]),
    "boxcox1p": (ks.boxcox1p, sp.boxcox1p, [_u(-0.9, 5), np.r_[0.0, _u(-2, 2, 11)]]),
    "spence": (ks.spence, sp.spence, [np.r_[_u(0, 5), 0.0, 0.5, 1.0, 2.0, 1e-6, 100.0, 1e4, np.inf, -1.0]]),
    "owens_t": (ks.owens_t, sp.owens_t, [np.r_[_u(-5, 5), 0.0, 0.0], np.r_[_u(-5, 5), 0.5, 1e3]]),
    "dawsn": (ks.dawsn, sp.dawsn, [np.r_[_u(-10, 10), 0.0, 1e-4, 50.0, 1e3]]),
    "fresnel_s": (lambda x: ks.fresnel(x)[0], lambda x: sp.fresnel(x)[0], [np.r_[_u(-10, 10), 0.0, np.inf]]),
    "fresnel_c": (lambda x: ks.fresnel(x)[1], lambda x: sp.fresnel(x)[1], [np.r_[_u(-10, 10), 0.0, -np.inf]]),
    "sici_s": (lambda x: ks.sici(x)[0], lambda x: sp.sici(x)[0], [np.r_[_u(-30, 30), 0.0, 2.0, 1e4, np.inf]]),
    "sici_c": (lambda x: ks.sici(x)[1], lambda x: sp.sici(x)[1], [np.r_[_u(-30, 30), 0.0, 2.0, 1e4, -np.inf]]),
    "hyp1f1": (ks.hyp1f1, sp.hyp1f1, [np.r_[_u(-3, 5), 0.0, 2.0, -2.0, 1.5], np.r_[_u(0.5, 6), 3.0, 2.0, 3.0, -1.0],
                                      np.r_[_u(-30, 30), 1.0, 4.0, -3.0, 1.0]]),
    "hyp2f1": (ks.hyp2f1, sp.hyp2f1, [np.r_[_u(-3, 3), -2.0, 1.0, 1.0], np.r_[_u(-3, 3), 1.0, 1.0, 1.0],
                                      np.r_[_u(0.5, 5), 2.0, 3.5, 1.0],
                                      np.r_[_u(-5, 0.9), 0.5, 1.0, 0.7]]),
}


def _check(name, out, ref, rtol, atol):
    out = np.asarray(out)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_against_scipy(dtype):
    x64 = dtype == np.float64
    args = {n: [a.astype(dtype) for a in c[2]] for n, c in CASES.items()}
    with kiln.config.override("enable_x64", x64):
        outs = kiln.jit(lambda args: {n: CASES[n][0](*a) for n, a in args.items()})(args)
    for n, (_, ref, _) in CASES.items():
        expected = ref(*[a.astype(np.float64) for a in args[n]])
        assert outs[n].dtype == dtype, n
        if x64:
            _check(n, outs[n], expected, 1e-9, 1e-300)
        else:
            finite = np.abs(expected) < np.finfo(np.float32).max
            expected = np.where(finite | np.isnan(expected), expected, np.copysign(np.inf, expected))
            _check(n, outs[n], expected.astype(np.float32), 3e-5, 1e-6)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_wofz(dtype):
    z = np.r_[rng.uniform(-8, 8, 40) + 1j * rng.uniform(-5, 5, 40), 0, 3.0, -2.0, 1e-3j, 30 + 1j, -20 - 0.5j]
    z = z.astype(dtype)
    with kiln.config.override("enable_x64", dtype == np.complex128):
        out = kiln.jit(ks.wofz)(z)
        assert out.dtype == dtype
        ref = sp.wofz(z.astype(np.complex128))
        np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-13 if dtype == np.complex128 else 3e-6)
    assert ks.wofz(np.float32([1.0])).dtype == np.complex64


def test_sph_harm_y():
    n = rng.integers(0, 8, 20)
    m = np.array([rng.integers(-k, k + 1) for k in n])
    th, ph = rng.uniform(0, np.pi, 20), rng.uniform(0, 2 * np.pi, 20)
    out = kiln.jit(lambda n, m, t, p: ks.sph_harm_y(n, m, t, p, n_max=7))(n, m, th.astype(np.float32),
                                                                          ph.astype(np.float32))
    assert out.dtype == np.complex64 and out.shape == (20,)
    np.testing.assert_allclose(np.asarray(out), sp.sph_harm_y(n, m, th, ph), atol=2e-6)
    with kiln.config.override("enable_x64", True):
        n30, m30 = np.full(5, 30), np.array([0, 5, -12, 30, -29])
        np.testing.assert_allclose(np.asarray(ks.sph_harm_y(n30, m30, th[:5], ph[:5])),
                                   sp.sph_harm_y(n30, m30, th[:5], ph[:5]), atol=1e-13)
    assert complex(ks.sph_harm_y(1, 2, 0.3, 0.2)[0]) == 0  # |m| > n
    with pytest.raises(NotImplementedError, match="sph_harm_y: diff_n"):
        ks.sph_harm_y(1, 0, 0.3, 0.2, diff_n=1)
    with pytest.raises(TypeError, match="sph_harm_y: n is traced, so pass n_max"):
        kiln.jit(lambda n: ks.sph_harm_y(n, 0, 0.3, 0.2))(np.int32(2))


def test_bessel_jn():
    z = np.r_[rng.uniform(-20, 20, 12), 0.0, 1e-3, 25.0]
    ref = np.stack([sp.jv(n, z) for n in range(6)])
    out = kiln.jit(lambda z: ks.bessel_jn(z, v=5))(z.astype(np.float32))
    assert out.shape == (6, z.size) and out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), ref, atol=1e-6)
    with kiln.config.override("enable_x64", True):
        np.testing.assert_allclose(np.asarray(ks.bessel_jn(z, v=5)), ref, atol=1e-12)
        g = kiln.grad(lambda x: ks.bessel_jn(x, v=1)[0])(2.5)  # J0' = -J1
        np.testing.assert_allclose(float(g), -sp.j1(2.5), rtol=1e-9)
    out = ks.bessel_jn(np.float32([[1.0, 2.0]]), v=0)
    assert out.shape == (1, 1, 2)
    with pytest.raises(TypeError, match="bessel_jn: v must be a non-negative Python int"):
        ks.bessel_jn(1.0, v=1.5)
    with pytest.raises(ValueError, match="bessel_jn: z must be real floating point, got int32"):
        ks.bessel_jn(np.int32(1), v=1)


def test_eager_shapes_and_broadcasting():
    a = rng.uniform(0.5, 5, (2, 1, 3)).astype(np.float32)
    x = rng.uniform(0.1, 6, (4, 1)).astype(np.float32)
    out = ks.gammainc(a, x)
    assert out.shape == (2, 4, 3) and out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), sp.gammainc(a, x), rtol=3e-5, atol=1e-6)
    assert ks.gammaincc(2, 3).dtype == np.float32  # integer Python scalars give the default float
    np.testing.assert_allclose(float(ks.gammaincc(2, 3)), sp.gammaincc(2, 3), rtol=1e-5)
    assert ks.ndtri(np.float32(0.3)).shape == ()
    assert ks.betainc(np.ones((0,)), 2.0, 0.5).shape == (0,)
    np.testing.assert_allclose(np.asarray(ks.multigammaln(np.float32([2.5, 7.0]), 3)),
                               sp.multigammaln(np.array([2.5, 7.0]), 3), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ks.bernoulli(10)), sp.bernoulli(10), rtol=1e-6)
    x2 = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(ks.softmax(x2)), np.exp(x2) / np.exp(x2).sum(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ks.log_softmax(x2, axis=1)), sp.log_softmax(x2, axis=1), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(ks.zeta(np.float32([2.0, 4.0]))), sp.zeta([2.0, 4.0]), rtol=1e-6)


def _fd(f, args, i, h=1e-6):
    hi, lo = list(args), list(args)
    hi[i] += h
    lo[i] -= h
    return (f(*hi) - f(*lo)) / (2 * h)


GRADS = [  # (kiln fn, scipy fn, args, argnums): integer parameters included (fractions that terminate)
    (ks.gammainc, sp.gammainc, (2.5, 1.7), (0, 1)), (ks.gammainc, sp.gammainc, (3.0, 4.5), (0, 1)),
    (ks.gammaincc, sp.gammaincc, (0.7, 3.0), (0, 1)), (ks.gammaincc, sp.gammaincc, (4.0, 2.0), (0, 1)),
    (ks.betainc, sp.betainc, (2.0, 3.0, 0.8), (0, 1, 2)), (ks.betainc, sp.betainc, (2.5, 3.5, 0.3), (0, 1, 2)),
    (ks.erfcx, sp.erfcx, (1.3,), (0,)), (ks.erfcx, sp.erfcx, (14.0,), (0,)),
    (ks.log_ndtr, sp.log_ndtr, (-3.0,), (0,)), (ks.ndtri, sp.ndtri, (0.1,), (0,)),
    (ks.expi, sp.expi, (1.5,), (0,)), (ks.expi, sp.expi, (-1.5,), (0,)), (ks.exp1, sp.exp1, (0.5,), (0,)),
    (ks.zeta, sp.zeta, (3.0, 2.0), (1,)), (ks.i0, sp.i0, (2.0,), (0,)), (ks.i1e, sp.i1e, (25.0,), (0,)),
    (ks.betaln, sp.betaln, (2.0, 30.0), (0, 1)), (ks.gamma, sp.gamma, (-1.5,), (0,)),
    (ks.owens_t, sp.owens_t, (0.7, 0.4), (0, 1)), (ks.owens_t, sp.owens_t, (-1.2, 2.5), (0, 1)),
    (ks.spence, sp.spence, (0.3,), (0,)), (ks.spence, sp.spence, (2.5,), (0,)),
    (ks.dawsn, sp.dawsn, (1.3,), (0,)), (lambda x: ks.fresnel(x)[0], lambda x: sp.fresnel(x)[0], (1.3,), (0,)),
    (lambda x: ks.fresnel(x)[1], lambda x: sp.fresnel(x)[1], (-0.7,), (0,)),
    (lambda x: ks.sici(x)[0], lambda x: sp.sici(x)[0], (3.3,), (0,)),
    (lambda x: ks.sici(x)[1], lambda x: sp.sici(x)[1], (1.1,), (0,)),
    (ks.hyp1f1, sp.hyp1f1, (1.5, 2.5, 3.0), (0, 1, 2)), (ks.hyp1f1, sp.hyp1f1, (-2.0, 3.0, -4.0), (0, 1, 2)),
    (ks.hyp2f1, sp.hyp2f1, (1.5, 2.5, 3.0, 0.4), (0, 1, 2, 3)), (ks.hyp2f1, sp.hyp2f1, (1.0, -2.0, 3.0, -0.7),
                                                                  (0, 1, 2, 3)),
]


def test_grad_against_finite_differences():
    cases = [(f, ref, args, i) for f, ref, args, argnums in GRADS for i in argnums]
    with kiln.config.override("enable_x64", True):  # one program for all the gradients
        grads = kiln.jit(lambda: [kiln.grad(f, argnums=i)(*args) for f, _, args, i in cases])()
    for (_, ref, args, i), g in zip(cases, grads):
        np.testing.assert_allclose(float(g), _fd(ref, args, i), rtol=1e-6, err_msg=f"{ref.__name__} {i}")


def test_vmap_matches_a_loop():
    # Its own generator: the module's rng is shared, so under pytest-xdist its
    # draws here would depend on which tests ran before in the same worker.
    draw = np.random.default_rng(11)
    a = draw.uniform(0.5, 6, 5).astype(np.float32)
    b = draw.uniform(0.5, 6, 5).astype(np.float32)
    x = draw.uniform(0.05, 0.95, 5).astype(np.float32)
    out = kiln.vmap(ks.betainc)(a, b, x)
    loop = [float(ks.betainc(a[i], b[i], x[i])) for i in range(5)]
    np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-6)
    ga = kiln.jit(kiln.vmap(kiln.grad(ks.gammainc)))(a, x * 8)
    loop = [float(kiln.grad(ks.gammainc)(a[i], x[i] * 8)) for i in range(5)]
    np.testing.assert_allclose(np.asarray(ga), loop, rtol=1e-5)
    # Two outputs, not their sum: ndtri(x) + i0e(x) cancels near x = 0.3 and
    # a relative tolerance on the sum then measures the cancellation.
    nd, ie = kiln.vmap(lambda v: (ks.ndtri(v), ks.i0e(v)))(x)
    np.testing.assert_allclose(np.asarray(nd), sp.ndtri(x), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ie), sp.i0e(x), rtol=2e-6)


def test_errors():
    with pytest.raises(NotImplementedError, match="factorial: exact=True is not supported"):
        ks.factorial(3, exact=True)
    with pytest.raises(NotImplementedError, match="comb: exact=True"):
        ks.comb(5, 2, exact=True)
    with pytest.raises(ValueError, match="multigammaln: d must be >= 1"):
        ks.multigammaln(3.0, 0)
    with pytest.raises(TypeError, match="multigammaln: d must be a static Python int"):
        kiln.jit(lambda d: ks.multigammaln(3.0, d))(knp.int32(2))
    with pytest.raises(ValueError, match="bernoulli: n must be >= 0"):
        ks.bernoulli(-1)
    with pytest.raises(ValueError, match="log_ndtr: series_order must be an int"):
        ks.log_ndtr(1.0, series_order=-1)
    with pytest.raises(TypeError, match="gammainc: argument 0 of type list"):
        ks.gammainc([1.0], 2.0)
    with pytest.raises(TypeError, match="could not be broadcast|broadcast"):
        ks.betainc(np.ones(2), np.ones(3), 0.5)
