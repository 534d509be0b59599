"""kiln.numpy quantile / percentile / median (and nan-variants) and the cumulative reductions
against NumPy, eagerly and under jit."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from kiln.frontend.numpy import statistics as statistics_impl

import kiln
import kiln.numpy as knp

RNG = np.random.default_rng(4)
X = RNG.standard_normal((3, 5, 4)).astype(np.float32)
XN = X.copy()
XN[0, 1, 2] = np.nan
XN[1, :, 0] = np.nan
XI = RNG.integers(-10, 10, (4, 6)).astype(np.int32)
METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]
Q = np.array([0.0, 0.1, 0.25, 0.5, 0.7, 1.0], np.float32)


def _close(got, want, rtol=1e-5, atol=1e-6):
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


# (fn name, x, q, kwargs)
CASES = [("quantile", X, Q, dict(axis=None, method=m)) for m in METHODS] + [
    ("quantile", X, 0.3, dict(axis=1)), ("quantile", X, Q[1:3], dict(axis=(0, 2), keepdims=True)),
    ("quantile", XN, 0.5, dict(axis=1)), ("quantile", XI, Q, dict(axis=0, method="nearest")),
    ("quantile", np.array([1.0, 2.0, 3.0, 4.0], np.float32), np.array([0.5, 1 / 6], np.float32),
     dict(method="nearest")),  # index 1.5 -> 2 (ties to even), 0.5 -> 0
    ("percentile", X, np.array([5.0, 50.0, 95.0], np.float32), dict(axis=-1)),
    ("percentile", XI, 40, dict(axis=1, method="midpoint", keepdims=True)),
    ("nanquantile", XN, Q, dict(axis=1)), ("nanpercentile", XN, 30.0, dict(axis=(0, 1), method="higher")),
    ("nanquantile", XN, 0.5, dict(axis=None, method="lower")),
]


def _np(name, x, q, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return getattr(np, name)(x, q, **kw)


def test_quantiles_eager():
    for name, x, q, kw in CASES[::3]:  # a subset: each case is one compilation
        got = getattr(knp, name)(knp.asarray(x), q, **kw)
        want = _np(name, x, q, kw)
        assert got.dtype == np.float32, name
        _close(got, want)


def test_quantiles_jit_with_traced_q():
    def f(xs, qs):
        return [getattr(knp, name)(x, q, **kw) for x, q, (name, _, _, kw) in zip(xs, qs, CASES)]
    outs = kiln.jit(f)([c[1] for c in CASES], [np.asarray(c[2], np.float32) for c in CASES])
    for out, (name, x, q, kw) in zip(outs, CASES):
        _close(out, _np(name, x, q, kw))


def test_median():
    ints = np.arange(7, dtype=np.int32)

    def f(x, xn, i):
        return (knp.median(x), knp.median(x, axis=1), knp.median(xn, axis=(0, 2), keepdims=True),
                knp.nanmedian(xn, axis=1), knp.median(i), knp.nanmedian(x, axis=0))
    for fn in (f, kiln.jit(f)):
        out = fn(X, XN, ints)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            wants = (np.median(X), np.median(X, axis=1), np.median(XN, axis=(0, 2), keepdims=True),
                     np.nanmedian(XN, axis=1), np.median(ints), np.nanmedian(X, axis=0))
        for g, w in zip(out, wants):
            _close(g, w)
    assert knp.median(knp.asarray(ints)).dtype == np.float32
    # Infinities: equal neighbours give themselves, inf and -inf give NaN (as NumPy).
    _close(knp.median(knp.asarray(np.array([np.inf, np.inf, 1.0], np.float32))), np.inf)
    _close(knp.median(knp.asarray(np.array([np.inf, -np.inf], np.float32))), np.nan)
    # All-NaN slices.
    allnan = np.full((2, 3), np.nan, np.float32)
    _close(knp.nanmedian(knp.asarray(allnan), axis=1), [np.nan, np.nan])
    # Empty reductions give NaN.
    _close(knp.median(knp.asarray(np.zeros((0, 3), np.float32)), axis=0), [np.nan] * 3)
    _close(knp.quantile(knp.asarray(np.zeros((0, 3), np.float32)), 0.5, axis=1), np.zeros(0))


def test_quantile_errors():
    x = knp.asarray(X)
    with pytest.raises(ValueError, match=r"kiln.numpy.quantile: q must be in the range \[0, 1\], got 1.5"):
        knp.quantile(x, 1.5)
    with pytest.raises(ValueError, match=r"kiln.numpy.percentile: q must be in the range \[0, 100\]"):
        knp.percentile(x, np.array([10.0, 101.0]))
    with pytest.raises(ValueError, match=r"kiln.numpy.quantile: method 'weibull' is not supported"):
        knp.quantile(x, 0.5, method="weibull")
    with pytest.raises(ValueError, match=r"kiln.numpy.median: axis 3 is out of bounds for an array of dimension 3"):
        knp.median(x, axis=3)
    with pytest.raises(TypeError, match=r"kiln.numpy.median: complex arrays have no order"):
        knp.median(knp.asarray(np.ones(3, np.complex64)))
    with pytest.raises(TypeError, match=r"kiln.numpy.quantile: out= is not supported"):
        knp.quantile(x, 0.5, out=x)
    with pytest.raises(TypeError, match=r"kiln.numpy.quantile: argument 1 is a list"):
        knp.quantile(x, [0.5])


# -- cumulative ------------------------------------------------------------------------------------
XB = RNG.random((3, 4)) > 0.4
X8 = RNG.integers(-100, 100, (2, 5)).astype(np.int8)
XU = RNG.integers(0, 200, (6,)).astype(np.uint8)
XF = RNG.uniform(0.5, 1.5, (3, 7)).astype(np.float32)
XFN = XF.copy()
XFN[1, 2] = XFN[0, 0] = np.nan
CUM_CASES = [  # (name, x, kwargs)
    ("cumsum", XF, dict()), ("cumsum", XF, dict(axis=1)), ("cumsum", XF, dict(axis=-2)),
    ("cumsum", XB, dict(axis=0)), ("cumsum", X8, dict(axis=1)), ("cumsum", XU, dict()), ("cumsum", XI, dict(axis=0)),
    ("cumsum", XI, dict(axis=1, dtype=np.float32)), ("cumprod", XF, dict(axis=1)), ("cumprod", XB, dict()),
    ("cumprod", X8[:, :3], dict(axis=1)), ("nancumsum", XFN, dict(axis=1)), ("nancumprod", XFN, dict()),
    ("nancumsum", XI, dict(axis=0)), ("cumsum", np.zeros((0, 2), np.float32), dict(axis=0)),
    ("cumsum", np.float32(3.0), dict()),
]


def _np_cum(name, x, kw):
    kw = dict(kw)
    if "dtype" not in kw and np.asarray(x).dtype.kind in "biu":  # NumPy accumulates in int64: compare as int32
        out = getattr(np, name)(x, **kw)
        return out.astype(np.uint32 if np.asarray(x).dtype.kind == "u" else np.int32)
    return getattr(np, name)(x, **kw)


def test_cumulative():
    def f(xs, cases=CUM_CASES):
        return [getattr(knp, name)(x, **kw) for x, (name, _, kw) in zip(xs, cases)]
    eager = CUM_CASES[::2]  # eagerly, a subset: each case compiles
    for fn, cases in ((lambda xs: f(xs, eager), eager), (kiln.jit(f), CUM_CASES)):
        for out, (name, x, kw) in zip(fn([c[1] for c in cases]), cases):
            want = _np_cum(name, x, kw)
            assert out.dtype == want.dtype, (name, out.dtype, want.dtype)
            _close(out, want, rtol=1e-5, atol=1e-5)


def test_cumulative_array_api_and_methods():
    x = knp.asarray(XI)
    _close(knp.cumulative_sum(x, axis=1, include_initial=True),
           np.concatenate([np.zeros((4, 1), np.int32), np.cumsum(XI, axis=1)], 1))
    _close(knp.cumulative_prod(knp.asarray(XF[0]), include_initial=True),
           np.concatenate([[1.0], np.cumprod(XF[0])]).astype(np.float32))
    _close(knp.cumulative_sum(knp.asarray(XF), axis=0), np.cumsum(XF, axis=0))
    _close(x.cumsum(axis=0), np.cumsum(XI, axis=0))
    _close(x.cumprod(), np.cumprod(XI).astype(np.int32))


def test_cumulative_errors():
    x = knp.asarray(XF)
    with pytest.raises(ValueError, match=r"kiln.numpy.cumsum: axis 2 is out of bounds for an array of dimension 2"):
        knp.cumsum(x, axis=2)
    with pytest.raises(ValueError, match=r"kiln.numpy.cumprod: axis 0 is out of bounds for an array of dimension 0"):
        knp.cumprod(knp.asarray(np.float32(1)), axis=0)
    with pytest.raises(TypeError, match=r"kiln.numpy.cumsum: out= is not supported"):
        knp.cumsum(x, out=x)
    with pytest.raises(ValueError, match=r"kiln.numpy.cumulative_sum: axis is required for arrays of more than one"):
        knp.cumulative_sum(x)
    with pytest.raises(TypeError, match=r"kiln.numpy.cumsum: cannot accumulate in dtype bool"):
        knp.cumsum(x, dtype=bool)
    with pytest.raises(TypeError, match=r"kiln.numpy.cumsum: argument 0 is a list"):
        knp.cumsum([1, 2])


def test_module_exports():
    for name in statistics_impl.__all__:
        assert getattr(knp, name) is getattr(statistics_impl, name)
