"""JAX's docs page docs/jaxpr.md ("JAX internals: The jaxpr language"), ported to kiln by changing imports
(tests/examples/jax_ported/docs_jaxpr.py), checked against NumPy and the page's claims about the jaxprs.

The page prints the jaxprs of func1 ... func12 and explains them: the binders (constvars before `;`, invars after),
literals kept inline, a non-scalar constant hoisted to a constvar, and the operands and parameters of the
higher-order primitives `cond` (the branch index first, clamped; the false branch first), `while` (`c a 0 b d`:
body constants, then the carry), `scan` (`b 0.0 a c`: the free variable, the initial carry, the scanned arrays)
and the call of a jitted function. Each cell's printed text is the jaxpr's; the checks read the jaxpr objects
(kiln.make_jaxpr's IR answers to JAX's field names: constvars, invars, outvars, eqns, primitive, params, consts) and
run them with kiln.core.eval_jaxpr against NumPy float64 (the loops against a Python loop). kiln's names for the
call are its own (README, "Differences from JAX": `jit_call` with `ir=` for JAX's `jit` with `jaxpr=`).
test_docs_jaxpr_against_jax.py compares the jaxprs with JAX 0.10.2's.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from ported import load

import kiln
from kiln import lax


@pytest.fixture(scope="module")
def m():
    return load("docs_jaxpr")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def _printed(cell) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        cell()
    return buf.getvalue()


def _run(closed, *args):
    """The jaxpr evaluated (kiln.core.eval_jaxpr with its consts), as NumPy arrays."""
    return [np.asarray(o) for o in kiln.core.eval_jaxpr(closed.jaxpr, closed.consts, *args)]


def _eqn(jaxpr, name):
    (eqn,) = [e for e in jaxpr.eqns if e.primitive.name == name]
    return eqn


def _is_literal(a, value=None) -> bool:
    return isinstance(a, kiln.extend.core.Literal) and (value is None or float(np.asarray(a.val)) == value)


def _producer(jaxpr, var):
    (eqn,) = [e for e in jaxpr.eqns if any(o is var for o in e.outvars)]
    return eqn


def _types(vs):
    return [(np.dtype(v.aval.dtype).name, v.aval.shape) for v in vs]


# ==================== jax.core.ClosedJaxpr ==========================================================================

def func1_oracle(first, second):
    return np.sum(np.asarray(first, np.float64) + np.sin(np.asarray(second, np.float64)) * 3.0)


def test_func1(m, rng):
    closed = m.make_jaxpr(m.func1)(np.zeros(8, np.float32), np.ones(8, np.float32))
    assert _printed(m.func1_cell) == str(closed) + "\n"
    # a ClosedJaxpr, with the fields the page lists: jaxpr (a Jaxpr) and consts
    assert isinstance(closed, kiln.extend.core.ClosedJaxpr) and isinstance(closed.jaxpr, kiln.extend.core.Jaxpr)
    jaxpr = closed.jaxpr
    # "no constvars, a and b are the input variables"
    assert jaxpr.constvars == [] and closed.consts == []
    assert _types(jaxpr.invars) == [("float32", (8,)), ("float32", (8,))]
    assert str(closed).splitlines()[0] == "{ lambda ; a:f32[8] b:f32[8]. let"
    # sin of `second`, a mul by the literal 3.0 "kept inline" (no constant), an add to `first`, and the reduce_sum
    # with its axes parameter, of the add's result, as the only output
    sin, add, red = _eqn(jaxpr, "sin"), _eqn(jaxpr, "add"), _eqn(jaxpr, "reduce_sum")
    assert sin.invars[0] is jaxpr.invars[1] and add.invars[0] is jaxpr.invars[0]
    mul = _producer(jaxpr, add.invars[1])
    assert mul.primitive.name == "mul" and mul.invars[0] is sin.outvars[0]
    assert "3.0:f32[]" in str(closed)
    assert red.params["axes"] == (0,) and red.invars[0] is add.outvars[0] and jaxpr.outvars == red.outvars
    assert _types(jaxpr.outvars) == [("float32", ())]
    first, second = rng.normal(size=(2, 8)).astype(np.float32)
    np.testing.assert_allclose(_run(closed, first, second)[0], func1_oracle(first, second), rtol=1e-5)


def test_func3_inlines_python_calls_and_conditionals(m, rng):
    # "JAX will inline the call to inner and the conditional ... and will produce the same jaxpr as before"
    args = (np.zeros(8, np.float32), np.ones(8, np.float32))
    closed = m.make_jaxpr(m.func3)(*args)
    assert str(closed) == str(m.make_jaxpr(m.func1)(*args))
    assert _printed(m.func3_cell) == _printed(m.func1_cell)
    assert {e.primitive.name for e in closed.jaxpr.eqns}.isdisjoint({"cond", "while", "jit_call"})
    first, second = rng.normal(size=(2, 8)).astype(np.float32)
    np.testing.assert_allclose(_run(closed, first, second)[0], func1_oracle(first, second), rtol=1e-5)
    with pytest.raises(AssertionError):  # the other Python branch, taken while tracing
        m.make_jaxpr(m.func3)(np.zeros(4, np.float32), np.ones(4, np.float32))


# ==================== Handling pytrees ==============================================================================

def test_func4_flattens_the_pair(m, rng):
    # "an identical jaxpr to what you saw earlier (with two input vars, one for each element of the input tuple)"
    closed = m.make_jaxpr(m.func4)((np.zeros(8, np.float32), np.ones(8, np.float32)))
    assert _printed(m.func4_cell) == _printed(m.func1_cell)
    assert _types(closed.jaxpr.invars) == [("float32", (8,))] * 2
    first, second = rng.normal(size=(2, 8)).astype(np.float32)
    np.testing.assert_allclose(_run(closed, first, second)[0], func1_oracle(first, second), rtol=1e-5)


# ==================== Constant variables ============================================================================

def test_non_scalar_constants_are_hoisted_to_constvars(m):
    # "Non-scalar array constants are instead hoisted out to the top-level jaxpr ... constvars"; scalars stay inline
    c = np.arange(3.0, dtype=np.float32)
    closed = m.make_jaxpr(lambda x: x * kiln.numpy.asarray(c) + 2.0)(np.ones(3, np.float32))
    assert len(closed.jaxpr.constvars) == 1 and len(closed.consts) == 1
    np.testing.assert_array_equal(np.asarray(closed.consts[0]), c)
    assert str(closed).startswith("{ lambda a:f32[3]; b:f32[3]. let") and "2.0:f32[]" in str(closed)
    np.testing.assert_allclose(_run(closed, np.full(3, 2.0, np.float32))[0], c * 2.0 + 2.0)


# ==================== cond ==========================================================================================

def test_one_of_three(m):
    closed = m.make_jaxpr(m.one_of_three)(1, 5.)
    assert _printed(m.one_of_three_cell) == str(closed) + "\n"
    jaxpr = closed.jaxpr
    assert _types(jaxpr.invars) == [("int32", ()), ("float32", ())] and jaxpr.constvars == []
    cond = _eqn(jaxpr, "cond")
    # branches: one jaxpr per functional, each taking one input variable (x)
    branches = cond.params["branches"]
    assert len(branches) == 3 and all(_types(b.jaxpr.invars) == [("float32", ())] for b in branches)
    assert [[e.primitive.name for e in b.jaxpr.eqns] for b in branches] == [["add"], ["sub"], ["add"]]
    assert [float(np.asarray(b.jaxpr.eqns[0].invars[1].val)) for b in branches] == [1.0, 2.0, 3.0]
    # two operands: the (clamped) integer branch index computed from `index`, then `arg` itself
    assert len(cond.invars) == 2 and cond.invars[1] is jaxpr.invars[1]
    assert _types(cond.invars[:1]) == [("int32", ())] and cond.invars[0] is not jaxpr.invars[0]
    assert jaxpr.outvars == cond.outvars
    # the index is clamped into the valid range: below 0 is branch 0, above 2 is branch 2
    for index in (-7, -1, 0, 1, 2, 3, 11):
        expected = [5.0 + 1.0, 5.0 - 2.0, 5.0 + 3.0][min(max(index, 0), 2)]
        assert _run(closed, np.int32(index), np.float32(5.0))[0] == expected
        assert float(kiln.jit(m.one_of_three)(index, 5.)) == expected
        assert float(m.one_of_three(index, 5.)) == expected


def test_func7(m):
    closed = m.make_jaxpr(m.func7)(5.)
    assert _printed(m.func7_cell) == str(closed) + "\n"
    jaxpr = closed.jaxpr
    cond = _eqn(jaxpr, "cond")
    # "the boolean predicate is converted to an integer index (0 or 1)"
    convert = _producer(jaxpr, cond.invars[0])
    assert convert.primitive.name == "convert_element_type" and np.dtype(convert.params["new_dtype"]) == np.int32
    assert _producer(jaxpr, convert.invars[0]).primitive.name == "ge"
    # "branches ... correspond to the false and true branch functionals, in that order", each with one input
    false_b, true_b = cond.params["branches"]
    assert [e.primitive.name for e in false_b.jaxpr.eqns] == ["sub"]
    assert [e.primitive.name for e in true_b.jaxpr.eqns] == ["add"]
    assert len(false_b.jaxpr.invars) == len(true_b.jaxpr.invars) == 1 and cond.invars[1] is jaxpr.invars[0]
    for x in (5.0, 0.0, -0.5, -5.0):
        expected = x + 3.0 if x >= 0 else x - 3.0
        assert _run(closed, np.float32(x))[0] == np.float32(expected) == m.func7(x)


def test_func8_hoists_the_branch_constant(m, rng):
    closed = m.make_jaxpr(m.func8)(5., (np.zeros(1, np.float32), 2.))
    assert _printed(m.func8_cell) == str(closed) + "\n"
    jaxpr = closed.jaxpr
    # the false branch's constant jnp.array([1]) is hoisted as a constvar of the top-level jaxpr
    assert _types(jaxpr.constvars) == [("int32", (1,))] and len(closed.consts) == 1
    np.testing.assert_array_equal(np.asarray(closed.consts[0]), [1])
    assert str(closed).startswith("{ lambda a:i32[1]; b:f32[] c:f32[1] d:f32[]. let")
    cond = _eqn(jaxpr, "cond")
    # operands: the index, the constant, then the two leaves of the pair; each branch takes the same three
    assert cond.invars[1] is jaxpr.constvars[0] and cond.invars[2:] == jaxpr.invars[1:]
    false_b, true_b = cond.params["branches"]
    for b in (false_b, true_b):
        assert _types(b.jaxpr.invars) == [("int32", (1,)), ("float32", (1,)), ("float32", ())]
    # the true branch returns xtrue[0] itself (at most a change of weak type); the false branch adds
    assert {e.primitive.name for e in true_b.jaxpr.eqns} <= {"convert_element_type"}
    assert "add" in [e.primitive.name for e in false_b.jaxpr.eqns]
    z = rng.normal(size=1).astype(np.float32)
    np.testing.assert_array_equal(_run(closed, np.float32(5.0), z, np.float32(2.0))[0], z)
    np.testing.assert_array_equal(_run(closed, np.float32(-5.0), z, np.float32(2.0))[0], [3.0])
    np.testing.assert_array_equal(np.asarray(m.func8(-1.0, (z, 0.5))), [1.5])


# ==================== while =========================================================================================

def test_func10(m, rng):
    closed = m.make_jaxpr(m.func10)(np.ones(16), 5)
    assert _printed(m.func10_cell) == str(closed) + "\n"
    jaxpr = closed.jaxpr
    assert _types(jaxpr.invars) == [("float32", (16,)), ("int32", ())] and jaxpr.constvars == []
    loop = _eqn(jaxpr, "while")
    # "The while primitive takes 5 arguments: c a 0 b d": 0 constants for cond_jaxpr, 2 for body_jaxpr (the ones
    # array c and arg a), then the carry: the loop index 0, the bound n (b) and the initial value arg + ones (d)
    assert loop.params["cond_nconsts"] == 0 and loop.params["body_nconsts"] == 2
    c, a, zero, b, d = loop.invars
    ones = _producer(jaxpr, c)
    assert ones.primitive.name == "broadcast_in_dim" and _is_literal(ones.invars[0], 1.0)
    assert a is jaxpr.invars[0] and b is jaxpr.invars[1] and _is_literal(zero, 0.0)
    assert _producer(jaxpr, d).primitive.name == "add"
    assert len(loop.outvars) == 3 and jaxpr.outvars == loop.outvars[2:]
    body, cond = loop.params["body"], loop.params["cond"]  # printed as body_jaxpr= and cond_jaxpr=
    assert len(body.jaxpr.invars) == 5 and len(cond.jaxpr.invars) == 3
    assert [e.primitive.name for e in cond.jaxpr.eqns] == ["lt"]
    arg = rng.normal(size=16).astype(np.float32)
    for n in (0, 1, 5):
        expected = arg.astype(np.float64) + 1.0 + n * (3.0 + arg.astype(np.float64))
        np.testing.assert_allclose(_run(closed, arg, np.int32(n))[0], expected, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(m.func10(arg, n)), expected, rtol=1e-6)


# ==================== scan ==========================================================================================

def func11_oracle(arr, extra):
    carry, ys = 0.0, []
    for ae1 in np.asarray(arr, np.float64):
        ys.append(carry)
        carry = carry + ae1 * 1.0 + extra
    return carry, np.array(ys)


def test_func11(m, rng):
    closed = m.make_jaxpr(m.func11)(np.ones(16), 5.)
    assert _printed(m.func11_cell) == str(closed) + "\n"
    jaxpr = closed.jaxpr
    scan = _eqn(jaxpr, "scan")
    assert (scan.params["length"], scan.params["num_consts"], scan.params["num_carry"]) == (16, 1, 1)
    # "The scan primitive takes 4 arguments: b 0.0 a c": the body's free variable (extra), the initial carry, and
    # the two arrays scanned over (arr, and the constant ones)
    b, init, a, c = scan.invars
    assert b is jaxpr.invars[1] and _is_literal(init, 0.0) and a is jaxpr.invars[0]
    assert _producer(jaxpr, c).primitive.name == "broadcast_in_dim"
    assert _types(scan.outvars) == [("float32", ()), ("float32", (16,))] and jaxpr.outvars == scan.outvars
    assert len(scan.params["body"].jaxpr.invars) == 4  # printed as jaxpr=
    arr, extra = rng.normal(size=16).astype(np.float32), np.float32(0.75)
    carry, ys = func11_oracle(arr, float(extra))
    got = _run(closed, arr, extra)
    np.testing.assert_allclose(got[0], carry, rtol=1e-5)
    np.testing.assert_allclose(got[1], ys, rtol=1e-5, atol=1e-6)
    out = m.func11(arr, extra)
    np.testing.assert_allclose(np.asarray(out[0]), carry, rtol=1e-5)


# ==================== (p)jit =========================================================================================

def test_func12(m):
    closed = m.make_jaxpr(m.func12)(1.)
    assert _printed(m.func12_cell) == str(closed) + "\n"
    jaxpr = closed.jaxpr
    call = _eqn(jaxpr, "jit_call")  # JAX's `jit` (pjit) equation; kiln's name (README)
    assert call.params["name"] == "inner"
    inner = call.params["ir"]  # JAX's jaxpr=
    # the inner function's free variable `arg` is an operand of the call, beside its argument arg - 2.
    assert call.invars[0] is jaxpr.invars[0] and _producer(jaxpr, call.invars[1]).primitive.name == "sub"
    assert len(inner.jaxpr.invars) == 2 and inner.jaxpr.constvars == [] and closed.consts == []
    # the inner constant jnp.ones(1) stays inside the call, made by a broadcast of the literal 1.0
    assert any(e.primitive.name == "broadcast_in_dim" and _is_literal(e.invars[0], 1.0) for e in inner.jaxpr.eqns)
    assert "name=inner" in str(closed)
    for x in (1.0, -2.5):
        np.testing.assert_allclose(_run(closed, np.float32(x))[0], [3 * x - 2.0], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(m.func12(x)), [3 * x - 2.0], rtol=1e-6)


def test_the_page_signatures(m):
    # the page's signatures of switch, cond, while_loop, fori_loop and scan, as kiln.lax takes them
    assert float(lax.switch(1, [lambda x: x, lambda x: -x], 2.0)) == -2.0
    assert float(lax.cond(False, lambda x: x, lambda x: -x, 2.0)) == -2.0
    assert int(lax.while_loop(lambda c: c < 10, lambda c: c * 2, 1)) == 16
    assert int(lax.fori_loop(0, 4, lambda i, c: c + i, 0)) == 6
    carry, ys = lax.scan(lambda c, a: (c + a, c), 0, np.arange(4))
    assert int(carry) == 6 and np.asarray(ys).tolist() == [0, 0, 1, 3]
