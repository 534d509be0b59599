"""kiln.numpy sort / argsort / lexsort / searchsorted / unique against NumPy, eagerly and under jit."""
from __future__ import annotations

import numpy as np
import pytest
from kiln.frontend.numpy import sorting as sorting_impl

import kiln
import kiln.numpy as knp

RNG = np.random.default_rng(3)
F = np.array([3.0, np.nan, -0.0, 0.0, 1.0, -np.inf, np.nan, 2.0, 1.0, np.inf], np.float32)
F2 = RNG.standard_normal((3, 4, 5)).astype(np.float32)
F2[1, 2, 3] = np.nan
I2 = RNG.integers(-4, 4, (4, 6)).astype(np.int32)
B = RNG.random(7) > 0.5


def _eq(got, want):
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(np.asarray(got), want)


SORT_CASES = [(F, -1), (F, None), (F2, 0), (F2, 1), (F2, None), (I2, -1), (I2, 0), (B, 0),
              (np.zeros((2, 0), np.float32), -1), (np.zeros((2, 0), np.float32), 0), (np.float32(3), None)]


def test_sort_argsort_eager_and_jit():
    def f(args):
        return [(knp.sort(x, axis=ax), knp.argsort(x, axis=ax)) for x, (_, ax) in zip(args, SORT_CASES)]
    for fn, args in ((f, [knp.asarray(x) for x, _ in SORT_CASES]), (kiln.jit(f), [x for x, _ in SORT_CASES])):
        for (s, a), (x, ax) in zip(fn(args), SORT_CASES):
            _eq(s, np.sort(x, axis=ax))
            _eq(a, np.argsort(x, axis=ax, kind="stable"))
            assert a.dtype == np.int32 and s.dtype == np.asarray(x).dtype


def test_descending_and_methods():
    x = knp.asarray(I2)
    _eq(knp.sort(x, descending=True), -np.sort(-I2, axis=-1))
    _eq(knp.argsort(x, axis=0, descending=True), np.argsort(-I2, axis=0, kind="stable"))
    _eq(knp.sort(knp.asarray(F), descending=True), np.sort(F)[::-1])
    _eq(x.sort(axis=0), np.sort(I2, axis=0))
    _eq(x.argsort(), np.argsort(I2, kind="stable"))
    _eq(x.sort(), np.sort(I2))


def test_lexsort():
    a = np.array([1, 5, 1, 4, 3, 4, 4], np.int32)
    b = np.array([9.0, 4.0, 0.0, 4.0, 0.0, 2.0, np.nan], np.float32)
    c = np.array([True, False, True, True, False, False, True])
    keys2d = RNG.integers(0, 3, (3, 2, 5)).astype(np.int32)

    def f(a, b, c, k):
        return knp.lexsort((b, a)), knp.lexsort([c, b, a]), knp.lexsort(k), knp.lexsort(k, axis=0)
    for fn in (f, kiln.jit(f)):
        r1, r2, r3, r4 = fn(a, b, c, keys2d)
        _eq(r1, np.lexsort((b, a)))
        _eq(r2, np.lexsort((c, b, a)))
        _eq(r3, np.lexsort(keys2d))
        _eq(r4, np.lexsort(keys2d, axis=0))


SEARCH_A = np.sort(np.array([1.0, 2.0, 2.0, 2.0, 5.0, -np.inf, np.nan, 7.5, 3.0], np.float32))
SEARCH_V = np.array([[np.nan, 2.0, 0.5], [-np.inf, 9.0, 5.0]], np.float32)


@pytest.mark.parametrize("method", ["scan", "compare_all"])
def test_searchsorted(method):
    ai = np.array([0, 1, 1, 3, 3, 3, 10], np.int32)
    vi = np.arange(-1, 12, dtype=np.int32)
    unsorted = RNG.permutation(np.arange(20, dtype=np.float32) * 0.5)
    sorter = np.argsort(unsorted).astype(np.int32)
    vs = np.array([0.0, 0.25, 4.5, 9.5, 20.0], np.float32)

    def f(a, v, ai, vi, u, s, vs):
        return (knp.searchsorted(a, v, method=method), knp.searchsorted(a, v, side="right", method=method),
                knp.searchsorted(ai, vi, method=method), knp.searchsorted(ai, vi, side="right", method=method),
                knp.searchsorted(u, vs, sorter=s, method=method), knp.searchsorted(ai, 3, method=method),
                knp.searchsorted(ai[:0], vi, method=method), knp.searchsorted(ai[:1], vi, method=method))
    args = (SEARCH_A, SEARCH_V, ai, vi, unsorted, sorter, vs)
    for fn in (f, kiln.jit(f)):
        out = fn(*args)
        _eq(out[0], np.searchsorted(SEARCH_A, SEARCH_V))
        _eq(out[1], np.searchsorted(SEARCH_A, SEARCH_V, side="right"))
        _eq(out[2], np.searchsorted(ai, vi))
        _eq(out[3], np.searchsorted(ai, vi, side="right"))
        _eq(out[4], np.searchsorted(unsorted, vs, sorter=sorter))
        _eq(out[5], np.searchsorted(ai, 3))
        _eq(out[6], np.zeros(13, np.int32))
        _eq(out[7], np.searchsorted(ai[:1], vi))
        assert out[0].dtype == np.int32


def test_searchsorted_large_binary_search():
    a = np.sort(RNG.integers(0, 1000, 5000)).astype(np.int32)
    v = RNG.integers(-5, 1005, 300).astype(np.int32)
    got = kiln.jit(lambda a, v: (knp.searchsorted(a, v), knp.searchsorted(a, v, side="right")))(a, v)
    _eq(got[0], np.searchsorted(a, v))
    _eq(got[1], np.searchsorted(a, v, side="right"))
    ir = kiln.make_ir(lambda a, v: knp.searchsorted(a, v))(a, v)
    assert sum(e.prim.name == "gather" for e in ir.ir.eqns) == (5000).bit_length()  # log2(n) steps


def test_unique_eager():
    x = np.array([[3.0, np.nan, 1.0], [1.0, np.nan, -0.0], [0.0, 7.0, 3.0]], np.float32)
    got = knp.unique(knp.asarray(x), return_index=True, return_inverse=True, return_counts=True)
    want = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    assert len(got) == 4
    for g, w in zip(got, want):
        _eq(g, w)
    _eq(knp.unique(knp.asarray(x)), np.unique(x))
    _eq(knp.unique(knp.asarray(x), equal_nan=False), np.unique(x, equal_nan=False))
    ints = RNG.integers(0, 5, (4, 3)).astype(np.int32)
    ints[2] = ints[0]
    got = knp.unique(knp.asarray(ints), axis=0, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, np.unique(ints, axis=0, return_index=True, return_inverse=True, return_counts=True)):
        _eq(g, w)
    got = knp.unique(knp.asarray(ints), axis=1, return_counts=True)
    for g, w in zip(got, np.unique(ints, axis=1, return_counts=True)):
        _eq(g, w)
    _eq(knp.unique(knp.asarray(B)), np.unique(B))
    _eq(knp.unique(knp.asarray(np.zeros(0, np.int32))), np.zeros(0, np.int32))
    _eq(knp.unique(knp.asarray(np.float32(2.0))), np.array([2.0], np.float32))
    _eq(knp.unique(knp.asarray(np.zeros((3, 0), np.int32)), axis=0), np.unique(np.zeros((3, 0), np.int32), axis=0))


def test_unique_with_size_under_jit():
    x = np.array([4, 1, 4, 2, 1, 4], np.int32)

    def f(x):
        return (knp.unique(x, size=5, return_index=True, return_inverse=True, return_counts=True),
                knp.unique(x, size=2, return_counts=True), knp.unique(x, size=4, fill_value=-7),
                knp.unique_counts(x, size=3), knp.unique_all(x, size=3))
    (v, i, inv, c), (v2, c2), v3, uc, ua = kiln.jit(f)(x)
    _eq(v, [1, 2, 4, 1, 1])  # padded with the smallest unique value
    _eq(i, [1, 3, 0, 0, 0])
    _eq(inv, [2, 0, 2, 1, 0, 2])
    _eq(c, [2, 1, 3, 0, 0])
    _eq(v2, [1, 2])
    _eq(c2, [2, 1])
    _eq(v3, [1, 2, 4, -7])
    _eq(uc.values, [1, 2, 4])
    _eq(uc.counts, [2, 1, 3])
    _eq(ua.indices, [1, 3, 0])
    _eq(ua.inverse_indices, [2, 0, 2, 1, 0, 2])
    vals, inv = knp.unique_inverse(knp.asarray(x))
    _eq(vals[inv], x)
    _eq(knp.unique_values(knp.asarray(x)), [1, 2, 4])


def test_errors():
    x = knp.asarray(F)
    with pytest.raises(TypeError, match=r"kiln.numpy.sort: order= is not supported"):
        knp.sort(x, order="a")
    with pytest.raises(ValueError, match=r"kiln.numpy.sort: axis 1 is out of bounds for an array of dimension 1"):
        knp.sort(x, axis=1)
    with pytest.raises(ValueError, match=r"kiln.numpy.argsort: axis -1 is out of bounds for an array of dimension 0"):
        knp.argsort(knp.asarray(np.float32(1)))
    with pytest.raises(TypeError, match=r"kiln.numpy.sort: argument 0 is a list"):
        knp.sort([3, 1, 2])
    with pytest.raises(ValueError, match=r"kiln.numpy.searchsorted: side must be 'left' or 'right', got 'middle'"):
        knp.searchsorted(x, 1.0, side="middle")
    with pytest.raises(ValueError, match=r"kiln.numpy.searchsorted: a must be 1-D, got shape \(2, 5\)"):
        knp.searchsorted(knp.reshape(x, (2, 5)), 1.0)
    with pytest.raises(ValueError, match=r"kiln.numpy.searchsorted: unknown method 'fast'"):
        knp.searchsorted(x, 1.0, method="fast")
    with pytest.raises(ValueError, match=r"kiln.numpy.searchsorted: sorter must be a 1-D integer array"):
        knp.searchsorted(x, 1.0, sorter=np.arange(3))
    with pytest.raises(kiln.ConcretizationTypeError, match=r"kiln.numpy.unique: the number of unique values depends "
                                                           r"on the data.*pass a static size="):
        kiln.jit(lambda x: knp.unique(x))(F)
    with pytest.raises(ValueError, match=r"kiln.numpy.unique: size must be non-negative"):
        knp.unique(x, size=-1)
    with pytest.raises(ValueError, match=r"kiln.numpy.unique: axis 2 is out of bounds for an array of dimension 1"):
        knp.unique(x, axis=2)
    with pytest.raises(ValueError, match=r"kiln.numpy.unique: an empty array has no unique values to fill with"):
        knp.unique(knp.asarray(np.zeros(0, np.float32)), size=2)
    with pytest.raises(ValueError, match=r"kiln.numpy.unique: fill_value must be a scalar"):
        knp.unique(x, size=12, fill_value=np.zeros(2))
    with pytest.raises(TypeError, match=r"kiln.numpy.lexsort: needs at least one key"):
        knp.lexsort(())
    with pytest.raises(ValueError, match=r"kiln.numpy.lexsort: all keys need the same shape"):
        knp.lexsort((x, knp.asarray(np.zeros(3, np.float32))))
    with pytest.raises(ValueError, match=r"kiln.numpy.lexsort: keys must have at least one dimension"):
        knp.lexsort((knp.asarray(np.float32(1)),))


def test_module_exports():
    for name in sorting_impl.__all__:
        assert getattr(knp, name) is getattr(sorting_impl, name)
