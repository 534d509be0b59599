"""kiln.lax.sort / sort_key_val / argsort / top_k / clamp against NumPy, eagerly and under jit."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax

F = np.array([3.0, np.nan, -0.0, 0.0, 1.0, -np.inf, np.nan, 2.0, 1.0, np.inf], np.float32)
RNG = np.random.default_rng(0)
I2 = RNG.integers(-5, 5, (3, 6)).astype(np.int32)
B = np.array([True, False, True, False, False])
U8 = np.array([200, 3, 255, 0, 3], np.uint8)
EMPTY = np.zeros((0, 4), np.float32)
COLS0 = np.zeros((3, 0), np.int32)

# (operand, dimension) -> NumPy's stable sort along that dimension
SORT_CASES = [(F, -1), (F, 0), (I2, 0), (I2, 1), (B, 0), (U8, -1), (EMPTY, 0), (EMPTY, 1), (COLS0, 1),
              (F.reshape(2, 5), 1), (np.array([7.0], np.float32), 0)]


def _bits(x):
    """Compare floats bit for bit on sign of zero too: -0.0 and 0.0 keep their stable order."""
    x = np.asarray(x)
    return x.view(np.uint32) if x.dtype == np.float32 else x


def _check_sorted(got, x, dim):
    want = np.sort(x, axis=dim, kind="stable")
    order = np.argsort(x, axis=dim, kind="stable")
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_array_equal(_bits(got), _bits(np.take_along_axis(x, order, axis=dim)))
    np.testing.assert_array_equal(np.asarray(got), want)


def test_sort_eager():
    for x, dim in SORT_CASES:
        _check_sorted(lax.sort(knp.asarray(x), dimension=dim), x, dim)


def test_sort_jit_and_multi_operand():
    def f(args):
        outs = [lax.sort(x, dimension=d) for x, (_, d) in zip(args, SORT_CASES)]
        return outs
    outs = kiln.jit(f)([x for x, _ in SORT_CASES])
    for out, (x, dim) in zip(outs, SORT_CASES):
        _check_sorted(out, x, dim)


def test_multi_operand_num_keys():
    k1 = np.array([2, 1, 2, 1, 0, 2], np.int32)
    k2 = np.array([0.5, np.nan, -1.0, 3.0, 0.0, -1.0], np.float32)
    v = np.arange(6, dtype=np.int32)

    def f(k1, k2, v):
        one = lax.sort((k1, k2, v), num_keys=1)
        two = lax.sort([k1, k2, v], num_keys=2)
        skv = lax.sort_key_val(k2, v)
        return one, two, skv
    for fn in (f, kiln.jit(f)):
        one, two, skv = fn(k1, k2, v)
        assert isinstance(one, tuple) and len(one) == 3
        o1 = np.argsort(k1, kind="stable")
        np.testing.assert_array_equal(np.asarray(one[2]), v[o1])
        o2 = np.lexsort((k2, k1))  # NumPy: last key primary; NaN last
        np.testing.assert_array_equal(np.asarray(two[2]), v[o2])
        np.testing.assert_array_equal(np.asarray(two[1]), k2[o2])
        o3 = np.argsort(k2, kind="stable")
        np.testing.assert_array_equal(np.asarray(skv[1]), v[o3])
        np.testing.assert_array_equal(np.asarray(skv[0]), k2[o3])


def test_complex_sort_is_lexicographic():
    c = np.array([1 + 1j, np.nan + 0j, 1 + 0j, 0 + 2j, 1 - 1j], np.complex64)
    np.testing.assert_array_equal(np.asarray(lax.sort(knp.asarray(c))), np.sort(c))


def test_argsort_and_descending():
    x = np.array([[3, 1, 3, 0, 1], [2, 2, 2, 5, -1]], np.int32)

    def f(x, fl):
        return (lax.argsort(x), lax.argsort(x, dimension=0), lax.argsort(x, descending=True),
                lax.argsort(fl, descending=True))
    for fn in (f, kiln.jit(f)):
        a, a0, d, dfl = fn(x, F)
        np.testing.assert_array_equal(np.asarray(a), np.argsort(x, axis=-1, kind="stable"))
        np.testing.assert_array_equal(np.asarray(a0), np.argsort(x, axis=0, kind="stable"))
        # Descending and stable: largest first, equal values in index order.
        np.testing.assert_array_equal(np.asarray(d), np.argsort(-x, axis=-1, kind="stable"))
        # NaNs first when descending, then inf ... -inf; -0.0/0.0 keep index order.
        np.testing.assert_array_equal(np.asarray(dfl), [1, 6, 9, 0, 7, 4, 8, 2, 3, 5])
        assert a.dtype == np.int32


def test_top_k():
    x = RNG.integers(0, 4, (3, 9)).astype(np.float32)  # many ties

    def f(x, fl):
        return lax.top_k(x, 4), lax.top_k(x, 0), lax.top_k(fl, 3), lax.top_k(x, 9)
    for fn in (f, kiln.jit(f)):
        (v, i), (v0, i0), (vf, jf), (vall, iall) = fn(x, F)
        order = np.argsort(-x, axis=-1, kind="stable")
        np.testing.assert_array_equal(np.asarray(i), order[:, :4])
        np.testing.assert_array_equal(np.asarray(v), np.take_along_axis(x, order[:, :4], -1))
        np.testing.assert_array_equal(np.asarray(iall), order)
        assert v0.shape == (3, 0) and i0.shape == (3, 0) and i.dtype == np.int32
        np.testing.assert_array_equal(np.asarray(jf), [1, 6, 9])  # NaN counts as the largest
        np.testing.assert_array_equal(np.asarray(vf)[2], np.inf)
    ints = np.array([5, -3, 7, 7, 0], np.int32)
    v, i = lax.top_k(knp.asarray(ints), 2)
    np.testing.assert_array_equal(np.asarray(v), [7, 7])
    np.testing.assert_array_equal(np.asarray(i), [2, 3])


def test_clamp():
    x = np.array([-2.0, 0.5, 3.0, np.nan], np.float32)

    def f(x, lo, hi):
        return lax.clamp(0.0, x, 1.0), lax.clamp(lo, x, hi)
    lo, hi = np.full(4, -1, np.float32), np.array([0, 0, 2, 2], np.float32)
    for fn in (f, kiln.jit(f)):
        a, b = fn(x, lo, hi)
        np.testing.assert_array_equal(np.asarray(a), [0.0, 0.5, 1.0, np.nan])
        np.testing.assert_array_equal(np.asarray(b), [-1.0, 0.0, 2.0, np.nan])
    np.testing.assert_array_equal(np.asarray(lax.clamp(np.int32(1), np.arange(4, dtype=np.int32),
                                                        np.int32(2))), [1, 1, 2, 2])


def test_clamp_is_one_primitive_with_jaxs_derivative_at_the_bounds():
    """x's tangent passes strictly inside [min, max], min's where min > x (and min < max), max's where max < x: at a
    bound no operand gets it (min and max would split it in halves), nor where min > max for max."""
    grad3 = kiln.grad(lambda lo, x, hi: lax.clamp(lo, x, hi), argnums=(0, 1, 2))
    for (lo, x, hi), want in [((0.0, 0.5, 1.0), (0, 1, 0)), ((0.0, 0.0, 1.0), (0, 0, 0)), ((0.0, 1.0, 1.0), (0, 0, 0)),
                              ((0.0, -2.0, 1.0), (1, 0, 0)), ((0.0, 3.0, 1.0), (0, 0, 1)), ((2.0, 1.5, 1.0), (0, 0, 1)),
                              ((2.0, 0.5, 1.0), (0, 0, 0))]:
        got = [float(g) for g in grad3(np.float32(lo), np.float32(x), np.float32(hi))]
        assert got == list(want), (lo, x, hi, got)
    x = knp.asarray(np.array([-1.0, 0.0, 0.5, 1.0, 2.0], np.float32))
    _, t = kiln.jvp(lambda x: lax.clamp(0.0, x, 1.0), (x,), (knp.ones(5),))
    np.testing.assert_array_equal(np.asarray(t), [0, 0, 1, 0, 0])
    jaxpr = kiln.make_jaxpr(lambda x: lax.clamp(0.0, x, 1.0))(np.float32(0.5))
    assert [e.primitive.name for e in jaxpr.eqns] == ["clamp"] and jaxpr.eqns[0].primitive is lax.clamp_p
    assert kiln.jit(lambda x: lax.clamp(0.0, x, 1.0)).lower(x).as_text().count("stablehlo.clamp") == 1
    # vmap: a batched bound, an unbatched x; the index of switch is clamped by it
    np.testing.assert_array_equal(np.asarray(kiln.vmap(lambda lo: lax.clamp(lo, x, 1.0))(knp.arange(2.0))),
                                  [[0, 0, 0.5, 1, 1], [1, 1, 1, 1, 1]])
    assert "clamp" in [e.primitive.name for e in kiln.make_jaxpr(
        lambda i: lax.switch(i, [lambda: 1.0, lambda: 2.0]))(1).eqns]


def test_lowers_to_stablehlo_sort():
    text = kiln.jit(lambda x: lax.sort(x)).lower(F).as_text()
    assert "stablehlo.sort" in text and "is_stable = true" in text


def test_errors():
    x = knp.asarray(F)
    with pytest.raises(ValueError, match=r"kiln.lax.sort: cannot sort a 0-d array"):
        lax.sort(knp.asarray(np.float32(1.0)))
    with pytest.raises(ValueError, match=r"kiln.lax.sort: dimension 1 is out of bounds for an array of dimension 1"):
        lax.sort(x, dimension=1)
    with pytest.raises(TypeError, match=r"kiln.lax.sort: dimension must be an int"):
        lax.sort(x, dimension=0.5)
    with pytest.raises(ValueError, match=r"kiln.lax.sort: num_keys=3 must be between 1 and the number of operands"):
        lax.sort((x, x), num_keys=3)
    with pytest.raises(ValueError, match=r"kiln.lax.sort: all operands must have the same shape"):
        lax.sort((x, knp.asarray(np.zeros(3, np.float32))))
    with pytest.raises(ValueError, match=r"kiln.lax.sort: needs at least one operand"):
        lax.sort(())
    with pytest.raises(ValueError, match=r"kiln.lax.top_k: k=11 must be between 0 and the size of the last axis"):
        lax.top_k(x, 11)
    with pytest.raises(TypeError, match=r"kiln.lax.top_k: k must be a static int"):
        lax.top_k(x, 2.0)
    with pytest.raises(TypeError, match=r"kiln.lax.top_k: complex arrays have no order"):
        lax.top_k(knp.asarray(np.ones(3, np.complex64)), 1)
    with pytest.raises(ValueError, match=r"kiln.lax.top_k: the operand must have at least one dimension"):
        lax.top_k(knp.asarray(np.float32(1)), 1)
    with pytest.raises(TypeError, match=r"kiln.lax.clamp: min has dtype int32 but x has float32"):
        lax.clamp(np.int32(0), x, 1.0)
    with pytest.raises(TypeError, match=r"kiln.lax.clamp: max must be a scalar or have x's shape"):
        lax.clamp(0.0, x, knp.asarray(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match=r"kiln.lax.argsort: cannot sort a 0-d array"):
        lax.argsort(knp.asarray(np.float32(1)))
