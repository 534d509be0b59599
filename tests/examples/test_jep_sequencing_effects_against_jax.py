"""JAX's design document docs/jep/10657-sequencing-effects.md under kiln and under JAX 0.10.2 (the against_jax
session).

The kiln side is tests/examples/jax_ported/jep_sequencing_effects.py; the JAX side is the same source with JAX's
imports put back. Both sides run each block and the same checks of the page's ordering claims (ordered effects in
loops, conds, scans and vmap, in calls dispatched one after another, per thread, across two devices), and give the
same results and print the same lines in the same order, captured with `effects_barrier()` inside the capture; for
unordered effects, the same lines in any order. The NumPy/Python oracles are in test_jep_sequencing_effects.py.
Everything that waits on a runtime runs under a time limit (`within`), the two-device blocks in subprocesses with
one.

An ordered callback in a `while_loop`'s `cond_fun` runs each time the condition is evaluated, in both. Host callbacks
get NumPy arrays in kiln
(`jax.Array`s in JAX, README "Differences from JAX"): the logged values are compared as NumPy arrays.
"""
from __future__ import annotations

import pathlib
import re
import threading
import warnings

import numpy as np
import pytest

pytest.importorskip("jax")
import jax  # noqa: E402
import jax.experimental  # noqa: E402
from ported import load, within  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet  # noqa: E402

import kiln  # noqa: E402
import kiln.experimental  # noqa: E402

LIBS = {"kiln": kiln, "jax": jax}


@pytest.fixture(scope="module")
def ports():
    return {"kiln": load("jep_sequencing_effects"), "jax": load("jep_sequencing_effects", "jax")}


def both(fn):
    """{lib: (what fn(lib) returns once that library's effects have run, the lines printed)} for kiln and JAX."""
    found = {}
    for name, lib in LIBS.items():
        def run(lib=lib, name=name):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # (JAX's jit(device=...))
                res = fn(name)
            lib.effects_barrier()
            return res
        res, out = within(quiet, run)
        found[name] = res, out.splitlines()
    return found


def callback_chain(text: str) -> list[tuple[str, str]]:
    """(token result, token operand) of each host-callback custom_call of a lowered module, in program order."""
    return re.findall(r"(%[\w#]+) = stablehlo\.custom_call @xla_ffi_python_\w+_callback\((%[\w#]+)", text)


# -- the page's blocks -------------------------------------------------------------------------------------------

def test_background_block(ports):
    found = both(lambda n: [h() for h in ports[n].background_block()])
    assert found["kiln"] == found["jax"] == ([2, 3], ["hello", "world", "hello", "world"])


@pytest.mark.parametrize("ordered", [True, False])
def test_two_devices_blocks_on_one_device(ports, ordered):
    def run(n):
        d = LIBS[n].devices()[0]
        return ports[n].two_devices_block(d, d), ports[n].two_devices_print_block(d, d, ordered)
    found = both(run)
    assert_same(found["kiln"][0], found["jax"][0], rtol=0)
    assert found["kiln"][1] == found["jax"][1] == ["hello", "world"]


def test_page_print_block_raises_the_same(ports):
    k, j = (outcome(ports[n].page_print_block(), 1)[0] for n in ("kiln", "jax"))
    assert isinstance(j, AttributeError) and "print" in str(j)
    assert_same_exception(k, j)
    assert "print" in str(k)


@pytest.mark.parametrize("ordered", [True, False])
def test_compiler_reorder_block(ports, ordered):
    found = both(lambda n: [ports[n].compiler_reorder_block(ordered)(i) for i in range(3)])
    assert_same(found["kiln"][0], found["jax"][0], rtol=0)
    k, j = found["kiln"][1], found["jax"][1]
    assert k == j if ordered else sorted(k) == sorted(j)
    assert sorted(k) == sorted(["hello", "world"] * 3)


@pytest.mark.parametrize("ordered", [True, False])
def test_lowering_threads_a_token_through_ordered_callbacks_only(ports, ordered):
    chains = {}
    for n in ("kiln", "jax"):
        text = ports[n].compiler_reorder_block(ordered).lower(1).as_text()
        calls = re.findall(r"custom_call @xla_ffi_python_\w+_callback", text)
        assert len(calls) == 2, (n, text)
        chains[n] = callback_chain(text)
        assert ("!stablehlo.token" in text) == ordered, (n, text)
    if ordered:  # the second callback takes the token the first returns (in both)
        for n, chain in chains.items():
            assert len(chain) == 2 and chain[1][1] == chain[0][0], (n, chain)


def test_log_block(ports):
    def run(n):
        m = ports[n]
        m.log.clear()
        f = m.log_block()
        for i in range(5):
            f(i, 100 + i)
        LIBS[n].effects_barrier()
        return [np.asarray(v) for v in m.log]
    found = both(run)
    assert_same(found["kiln"], found["jax"], rtol=0)
    assert [int(v) for v in found["kiln"][0]] == [1, 2] + [v for i in range(5) for v in (i, 100 + i)]


@pytest.mark.parametrize("ordered", [True, False])
def test_output_token_and_same_device_blocks(ports, ordered):
    def run(n):
        f = ports[n].output_token_block(ordered)
        g, h = ports[n].same_device_block(ordered)
        return [f(), g(), h(), f()]
    found = both(run)
    # the blocks' own calls, then f(), g(), h(), f()
    assert found["kiln"] == found["jax"] == ([None] * 4, ["hello world", "hello", "world"] * 2 + ["hello world"])


TWO_DEVICES = """
import sys, warnings
warnings.simplefilter("ignore", DeprecationWarning)
sys.path.insert(0, {here!r})
from ported import load
jax = __import__({lib!r})
jnp = __import__({lib!r} + ".numpy", fromlist=["_"])
m = load("jep_sequencing_effects", {lib!r})
d0, d1 = jax.devices()[:2]
a, b = m.two_devices_block(d0, d1)
print("results", int(a), int(b), [d.id for d in a.devices()], [d.id for d in b.devices()], a.dtype, a.weak_type)
for ordered in (True, False):
    for _ in range(3):
        a, b = m.two_devices_print_block(d0, d1, ordered)
    f, g = m.two_devices_output_block(d0, d1, ordered)
    for _ in range(2):
        f()
        g()
    jax.effects_barrier()
    print("end", ordered, int(a), int(b))

@jax.jit(device=d0)
def slow(x):
    y = jnp.full((256, 256), x / 256.0)
    for _ in range(8):
        y = jnp.tanh(y @ y)
    jax.debug.print("slow {{}}", x, ordered=True)
    return y

@jax.jit(device=d1)
def fast(x):
    jax.debug.print("fast {{}}", x, ordered=True)
    return x

for i in range(4):
    y = slow(i)
    fast(i)
jax.effects_barrier()
print("slow_result", float(y[0, 0]))
"""
ENV = {"kiln": {"KILN_NUM_CPU_DEVICES": "2"},
       "jax": {"XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}}


def test_two_devices_blocks(run_py):
    here = str(pathlib.Path(__file__).resolve().parent)
    out = {lib: run_py(TWO_DEVICES.format(here=here, lib=lib), env=ENV[lib], timeout=120).stdout.splitlines()
           for lib in ("kiln", "jax")}
    k, j = out["kiln"], out["jax"]
    assert k[0] == j[0] == "results 2 3 [0] [1] int32 True"
    end_true, end_false = j.index("end True 2 3"), j.index("end False 2 3")
    assert (end_true, end_false) == (k.index("end True 2 3"), k.index("end False 2 3"))
    assert k[:end_true] == j[:end_true]  # ordered: the same lines in the same order
    assert sorted(k[end_true:end_false]) == sorted(j[end_true:end_false])  # unordered
    assert k[end_false:-1] == j[end_false:-1]
    np.testing.assert_allclose(float(k[-1].split()[1]), float(j[-1].split()[1]), rtol=1e-5)


# -- ordered effects in loops, conds, scans and vmap, repeated calls, threads --------------------------------------

def loop_cond_scan(lib, x):
    lax = lib.lax

    def body(i, c):
        lib.debug.print("fori i={} c={}", i, c, ordered=True)
        return c + 1
    c = lax.fori_loop(0, 3, body, x)
    lax.cond(c > 4, lambda: lib.debug.print("big {}", c, ordered=True),
             lambda: lib.debug.print("small {}", c, ordered=True))

    def step(carry, t):
        lib.debug.print("scan t={} carry={}", t, carry, ordered=True)
        return carry + t, carry * t
    total, ys = lax.scan(step, c, lib.numpy.arange(3.0))
    w = lax.while_loop(lambda k: k < 2, lambda k: (lib.debug.print("while k={}", k, ordered=True), k + 1)[1], 0)
    lib.debug.print("done {}", total, ordered=True)
    return total, ys, w


def test_ordered_effects_in_loops_conds_and_scans():
    def run(n):
        f = LIBS[n].jit(lambda x: loop_cond_scan(LIBS[n], x))
        return [f(x) for x in (0.0, 2.5)]
    found = both(run)
    assert_same(found["kiln"][0], found["jax"][0], rtol=0)
    assert found["kiln"][1] == found["jax"][1] and len(found["jax"][1]) == 2 * 10


def test_ordered_print_under_vmap():
    def run(n):
        lib = LIBS[n]

        def h(x):
            c = lib.lax.fori_loop(0, 2, lambda i, c: (lib.debug.print("i={} c={}", i, c, ordered=True), c + 1)[1],
                                  x)
            lib.lax.cond(c > 2.5, lambda: lib.debug.print("big {}", c, ordered=True),
                         lambda: lib.debug.print("small {}", c, ordered=True))
            return c
        return lib.jit(lib.vmap(h))(np.array([0.0, 1.0, 5.0], np.float32))
    found = both(run)
    assert_same(found["kiln"][0], found["jax"][0], rtol=0)
    assert found["kiln"][1] == found["jax"][1] and len(found["jax"][1]) == 12


def test_ordered_io_callback_under_vmap_is_refused_by_both():
    def attempt(n):
        lib = LIBS[n]
        f = lib.vmap(lambda x: lib.experimental.io_callback(lambda v: v, lib.ShapeDtypeStruct((), np.float32), x,
                                                            ordered=True))
        return outcome(f, lib.numpy.ones(2))[0]
    k, j = within(attempt, "kiln"), within(attempt, "jax")
    assert isinstance(j, ValueError) and "vmap" in str(j)
    assert_same_exception(k, j)


def test_ordered_print_in_while_cond_fun():
    def run(n):
        lib = LIBS[n]
        return lib.jit(lambda x: lib.lax.while_loop(
            lambda c: (lib.debug.print("c={}", c, ordered=True), c < 3)[1], lambda c: c + 1, x))(0)
    found = both(run)
    assert found["jax"][1] == ["c=0", "c=1", "c=2", "c=3"]
    assert_same(found["kiln"][0], found["jax"][0], rtol=0)
    assert found["kiln"][1] == found["jax"][1]


@pytest.mark.parametrize("ordered", [True, False])
def test_repeated_calls_dispatched_without_waiting(ordered):
    def run(n):
        lib = LIBS[n]
        jnp = lib.numpy

        @lib.jit
        def slow(x):
            y = jnp.full((256, 256), x / 256.0)
            for _ in range(8):
                y = jnp.tanh(y @ y)
            lib.debug.print("slow {} {}", x, y[0, 0] > 0, ordered=ordered)
            return y

        @lib.jit
        def fast(x):
            lib.debug.print("fast {}", x, ordered=ordered)
            return x + 1
        return [(slow(i), fast(i)) for i in range(6)]
    found = both(run)
    assert_same(found["kiln"][0], found["jax"][0], rtol=1e-5)
    k, j = found["kiln"][1], found["jax"][1]
    assert k == j if ordered else sorted(k) == sorted(j)
    assert len(k) == 12


def test_ordered_effects_per_user_thread():
    def run(n):
        lib, log = LIBS[n], []

        @lib.jit
        def f(tag, i):
            lib.experimental.io_callback(lambda t, v: log.append((int(t), int(v), "a")), None, tag, i, ordered=True)
            lib.experimental.io_callback(lambda t, v: log.append((int(t), int(v), "b")), None, tag, i, ordered=True)
            return i
        threads = [threading.Thread(target=lambda tag=tag: [f(tag, i) for i in range(8)]) for tag in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        lib.effects_barrier()
        return {tag: [(i, k) for t, i, k in log if t == tag] for tag in range(3)}, len(log)
    found = both(run)
    assert found["kiln"] == found["jax"]
    assert found["jax"][0] == ({tag: [(i, k) for i in range(8) for k in "ab"] for tag in range(3)}, 48)
