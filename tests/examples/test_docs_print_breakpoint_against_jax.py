"""JAX's docs page docs/debugging/print_breakpoint.md under kiln and under JAX gives the same results and prints the
same lines (the against_jax session).

The kiln side is tests/examples/jax_ported/docs_print_breakpoint.py; the JAX side is the same source with JAX's
imports put back (registered with linecache, so that JAX's debugger finds its source as kiln's finds the port's).
The NumPy oracles and the page's claims are in test_docs_print_breakpoint.py; this checks that the two libraries
agree block by block: the values (dtypes, weak types, shapes), what ``jax.debug.print`` prints and in which order
(unordered prints: the same lines), and the debugger sessions the breakpoint blocks open, command by command on the
same fake stdin: the values shown, the frames, the source listings, the backtraces, help's commands. The ``pmap``
block runs on 8 CPU devices in a fresh interpreter per library (same_as_jax.run_on_eight_cpu_devices); on one
device both raise a ValueError.

Differences, tested as such: the debugger shows values as NumPy arrays (kiln, README "Debugging") where JAX shows
``Array``s (the numbers are compared); ``q`` in the debugger raises SystemExit out of the call (kiln: "exits the
program", as the page says) where JAX 0.10.2 raises a JaxRuntimeError (a RuntimeError) wrapping the SystemExit
raised in its callback; on one device an ordered print under pmap is an error in kiln (as over several, where JAX
raises a ValueError too) but runs in JAX.
"""
from __future__ import annotations

import io
import linecache
import re
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import PORTED, TO_JAX, load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet, run_on_eight_cpu_devices  # noqa: E402

import kiln  # noqa: E402

NAME = "docs_print_breakpoint"
# JAX's debugger flattens the locals of every frame above the breakpoint, pytest's generators among them
JAX_FRAMES_WARNING = pytest.mark.filterwarnings("ignore:Python iterable type 'generator':DeprecationWarning")


@pytest.fixture(scope="module")
def both():
    source = (PORTED / f"{NAME}.py").read_text()
    for pattern, replacement in TO_JAX:
        source = re.sub(pattern, replacement, source, flags=re.M)
    linecache.cache[f"jax_{NAME}.py"] = (len(source), None, source.splitlines(True), f"jax_{NAME}.py")
    yield load(NAME), load(NAME, "jax")
    linecache.cache.pop(f"jax_{NAME}.py", None)


def _same_block(k_fn, j_fn, *args, ordered=True):
    """(kiln's result, JAX's) of a block, having printed the same lines (``ordered=False``: in any order)."""
    (kres, kout), (jres, jout) = quiet(k_fn, *args), quiet(j_fn, *args)
    kiln.effects_barrier()
    jax.effects_barrier()
    assert (kout == jout) if ordered else (sorted(kout.splitlines()) == sorted(jout.splitlines()))
    assert kout
    return kres, jres


@pytest.mark.parametrize("block", ["emoji_print_block", "asynchronous_block"])
def test_print_blocks(both, block):
    k, j = both
    assert_same(*_same_block(getattr(k, block), getattr(j, block)), rtol=0)


def test_vmap_and_lax_map_block(both):
    k, j = both
    (kres, kf, kxs), (jres, jf, jxs) = _same_block(k.vmap_and_lax_map_block, j.vmap_and_lax_map_block)
    assert_same((kres, kxs), (jres, jxs), rtol=0)


def test_grad_blocks(both):
    k, j = both
    for block in ("grad_block", "print_grad_block"):
        (kg, kf), (jg, jf) = _same_block(getattr(k, block), getattr(j, block))
        assert_same(kg, jg, rtol=0)
        assert_same(*_same_block(kiln.jit(kiln.grad(lambda x: kf(x) ** 2)), jax.jit(jax.grad(lambda x: jf(x) ** 2)),
                                 3.0), rtol=0)


def test_sharp_bits_blocks(both):
    k, j = both
    assert_same(*_same_block(k.ordering_block, j.ordering_block, ordered=False), rtol=0)
    kf, jf = _same_block(k.effects_barrier_block, j.effects_barrier_block)
    assert_same(*_same_block(kf, jf, -1.5), rtol=0)
    w = np.array([[1.0, -2.0, 0.5], [0.25, 1.0, -1.0]], np.float32)
    b, x = np.array([0.5, -3.0], np.float32), np.array([1.0, 2.0, -2.0], np.float32)
    assert_same(*_same_block(lambda: k.f(kiln.numpy.asarray(w), b, x), lambda: j.f(jax.numpy.asarray(w), b, x)),
                rtol=0)


def test_pmap_block_on_one_device(both):
    k, j = both
    (kerr, kout), (jerr, jout) = outcome(k.pmap_block), outcome(j.pmap_block)
    assert isinstance(jerr, ValueError) and kout == jout == ""
    assert_same_exception(kerr, jerr)


PMAP_SCRIPT = """
import contextlib, io, json, sys
import numpy as np
sys.path.insert(0, {here!r})
from ported import load
jax = __import__({lib!r})
m = load("docs_print_breakpoint", {lib!r})
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    r = m.pmap_block()
    jax.effects_barrier()
def f(x):
    jax.debug.print("x: {{}}", x, ordered=True)
    return x
try:
    jax.pmap(f)(jax.numpy.arange(2.0))
    raised = None
except Exception as e:
    raised = [c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins"][0]
np.savez({npz!r}, r=np.asarray(r))
json.dump({{"printed": sorted(buf.getvalue().splitlines()), "dtype": str(r.dtype),
           "devices": len(r.sharding.device_set), "ordered_raised": raised}}, open({out!r}, "w"))
"""


def test_pmap_block_on_eight_devices(run_py, tmp_path):
    found = run_on_eight_cpu_devices(run_py, tmp_path, PMAP_SCRIPT)
    (karr, kres), (jarr, jres) = found["kiln"], found["jax"]
    np.testing.assert_array_equal(karr["r"], jarr["r"])
    assert kres == jres == {"printed": ["x: 0.0", "x: 1.0"], "dtype": "float32", "devices": 2,
                            "ordered_raised": "ValueError"}


# ------------------------------------------------ the debugger sessions -------------------------------------------

_SHOWN = r"(?:array|Array)\(([^,()]+)(?:, dtype=\w+)?\)"


def _session(mod, block, commands, monkeypatch):
    """What the debugger answered to each command, values read as numbers and the port's file name made one."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(commands))
    res, out = outcome(getattr(mod, block))
    jax.effects_barrier()
    out = re.sub(r'[^\s"]*docs_print_breakpoint\.py', "PORT", out)
    answers = []
    for answer in out.split("(jdb) ")[1:]:
        if answer.startswith("Traceback:"):  # the port's frames (the callers', this test's, differ by a line)
            frames = re.findall(r'(  File ".*", line \d+\n    .*\n)', answer)
            answer = "".join(f for f in frames if f.startswith('  File "PORT"'))
        values = re.findall(_SHOWN, answer)
        answers.append([float(v) if v not in ("True", "False") else v for v in values] if values else answer)
    return res, out.split("(jdb) ")[0], answers


@JAX_FRAMES_WARNING
@pytest.mark.parametrize("block, commands", [
    ("breakpoint_block", "p y\np z\npp (y, z)\nn\nhelp\nw\nl\nu\nbt\nl\nd\nd\nc\n"),
    ("nonfinite_block", "p x\nu\np is_finite\nu\np x, y, z\nw\nc\n")])
def test_debugger_sessions(both, monkeypatch, block, commands):
    k, j = both
    kres, kintro, kanswers = _session(k, block, commands, monkeypatch)
    jres, jintro, janswers = _session(j, block, commands, monkeypatch)
    assert_same(kres, jres, rtol=0)
    assert kintro == jintro == "Entering jdb:\n"
    assert len(kanswers) == len(janswers) == commands.count("\n")
    traces = [a for a in janswers if isinstance(a, str) and a.startswith('  File "PORT"')]
    assert len(traces) == commands.count("w\n") + commands.count("bt\n") and all(t.count("File") >= 2 for t in traces)
    for ka, ja in zip(kanswers, janswers):
        if isinstance(ja, str) and ja.startswith("\nDocumented commands"):  # help: the same commands
            assert set(ka.split()) >= set(ja.split()) - {"EOF"}
        else:
            assert ka == ja


@JAX_FRAMES_WARNING
@pytest.mark.parametrize("commands", ["q\n", ""])
def test_quit_differs(both, monkeypatch, commands):
    k, j = both
    monkeypatch.setattr(sys, "stdin", io.StringIO(commands))
    with pytest.raises(SystemExit):
        quiet(k.breakpoint_block)
    monkeypatch.setattr(sys, "stdin", io.StringIO(commands))
    (jerr, _) = outcome(j.breakpoint_block)
    assert isinstance(jerr, RuntimeError) and "SystemExit" in str(jerr)


def test_ordered_print_under_pmap_on_one_device_differs():
    """"using ordered=True will raise an error under jax.pmap": JAX 0.10.2 raises it over several devices only (as
    kiln, test_pmap_block_on_eight_devices); over one it prints. kiln refuses ordered callbacks in any pmap."""
    def body(lib):
        def f(x):
            lib.debug.print("x: {}", x, ordered=True)
            return x
        return f
    res, out = quiet(jax.pmap(body(jax)), jax.numpy.arange(1.0))
    jax.effects_barrier()
    assert out == "x: 0.0\n" and float(res[0]) == 0.0
    with pytest.raises(ValueError, match="ordered=False"):
        kiln.pmap(body(kiln))(kiln.numpy.arange(1.0))
