"""JAX's docs page docs/new_docs/201/callbacks.md ("External callbacks": pure_callback, io_callback, debug.callback,
callbacks and sharding, pure_callback with custom_jvp), ported to kiln by changing imports
(tests/examples/jax_ported/docs_callbacks_201.py), checked against oracles that do not involve JAX.

Every block runs once. Oracles: NumPy for the host functions the callbacks call (np.sin in float32, bit for bit; the
draws of ``np.random.default_rng(0)`` that the io_callback blocks consume in the page's order, the generator seeded
again before them); the calls the host functions receive (how many, with which shapes: one per element under vmap
with 'sequential' and per scan step, none where the page says the compiler drops the callback or a transformation
refuses it); SciPy's ``jv`` for the Bessel blocks, with the derivative recurrence in closed form and float64 central
differences of ``scipy.special.jv`` for the custom_jvp gradient and Hessian; what the page prints where it is
deterministic. The sharding section needs 8 devices, fixed when a backend starts: it runs in a fresh interpreter that
calls the page's `jax_num_cpu_devices` cell first, and checks the page's claims (one callback with the full gathered
array under jit, one per device with its shard under shard_map). The error blocks check the exception class JAX
raises and that kiln's message names what failed. The older page docs/external-callbacks.md is checked in
test_docs_callbacks_aot.py; test_docs_callbacks_201_against_jax.py compares these blocks with JAX.
"""
from __future__ import annotations

import contextlib
import io
import json
import pathlib
import re

import numpy as np
import pytest
import scipy.special
from ported import load, within

import kiln

HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def page():
    return load("docs_callbacks_201")


def _run(fn, *args):
    """(what fn returns, what it printed), the callbacks' effects done (a hang fails the test)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = within(fn, *args)
        within(kiln.effects_barrier)
    return res, buf.getvalue()


def _raises(exc, fn, *args):
    """The exception fn raises (of class exc), with nothing printed."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(exc) as info:
        within(fn, *args)
    assert buf.getvalue() == ""
    return info.value


def _is(x, value, dtype, weak=False):
    assert type(x).__name__ == "Array"
    assert (x.dtype, x.weak_type) == (np.dtype(dtype), weak)
    np.testing.assert_array_equal(np.asarray(x), value)


def _fd(fn, z, h=1e-4):
    return (fn(z + h) - fn(z - h)) / (2 * h)


# ------------------------------------------------ Why callbacks? ---------------------------------------------------

def test_print_shows_the_tracer_and_debug_print_the_value(page):
    res, out = _run(page.why_print_block)
    _is(res, 6, np.int32, weak=True)  # (2 + 1) * 2
    # "not the runtime value, but the trace-time abstract value"
    assert out == "intermediate value: JitTracer(~int32[])\n"
    res, out = _run(page.why_debug_print_block)
    _is(res, 6, np.int32, weak=True)
    assert out == "intermediate value: 3\n"  # the runtime value of y


# ------------------------------------------------ Exploring pure_callback ------------------------------------------

def test_pure_callback_eager_jit_scan_vmap(page, monkeypatch):
    """np.sin of float32 on the host: the same bits however the callback is reached; the host function sees the
    whole array eagerly and under jit, one element per call under scan and under vmap (vmap_method='sequential')."""
    calls = []
    f_host = page.f_host

    def counting(x):
        calls.append((type(x), x.shape, x.dtype))
        return f_host(x)
    monkeypatch.setattr(page, "f_host", counting)
    expected = np.sin(np.arange(5, dtype=np.float32))
    (res, f, x), out = _run(page.pure_callback_block)
    _is(res, expected, np.float32)
    _is(x, np.arange(5.0), np.float32)
    assert calls == [(np.ndarray, (5,), np.float32)] and out == ""
    for block, args, shapes in [(page.pure_callback_jit_block, (f, x), [(5,)]),
                                (page.pure_callback_scan_block, (f,), [()] * 5),
                                (page.pure_callback_vmap_block, (f, x), [()] * 5)]:
        calls.clear()
        res, out = _run(block, *args)
        _is(res, expected, np.float32)
        assert calls == [(np.ndarray, s, np.float32) for s in shapes], block.__name__
        assert out == ""


def test_pure_callback_is_not_differentiable(page):
    (_, f, x), _ = _run(page.pure_callback_block)
    # JAX: ValueError: Pure callbacks do not support JVP. Please use `jax.custom_jvp` ...
    err = _raises(ValueError, page.pure_callback_grad_block, f, x)
    assert "pure_callback(f_host)" in str(err) and "custom_jvp" in str(err)


def test_unused_pure_callback_is_dropped(page):
    res, out = _run(page.f1_block)
    _is(res, 0, np.int32)
    assert out == "printing something\n"  # the output is used: the callback runs
    res, out = _run(page.f2_block)
    _is(res, 1.0, np.float32, weak=True)
    assert out == ""  # the compiler eliminated the callback


def test_raising_callback_in_cond(page):
    (res, x_batch), out = _run(page.raise_loop_block)  # does not raise: the raising branch is never taken
    _is(x_batch, np.arange(4), np.int32)
    assert [type(r).__name__ for r in res] == ["Array"] * 4 and out == ""
    for i, r in enumerate(res):
        _is(r, i, np.int32)
    # The page's comment says "ValueError: value of x is 0" (vmap turns the cond into a select that runs both
    # branches). The callback has no vmap_method, and JAX 0.10 raises NotImplementedError for that before anything
    # runs; kiln's VmapMethodError is a NotImplementedError and a ValueError.
    err = _raises(NotImplementedError, page.raise_vmap_block, x_batch)
    assert isinstance(err, ValueError)
    assert "vmap_method" in str(err) and "_raise" in str(err) and "'sequential'" in str(err)


# ------------------------------------------------ Exploring io_callback --------------------------------------------

def test_io_callback_blocks_in_the_pages_order(page, monkeypatch):
    """The blocks share the page's global generator: seeded again, they draw what a NumPy generator of seed 0
    draws, in the page's order (the blocks that raise draw nothing)."""
    monkeypatch.setattr(page, "global_rng", np.random.default_rng(0))
    rng = np.random.default_rng(0)
    first = rng.uniform(size=5).astype(np.float32)
    vmapped = np.array([rng.uniform(size=()) for _ in range(5)]).astype(np.float32)  # one call per element
    scanned = np.array([rng.uniform(size=()) for _ in range(5)]).astype(np.float32)

    (res, x), out = _run(page.io_callback_block)
    _is(x, np.zeros(5), np.float32)
    _is(res, first, np.float32)
    assert out == "generating float32[5]\n"
    res, out = _run(page.io_callback_vmap_block, x)
    # "this may execute the mapped callbacks in any order": the five next draws, one per element
    assert (res.dtype, res.shape, res.weak_type) == (np.float32, (5,), False)
    np.testing.assert_array_equal(np.sort(np.asarray(res)), np.sort(vmapped))
    assert out == "generating float32[]\n" * 5
    # JAX: ValueError: Cannot `vmap` ordered IO callback.
    err = _raises(ValueError, page.io_callback_ordered_vmap_block, x)
    assert "ordered IO callback io_callback(host_side_random_like)" in str(err) and "ordered=False" in str(err)
    res, out = _run(page.io_callback_scan_block)  # ordered: one call per step, in order
    _is(res, scanned, np.float32)
    assert out == "generating float32[]\n" * 5
    # JAX: ValueError: IO callbacks do not support JVP.
    err = _raises(ValueError, page.io_callback_grad_block, x)
    assert "io_callback(host_side_random_like)" in str(err) and "custom_jvp" in str(err)
    np.testing.assert_array_equal(page.global_rng.uniform(size=3), rng.uniform(size=3))  # nothing else drawn
    res, out = _run(page.io_callback_unused_grad_block)
    _is(res, 1.0, np.float32, weak=True)  # d x / dx
    assert out == "hello\n"  # an effect: not removed though its output is unused


# ------------------------------------------------ Exploring debug.callback -----------------------------------------

def test_debug_callback_jit_vmap_grad(page):
    (res, f), out = _run(page.debug_callback_block)
    _is(res, 1.0, np.float32, weak=True)
    assert out == "log: 1.0\n"
    res, out = _run(page.debug_callback_vmap_block, f)
    _is(res, np.arange(5.0), np.float32)
    assert out == "".join(f"log: {float(i)}\n" for i in range(5))  # one call per element
    res, out = _run(page.debug_callback_grad_block, f)
    _is(res, 1.0, np.float32, weak=True)
    assert out == "log: 1.0\n"  # the forward pass only


# ------------------------------------------------ Callbacks and sharding -------------------------------------------

# The page's first cell (8 CPU devices) and the sharding blocks in a fresh interpreter; the results to JSON.
SHARDING_SCRIPT = """
import contextlib, io, json, sys
import numpy as np
sys.path.insert(0, {here!r})
from ported import load
m = load("docs_callbacks_201")
m.config_block()
jax = m.jax
res = {{"device_count": jax.device_count()}}
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    out, f, mesh, x = m.sharding_block()
    jax.effects_barrier()
res["global"] = dict(printed=buf.getvalue(), value=np.asarray(out).tolist(), dtype=str(out.dtype),
                     mesh=[list(mesh.axis_names), list(mesh.devices.shape)],
                     x_shards=sorted(tuple(s.data.shape) for s in x.addressable_shards),
                     x_devices=len(x.sharding.device_set))
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    out = m.shard_map_block(f, mesh, x)
    jax.effects_barrier()
res["manual"] = dict(printed=buf.getvalue(), value=np.asarray(out).tolist(), dtype=str(out.dtype),
                     spec_is_i=out.sharding.spec == jax.P("i"), shards=[(s.device.id, np.asarray(s.data).tolist())
                                                          for s in out.addressable_shards])
open({out!r}, "w").write(json.dumps(res))
"""


@pytest.fixture(scope="module")
def sharded(run_py, tmp_path_factory):
    out = tmp_path_factory.mktemp("docs_callbacks_201") / "out.json"
    run_py(SHARDING_SCRIPT.format(here=str(HERE), out=str(out)), env={"KILN_PLATFORMS": "cpu"}, timeout=300)
    return json.loads(out.read_text())


def test_sharding_global_view_runs_one_callback_on_the_gathered_array(sharded):
    assert sharded["device_count"] == 8  # the page's jax_num_cpu_devices cell
    g = sharded["global"]
    assert g["mesh"] == [["i"], [8]]
    assert g["x_devices"] == 8 and g["x_shards"] == [[1]] * 8  # x is sharded, one element per device
    # "one callback, with the full gathered array"
    assert g["printed"] == "callback received shape (8,)\n"
    assert g["dtype"] == "float32" and g["value"] == (2 * np.arange(8.0)).tolist()


def test_sharding_shard_map_runs_one_callback_per_device(sharded):
    s = sharded["manual"]
    # "one callback per device": eight calls, each with its own shard (the lines may interleave)
    assert re.findall(r"callback received shape \((\d*),?\)", s["printed"]) == ["1"] * 8
    assert s["printed"].replace("callback received shape (1,)", "").strip() == ""
    assert s["dtype"] == "float32" and s["value"] == (2 * np.arange(8.0)).tolist()
    assert s["spec_is_i"]  # out_specs=P('i')
    assert sorted(s["shards"]) == [[d, [2.0 * d]] for d in range(8)]  # device d holds x[d] * 2


# ------------------------------------------------ Example: pure_callback with custom_jvp ---------------------------

def test_bessel_pure_callback(page):
    (j1, z), out = _run(page.jv_setup_block)
    _is(z, np.arange(5.0), np.float32)
    assert j1.func is page.jv and j1.args == (1,)  # the plain jv: the page rebinds it only later
    # the callback's host function: scipy's jv of the int32 order and float32 argument, cast back to float32
    expected = scipy.special.jv(np.int32(1), np.arange(5, dtype=np.float32)).astype(np.float32)
    np.testing.assert_allclose(expected, scipy.special.jv(1, np.arange(5.0)), rtol=1e-6, atol=1e-7)
    for block in (page.jv_print_block, page.jv_jit_block, page.jv_vmap_block):
        res, out = _run(block, j1, z)
        assert res is None and out == f"{expected}\n", block.__name__  # NumPy's printing of the float32 values
    assert out == "[ 0.          0.44005057  0.5767248   0.33905897 -0.06604332]\n"  # the page's output
    # JAX: ValueError: Pure callbacks do not support JVP.
    err = _raises(ValueError, page.jv_grad_block, j1, z)
    assert "pure_callback" in str(err) and "custom_jvp" in str(err)


def test_bessel_custom_jvp_gradient_and_hessian(page):
    J = scipy.special.jv
    jv = page.custom_jvp_block(page.jv)
    assert jv is not page.jv and type(jv).__name__ == "custom_jvp"
    j1, out = _run(page.custom_grad_block, jv)
    grad = (J(0, 2.0) - J(2, 2.0)) / 2  # dJ1/dz = (J0 - J2) / 2
    np.testing.assert_allclose(grad, _fd(lambda z: J(1, z), 2.0), rtol=1e-7)
    res = kiln.grad(j1)(2.0)
    assert (res.dtype, res.weak_type) == (np.float32, True)
    np.testing.assert_allclose(float(res), grad, rtol=1e-6)
    assert out == str(np.float32(res)) + "\n" == "-0.06447162\n"  # the page's output
    # the rule's v == 0 branch: dJ0/dz = -J1
    np.testing.assert_allclose(float(kiln.grad(lambda z: jv(0, z))(2.0)), -J(1, 2.0), rtol=1e-6)
    # "second-order and higher derivatives for free": the rule applied twice, d/dz (J0 - J2)/2 = (-J1 - (J1 - J3)/2)/2
    hess, out = _run(page.hessian_block, j1)
    closed = -0.75 * J(1, 2.0) + 0.25 * J(3, 2.0)
    np.testing.assert_allclose(closed, _fd(lambda z: _fd(lambda w: J(1, w), z), 2.0, 1e-3), rtol=1e-5)
    assert (hess.dtype, hess.weak_type, hess.shape) == (np.float32, True, ())
    np.testing.assert_allclose(float(hess), closed, rtol=1e-6)
    assert out == ""
    # and a third derivative: -0.75 J1' + 0.25 J3' with J3' = (J2 - J4) / 2
    third = -0.75 * grad + 0.25 * (J(2, 2.0) - J(4, 2.0)) / 2
    np.testing.assert_allclose(float(kiln.grad(kiln.grad(kiln.grad(j1)))(2.0)), third, rtol=1e-5)
