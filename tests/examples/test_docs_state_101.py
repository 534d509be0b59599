"""JAX's docs page docs/new_docs/101/state.md ("Stateful computations": threading state through pure functions,
refs), ported to kiln by changing imports (tests/examples/jax_ported/docs_state_101.py), checked against oracles
that do not involve JAX: Python arithmetic for the counters and their jaxprs (evaluated on other inputs), a float64
NumPy loop of the page's momentum optimizer with the loss's gradient in closed form, float64 central differences for
the derivatives, NumPy replays of the ref writes, NumPy's printing of the expected values.

The older pages cover some of the same code: tests/examples/test_jax_examples_control_hmm.py checks the eager and
jitted counters' printed values (docs/stateful-computations.md), tests/examples/test_array_refs.py the ref blocks of
array_refs.md (the jitted add-update's prints, the indexing block's values, the errors' messages). Here those blocks
are checked for the claims of this page instead: what the counters' jaxprs record (and compute), that a training
step is pure enough to differentiate and vmap (the page's text), that a ref's buffer is updated in place, that an
out-of-bounds index known in advance is an error for a ref where an Array clamps or drops (a kiln bug, fixed in
frontend/refs.py: kiln clamped), that functions with internal refs transform as pure ones.
"""
from __future__ import annotations

import contextlib
import inspect
import io

import numpy as np
import pytest
from ported import load

import kiln
import kiln.numpy as jnp
from kiln.errors import TraceSideEffectWarning

H = 1e-6  # central differences' step (float64)


@pytest.fixture(scope="module")
def page():
    return load("docs_state_101")


def _run(fn, *args):
    """(what fn returns, what it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue()


# ---------------------------------------------- The problem with untraceable state ----------------------------------

def test_the_counters_side_effect_runs_once_at_trace_time(page):
    counter, out = _run(page.counter_block)
    assert out.split() == ["1", "2", "3"] and counter.n == 3
    # kiln warns where JAX is silent (README "Recompiles and stale values": attributes rebound while tracing)
    with pytest.warns(TraceSideEffectWarning, match="rebound the attribute 'n'"):
        closed, counter = page.counter_jaxpr_block()
    assert counter.n == 1  # `self.n += 1` ran once, when traced
    # "takes no input, performs no operations, and always returns 1"
    assert closed.jaxpr.invars == [] and closed.jaxpr.eqns == []
    assert str(closed) == "{ lambda ; . let  in (1:i32[],) }"
    for _ in range(3):
        (one,) = kiln.core.eval_jaxpr(closed.jaxpr, closed.consts)
        assert int(one) == 1
    assert counter.n == 1  # running the recorded program touches no state


# ---------------------------------------------- Threading state through pure functions -----------------------------

def test_threaded_counter_and_its_jaxpr(page):
    (counter, state), out = _run(page.counter_v2_block)
    assert out.split() == ["1", "2", "3"] and state == 3  # the state after three counts, by hand
    closed = page.counter_v2_jaxpr_block(counter)
    # "in as the argument, out as a result": one int32 input, two adds of it and 1, both results returned
    jaxpr = closed.jaxpr
    assert [(v.aval.shape, v.aval.dtype) for v in jaxpr.invars] == [((), np.int32)]
    assert [e.primitive.name for e in jaxpr.eqns] == ["add", "add"]
    assert all(e.invars[0] is jaxpr.invars[0] for e in jaxpr.eqns)
    assert jaxpr.outvars == [e.outvars[0] for e in jaxpr.eqns]
    for n in (0, 41, -7):  # nothing baked in: the recorded program counts from any state
        assert [int(v) for v in kiln.core.eval_jaxpr(jaxpr, closed.consts, n)] == [n + 1, n + 1]


def test_the_stateless_sketch_is_the_counters_shape(page):
    """The page's two ```python sketches, kept as they are: the stateful method becomes a function of the state that
    returns (output, new state), the shape of CounterV2.count."""
    assert inspect.signature(page.StatefulClass.stateful_method).return_annotation == "Output"
    sig = inspect.signature(page.stateless_method)
    assert list(sig.parameters)[0] == "state" and sig.return_annotation == "tuple[Output, State]"
    count = inspect.signature(page.CounterV2.count)
    assert count.parameters["n"].annotation == "CounterState" and count.return_annotation == "tuple[int, CounterState]"


X = np.array([1.0, 2.0, 3.0])
Y = np.array([3.0, 5.0, 7.0])


def _np_step(w, b, mw, mb, x=X, y=Y, lr=0.1, decay=0.9):
    """The page's update in float64: the gradient of mean((w x + b - y)^2) in closed form, then momentum."""
    r = w * x + b - y
    gw, gb = np.mean(2 * r * x), np.mean(2 * r)
    mw, mb = decay * mw + gw, decay * mb + gb
    return w - lr * mw, b - lr * mb, mw, mb


def _np_train(w=1.0, b=0.0, steps=100):
    mw = mb = 0.0
    for _ in range(steps):
        w, b, mw, mb = _np_step(w, b, mw, mb)
    return w, b, mw, mb


def test_training_loop_threads_params_and_momentum(page):
    (params, opt_state), out = _run(page.training_block)
    w, b, mw, mb = _np_train()
    assert set(params) == set(opt_state) == {"w", "b"}
    assert all(v.dtype == np.float32 and v.shape == () for v in (*params.values(), *opt_state.values()))
    np.testing.assert_allclose([float(params["w"]), float(params["b"])], [w, b], rtol=1e-4)
    np.testing.assert_allclose([float(opt_state["w"]), float(opt_state["b"])], [mw, mb], rtol=2e-3, atol=1e-5)
    # the printed dict: the params rounded to 2 places (the tree's keys in sorted order), "fits y = 2x + 1"
    assert out == str({"b": round(float(b), 2), "w": round(float(w), 2)}) + "\n"
    assert (round(w, 2), round(b, 2)) == (2.0, 1.0)


def _state(w, b, mw, mb):
    return {"w": jnp.float32(w), "b": jnp.float32(b)}, {"w": jnp.float32(mw), "b": jnp.float32(mb)}


def test_a_training_step_is_pure(page):
    """"each state is an immutable snapshot": the same inputs give the same step, and the inputs are left alone."""
    params, opt_state = _state(0.5, -0.25, 0.125, 0.0)
    batch = (jnp.asarray(X, np.float32), jnp.asarray(Y, np.float32))
    first = page.update(params, opt_state, batch)
    second = page.update(params, opt_state, batch)
    for a, b in zip(kiln.tree.leaves(first), kiln.tree.leaves(second)):
        np.testing.assert_array_equal(a, b)
    assert float(params["w"]) == 0.5 and float(opt_state["w"]) == 0.125
    np.testing.assert_allclose([float(first[0]["w"]), float(first[0]["b"]), float(first[1]["w"]),
                                float(first[1]["b"])], _np_step(0.5, -0.25, 0.125, 0.0), rtol=1e-5)


def test_vmap_runs_independent_training_runs(page):
    """The page: "vmap it to run many independent training runs at once"."""
    ws = np.array([1.0, -2.0, 0.5, 3.0])
    bs = np.array([0.0, 1.0, -1.0, 2.0])
    params, opt_state = {"w": jnp.asarray(ws, np.float32), "b": jnp.asarray(bs, np.float32)}, \
        {"w": jnp.zeros(4), "b": jnp.zeros(4)}
    batch = (jnp.asarray(X, np.float32), jnp.asarray(Y, np.float32))
    step = kiln.jit(kiln.vmap(page.update, in_axes=(0, 0, None)))
    for _ in range(5):
        params, opt_state = step(params, opt_state, batch)
    for i in range(4):
        w, b, mw, mb = _np_train(ws[i], bs[i], steps=5)
        np.testing.assert_allclose([float(params["w"][i]), float(params["b"][i]), float(opt_state["w"][i]),
                                    float(opt_state["b"][i])], [w, b, mw, mb], rtol=1e-4, atol=1e-5)


def test_differentiate_through_an_update_step(page):
    """The page: "You can differentiate through an update step": d(loss after one step)/d(initial w, b)."""
    batch = (jnp.asarray(X, np.float32), jnp.asarray(Y, np.float32))

    def after_one_step(p):
        new_params, _ = page.update(p, {"w": jnp.float32(0.0), "b": jnp.float32(0.0)}, batch)
        return page.loss_fn(new_params, batch)

    def np_after_one_step(w, b):
        w, b, _, _ = _np_step(w, b, 0.0, 0.0)
        return np.mean((w * X + b - Y) ** 2)

    g = kiln.grad(after_one_step)({"w": jnp.float32(0.5), "b": jnp.float32(0.25)})
    fd = [(np_after_one_step(0.5 + H, 0.25) - np_after_one_step(0.5 - H, 0.25)) / (2 * H),
          (np_after_one_step(0.5, 0.25 + H) - np_after_one_step(0.5, 0.25 - H)) / (2 * H)]
    np.testing.assert_allclose([float(g["w"]), float(g["b"])], fd, rtol=1e-4)


# ---------------------------------------------- Refs: mutable arrays ------------------------------------------------

def test_jitted_add_update_is_in_place(page):
    (x_ref, f), out = _run(page.new_ref_block)
    host = np.zeros(3, np.float32)
    first = repr(host).replace("array(", "Ref(")
    host[1] += 2.0  # f() twice
    assert out.splitlines() == [first, repr(host).replace("array(", "Ref(")]
    # "Writing to a ref updates its buffer in place rather than allocating a fresh array"
    before = x_ref.unsafe_buffer_pointer()
    assert f() is None
    assert x_ref.unsafe_buffer_pointer() == before
    host[1] += 1.0
    np.testing.assert_array_equal(x_ref[...], host)


def test_grad_through_an_internal_ref(page):
    _, out = _run(page.grad_block)
    value = float(out)
    np.testing.assert_allclose(value, np.cos(1.0), rtol=1e-6)
    assert f"{value:.2f}" == "0.54"  # the page's comment
    dg = kiln.jit(kiln.grad(page.g))
    for x in (-1.5, 0.0, 2.5):
        np.testing.assert_allclose(float(dg(x)), (np.sin(x + H) - np.sin(x - H)) / (2 * H), rtol=1e-5, atol=1e-7)


def test_math_on_a_ref_is_an_error_and_reading_it_first_works(page):
    with pytest.raises(TypeError) as info:
        page.math_on_a_ref_block()
    assert "Ref" in str(info.value) and "ref[...]" in str(info.value)
    x_ref = kiln.new_ref(1.0)  # "To do math, you need to read the ref's value first"
    np.testing.assert_allclose(float(jnp.sin(x_ref[...])), np.sin(1.0), rtol=1e-6)


def _replay_indexing():
    host = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    row = host[0].copy()
    host[1] = row
    val = host[1, 2]
    host[2, 3] = val
    col = host[:, 1].copy()
    host[0, :3] = col
    vals = host[[0, 0, 1], [1, 2, 3]].copy()
    host[[1, 2, 1], [0, 0, 1]] = vals
    return host, row, val, col, vals


def test_indexing_then_freeze(page):
    x_ref, *read = page.indexing_block()
    host, *expected = _replay_indexing()
    for got, want in zip(read, expected):
        assert got.dtype == np.float32 and got.shape == np.shape(want)
        np.testing.assert_array_equal(got, want)
    final = page.freeze_block(x_ref)
    assert isinstance(final, kiln.Array) and (final.dtype, final.weak_type) == (np.float32, False)
    np.testing.assert_array_equal(final, host)
    # "invalidates the ref (so that accessing it afterwards is an error)"
    for use in (lambda: x_ref[...], lambda: x_ref.__setitem__(0, host[0]), lambda: kiln.freeze(x_ref)):
        with pytest.raises(ValueError, match="invalidated by kiln.freeze"):
            use()
    np.testing.assert_array_equal(final, host)  # the frozen value is an ordinary array of its own


OUT_OF_BOUNDS = [(5,), (-4,), (np.int32(3),), (0, 4), (1, -5), (Ellipsis, 4), (None, 3)]


def _oob_uses(x_ref, index):
    def write():
        x_ref[index] = jnp.float32(0.0)

    def add():
        x_ref[index] += 1.0

    return {"read": lambda: x_ref[index], "write": write, "add-update": add,
            "addupdate": lambda: kiln.ref.addupdate(x_ref, index, jnp.float32(1.0))}


@pytest.mark.parametrize("index", OUT_OF_BOUNDS, ids=str)
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_static_out_of_bounds_ref_index_is_an_error(index, jit):
    """The page: "an out-of-bounds index raises an error when its value is known in advance (unlike with Arrays,
    where reads clamp and writes drop)". kiln clamped and dropped as for an Array (fixed)."""
    index = index if len(index) > 1 else index[0]
    host = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x_ref = kiln.new_ref(jnp.asarray(host))
    for name, use in _oob_uses(x_ref, index).items():
        with pytest.raises(ValueError, match="is out of bounds for axis") as info:
            (kiln.jit(use) if jit else use)()
        assert type(info.value).__name__ == "RefError", name
        assert "use an index in" in str(info.value)
    np.testing.assert_array_equal(x_ref[...], host)  # nothing written


def test_in_bounds_indices_and_arrays_keep_numpys_rules():
    host = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x_ref = kiln.new_ref(jnp.asarray(host))
    for index in (-3, (2, -4), (-1, 3), (Ellipsis, -1), (None, 2), jnp.int32(-2)):
        np.testing.assert_array_equal(x_ref[index], host[index if type(index) is not kiln.Array else -2])
    # an index past the end of a slice is NumPy's (clamped), and so is an empty slice
    np.testing.assert_array_equal(x_ref[1:10], host[1:10])
    assert x_ref[5:].shape == host[5:].shape == (0, 4)
    # Arrays: reads clamp and writes drop (the page's contrast)
    a = jnp.asarray(host)
    np.testing.assert_array_equal(a[5], host[2])
    np.testing.assert_array_equal(a.at[5].set(0.0), host)
    # an index that is not known in advance (traced) is not checked: it is clamped as an Array's
    np.testing.assert_array_equal(kiln.jit(lambda i: x_ref[i])(5), host[2])


# ---------------------------------------------- Refs and purity ----------------------------------------------------

def test_functions_with_internal_refs_transform_as_pure_ones(page):
    g = page.normalize_grad_block()
    x = np.arange(1.0, 4.0)
    # sum(x / sum(x)) is 1 for every x: its gradient is 0
    fd = [(np.sum((x + e) / np.sum(x + e)) - np.sum((x - e) / np.sum(x - e))) / (2 * H) for e in np.eye(3) * H]
    np.testing.assert_allclose(g, fd, atol=1e-6)  # (float32 rounding: 1.5e-8 where 0)
    assert g.dtype == np.float32 and g.shape == (3,)
    xs = np.array([[1.0, 2.0, 5.0], [0.5, 0.25, 0.25]], np.float32)
    np.testing.assert_allclose(kiln.vmap(page.normalize)(xs), xs / xs.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(kiln.jit(page.normalize)(xs[0]), xs[0] / xs[0].sum(), rtol=1e-6)
    # the gradient of a weighted sum: (w_i - sum(w x) / sum(x)) / sum(x), in closed form
    w = np.array([1.0, -2.0, 3.0])
    gw = kiln.grad(lambda x: jnp.sum(jnp.asarray(w, np.float32) * page.normalize(x)))(jnp.asarray(x, np.float32))
    np.testing.assert_allclose(gw, (w - np.sum(w * x) / np.sum(x)) / np.sum(x), rtol=1e-5, atol=1e-6)


def test_vmap_of_an_impure_function_over_ref_entries(page):
    out_ref, out = _run(page.scale_into_block)
    expected = 2.0 * np.arange(3.0, dtype=np.float32)
    assert out == f"{expected}\n"
    np.testing.assert_array_equal(out_ref[...], expected)
    # the same under jit, on a ref of another length
    xs = np.array([1.5, -1.0, 4.0, 0.0, 2.0], np.float32)
    other = kiln.new_ref(jnp.zeros(5))
    assert kiln.jit(kiln.vmap(page.scale_into))(jnp.asarray(xs), other) is None
    np.testing.assert_array_equal(other[...], 2.0 * xs)


def test_vmap_of_a_function_closing_over_a_ref_is_an_error(page):
    with pytest.raises(ValueError) as info:
        page.write_shared_block()
    assert "Ref that is not mapped" in str(info.value) and "pass the ref as an argument" in str(info.value)
