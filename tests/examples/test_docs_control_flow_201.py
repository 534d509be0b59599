"""JAX's docs page docs/new_docs/201/control-flow.md ("Control flow and logical operators with `jit`"), ported to kiln
by changing imports (tests/examples/jax_ported/docs_control_flow_201.py), checked against oracles that do not
involve JAX: Python arithmetic and loops (the page's own "python equivalent" sketches of cond, while_loop, fori_loop
and scan among them), NumPy (np.cumsum, np.where, np.piecewise, np.select, NumPy's printing and its truth-value
error), float64 central differences for the derivatives the page says exist, the programs' equations and trace
counts for its claims about unrolling, recompiling and trace-time prints.

The older page docs/control-flow.md shares most blocks (tests/examples/test_docs_basics.py checks their printed
text and types, test_common_gotchas.py their values); here every block of the new page is run and checked for what
this page says: loops unroll, a static argument recompiles per value, the predicate of cond may be traced, the
loops' differentiability (the list under "Structured control flow primitives"), scan compiles its body once and
its `unroll`, the no-short-circuit logical functions and the bitwise operators under jit.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from ported import count_primitives, load

import kiln
import kiln.numpy as jnp
from kiln import lax

H = 1e-6  # central differences' step (float64)


@pytest.fixture(scope="module")
def page():
    module = load("docs_control_flow_201")
    module.np = np  # the page's ```python scan sketch uses np without importing it
    return module


def _run(fn, *args):
    """(what fn returns, what it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue()


def _type(x, dtype, shape=(), weak=False):
    assert (x.dtype, x.shape, x.weak_type) == (np.dtype(dtype), shape, weak), (x.dtype, x.shape, x.weak_type)


def _fd(f, x):
    return (f(x + H) - f(x - H)) / (2 * H)


# ---------------------------------------------- Python control flow under jit ---------------------------------------

def test_a_loop_over_a_range_is_unrolled(page):
    f, out = _run(page.unrolled_loop_block)
    assert out == "24\n"  # 2 * 2 * 2 * 3
    _type(f(3), np.int32, weak=True)
    for x in (-5, 0, 7):
        assert int(f(x)) == 8 * x
    np.testing.assert_allclose(float(f(jnp.float32(1.25))), 10.0)
    # "a single path through the control flow graph": three multiplications, no loop in the program
    counts = count_primitives(f.trace(3).jaxpr)
    assert counts["mul"] == 3 and not {"while", "scan"} & set(counts)


def test_a_loop_over_a_shape_is_retraced_per_shape(page):
    g, out = _run(page.shape_loop_block)
    assert out == "6.0\n"
    _type(g(jnp.array([1., 2., 3.])), np.float32)
    assert g._cache_size() == 1
    g(jnp.array([4., 5., 6.]))  # another value of the same type: the same program
    assert g._cache_size() == 1
    rng = np.random.default_rng(0)
    for n in (1, 5):  # "re-compiled every time it is called on an input with a new shape or dtype"
        x = rng.standard_normal(n).astype(np.float32)
        np.testing.assert_allclose(float(g(jnp.asarray(x))), np.sum(x.astype(np.float64)), rtol=1e-6, atol=1e-6)
        assert count_primitives(g.trace(jnp.asarray(x)).jaxpr)["add"] == n
    assert g._cache_size() == 3
    _type(g(jnp.array([1, 2, 3])), np.float32, weak=True)  # int32: a new dtype (0. + int32 stays a weak float)
    assert g._cache_size() == 4


@pytest.mark.parametrize("block", ["traced_if_block", "traced_and_block"])
def test_python_control_flow_on_a_traced_value_raises(page, block):
    with pytest.raises(kiln.errors.TracerBoolConversionError) as info:
        getattr(page, block)()
    assert isinstance(info.value, kiln.errors.ConcretizationTypeError) and isinstance(info.value, TypeError)
    msg = str(info.value)
    # what went wrong, where (the argument) and the fixes the page gives (static_argnames, lax.cond)
    assert "bool[]" in msg and "argument x" in msg and "static_argnames" in msg and "lax.cond" in msg


def test_static_argnames_traces_on_the_value(page):
    f, out = _run(page.static_if_block)
    assert out == "12.0\n"  # 3. * 2. ** 2
    _type(f(2.), np.float32, weak=True)
    for x in (-1.5, 2.5, 3., 10.):  # the page's piecewise function, by hand
        np.testing.assert_allclose(float(f(x)), 3. * x ** 2 if x < 3 else -4 * x, rtol=1e-6)
    assert f._cache_size() == 5  # one program per value
    f(2.5)
    assert f._cache_size() == 5


def test_static_loop_bound_unrolls(page):
    value, f = page.static_loop_block()
    _type(value, np.float32)
    assert float(value) == 5.0  # 2. + 3.
    x = jnp.array([2., 3., 4.])
    assert [float(f(x, n)) for n in (0, 1, 3)] == [0.0, 2.0, 9.0]
    # "the loop gets statically unrolled": n adds, no loop primitive
    for n in (2, 3):
        counts = count_primitives(f.trace(x, n).jaxpr)
        assert counts["add"] == n and not {"while", "scan"} & set(counts)


# ---------------------------------------------- argument-value dependent shapes ------------------------------------

def test_value_dependent_shapes(page):
    _, out = _run(page.example_fun_block)
    assert out == f"{np.full(5, 4.0, np.float32)}\n" == "[4. 4. 4. 4. 4.]\n"
    _type(page.example_fun(5, 4), np.float32, (5,))
    with pytest.raises(TypeError) as info:  # kiln.errors.TracerIntegerConversionError
        page.bad_example_jit_block()
    assert isinstance(info.value, kiln.errors.ConcretizationTypeError)
    assert "length" in str(info.value) and "static_argnames" in str(info.value)
    good, out = _run(page.good_example_jit_block)
    assert out == f"{np.full(10, 4.0, np.float32)}\n{np.full(5, 4.0, np.float32)}\n"
    assert good._cache_size() == 2  # "recompiles"
    np.testing.assert_array_equal(good(10, 7), np.full(10, 7.0, np.float32))
    assert good._cache_size() == 2  # a new `val` of the same type: no recompile


def test_prints_inside_jit_show_tracers_at_trace_time(page):
    (y, f), out = _run(page.print_in_jit_block)
    assert out == "JitTracer(~int32[])\n" * 2
    _type(y, np.int32, weak=True)
    assert int(y) == 4
    (y3, out) = _run(f, 3)
    assert int(y3) == 6 and out == ""  # "they run at trace time only"
    (y4, out) = _run(f, jnp.float32(2.5))  # a new dtype traces again
    assert float(y4) == 5.0 and out == "JitTracer(float32[])\n" * 2


# ---------------------------------------------- cond and the other branching functions -----------------------------

def test_cond(page):
    _, out = _run(page.cond_block)
    assert out == "[1.]\n[-1.]\n"  # the page's comments: array([1.]), array([-1.]), float32
    operand = jnp.array([0.])
    for pred in (True, False):
        res = lax.cond(pred, lambda x: x + 1, lambda x: x - 1, operand)
        _type(res, np.float32, (1,))
        sketch = page.cond(pred, lambda x: x + 1, lambda x: x - 1, np.zeros(1))  # the page's python equivalent
        np.testing.assert_array_equal(res, sketch)
    # "the predicate here can be a traced value": one program for both branches
    jitted = kiln.jit(lambda p, x: lax.cond(p, lambda x: x + 1, lambda x: x - 1, x))
    assert [float(jitted(p, operand)[0]) for p in (True, False, jnp.bool_(True))] == [1.0, -1.0, 1.0]
    assert jitted._cache_size() == 1
    # cond is differentiable: through the branch taken
    def branchy(x):
        return lax.cond(x > 0, jnp.sin, lambda x: x ** 3, x)
    for x in (0.7, -1.3):
        oracle = _fd(lambda t: np.sin(t) if t > 0 else t ** 3, x)
        np.testing.assert_allclose(float(kiln.grad(branchy)(x)), oracle, rtol=1e-5)
        np.testing.assert_allclose(float(kiln.jit(kiln.grad(branchy))(x)), oracle, rtol=1e-5)


def test_select_switch_where_piecewise_select():
    """The page's list of the other branching functions, against their NumPy counterparts (Python for switch)."""
    x = np.array([-2.0, -0.5, 0.0, 1.5, 3.0], np.float32)
    pred = x > 0
    np.testing.assert_array_equal(lax.select(jnp.asarray(pred), jnp.asarray(x), jnp.asarray(-x)), np.where(pred, x, -x))
    np.testing.assert_array_equal(kiln.jit(jnp.where)(pred, x, 0.0), np.where(pred, x, 0.0))
    branches = [lambda v: v, lambda v: v + 1, lambda v: v * 10]
    switch = kiln.jit(lambda i, v: lax.switch(i, branches, v))
    for i in range(3):  # "any number of callable choices", the index traced
        assert float(switch(i, 3.0)) == branches[i](3.0)
    assert switch._cache_size() == 1
    conds = [x < 0, x > 1]
    funcs = [lambda v: -v, lambda v: v ** 2, 7.0]
    np.testing.assert_allclose(jnp.piecewise(jnp.asarray(x), [jnp.asarray(c) for c in conds], funcs),
                               np.piecewise(x, conds, funcs), rtol=1e-6)
    conds = [x < 0, x < 2]
    choices = [x, 2 * x]
    np.testing.assert_array_equal(jnp.select([jnp.asarray(c) for c in conds], [jnp.asarray(c) for c in choices], 9.),
                                  np.select(conds, choices, 9.))


# ---------------------------------------------- while_loop, fori_loop ----------------------------------------------

def _squarings(x, n):
    for _ in range(n):
        x = x * x
    return x


def test_while_loop(page):
    res = page.while_loop_block()
    _type(res, np.int32, weak=True)  # the page's comment, array(10, dtype=int32), predates weak types
    assert int(res) == 10 == page.while_loop(lambda x: x < 10, lambda x: x + 1, 0)  # the page's python equivalent
    loop = kiln.jit(lambda v: lax.while_loop(lambda x: x < 10, lambda x: x + 1, v))
    assert [int(loop(v)) for v in (-5, 3, 12)] == [10, 10, 12]

    def squarings(x):  # while the counter is below 3: x -> x * x
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * c[1]), (0, x))[1]

    # "fwd-mode-differentiable": the jvp is 8 x^7
    primal, tangent = kiln.jvp(squarings, (1.1,), (1.0,))
    np.testing.assert_allclose(float(primal), 1.1 ** 8, rtol=1e-6)
    np.testing.assert_allclose(float(tangent), _fd(lambda t: _squarings(t, 3), 1.1), rtol=1e-5)
    # ... and not reverse-mode
    with pytest.raises(ValueError, match="scan"):
        kiln.grad(squarings)(1.1)


def test_fori_loop(page):
    res = page.fori_loop_block()
    _type(res, np.int32, weak=True)
    assert int(res) == 45 == sum(range(10)) == page.fori_loop(0, 10, lambda i, x: x + i, 0)
    assert int(lax.fori_loop(0, 10, lambda i, x: x + i, 0, unroll=3)) == 45  # "accepts the same parameter"

    def squarings(x, n):
        return lax.fori_loop(0, n, lambda i, c: c * c, x)

    # "fwd and rev-mode differentiable if endpoints are static"
    oracle = _fd(lambda t: _squarings(t, 3), 1.1)
    np.testing.assert_allclose(float(kiln.grad(squarings)(1.1, 3)), oracle, rtol=1e-5)
    np.testing.assert_allclose(float(kiln.jvp(lambda x: squarings(x, 3), (1.1,), (1.0,))[1]), oracle, rtol=1e-5)
    # traced endpoints: forward mode only
    jvp = kiln.jit(lambda x, n: kiln.jvp(lambda x: squarings(x, n), (x,), (1.0,))[1])
    np.testing.assert_allclose(float(jvp(1.1, 3)), oracle, rtol=1e-5)
    with pytest.raises(ValueError, match="scan"):
        kiln.jit(kiln.grad(squarings))(1.1, 3)


# ---------------------------------------------- scan ---------------------------------------------------------------

def test_scan_block(page):
    (final, cumulative), out = _run(page.scan_block)
    xs = np.arange(1.0, 5.0, dtype=np.float32)
    assert out == f"{np.float32(10.0)}\n{np.cumsum(xs)}\n" == "10.0\n[ 1.  3.  6. 10.]\n"
    _type(final, np.float32)
    _type(cumulative, np.float32, (4,))
    sketch_final, sketch_ys = page.scan(page.cumsum_step, 0.0, xs)  # the page's python equivalent
    np.testing.assert_array_equal(cumulative, sketch_ys)
    assert float(final) == float(sketch_final) == 10.0


def test_scan_compiles_its_body_once_and_unrolls_on_request(page):
    rng = np.random.default_rng(1)
    xs = rng.standard_normal(37).astype(np.float32)
    ref = np.cumsum(xs.astype(np.float64))

    def run(xs, unroll=1):
        return lax.scan(page.cumsum_step, 0.0, xs, unroll=unroll)

    # "compiles the body once no matter how many iterations": one scan, the same body, for 4 and 1000 steps
    short, long = (kiln.make_jaxpr(run)(jnp.zeros(n)).jaxpr for n in (4, 1000))
    assert count_primitives(short) == count_primitives(long) and count_primitives(short)["scan"] == 1
    assert len(short.eqns) == len(long.eqns) == 1
    for unroll in (1, 2, 5, True):
        final, ys = kiln.jit(run, static_argnums=1)(jnp.asarray(xs), unroll)
        np.testing.assert_allclose(ys, ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(float(final), ref[-1], rtol=1e-5, atol=1e-5)


def test_scan_is_differentiable_in_both_modes(page):
    xs = np.array([0.5, -1.0, 2.0, 0.25])

    def loss(xs):  # sum of squares of the running sums
        return jnp.sum(lax.scan(page.cumsum_step, 0.0, xs)[1] ** 2)

    def np_loss(xs):
        return np.sum(np.cumsum(xs) ** 2)

    fd = np.array([_fd(lambda t, i=i: np_loss(xs + t * np.eye(4)[i]), 0.0) for i in range(4)])
    np.testing.assert_allclose(kiln.grad(loss)(jnp.asarray(xs, np.float32)), fd, rtol=1e-5)
    v = np.array([1.0, 0.5, -2.0, 0.0])
    _, tangent = kiln.jvp(loss, (jnp.asarray(xs, np.float32),), (jnp.asarray(v, np.float32),))
    np.testing.assert_allclose(float(tangent), fd @ v, rtol=1e-5)


# ---------------------------------------------- Logical operators --------------------------------------------------

def test_positive_even_on_a_scalar(page):
    _, out = _run(page.positive_even_scalar_block)
    assert out == "True\nTrue\n"
    assert page.python_check_positive_even(24) is True
    res = page.jax_check_positive_even(24)
    _type(res, np.bool_)
    for x in (-4, -3, 0, 7, 24):  # the two versions agree on scalars
        expected = x > 0 and x % 2 == 0
        assert bool(page.jax_check_positive_even(x)) == bool(page.python_check_positive_even(x)) == expected
    # eagerly (outside jit) the Python version works on a scalar Array too
    assert bool(page.python_check_positive_even(jnp.int32(24))) is True


def test_positive_even_on_an_array(page):
    x, out = _run(page.positive_even_array_block)
    host = np.array([-1, 2, 5])
    expected = np.logical_and(host % 2 == 0, host > 0)
    assert out == f"{expected}\n" == "[False  True False]\n"
    res = page.jax_check_positive_even(x)
    _type(res, np.bool_, (3,))
    np.testing.assert_array_equal(res, expected)
    # "Python logical operators error when applied to JAX arrays of more than one element, even without jit. This
    # replicates NumPy's behavior."
    with pytest.raises(ValueError, match="ambiguous") as info:
        page.python_positive_even_array_block(x)
    with pytest.raises(ValueError, match="ambiguous"):
        page.python_check_positive_even(host)
    assert "a.any() or a.all()" in str(info.value)


def test_logical_and_does_not_short_circuit_and_does_not_recompile(page):
    check = page.jax_check_positive_even
    jaxpr = check.trace(3).jaxpr
    # `x > 0` is in the program, whatever `is_even` is: the result is an `and` of the two comparisons
    assert count_primitives(jaxpr)["gt"] == 1 and jaxpr.eqns[-1].primitive.name == "and"
    before = check._cache_size()
    for x in (1, 2, -8):  # new values of a seen type: no recompile
        check(x)
    assert check._cache_size() == before
    ints = np.arange(-6, 7)
    np.testing.assert_array_equal(kiln.jit(lambda x: jnp.logical_or(x < -3, jnp.logical_not(x % 3 == 0)))(ints),
                                  np.logical_or(ints < -3, np.logical_not(ints % 3 == 0)))
    # "Bitwise operators (&, |, ~) can also be used with jit"
    bitwise = kiln.jit(lambda x: ((x % 2 == 0) & (x > 0)) | ~(x > -4))
    np.testing.assert_array_equal(bitwise(ints), ((ints % 2 == 0) & (ints > 0)) | ~(ints > -4))


# ---------------------------------------------- Python control flow without jit ------------------------------------

def test_grad_traces_with_concrete_values(page):
    """"Under plain jax.grad, ordinary Python control flow just works" (the page's `grad` import); vmap, which traces
    with abstract values, does not."""
    def f(x):
        if x < 3:
            return 3. * x ** 2
        else:
            return -4 * x

    for x in (2.0, 4.0, -1.5):
        np.testing.assert_allclose(float(page.grad(f)(x)), _fd(f, x), rtol=1e-5)
    with pytest.raises(kiln.errors.TracerBoolConversionError):
        kiln.vmap(f)(jnp.array([2.0, 4.0]))


def test_typeof_is_the_abstract_value():
    """The page: jit traces on the JAX type, e.g. float32[3], a ShapedArray (what jax.typeof returns)."""
    t = kiln.typeof(jnp.array([1., 2., 3.], jnp.float32))
    assert str(t) == "float32[3]" and type(t).__name__ == "ShapedArray"
    assert kiln.typeof(jnp.array([4., 5., 6.], jnp.float32)) == t
