"""kiln.lax.cond / switch / select_n and kiln.numpy.where / select / piecewise against their
Python-level definitions (``cond`` is if/else, ``switch`` indexes a list of functions) and NumPy,
eagerly and under jit; their StableHLO (``stablehlo.case``) and their printed IR."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax


def py_cond(pred, true_fun, false_fun, *operands):
    """The seed's Python-level definition of cond."""
    if pred:
        return true_fun(*operands)
    else:
        return false_fun(*operands)


# -- the seed's example ------------------------------------------------------------------------------------

def test_seed_example_eager_and_jit():
    operand = knp.array([0.0])
    t = lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand)
    f = lax.cond(False, lambda x: x + 1, lambda x: x - 1, operand)
    np.testing.assert_array_equal(np.asarray(t), np.array([1.0], np.float32))
    np.testing.assert_array_equal(np.asarray(f), np.array([-1.0], np.float32))
    assert f.dtype == np.float32 and f.shape == (1,)
    jf = kiln.jit(lambda p, x: lax.cond(p, lambda x: x + 1, lambda x: x - 1, x))
    np.testing.assert_array_equal(np.asarray(jf(True, operand)), [1.0])
    np.testing.assert_array_equal(np.asarray(jf(False, operand)), [-1.0])
    assert jf(False, operand).dtype == np.float32


# -- semantics: if/else ------------------------------------------------------------------------------------

def _true(x, y):
    return {"s": x * 2 + y, "t": (knp.sin(x), y)}


def _false(x, y):
    return {"s": x - y, "t": (knp.cos(x), -y)}


@pytest.mark.parametrize("pred", [True, False, 1, 0, -3, np.bool_(True), np.int32(0)])
def test_cond_matches_if_else_eager_and_jit(pred):
    x = np.linspace(-1, 1, 4).astype(np.float32)
    y = np.float32(0.5)
    expected = py_cond(bool(pred), lambda a, b: _true(a, b), lambda a, b: _false(a, b), x, y)
    got = lax.cond(pred, _true, _false, x, y)
    got_jit = _jit_cond(pred, x, y)
    for out in (got, got_jit):
        np.testing.assert_allclose(np.asarray(out["s"]), np.asarray(expected["s"]), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(out["t"][0]), np.asarray(expected["t"][0]), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(out["t"][1]), np.asarray(expected["t"][1]), rtol=1e-6)


_jit_cond = kiln.jit(lambda p, x, y: lax.cond(p, _true, _false, x, y))


def test_cond_no_operands_and_closures():
    c = knp.arange(3.0)
    f = kiln.jit(lambda p, k: lax.cond(p, lambda: c * k, lambda: c + k))
    np.testing.assert_allclose(np.asarray(f(True, 2.0)), [0.0, 2.0, 4.0])
    np.testing.assert_allclose(np.asarray(f(False, 2.0)), [2.0, 3.0, 4.0])
    assert float(lax.cond(False, lambda: 1.0, lambda: 2.0)) == 2.0


def test_cond_traced_predicate_from_data():
    f = kiln.jit(lambda x: lax.cond(x.sum() > 0, lambda x: x * 10, lambda x: -x, x))
    for x in (np.array([1.0, 2.0], np.float32), np.array([-1.0, -2.0], np.float32)):
        np.testing.assert_allclose(np.asarray(f(x)), x * 10 if x.sum() > 0 else -x)


def test_cond_weak_types():
    # As JAX's cond_p: the result has the first branch's type (cond's false_fun, switch's branches[0]), weak
    # or not, whichever branch runs; the dtype is every branch's.
    f = kiln.jit(lambda p: lax.cond(p, lambda: 1.0, lambda: 2.0))
    assert f(True).weak_type and float(f(False)) == 2.0
    g = kiln.jit(lambda p: lax.cond(p, lambda: knp.float32(1.0), lambda: 2.0))
    for p, value in ((False, 2.0), (True, 1.0)):
        out = g(p)
        assert out.weak_type and out.dtype == np.float32 and float(out) == value
    h = lax.cond(True, lambda: 1.0, lambda: knp.float32(2.0))
    assert not h.weak_type and float(h) == 1.0
    s = lax.switch(1, [lambda x: x * 2, lambda x: knp.float32(1.0) + x], 3.0)
    assert s.weak_type and float(s) == 4.0
    # Derivatives: a cotangent has its primal's type (a Python float argument: weak), the tangent the primal
    # output's.
    d = kiln.grad(lambda y: lax.cond(y > 0, knp.sin, knp.cos, y))
    assert d(3.0).weak_type and not d(knp.float32(3.0)).weak_type
    np.testing.assert_allclose(float(d(3.0)), np.cos(3.0), rtol=1e-6)
    _, t = kiln.jvp(lambda y: lax.cond(y > 0, knp.sin, knp.cos, y), (3.0,), (1.0,))
    assert t.weak_type


def test_eager_cond_traces_both_branches_as_jax():
    """As JAX: a concrete predicate still traces both branches (their types are checked) and runs one
    program; only under disable_jit does it run just the chosen branch, eagerly."""
    calls = []

    def t(x):
        calls.append("true")
        return x + 1

    def f(x):
        calls.append("false")
        return x - 1

    assert float(lax.cond(True, t, f, 1.0)) == 2.0
    assert sorted(calls) == ["false", "true"]
    calls.clear()
    assert float(lax.cond(knp.array(False), t, f, 1.0)) == 0.0
    assert sorted(calls) == ["false", "true"]
    calls.clear()
    with kiln.disable_jit():
        assert float(lax.cond(True, t, f, 1.0)) == 2.0
    assert calls == ["true"]
    # Under jit both branches are traced (once each), and the choice happens at run time.
    calls.clear()
    jf = kiln.jit(lambda p, x: lax.cond(p, t, f, x))
    assert float(jf(True, 1.0)) == 2.0 and float(jf(False, 1.0)) == 0.0
    assert sorted(calls) == ["false", "true"]


def test_concrete_predicate_still_checks_branch_types():
    with pytest.raises(TypeError, match=r"kiln.lax.cond: branches must return the same shapes and dtypes, but "
                                        r"false_fun \(<lambda>\) returned \(i32\[\]\) and true_fun"):
        lax.cond(True, lambda: np.float32(1), lambda: np.int32(1))
    with pytest.raises(TypeError, match=r"kiln.lax.switch: branches must return the same shapes and dtypes"):
        lax.switch(0, [lambda: np.float32(1), lambda: np.ones(2, np.float32)])


# -- switch ------------------------------------------------------------------------------------------------

BRANCHES = [lambda x: x + 1, lambda x: x * 10, lambda x: x - 100]


def py_switch(index, branches, *operands):
    return branches[min(max(index, 0), len(branches) - 1)](*operands)


def test_switch_clamps_index_eager_and_jit():
    jf = kiln.jit(lambda i, x: lax.switch(i, BRANCHES, x))
    for i in (-5, -1, 0, 1, 2, 3, 100):
        expected = py_switch(i, BRANCHES, 1.5)
        assert float(lax.switch(i, BRANCHES, 1.5)) == expected
        assert float(lax.switch(np.int32(i), BRANCHES, 1.5)) == expected
        assert float(jf(i, 1.5)) == expected


def test_eager_switch_traces_every_branch_and_disable_jit_runs_one():
    calls = []
    branches = [lambda k=k: (calls.append(k), np.float32(k))[1] for k in range(3)]
    assert float(lax.switch(7, branches)) == 2.0
    assert sorted(calls) == [0, 1, 2]
    calls.clear()
    with kiln.disable_jit():
        assert float(lax.switch(7, branches)) == 2.0
    assert calls == [2]


def test_switch_single_branch_and_pytrees():
    assert float(lax.switch(5, [lambda x: x * 2], 3.0)) == 6.0
    f = kiln.jit(lambda i, a: lax.switch(i, [lambda a: (a, a + 1), lambda a: (a * 2, a * 3)], a))
    out = f(1, np.float32(2.0))
    assert isinstance(out, tuple) and float(out[0]) == 4.0 and float(out[1]) == 6.0


# -- lowering and IR ---------------------------------------------------------------------------------------

def test_cond_and_switch_lower_to_case():
    x = np.zeros(2, np.float32)
    text = kiln.jit(lambda p, x: lax.cond(p, lambda x: knp.sin(x), lambda x: knp.cos(x), x)).lower(True, x).as_text()
    assert "stablehlo.case" in text
    assert "stablehlo.select" not in text  # not both branches plus a select
    text = kiln.jit(lambda i, x: lax.switch(i, [knp.sin, knp.cos, knp.tanh], x)).lower(1, x).as_text()
    assert text.count("stablehlo.case") == 1
    assert all(op in text for op in ("stablehlo.sine", "stablehlo.cosine", "stablehlo.tanh"))


def test_cond_ir_prints_branches_as_jax_does():
    text = str(kiln.make_ir(lambda p, x: lax.cond(p, lambda x: knp.sin(x), lambda x: knp.cos(x), x))(True, 1.0))
    # what JAX's make_jaxpr prints for the same function: the branches inline, as the branches= parameter
    assert text == ("{ lambda ; a:bool[] b:f32[]. let\n"
                    "    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
                    "    d:f32[] = cond[\n"
                    "      branches=(\n"
                    "        { lambda ; e:f32[]. let f:f32[] = cos e in (f,) }\n"
                    "        { lambda ; g:f32[]. let h:f32[] = sin g in (h,) }\n"
                    "      )\n"
                    "    ] c b\n"
                    "  in (d,) }")


# -- select_n, where, select, piecewise --------------------------------------------------------------------

def test_select_n():
    rng = np.random.default_rng(0)
    cases = [rng.standard_normal(5).astype(np.float32) for _ in range(3)]
    which = np.array([0, 2, 1, 1, 0], np.int32)
    expected = np.choose(which, cases)
    np.testing.assert_array_equal(np.asarray(lax.select_n(which, *cases)), expected)
    np.testing.assert_array_equal(np.asarray(kiln.jit(lax.select_n)(which, *cases)), expected)
    b = np.array([True, False, True, False, False])
    np.testing.assert_array_equal(np.asarray(lax.select_n(b, cases[0], cases[1])), np.where(b, cases[1], cases[0]))
    np.testing.assert_array_equal(np.asarray(lax.select_n(True, cases[0], cases[1])), cases[1])
    np.testing.assert_array_equal(np.asarray(lax.select_n(np.int32(2), *cases)), cases[2])
    np.testing.assert_array_equal(np.asarray(lax.select_n(which, cases[0])), cases[0])


def test_where_select_piecewise_match_numpy():
    x = np.linspace(-2, 2, 9).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(knp.where(x > 0, x, -x)), np.where(x > 0, x, -x))
    condlist, choicelist = [x < -1, x > 1], [x * 2, x * 3]
    np.testing.assert_allclose(np.asarray(knp.select(condlist, choicelist, 7.0)), np.select(condlist, choicelist, 7.0))
    np.testing.assert_allclose(np.asarray(knp.select(condlist, choicelist)), np.select(condlist, choicelist))
    # Overlapping conditions: select takes the first, piecewise the last (as NumPy).
    over = [x < 1, x > -1]
    np.testing.assert_allclose(np.asarray(knp.select(over, [x, -x])), np.select(over, [x, -x]))
    funcs = [lambda v: -v, lambda v: v ** 2]
    np.testing.assert_allclose(np.asarray(knp.piecewise(x, over, funcs)), np.piecewise(x, over, funcs))
    np.testing.assert_allclose(np.asarray(knp.piecewise(x, [x < 0], [lambda v: -v, 5.0])),
                               np.piecewise(x, [x < 0], [lambda v: -v, 5.0]))
    xi = np.arange(-3, 4)
    np.testing.assert_array_equal(np.asarray(knp.piecewise(xi, [xi < 0], [lambda v: -v, lambda v: v * 10])),
                                  np.piecewise(xi, [xi < 0], [lambda v: -v, lambda v: v * 10]))
    jf = kiln.jit(lambda x: (knp.select([x < 0, x > 1], [-x, x * x], x),
                             knp.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * v, lambda v: v])))
    s, p = jf(x)
    np.testing.assert_allclose(np.asarray(s), np.select([x < 0, x > 1], [-x, x * x], x))
    np.testing.assert_allclose(np.asarray(p), np.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * v,
                                                                                lambda v: v]))
