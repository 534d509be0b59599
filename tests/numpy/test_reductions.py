"""kiln.numpy reductions against NumPy: axis forms (None, int, negative, tuple), keepdims, where=, initial=,
JAX's dtype rules, empty and 0-d inputs, numerically stable var, NaN-ignoring variants, average, and error
messages. Cases are grouped under few jits to keep compilations few.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(4)
DATA = {
    "f32": rng.normal(size=(3, 4, 5)).astype(np.float32),
    "i8": rng.integers(-100, 100, size=(3, 4, 5)).astype(np.int8),
    "u8": rng.integers(0, 255, size=(3, 4, 5)).astype(np.uint8),
    "i32": rng.integers(-1000, 1000, size=(3, 4, 5)).astype(np.int32),
    "bool": rng.random((3, 4, 5)) > 0.4,
}
EMPTY = np.zeros((0, 3), np.float32)
SCALAR = np.float32(2.5)
AXES = [None, 0, -1, (0, 2), (-1, 1, 0)]
TOL = dict(rtol=2e-5, atol=2e-5)

SUM_DTYPE = {"f32": np.float32, "i8": np.int32, "u8": np.uint32, "i32": np.int32, "bool": np.int32}
MEAN_DTYPE = {k: np.float32 for k in DATA}


def _check(out, expected, dtype, where, tol=TOL):
    expected = np.asarray(expected)
    assert isinstance(out, kiln.Array), (where, type(out))
    assert out.shape == expected.shape, (where, out.shape, expected.shape)
    assert out.dtype == np.dtype(dtype), (where, out.dtype, np.dtype(dtype))
    if expected.dtype == np.bool_:
        np.testing.assert_array_equal(np.asarray(out), expected, err_msg=str(where))
    else:
        np.testing.assert_allclose(np.asarray(out).astype(np.float64), expected.astype(np.float64),
                                   err_msg=str(where), **tol)


# name -> (numpy reference, result dtype from the input key, accepts tuple axes, dtypes it is tested on)
REDUCTIONS = {
    "sum": (np.sum, SUM_DTYPE.get, True, list(DATA)),
    "prod": (np.prod, SUM_DTYPE.get, True, ["f32", "i8", "bool"]),
    "max": (np.max, lambda k: DATA[k].dtype, True, list(DATA)),
    "min": (np.min, lambda k: DATA[k].dtype, True, list(DATA)),
    "mean": (np.mean, MEAN_DTYPE.get, True, list(DATA)),
    "var": (np.var, MEAN_DTYPE.get, True, ["f32", "i32", "bool"]),
    "std": (np.std, MEAN_DTYPE.get, True, ["f32", "i8"]),
    "all": (np.all, lambda k: np.bool_, True, list(DATA)),
    "any": (np.any, lambda k: np.bool_, True, list(DATA)),
    "ptp": (np.ptp, lambda k: DATA[k].dtype, True, ["f32", "i32"]),
    "count_nonzero": (np.count_nonzero, lambda k: np.int32, True, ["f32", "i8", "bool"]),
    "argmax": (np.argmax, lambda k: np.int32, False, list(DATA)),
    "argmin": (np.argmin, lambda k: np.int32, False, list(DATA)),
}


def _cases():
    """Every reduction on float32 over every axis form (keepdims alternating), other dtypes on two."""
    cases = []
    for name, (_, _, tuples, keys) in REDUCTIONS.items():
        for key in keys:
            axes = AXES if key == "f32" else [None, -1] if key in ("i8", "bool") else [(0, 2)]
            for j, axis in enumerate(axes):
                if not tuples and isinstance(axis, tuple):
                    axis = 1
                keepdims = (j % 2 == 1) != (name in ("max", "var", "argmin", "all"))
                if name == "count_nonzero" and axis is None:
                    keepdims = False  # NumPy ignores keepdims without an axis here
                cases.append((name, key, axis, keepdims))
    return cases


def test_reductions_axes_keepdims_dtypes():
    cases = _cases()
    outs = kiln.jit(lambda d: [getattr(knp, n)(d[k], axis=ax, keepdims=kd) for n, k, ax, kd in cases])(DATA)
    for (name, key, axis, keepdims), out in zip(cases, outs):
        ref, dtype_of, _, _ = REDUCTIONS[name]
        x = DATA[key]
        if name in ("prod",) and key == "i8":
            x = x.astype(np.int32)  # both wrap in 32 bits
        if name in ("var", "std") and key != "f32":
            x = x.astype(np.float64)
        expected = ref(x, axis=axis, keepdims=keepdims)
        if name == "prod":
            expected = np.asarray(expected).astype(np.dtype(dtype_of(key)))
        _check(out, expected, dtype_of(key), (name, key, axis, keepdims), dict(rtol=5e-5, atol=5e-5))


def test_reductions_eager():
    x = DATA["f32"]
    _check(knp.sum(x, axis=(0, 2)), x.sum(axis=(0, 2)), np.float32, "sum")
    _check(knp.mean(x, axis=1, keepdims=True), x.mean(axis=1, keepdims=True), np.float32, "mean")
    _check(knp.argmax(x, axis=-1), x.argmax(axis=-1), np.int32, "argmax")
    _check(knp.any(DATA["bool"], axis=0), DATA["bool"].any(axis=0), np.bool_, "any")
    # the methods forward to the same functions
    a = knp.asarray(x)
    _check(a.sum(axis=0), x.sum(axis=0), np.float32, "method sum")
    _check(a.var(axis=(1, 2), ddof=1), x.var(axis=(1, 2), ddof=1), np.float32, "method var")


def test_where_initial_dtype_ddof():
    x, i8, b = DATA["f32"], DATA["i8"], DATA["bool"]
    mask = rng.random((4, 5)) > 0.3  # broadcasts against (3, 4, 5)

    @kiln.jit
    def f(x, i8, b, mask):
        return [
            knp.sum(x, axis=1, where=mask), knp.sum(x, initial=10.0), knp.sum(i8, axis=0, initial=3, where=mask),
            knp.prod(x, axis=(0, 1), where=mask, initial=2.0), knp.max(x, axis=2, where=mask, initial=-1.0),
            knp.min(x, where=mask, initial=0.5), knp.max(x, axis=0, initial=1.0), knp.mean(x, axis=-1, where=mask),
            knp.var(x, axis=(0, 2), where=mask), knp.std(x, axis=1, where=mask, ddof=1),
            knp.all(b, axis=0, where=mask), knp.any(b, axis=(1, 2), where=mask),
            knp.sum(i8, dtype=np.int8), knp.sum(x, axis=0, dtype=np.int32), knp.mean(i8, axis=1, dtype=np.float32),
            knp.var(x, axis=1, ddof=2), knp.std(x, ddof=3), knp.var(x, axis=2, ddof=5), knp.var(x, correction=1),
            knp.max(b, axis=1), knp.min(b, axis=0), knp.prod(b, axis=2), knp.sum(i8, promote_integers=False),
        ]

    outs = f(x, i8, b, mask)
    with np.errstate(all="ignore"):
        expected = [
            (np.sum(x, axis=1, where=mask), np.float32), (np.sum(x, initial=10.0), np.float32),
            (np.sum(i8.astype(np.int32), axis=0, initial=3, where=mask), np.int32),
            (np.prod(x, axis=(0, 1), where=mask, initial=2.0), np.float32),
            (np.max(x, axis=2, where=mask, initial=-1.0), np.float32), (np.min(x, where=mask, initial=0.5), np.float32),
            (np.max(x, axis=0, initial=1.0), np.float32), (np.mean(x, axis=-1, where=mask), np.float32),
            (np.var(x, axis=(0, 2), where=mask), np.float32), (np.std(x, axis=1, where=mask, ddof=1), np.float32),
            (np.all(b, axis=0, where=mask), np.bool_), (np.any(b, axis=(1, 2), where=mask), np.bool_),
            (np.sum(i8, dtype=np.int8), np.int8), (np.sum(x.astype(np.int32), axis=0), np.int32),
            (np.mean(i8, axis=1, dtype=np.float32), np.float32), (np.var(x, axis=1, ddof=2), np.float32),
            (np.std(x, ddof=3), np.float32), (np.full((3, 4), np.inf), np.float32), (np.var(x, ddof=1), np.float32),
            (np.max(b, axis=1), np.bool_), (np.min(b, axis=0), np.bool_), (np.prod(b, axis=2), np.int32),
            (np.sum(i8, dtype=np.int8), np.int8),
        ]
    for k, (o, (e, dt)) in enumerate(zip(outs, expected)):
        _check(o, e, dt, k, dict(rtol=1e-4, atol=1e-4))


def test_empty_and_zero_d():
    @kiln.jit
    def f(e, s):
        return [knp.sum(e, axis=0), knp.prod(e), knp.max(e, axis=0, initial=-5.0), knp.mean(e, axis=0),
                knp.any(e), knp.all(e, axis=1), knp.sum(e, axis=1, keepdims=True), knp.count_nonzero(e),
                knp.sum(s), knp.mean(s), knp.max(s), knp.argmax(s), knp.var(s), knp.sum(s, axis=()),
                knp.min(s, keepdims=True)]

    outs = f(EMPTY, SCALAR)
    s = SCALAR
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = [(np.zeros(3), np.float32), (np.float32(1), np.float32), (np.full(3, -5.0), np.float32),
                    (np.full(3, np.nan), np.float32), (np.False_, np.bool_), (np.zeros(0, bool), np.bool_),
                    (np.zeros((0, 1)), np.float32), (np.int32(0), np.int32), (s, np.float32), (s, np.float32),
                    (s, np.float32), (np.int32(0), np.int32), (np.float32(0), np.float32), (s, np.float32),
                    (np.float32(s), np.float32)]
    for k, (o, (e, dt)) in enumerate(zip(outs, expected)):
        _check(o, e, dt, k)


def test_var_is_numerically_stable():
    # Large mean, small spread: E[x^2] - E[x]^2 cancels catastrophically in float32.
    x = (1e4 + rng.normal(scale=1e-2, size=(4, 1000))).astype(np.float32)
    exact = x.astype(np.float64).var(axis=1)
    out = kiln.jit(lambda x: (knp.var(x, axis=1), knp.std(x), knp.nanvar(x, axis=1)))(x)
    np.testing.assert_allclose(np.asarray(out[0]), exact, rtol=2e-2)
    np.testing.assert_allclose(float(out[1]), x.astype(np.float64).std(), rtol=2e-2)
    np.testing.assert_allclose(np.asarray(out[2]), exact, rtol=2e-2)
    naive = (x.astype(np.float32) ** 2).mean(axis=1) - x.mean(axis=1) ** 2
    assert np.abs(naive - exact).max() > 10 * np.abs(np.asarray(out[0]) - exact).max()


def test_small_floats_accumulate_in_float32():
    x = rng.uniform(0, 1, size=4096).astype(np.float16)
    out = knp.sum(x)
    assert out.dtype == np.float16
    np.testing.assert_allclose(float(out), x.astype(np.float64).sum(), rtol=2e-3)
    m = knp.mean(x)
    assert m.dtype == np.float16
    np.testing.assert_allclose(float(m), x.astype(np.float64).mean(), rtol=2e-3)


def test_float64_and_x64_dtype_rules():
    with kiln.config.override("enable_x64", True):
        x = rng.normal(size=(3, 4))
        i8 = DATA["i8"]
        outs = kiln.jit(lambda x, i8: [knp.sum(x, axis=0), knp.var(x, ddof=1), knp.sum(i8), knp.mean(i8),
                                       knp.argmax(x), knp.count_nonzero(i8, axis=0)])(x, i8)
        expected = [(x.sum(axis=0), np.float64), (x.var(ddof=1), np.float64), (i8.astype(np.int64).sum(), np.int64),
                    (i8.mean(), np.float64), (x.argmax(), np.int64), (np.count_nonzero(i8, axis=0), np.int64)]
        for k, (o, (e, dt)) in enumerate(zip(outs, expected)):
            _check(o, e, dt, k, dict(rtol=1e-12, atol=1e-12))


def test_nan_reductions():
    # Its own generator: the module's is shared with the tests before it, which under pytest-xdist differ
    # from run to run, and a column of NaNs only makes NumPy's nanargmax(axis=0) raise.
    rng = np.random.default_rng(198)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    x[rng.random((4, 5)) > 0.6] = np.nan
    x[0] = rng.normal(size=5)  # every column has a number
    x[1] = np.nan  # an all-NaN row
    names = ["nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nanargmax", "nanargmin"]
    cases = [(n, ax, ax == 0) for n in names for ax in (None, 0, 1) if not (n.startswith("nanarg") and ax != 0)]
    cases += [("nanargmax", 1, False), ("nanargmin", None, False), ("nanmax", 1, True), ("nanvar", 0, False)]
    outs = kiln.jit(lambda x: [getattr(knp, n)(x, axis=ax, keepdims=kd) for n, ax, kd in cases])(x)
    for (n, ax, kd), o in zip(cases, outs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            if n == "nanargmax" and ax == 1:  # NumPy raises for all-NaN slices; JAX gives -1
                rows = np.where(np.isnan(x), -np.inf, x)
                expected = np.where(np.isnan(x).all(axis=1), -1, rows.argmax(axis=1))
            else:
                expected = getattr(np, n)(x, axis=ax, keepdims=kd)
        dt = np.int32 if n.startswith("nanarg") else np.float32
        _check(o, expected, dt, (n, ax, kd), dict(rtol=1e-5, atol=1e-5))
    i = DATA["i32"][0]
    _check(knp.nansum(i, axis=0), i.sum(axis=0), np.int32, "int nansum")
    _check(knp.nanmean(i), i.mean(), np.float32, "int nanmean")
    _check(knp.nanmax(i, axis=1), i.max(axis=1), np.int32, "int nanmax")


def test_average():
    x = DATA["f32"]
    w = rng.uniform(0.1, 1, size=x.shape).astype(np.float32)
    w1 = rng.uniform(0.1, 1, size=4).astype(np.float32)

    @kiln.jit
    def f(x, w, w1, i):
        return [knp.average(x), knp.average(x, axis=1), knp.average(x, axis=(0, 2), weights=w),
                knp.average(x, axis=1, weights=w1), knp.average(x, axis=-2, weights=w1, returned=True),
                knp.average(x, weights=w, returned=True, keepdims=True), knp.average(i, axis=0),
                knp.average(x, axis=0, returned=True)]

    outs = f(x, w, w1, DATA["i32"])
    i = DATA["i32"]
    expected = [np.average(x), np.average(x, axis=1), np.average(x, axis=(0, 2), weights=w),
                np.average(x, axis=1, weights=w1), np.average(x, axis=-2, weights=w1, returned=True),
                np.average(x, weights=w, returned=True, keepdims=True), np.average(i, axis=0),
                np.average(x, axis=0, returned=True)]
    for k, (o, e) in enumerate(zip(outs, expected)):
        if isinstance(e, tuple):
            for oo, ee in zip(o, e):
                _check(oo, np.broadcast_to(ee, np.shape(e[0])), np.float32, k, dict(rtol=1e-5, atol=1e-5))
        else:
            _check(o, e, np.float32, k, dict(rtol=1e-5, atol=1e-5))


def test_reduction_errors():
    x = DATA["f32"]
    with pytest.raises(ValueError, match="kiln.numpy.sum: axis 3 is out of bounds for an array of dimension 3"):
        knp.sum(x, axis=3)
    with pytest.raises(ValueError, match="kiln.numpy.mean: axis -4 is out of bounds"):
        knp.mean(x, axis=(0, -4))
    with pytest.raises(ValueError, match="kiln.numpy.var: repeated axis"):
        knp.var(x, axis=(1, -2))
    with pytest.raises(TypeError, match="kiln.numpy.sum: axis must be an int"):
        knp.sum(x, axis=1.0)
    with pytest.raises(ValueError, match="kiln.numpy.max: zero-size array to reduction operation max which has no "
                                         "identity"):
        knp.max(EMPTY, axis=0)
    with pytest.raises(ValueError, match="kiln.numpy.min: reduction with where= needs initial="):
        knp.min(x, where=x > 0)
    with pytest.raises(ValueError, match="kiln.numpy.argmax: attempt to get argmax of an empty sequence"):
        knp.argmax(EMPTY)
    with pytest.raises(ValueError, match="kiln.numpy.argmin: attempt to get argmin of an empty sequence"):
        knp.argmin(EMPTY, axis=0)
    with pytest.raises(TypeError, match="kiln.numpy.sum: out= is not supported"):
        knp.sum(x, out=x)
    with pytest.raises(ValueError, match="kiln.numpy.sum: where= of shape \\(2,\\) does not broadcast|"
                                         "kiln.numpy.sum: operands could not be broadcast"):
        knp.sum(x, where=np.array([True, False]))
    with pytest.raises(TypeError, match="kiln.numpy.ptp: not supported for boolean arrays"):
        knp.ptp(DATA["bool"])
    with pytest.raises(ValueError, match="kiln.numpy.var: pass ddof or correction, not both"):
        knp.var(x, ddof=1, correction=1)
    with pytest.raises(ValueError, match="kiln.numpy.average: axis must be given when the shapes"):
        knp.average(x, weights=np.ones(5))
    with pytest.raises(ValueError, match="kiln.numpy.average: length of weights 5 differs"):
        knp.average(x, axis=1, weights=np.ones(5))
    with pytest.raises(ValueError, match="kiln.numpy.average: 1-D weights expected"):
        knp.average(x, axis=1, weights=np.ones((4, 5)))
    with pytest.raises(TypeError, match="kiln.numpy.sum: argument 0 is a list"):
        knp.sum([1, 2])


@pytest.mark.parametrize("fname", ["var", "std"])
def test_var_and_std_of_complex_data_are_real(fname):
    r = np.random.default_rng(2)
    x = (r.normal(size=(3, 4)) + 1j * r.normal(size=(3, 4))).astype(np.complex64)
    for kw in ({}, {"axis": 0}, {"axis": 1, "ddof": 1}, {"axis": 0, "keepdims": True},
               {"where": np.arange(12).reshape(3, 4) % 3 > 0}):
        want = getattr(np, fname)(x, **kw)
        for fn in (getattr(knp, fname), kiln.jit(lambda a, f=getattr(knp, fname), kw=kw: f(a, **kw))):
            got = fn(x, **kw) if fn is getattr(knp, fname) else fn(x)
            assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    with pytest.raises(NotImplementedError, match=r"nanvar of complex arrays is not supported yet .*where=~isnan"):
        knp.nanvar(x)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "all", "cumsum", "cumprod", "nansum", "nanmax",
                                  "ptp", "cumulative_sum"])
def test_reductions_of_weakly_typed_values_are_strongly_typed(name):
    # As JAX's: a reduction's result is strongly typed, of a Python scalar or a weakly typed array too (kiln kept the
    # weak type: jnp.sum(x * 1.0) then promoted with a float16 array to float16, where JAX gives float32).
    fn = getattr(knp, name)
    for x in (5.0, 3, knp.asarray([2.0, 1.0]) * 1.0):
        if name == "cumulative_sum" and np.ndim(x) == 0:
            continue
        out = fn(x)
        assert out.weak_type is False, (name, x)
        assert kiln.jit(fn)(x).weak_type is False, (name, x)
    if name not in ("any", "all"):  # (a bool result takes float16's dtype, strong or not)
        assert (fn(knp.asarray([2.0, 1.0]) * 1.0) * knp.ones(2, knp.float16)).dtype == np.float32
