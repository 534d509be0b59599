"""IR passes before emission: inlining of calls, common subexpressions, dead code."""
from __future__ import annotations

import numpy as np
from kiln.frontend.core import passes

import kiln
import kiln.numpy as knp
from kiln import lax

X = np.array([0.5, -1.0, 2.0], np.float32)


def _ir(f, *args):
    return kiln.make_ir(f)(*args).ir


def _prims(ir):
    return [e.prim.name for e in ir.eqns]


def _text(f, *args, **jit_kw):
    return kiln.jit(f, **jit_kw).lower(*args).as_text()


# -- dead code --------------------------------------------------------------------------------

def test_dce_removes_unused_equations():
    def f(x):
        unused = knp.sin(x) * 3.0  # noqa: F841 - dead on purpose
        knp.exp(x)
        return knp.cos(x)

    ir = _ir(f, X)
    assert "sin" in _prims(ir) and "exp" in _prims(ir)  # tracing records everything
    out = passes.eliminate_dead_code(ir)
    assert _prims(out) == ["cos"]
    assert out.invars == ir.invars and out.outvars == ir.outvars
    text = _text(f, X)
    assert "stablehlo.sine" not in text and "stablehlo.exponential" not in text and "stablehlo.cosine" in text
    np.testing.assert_allclose(np.asarray(kiln.jit(f)(X)), np.cos(X), rtol=1e-6)


def test_dce_keeps_chains_that_reach_an_output():
    def f(x):
        a = knp.sin(x)
        b = a * 2.0
        c = knp.exp(b)  # noqa: F841
        return b + 1.0, x

    out = passes.eliminate_dead_code(_ir(f, X))
    assert _prims(out) == ["sin", "broadcast_in_dim", "mul", "broadcast_in_dim", "add"]


def test_dce_of_an_input_only_program():
    out = passes.eliminate_dead_code(_ir(lambda x, y: (knp.sin(y), x)[1], X, X))
    assert out.eqns == []
    assert passes.used_inputs(out) == [True, False]


# -- common subexpressions --------------------------------------------------------------------

def _tanh(v):
    return knp.tanh(v)  # one source position for every call: the duplicates one operation makes


def _exp_twice(v):
    return knp.exp(v) * 2.0


def test_cse_merges_duplicates():
    def f(x):
        return _tanh(x) + _tanh(x)

    ir = _ir(f, X)
    assert _prims(ir).count("tanh") == 2
    out = passes.eliminate_common_subexpressions(ir)
    assert _prims(out).count("tanh") == 1
    add = out.eqns[-1]
    assert add.prim.name == "add" and add.inputs[0] is add.inputs[1]
    text = _text(f, X)
    assert text.count("stablehlo.tanh") == 1
    np.testing.assert_allclose(np.asarray(kiln.jit(f)(X)), 2 * np.tanh(X), rtol=1e-6)


def test_cse_leaves_transposes_to_xla():
    # A transpose read twice blocks XLA's sinking of transposes through elementwise operations (and so changes how
    # it reassociates them: jit(jacfwd(f)) rounded otherwise than JAX's, which does not deduplicate); XLA's own CSE,
    # after its simplifier, merges them.
    a = np.float32([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]])
    w = np.float32([-2.4424558, -2.0356805, 0.20553663])
    jf = kiln.jacfwd(lambda w, a: knp.tanh(knp.dot(a, w) / 2))
    assert _text(jf, w, a).count("stablehlo.transpose") == 3  # two of the same value, and the result's
    optimized = kiln.jit(jf).lower(w, a).compile().as_text()
    assert "transpose(" not in optimized.split("ENTRY")[0]  # XLA sank them: no transpose in the fusion
    h = np.tanh(a.astype(np.float64) @ w / 2)
    np.testing.assert_allclose(kiln.jit(jf)(w, a), (1 - h * h)[:, None] * a / 2, rtol=1e-5)
    def f(x):
        return lax.transpose(x, (1, 0)) + lax.transpose(x, (1, 0))
    assert _prims(passes.eliminate_common_subexpressions(_ir(f, a))).count("transpose") == 2


def test_cse_is_transitive_and_merges_literal_broadcasts():
    def f(x):
        a = _exp_twice(x)
        b = _exp_twice(x)
        return a - b, a * b

    out = passes.eliminate_common_subexpressions(_ir(f, X))
    assert _prims(out) == ["exp", "broadcast_in_dim", "mul", "sub", "mul"]
    text = _text(f, X)
    assert text.count("stablehlo.exponential") == 1 and text.count("stablehlo.multiply") == 2


def test_cse_leaves_a_users_repeated_expressions_to_xla():
    # As JAX's programs, which reach XLA undeduplicated: log(s * s) + x / (s * s) keeps both products, so XLA's
    # simplifier (which runs before its CSE) sees x / broadcast(s * s) with one user, as in JAX's program, and the
    # result has JAX's bits (merged, it rounded otherwise in a quarter of the elements)
    def f(x, s):
        return knp.log(s * s) + x / (s * s)

    x, s = np.ones((4, 3), np.float32), np.full(3, 2.0, np.float32)
    out = passes.eliminate_common_subexpressions(_ir(f, x, s))
    assert _prims(out).count("mul") == 2
    assert _text(f, x, s).count("stablehlo.multiply") == 2
    np.testing.assert_allclose(kiln.jit(f)(x, s), np.log(s * s) + x / (s * s), rtol=1e-6)


def test_cse_keeps_different_parameters_literals_and_dtypes():
    m = np.arange(6, dtype=np.float32).reshape(2, 3)

    def f(x):
        return (lax.reduce_sum(x, (0,)), lax.reduce_sum(x, (1,)),  # different params
                lax.broadcast_in_dim(lax.literal(0, np.int32), (3,), ()),  # 0 and 0.0: same bytes
                lax.broadcast_in_dim(lax.literal(0.0, np.float32), (3,), ()),
                lax.broadcast_in_dim(lax.literal(-0.0, np.float32), (3,), ()),  # -0.0 is not 0.0
                lax.broadcast_in_dim(lax.literal(1.0, np.float32), (3,), ()))

    out = passes.eliminate_common_subexpressions(_ir(f, m))
    assert _prims(out) == ["reduce_sum", "reduce_sum"] + ["broadcast_in_dim"] * 4
    res = kiln.jit(f)(m)
    np.testing.assert_array_equal(np.asarray(res[0]), m.sum(0))
    np.testing.assert_array_equal(np.asarray(res[1]), m.sum(1))
    assert res[2].dtype == np.int32 and res[3].dtype == np.float32
    assert np.signbit(np.asarray(res[4])).all() and not np.signbit(np.asarray(res[3])).any()


def test_cse_does_not_merge_different_operands():
    out = passes.eliminate_common_subexpressions(_ir(lambda x, y: (knp.sin(x), knp.sin(y)), X, X))
    assert _prims(out) == ["sin", "sin"]
    res = kiln.jit(lambda x, y: (knp.sin(x), knp.sin(y)))(X, X * 2)
    np.testing.assert_allclose(np.asarray(res[1]), np.sin(X * 2), rtol=1e-6)


# -- inlining ---------------------------------------------------------------------------------

def test_nested_jit_calls_are_inlined():
    inner = kiln.jit(lambda a: knp.sin(a) * 2.0)
    middle = kiln.jit(lambda a: inner(a) + inner(a + 1.0))

    def outer(a):
        return middle(a) * inner(a)

    ir = _ir(outer, X)
    assert "jit_call" in _prims(ir)
    flat = passes.inline_calls(ir)
    assert "jit_call" not in _prims(flat)
    assert _prims(flat).count("sin") == 3
    text = _text(outer, X)
    assert "call" not in text.replace("custom_call", "")  # no func.call: one function, @main
    assert text.count("func.func") == 1
    # CSE after inlining: inner(a) computed once although it is called twice
    assert text.count("stablehlo.sine") == 2
    want = (np.sin(X) * 2 + np.sin(X + 1) * 2) * (np.sin(X) * 2)
    np.testing.assert_allclose(np.asarray(kiln.jit(outer)(X)), want, rtol=1e-6)


def test_inlined_call_with_closure_constants():
    c = knp.asarray(np.float32([1.0, 2.0, 3.0]))
    inner = kiln.jit(lambda a: a * c)
    flat = passes.optimize(_ir(lambda a: inner(a) + inner(a), X))
    assert _prims(flat) == ["mul", "add"]
    np.testing.assert_array_equal(np.asarray(kiln.jit(lambda a: inner(a) + inner(a))(X)), X * [1, 2, 3] * 2)


def test_call_inside_a_sub_ir_is_emitted():
    """A jitted function called inside a body the inlining pass does not enter (a remat body)."""
    inner = kiln.jit(lambda a: knp.sin(a) * 2.0)
    f = kiln.checkpoint(lambda a: inner(a) + 1.0)
    text = _text(f, X)
    assert "stablehlo.sine" in text
    np.testing.assert_allclose(np.asarray(kiln.jit(f)(X)), np.sin(X) * 2 + 1, rtol=1e-6)


def test_optimize_pipeline_preserves_results():
    def f(x, y):
        a = _tanh(x)
        b = _tanh(x)  # duplicate (one operation's)
        knp.exp(y)       # dead
        return a * b + y, (a - b).sum()

    ir = _ir(f, X, X)
    opt = passes.optimize(ir)
    assert _prims(opt).count("tanh") == 1 and "exp" not in _prims(opt)
    r1, r2 = kiln.jit(f)(X, X)
    np.testing.assert_allclose(np.asarray(r1), np.tanh(X) ** 2 + X, rtol=1e-6)
    assert float(r2) == 0.0
