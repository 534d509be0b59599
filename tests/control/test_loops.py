"""kiln.lax.while_loop / fori_loop / map / associative_scan against their Python-level definitions
(``while_loop`` is a while statement, ``fori_loop`` a for loop) and NumPy, eagerly and under jit;
the seed's printed results; nesting; kiln's ``max_steps=`` bound."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax


def py_while_loop(cond_fun, body_fun, init_val):
    val = init_val
    while cond_fun(val):
        val = body_fun(val)
    return val


def py_fori_loop(start, stop, body_fun, init_val):
    val = init_val
    for i in range(start, stop):
        val = body_fun(i, val)
    return val


# -- the seed's examples -----------------------------------------------------------------------------------

def test_seed_while_loop_to_10():
    out = lax.while_loop(lambda x: x < 10, lambda x: x + 1, 0)
    assert int(out) == 10 and out.dtype == np.int32 and out.weak_type
    out = kiln.jit(lambda v: lax.while_loop(lambda x: x < 10, lambda x: x + 1, v))(0)
    assert int(out) == 10 and out.dtype == np.int32


def test_seed_fori_loop_sum_45():
    out = lax.fori_loop(0, 10, lambda i, x: x + i, 0)
    assert int(out) == 45 and out.dtype == np.int32 and out.weak_type  # as the seed prints it
    out = kiln.jit(lambda lo, hi: lax.fori_loop(lo, hi, lambda i, x: x + i, 0))(0, 10)  # traced bounds
    assert int(out) == 45 and out.dtype == np.int32


# -- while_loop --------------------------------------------------------------------------------------------

def _collatz_cond(c):
    return c[0] != 1


def _collatz_body(c):
    n, steps = c
    return knp.where(n % 2 == 0, n // 2, 3 * n + 1), steps + 1


def test_while_loop_matches_python_while():
    jf = kiln.jit(lambda n: lax.while_loop(_collatz_cond, _collatz_body, (n, 0)))
    for n in (1, 6, 7, 27):
        expected = py_while_loop(lambda c: c[0] != 1, lambda c: (c[0] // 2 if c[0] % 2 == 0 else 3 * c[0] + 1,
                                                                 c[1] + 1), (n, 0))
        for got in (lax.while_loop(_collatz_cond, _collatz_body, (np.int32(n), 0)), jf(np.int32(n))):
            assert (int(got[0]), int(got[1])) == expected


def test_while_loop_pytree_carry_consts_and_zero_trips():
    scale = knp.array([1.0, 2.0])

    def body(s):
        return {"i": s["i"] + 1, "x": s["x"] * scale + 1.0}

    f = kiln.jit(lambda s: lax.while_loop(lambda s: s["i"] < 3, body, s))
    out = f({"i": np.int32(0), "x": np.zeros(2, np.float32)})
    expected = py_while_loop(lambda s: s["i"] < 3, lambda s: {"i": s["i"] + 1, "x": s["x"] * np.array([1., 2.]) + 1},
                             {"i": 0, "x": np.zeros(2)})
    assert int(out["i"]) == 3
    np.testing.assert_allclose(np.asarray(out["x"]), expected["x"])
    out = f({"i": np.int32(5), "x": np.ones(2, np.float32)})  # cond false at once: the init comes back
    assert int(out["i"]) == 5
    np.testing.assert_array_equal(np.asarray(out["x"]), [1.0, 1.0])


def test_while_loop_weak_carry_takes_body_type():
    # As JAX: a Python-scalar (weakly typed) init takes the body's dtype.
    out = lax.while_loop(lambda c: c < 3, lambda c: c + 1.5, 0)
    assert out.dtype == np.float32 and float(out) == 3.0


def test_while_lowers_to_stablehlo_while():
    text = kiln.jit(lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)).lower(1.0).as_text()
    assert text.count("stablehlo.while") == 1 and "stablehlo.compare" in text


# -- fori_loop ---------------------------------------------------------------------------------------------

def test_fori_loop_matches_python_for_static_and_traced_bounds():
    def body(i, c):
        return c * 0.5 + i

    traced = kiln.jit(lambda lo, hi, c: lax.fori_loop(lo, hi, body, c))
    for lo, hi in ((0, 5), (2, 7), (3, 3), (5, 2), (-2, 2)):
        expected = py_fori_loop(lo, hi, body, 1.0)
        np.testing.assert_allclose(float(lax.fori_loop(lo, hi, body, 1.0)), expected, rtol=1e-6)
        np.testing.assert_allclose(float(traced(lo, hi, 1.0)), expected, rtol=1e-6)
    static = kiln.jit(lambda c: lax.fori_loop(0, 5, body, c))
    np.testing.assert_allclose(float(static(1.0)), py_fori_loop(0, 5, body, 1.0), rtol=1e-6)
    # Static bounds are a scan (a stablehlo.while over a counter); traced bounds a while loop.
    assert "stablehlo.while" in static.lower(1.0).as_text()
    assert "stablehlo.while" in traced.lower(0, 5, 1.0).as_text()


def test_fori_loop_index_is_weak_and_keeps_the_carry_dtype():
    # With Python-int bounds the index is weakly typed (as JAX), so an int8 carry stays int8.
    out = lax.fori_loop(0, 10, lambda i, x: x + i, knp.int8(0))
    assert out.dtype == np.int8 and int(out) == 45
    out = kiln.jit(lambda n: lax.fori_loop(0, n, lambda i, x: x + i, knp.int8(0)))(10)
    assert out.dtype == np.int8 and int(out) == 45
    out = lax.fori_loop(np.int16(0), np.int16(4), lambda i, x: x + i, 0)  # typed bounds: index of their dtype
    assert out.dtype == np.int16 and int(out) == 6
    with kiln.config.override("enable_x64", True):
        out = lax.fori_loop(0, 10, lambda i, x: x + i, 0)
        assert out.dtype == np.int64 and int(out) == 45
        assert int(lax.fori_loop(3, 3, lambda i, c: c + i, 0)) == 0


def test_fori_loop_unroll_same_result():
    body = lambda i, c: (c[0] * 0.9 + i, c[1] + c[0])  # noqa: E731
    ref = lax.fori_loop(0, 7, body, (1.0, 0.0))
    for unroll in (2, 3, True):
        got = kiln.jit(lambda c: lax.fori_loop(0, 7, body, c, unroll=unroll))((1.0, 0.0))
        np.testing.assert_allclose([float(g) for g in got], [float(r) for r in ref], rtol=1e-6)


# -- max_steps (kiln's extension) --------------------------------------------------------------------------

def test_while_loop_max_steps_forward_values():
    cond, body = (lambda c: c[0] < 4), (lambda c: (c[0] + 1, c[1] * 1.5))
    unbounded = lax.while_loop(cond, body, (0, 1.0))
    bounded = kiln.jit(lambda v: lax.while_loop(cond, body, v, max_steps=10))((0, 1.0))
    assert int(bounded[0]) == int(unbounded[0]) == 4
    np.testing.assert_allclose(float(bounded[1]), float(unbounded[1]))
    # Fewer steps than the loop needs: it stops after max_steps iterations.
    short = lax.while_loop(cond, body, (0, 1.0), max_steps=2)
    assert int(short[0]) == 2 and float(short[1]) == 2.25
    out = kiln.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0, max_steps=8))(5)
    assert int(out) == 10


# -- map and associative_scan ------------------------------------------------------------------------------

def test_map_matches_list_comprehension():
    xs = {"a": np.arange(6.0, dtype=np.float32), "b": np.arange(12.0, dtype=np.float32).reshape(6, 2)}
    f = lambda d: {"s": d["a"] + d["b"].sum(), "p": d["b"] * d["a"]}  # noqa: E731
    expected = [f({"a": xs["a"][i], "b": xs["b"][i]}) for i in range(6)]
    for out in (lax.map(f, xs), lax.map(f, xs, batch_size=3), kiln.jit(lambda xs: lax.map(f, xs, batch_size=2))(xs)):
        np.testing.assert_allclose(np.asarray(out["s"]), np.stack([e["s"] for e in expected]))
        np.testing.assert_allclose(np.asarray(out["p"]), np.stack([e["p"] for e in expected]))


def test_associative_scan_matches_numpy_cumulative_ops():
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 5, 8, 13):
        x = rng.uniform(0.5, 1.5, n).astype(np.float32)
        np.testing.assert_allclose(np.asarray(lax.associative_scan(knp.add, x)), np.cumsum(x), rtol=1e-5)
    m = rng.uniform(0.5, 1.5, (3, 7)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(lax.associative_scan(knp.multiply, m, axis=1)), np.cumprod(m, axis=1),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(lax.associative_scan(knp.add, m, axis=-1, reverse=True)),
                               np.cumsum(m[:, ::-1], axis=1)[:, ::-1], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(kiln.jit(lambda m: lax.associative_scan(knp.maximum, m, axis=0))(m)),
                               np.maximum.accumulate(m, axis=0))
    np.testing.assert_allclose(np.asarray(lax.associative_scan(knp.add, m, reverse=True)),
                               np.cumsum(m[::-1], axis=0)[::-1], rtol=1e-5)


def test_associative_scan_pytree_linear_recurrence():
    # h_t = a_t * h_{t-1} + b_t as a scan of affine maps, against the Python loop.
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0.5, 1.0, 9).astype(np.float32), rng.standard_normal(9).astype(np.float32)
    combine = lambda l, r: (l[0] * r[0], r[0] * l[1] + r[1])  # noqa: E731
    got = kiln.jit(lambda a, b: lax.associative_scan(combine, (a, b))[1])(a, b)
    h, expected = np.float32(0), []
    for ai, bi in zip(a, b):
        h = ai * h + bi
        expected.append(h)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-6)


# -- nesting -----------------------------------------------------------------------------------------------

def test_loops_inside_loops_under_jit():
    def f(n):
        def body(c):
            k, total = c
            inner = lax.fori_loop(0, k, lambda i, s: s + i, 0)  # traced bound: a while inside a while
            return k + 1, total + inner
        return lax.while_loop(lambda c: c[0] < n, body, (0, 0))[1]

    expected = sum(sum(range(k)) for k in range(6))
    assert int(kiln.jit(f)(6)) == expected
    assert int(f(6)) == expected

    def g(x):  # a while loop and a cond inside a scan inside a fori_loop
        def step(c, xi):
            c = lax.cond(xi > 0, lambda c: c + xi, lambda c: c - 1.0, c)
            c = lax.while_loop(lambda v: v > 10.0, lambda v: v / 2.0, c)
            return c, c
        return lax.fori_loop(0, 3, lambda i, c: lax.scan(step, c, x)[0], 0.0)

    x = np.array([3.0, -1.0, 8.0, 4.0], np.float32)

    def np_g(x):
        c = 0.0
        for _ in range(3):
            for xi in x:
                c = c + xi if xi > 0 else c - 1.0
                while c > 10.0:
                    c = c / 2.0
        return c

    np.testing.assert_allclose(float(kiln.jit(g)(x)), np_g(x), rtol=1e-6)


@pytest.mark.parametrize("jitted", [False, True])
def test_while_loop_cond_consts_closure(jitted):
    limit = knp.float32(100.0)
    f = lambda x: lax.while_loop(lambda c: c * c < limit, lambda c: c + x, 0.0)  # noqa: E731
    f = kiln.jit(f) if jitted else f
    assert float(f(np.float32(3.0))) == 12.0
