"""JAX's docs page docs/tracing.md ("Tracing"), ported to kiln by changing imports
(tests/examples/jax_ported/docs_tracing.py), checked against NumPy and the page's claims.

Oracles: NumPy float64 for the values (`jnp.dot(x + 1, y + 1)`, the reshapes, `divide` and its derivatives by hand).
The page's claims: a jitted function's prints show tracers that carry the shape and dtype but no value (kiln prints
them as JAX 0.10.2 does, `JitTracer(float32[3,4])`: README, "Differences from JAX", printed tracers; the page's
"something like `Traced<ShapedArray(float32[])>`" is older JAX's text); a second call on inputs of the same shapes
and dtypes runs without tracing (prints nothing), another shape traces again; the jaxpr of `f`; Python control flow
on a traced argument raises (a TracerBoolConversionError naming the argument and the fix), a static argument works
and another static value traces again; `x.shape` is static under jit while `jnp.array(x.shape).prod()` is traced
(reshape by it raises a TypeError), `np.prod(x.shape)` stays static. "Different kinds of JAX values": which
transformations give abstract tracers (jit, pmap, vmap, make_jaxpr, the control-flow primitives' functionals, and
grad inside jit), on which `bool`, `int` and `float` raise, and which give concrete ones (grad, jvp), on which
`bool(y >= 1.)` resolves; `jax.grad(divide)(3., 2.)` works, jit of it needs `static_argnums=1`.

`int(x)` and `bool(x)` of a concrete tracer that is being differentiated give the primal's value (the page:
"explicitly casting a concrete tracer value to a regular type, e.g., int(x)"), as JAX 0.10.2's do.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from ported import load

import kiln
import kiln.numpy as jnp
from kiln import lax


@pytest.fixture(scope="module")
def t():
    return load("docs_tracing")


@pytest.fixture(autouse=True)
def _numpy_global_rng():
    """The page draws from NumPy's global generator: seeded here, and left as it was for other tests."""
    state = np.random.get_state()
    np.random.seed(0)
    yield
    np.random.set_state(state)


def _run(fn, *args):
    """(what fn returns, the lines it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue().splitlines()


def _f_oracle(x, y):
    return (np.asarray(x, np.float64) + 1) @ (np.asarray(y, np.float64) + 1)


# ==================== Tracing =======================================================================================

def test_prints_show_tracers_and_the_second_call_does_not_trace(t):
    (f, x, y, result), lines = _run(t.print_cell)
    # the prints ran while tracing and show tracers: shape and dtype (float64 inputs are float32 without x64)
    assert lines == ["Running f():", "  x = JitTracer(float32[3,4])", "  y = JitTracer(float32[4])",
                     "  result = JitTracer(float32[3])"]
    assert x.shape == (3, 4) and y.shape == (4,) and x.dtype == y.dtype == np.float64
    assert result.dtype == np.float32 and result.shape == (3,) and not result.weak_type
    np.testing.assert_allclose(np.asarray(result), _f_oracle(x, y), rtol=1e-5)
    # "When we call the compiled function again on matching inputs ... nothing is printed"
    (x2, y2, result2), lines = _run(t.second_call_cell, f)
    assert lines == [] and not np.array_equal(x2, x)
    np.testing.assert_allclose(np.asarray(result2), _f_oracle(x2, y2), rtol=1e-5)
    # inputs of another shape are traced again
    (res3, lines) = _run(f, np.ones((2, 4)), np.ones(4))
    assert lines[:2] == ["Running f():", "  x = JitTracer(float32[2,4])"]
    np.testing.assert_allclose(np.asarray(res3), [16.0, 16.0])


def test_make_jaxpr_of_f(t):
    x, y = np.random.randn(3, 4), np.random.randn(4)
    closed = t.make_jaxpr_cell(x, y)
    jaxpr = closed.jaxpr
    assert [(np.dtype(v.aval.dtype).name, v.aval.shape) for v in jaxpr.invars] == [("float32", (3, 4)),
                                                                                 ("float32", (4,))]
    assert str(closed).splitlines()[0] == "{ lambda ; a:f32[3,4] b:f32[4]. let"
    names = [e.primitive.name for e in jaxpr.eqns]
    assert names.count("add") == 2 and names[-1] == "dot_general"
    dot = jaxpr.eqns[-1]
    assert dot.params["dimension_numbers"] == (((1,), (0,)), ((), ()))
    assert jaxpr.outvars == dot.outvars and "1.0:f32[]" in str(closed)
    got = kiln.core.eval_jaxpr(jaxpr, closed.consts, x.astype(np.float32), y.astype(np.float32))
    np.testing.assert_allclose(np.asarray(got[0]), _f_oracle(x, y), rtol=1e-5)


def test_control_flow_on_a_traced_argument_raises(t):
    with pytest.raises(kiln.errors.TracerBoolConversionError) as e:
        t.traced_condition_cell()
    assert isinstance(e.value, kiln.errors.ConcretizationTypeError) and isinstance(e.value, TypeError)
    msg = str(e.value)
    assert "neg" in msg and "static_argnums" in msg and "bool[]" in msg  # what, where, how to fix


def test_static_argument_and_recompilation(t):
    f, r = t.static_argnums_cell()
    assert int(r) == -1 and r.dtype == np.int32 and r.weak_type
    r2 = t.static_recompile_cell(f)
    assert int(r2) == 1 and r2.dtype == np.int32 and r2.weak_type
    assert f._cache_size() == 2  # "a different static argument results in re-compilation"
    assert int(f(1, True)) == -1 and f._cache_size() == 2


# ==================== Static vs traced operations ===================================================================

def test_reshape_by_a_traced_size_raises(t):
    with pytest.raises(TypeError) as e:
        t.reshape_traced_size_cell()
    msg = str(e.value)
    assert "reshape" in msg and "static" in msg and "i32[]" in msg


def test_shape_is_static_and_its_jnp_product_is_traced(t):
    x = jnp.ones((2, 3))
    res, lines = _run(t.print_static_and_traced_cell, x)
    assert res is None
    assert lines == ["x = JitTracer(float32[2,3])", "x.shape = (2, 3)",
                     "jnp.array(x.shape).prod() = JitTracer(int32[])"]


def test_numpy_for_static_operations(t):
    out = t.numpy_prod_cell(jnp.arange(6.0).reshape(2, 3))
    assert out.shape == (6,) and out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out), np.arange(6.0))
    # the size stays a Python value under tracing: no equation computes it
    closed = kiln.make_jaxpr(lambda x: x.reshape((np.prod(x.shape),)))(np.ones((2, 3), np.float32))
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["reshape"]


# ==================== Different kinds of JAX values =================================================================

def test_grad_of_divide_uses_concrete_tracers(t):
    # "jax.grad(divide)(3., 2.) works": d/dx x/y = 1/y, the branch chosen with y's value
    assert float(kiln.grad(t.divide)(3., 2.)) == 0.5
    assert float(kiln.grad(t.divide, argnums=1)(3., 2.)) == -0.75  # -x / y**2, y being differentiated
    assert float(kiln.grad(t.divide)(3., 0.5)) == 0.0  # the constant branch
    assert float(kiln.jvp(lambda x: t.divide(x, 4.), (3.,), (1.,))[1]) == 0.25


def test_jit_of_divide_needs_static_argnums(t):
    with pytest.raises(kiln.errors.TracerBoolConversionError, match="y"):
        kiln.jit(t.divide)(3., 2.)
    assert float(kiln.jit(t.divide, static_argnums=1)(3., 2.)) == 1.5
    assert float(kiln.jit(t.divide, static_argnums=1)(3., 0.5)) == 0.0
    # "The same would happen if we write explicitly bool(y >= 1.), or int(y), or float(y)"
    for convert in (lambda y: bool(y >= 1.), int, float):
        with pytest.raises(kiln.errors.ConcretizationTypeError, match="y"):
            kiln.jit(lambda x, y: x * convert(y))(3., 2.)


_ABSTRACT = {
    "jit": lambda c: kiln.jit(lambda x: x * c(x))(2.),
    "vmap": lambda c: kiln.vmap(lambda x: x * c(x))(jnp.ones(2)),
    "make_jaxpr": lambda c: kiln.make_jaxpr(lambda x: x * c(x))(2.),
    "pmap": lambda c: kiln.pmap(lambda x: x * c(x[0]))(jnp.ones((1, 1))),
    "grad inside jit": lambda c: kiln.jit(kiln.grad(lambda x: x * c(x)))(2.),
    "cond": lambda c: lax.cond(True, lambda x: x * c(x), lambda x: x, 2.),
    "while_loop": lambda c: lax.while_loop(lambda x: x < 3., lambda x: x + c(x), 2.),
    "fori_loop": lambda c: lax.fori_loop(0, 2, lambda i, x: x + c(x), 2.),
    "scan": lambda c: lax.scan(lambda x, _: (x + c(x), x), 2., None, length=2),
}


@pytest.mark.parametrize("where", list(_ABSTRACT))
@pytest.mark.parametrize("convert", ["bool", "int", "float"])
def test_abstract_tracers(where, convert):
    # jit, pmap, vmap, make_jaxpr and the control-flow functionals (with no transformation in progress) introduce
    # abstract tracers, and so does grad when its arguments are themselves abstract: no Python value of them
    c = {"bool": lambda x: bool(x >= 1.), "int": int, "float": float}[convert]
    with pytest.raises(kiln.errors.ConcretizationTypeError):
        _ABSTRACT[where](c)


def test_concrete_tracers_resolve_conditionals():
    # grad and jvp introduce concrete tracers: a condition on the differentiated value resolves
    step = lambda x: x * 3. if x >= 1. else x * 5.  # noqa: E731
    assert float(kiln.grad(step)(2.)) == 3.0 and float(kiln.grad(step)(0.5)) == 5.0
    assert [float(v) for v in kiln.jvp(step, (2.,), (1.,))] == [6.0, 3.0]
    # "explicitly casting a concrete tracer value to a regular type, e.g., ... x.astype(float)"
    assert float(kiln.grad(lambda x: x * x.astype(float))(2.)) == 4.0
    # "getting the shape of a tracer": a Python value, under every transformation
    shapes = []
    kiln.jit(lambda x: shapes.append(x.shape))(jnp.ones((2, 3)))
    kiln.vmap(lambda x: shapes.append(x.shape))(jnp.ones((2, 3)))
    kiln.grad(lambda x: shapes.append(x.shape) or x.sum())(jnp.ones((2, 3)))
    assert shapes == [(2, 3), (3,), (2, 3)]


def test_int_of_a_concrete_tracer():
    assert float(kiln.grad(lambda x: x * int(x))(2.5)) == 2.0


def test_bool_of_a_concrete_tracer():
    assert float(kiln.grad(lambda x: x * 2. if x else x)(2.)) == 2.0
