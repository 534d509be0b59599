"""kiln.random's f, double_sided_maxwell, generalized_normal, ball, binomial and multinomial.

Each follows JAX's algorithm step by step, so its values are fixed by the key. The checks here derive
the expected values independently of JAX: exact identities with kiln's other samplers (whose values
tests/random/test_samplers.py checks), the documented key splits, and the distributions against SciPy
(KS statistics and moments with tolerances about 5 standard errors wide; the keys are fixed, so every
statistic is deterministic)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

import kiln
import kiln.numpy as knp
from kiln import random

N = 10_000
KEY = random.key(77)


def _key(i):
    return random.fold_in(KEY, i)


def _ks(x, cdf):
    return st.kstest(np.asarray(x, np.float64).ravel(), cdf).statistic


# -- exact identities with kiln's other samplers -------------------------------------------------------------

def test_f_is_a_ratio_of_chisquares_with_jax_key_split():
    k = _key(0)
    k_den, k_num = random.split(k)  # JAX draws the denominator from the first key
    expected = (np.asarray(random.chisquare(k_num, 3.0, (50,))) / np.float32(3.0)) / (
        np.asarray(random.chisquare(k_den, 5.0, (50,))) / np.float32(5.0))
    # (XLA may fold a division by a constant into a multiplication: equal up to an ulp or two)
    np.testing.assert_allclose(np.asarray(random.f(k, 3.0, 5.0, (50,))), expected.astype(np.float32), rtol=3e-7)


def test_double_sided_maxwell_is_a_signed_maxwell():
    k = _key(1)
    k_m, k_s = random.split(k)
    expected = (np.asarray(random.rademacher(k_s, (40,), np.float32)) * np.asarray(random.maxwell(k_m, (40,)))
                * np.float32(2.0) + np.float32(1.0))
    np.testing.assert_array_equal(np.asarray(random.double_sided_maxwell(k, 1.0, 2.0, (40,))), expected)
    # As JAX: the parameters' shape is appended to shape (an empty shape counts as the parameters' shape).
    assert random.double_sided_maxwell(k, np.zeros(2), np.ones(2), (3,)).shape == (3, 2)
    assert random.double_sided_maxwell(k, np.zeros(2), 1.0).shape == (2, 2)


def test_generalized_normal_and_ball_compose_gamma_rademacher_exponential():
    k = _key(2)
    k_g, k_r = random.split(k)
    p = 3.0
    g = np.asarray(random.gamma(k_g, np.float32(1 / p), (30,)))
    expected = np.asarray(random.rademacher(k_r, (30,), np.float32)) * g ** np.float32(1 / p)
    np.testing.assert_allclose(np.asarray(random.generalized_normal(k, p, (30,))), expected, rtol=2e-7)
    k1, k2 = random.split(k)
    gn = np.asarray(random.generalized_normal(k1, 2.0, (20, 3)), np.float64)
    e = np.asarray(random.exponential(k2, (20,)), np.float64)
    expected_ball = gn / ((np.abs(gn) ** 2).sum(-1) + e)[:, None] ** 0.5
    np.testing.assert_allclose(np.asarray(random.ball(k, 3, 2.0, (20,))), expected_ball, rtol=1e-5)


def test_multinomial_first_category_is_the_binomial_of_its_key():
    k = _key(3)
    p = knp.array([0.25, 0.25, 0.5])  # sums to 1 exactly: the first ratio is exactly 0.25
    keys = random.split(k, 3)
    first = np.asarray(random.binomial(keys[0], 20.0, 0.25))
    counts = np.asarray(random.multinomial(k, 20.0, p))
    assert counts[0] == first and counts.sum() == 20 and counts.dtype == np.float32


# -- distributions ------------------------------------------------------------------------------------------

def test_f_distribution():
    x = np.asarray(random.f(_key(10), 4.0, 9.0, (N,)), np.float64)
    assert _ks(x, st.f(4, 9).cdf) < 0.02
    assert abs(x.mean() - 9 / 7) < 5 * np.sqrt(st.f(4, 9).var() / N)


def test_double_sided_maxwell_distribution():
    x = np.asarray(random.double_sided_maxwell(_key(11), 0.5, 2.0, (N,)), np.float64)
    assert _ks(np.abs(x - 0.5) / 2.0, st.maxwell().cdf) < 0.02
    assert abs(np.mean(x > 0.5) - 0.5) < 5 * np.sqrt(0.25 / N)


@pytest.mark.parametrize("p", [1.0, 2.0, 4.0])
def test_generalized_normal_distribution(p):
    x = random.generalized_normal(_key(12), p, (N,))
    assert x.dtype == np.float32
    assert _ks(x, st.gennorm(p).cdf) < 0.02


def test_ball_is_uniform_in_the_unit_ball():
    for i, (d, p) in enumerate([(2, 2.0), (3, 1.0), (4, 3.0)]):
        x = np.asarray(random.ball(_key(20 + i), d, p, (N,)), np.float64)
        assert x.shape == (N, d)
        r = (np.abs(x) ** p).sum(-1) ** (1 / p)
        assert np.all(r <= 1 + 1e-6)
        # Uniform in a d-dimensional ball: the radius has CDF r**d.
        assert _ks(r, lambda t: np.clip(t, 0, 1) ** d) < 0.02, (d, p)
        assert np.all(np.abs(x.mean(0)) < 5 * np.sqrt(x.var(0) / N))


@pytest.mark.parametrize("n, p", [(10, 0.3), (40, 0.9), (1000, 0.45), (7.5, 0.2)])
def test_binomial_distribution(n, p):
    # inversion (n * min(p, 1-p) <= 10) and BTRS rejection (above); a float n is floored, as NumPy
    x = np.asarray(random.binomial(_key(30), n, p, (N,)))
    assert x.dtype == np.float32 and np.all(x == np.round(x)) and x.min() >= 0 and x.max() <= np.floor(n)
    dist = st.binom(int(np.floor(n)), p)
    # A chi-square test on bins of about equal probability (10 or fewer).
    edges = np.unique(dist.ppf(np.linspace(0, 1, 11)[1:-1]))
    observed = np.bincount(np.searchsorted(edges, x, side="left"), minlength=len(edges) + 1)
    cdf = dist.cdf(edges)
    expected = np.diff(np.concatenate([[0.0], cdf, [1.0]])) * N
    assert st.chisquare(observed, expected).pvalue > 1e-3, (observed, expected)
    assert abs(x.mean() - dist.mean()) < 5 * np.sqrt(dist.var() / N)
    assert abs(x.var() - dist.var()) < 0.1 * dist.var()


def test_binomial_special_values():
    k = _key(40)
    x = np.asarray(random.binomial(k, np.array([np.nan, -1.0, np.inf, 0.0, 5.0, 5.0, 5.0]),
                                   np.array([0.5, 0.5, 0.5, 0.5, 0.0, 1.0, np.nan])))
    np.testing.assert_array_equal(x[:2], [np.nan, np.nan])
    assert x[2] == np.inf and x[3] == 0 and x[4] == 0 and x[5] == 5 and np.isnan(x[6])
    assert np.isnan(np.asarray(random.binomial(k, 5.0, -0.1)))


def test_multinomial_distribution_and_shapes():
    p = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    x = np.asarray(random.multinomial(_key(50), 30.0, p, shape=(N // 10, 4)))
    assert x.shape == (N // 10, 4) and np.all(x.sum(-1) == 30) and np.all(x >= 0)
    np.testing.assert_allclose(x.mean(0), 30 * p, atol=5 * np.sqrt(30 * 0.25 / (N // 10)))
    y = random.multinomial(_key(51), knp.array([5.0, 50.0]), knp.array([[0.5, 0.5], [0.1, 0.9]]), dtype=np.int32)
    assert y.shape == (2, 2) and y.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(y).sum(-1), [5, 50])


# -- shapes, dtypes, transformations --------------------------------------------------------------------------

def test_dtypes_and_default_shapes():
    k = _key(60)
    assert random.f(k, np.ones(3), 2.0).shape == (3,)
    assert random.binomial(k, np.full((2, 3), 5.0), 0.5).shape == (2, 3)
    assert random.generalized_normal(k, 2.0, (2,), dtype=np.float16).dtype == np.float16
    assert random.ball(k, 2, dtype=knp.bfloat16).dtype == knp.bfloat16
    with kiln.enable_x64():
        assert random.binomial(k, 5.0, 0.5, (2,), dtype=np.float64).dtype == np.float64
        assert random.f(random.key(1), 2.0, 3.0).dtype == np.float64


def test_jit_and_vmap_match_eager():
    k = _key(70)
    eager = np.asarray(random.binomial(k, 50.0, 0.4, (5,)))
    np.testing.assert_array_equal(np.asarray(kiln.jit(lambda k: random.binomial(k, 50.0, 0.4, (5,)))(k)), eager)
    keys = random.split(k, 3)
    batched = np.asarray(kiln.vmap(lambda k: random.generalized_normal(k, 1.5, (4,)))(keys))
    loop = np.stack([np.asarray(random.generalized_normal(kk, 1.5, (4,))) for kk in keys])
    np.testing.assert_array_equal(batched, loop)
    ms = np.asarray(kiln.vmap(lambda k: random.multinomial(k, 10.0, knp.array([0.3, 0.7])))(keys))
    np.testing.assert_array_equal(ms, np.stack([np.asarray(random.multinomial(kk, 10.0, knp.array([0.3, 0.7])))
                                                for kk in keys]))


def test_gradient_through_double_sided_maxwell_parameters():
    k = _key(80)
    draws = np.asarray(random.double_sided_maxwell(k, 0.0, 1.0, (6,)))
    g = kiln.grad(lambda s: random.double_sided_maxwell(k, 0.0, s, (6,)).sum())(1.0)
    np.testing.assert_allclose(g, draws.sum(), rtol=1e-6)


def test_errors():
    k = _key(90)
    with pytest.raises(ValueError, match=r"kiln.random.f: dtype must be a float dtype, got int32"):
        random.f(k, 2.0, 3.0, dtype=np.int32)
    with pytest.raises(ValueError, match=r"kiln.random.binomial: dtype must be a float dtype"):
        random.binomial(k, 5, 0.5, dtype=np.int32)
    with pytest.raises(ValueError, match=r"kiln.random.binomial: parameter shapes .* must broadcast to the shape"):
        random.binomial(k, np.ones(3), 0.5, shape=(2,))
    with pytest.raises(TypeError, match=r"kiln.random.ball: .*d"):
        random.ball(k, 2.5)
    with pytest.raises(ValueError, match=r"kiln.random.ball: the dimension d must be non-negative"):
        random.ball(k, -1)
    with pytest.raises(ValueError, match=r"kiln.random.multinomial: .*do not broadcast"):
        random.multinomial(k, np.ones(3), np.full((2, 4), 0.25))
    with pytest.raises(ValueError, match=r"kiln.random.multinomial: p \(or shape\) needs at least one dimension"):
        random.multinomial(k, 3.0, 0.5)
    with pytest.raises(kiln.dtypes.TypePromotionError, match=r"kiln.random.f: cannot safely cast"):
        random.f(k, np.float32(2.0) * knp.ones(2), 3.0, dtype=knp.bfloat16)
    with pytest.raises(ValueError, match=r"double_sided_maxwell: parameter shapes"):
        random.double_sided_maxwell(k, np.zeros(2), np.ones(3))
    with pytest.raises(TypeError, match=r"kiln.random.generalized_normal: expected a PRNG key"):
        random.generalized_normal("key", 2.0)
