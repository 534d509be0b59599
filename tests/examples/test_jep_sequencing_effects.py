"""JAX's design document docs/jep/10657-sequencing-effects.md ("Sequencing side-effects in JAX") under kiln: the
blocks of tests/examples/jax_ported/jep_sequencing_effects.py and the page's claims about the order of effects.

Ordered effects (`debug.print(..., ordered=True)`, `io_callback(..., ordered=True)`) run in program order: inside one
program (the two prints of one function; loops, conds, scans, vmap), across calls dispatched one after another
without waiting (the page's runtime tokens; kiln dispatches asynchronously), across devices, and per user thread.
Unordered effects each run once, in an order the tests do not assert (the page: XLA "is free to reorder them"),
except for the page's same-device claim. `effects_barrier()` waits for them all (the page's output tokens). The
oracles are Python loops over the same values. What a test prints is read with capsys after
`kiln.effects_barrier()` (debug.print prints from the host callback; tests/callbacks does the same). Everything that
waits on the runtime runs under a time limit (`within`), the two-device blocks in a subprocess with one.
"""
from __future__ import annotations

import re
import threading

import numpy as np
import pytest
from ported import load, within

import kiln
import kiln.numpy as jnp
from kiln import lax
from kiln.experimental import io_callback


@pytest.fixture(scope="module")
def m():
    return load("jep_sequencing_effects")


def printed(capsys) -> list[str]:
    """The lines printed so far, once every launched program's effects have run."""
    within(kiln.effects_barrier)
    return capsys.readouterr().out.splitlines()


def callback_chain(text: str) -> list[tuple[str, str]]:
    """(token operand, token result) of each host-callback custom_call of a lowered module, in program order."""
    return re.findall(r"(%[\w#]+) = stablehlo\.custom_call @xla_ffi_python_\w+_callback\((%[\w#]+)", text)


# -- Background -------------------------------------------------------------------------------------------------

def test_background_block_prints_in_python_order(m, capsys):
    f, g = m.background_block()
    assert capsys.readouterr().out == "hello\nworld\n"
    assert (f(), g()) == (2, 3)


def test_jit_device_blocks_on_one_device(m):
    d = kiln.devices()[0]
    a, b = within(m.two_devices_block, d, d)
    for x, v in ((a, 2), (b, 3)):
        assert (x.dtype, x.shape, x.weak_type, int(x)) == (np.int32, (), True, v)
        assert x.devices() == {d}


@pytest.mark.parametrize("ordered", [True, False])
def test_two_devices_print_block_on_one_device(m, capsys, ordered):
    d = kiln.devices()[0]
    a, b = within(m.two_devices_print_block, d, d, ordered)
    assert (int(a), int(b)) == (2, 3)
    # ordered: in program order; unordered on one device: the page says the runtime does not interleave
    # computations on the same device, so the second call's effects come after the first's too
    assert printed(capsys) == ["hello", "world"]


def test_page_print_block_jax_print_does_not_exist(m):
    f = m.page_print_block()
    with pytest.raises(AttributeError, match="print"):
        f(1)


@pytest.mark.parametrize("ordered", [True, False])
def test_compiler_reorder_block(m, capsys, ordered):
    f = m.compiler_reorder_block(ordered)
    outs = within(lambda: [f(i) for i in range(3)])
    assert [int(o) for o in outs] == [0, 1, 2]
    lines = printed(capsys)
    if ordered:  # hello before world, call after call
        assert lines == ["hello", "world"] * 3
    else:  # each print once per call, in an order XLA may choose
        assert sorted(lines) == sorted(["hello", "world"] * 3)


def test_ordered_prints_lower_to_a_token_chain(m):
    """The page's compiler tokens: one token threaded from each ordered callback into the next."""
    text = m.compiler_reorder_block(True).lower(1).as_text()
    chain = callback_chain(text)
    assert len(chain) == 2, text
    assert chain[1][1] == chain[0][0], text  # the second print's token is the first's result
    assert "!stablehlo.token" in text
    unordered = m.compiler_reorder_block(False).lower(1).as_text()
    assert len(re.findall(r"custom_call @xla_ffi_python_\w+_callback", unordered)) == 2
    assert "token" not in unordered  # nothing sequences unordered effects


# -- Motivation: the global-list logger --------------------------------------------------------------------------

def test_log_block_logs_x_before_y(m):
    m.log.clear()
    f = within(m.log_block)
    within(kiln.effects_barrier)
    assert [int(v) for v in m.log] == [1, 2]
    m.log.clear()
    outs = within(lambda: [f(i, 100 + i) for i in range(10)])
    within(kiln.effects_barrier)
    assert outs == [None] * 10
    assert [int(v) for v in m.log] == [v for i in range(10) for v in (i, 100 + i)]


# -- Blocking on output tokens -----------------------------------------------------------------------------------

@pytest.mark.parametrize("ordered", [True, False])
def test_output_token_block_effects_barrier_waits(m, capsys, ordered):
    f = within(m.output_token_block, ordered)
    assert printed(capsys) == ["hello world"]
    assert within(f) is None
    assert printed(capsys) == ["hello world"]


@pytest.mark.parametrize("ordered", [True, False])
def test_same_device_block(m, capsys, ordered):
    f, g = within(m.same_device_block, ordered)
    assert printed(capsys) == ["hello", "world"]  # ordered, or on the same device (the page's claim)
    within(lambda: [h() for _ in range(3) for h in (f, g)])
    assert printed(capsys) == ["hello", "world"] * 3


def test_effects_barrier_with_nothing_pending():
    assert within(kiln.effects_barrier) is None


TWO_DEVICES = """
import sys
sys.path.insert(0, {here!r})
import numpy as np
import kiln as jax
import kiln.numpy as jnp
from ported import load
m = load("jep_sequencing_effects")
d0, d1 = jax.devices()[:2]
a, b = m.two_devices_block(d0, d1)
print("results", int(a), int(b), [d.id for d in a.devices()], [d.id for d in b.devices()])
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
def slow(x):  # a longer program on device 0, then a short one on device 1: ordered, still in call order
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


def test_two_devices_blocks(run_py):
    """The page's two-device blocks on two CPU devices (a fresh interpreter: the count is fixed at start)."""
    import pathlib
    here = str(pathlib.Path(__file__).resolve().parent)
    out = run_py(TWO_DEVICES.format(here=here), env={"KILN_NUM_CPU_DEVICES": "2"}, timeout=120).stdout.splitlines()
    assert out[0] == "results 2 3 [0] [1]"
    end_true, end_false = out.index("end True 2 3"), out.index("end False 2 3")
    assert out[1:end_true] == ["hello", "world"] * 6  # ordered: across devices, in call order
    assert sorted(out[end_true + 1:end_false]) == sorted(["hello", "world"] * 6)  # unordered: each once
    slow_fast = out[end_false + 1:-1]
    assert slow_fast == [f"{k} {i}" for i in range(4) for k in ("slow", "fast")]
    y = np.full((256, 256), 3 / 256.0, np.float64)
    for _ in range(8):
        y = np.tanh(y @ y)
    assert out[-1].startswith("slow_result ")
    np.testing.assert_allclose(float(out[-1].split()[1]), y[0, 0], rtol=1e-4)


# -- The page's claims beyond its blocks: ordered effects in loops, conds, vmap, repeated calls, threads ----------

def loop_cond_scan(x):
    def body(i, c):
        kiln.debug.print("fori i={} c={}", i, c, ordered=True)
        return c + 1
    c = lax.fori_loop(0, 3, body, x)
    lax.cond(c > 4, lambda: kiln.debug.print("big {}", c, ordered=True),
             lambda: kiln.debug.print("small {}", c, ordered=True))

    def step(carry, t):
        kiln.debug.print("scan t={} carry={}", t, carry, ordered=True)
        return carry + t, carry * t
    total, ys = lax.scan(step, c, jnp.arange(3.0))
    w = lax.while_loop(lambda k: k < 2, lambda k: (kiln.debug.print("while k={}", k, ordered=True), k + 1)[1], 0)
    kiln.debug.print("done {}", total, ordered=True)
    return total, ys, w


def loop_cond_scan_oracle(x: float):
    lines, c = [], x
    for i in range(3):
        lines.append(f"fori i={i} c={c!r}")
        c += 1
    lines.append(f"{'big' if c > 4 else 'small'} {c!r}")
    carry, ys = c, []
    for t in (0.0, 1.0, 2.0):
        lines.append(f"scan t={t!r} carry={carry!r}")
        ys.append(carry * t)
        carry += t
    lines += [f"while k={k}" for k in range(2)] + [f"done {carry!r}"]
    return lines, carry, ys


def test_ordered_effects_in_loops_conds_and_scans(capsys):
    f = kiln.jit(loop_cond_scan)
    outs = within(lambda: [f(x) for x in (0.0, 2.5)])  # two calls in a row: the second's effects after the first's
    expected = []
    for x, (total, ys, w) in zip((0.0, 2.5), outs):
        lines, carry, ys_oracle = loop_cond_scan_oracle(x)
        expected += lines
        assert float(total) == carry and int(w) == 2
        np.testing.assert_allclose(np.asarray(ys), ys_oracle)
    assert printed(capsys) == expected


def test_ordered_print_under_vmap_runs_per_element_in_order(capsys):
    def h(x):
        c = lax.fori_loop(0, 2, lambda i, c: (kiln.debug.print("i={} c={}", i, c, ordered=True), c + 1)[1], x)
        lax.cond(c > 2.5, lambda: kiln.debug.print("big {}", c, ordered=True),
                 lambda: kiln.debug.print("small {}", c, ordered=True))
        return c
    xs = np.array([0.0, 1.0, 5.0], np.float32)
    out = within(kiln.jit(kiln.vmap(h)), xs)
    np.testing.assert_array_equal(np.asarray(out), xs + 2)
    # per loop step, one print per batch element in batch order; a batched predicate runs both branches
    # (on every element), the false branch first
    expected = [f"i={i} c={x + i!r}" for i in range(2) for x in xs.tolist()]
    expected += [f"{k} {x + 2!r}" for k in ("small", "big") for x in xs.tolist()]
    assert printed(capsys) == expected


def test_ordered_io_callback_under_vmap_is_refused():
    """As documented (external callbacks: `io_callback` is compatible with `vmap` only if `ordered=False`)."""
    f = kiln.vmap(lambda x: io_callback(lambda v: v, kiln.ShapeDtypeStruct((), np.float32), x, ordered=True))
    with pytest.raises(ValueError, match="cannot vmap the ordered IO callback .*ordered=False or outside vmap"):
        f(jnp.ones(2))
    seen = []
    g = kiln.jit(kiln.vmap(lambda x: io_callback(lambda v: (seen.append(float(v)), v)[1],
                                                kiln.ShapeDtypeStruct((), np.float32), x)))
    np.testing.assert_array_equal(np.asarray(within(g, jnp.arange(3.0))), [0, 1, 2])
    within(kiln.effects_barrier)
    assert sorted(seen) == [0.0, 1.0, 2.0]  # unordered: each element once


def test_ordered_print_in_while_cond_fun(capsys):
    """Each evaluation of the condition prints, in order with the body's prints (kiln evaluates cond_fun before the
    loop and at the end of each trip, its predicate carried, as JAX lowers it)."""
    def cond(c):
        kiln.debug.print("c={}", c, ordered=True)
        return c < 3

    def body(c):
        kiln.debug.print("body {}", c, ordered=True)
        return c + 1

    f = kiln.jit(lambda x: lax.while_loop(cond, body, x))
    assert int(within(f, 0)) == 3 and int(within(f, 5)) == 5
    within(kiln.effects_barrier)
    assert capsys.readouterr().out.splitlines() == ["c=0", "body 0", "c=1", "body 1", "c=2", "body 2", "c=3", "c=5"]


@pytest.mark.parametrize("ordered", [True, False])
def test_repeated_calls_dispatched_without_waiting(capsys, ordered):
    """A longer program then a shorter one, called in turn without blocking: ordered, in call order."""
    @kiln.jit
    def slow(x):
        y = jnp.full((256, 256), x / 256.0)
        for _ in range(8):
            y = jnp.tanh(y @ y)
        kiln.debug.print("slow {} {}", x, y[0, 0] > 0, ordered=ordered)
        return y

    @kiln.jit
    def fast(x):
        kiln.debug.print("fast {}", x, ordered=ordered)
        return x + 1

    def calls():
        return [(slow(i), fast(i)) for i in range(6)]
    outs = within(calls)
    expected = [line for i in range(6) for line in (f"slow {i} {i > 0}", f"fast {i}")]
    lines = printed(capsys)
    assert lines == expected if ordered else sorted(lines) == sorted(expected)
    y = np.full((256, 256), 5 / 256.0)
    for _ in range(8):
        y = np.tanh(y @ y)
    np.testing.assert_allclose(np.asarray(outs[-1][0]), y, rtol=1e-4, atol=1e-6)
    assert [int(b) for _, b in outs] == list(range(1, 7))


def test_ordered_effects_are_sequenced_per_user_thread():
    """The page: "Sequencing is only promised at a user thread level": each thread's calls log in its order."""
    log = []

    @kiln.jit
    def f(tag, i):
        io_callback(lambda t, v: log.append((int(t), int(v), "a")), None, tag, i, ordered=True)
        io_callback(lambda t, v: log.append((int(t), int(v), "b")), None, tag, i, ordered=True)
        return i

    def worker(tag):
        for i in range(12):
            f(tag, i)

    def run_threads():
        threads = [threading.Thread(target=worker, args=(tag,)) for tag in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        kiln.effects_barrier()
    within(run_threads)
    for tag in range(3):
        assert [(i, k) for t, i, k in log if t == tag] == [(i, k) for i in range(12) for k in "ab"]
    assert len(log) == 3 * 12 * 2
