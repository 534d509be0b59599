"""JAX's docs page docs/new_docs/201/jit.md ("Just-in-time compilation": what is traced and when it is traced again,
static arguments, the cache, methods, refs, buffer donation, asynchronous dispatch), ported to kiln by changing
imports (tests/examples/jax_ported/docs_jit_201.py), checked against oracles that do not involve JAX: NumPy float64
for the values (SELU, log2, the matmul), Python arithmetic for the loops and methods, and the page's claims. Whether
a call traces (and compiles) again is counted by the Python side effects of the traced function (a counting
function put in place of the page's, for the caching section's loops) or by the jitted function's cache size; the
in-place and donated buffers by their addresses and ``is_deleted()``; the errors by their class and by what their
messages say went wrong.

The page's keyword-argument sketch says ``donate_argnums`` donates nothing when the arguments are passed by
keyword. That is not what JAX 0.10.2 does: jit maps ``donate_argnums`` to the parameters' names
(jax/_src/api_util.py ``infer_argnums_and_argnames``), so they are donated by keyword too, and for a function taking
only ``**kwargs`` ``donate_argnums`` is an error. kiln does as JAX (test_docs_jit_201_against_jax.py checks it).
"""
from __future__ import annotations

import contextlib
import inspect
import io
import logging

import numpy as np
import pytest
from ported import load

import kiln
import kiln.numpy as jnp
from kiln.errors import StaleValueWarning


@pytest.fixture(scope="module")
def page():
    return load("docs_jit_201")


def _run(fn, *args):
    """(what fn returns, what it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue()


def _is(x, value, dtype, weak=False):
    assert isinstance(x, kiln.Array) and (x.dtype, x.weak_type) == (np.dtype(dtype), weak)
    np.testing.assert_array_equal(np.asarray(x), value)


def counting(fn):
    """fn, counting its Python calls (under jit: its traces) in ``.calls``, a list of one count."""
    calls = [0]

    def counted(*args, **kwargs):
        calls[0] += 1
        return fn(*args, **kwargs)
    counted.calls = calls
    return counted


# ---------------------------------------------- What compilation buys ------------------------------------------------

def _np_selu(x, alpha=1.67, lambda_=1.05):
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore"):
        return lambda_ * np.where(x > 0, x, alpha * np.exp(x) - alpha)


def test_selu_eager_and_jitted_match_numpy(page, monkeypatch):
    x, out = page.selu_block()  # the page's size, 1000000
    _is(x, np.arange(1000000), np.int32)
    assert (out.dtype, out.shape, out.weak_type) == (np.float32, (1000000,), False)
    expected = _np_selu(x)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    # "Subsequent calls never run the Python function selu at all": the warm-up traces, the timed call does not
    counted = counting(page.selu)
    monkeypatch.setattr(page, "selu", counted)
    xs = x[:1000]
    selu_jit, out_jit = page.selu_jit_block(xs)
    assert counted.calls[0] == 1
    np.testing.assert_allclose(out_jit, expected[:1000], rtol=1e-6)
    selu_jit(xs)
    assert counted.calls[0] == 1
    # negative inputs take the other branch: alpha * exp(x) - alpha
    neg = jnp.asarray(np.linspace(-5.0, 0.5, 12, dtype=np.float32))
    np.testing.assert_allclose(selu_jit(neg), _np_selu(np.asarray(neg)), rtol=2e-6, atol=1e-7)


# ---------------------------------------------- What the compiled function captures ----------------------------------

def test_rank_1_trace_is_the_identity_and_rank_2_traces_again(page):
    closed = page.log2_if_rank_2_jaxpr_block()
    # "For a rank-1 input, the compiled function is just the identity — the other branch is gone"
    assert closed.jaxpr.eqns == [] and closed.jaxpr.outvars == closed.jaxpr.invars
    assert str(closed) == "{ lambda ; a:i32[3]. let  in (a,) }"
    jitted = kiln.jit(page.log2_if_rank_2)
    _is(jitted(jnp.array([1, 2, 3])), [1, 2, 3], np.int32)
    # "a rank-2 input triggers a fresh trace that takes the other branch"
    m = np.array([[1.0, 2.0, 8.0], [0.5, 3.0, 1024.0]], np.float32)
    out = jitted(jnp.asarray(m))
    np.testing.assert_allclose(out, np.log2(m.astype(np.float64)), rtol=1e-6)
    assert jitted._cache_size() == 2
    jitted(jnp.array([4, 5, 6]))  # the same JAX type as the first call: the cached executable
    assert jitted._cache_size() == 2


def test_side_effects_run_once_at_trace_time():
    """The page: side effects "run (once) at trace time and don't exist in the compiled code"."""
    seen = []

    def impure(x):
        seen.append(x.shape)
        return x + 1

    jitted = kiln.jit(impure)
    for v in (1.0, 2.0, 3.0):
        np.testing.assert_array_equal(jitted(jnp.float32(v)), v + 1)
    assert seen == [()]


def test_check_tracer_leaks_finds_a_leaked_tracer():
    """The page: "to check for leaked tracers, use jax.check_tracer_leaks" (JAX raises an Exception: "Leaked trace
    DynamicJaxprTrace", naming what refers to the tracer)."""
    leaked = []

    def leak(x):
        leaked.append(x)
        return x + 1

    with pytest.raises(kiln.errors.UnexpectedTracerError) as info:
        with kiln.check_tracer_leaks():
            kiln.jit(leak)(1.0)
    msg = str(info.value)
    assert "created while tracing leak is still referenced after that trace ended" in msg and "list" in msg


# ---------------------------------------------- Why can't we just jit everything? ------------------------------------

@pytest.mark.parametrize("block, arg", [("f_jit_block", "x"), ("g_jit_block", "n")])
def test_value_dependent_python_control_flow_raises(page, block, arg):
    # the page's `raises-exception` cells: JAX raises TracerBoolConversionError (a ConcretizationTypeError)
    with pytest.raises(kiln.errors.TracerBoolConversionError) as info:
        getattr(page, block)()
    assert isinstance(info.value, kiln.errors.ConcretizationTypeError) and isinstance(info.value, TypeError)
    msg = str(info.value)
    assert "traced" in msg and f"argument {arg}" in msg and "static_argnums" in msg and "lax.cond" in msg


def test_jitting_only_the_loop_body(page):
    _is(page.g_inner_jitted_block(), 30, np.int32, weak=True)  # 10 + 20 increments
    assert page.g_inner_jitted(7, 3) == 10


# ---------------------------------------------- Marking arguments as static ------------------------------------------

def test_static_arguments(page):
    f_jit_correct, out = _run(page.f_jit_correct_block)
    assert out == "10\n"  # 10 > 0: f returns x
    g_jit_correct, out = _run(page.g_jit_correct_block)
    assert out == "30\n"
    assert _run(page.g_jit_decorated_block)[1] == "30\n"
    # "JAX recompiles whenever a static argument takes a value it hasn't seen"
    assert f_jit_correct._cache_size() == 1
    f_jit_correct(10)
    assert f_jit_correct._cache_size() == 1
    assert f_jit_correct(-3) == -6  # the other branch: 2 * x
    assert f_jit_correct._cache_size() == 2
    for n, size in ((20, 1), (5, 2), (20, 2), (0, 3)):
        assert int(g_jit_correct(1, n)) == 1 + n
        assert g_jit_correct._cache_size() == size
    assert int(page.g_jit_decorated(2.5, n=3)) == 5


@pytest.mark.parametrize("value", [[1], np.array([1])], ids=["list", "ndarray"])
def test_static_arguments_must_be_hashable(page, value):
    # JAX: ValueError: Non-hashable static arguments are not supported
    with pytest.raises(ValueError) as info:
        kiln.jit(page.f, static_argnums=0)(value)
    assert "'x'" in str(info.value) and "hashable" in str(info.value)


# ---------------------------------------------- JIT and caching ------------------------------------------------------

def test_the_caching_loops_print_and_count_their_traces(page, monkeypatch):
    # kiln warns (RetraceWarning, JAX is silent: README "Warnings JAX does not give") when the page's 20-iteration
    # loops jit a fresh partial or lambda more than 10 times in a row
    with pytest.warns(kiln.errors.RetraceWarning) as record:
        (a, b, c), out = _run(page.caching_block)
    retraces = [str(w.message) for w in record if issubclass(w.category, kiln.errors.RetraceWarning)]
    assert len(retraces) == 2
    for message, name in zip(retraces, ("partial(unjitted_loop_body)", "<lambda>")):
        assert message.startswith(f"kiln.jit({name})") and "different function objects in a row" in message
        assert "create it and jit it once" in message
    assert out.splitlines() == ["jit called in a loop with partials:", "jit called in a loop with lambdas:",
                                "jit called in a loop with caching:"]
    for r in (a, b, c):
        _is(r, 30, np.int32, weak=True)
    # "freshly-created lambdas and partial objects ... recompile every time"; the same function object is traced once
    counted = counting(lambda prev_i: prev_i + 1)
    monkeypatch.setattr(page, "unjitted_loop_body", counted)
    for loop, traces in ((page.g_inner_jitted_partial, 7), (page.g_inner_jitted_lambda, 7),
                         (page.g_inner_jitted_normal, 1)):
        counted.calls[0] = 0
        assert int(loop(10, 7)) == 17
        assert counted.calls[0] == traces, loop.__name__


def _call_lines(page):
    """The lines of the explain block that call `double`, in the port's file."""
    lines, start = inspect.getsourcelines(page.explain_cache_misses_block)
    return [start + i for i, line in enumerate(lines) if line.strip().startswith("_ = double(")]


def test_explain_cache_misses(page, recwarn):
    try:
        page.explain_cache_misses_block()
    finally:
        page.explain_cache_misses_off_block()
    misses = [w for w in recwarn if "kiln.jit(double)" in str(w.message)]
    # two misses: the first call (never seen) and the third (x's JAX type changed); the second is a silent hit
    assert len(misses) == 2, [str(w.message) for w in recwarn]
    first, third = (str(w.message) for w in misses)
    assert "cache miss, tracing for the first time (a function never called before" in first
    assert "cache miss" in third and "argument shapes/dtypes changed (i32[3] -> f32[3])" in third
    # "Each miss cites the call site"
    lines = _call_lines(page)
    assert [(w.filename, w.lineno) for w in misses] == [(page.__file__, lines[0]), (page.__file__, lines[2])]
    assert not kiln.config.explain_cache_misses
    # off again: nothing more
    recwarn.clear()
    double = kiln.jit(lambda x: 2 * x)
    double(jnp.arange(3))
    double(jnp.arange(3.0))
    assert not [w for w in recwarn if "cache miss" in str(w.message)]


def test_a_fresh_function_per_call_is_a_first_trace_miss_every_time(page, recwarn):
    """The page: the fresh-function pitfall's "telltale is a never seen function miss on every call"."""
    with kiln.explain_cache_misses():
        page.g_inner_jitted_lambda(10, 3)
    misses = [str(w.message) for w in recwarn if "cache miss" in str(w.message)]
    assert len(misses) == 3 and all("tracing for the first time" in m for m in misses)
    assert all("another function made from the same code was traced before" in m for m in misses[1:])


def test_clear_caches_drops_the_traces():
    counted = counting(lambda x: x + 1)
    jitted = kiln.jit(counted)
    jitted(1.0)
    jitted(2.0)
    assert counted.calls[0] == 1
    kiln.clear_caches()
    np.testing.assert_array_equal(jitted(3.0), 4.0)
    assert counted.calls[0] == 2


def test_log_compiles_logs_compilations_only(caplog):
    jitted = kiln.jit(lambda x: x * 3)
    kiln.config.update("jax_log_compiles", True)
    try:
        with caplog.at_level(logging.WARNING, logger="kiln"):
            jitted(1.0)
            compiles = [r.getMessage() for r in caplog.records]
            caplog.clear()
            jitted(2.0)  # a cache hit: no line
            assert not caplog.records
    finally:
        kiln.config.update("jax_log_compiles", False)
    # one compilation (or, where kiln's persistent cache already holds the program, one load from it)
    assert sum("XLA compilation of jit(<lambda>)" in m or "Persistent compilation cache hit for 'jit__lambda_'" in m
               for m in compiles) == 1


# ---------------------------------------------- Using `jit` with methods ---------------------------------------------

def test_jitting_a_method_with_self_raises(page):
    # JAX: TypeError: Error interpreting argument to <function CustomClass.calc> as an abstract array
    with pytest.raises(TypeError) as info:
        page.method_error_block()
    msg = str(info.value)
    assert "argument self is a CustomClass" in msg and "not a valid array type" in msg
    assert "static_argnames='self'" in msg


def test_strategy_1_a_jitted_helper(page):
    (c, _calc), out = _run(page.helper_function_block)
    assert out == "6\n"  # 2 * 3
    c.mul = False  # the helper takes mul as an argument: no stale value
    _is(c.calc(3), 3, np.int32, weak=True)
    assert _calc._cache_size() == 2


def test_strategy_2_static_self_serves_stale_code(page):
    c, out = _run(page.static_self_block)
    assert out == "6\n"
    # the page: "Should print 3... but the cache doesn't know mul changed": JAX prints 6; kiln too, and warns
    with pytest.warns(StaleValueWarning, match="the attribute 'mul' of the CustomClass object is now False"):
        _, out = _run(page.stale_static_self_block, c)
    assert out == "6\n"


def test_strategy_2_with_hash_and_eq(page):
    CustomClass = page.hashable_self_block()
    _is(CustomClass(2, True).calc(3), 6, np.int32, weak=True)
    # equal objects share the compiled code; "differing objects actually miss the cache"
    _is(CustomClass(2, True).calc(3), 6, np.int32, weak=True)
    assert CustomClass.calc._cache_size() == 1
    _is(CustomClass(2, False).calc(3), 3, np.int32, weak=True)
    _is(CustomClass(5, True).calc(3), 15, np.int32, weak=True)
    assert CustomClass.calc._cache_size() == 3


def test_strategy_3_a_pytree(page):
    CustomClass = page.pytree_self_block()
    c, out = _run(page.pytree_self_calls_block, CustomClass)
    assert out.split() == ["6", "3", "6"]  # 2 * 3; mul False: y; 2 * 3 with x an array
    assert isinstance(c.x, kiln.Array)
    # the arrays in children are traced: a new value of x reuses the program; aux_data is static
    size = CustomClass.calc._cache_size()
    _is(CustomClass(jnp.array(7), True).calc(3), 21, np.int32, weak=True)  # (jnp.array of a Python int)
    assert CustomClass.calc._cache_size() == size


# ---------------------------------------------- In-place updates with refs -------------------------------------------

def test_a_ref_is_updated_in_place(page):
    x_ref, out = _run(page.sin_inplace_block)
    before, after = out.splitlines()
    p0, shown0 = before.split(" ", 1)
    p1, shown1 = after.split(" ", 1)
    assert p0 == p1 and int(p0) == x_ref.unsafe_buffer_pointer()  # "its address stays the same"
    assert shown0 == "Ref([0., 1., 2.], dtype=float32)"
    value = np.asarray(x_ref[...])
    np.testing.assert_allclose(value, np.sin(np.arange(3.0)), rtol=1e-6)
    assert value.dtype == np.float32
    assert shown1 == repr(value).replace("array(", "Ref(")
    assert page.sin_inplace(x_ref) is None
    np.testing.assert_allclose(x_ref[...], np.sin(np.sin(np.arange(3.0))), rtol=1e-6)
    assert x_ref.unsafe_buffer_pointer() == int(p0)


# ---------------------------------------------- Buffer donation ------------------------------------------------------

def _update_fn(params, state):
    return params - 0.5 * state, state + 1.0


def test_donated_update(page):
    params, state = jnp.arange(3.0), jnp.full(3, 2.0)
    new_params, new_state = page.donate_update_block(_update_fn, params, state)
    np.testing.assert_array_equal(new_params, np.arange(3.0) - 1.0)
    np.testing.assert_array_equal(new_state, np.full(3, 3.0))
    assert params.is_deleted() and state.is_deleted()


def test_donation_shares_the_buffer(page):
    x, y, z = page.donate_add_block()
    _is(z, np.full((2, 3), 2.0), np.float32)
    assert y.is_deleted() and not x.is_deleted()
    # "The result has the same shape and type as `y`, so it will share its buffer"
    y = kiln.device_put(np.ones((2, 3)))
    where = y.unsafe_buffer_pointer()
    z = kiln.jit(page.add, donate_argnums=(1,))(x, y)
    assert z.unsafe_buffer_pointer() == where


def test_a_donated_array_cannot_be_used_again(page):
    x, y = kiln.device_put(np.ones((2, 3))), kiln.device_put(np.ones((2, 3)))
    # the page: RuntimeError (JAX 0.10.2: "Array has been deleted with shape=float32[2,3].")
    with pytest.raises(RuntimeError) as info:
        page.donated_means_gone_block(x, y)
    assert "deleted array" in str(info.value) and "donated" in str(info.value)
    assert y.is_deleted() and not x.is_deleted()


def test_arguments_passed_by_keyword_are_donated_as_jax_does(page):
    """The page: "Keyword arguments aren't donated by donate_argnums. This code donates nothing". JAX 0.10.2 (and
    the page's own JAX, jax/_src/api_util.py infer_argnums_and_argnames) donates them: donate_argnums=(0, 1) names
    `params` and `state`. kiln does as JAX (the page's claim is out of date)."""
    params, state = jnp.arange(3.0), jnp.full(3, 2.0)
    new_params, new_state = page.keyword_donation_block(_update_fn, params, state)
    np.testing.assert_array_equal(new_params, np.arange(3.0) - 1.0)
    np.testing.assert_array_equal(new_state, np.full(3, 3.0))
    assert params.is_deleted() and state.is_deleted()
    # a function that takes only keywords has no positional argument for donate_argnums to name: an error (JAX's
    # ValueError: "Jitted function has donate_argnums=(0, 1), but only accepts 0 positional arguments.")
    with pytest.raises(ValueError, match="donate_argnums=0 is out of range"):
        page.keyword_donation_block(lambda **kw: (kw["params"], kw["state"]), jnp.ones(3), jnp.ones(3))


def test_a_donated_pytree_donates_all_its_buffers(page):
    xs, z = page.pytree_donation_block()
    assert [x.is_deleted() for x in xs] == [True, True]
    assert len(z) == 2
    _is(z[0], np.full((2, 3), 2.0), np.float32)
    _is(z[1], np.full((3, 4), 2.0), np.float32)


def test_unusable_donations_warn(page):
    a, b = jnp.ones(3), jnp.ones(3)
    # more donated buffers than outputs to hold them
    with pytest.warns(UserWarning, match="Some donated buffers were not usable"):
        out = kiln.jit(page.add, donate_argnums=(0, 1))(a, b)
    _is(out, np.full(3, 2.0), np.float32)
    # no output of the donated buffer's shape and element type
    with pytest.warns(UserWarning, match="Some donated buffers were not usable"):
        kiln.jit(lambda c: c.sum(), donate_argnums=0)(jnp.ones(5))


# ---------------------------------------------- Asynchronous dispatch ------------------------------------------------

def test_async_dispatch_values(page):
    x, y = page.async_dispatch_block(500)  # (the page's is 1000 x 1000: 8 times the work, the same claims)
    assert (x.dtype, x.shape, y.dtype, y.shape) == (np.float32, (500, 500), np.float32, (500, 500))
    # "We can inspect its JAX type ... without waiting"
    assert str(kiln.typeof(y)) == "float32[500,500]"
    host = np.asarray(x, np.float64)
    assert host.min() >= 0.0 and host.max() < 1.0
    expected = host @ host + 3.0
    np.testing.assert_allclose(y, expected, rtol=2e-5)
    dispatched = page.time_dispatch_block(x)
    assert isinstance(dispatched, kiln.Array)
    assert dispatched.block_until_ready() is dispatched  # blocks, and hands back the same array
    np.testing.assert_allclose(dispatched, expected - 3.0, rtol=2e-5)
    np.testing.assert_allclose(page.time_block_until_ready_block(x), expected - 3.0, rtol=2e-5)
