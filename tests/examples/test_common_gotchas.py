"""The behaviours JAX's notebook "JAX - The Sharp Bits" (docs/notebooks/Common_Gotchas_in_JAX.md) documents, checked
under kiln with the notebook's code (imports changed: ``import kiln as jax``, ``import kiln.numpy as jnp``).

Besides the notebook's current sections (pure functions, in-place updates, jit with class methods, out-of-bounds
indexing, non-array inputs, dynamic shapes, double precision, divergences from NumPy), the sections it has moved to
other pages are covered with their pages' code: random numbers (the notebook until 2025; keys and split, against a
NumPy Threefry-2x32), control flow (docs/control-flow.md), NaN debugging (the notebook until 2025: ``jax_debug_nans``)
and type promotion (docs/type_promotion.rst: joins on its lattice). Where the notebook shows an error, the test
checks the exception class and that the message says what went wrong; where it prints values, the values, with
NumPy as the oracle where there is one.
"""
from __future__ import annotations

import contextlib
import re

import ml_dtypes
import numpy as np
import pytest
import threefry_oracle

import kiln as jax
import kiln.numpy as jnp
from kiln import jit, lax, make_jaxpr, random, tree_util

g = 0.  # the notebook's global, read and written by its impure functions


@contextlib.contextmanager
def _flag(name, value):
    """``jax.config.update(name, value)`` for the block, the old value restored afterwards."""
    old = getattr(jax.config, name)
    jax.config.update(name, value)
    try:
        yield
    finally:
        jax.config.update(name, old)


def _np(x):
    return np.asarray(x)


# ==================== Pure functions ================================================================================

def test_print_runs_when_tracing_only(capsys):
    def impure_print_side_effect(x):
        print("Executing function")  # This is a side-effect
        return x

    # The side-effects appear during the first run
    print("First call: ", jit(impure_print_side_effect)(4.))
    # Subsequent runs with parameters of same type and shape may not show the side-effect
    print("Second call: ", jit(impure_print_side_effect)(5.))
    # JAX re-runs the Python function when the type or shape of the argument changes
    print("Third call, different type: ", jit(impure_print_side_effect)(jnp.array([5.])))
    assert capsys.readouterr().out.splitlines() == [
        "Executing function", "First call:  4.0", "Second call:  5.0",
        "Executing function", "Third call, different type:  [5.]"]


def test_global_read_at_trace_time_is_baked_in(capsys):
    global g
    g = 0.

    def impure_uses_globals(x):
        return x + g

    try:
        # JAX captures the value of the global during the first run
        print("First call: ", jit(impure_uses_globals)(4.))
        g = 10.  # Update the global
        # Subsequent runs may silently use the cached value of the globals (kiln warns that it is stale)
        with pytest.warns(jax.errors.StaleValueWarning, match="'g'"):
            print("Second call: ", jit(impure_uses_globals)(5.))
        # JAX re-runs the Python function when the type or shape of the argument changes
        print("Third call, different type: ", jit(impure_uses_globals)(jnp.array([4.])))
    finally:
        g = 0.
    assert capsys.readouterr().out.splitlines() == [
        "First call:  4.0", "Second call:  5.0", "Third call, different type:  [14.]"]


def test_saved_global_is_a_leaked_tracer(capsys):
    global g
    g = 0.

    def impure_saves_global(x):
        global g
        g = x
        return x

    try:
        # JAX runs once the transformed function with special Traced values for arguments
        print("First call: ", jit(impure_saves_global)(4.))
        print("Saved global: ", g)  # Saved global has an internal JAX value
        assert capsys.readouterr().out.splitlines() == ["First call:  4.0", "Saved global:  JitTracer(~float32[])"]
        with pytest.raises(jax.errors.UnexpectedTracerError, match="impure_saves_global"):
            g + 1  # using it after its trace ended
        assert issubclass(jax.errors.UnexpectedTracerError, TypeError)
    finally:
        g = 0.


def test_pure_function_with_internal_state():
    def pure_uses_internal_state(x):
        state = dict(even=0, odd=0)
        for i in range(10):
            state['even' if i % 2 == 0 else 'odd'] += x
        return state['even'] + state['odd']

    assert float(jit(pure_uses_internal_state)(5.)) == 50.0


def test_iterators_in_loops_and_control_flow():
    # lax.fori_loop
    array = jnp.arange(10)
    assert int(lax.fori_loop(0, 10, lambda i, x: x + array[i], 0)) == 45  # expected result 45
    iterator = iter(range(10))
    assert int(lax.fori_loop(0, 10, lambda i, x: x + next(iterator), 0)) == 0  # unexpected result 0: traced once

    # lax.scan
    def func11(arr, extra):
        ones = jnp.ones(arr.shape)

        def body(carry, aelems):
            ae1, ae2 = aelems
            return (carry + ae1 * ae2 + extra, carry)
        return lax.scan(body, 0., (arr, ones))

    closed = make_jaxpr(func11)(jnp.arange(16), 5.)
    assert [str(e.primitive) for e in closed.jaxpr.eqns].count("scan") == 1
    carry, ys = func11(jnp.arange(16), 5.)
    expected = np.concatenate([[0.], np.cumsum(np.arange(16) + 5.)])  # carry_{k+1} = carry_k + k + 5
    np.testing.assert_array_equal(_np(ys), expected[:16])
    assert float(carry) == expected[16] == 200.
    with pytest.raises(TypeError, match="range_iterator"):
        make_jaxpr(func11)(iter(range(16)), 5.)  # throws error

    # lax.cond
    array_operand = jnp.array([0.])
    np.testing.assert_array_equal(_np(lax.cond(True, lambda x: x + 1, lambda x: x - 1, array_operand)), [1.])
    iter_operand = iter(range(10))
    with pytest.raises(TypeError, match="range_iterator"):
        lax.cond(True, lambda x: next(x) + 1, lambda x: next(x) - 1, iter_operand)  # throws error


# ==================== In-place updates ==============================================================================

def test_in_place_update_raises():
    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    with pytest.raises(TypeError, match=r"immutable.*\.at\["):
        jax_array[1, :] = 1.0
    with pytest.raises(TypeError, match=r"immutable.*\.at\["):  # under jit too

        @jit
        def f(x):
            x[0] = 1.
            return x
        f(jax_array)


def test_iadd_rebinds():
    jax_array = jnp.array([10, 20])
    jax_array_new = jax_array
    jax_array_new += 10
    np.testing.assert_array_equal(_np(jax_array_new), [20, 30])  # rebound to a new value [20, 30], but...
    np.testing.assert_array_equal(_np(jax_array), [10, 20])  # the original value is unmodified

    numpy_array = np.array([10, 20])
    numpy_array_new = numpy_array
    numpy_array_new += 10
    np.testing.assert_array_equal(numpy_array, [20, 30])  # NumPy's += is in place


def test_at_updates_match_numpy():
    jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
    updated_array = jax_array.at[1, :].set(1.0)
    expected = np.zeros((3, 3), np.float32)
    expected[1, :] = 1.0
    np.testing.assert_array_equal(_np(updated_array), expected)
    assert updated_array.dtype == np.float32
    np.testing.assert_array_equal(_np(jax_array), np.zeros((3, 3)))  # original array unchanged

    jax_array = jnp.ones((5, 6))
    new_jax_array = jax_array.at[::2, 3:].add(7.)
    expected = np.ones((5, 6), np.float32)
    expected[::2, 3:] += 7.
    np.testing.assert_array_equal(_np(new_jax_array), expected)

    x, ref = jnp.arange(10.0), np.arange(10.0, dtype=np.float32)
    for method, ufunc, value in [("multiply", np.multiply, 3.), ("divide", np.divide, 2.), ("power", np.power, 2.),
                                 ("min", np.minimum, 2.), ("max", np.maximum, 2.)]:
        expected = ref.copy()
        expected[1:4] = ufunc(expected[1:4], value)
        np.testing.assert_allclose(_np(getattr(x.at[1:4], method)(value)), expected, rtol=1e-7, err_msg=method)
    expected = ref.copy()
    expected[1:4] = -expected[1:4]
    np.testing.assert_array_equal(_np(x.at[1:4].apply(jnp.negative)), expected)
    np.testing.assert_array_equal(_np(x.at[2:5].get()), ref[2:5])
    # repeated indices: add accumulates (np.add.at), as a scatter-add does
    idx = np.array([0, 0, 1, 3, 3, 3])
    expected = np.zeros(4, np.float32)
    np.add.at(expected, idx, 1.)
    np.testing.assert_array_equal(_np(jnp.zeros(4).at[idx].add(1.)), expected)
    # under jit with a traced index
    np.testing.assert_array_equal(_np(jit(lambda x, i: x.at[i].set(-1.))(x, 4)), np.where(ref == 4, -1, ref))


# ==================== jit with class methods ========================================================================

def test_jit_method_without_static_self_raises():
    class CustomClass:
        def __init__(self, x, mul: bool):
            self.x = x
            self.mul = mul

        @jit  # <---- How to do this correctly?
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

    c = CustomClass(2, True)
    with pytest.raises(TypeError) as info:
        c.calc(3)
    message = str(info.value)
    assert "self" in message and "CustomClass" in message and "static" in message


def test_jit_method_strategies():
    # Strategy 1: JIT-compiled helper function
    @jit(static_argnums=0)
    def _calc(mul, x, y):
        if mul:
            return x * y
        return y

    class CustomClass1:
        def __init__(self, x, mul: bool):
            self.x = x
            self.mul = mul

        def calc(self, y):
            return _calc(self.mul, self.x, y)

    assert int(CustomClass1(2, True).calc(3)) == 6

    # Strategy 2: marking self as static (broken: a mutation is not seen)
    class CustomClass2:
        def __init__(self, x, mul: bool):
            self.x = x
            self.mul = mul

        @jit(static_argnums=0)
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

    c = CustomClass2(2, True)
    assert int(c.calc(3)) == 6
    c.mul = False
    assert int(c.calc(3)) == 6  # "Should print 3": the cached trace of the same (hash, ==) object

    # ... with __hash__ and __eq__, a mutation gives another cache key
    class CustomClass3(CustomClass2):
        @jit(static_argnums=0)
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

        def __hash__(self):
            return hash((self.x, self.mul))

        def __eq__(self, other):
            return isinstance(other, CustomClass3) and (self.x, self.mul) == (other.x, other.mul)

    # (it works "so long as you never mutate your object": equal objects share a trace, unequal ones do not)
    assert int(CustomClass3(2, True).calc(3)) == 6
    assert int(CustomClass3(2, False).calc(3)) == 3
    assert int(CustomClass3(2, True).calc(3)) == 6

    # Strategy 3: a pytree
    class CustomClass4:
        def __init__(self, x, mul: bool):
            self.x = x
            self.mul = mul

        @jit
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

        def _tree_flatten(self):
            children = (self.x,)  # arrays / dynamic values
            aux_data = {'mul': self.mul}  # static values
            return (children, aux_data)

        @classmethod
        def _tree_unflatten(cls, aux_data, children):
            return cls(*children, **aux_data)

    tree_util.register_pytree_node(CustomClass4, CustomClass4._tree_flatten, CustomClass4._tree_unflatten)
    c = CustomClass4(2, True)
    assert int(c.calc(3)) == 6
    c.mul = False  # mutation is detected
    assert int(c.calc(3)) == 3
    c = CustomClass4(jnp.array(2), True)  # non-hashable x is supported
    assert int(c.calc(3)) == 6


# ==================== Out-of-bounds indexing ========================================================================

def test_numpy_raises_out_of_bounds():
    with pytest.raises(IndexError):
        np.arange(10)[11]


def test_gathers_clamp():
    assert int(jnp.arange(10)[11]) == 9  # the last value
    assert float(jnp.arange(10.0).at[11].get()) == 9.0
    assert np.isnan(float(jnp.arange(10.0).at[11].get(mode='fill', fill_value=jnp.nan)))
    x = jnp.arange(10.0)
    assert float(x[-11]) == 0.0  # -11 counts from the end (-1), then clamps to 0
    np.testing.assert_array_equal(_np(x[jnp.array([0, 11, -20])]), [0., 9., 0.])
    np.testing.assert_array_equal(_np(x.at[jnp.array([11, -20])].get(mode='clip')), [9., 0.])
    np.testing.assert_array_equal(_np(x.at[jnp.array([11, -20, 3])].get(mode='fill', fill_value=-1.)), [-1., -1., 3.])
    assert float(jit(lambda x, i: x[i])(x, 11)) == 9.0  # a traced index
    np.testing.assert_array_equal(_np(jax.vmap(lambda i: x[i])(jnp.array([11, -20, 3]))), [9., 0., 3.])
    # jnp.take's default mode is "fill" (NaN for floats); "clip" and "wrap" as NumPy's
    np.testing.assert_array_equal(_np(jnp.take(x, jnp.array([11, 2]))), [np.nan, 2.])
    np.testing.assert_array_equal(_np(jnp.take(x, jnp.array([11, 2]), mode='clip')), np.take(np.arange(10.), [11, 2],
                                                                                              mode='clip'))
    np.testing.assert_array_equal(_np(jnp.take(x, jnp.array([11, 2]), mode='wrap')), np.take(np.arange(10.), [11, 2],
                                                                                              mode='wrap'))
    with pytest.raises(NotImplementedError, match="raise"):
        jnp.take(x, jnp.array([11, 2]), mode='raise')


def test_scatters_drop():
    x, ref = jnp.arange(10.0), np.arange(10.0)
    np.testing.assert_array_equal(_np(x.at[11].set(99.)), ref)  # skipped
    np.testing.assert_array_equal(_np(x.at[-11].set(99.)), ref)
    np.testing.assert_array_equal(_np(x.at[jnp.array([1, 11])].add(5.)), np.where(ref == 1, 6., ref))
    np.testing.assert_array_equal(_np(x.at[11].set(99., mode='drop')), ref)
    np.testing.assert_array_equal(_np(x.at[11].set(99., mode='clip')), np.where(ref == 9, 99., ref))
    np.testing.assert_array_equal(_np(x.at[2].set(99., mode='promise_in_bounds')), np.where(ref == 2, 99., ref))
    np.testing.assert_array_equal(_np(jit(lambda x, i: x.at[i].set(-1.))(x, 20)), ref)  # a traced index
    with pytest.raises(ValueError, match="bogus"):
        x.at[2].set(99., mode='bogus')


def test_nanargmin_of_all_nans():
    assert int(jnp.nanargmin(jnp.array([jnp.nan, jnp.nan]))) == -1
    np.testing.assert_array_equal(_np(jnp.nanargmax(jnp.array([[jnp.nan, jnp.nan], [1., 2.]]), axis=1)), [-1, 1])
    with pytest.raises(ValueError):
        np.nanargmin(np.array([np.nan, np.nan]))  # where NumPy raises


# ==================== Non-array inputs ==============================================================================

def test_lists_are_not_arrays():
    assert np.sum([1, 2, 3]) == 6
    with pytest.raises(TypeError) as info:
        jnp.sum([1, 2, 3])
    assert "sum" in str(info.value) and "list" in str(info.value)
    for f, arg in [(jnp.sum, (1, 2, 3)), (jnp.mean, [1., 2.]), (jnp.sqrt, [1., 2.]), (jnp.zeros_like, [1, 2])]:
        with pytest.raises(TypeError, match="tuple|list"):
            f(arg)

    def permissive_sum(x):
        return jnp.sum(jnp.array(x))

    x = list(range(10))
    assert int(permissive_sum(x)) == 45
    assert len(make_jaxpr(permissive_sum)(x).jaxpr.invars) == 10  # one input per list element
    assert int(jnp.sum(jnp.array(x))) == 45


# ==================== Random numbers ================================================================================

def test_threefry_oracle_known_answer():
    out = threefry_oracle.threefry2x32((0x13198a2e, 0x03707344), np.uint32(0x243f6a88), np.uint32(0x85a308d3))
    assert [int(v) for v in out] == [0xc4923a9c, 0x483df7a0]  # the Random123 test vector


def test_random_keys_and_split(capsys):
    key = random.key(0)
    assert key.shape == () and "key<fry>" in str(key.dtype)
    np.testing.assert_array_equal(_np(random.key_data(key)), [0, 0])
    np.testing.assert_array_equal(_np(random.PRNGKey(0)), [0, 0])  # the raw uint32[2] key

    print(random.normal(key, shape=(1,)))
    print(random.normal(key, shape=(1,)))  # No no no! The same key gives the same numbers
    first, second = capsys.readouterr().out.splitlines()
    assert first == second
    np.testing.assert_allclose(_np(random.normal(key, shape=(1,))), threefry_oracle.normal([0, 0], 1), rtol=1e-6)

    keys = [np.array([0, 0], np.uint32)]
    key, subkey = random.split(key)
    normal_pseudorandom = random.normal(subkey, shape=(1,))
    expected_key, expected_subkey = threefry_oracle.split(keys[-1], 2)
    np.testing.assert_array_equal(_np(random.key_data(key)), expected_key)
    np.testing.assert_array_equal(_np(random.key_data(subkey)), expected_subkey)
    np.testing.assert_allclose(_np(normal_pseudorandom), threefry_oracle.normal(expected_subkey, 1), rtol=1e-6)

    key, subkey = random.split(key)  # again: new keys
    np.testing.assert_array_equal(_np(random.key_data(key)), threefry_oracle.split(expected_key, 2)[0])
    np.testing.assert_array_equal(_np(random.key_data(subkey)), threefry_oracle.split(expected_key, 2)[1])

    parent = _np(random.key_data(key))
    key, *subkeys = random.split(key, 4)
    expected = threefry_oracle.split(parent, 4)
    np.testing.assert_array_equal(_np(random.key_data(key)), expected[0])
    draws = []
    for subkey, want in zip(subkeys, expected[1:]):
        np.testing.assert_array_equal(_np(random.key_data(subkey)), want)
        draws.append(float(random.normal(subkey, shape=(1,))[0]))
        np.testing.assert_allclose(draws[-1], threefry_oracle.normal(want, 1)[0], rtol=1e-6)
    assert len(set(draws)) == 3
    u = random.uniform(random.key(7), (1000,))
    want = threefry_oracle.uniform(_np(random.key_data(random.key(7))), 1000)
    np.testing.assert_array_equal(_np(u), want)  # bit for bit


# ==================== Control flow (docs/control-flow.md) ===========================================================

def test_python_loops_unroll_under_jit():
    @jit
    def f(x):
        for i in range(3):  # noqa: B007
            x = 2 * x
        return x
    assert int(f(3)) == 24

    @jit
    def g(x):
        y = 0.
        for i in range(x.shape[0]):
            y = y + x[i]
        return y
    assert float(g(jnp.array([1., 2., 3.]))) == 6.0


def test_python_if_on_traced_values_raises():
    @jit
    def f(x):
        if x < 3:
            return 3. * x ** 2
        else:
            return -4 * x

    with pytest.raises(jax.errors.ConcretizationTypeError) as info:
        f(2)  # This will fail!
    assert isinstance(info.value, jax.errors.TracerBoolConversionError) and isinstance(info.value, TypeError)
    message = str(info.value)
    assert "argument x" in message and "static_argnums" in message and "lax.cond" in message

    @jit
    def g(x):
        return (x > 0) and (x < 3)

    with pytest.raises(jax.errors.TracerBoolConversionError, match="argument x"):
        g(2)  # This will fail!

    def loopy(x):
        while x < 10:
            x = x + 1
        return x

    with pytest.raises(jax.errors.TracerBoolConversionError):
        jit(loopy)(1)


def test_static_arguments_fix_it(capsys):
    def f(x):
        if x < 3:
            return 3. * x ** 2
        else:
            return -4 * x

    f = jit(f, static_argnames='x')
    assert float(f(2.)) == 12.0
    assert float(f(4.)) == -16.0

    def f(x, n):
        y = 0.
        for i in range(n):
            y = y + x[i]
        return y

    f = jit(f, static_argnames='n')
    assert float(f(jnp.array([2., 3., 4.]), 2)) == 5.0

    def example_fun(length, val):
        return jnp.ones((length,)) * val

    np.testing.assert_array_equal(_np(example_fun(5, 4)), np.full(5, 4.))  # un-jit'd works fine
    bad_example_jit = jit(example_fun)
    with pytest.raises(jax.errors.ConcretizationTypeError) as info:
        bad_example_jit(10, 4)  # this will fail
    assert isinstance(info.value, TypeError)
    assert "shape" in str(info.value) and "length" in str(info.value) and "static" in str(info.value)
    # static_argnames tells JAX to recompile on changes at these argument positions
    good_example_jit = jit(example_fun, static_argnames='length')
    np.testing.assert_array_equal(_np(good_example_jit(10, 4)), np.full(10, 4.))
    np.testing.assert_array_equal(_np(good_example_jit(5, 4)), np.full(5, 4.))

    @jit
    def f(x):
        print(x)
        y = 2 * x
        print(y)
        return y

    capsys.readouterr()
    assert int(f(2)) == 4
    assert capsys.readouterr().out.splitlines() == ["JitTracer(~int32[])", "JitTracer(~int32[])"]


def test_structured_control_flow():
    operand = jnp.array([0.])
    np.testing.assert_array_equal(_np(lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand)), [1.])
    np.testing.assert_array_equal(_np(lax.cond(False, lambda x: x + 1, lambda x: x - 1, operand)), [-1.])
    out = lax.while_loop(lambda x: x < 10, lambda x: x + 1, 0)
    assert int(out) == 10 and out.dtype == np.int32
    out = lax.fori_loop(0, 10, lambda i, x: x + i, 0)
    assert int(out) == 45 and out.dtype == np.int32
    # traced bounds under jit; a Python-int bound under grad
    assert int(jit(lambda n: lax.fori_loop(0, n, lambda i, x: x + i, 0))(5)) == 10
    assert float(jax.grad(lambda x: lax.fori_loop(0, 3, lambda i, x: x * 2., x))(1.)) == 8.0
    assert float(lax.switch(2, [lambda x: x, lambda x: x + 1, lambda x: x + 2], 1.)) == 3.0
    # a non-scalar predicate, branches of different types
    with pytest.raises(TypeError, match="scalar"):
        lax.cond(jnp.array([True, False]), lambda x: x, lambda x: x, 1.)
    with pytest.raises(TypeError, match=r"f32\[2\]"):
        lax.cond(True, lambda x: x, lambda x: jnp.ones(2), 1.)
    # reverse mode through a while_loop: a ValueError, as JAX's, saying what to do instead
    with pytest.raises(ValueError, match="reverse-mode differentiation"):
        jax.grad(lambda x: lax.while_loop(lambda c: c < 10., lambda c: c * 2., x))(1.)


def test_logical_operators():
    def python_check_positive_even(x):
        is_even = x % 2 == 0
        # `and` short-circults, so when `is_even` is `False`, `x > 0` is not evaluated.
        return is_even and (x > 0)

    @jit
    def jax_check_positive_even(x):
        is_even = x % 2 == 0
        # `logical_and` does not short circuit, so `x > 0` is always evaluated.
        return jnp.logical_and(is_even, x > 0)

    assert python_check_positive_even(24) is True
    assert bool(jax_check_positive_even(24)) is True
    x = jnp.array([-1, 2, 5])
    np.testing.assert_array_equal(_np(jax_check_positive_even(x)), [False, True, False])
    with pytest.raises(ValueError, match="ambiguous"):
        python_check_positive_even(x)


def test_grad_of_python_control_flow():
    def f(x):
        if x < 3:
            return 3. * x ** 2
        else:
            return -4 * x

    assert float(jax.grad(f)(2.)) == 12.0  # ok!
    assert float(jax.grad(f)(4.)) == -4.0  # ok!


# ==================== Dynamic shapes ================================================================================

def test_dynamic_shapes():
    def nansum(x):
        mask = ~jnp.isnan(x)  # boolean mask selecting non-nan values
        x_without_nans = x[mask]
        return x_without_nans.sum()

    x = jnp.array([1, 2, jnp.nan, 3, 4])
    assert float(nansum(x)) == 10.0  # outside jit
    with pytest.raises(IndexError) as info:
        jax.jit(nansum)(x)
    assert isinstance(info.value, jax.errors.NonConcreteBooleanIndexError)
    assert "bool[5]" in str(info.value) and "where" in str(info.value)

    @jax.jit
    def nansum_2(x):
        mask = ~jnp.isnan(x)  # boolean mask selecting non-nan values
        return jnp.where(mask, x, 0).sum()

    assert float(nansum_2(x)) == 10.0
    with pytest.raises(jax.errors.ConcretizationTypeError, match="arange"):
        jit(lambda n: jnp.arange(n))(5)
    with pytest.raises(jax.errors.ConcretizationTypeError, match="size"):
        jit(jnp.nonzero)(jnp.array([0, 1, 2]))
    np.testing.assert_array_equal(_np(jit(lambda x: jnp.nonzero(x, size=3, fill_value=-1)[0])(jnp.array([0, 1, 2]))),
                                  [1, 2, -1])


# ==================== NaNs ==========================================================================================

def test_debug_nans():
    assert np.isnan(float(jnp.divide(0., 0.)))  # off: a NaN
    with _flag("jax_debug_nans", True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\).*div"):
            jnp.divide(0., 0.)

        @jit
        def f(x, y):
            a = x * y
            b = (x + y) / (x - y)
            c = a + 2
            return a + b * c

        x = jnp.array([2., 0.])
        y = jnp.array([3., 0.])
        with pytest.raises(FloatingPointError, match=r"nan.*div") as info:
            f(x, y)
        assert "b = (x + y) / (x - y)" in _source_line(info.value)
        # in a gradient's backward pass: where's derivative multiplies 0 by sqrt's infinite derivative
        with pytest.raises(FloatingPointError, match="nan"):
            jax.grad(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.))(0.)
        assert float(jnp.divide(1., 2.)) == 0.5  # no NaN, no error
    np.testing.assert_array_equal(_np(f(x, y)), [-34., np.nan])  # off again
    with _flag("jax_debug_infs", True), pytest.raises(FloatingPointError, match="inf"):
        jnp.divide(1., 0.)


def _source_line(error):
    """The source line a debug_nans error names (``... at FILE:LINE (function)``)."""
    m = re.search(r" at (\S+):(\d+) ", str(error))
    assert m, str(error)
    with open(m.group(1)) as f:
        return f.read().splitlines()[int(m.group(2)) - 1]


# ==================== Double (64bit) precision ======================================================================

def test_double_precision():
    with pytest.warns(UserWarning, match="float64 is not available"):
        x = random.uniform(random.key(0), (1000,), dtype=jnp.float64)
    assert x.dtype == np.float32
    with _flag("jax_enable_x64", True):
        assert jax.config.jax_enable_x64
        x = random.uniform(random.key(0), (1000,), dtype=jnp.float64)
        assert x.dtype == np.float64  # --> dtype('float64')
        v = _np(x)
        assert np.all((v >= 0) & (v < 1)) and len(np.unique(v)) == 1000
        assert np.any(v.astype(np.float32).astype(np.float64) != v)  # more than float32's bits
        assert jnp.array([1, 2, 3]).dtype == np.int64 and jnp.array(1.5).dtype == np.float64
        assert jnp.zeros(2).dtype == np.float64 and jnp.arange(3).dtype == np.int64
        assert jnp.array(2 ** 40).dtype == np.int64 and int(jnp.array(2 ** 40)) == 2 ** 40
        assert (jnp.float32(1) + 1.0).dtype == np.float32  # a weak Python float keeps float32
    assert jnp.array(1.5).dtype == np.float32 and jnp.array([1, 2, 3]).dtype == np.int32
    with pytest.raises(OverflowError, match="int32"):
        jnp.array(2 ** 40)  # does not fit the default int32 without x64
    with jax.enable_x64(True):
        assert jnp.array(1.5).dtype == np.float64
    assert jnp.array(1.5).dtype == np.float32


def test_array_dtypes():
    for dtype in [jnp.int8, jnp.uint8, jnp.int16, jnp.float16, jnp.bfloat16, jnp.float32, jnp.complex64, bool,
                  'float16', 'uint8']:
        a = jnp.array([1, 2, 3], dtype=dtype)
        assert a.dtype == np.dtype(dtype), dtype
        np.testing.assert_array_equal(_np(a), np.array([1, 2, 3], dtype=dtype))
    assert jnp.array([1, 2, 3], dtype=int).dtype == np.int32  # Python types: the default widths
    assert jnp.array([1, 2, 3], dtype=float).dtype == np.float32
    assert jnp.array([1, 2, 3], dtype=complex).dtype == np.complex64
    np.testing.assert_array_equal(_np(jnp.array([1.7, -2.7], dtype=jnp.int32)), np.array([1.7, -2.7]).astype(np.int32))
    a = jnp.array([1, 2.5, True])
    assert a.dtype == np.float32
    np.testing.assert_array_equal(_np(a), [1., 2.5, 1.])
    assert jnp.array(1.0).weak_type and jnp.asarray(3).weak_type and not jnp.array([1.0]).weak_type
    with pytest.raises(TypeError, match="foo"):
        jnp.array([1, 2, 3], dtype='foo')
    with pytest.raises(ValueError, match="inhomogeneous"):
        jnp.array([[1, 2], [3]])
    with pytest.raises(TypeError):
        jnp.array(["a"])


# ==================== Type promotion (docs/type_promotion.rst) ======================================================

# The page's lattice: promotion is the join (least upper bound) of two types on it.
_LATTICE = {
    'b1': ['i*'], 'u1': ['u2', 'i2'], 'u2': ['i4', 'u4'], 'u4': ['u8', 'i8'], 'u8': ['f*'],
    'i*': ['u1', 'i1'], 'i1': ['i2'], 'i2': ['i4'], 'i4': ['i8'], 'i8': ['f*'],
    'f*': ['c*', 'f2', 'bf'], 'bf': ['f4'], 'f2': ['f4'], 'f4': ['c8', 'f8'], 'f8': ['c16'],
    'c*': ['c8'], 'c8': ['c16'], 'c16': [],
}
_DTYPES = {'b1': np.bool_, 'u1': np.uint8, 'u2': np.uint16, 'u4': np.uint32, 'u8': np.uint64, 'i1': np.int8,
           'i2': np.int16, 'i4': np.int32, 'i8': np.int64, 'bf': ml_dtypes.bfloat16, 'f2': np.float16,
           'f4': np.float32, 'f8': np.float64, 'c8': np.complex64, 'c16': np.complex128}
_WEAK_X64 = {'i*': 'i8', 'f*': 'f8', 'c*': 'c16'}  # a weak result: the default type of its kind (with x64)


def _above(node):
    out = {node}
    for parent in _LATTICE[node]:
        out |= _above(parent)
    return out


def _join(a, b):
    common = _above(a) & _above(b)
    (least,) = [c for c in common if common <= _above(c)]
    return least


def test_type_promotion_table():
    """Every pair of the page's table (traced with eval_shape: the types of ``a + b`` without compiling it)."""
    def spec(code):
        return jax.ShapeDtypeStruct((1,), _DTYPES[code])

    with _flag("jax_enable_x64", True):
        for a in _DTYPES:
            for b in _DTYPES:
                j = _join(a, b)
                want = np.dtype(_DTYPES[_WEAK_X64.get(j, j)])
                assert jnp.promote_types(_DTYPES[a], _DTYPES[b]) == want, (a, b)
                assert jax.eval_shape(lambda x, y: x + y, spec(a), spec(b)).dtype == want, (a, b)
            # with Python scalars (weak types): the join with i*, f*, c*; a weak result stays weak
            for scalar, kind in [(1, 'i*'), (1.0, 'f*'), (1j, 'c*')]:
                j = _join(a, kind)
                out = jax.eval_shape(lambda x: x + scalar, spec(a))
                assert out.dtype == np.dtype(_DTYPES[_WEAK_X64.get(j, j)]), (a, kind)
                assert out.weak_type == (j in _WEAK_X64), (a, kind)
        # and computed, for a few pairs
        for a, b in [('u1', 'i1'), ('u8', 'i8'), ('bf', 'f2'), ('i4', 'f2'), ('b1', 'c8')]:
            j = _join(a, b)
            out = jnp.ones(2, _DTYPES[a]) + jnp.ones(2, _DTYPES[b])
            assert out.dtype == np.dtype(_DTYPES[_WEAK_X64.get(j, j)]), (a, b)
            np.testing.assert_array_equal(_np(out), [2, 2])


def test_type_promotion_examples():
    assert (jnp.int16(1) + 1).dtype == np.int16  # a Python scalar takes the JAX value's precision
    assert (jnp.int16(1) + np.array(1)).dtype == np.int32  # a NumPy array: the lattice (int64, canonicalized)
    with _flag("jax_enable_x64", True):
        assert (jnp.int16(1) + np.array(1)).dtype == np.int64
    assert (jnp.array([1], jnp.int32) + jnp.array([1.], jnp.float16)).dtype == np.float16  # NumPy: float64
    assert (jnp.array([1], jnp.bfloat16) + jnp.array([1], jnp.float16)).dtype == np.float32
    assert (jnp.array([1], jnp.int8) + jnp.array([1], jnp.uint8)).dtype == np.int16
    out = jnp.array([1], jnp.uint8) + 3.
    assert out.dtype == np.float32 and out.weak_type


# ==================== Miscellaneous divergences from NumPy ==========================================================

def test_unsafe_casts_saturate():
    np.testing.assert_array_equal(np.arange(254.0, 258.0).astype('uint8'), [254, 255, 0, 1])
    out = jnp.arange(254.0, 258.0).astype('uint8')
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(_np(out), [254, 255, 255, 255])


@pytest.mark.backend("cpu")
def test_subnormals_flush_to_zero():
    subnormal = jnp.float32(1E-45)
    assert float(subnormal) == float(np.float32(1E-45)) > 0  # subnormals are representable
    assert float(subnormal + 0) == 0.0  # but are flushed to zero within operations
