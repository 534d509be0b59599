"""Regression tests for bugs found by running the ``>>>`` examples of jax.numpy's docstrings under kiln.

Oracles are NumPy or values derived by hand, never JAX's output.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import kiln
import kiln.numpy as knp


def test_copy_is_a_new_buffer_so_donating_it_keeps_the_original():
    double = kiln.jit(lambda x: 2 * x, donate_argnums=0)
    x = knp.arange(4)
    y = double(x.copy())
    np.testing.assert_array_equal(np.asarray(y), [0, 2, 4, 6])
    np.testing.assert_array_equal(np.asarray(x), [0, 1, 2, 3])  # x itself was not donated
    c = knp.copy(x)
    assert c is not x
    c.delete()
    np.testing.assert_array_equal(np.asarray(x), [0, 1, 2, 3])
    w = knp.array(knp.asarray(2.0), copy=True)
    assert w.weak_type and float(w) == 2.0
    np.testing.assert_array_equal(np.asarray(kiln.jit(knp.copy)(x)), [0, 1, 2, 3])


def test_sinc_derivatives_of_every_order_at_zero():
    # sinc(x) = sum_n (-1)^n (pi x)^2n / (2n+1)!: the k-th derivative at 0 is (-1)^(k/2) pi^k / (k+1) for even k.
    f = knp.sinc
    for k in range(1, 6):
        f = kiln.grad(f)
        want = 0.0 if k % 2 else (-1) ** (k // 2) * math.pi ** k / (k + 1)
        assert float(f(0.0)) == pytest.approx(want, rel=1e-5, abs=1e-6), k
    # away from 0: d/dx sin(pi x)/(pi x) = (pi x cos(pi x) - sin(pi x)) / (pi x^2) = -4/pi at x = 1/2
    assert float(kiln.grad(knp.sinc)(0.5)) == pytest.approx(-4 / math.pi, rel=1e-6)
    np.testing.assert_allclose(np.asarray(knp.sinc(np.array([0.0, 0.5], np.float32))), [1.0, 2 / math.pi], rtol=1e-6)


def test_spacing_of_zero_and_subnormals_is_the_smallest_subnormal():
    x = np.array([0, 1e-45, 1e-40, -1e-40, 1, -1, 3, np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(np.asarray(knp.spacing(x)), np.spacing(x))
    np.testing.assert_array_equal(np.asarray(kiln.jit(knp.spacing)(x)), np.spacing(x))


def test_weak_types_of_the_float_tests():
    # a comparison with the dtype's own inf gives a strong bool; an integer's isnan is all False, typed like it
    assert not knp.isinf(2.0).weak_type
    assert not knp.isposinf(2.0).weak_type
    assert not knp.isneginf(2.0).weak_type
    assert not knp.isclose(1.0, 1.0).weak_type
    assert not knp.allclose(1.0, 1.0).weak_type
    assert repr(knp.allclose(1.0, 1.0)) == "Array(True, dtype=bool)"
    assert knp.isnan(6).weak_type and not bool(knp.isnan(6))
    assert not knp.isnan(np.int32(6)).weak_type
    np.testing.assert_array_equal(np.asarray(knp.isinf(np.array([1, np.inf, -np.inf, np.nan], np.float32))),
                                  [False, True, True, False])


def test_polyadd_and_polysub_of_stacked_coefficients():
    x3 = np.array([[2, 3, 1]])
    x4 = np.array([[5, 7, 3], [8, 2, 6]])
    # the shorter (along axis 0) is added to the last rows of the longer
    np.testing.assert_array_equal(np.asarray(knp.polyadd(x3, x4)), [[5, 7, 3], [10, 5, 7]])
    np.testing.assert_array_equal(np.asarray(knp.polysub(x3, x4)), [[-5, -7, -3], [-6, 1, -5]])
    x6 = np.array([[5, 7, 9], [8, 6, 4]])
    np.testing.assert_array_equal(np.asarray(knp.polyadd(x6, np.array([2]))), [[5, 7, 9], [10, 8, 6]])
    np.testing.assert_array_equal(np.asarray(knp.polysub(x6, np.array([2]))), [[5, 7, 9], [6, 4, 2]])
    np.testing.assert_array_equal(np.asarray(knp.polyadd(np.array([2, 3]), np.array([5, 4, 1]))),
                                  np.polyadd([2, 3], [5, 4, 1]))
    with pytest.raises(ValueError, match=r"kiln.numpy.polyadd: coefficients of shape \(2, 3\) do not broadcast "
                                         r"into the last rows of shape \(2,\)"):
        knp.polyadd(np.array([1, 3, 5]), x6)
    with pytest.raises(ValueError, match=r"kiln.numpy.polyadd: the coefficients must have at least 1 dimension"):
        knp.polyadd(np.array(1), x6)


def test_piecewise_with_an_array_of_conditions():
    x = np.arange(-4, 5)
    # an array that does not broadcast to x: one condition per entry along its first axis (as JAX)
    out = knp.piecewise(x, knp.array([False, True, False]), [lambda v: v * 0, lambda v: v * 10, lambda v: v * 100])
    np.testing.assert_array_equal(np.asarray(out), x * 10)
    conds = np.stack([x < -1, x > 1])
    funcs = [lambda v: 1 + v, lambda v: v - 1, 0]
    np.testing.assert_array_equal(np.asarray(knp.piecewise(x, knp.asarray(conds), funcs)),
                                  np.piecewise(x, list(conds), funcs))
    # an array of x's shape is still one condition (NumPy's use)
    funcs = [lambda v: v * 0, lambda v: v * 10]
    np.testing.assert_array_equal(np.asarray(knp.piecewise(x, knp.asarray(x > 0), funcs)),
                                  np.piecewise(x, x > 0, funcs))


def test_vsplit_of_a_1d_array_splits_axis_0():
    x = np.arange(1, 7)
    parts = knp.vsplit(x, 2)
    for got, want in zip(parts, np.split(x, 2)):
        np.testing.assert_array_equal(np.asarray(got), want)
    m = np.arange(8).reshape(2, 4)
    for got, want in zip(knp.vsplit(m, 2), np.vsplit(m, 2)):
        np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(ValueError, match="kiln.numpy.vsplit: only works on arrays of 1 or more dimensions"):
        knp.vsplit(np.float32(1.0), 1)


def test_weighted_quantile_and_percentile_match_numpy():
    x = np.array([1, 2, 3, 4, 5])
    w = np.array([1, 1, 2, 1, 1])
    assert float(knp.percentile(x, 50, weights=w, method="inverted_cdf")) == 3.0
    assert float(knp.quantile(x, 0.5, weights=w, method="inverted_cdf")) == 3.0
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 7)).astype(np.float32)
    ww = rng.integers(0, 4, size=(4, 7)).astype(np.float32)
    ww[:, 0] += 1
    q = np.array([0.0, 0.1, 0.25, 0.5, 0.77, 1.0], np.float32)
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(
            np.asarray(knp.quantile(a, q, axis=axis, weights=ww, method="inverted_cdf")),
            np.quantile(a, q, axis=axis, weights=ww, method="inverted_cdf").astype(np.float32))
    np.testing.assert_array_equal(  # 1-D weights along an integer axis, keepdims
        np.asarray(knp.quantile(a, q, axis=1, weights=ww[0], method="inverted_cdf", keepdims=True)),
        np.quantile(a, q, axis=1, weights=ww[0], method="inverted_cdf", keepdims=True).astype(np.float32))
    np.testing.assert_array_equal(  # inverted_cdf without weights
        np.asarray(knp.quantile(a, q, axis=1, method="inverted_cdf")),
        np.quantile(a, q, axis=1, method="inverted_cdf").astype(np.float32))
    jitted = kiln.jit(lambda a, w: knp.percentile(a, 30, weights=w, method="inverted_cdf"))
    assert float(jitted(a, ww)) == np.percentile(a, 30, weights=ww, method="inverted_cdf").astype(np.float32)
    with pytest.raises(ValueError, match="kiln.numpy.quantile: only method 'inverted_cdf' supports weights"):
        knp.quantile(a, 0.5, weights=ww)
    with pytest.raises(ValueError, match=r"kiln.numpy.quantile: weights of shape \(7,\) do not fit a of shape "
                                         r"\(4, 7\)"):
        knp.quantile(a, 0.5, weights=ww[0], method="inverted_cdf")


def test_delete_at_traced_unique_indices():
    a = np.array([4, 5, 6, 7, 8, 9])
    f = kiln.jit(knp.delete, static_argnames=["axis", "assume_unique_indices"])
    np.testing.assert_array_equal(np.asarray(f(a, knp.array([0, 1, 3]), assume_unique_indices=True)),
                                  np.delete(a, [0, 1, 3]))
    b = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(np.asarray(f(b, knp.array([-1, 1]), axis=2, assume_unique_indices=True)),
                                  np.delete(b, [-1, 1], axis=2))
    out = kiln.vmap(lambda i: knp.delete(a, i, assume_unique_indices=True))(knp.array([[0, 1], [2, 5]]))
    np.testing.assert_array_equal(np.asarray(out), [np.delete(a, [0, 1]), np.delete(a, [2, 5])])
    with pytest.raises(TypeError, match="kiln.numpy.delete: a traced obj must hold integer positions, got float32"):
        f(a, knp.array([1.0]), assume_unique_indices=True)
    with pytest.raises(kiln.errors.ConcretizationTypeError, match="kiln.numpy.delete: obj must be static"):
        f(a, knp.array([1]))


def test_pad_with_a_function():
    def numpy_pad(v, width, axis, kwargs):  # NumPy's in-place form
        v[:width[0]] = 10 + axis
        if width[1]:
            v[-width[1]:] = -10 - axis

    def kiln_pad(v, width, axis, kwargs):
        return v.at[:width[0]].set(10 + axis).at[v.shape[0] - width[1]:].set(-10 - axis)
    a = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(knp.pad(a, ((1, 2), (2, 1)), kiln_pad)),
                                  np.pad(a, ((1, 2), (2, 1)), numpy_pad))

    def with_kwargs(v, width, axis, kwargs):
        return v.at[:width[0]].set(kwargs["before"]).at[v.shape[0] - width[1]:].set(kwargs["after"])
    np.testing.assert_array_equal(np.asarray(knp.pad(np.array([2, 3, 4]), 2, with_kwargs, before=-10, after=10)),
                                  [-10, -10, 2, 3, 4, 10, 10])
    with pytest.raises(ValueError, match=r"kiln.numpy.pad: the mode function must return the padded vector of "
                                         r"shape \(5,\).*got None"):
        knp.pad(a, 1, lambda v, w, ax, kw: None)


def test_einsum_takes_an_explicit_path_and_einsum_path_gives_one():
    rng = np.random.default_rng(0)
    a, b, c, d = (rng.normal(size=s).astype(np.float32) for s in [(2, 3), (3, 4), (4, 5), (5, 2)])
    want = np.einsum("ij,jk,kl,lm->im", a, b, c, d)
    for path in ([(0, 1), (0, 1), (0, 1)], ["einsum_path", (2, 3), (0, 1), (0, 1)], [(1, 0), (1, 0), (0, 1)]):
        np.testing.assert_allclose(np.asarray(knp.einsum("ij,jk,kl,lm->im", a, b, c, d, optimize=path)), want,
                                   rtol=1e-5, atol=1e-6)
    path, text = knp.einsum_path("ij,jk,kl,lm->im", a, b, c, d)
    assert all(isinstance(step, tuple) and len(step) == 2 for step in path) and len(path) == 3
    assert isinstance(text, str)
    np.testing.assert_allclose(np.asarray(knp.einsum("ij,jk,kl,lm->im", a, b, c, d, optimize=path)), want,
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="kiln.numpy.einsum: the explicit path leaves 3 operands"):
        knp.einsum("ij,jk,kl,lm->im", a, b, c, d, optimize=[(0, 1)])
    with pytest.raises(ValueError, match=r"kiln.numpy.einsum: path step \(0, 5\) does not name two of the 4"):
        knp.einsum("ij,jk,kl,lm->im", a, b, c, d, optimize=[(0, 5), (0, 1), (0, 1)])


def test_det_of_small_matrices_by_cofactors():
    assert float(knp.linalg.det(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))) == -2.0  # 1*4 - 2*3
    m = np.array([[2.0, -3.0, 1.0], [2.0, 0.0, -1.0], [1.0, 4.0, 5.0]], np.float32)
    assert float(knp.linalg.det(m)) == 49.0  # 2*(0+4) + 3*(10+1) + 1*(8-0)
    rng = np.random.default_rng(1)
    for shape in [(4, 2, 2), (5, 3, 3)]:
        x = rng.normal(size=shape).astype(np.float32)
        np.testing.assert_allclose(np.asarray(knp.linalg.det(x)), np.linalg.det(x.astype(np.float64)),
                                   rtol=1e-5, atol=1e-5)
    x = rng.normal(size=(3, 3)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(kiln.grad(knp.linalg.det)(x)),
                               np.linalg.det(x) * np.linalg.inv(x).T, rtol=1e-4, atol=1e-5)


def test_weak_types_of_heaviside_and_hypot():
    # weakly typed only when every input is weak and (heaviside) x1 / (hypot) both are scalars: JAX combines
    # them with strongly typed constants otherwise
    ints = knp.array([1, -2])
    assert not knp.heaviside(ints, 0.5).weak_type
    assert knp.heaviside(1, 0.5).weak_type and knp.heaviside(0.5, ints).weak_type
    assert not knp.hypot(ints, 0.5).weak_type and not knp.hypot(0.5, ints).weak_type
    assert knp.hypot(3, 4.0).weak_type and float(knp.hypot(3, 4.0)) == 5.0
    x = np.array([-1.0, 0.0, 2.0, np.nan], np.float32)
    np.testing.assert_array_equal(np.asarray(knp.heaviside(x, np.float32(0.5))), np.heaviside(x, np.float32(0.5)))
    np.testing.assert_array_equal(np.asarray(knp.heaviside(np.array([-2, 0, 3]), 0.5)), [0.0, 0.5, 1.0])
