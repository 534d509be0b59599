"""IR passes before emission: inlining of calls, common subexpressions, dead code."""
from __future__ import annotations

import numpy as np
from kiln.frontend.core import passes

import kiln
import kiln.numpy as knp

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


# -- common subexpressions: XLA's ---------------------------------------------------------------

def _tanh(v):
    return knp.tanh(v)  # one source position for every call


def test_duplicates_reach_xla_which_merges_them_after_its_simplifier():
    # As JAX's programs, which reach XLA undeduplicated: XLA's simplifier runs before its CSE and rewrites a value
    # with one user (x / broadcast(s)) otherwise than a shared one, so merging duplicates early changed the last
    # bits (a transpose, a user's repeated s * s, one line of a tree_map over several leaves; tests/ad and
    # tests/optim compare with JAX's and optax's bits)
    def f(x):
        return _tanh(x) + _tanh(x)

    assert _prims(passes.optimize(_ir(f, X))).count("tanh") == 2
    assert _text(f, X).count("stablehlo.tanh") == 2
    optimized = kiln.jit(f).lower(X).compile().as_text()
    assert optimized.count(" tanh(") == 1  # XLA's CSE
    np.testing.assert_allclose(np.asarray(kiln.jit(f)(X)), 2 * np.tanh(X), rtol=1e-6)


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
    assert text.count("stablehlo.sine") == 3  # (inner(a) twice: XLA merges them)
    want = (np.sin(X) * 2 + np.sin(X + 1) * 2) * (np.sin(X) * 2)
    np.testing.assert_allclose(np.asarray(kiln.jit(outer)(X)), want, rtol=1e-6)


def test_inlined_call_with_closure_constants():
    c = knp.asarray(np.float32([1.0, 2.0, 3.0]))
    inner = kiln.jit(lambda a: a * c)
    flat = passes.optimize(_ir(lambda a: inner(a) + inner(a), X))
    assert _prims(flat) == ["mul", "mul", "add"]
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
        b = _tanh(x)  # duplicate (left to XLA)
        knp.exp(y)       # dead
        return a * b + y, (a - b).sum()

    ir = _ir(f, X, X)
    opt = passes.optimize(ir)
    assert _prims(opt).count("tanh") == 2 and "exp" not in _prims(opt)
    r1, r2 = kiln.jit(f)(X, X)
    np.testing.assert_allclose(np.asarray(r1), np.tanh(X) ** 2 + X, rtol=1e-6)
    assert float(r2) == 0.0
