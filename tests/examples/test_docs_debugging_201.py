"""JAX's docs page docs/new_docs/201/debugging.md ("Debugging runtime values": ``jax.debug.print``, its sharp bits,
``jax.debug.callback``, ``jax_debug_nans``, ``jax_disable_jit``), ported to kiln by changing imports
(tests/examples/jax_ported/docs_debugging_201.py), checked against oracles that do not involve JAX: NumPy for the
printed and returned values (``np.sin``; ``np.log`` of a negative number, which NumPy too reports as a
``FloatingPointError`` under ``np.errstate(invalid="raise")``), float64 central differences for the gradients a
backward-pass print shows, the port's own source lines for the tracebacks.

The older page docs/debugging.md has the first blocks too (print and ``jax.debug.print`` under jit, vmap, lax.map,
grad, ``ordered=True``; the logging callback): tests/examples/test_docs_callbacks_aot.py checks their output line by
line. Here those blocks are checked for this page's claims instead: print runs once, at trace time, where
``jax.debug.print`` runs at every call; vmap and lax.map print the same lines in different orders; grad prints the
forward pass, and so does jit of grad ("consistent if you apply jax.jit"). The new blocks (the custom_vjp that prints
the cotangent, ``effects_barrier``, the traceback of ``jax_debug_nans``, ``jax.debug_nans(False)``, Python's
``breakpoint()`` under ``jax_disable_jit``) are checked in full. Python's ``breakpoint()`` gets pdb commands from a
given stdin (``sys.breakpointhook`` replaced for the test): pdb quits at the end of its input, so nothing waits for
a terminal.
"""
from __future__ import annotations

import contextlib
import io
import logging
import pathlib
import pdb
import re
import sys

import numpy as np
import pytest
from ported import load

import kiln
from kiln.errors import TracerBoolConversionError

H = 1e-6  # central differences' step (float64)
PORT = pathlib.Path(__file__).resolve().parent / "jax_ported" / "docs_debugging_201.py"


@pytest.fixture(scope="module")
def page():
    return load("docs_debugging_201")


@pytest.fixture
def flags_back():
    """The page's blocks set jax_debug_nans and jax_disable_jit for the whole process: set them back."""
    yield
    kiln.config.update("jax_debug_nans", False)
    kiln.config.update("jax_disable_jit", False)


def _is(x, value, dtype, weak):
    assert (x.dtype, x.weak_type, x.shape) == (np.dtype(dtype), weak, np.shape(value))
    np.testing.assert_allclose(np.asarray(x), value, rtol=1e-6)


def _line(text: str) -> int:
    """The line number of ``text`` in the port (the only line that holds it)."""
    lines = [i + 1 for i, ln in enumerate(PORT.read_text().splitlines()) if text in ln]
    assert len(lines) == 1, (text, lines)
    return lines[0]


def _printed(out: str, what: str) -> list[float]:
    return [float(v) for v in re.findall(rf"^{re.escape(what)} -> (\S+)$", out, re.M)]


# -------------------------------------------- `jax.debug.print` for simple inspection ------------------------------

def test_print_at_trace_time_debug_print_at_run_time(page, capsys):
    _is(page.print_block(), np.sin(2.0), np.float32, True)
    # "the Python print function will only print this tracer value" (README: printed tracers read as JAX's)
    assert capsys.readouterr().out == "print(x) -> JitTracer(~float32[])\nprint(y) -> JitTracer(~float32[])\n"
    res = page.debug_print_block()
    _is(res, np.sin(2.0), np.float32, True)
    out = capsys.readouterr().out
    assert out.startswith("jax.debug.print(x) -> 2.0\njax.debug.print(y) -> ")
    np.testing.assert_allclose(_printed(out, "jax.debug.print(y)"), [np.sin(2.0)], rtol=1e-6)


def test_vmap_and_lax_map_print_the_same_lines_in_other_orders(page, capsys):
    res, f, xs = page.vmap_block()
    vmap_out = capsys.readouterr().out
    mapped = page.lax_map_block(f, xs)
    map_out = capsys.readouterr().out
    x = np.arange(3.0)
    for r in (res, mapped):
        _is(r, np.sin(x), np.float32, False)
    # "compute the same results in different ways": the same lines, in another order
    assert sorted(vmap_out.splitlines()) == sorted(map_out.splitlines()) and vmap_out != map_out
    for out in (vmap_out, map_out):
        assert _printed(out, "jax.debug.print(x)") == list(x)
        np.testing.assert_allclose(_printed(out, "jax.debug.print(y)"), np.sin(x), rtol=1e-6)
    # vmap: one batched print of x, then one of y; lax.map: element after element
    assert [ln.split(" -> ")[0] for ln in vmap_out.splitlines()] == ["jax.debug.print(x)"] * 3 + [
        "jax.debug.print(y)"] * 3
    lines = map_out.splitlines()
    for i, v in enumerate(x):
        assert f"jax.debug.print(x) -> {v}" in lines[2 * i:2 * i + 2]


def test_grad_prints_the_forward_pass_with_or_without_jit(page, capsys):
    _is(page.grad_block(), 2.0, np.float32, True)  # d x**2 / dx at 1
    out = capsys.readouterr().out
    assert out == "jax.debug.print(x) -> 1.0\n"

    def f(x):  # the block's f, to apply jit to grad (the page: "consistent if you apply jax.jit")
        kiln.debug.print("jax.debug.print(x) -> {}", x)
        return x ** 2

    _is(kiln.jit(kiln.grad(f))(1.0), 2.0, np.float32, True)
    assert capsys.readouterr().out == out


def test_ordered_prints_keep_program_order(page, capsys):
    for _ in range(3):
        _is(page.ordered_block(), 3, np.int32, True)
        assert capsys.readouterr().out == "jax.debug.print(x) -> 1\njax.debug.print(y) -> 2\n"


# -------------------------------------------- Sharp bits of `jax.debug.print` --------------------------------------

def test_custom_vjp_prints_the_cotangent(page, capsys):
    g, f = page.print_grad_block()
    fd = ((2 * (1.0 + H)) - (2 * (1.0 - H))) / (2 * H)  # d(2x)/dx: the cotangent reaching print_grad
    _is(g, fd, np.float32, True)
    assert capsys.readouterr().out == "x_grad: 2.0\n"
    # at another point and through another loss, (2x)**2: the cotangent at print_grad's output is 8x
    g = kiln.grad(lambda x: f(x) ** 2)(3.0)
    fd = ((2 * (3.0 + H)) ** 2 - (2 * (3.0 - H)) ** 2) / (2 * H)
    np.testing.assert_allclose(float(g), fd, rtol=1e-6)
    out = capsys.readouterr().out
    np.testing.assert_allclose(_printed(out.replace("x_grad: ", "x_grad -> "), "x_grad"), [fd], rtol=1e-6)
    # nothing on the forward pass
    f(3.0)
    kiln.effects_barrier()
    assert capsys.readouterr().out == ""


def test_effects_barrier_waits_for_the_prints(page, capsys):
    f = page.effects_barrier_block()
    assert capsys.readouterr().out == "x: 2.0\n"
    for v in (0.5, -3.0):
        _is(f(v), v, np.float32, True)
    kiln.effects_barrier()
    assert capsys.readouterr().out == "x: 0.5\nx: -3.0\n"


# -------------------------------------------- `jax.debug.callback` -------------------------------------------------

def test_logging_callback_under_jit_vmap_grad(page, caplog):
    with caplog.at_level(logging.WARNING):
        res, f = page.callback_block()
        _is(res, 1.0, np.float32, True)
        _is(page.callback_vmap_block(f), np.arange(5.0), np.float32, False)
        _is(page.callback_grad_block(f), 1.0, np.float32, True)  # d x / dx
        kiln.effects_barrier()
    # once per call, once per batch element, once on grad's primal value; logged at WARNING on the root logger
    assert [r.getMessage() for r in caplog.records] == [f"Logged value: {v}" for v in [1.0, *np.arange(5.0), 1.0]]
    assert {(r.name, r.levelname) for r in caplog.records} == {("root", "WARNING")}


# -------------------------------------------- `jax_debug_nans` -----------------------------------------------------

def test_debug_nans(page, capsys, flags_back):
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):  # the oracle: log(-3 * 5**2) is a NaN
        np.log(-3 * np.square(5.0))
    f = page.debug_nans_block()
    assert kiln.config.jax_debug_nans
    out = capsys.readouterr().out
    # "only print a couple of lines": the two frames, the block's call and f's line that made the NaN
    frames = re.findall(r'^  File "(.*)", line (\d+), in (\w+)$', out, re.M)
    assert frames == [(str(PORT), str(_line("    f(5.)")), "debug_nans_block"),
                      (str(PORT), str(_line("return jnp.log(-w)")), "f")]
    assert "    return jnp.log(-w)\n" in out
    last = out.rstrip("\n").splitlines()[-1]
    # (kiln's class is InvalidValueError, a FloatingPointError: README "NaNs and Infs")
    assert re.match(r"[\w.]*(FloatingPointError|InvalidValueError): invalid value \(nan\) encountered in log", last)
    # under jit: the output is checked, the function re-run op by op, the error names the producing line
    with pytest.raises(FloatingPointError) as info:
        page.debug_nans_jit_block(f)
    msg = str(info.value)
    assert "invalid value (nan) encountered in log" in msg and f"{PORT}:{_line('return jnp.log(-w)')}" in msg
    assert "op by op" in msg
    # scoped off: the NaN is printed, as NumPy's log gives it; the global flag is still on afterwards
    page.debug_nans_off_block(f)
    with np.errstate(invalid="ignore"):
        assert capsys.readouterr().out == f"{np.float32(np.log(-3 * np.square(5.0)))}\n" == "nan\n"
    assert kiln.config.jax_debug_nans
    page.debug_nans_reset_block()
    assert not kiln.config.jax_debug_nans
    with np.errstate(invalid="ignore"):
        assert np.isnan(float(kiln.jit(f)(5.0)))  # no check any more


# -------------------------------------------- `jax_disable_jit` ----------------------------------------------------

def _pdb_hook(commands: str, out: io.StringIO, calls: list):
    """A ``sys.breakpointhook`` that runs pdb on the caller's frame with ``commands`` as its input (pdb quits at the
    end of it, so nothing waits for a terminal)."""
    def hook(*args, **kwargs):
        calls.append(sys._getframe(1).f_code.co_name)
        pdb.Pdb(stdin=io.StringIO(commands), stdout=out, nosigint=True).set_trace(sys._getframe(1))
    return hook


def test_breakpoint_under_disable_jit(page, monkeypatch, flags_back):
    out, calls = io.StringIO(), []
    monkeypatch.setattr(sys, "breakpointhook", _pdb_hook("p y\np x\np type(x).__name__\nc\n", out, calls))
    with np.errstate(invalid="ignore"):
        expected = np.log(np.float32(-2.0))
        res, printed = _quiet(page.disable_jit_block)
    assert kiln.config.jax_disable_jit  # the block turns it on for the process, as on the page
    assert np.isnan(expected) and np.isnan(float(res)) and res.dtype == np.float32
    assert calls == ["f"] and printed == ""  # "Enters PDB breakpoint!", in f, once
    text = out.getvalue()
    # pdb stopped in f, at the line after breakpoint(), with f's locals: y the NaN (an Array), x the Python float
    assert f"docs_debugging_201.py({_line('      breakpoint()') + 1})f()" in text
    answers = [ln.removeprefix("(Pdb) ") for ln in text.splitlines() if ln.startswith("(Pdb) ")]
    assert answers[:3] == ["Array(nan, dtype=float32, weak_type=True)", "-2.0", "'float'"]


def test_breakpoint_needs_disable_jit(monkeypatch, flags_back):
    """The reason for the flag: under jit, ``if jnp.isnan(y)`` meets a traced value (an error; breakpoint() is not
    reached); a positive input needs no breakpoint with jit disabled."""
    out, calls = io.StringIO(), []
    monkeypatch.setattr(sys, "breakpointhook", _pdb_hook("c\n", out, calls))

    def f(x):  # the block's f
        y = kiln.numpy.log(x)
        if kiln.numpy.isnan(y):
            breakpoint()
        return y

    with pytest.raises(TracerBoolConversionError):
        kiln.jit(f)(-2.0)
    with kiln.disable_jit():
        np.testing.assert_allclose(float(kiln.jit(f)(2.0)), np.log(2.0), rtol=1e-6)
    assert calls == []


def _quiet(fn, *args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue()
