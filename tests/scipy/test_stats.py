"""kiln.scipy.stats against scipy.stats: every distribution function on in- and out-of-support values,
float32 and float64, jit, grad and vmap; rankdata, mode and sem."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as ss

import kiln
from kiln.scipy import stats as ks

rng = np.random.default_rng(11)
N = 10


def _u(lo, hi):
    return rng.uniform(lo, hi, N)


LOC, SCALE = _u(-1, 1), _u(0.5, 2)
CONT = {  # distribution -> (argument arrays before loc/scale, x range, functions)
    "norm": ([], (-6, 6), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]),
    "uniform": ([], (-1, 3), ["logpdf", "pdf", "cdf", "ppf"]),
    "expon": ([], (-1, 6), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "gamma": ([_u(0.5, 5)], (-1, 8), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    "chi2": ([_u(1, 6)], (-1, 10), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    "beta": ([_u(0.5, 4), _u(0.5, 4)], (-1, 3), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    "t": ([_u(1, 10)], (-8, 8), ["logpdf", "pdf"]),
    "cauchy": ([], (-20, 20), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]),
    "laplace": ([], (-6, 6), ["logpdf", "pdf", "cdf"]),
    "logistic": ([], (-10, 10), ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"]),
    "pareto": ([_u(0.5, 4)], (0, 6), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "gumbel_r": ([], (-3, 8), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "gumbel_l": ([], (-8, 3), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]),
    "truncnorm": ([_u(-2, 0), _u(0.5, 3)], (-3, 4), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
}
QUANTILE = {"ppf", "isf"}


def _cases():
    cases = []
    for d, (shapes, (lo, hi), fns) in CONT.items():
        for f in fns:
            first = rng.uniform(0, 1, N) if f in QUANTILE else _u(lo, hi)
            cases.append((f"{d}.{f}", getattr(getattr(ks, d), f), getattr(getattr(ss, d), f),
                          [first, *shapes, LOC, SCALE]))
    k = np.r_[np.arange(-1.0, 8), 2.5]
    cases += [
        ("poisson.logpmf", ks.poisson.logpmf, ss.poisson.logpmf, [k, _u(0.5, 5), np.zeros(N)]),
        ("poisson.pmf", ks.poisson.pmf, ss.poisson.pmf, [k, _u(0.5, 5), np.ones(N)]),
        ("poisson.cdf", ks.poisson.cdf, ss.poisson.cdf, [k, _u(0.5, 5), np.zeros(N)]),
        ("poisson.entropy", ks.poisson.entropy, lambda mu: ss.poisson(mu).entropy(), [np.r_[_u(0.1, 30)[:7],
                                                                                         60.0, 150.0, 400.0]]),
        ("bernoulli.logpmf", ks.bernoulli.logpmf, ss.bernoulli.logpmf, [k, _u(0.1, 0.9), np.zeros(N)]),
        ("bernoulli.pmf", ks.bernoulli.pmf, ss.bernoulli.pmf, [k, _u(0.1, 0.9), np.ones(N)]),
        ("bernoulli.cdf", ks.bernoulli.cdf, ss.bernoulli.cdf, [k, _u(0.1, 0.9)]),
        ("bernoulli.ppf", ks.bernoulli.ppf, ss.bernoulli.ppf, [_u(0.01, 1), _u(0.1, 0.9)]),
        ("geom.logpmf", ks.geom.logpmf, ss.geom.logpmf, [k, _u(0.1, 0.9), np.zeros(N)]),
        ("geom.pmf", ks.geom.pmf, ss.geom.pmf, [k, _u(0.1, 0.9), np.ones(N)]),
        ("binom.logpmf", ks.binom.logpmf, ss.binom.logpmf, [k, np.full(N, 6.0), _u(0.1, 0.9), np.zeros(N)]),
        ("binom.pmf", ks.binom.pmf, ss.binom.pmf, [k, np.full(N, 6.0), _u(0.1, 0.9), np.ones(N)]),
        ("nbinom.logpmf", ks.nbinom.logpmf, ss.nbinom.logpmf, [k, _u(1, 5), _u(0.1, 0.9), np.zeros(N)]),
        ("nbinom.pmf", ks.nbinom.pmf, ss.nbinom.pmf, [k, _u(1, 5), _u(0.1, 0.9), np.zeros(N)]),
        ("betabinom.logpmf", ks.betabinom.logpmf, ss.betabinom.logpmf,
         [k, np.full(N, 6.0), _u(0.5, 3), _u(0.5, 3), np.zeros(N)]),
        ("betabinom.pmf", ks.betabinom.pmf, ss.betabinom.pmf, [k, np.full(N, 6.0), _u(0.5, 3), _u(0.5, 3),
                                                               np.ones(N)]),
        ("gennorm.logpdf", ks.gennorm.logpdf, ss.gennorm.logpdf, [_u(-3, 3), _u(0.5, 4)]),
        ("gennorm.pdf", ks.gennorm.pdf, ss.gennorm.pdf, [_u(-3, 3), _u(0.5, 4)]),
        ("gennorm.cdf", ks.gennorm.cdf, ss.gennorm.cdf, [_u(-3, 3), _u(0.5, 4)]),
        ("vonmises.logpdf", ks.vonmises.logpdf, ss.vonmises.logpdf, [_u(-3, 3), _u(0.1, 30)]),
        ("vonmises.pdf", ks.vonmises.pdf, ss.vonmises.pdf, [_u(-3, 3), _u(0.1, 30)]),
        ("wrapcauchy.logpdf", ks.wrapcauchy.logpdf, ss.wrapcauchy.logpdf, [_u(0, 6), _u(0.05, 0.95)]),
        ("wrapcauchy.pdf", ks.wrapcauchy.pdf, ss.wrapcauchy.pdf, [_u(0, 6), _u(0.05, 0.95)]),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_distributions_against_scipy(dtype):
    x64 = dtype == np.float64
    args = [[a.astype(dtype) for a in c[3]] for c in CASES]
    with kiln.config.override("enable_x64", x64):
        outs = kiln.jit(lambda args: [c[1](*a) for c, a in zip(CASES, args)])(args)
    for (name, _, ref, _), a, out in zip(CASES, args, outs):
        assert out.dtype == dtype, name
        with np.errstate(all="ignore"):
            expected = ref(*[v.astype(np.float64) for v in a])
        tol = dict(rtol=1e-9, atol=1e-12) if x64 else dict(rtol=5e-5, atol=2e-5)
        np.testing.assert_allclose(np.asarray(out), expected, err_msg=name, **tol)


def test_distributions_on_arguments_of_different_ranks():
    # As JAX's promote_args_inexact, the arguments are rank-promoted (leading axes of size 1), not broadcast to one
    # shape: every function (loops and special functions inside too) must still combine (2, N), (N,) and scalars
    args = []
    for _, _, _, a in CASES:
        first = np.stack([a[0], a[0][::-1]])
        rest = [v if i % 2 else v[3] for i, v in enumerate(a[1:])]  # every other one a scalar
        args.append([first.astype(np.float32), *[np.float32(v) if np.ndim(v) == 0 else v.astype(np.float32)
                                                 for v in rest]])
    outs = kiln.jit(lambda args: [c[1](*a) for c, a in zip(CASES, args)])(args)
    for (name, _, ref, _), a, out in zip(CASES, args, outs):
        with np.errstate(all="ignore"):
            expected = ref(*[np.asarray(v, np.float64) for v in a])
        assert out.shape == np.shape(expected), name
        np.testing.assert_allclose(np.asarray(out), expected, err_msg=name, rtol=5e-5, atol=2e-5)


def test_arguments_are_rank_promoted_not_broadcast():
    # norm.logpdf(x (m, n), loc (n,), scale (n,)): log(2 pi scale**2) is computed on (1, n), once per column, as
    # in JAX (whose numbers then differ from a call with loc and scale broadcast to (m, n) first)
    ir = kiln.make_jaxpr(ks.norm.logpdf)(np.zeros((64, 8), np.float32), np.zeros(8, np.float32),
                                         np.ones(8, np.float32))
    logs = [e for e in ir.jaxpr.eqns if e.primitive.name == "log"]
    assert [e.outvars[0].aval.shape for e in logs] == [(1, 8)]
    # one rank (scalars beside it) is left alone; incompatible shapes name the function
    ir = kiln.make_jaxpr(lambda x: ks.norm.logpdf(x, 0.0, 2.0))(np.zeros((3, 4), np.float32))
    assert [e.outvars[0].aval.shape for e in ir.jaxpr.eqns if e.primitive.name == "log"] == [()]
    with pytest.raises(ValueError, match=r"kiln.scipy.stats.norm.logpdf: operands could not be broadcast together "
                                         r"with shapes \(3, 4\) \(5,\) \(\)"):
        ks.norm.logpdf(np.zeros((3, 4), np.float32), np.zeros(5, np.float32), 1.0)


def test_tails_and_defaults():
    x = np.float32([-30.0, -10.0, 10.0, 30.0])
    np.testing.assert_allclose(np.asarray(ks.norm.logcdf(x)), ss.norm.logcdf(x.astype(float)), rtol=1e-5, atol=1e-30)
    np.testing.assert_allclose(np.asarray(ks.norm.logsf(x)), ss.norm.logsf(x.astype(float)), rtol=1e-5, atol=1e-30)
    np.testing.assert_allclose(np.asarray(ks.norm.ppf(np.float32([1e-20, 0.5, 0.975]))),
                               ss.norm.ppf([1e-20, 0.5, 0.975]), rtol=1e-5, atol=1e-6)
    assert ks.norm.pdf(0).dtype == np.float32 and ks.norm.pdf(0).shape == ()
    out = ks.gamma.logpdf(np.float32([[1.0], [2.0]]), np.float32([1.0, 2.0, 3.0]))
    assert out.shape == (2, 3)
    np.testing.assert_allclose(np.asarray(out), ss.gamma.logpdf([[1.0], [2.0]], [1.0, 2.0, 3.0]), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ks.truncnorm.logpdf(np.float32([5.5, 6.0]), 5.0, 7.0)),
                               ss.truncnorm.logpdf([5.5, 6.0], 5.0, 7.0), rtol=1e-4)


def test_norm_rounds_as_jax():
    # JAX's formulas op for op: logpdf = (log(2 pi scale^2) + (x - loc)^2 / scale^2) / -2, in NumPy float32
    # around kiln's own log (the primitive), every other op a correctly rounded IEEE op. The old
    # -z^2 / 2 - log(scale) - log(2 pi) / 2 differed in the last place for half of these values.
    r = np.random.default_rng(3)
    x = (r.standard_normal(2000) * 3).astype(np.float32)
    loc = r.standard_normal(2000).astype(np.float32)
    scale = np.exp(r.uniform(-3, 3, 2000)).astype(np.float32)
    s2 = scale * scale
    logpdf = (np.asarray(kiln.numpy.log(np.float32(2 * np.pi) * s2)) + (x - loc) * (x - loc) / s2) / np.float32(-2)
    compiled_too = kiln.devices()[0].platform == "cpu"  # (another backend's compiler may fuse ops into FMAs)
    for fn in (ks.norm.logpdf, kiln.jit(ks.norm.logpdf)) if compiled_too else (ks.norm.logpdf,):
        np.testing.assert_array_equal(fn(x, loc, scale), logpdf)
    np.testing.assert_array_equal(ks.norm.pdf(x, loc, scale), kiln.numpy.exp(logpdf))
    np.testing.assert_allclose(logpdf, ss.norm.logpdf(x, loc, scale), rtol=1e-5, atol=1e-4)
    # scale^2 underflows to 0: NaN (0 / 0), as JAX, where the old formula stayed finite (56.6)
    assert np.isnan(ks.norm.logpdf(0.0, 0.0, 1e-25)) and np.isnan(ks.norm.pdf(0.0, 0.0, 1e-25))
    # isf is -ndtri(q), not JAX's ppf(1 - q), which rounds 1 - q to 1 for a small q (README: Differences);
    # ppf and isf give the default float dtype whatever q's, as JAX
    np.testing.assert_allclose(ks.norm.isf(np.float32([1e-10, 1e-30, 0.3])), ss.norm.isf([1e-10, 1e-30, 0.3]),
                               rtol=1e-5)
    assert ks.norm.ppf(np.float16(0.3)).dtype == np.float32
    with kiln.config.override("enable_x64", True):
        assert ks.norm.ppf(np.float32(0.3)).dtype == np.float64
        assert ks.norm.isf(np.float32(0.3)).dtype == np.float64


def test_multivariate_normal_shapes_and_dtypes():
    # The solve of the rows against one L at once, or against each of a batch of L's (as JAX's vectorized
    # solve does), and log(2 pi) in the arguments' dtype: float16 stays float16.
    r = np.random.default_rng(5)
    A = r.standard_normal((4, 3, 3))
    covs = A @ np.swapaxes(A, -1, -2) + 3 * np.eye(3)
    for x, mean, cov in [(r.standard_normal((2, 5, 3)), r.standard_normal(3), covs[0]),
                         (r.standard_normal(3), r.standard_normal(3), covs[0]),
                         (r.standard_normal((4, 3)), r.standard_normal((4, 3)), covs),
                         (r.standard_normal((2, 1, 3)), r.standard_normal(3), covs)]:
        want = np.vectorize(ss.multivariate_normal.logpdf, signature="(n),(n),(n,n)->()")(x, mean, cov)
        for fn in (ks.multivariate_normal.logpdf, kiln.jit(ks.multivariate_normal.logpdf)):
            out = fn(*(np.float32(v) for v in (x, mean, cov)))
            assert out.shape == want.shape and out.dtype == np.float32
            np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)
    x16 = np.float16([0.5, -1.0])
    for mean, cov in [(np.float16(0.25), np.float16(1.5)), (np.float16([0.0, 0.5]), np.float16(2.0))]:
        assert ks.multivariate_normal.logpdf(x16, mean, cov).dtype == np.float16


def test_multivariate():
    n = 3
    A = rng.standard_normal((n, n))
    cov = A @ A.T + n * np.eye(n)
    mean = rng.standard_normal(n)
    x = rng.standard_normal((4, n))
    with kiln.config.override("enable_x64", True):
        out = kiln.jit(ks.multivariate_normal.logpdf)(x, mean, cov)
        np.testing.assert_allclose(np.asarray(out), ss.multivariate_normal.logpdf(x, mean, cov), rtol=1e-10)
        np.testing.assert_allclose(np.asarray(ks.multivariate_normal.pdf(x, mean, 2.0)),
                                   ss.multivariate_normal.pdf(x, mean, 2.0 * np.eye(n)), rtol=1e-10)
        np.testing.assert_allclose(float(ks.multivariate_normal.logpdf(0.3, 0.1, 2.0)),
                                   ss.norm.logpdf(0.3, 0.1, np.sqrt(2.0)), rtol=1e-12)
        alpha = np.array([1.5, 2.0, 3.0])
        xs = rng.dirichlet(alpha, 5).T
        np.testing.assert_allclose(np.asarray(ks.dirichlet.logpdf(xs, alpha)), ss.dirichlet.logpdf(xs, alpha),
                                   rtol=1e-9)
        np.testing.assert_allclose(np.asarray(ks.dirichlet.pdf(xs[:-1], alpha)), ss.dirichlet.pdf(xs, alpha),
                                   rtol=1e-9)
        assert float(ks.dirichlet.logpdf(np.array([0.5, 0.6, 0.1]), alpha)) == -np.inf
        counts = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 6.0], [1.0, 1.0, 1.0]])
        p = np.array([0.2, 0.3, 0.5])
        np.testing.assert_allclose(np.asarray(ks.multinomial.pmf(counts, 6.0, p)),
                                   ss.multinomial.pmf(counts, 6, p), rtol=1e-10)


def test_grad_and_vmap():
    with kiln.config.override("enable_x64", True):
        g = kiln.grad(lambda x, a: ks.gamma.logcdf(x, a), argnums=(0, 1))(2.0, 3.0)
        h = 1e-6
        fd_x = (ss.gamma.logcdf(2.0 + h, 3.0) - ss.gamma.logcdf(2.0 - h, 3.0)) / (2 * h)
        fd_a = (ss.gamma.logcdf(2.0, 3.0 + h) - ss.gamma.logcdf(2.0, 3.0 - h)) / (2 * h)
        np.testing.assert_allclose([float(g[0]), float(g[1])], [fd_x, fd_a], rtol=1e-6)
        g = kiln.grad(lambda m: ks.norm.logpdf(1.5, m, 2.0))(0.5)
        np.testing.assert_allclose(float(g), (1.5 - 0.5) / 4.0, rtol=1e-12)
        g = kiln.grad(lambda q: ks.norm.ppf(q))(0.3)
        np.testing.assert_allclose(float(g), 1 / ss.norm.pdf(ss.norm.ppf(0.3)), rtol=1e-9)
        g = kiln.grad(lambda x: ks.beta.cdf(x, 2.0, 3.0))(0.4)
        np.testing.assert_allclose(float(g), ss.beta.pdf(0.4, 2.0, 3.0), rtol=1e-9)
    x = rng.uniform(0, 5, 6).astype(np.float32)
    a = rng.uniform(1, 4, 6).astype(np.float32)
    out = kiln.vmap(ks.gamma.cdf)(x, a)
    np.testing.assert_allclose(np.asarray(out), [float(ks.gamma.cdf(xi, ai)) for xi, ai in zip(x, a)], rtol=1e-6)
    xs = rng.standard_normal((5, 2, 3)).astype(np.float32)
    cov = np.eye(3, dtype=np.float32) * 2
    out = kiln.vmap(lambda v: ks.multivariate_normal.logpdf(v, np.zeros(3, np.float32), cov))(xs)
    np.testing.assert_allclose(np.asarray(out), ss.multivariate_normal.logpdf(xs, np.zeros(3), cov), rtol=1e-5)


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata(method):
    a = rng.integers(0, 4, (3, 7)).astype(np.float32)
    for axis in (None, 0, 1, -1):
        out = kiln.jit(lambda a: ks.rankdata(a, method, axis=axis))(a)
        np.testing.assert_array_equal(np.asarray(out), ss.rankdata(a, method, axis=axis), err_msg=str(axis))
        assert out.dtype == np.float32
    b = np.array([3.0, np.nan, 1.0])
    np.testing.assert_array_equal(np.asarray(ks.rankdata(b, method)), ss.rankdata(b, method))
    assert ks.rankdata(np.zeros((0,)), method).shape == (0,)


def test_mode_and_sem():
    a = rng.integers(0, 4, (5, 6))
    for axis in (0, 1, None):
        for keepdims in (False, True):
            m = ks.mode(a, axis=axis, keepdims=keepdims)
            r = ss.mode(a, axis=axis, keepdims=keepdims)
            np.testing.assert_array_equal(np.asarray(m.mode), r.mode, err_msg=f"{axis} {keepdims}")
            np.testing.assert_array_equal(np.asarray(m.count), r.count)
            assert m.mode.shape == np.shape(r.mode)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    for kw in (dict(), dict(axis=1), dict(axis=None), dict(axis=0, ddof=0), dict(axis=1, keepdims=True)):
        np.testing.assert_allclose(np.asarray(ks.sem(x, **kw)), ss.sem(x, **kw), rtol=1e-5, err_msg=str(kw))
    x[0, 0] = np.nan
    np.testing.assert_allclose(np.asarray(ks.sem(x, axis=0, nan_policy="omit")),
                               ss.sem(x, axis=0, nan_policy="omit"), rtol=1e-5)
    assert np.isnan(np.asarray(ks.sem(x, axis=0))[0])


def test_errors():
    with pytest.raises(ValueError, match="rankdata: unknown method 'first'"):
        ks.rankdata(np.ones(3), "first")
    with pytest.raises(NotImplementedError, match="rankdata: nan_policy='omit' is not supported"):
        ks.rankdata(np.ones(3), nan_policy="omit")
    with pytest.raises(ValueError, match="mode: nan_policy must be"):
        ks.mode(np.ones(3), nan_policy="skip")
    with pytest.raises(ValueError, match="mode: the axis has length 0"):
        ks.mode(np.ones((2, 0)), axis=1)
    with pytest.raises(ValueError, match="sem: nan_policy must be"):
        ks.sem(np.ones(3), nan_policy="raise")
    with pytest.raises(ValueError, match=r"cov must be a scalar or have shape \(\.\.\., 3, 3\)"):
        ks.multivariate_normal.logpdf(np.ones(3), np.zeros(3), np.eye(2))
    with pytest.raises(NotImplementedError, match="allow_singular is not supported"):
        ks.multivariate_normal.logpdf(np.ones(3), np.zeros(3), np.eye(3), allow_singular=True)
    with pytest.raises(ValueError, match="dirichlet.logpdf: alpha must be one-dimensional"):
        ks.dirichlet.logpdf(np.ones(3) / 3, np.ones((3, 1)))
    with pytest.raises(ValueError, match="x's first axis must have 3 or 2 entries"):
        ks.dirichlet.logpdf(np.ones(5) / 5, np.ones(3))
    with pytest.raises(TypeError, match="kiln.scipy.stats.norm.logpdf: argument 0 of type list"):
        ks.norm.logpdf([1.0])


@pytest.mark.parametrize("d", [1, 2])
def test_gaussian_kde(d):
    data = rng.standard_normal((d, 30))
    w = rng.uniform(0.5, 2, 30)
    pts = rng.standard_normal((d, 5))
    with kiln.config.override("enable_x64", True):
        for bw, weights in ((None, None), ("silverman", w), (0.4, None), (lambda k: 0.3, w)):
            k, r = ks.gaussian_kde(data, bw, weights), ss.gaussian_kde(data, bw, weights)
            np.testing.assert_allclose(np.asarray(k(pts)), r(pts), rtol=1e-10)
            np.testing.assert_allclose(np.asarray(k.pdf(pts)), r.pdf(pts), rtol=1e-10)
            np.testing.assert_allclose(np.asarray(k.logpdf(pts)), r.logpdf(pts), rtol=1e-10)
            np.testing.assert_allclose(np.asarray(k.covariance), r.covariance, rtol=1e-10)
            np.testing.assert_allclose(float(k.neff), r.neff, rtol=1e-10)
            np.testing.assert_allclose(float(k.integrate_gaussian(np.zeros(d), np.eye(d))),
                                       r.integrate_gaussian(np.zeros(d), np.eye(d)), rtol=1e-10)
            np.testing.assert_allclose(float(k.integrate_kde(ks.gaussian_kde(pts))),
                                       r.integrate_kde(ss.gaussian_kde(pts)), rtol=1e-10)
            if d == 1:
                np.testing.assert_allclose(float(k.integrate_box_1d(-0.5, 1.0)), r.integrate_box_1d(-0.5, 1.0),
                                           rtol=1e-10)
        assert (k.d, k.n) == (d, 30)
    k = ks.gaussian_kde(data.astype(np.float32))
    out = kiln.jit(lambda k, p: k(p))(k, pts.astype(np.float32))  # a pytree through jit
    np.testing.assert_allclose(np.asarray(out), ss.gaussian_kde(data)(pts), rtol=1e-4)
    s = k.resample(kiln.random.key(0), (4000,))
    assert s.shape == (d, 4000) and s.dtype == np.float32
    np.testing.assert_allclose(np.asarray(s).mean(axis=1), data.mean(axis=1), atol=0.1)


def test_gaussian_kde_errors():
    with pytest.raises(ValueError, match="dataset must have more than one element"):
        ks.gaussian_kde(np.ones(1))
    with pytest.raises(ValueError, match="weights must have one entry per point \\(3\\)"):
        ks.gaussian_kde(np.arange(3.0), weights=np.ones(2))
    with pytest.raises(ValueError, match="bw_method must be 'scott', 'silverman'"):
        ks.gaussian_kde(np.arange(3.0), "wide")
    k = ks.gaussian_kde(np.arange(4.0))
    with pytest.raises(ValueError, match="points have dimension 2, the data has dimension 1"):
        k(np.ones((2, 3)))
    with pytest.raises(NotImplementedError, match="set_bandwidth is not supported"):
        k.set_bandwidth("scott")
    with pytest.raises(AttributeError, match="is immutable"):
        k.factor = 2.0
    with pytest.raises(ValueError, match="integrate_box_1d: only for one-dimensional data"):
        ks.gaussian_kde(np.ones((2, 3)) + np.eye(2, 3)).integrate_box_1d(0, 1)
