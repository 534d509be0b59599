"""kiln.numpy array creation against NumPy: array/asarray, zeros/ones/full/empty and *_like, arange,
linspace/logspace/geomspace, eye/identity/tri, meshgrid, indices, diag/diagonal/diagflat, copy.

Each family runs eagerly on a few cases and under one jit for the rest (compilations stay few).
"""
from __future__ import annotations

import numpy as np
import pytest
from kiln.frontend.core import dtypes

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(2)
F32 = dict(rtol=2e-6, atol=2e-6)


def _canon(dtype) -> np.dtype:
    return dtypes.canonicalize_dtype(dtype)  # 64-bit -> 32-bit unless x64 is on


def _check(out, expected, tol=F32, dtype=None, where=""):
    expected = np.asarray(expected)
    assert isinstance(out, kiln.Array), (where, type(out))
    assert out.shape == expected.shape, (where, out.shape, expected.shape)
    want = np.dtype(dtype) if dtype is not None else _canon(expected.dtype)
    assert out.dtype == want, (where, out.dtype, want)
    np.testing.assert_allclose(np.asarray(out).astype(np.float64), expected.astype(np.float64), err_msg=str(where),
                               **tol)


# ---------------------------------------------------------------------------------------------
# array / asarray
# ---------------------------------------------------------------------------------------------

def test_array_from_host_values():
    _check(knp.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]]), dtype=np.int32)
    _check(knp.array([1, 2.5]), np.array([1, 2.5]), dtype=np.float32)
    _check(knp.array([True, False]), np.array([True, False]))
    _check(knp.array([[1, 2]], dtype=np.float32), np.array([[1.0, 2.0]]), dtype=np.float32)
    _check(knp.array(np.arange(6.0).reshape(2, 3)), np.arange(6.0).reshape(2, 3), dtype=np.float32)
    _check(knp.array(3, ndmin=2), np.array(3, ndmin=2))
    _check(knp.array([1, 2], ndmin=3), np.array([1, 2], ndmin=3))
    _check(knp.asarray(np.zeros((0, 3), np.int8)), np.zeros((0, 3), np.int8))
    _check(knp.array([]), np.array([]), dtype=np.float32)
    # Python scalars are weakly typed (as JAX); NumPy scalars and lists are not.
    assert knp.asarray(2.0).weak_type and knp.asarray(2).weak_type
    assert not knp.asarray(np.float32(2)).weak_type and not knp.array([2.0]).weak_type
    x = knp.asarray(np.ones(3, np.float32))
    assert knp.asarray(x) is x
    _check(knp.asarray(x, dtype=np.int32), np.ones(3), dtype=np.int32)
    _check(knp.copy(x), np.ones(3, np.float32))


def test_array_of_traced_values_under_jit():
    @kiln.jit
    def f(a, b):
        return knp.array([[a, b], [b, 1.0]]), knp.array([a, b], dtype=np.int32), knp.array((a, 2), ndmin=2)

    o1, o2, o3 = f(np.float32(1.5), np.float32(-2.0))
    _check(o1, np.array([[1.5, -2.0], [-2.0, 1.0]], np.float32))
    _check(o2, np.array([1, -2], np.int32))
    _check(o3, np.array([[1.5, 2.0]], np.float32))


def test_array_errors():
    # None, alone or in a list, is a ValueError, as JAX's ("None is not a valid value for jnp.array"; found
    # porting JAX's custom pytrees page).
    with pytest.raises(ValueError, match="kiln.numpy.array: None"):
        knp.array(None)
    with pytest.raises(ValueError, match=r"kiln.numpy.array: None is not a valid array value \(in \[1, \[2, None\]\]"):
        knp.asarray([1, [2, None]])
    with pytest.raises(TypeError, match="kiln.numpy.array: cannot make an array from str"):
        knp.array("abc")
    with pytest.raises(OverflowError, match="kiln.numpy.array: Python int 1099511627776 is out of range for int32"):
        knp.array([1, 2**40])
    with pytest.raises(ValueError, match="kiln.numpy.array: cannot make an array"):
        knp.array([[1, 2], [3]])


# ---------------------------------------------------------------------------------------------
# zeros / ones / full / empty and *_like
# ---------------------------------------------------------------------------------------------

def test_filled_arrays():
    for shape in [(), (0,), (2, 3), 4]:
        _check(knp.zeros(shape), np.zeros(shape, np.float32))
        _check(knp.ones(shape, dtype=np.int32), np.ones(shape, np.int32))
        _check(knp.empty(shape, dtype=bool), np.zeros(shape, bool))
        _check(knp.full(shape, 7), np.full(shape, 7), dtype=np.int32)
    assert knp.full((2,), 1.5).weak_type and not knp.full((2,), 1.5, dtype=np.float32).weak_type
    _check(knp.full((2, 3), np.arange(3, dtype=np.float32)), np.full((2, 3), np.arange(3.0)))
    _check(knp.full((2, 3), knp.asarray([1, 2, 3]), dtype=np.float32), np.full((2, 3), [1.0, 2, 3]),
           dtype=np.float32)
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    _check(knp.zeros_like(a), np.zeros_like(a))
    _check(knp.ones_like(a, dtype=np.float32), np.ones_like(a, np.float32))
    _check(knp.full_like(a, 3, shape=(4,)), np.full((4,), 3, np.int8))
    _check(knp.empty_like(knp.asarray(a)), np.zeros_like(a))


def test_filled_arrays_under_jit():
    @kiln.jit
    def f(x, v):
        return (knp.zeros_like(x), knp.ones(x.shape, x.dtype), knp.full((2, 2), v), knp.full_like(x, v),
                knp.full(3, v, dtype=np.int32))

    x = rng.normal(size=(3, 2)).astype(np.float32)
    outs = f(x, np.float32(2.5))
    for o, e in zip(outs, [np.zeros_like(x), np.ones_like(x), np.full((2, 2), 2.5, np.float32),
                           np.full_like(x, 2.5), np.full(3, 2, np.int32)]):
        _check(o, e)


def test_filled_arrays_errors():
    with pytest.raises(ValueError, match="kiln.numpy.full: negative dimensions are not allowed"):
        knp.zeros((2, -1))
    with pytest.raises(TypeError, match="kiln.numpy.full: .*shape.*static"):
        kiln.jit(lambda n: knp.zeros(n))(3)
    with pytest.raises(ValueError, match=r"kiln.numpy.full: fill_value of shape \(3,\) cannot be broadcast"):
        knp.full((2, 2), np.arange(3.0))
    with pytest.raises(TypeError, match=r"kiln\.numpy\.zeros: invalid dtype 'flot32'"):
        knp.zeros(3, dtype="flot32")


# ---------------------------------------------------------------------------------------------
# arange / linspace / logspace / geomspace
# ---------------------------------------------------------------------------------------------

ARANGE = [(5,), (0,), (-3,), (2, 9), (9, 2), (1, 10, 3), (10, 1, -3), (0.5, 3.0), (0, 1, 0.1), (-1.0, 1.0, 0.25),
          (np.int32(4),), (3.0,)]


def test_arange():
    for args in ARANGE:
        _check(knp.arange(*args), np.arange(*args), where=args)
    _check(knp.arange(5, dtype=np.float32), np.arange(5, dtype=np.float32))
    _check(knp.arange(1, 4, dtype=np.int8), np.arange(1, 4, dtype=np.int8))
    _check(knp.arange(knp.asarray(4)), np.arange(4), dtype=np.int32)
    for args in [(0, 5, 0.5), (0.5, 7.2, 1.5), (-3.7, 2, 0.9), (5, 0.1, -1.5)]:  # NumPy's integer arange quirks
        _check(knp.arange(*args, dtype=np.int32), np.arange(*args, dtype=np.int32), where=args)
    # static bounds work under jit
    out = kiln.jit(lambda x: x + knp.arange(4))(np.float32(1))
    _check(out, np.arange(4) + np.float32(1), dtype=np.float32)


def test_arange_errors():
    with pytest.raises(TypeError, match="kiln.numpy.arange: stop must be a static value"):
        kiln.jit(lambda n: knp.arange(0, n))(3)
    with pytest.raises(ZeroDivisionError, match="kiln.numpy.arange: step must not be zero"):
        knp.arange(0, 3, 0)
    with pytest.raises(TypeError, match="kiln.numpy.arange: start must be real"):
        knp.arange(1j)


LINSPACE = [dict(start=0, stop=1, num=7), dict(start=-2.0, stop=5, num=1), dict(start=0, stop=1, num=0),
            dict(start=1, stop=0, num=5, endpoint=False), dict(start=0, stop=10, num=4, dtype=np.int32),
            dict(start=-5, stop=5, num=6, dtype=np.int32, endpoint=False), dict(start=3, stop=3, num=4),
            dict(start=np.array([0.0, 1.0]), stop=5.0, num=4), dict(start=np.array([0.0, 1.0]), stop=5.0, num=4,
                                                                     axis=1),
            dict(start=np.zeros((2, 1)), stop=np.ones((1, 3)), num=3, axis=-1),
            dict(start=np.zeros((2, 1)), stop=np.ones((1, 3)), num=5, axis=1, endpoint=False)]


def test_linspace():
    _check(knp.linspace(0, 1, 7), np.linspace(0, 1, 7).astype(np.float32))

    @kiln.jit
    def f(lo, hi):
        return [knp.linspace(c["start"] if not np.isscalar(c["start"]) else lo * 0 + c["start"],
                             c["stop"] if not np.isscalar(c["stop"]) else hi * 0 + c["stop"],
                             **{k: v for k, v in c.items() if k not in ("start", "stop")}) for c in LINSPACE]

    outs = f(np.float32(0), np.float32(0))
    for c, o in zip(LINSPACE, outs):
        expected = np.linspace(**c)
        _check(o, expected, dict(rtol=1e-6, atol=2e-6), dtype=_canon(c.get("dtype", np.float32)), where=c)
    # retstep (eager) and x64
    out, step = knp.linspace(0, 1, 5, retstep=True)
    _check(out, np.linspace(0, 1, 5, dtype=np.float32))
    assert float(step) == pytest.approx(0.25)
    out, step = knp.linspace(0, 1, 1, endpoint=True, retstep=True)
    assert np.isnan(float(step))
    with kiln.config.override("enable_x64", True):
        _check(knp.linspace(0, 1, 11), np.linspace(0, 1, 11), dict(rtol=1e-15, atol=1e-15))


def _jax_linspace(start, stop, num, endpoint=True):
    """JAX's linspace formula in NumPy float32, op for op: ``start * (1 - f) + stop * f`` for ``f = i / div``,
    then ``stop`` itself (with an endpoint). Each op is a correctly rounded IEEE op, as kiln's are."""
    div = num - 1 if endpoint else num
    f = np.arange(div, dtype=np.float32) / np.float32(div)
    out = np.float32(start) * (np.float32(1) - f) + np.float32(stop) * f
    return np.append(out, np.float32(stop)) if endpoint else out


# (the oracle is the host's IEEE float32 arithmetic: on CUDA (H200) a quarter of the values differed by an ulp,
# the GPU's float32 arithmetic rounding otherwise)
@pytest.mark.backend("cpu")
def test_linspace_rounds_as_jax():
    # start + i * step (kiln's old formula) differs in the last place from JAX's for about half of the values:
    # -1.9199999570846558 for linspace(-2, 2, 101)[2], where JAX gives -1.9200000762939453.
    r = np.random.default_rng(5)
    cases = [(-2, 2, 101, True)] + [(*(r.standard_normal(2) * 10).astype(np.float32), int(r.integers(2, 120)),
                                     bool(r.integers(0, 2))) for _ in range(12)]
    with kiln.disable_jit():  # op by op: the ops round exactly as written
        for lo, hi, num, endpoint in cases:
            np.testing.assert_array_equal(knp.linspace(lo, hi, num, endpoint=endpoint),
                                          _jax_linspace(lo, hi, num, endpoint), err_msg=str((lo, hi, num)))
    assert float(knp.linspace(-2, 2, 101)[2]) == -1.9200000762939453
    # Compiled, XLA turns the division by the constant div into a product with its reciprocal and reassociates
    # the products (in JAX's program as in kiln's, which is the same): within a few ulps of the bounds. And one
    # program whether the bounds are Python ints (which used to run op by op), floats or traced.
    traced = kiln.jit(lambda lo, hi: knp.linspace(lo, hi, 101))(np.float32(-2), np.float32(2))
    for out in (knp.linspace(-2, 2, 101), knp.linspace(-2.0, 2.0, 101), traced):
        np.testing.assert_array_equal(out, traced)
    for lo, hi, num, endpoint in cases:
        out = np.asarray(knp.linspace(lo, hi, num, endpoint=endpoint))
        want = _jax_linspace(lo, hi, num, endpoint)
        np.testing.assert_allclose(out, want, rtol=0, atol=4 * np.spacing(max(abs(lo), abs(hi)), dtype=np.float32))
        assert out[0] == np.float32(lo) and (not endpoint or out[-1] == np.float32(hi))


def test_linspace_without_a_step():
    # no step to take: a scalar NaN (as JAX) for any bounds, and start itself, untouched by arithmetic
    start, stop = np.array([[-0.0, 1.0]], np.float32), np.array([np.inf, 2.0], np.float32)
    for num, endpoint in [(0, True), (0, False), (1, True)]:
        out, step = knp.linspace(start, stop, num, endpoint=endpoint, retstep=True)
        assert step.shape == () and np.isnan(step) and out.shape == (num, 1, 2)
    out, step = knp.linspace(start, stop, 1, endpoint=False, retstep=True)
    np.testing.assert_array_equal(np.signbit(out), [[[True, False]]])
    np.testing.assert_array_equal(step, stop - start)


def test_logspace_geomspace():
    _check(knp.logspace(0, 3, 4), np.logspace(0, 3, 4).astype(np.float32), dict(rtol=1e-5, atol=0))
    _check(knp.logspace(0, 3, 5, base=2.0, endpoint=False), np.logspace(0, 3, 5, base=2.0, endpoint=False),
           dict(rtol=1e-5, atol=0), dtype=np.float32)
    _check(knp.geomspace(1, 1000, 4), np.geomspace(1, 1000, 4), dict(rtol=1e-5, atol=0), dtype=np.float32)
    _check(knp.geomspace(-1, -16, 5), np.geomspace(-1, -16, 5), dict(rtol=1e-5, atol=0), dtype=np.float32)
    _check(knp.geomspace(2.0, 32.0, 4, endpoint=False), np.geomspace(2.0, 32.0, 4, endpoint=False),
           dict(rtol=1e-5, atol=0), dtype=np.float32)
    with pytest.raises(ValueError, match="kiln.numpy.geomspace: start must be non-zero"):
        knp.geomspace(0, 10)


def test_linspace_errors():
    with pytest.raises(ValueError, match="kiln.numpy.linspace: num must be non-negative, got -1"):
        knp.linspace(0, 1, -1)
    with pytest.raises(ValueError, match="kiln.numpy.linspace: axis 2 is out of bounds"):
        knp.linspace(0, 1, 3, axis=2)
    with pytest.raises(TypeError, match="kiln.numpy.linspace: num must be a static"):
        kiln.jit(lambda n: knp.linspace(0, 1, n))(3)
    with pytest.raises(ValueError, match="kiln.numpy.linspace: operands could not be broadcast"):
        knp.linspace(np.zeros(2), np.ones(3), 4)


# ---------------------------------------------------------------------------------------------
# eye / identity / tri / meshgrid / indices
# ---------------------------------------------------------------------------------------------

def test_eye_identity_tri():
    cases = [(3, None, 0), (3, 5, 1), (4, 2, -1), (3, 3, 5), (3, 3, -5), (0, None, 0), (2, 0, 0)]
    outs = kiln.jit(lambda: [(knp.eye(N, M, k), knp.tri(N, M, k)) for N, M, k in cases])()
    for (N, M, k), (e, t) in zip(cases, outs):
        _check(e, np.eye(N, M, k), where=(N, M, k), dtype=np.float32)
        _check(t, np.tri(N, M, k), where=(N, M, k), dtype=np.float32)
    _check(knp.eye(3, 5, 1), np.eye(3, 5, 1), dtype=np.float32)  # eager
    _check(knp.eye(3, dtype=np.int32), np.eye(3, dtype=np.int32))
    _check(knp.eye(2, dtype=bool), np.eye(2, dtype=bool))
    _check(knp.identity(4, dtype=np.int8), np.identity(4, dtype=np.int8))
    _check(knp.tri(3, k=1, dtype=np.int32), np.tri(3, k=1, dtype=np.int32))
    with pytest.raises(ValueError, match="kiln.numpy.eye: negative dimensions"):
        knp.eye(-1)
    with pytest.raises(TypeError, match="kiln.numpy.eye: N must be an integer"):
        knp.eye(2.5)
    with pytest.raises(TypeError, match="kiln.numpy.tri: N must be a static"):
        kiln.jit(lambda n: knp.tri(n))(3)


def test_eye_tri_offsets_beyond_int32_match_numpy():
    # the mask compares col - row with k in int32; a k past the matrix's edges must not wrap
    # (array-api-tests draws k up to 2**63 - 1)
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    for k in (2**31, -(2**31) - 1, 2**40, -(2**40), 2**63 - 1, -(2**63)):
        _check(knp.eye(3, k=k), np.eye(3, k=k), where=k, dtype=np.float32)
        _check(knp.eye(2, 3, k=k), np.eye(2, 3, k=k), where=k, dtype=np.float32)
    for k in (2**31, -(2**31) - 1, 2**62, -(2**62)):  # NumPy's tri itself overflows near 2**63
        _check(knp.tri(3, 4, k=k), np.tri(3, 4, k=k), where=k, dtype=np.float32)
        _check(knp.tril(x, k=k), np.tril(x, k=k), where=k)
        _check(knp.triu(x, k=k), np.triu(x, k=k), where=k)


def test_meshgrid_and_indices():
    x, y, z = np.arange(3.0), np.arange(4) * 2, np.arange(2.0) - 1
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            got = knp.meshgrid(x, y, z, indexing=indexing, sparse=sparse)
            want = np.meshgrid(x, y, z, indexing=indexing, sparse=sparse)
            for g, w in zip(got, want):
                _check(g, w, where=(indexing, sparse))
    g = kiln.jit(lambda a, b: knp.meshgrid(a, b))(x.astype(np.float32), y.astype(np.int32))
    for o, w in zip(g, np.meshgrid(x.astype(np.float32), y.astype(np.int32))):
        _check(o, w)
    (single,) = knp.meshgrid(x)
    _check(single, x)
    _check(knp.indices((2, 3)), np.indices((2, 3)))
    _check(knp.indices((2, 0, 3), dtype=np.float32), np.indices((2, 0, 3), dtype=np.float32))
    for g, w in zip(knp.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
        _check(g, w)
    with pytest.raises(ValueError, match="kiln.numpy.meshgrid: each argument must be 1-D, got shape \\(2, 2\\)"):
        knp.meshgrid(np.zeros((2, 2)), x)
    with pytest.raises(ValueError, match="kiln.numpy.meshgrid: indexing must be 'xy' or 'ij'"):
        knp.meshgrid(x, indexing="yx")


# ---------------------------------------------------------------------------------------------
# diag / diagonal / diagflat
# ---------------------------------------------------------------------------------------------

def test_diag_and_diagonal():
    arrays = {"v": rng.normal(size=4).astype(np.float32), "m": rng.normal(size=(3, 5)).astype(np.float32),
              "t": rng.normal(size=(2, 3, 4, 5)).astype(np.float32), "e": np.zeros(0, np.float32)}
    diag_cases = [("v", k) for k in (-2, 0, 3)] + [("m", k) for k in range(-6, 7)] + [("e", 1)]
    diagonal_cases = [("t", 0, 0, 1), ("t", 1, 3, 1), ("t", -2, 2, -1), ("t", 7, 1, 2), ("m", -1, 1, 0),
                      ("m", 2, 0, 1)]

    @kiln.jit
    def f(arrs):
        return ([knp.diag(arrs[n], k) for n, k in diag_cases],
                [knp.diagonal(arrs[n], o, a1, a2) for n, o, a1, a2 in diagonal_cases],
                knp.diagflat(arrs["m"], -1), knp.diag(knp.asarray([1, 2, 3]), 1))

    d1, d2, flat, di = f(arrays)
    for (n, k), o in zip(diag_cases, d1):
        _check(o, np.diag(arrays[n], k), where=(n, k))
    for (n, off, a1, a2), o in zip(diagonal_cases, d2):
        _check(o, np.diagonal(arrays[n], off, a1, a2), where=(n, off, a1, a2))
    _check(flat, np.diagflat(arrays["m"], -1))
    _check(di, np.diag(np.array([1, 2, 3]), 1), dtype=np.int32)
    # eager, other dtypes
    _check(knp.diag(np.array([True, False])), np.diag(np.array([True, False])))
    _check(knp.diagonal(np.arange(12).reshape(3, 4), 1), np.diagonal(np.arange(12).reshape(3, 4), 1),
           dtype=np.int32)


def test_diag_errors():
    with pytest.raises(ValueError, match=r"kiln.numpy.diag: the input must be 1-D or 2-D, got shape \(2, 2, 2\)"):
        knp.diag(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="kiln.numpy.diagonal: axis1 and axis2 cannot be the same"):
        knp.diagonal(np.zeros((2, 2)), 0, 1, -1)
    with pytest.raises(ValueError, match="kiln.numpy.diagonal: axis 2 is out of bounds for an array of dimension 2"):
        knp.diagonal(np.zeros((2, 2)), 0, 0, 2)
    with pytest.raises(ValueError, match="kiln.numpy.diagonal: the array must be at least 2-D"):
        knp.diagonal(np.zeros(3))


def test_like_functions_keep_a_weak_type():
    # As JAX: *_like of a weakly typed value without a dtype is weakly typed, so it does not widen what it
    # meets (zeros_like(1.0) + a bfloat16 array stays bfloat16); a dtype, a strong input or an array fill
    # gives a strong result.
    weak = knp.asarray(1.0)
    for like in (knp.zeros_like, knp.ones_like, knp.empty_like, lambda a: knp.full_like(a, 3),
                 lambda a: knp.full_like(a, np.float32(3)), lambda a: knp.full_like(a, knp.asarray(3)),
                 lambda a: knp.zeros_like(a, shape=(2, 3))):
        out = like(weak)
        assert out.weak_type and out.dtype == np.float32, like
        assert kiln.jit(like)(1.0).weak_type
        assert not like(knp.ones(2)).weak_type
    assert (knp.zeros_like(1.0) + knp.ones(3, knp.bfloat16)).dtype == knp.bfloat16
    assert knp.zeros_like(2).dtype == np.int32 and knp.zeros_like(2).weak_type
    assert not knp.zeros_like(weak, dtype=np.float32).weak_type
    assert not knp.full_like(knp.ones(2), knp.ones(2) * 3).weak_type
    np.testing.assert_array_equal(knp.full_like(weak, 3, shape=(2,)), [3.0, 3.0])
    with pytest.raises(TypeError, match=r"kiln.numpy.full_like: argument 1 of type str \('x'\) is not an array"):
        knp.full_like(weak, "x")


def test_array_of_a_list_of_traced_weak_values_is_strong():
    # As JAX, and as kiln outside a trace: a list makes a strongly typed array, whatever its items' weak types;
    # an array (not a list) keeps its own.
    for out in (kiln.jit(lambda a, b: knp.array([a, b]))(1.0, 2.0), kiln.jit(lambda x: knp.array(x))([1, 2]),
                kiln.jit(lambda a: knp.asarray(((a, a), (a, a))))(1.0), knp.array([knp.asarray(1.0)] * 2)):
        assert not out.weak_type, out
    assert kiln.jit(lambda x: knp.array([x, x]))(1).dtype == np.int32
    assert kiln.jit(lambda a: knp.array(a))(1.0).weak_type


def test_a_64_bit_dtype_without_x64_warns_that_it_is_truncated():
    # As JAX (its "Common gotchas"): an explicit float64/int64 request with x64 off warns and gives 32 bits;
    # Python's float and int ask for the default types and do not warn.
    with pytest.warns(UserWarning, match=r"Explicitly requested dtype float64 is not available, and will be "
                                         r"truncated to dtype float32\. To enable more dtypes, set "
                                         r"kiln.config.update\('jax_enable_x64', True\)") as record:
        out = knp.zeros(2, dtype=np.float64)
    assert out.dtype == np.float32 and record[0].filename == __file__  # points at the user's line
    with pytest.warns(UserWarning, match="requested dtype int64"):
        assert knp.full((2,), 3, dtype="int64").dtype == np.int32
    with pytest.warns(UserWarning, match="requested dtype float64"):
        assert kiln.random.uniform(kiln.random.key(0), (3,), dtype=np.float64).dtype == np.float32
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert knp.zeros(2, dtype=float).dtype == np.float32 and knp.ones(2, dtype=int).dtype == np.int32
        assert knp.zeros(2, dtype=np.float32).dtype == np.float32
        with kiln.config.override("enable_x64", True):
            assert knp.zeros(2, dtype=np.float64).dtype == np.float64


@pytest.mark.parametrize("call", [
    lambda: knp.arange(5, dtype="float64"), lambda: knp.linspace(0, 1, 3, dtype="float64"),
    lambda: knp.logspace(0, 1, 3, dtype="float64"), lambda: knp.geomspace(1, 2, 3, dtype="float64"),
    lambda: knp.eye(3, dtype="float64"), lambda: knp.identity(2, dtype="float64"), lambda: knp.tri(3, dtype="float64"),
    lambda: knp.sum(knp.ones(3), dtype="float64"), lambda: knp.cumsum(knp.ones(3), dtype=np.int64)],
    ids=["arange", "linspace", "logspace", "geomspace", "eye", "identity", "tri", "sum", "cumsum"])
def test_the_truncation_warning_comes_at_every_call(call):
    # Also for the functions that run as one cached compiled program (the check is not only in their trace), and
    # once per call, pointing at the user's line.
    for _ in range(3):
        with pytest.warns(UserWarning, match="Explicitly requested dtype (float|int)64 is not available") as record:
            out = call()
        assert len(record) == 1 and record[0].filename == __file__
        assert out.dtype.itemsize == 4
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with kiln.config.override("enable_x64", True):
            assert call().dtype.itemsize == 8


@pytest.mark.parametrize("call", [
    lambda: knp.array([1.0, 2.0], dtype=np.float64), lambda: knp.asarray(np.arange(2), dtype="int64"),
    lambda: knp.array([[knp.ones(2)], [knp.ones(2)]], dtype="float64"), lambda: knp.ones(2).astype(np.float64),
    lambda: knp.astype(knp.ones(2), "complex128"), lambda: knp.float64(1.0),
    lambda: knp.zeros(2, dtype=np.dtype("float64")), lambda: knp.ones(2, dtype=np.dtype("int64"))],
    ids=["array", "asarray", "array-of-arrays", "Array.astype", "astype", "scalar-type", "zeros-np.dtype",
         "ones-np.dtype"])
def test_array_asarray_astype_and_np_dtypes_warn_of_a_truncated_64_bit_dtype(call):
    # As JAX's: the functions that convert (not only those that create) warn of an explicit 64-bit dtype with x64
    # off, once, at the user's line; and a NumPy dtype object asks for what it names (np.dtype("float64") == float
    # is True in NumPy, which made it pass for Python's float and not warn).
    with pytest.warns(UserWarning, match="Explicitly requested dtype (float|int|complex)(64|128) is not available") \
            as record:
        out = call()
    assert len(record) == 1 and record[0].filename == __file__
    assert out.dtype.itemsize == (8 if out.dtype.kind == "c" else 4)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert knp.ones(2, dtype=int).astype(float).dtype == np.float32  # Python's types: the defaults, silently
        with kiln.config.override("enable_x64", True):
            assert call().dtype.itemsize in (8, 16)


def test_like_functions_take_a_shape_dtype_struct():
    # as jax.numpy's: anything with a shape and a dtype (optax's microbatching accumulators start so)
    spec = kiln.ShapeDtypeStruct((2, 3), np.int32)
    np.testing.assert_array_equal(knp.zeros_like(spec), np.zeros((2, 3), np.int32))
    assert knp.zeros_like(spec).dtype == np.int32 and not knp.zeros_like(spec).weak_type
    np.testing.assert_array_equal(knp.ones_like(spec, dtype=np.float32, shape=(4,)), np.ones(4, np.float32))
    np.testing.assert_array_equal(knp.full_like(spec, 7), np.full((2, 3), 7, np.int32))
    assert kiln.jit(lambda: knp.empty_like(spec))().shape == (2, 3)
    with pytest.raises(TypeError, match="zeros_like: argument 0 of type object .* is not an array or a scalar"):
        knp.zeros_like(object())


@pytest.mark.parametrize("x64", [False, True])
def test_numpy_float64_and_complex128_scalars_are_strongly_typed(x64):
    # np.float64 and np.complex128 subclass Python's float and complex: they were taken for Python scalars and made
    # weakly typed arrays (JAX: strong, as every NumPy scalar).
    with kiln.config.override("enable_x64", x64):
        for value, bits in ((np.float64(1.5), "float"), (np.complex128(1j), "complex")):
            for make in (knp.asarray, knp.array):
                out = make(value)
                want = {"float": np.float64 if x64 else np.float32, "complex": np.complex128 if x64 else np.complex64}
                assert (out.dtype, out.weak_type) == (np.dtype(want[bits]), False), (make, value)
                assert out == value
        assert knp.asarray(1.5).weak_type and knp.asarray(1j).weak_type  # Python's own stay weak
