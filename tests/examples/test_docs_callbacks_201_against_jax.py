"""JAX's docs page docs/new_docs/201/callbacks.md under kiln and under JAX gives the same results (the against_jax
session).

The kiln side is tests/examples/jax_ported/docs_callbacks_201.py; the JAX side is the same source with JAX's imports
put back. The NumPy/SciPy oracles and the page's claims are in test_docs_callbacks_201.py; this checks that the two
libraries agree block by block: the values (bit for bit where a NumPy/SciPy host function computes them, else to
float32 rounding), dtypes, weak types and shapes, what every block prints (the tracer, the debug prints, the
io_callback draws from each side's own generator seeded again, the Bessel values), and the exception classes of the
blocks that raise. The sharding section runs in a fresh interpreter per library with 8 CPU devices
(same_as_jax.run_on_eight_cpu_devices), which calls the page's `jax_num_cpu_devices` cell first: the same values and
shards, one callback with the whole array under jit, one per device under shard_map (JAX's lines may interleave,
its callbacks running on several threads: the calls are counted). One documented difference (README "Differences
from JAX"): `make_mesh` makes `Auto` axes in kiln where JAX 0.10 makes `Explicit` ones, tested as such.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load, within  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, run_on_eight_cpu_devices  # noqa: E402

import kiln  # noqa: E402


@pytest.fixture(scope="module")
def both():
    return load("docs_callbacks_201"), load("docs_callbacks_201", "jax")


def _outcome(lib, fn, *args):
    """(result or exception, printed) of fn(*args), the library's callbacks done."""
    return outcome(lambda: within(_then_barrier, lib, fn, *args))


def _then_barrier(lib, fn, *args):
    try:
        return fn(*args)
    finally:
        lib.effects_barrier()


def _same(k, j, name, kargs=(), jargs=(), rtol=0.0):
    """Block NAME on both sides: the same results and the same printed text."""
    (kr, kout), (jr, jout) = _outcome(kiln, getattr(k, name), *kargs), _outcome(jax, getattr(j, name), *jargs)
    assert not isinstance(kr, Exception) and not isinstance(jr, Exception), (kr, jr)
    assert kout == jout, (kout, jout)
    return kr, jr


def _same_error(k, j, name, kargs=(), jargs=()):
    """Block NAME raises on both sides, kiln's exception of JAX's class, with the same printed text (none)."""
    (kr, kout), (jr, jout) = _outcome(kiln, getattr(k, name), *kargs), _outcome(jax, getattr(j, name), *jargs)
    assert isinstance(kr, Exception) and isinstance(jr, Exception), (kr, jr)
    assert_same_exception(kr, jr)
    assert kout == jout == ""
    return kr, jr


def test_why_callbacks(both):
    k, j = both
    for name in ("why_print_block", "why_debug_print_block"):
        kr, jr = _same(k, j, name)  # the tracer's text, then the runtime value
        assert_same(kr, jr, rtol=0)


def test_pure_callback_blocks(both):
    k, j = both
    (kr, kf, kx), (jr, jf, jx) = _same(k, j, "pure_callback_block")
    assert_same((kr, kx), (jr, jx), rtol=0)
    for name, kargs, jargs in [("pure_callback_jit_block", (kf, kx), (jf, jx)),
                               ("pure_callback_scan_block", (kf,), (jf,)),
                               ("pure_callback_vmap_block", (kf, kx), (jf, jx))]:
        assert_same(*_same(k, j, name, kargs, jargs), rtol=0)
    _same_error(k, j, "pure_callback_grad_block", (kf, kx), (jf, jx))  # ValueError
    for name in ("f1_block", "f2_block"):
        assert_same(*_same(k, j, name), rtol=0)


def test_raising_callback_in_cond(both):
    k, j = both
    (kr, kxb), (jr, jxb) = _same(k, j, "raise_loop_block")
    assert_same((kr, kxb), (jr, jxb), rtol=0)
    kerr, jerr = _same_error(k, j, "raise_vmap_block", (kxb,), (jxb,))
    assert type(jerr) is NotImplementedError  # JAX 0.10: no vmap_method (the page's comment: ValueError)


def test_io_callback_blocks_in_the_pages_order(both, monkeypatch):
    """Each side's generator seeded again, the blocks in the page's order: the same draws and prints."""
    k, j = both
    monkeypatch.setattr(k, "global_rng", np.random.default_rng(0))
    monkeypatch.setattr(j, "global_rng", np.random.default_rng(0))
    (kr, kx), (jr, jx) = _same(k, j, "io_callback_block")
    assert_same((kr, kx), (jr, jx), rtol=0)
    assert_same(*_same(k, j, "io_callback_vmap_block", (kx,), (jx,)), rtol=0)
    _same_error(k, j, "io_callback_ordered_vmap_block", (kx,), (jx,))  # ValueError
    assert_same(*_same(k, j, "io_callback_scan_block"), rtol=0)
    _same_error(k, j, "io_callback_grad_block", (kx,), (jx,))  # ValueError
    np.testing.assert_array_equal(k.global_rng.uniform(size=3), j.global_rng.uniform(size=3))  # in step
    assert_same(*_same(k, j, "io_callback_unused_grad_block"), rtol=0)  # prints "hello" on both


def test_debug_callback_blocks(both):
    k, j = both
    (kr, kf), (jr, jf) = _same(k, j, "debug_callback_block")
    assert_same(kr, jr, rtol=0)
    for name in ("debug_callback_vmap_block", "debug_callback_grad_block"):
        assert_same(*_same(k, j, name, (kf,), (jf,)), rtol=0)


def test_bessel_blocks(both):
    k, j = both
    (kj1, kz), (jj1, jz) = _same(k, j, "jv_setup_block")
    assert_same(kz, jz, rtol=0)
    for name in ("jv_print_block", "jv_jit_block", "jv_vmap_block"):
        _same(k, j, name, (kj1, kz), (jj1, jz))  # the same printed float32 values
    _same_error(k, j, "jv_grad_block", (kj1, kz), (jj1, jz))  # ValueError
    kjv, jjv = k.custom_jvp_block(k.jv), j.custom_jvp_block(j.jv)
    kj1, jj1 = _same(k, j, "custom_grad_block", (kjv,), (jjv,))  # the same printed gradient
    assert_same(kiln.grad(kj1)(2.0), jax.grad(jj1)(2.0), rtol=1e-6)
    assert_same(*_same(k, j, "hessian_block", (kj1,), (jj1,)), rtol=1e-6)


# ------------------------------------------------ Callbacks and sharding -------------------------------------------

# The page's first cell (8 CPU devices) and the sharding blocks under `lib`: arrays to the .npz, the rest to JSON.
SCRIPT = """
import contextlib, io, json, sys
import numpy as np
sys.path.insert(0, {here!r})
from ported import load
lib, npz, txt = {lib!r}, {npz!r}, {out!r}
m = load("docs_callbacks_201", lib)
m.config_block()
jax = __import__(lib)
res = {{"device_count": jax.device_count()}}
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    out, f, mesh, x = m.sharding_block()
    jax.effects_barrier()
res["global/printed"] = buf.getvalue()
res["mesh"] = [list(mesh.axis_names), list(mesh.devices.shape), [str(t) for t in mesh.axis_types]]
res["x/shards"] = sorted([s.device.id, np.asarray(s.data).tolist()] for s in x.addressable_shards)
arrays = {{"global": np.asarray(out), "x": np.asarray(x)}}
res["global/weak"] = bool(out.weak_type)
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    out = m.shard_map_block(f, mesh, x)
    jax.effects_barrier()
res["manual/printed"] = buf.getvalue()
res["manual/weak"] = bool(out.weak_type)
res["manual/spec_is_i"] = out.sharding.spec == jax.P("i")
res["manual/shards"] = sorted([s.device.id, np.asarray(s.data).tolist()] for s in out.addressable_shards)
arrays["manual"] = np.asarray(out)
np.savez(npz, **arrays)
open(txt, "w").write(json.dumps(res))
"""


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, run_py):
    return run_on_eight_cpu_devices(run_py, tmp_path_factory.mktemp("docs_callbacks_201"), SCRIPT)


def test_sharding_blocks(sharded):
    (ka, kres), (ja, jres) = sharded["kiln"], sharded["jax"]
    assert sorted(ka) == sorted(ja) == ["global", "manual", "x"]
    for name in ka:
        assert (ka[name].dtype, ka[name].shape) == (ja[name].dtype, ja[name].shape), name
        np.testing.assert_array_equal(ka[name], ja[name])
    # Documented difference: kiln's make_mesh makes Auto axes, JAX 0.10's Explicit ones.
    kmesh, jmesh = kres.pop("mesh"), jres.pop("mesh")
    assert kmesh[:2] == jmesh[:2] == [["i"], [8]]
    assert kmesh[2] == ["AxisType.Auto"] and jmesh[2] == ["AxisType.Explicit"]
    # one callback with the whole array under jit; one per device (JAX's lines may interleave) under shard_map
    assert kres["global/printed"] == jres["global/printed"] == "callback received shape (8,)\n"
    kprinted, jprinted = kres.pop("manual/printed"), jres.pop("manual/printed")
    for printed in (kprinted, jprinted):
        assert re.findall(r"callback received shape \((\d*),?\)", printed) == ["1"] * 8
        assert printed.replace("callback received shape (1,)", "").strip() == ""
    assert kres == jres
    assert kres["device_count"] == 8 and kres["manual/spec_is_i"]
