"""JAX's docs page docs/debugging/print_breakpoint.md ("Compiled prints and breakpoints": ``jax.debug.print`` under
jit, vmap, lax.map, grad and a custom_vjp, its sharp bits, ``jax.debug.breakpoint()``), ported to kiln by changing
imports (tests/examples/jax_ported/docs_print_breakpoint.py), checked against oracles that do not involve JAX:
NumPy for the values the blocks return and print (``np.sin``, ``np.cos``, ``2 / 0``, a relu layer), float64 central
differences for the gradients, and the page's claims: the order of the printed lines under vmap (batched: all the
x's, then all the y's) and lax.map (element by element), grad prints the forward pass (also under jit), a custom_vjp
prints the cotangent, unordered prints come in either order, ``effects_barrier`` waits for them, and the debugger
stops in the frames that traced it with their run-time values, moves between them (u/d), lists (l), shows the
backtrace (w), helps (help), continues (c) and quits (q: the program exits).

The page's printed numbers are those of an older JAX (0.9092974662780762 for sin(2); 0.841471): the tests compare
the printed numbers with NumPy's float32 values instead. The debugger reads ``sys.stdin``: the tests replace it with
the commands to run (the debugger quits at the end of its input, so nothing waits for a terminal), and read what it
writes from the captured stdout. The debugger shows values as NumPy arrays (README "Debugging":
``kiln.debug.breakpoint``; JAX shows ``Array``s): the tests read the numbers. The ``jax.pmap`` block needs two
devices: here, on one, its error is checked; tests/multidevice/test_docs_print_breakpoint.py runs it on 8.
"""
from __future__ import annotations

import io
import re
import sys

import numpy as np
import pytest
from ported import fd_jacobian, load

import kiln
import kiln.numpy as jnp

H = 1e-6


@pytest.fixture(scope="module")
def page():
    return load("docs_print_breakpoint")


def _is(x, value, dtype=np.float32, weak=True):
    assert (x.dtype, x.weak_type, x.shape) == (np.dtype(dtype), weak, np.shape(value))
    np.testing.assert_allclose(np.asarray(x), value, rtol=1e-6, atol=1e-7)


def _numbers(lines, label):
    return [float(m.group(1)) for ln in lines if (m := re.fullmatch(rf"{label}: (\S+)", ln))]


def _printed(capsys) -> list[str]:
    kiln.effects_barrier()
    return capsys.readouterr().out.splitlines()


# -------------------------------------------- Debugging with `jax.debug.print` ------------------------------------

def test_print_in_a_jitted_function(page, capsys):
    res = page.emoji_print_block()
    _is(res, np.sin(np.float32(2.0)))
    lines = _printed(capsys)
    assert len(lines) == 2 and lines[0] == "🤯 2.0 🤯"
    y = float(re.fullmatch(r"🤯 (\S+) 🤯", lines[1]).group(1))
    np.testing.assert_allclose(y, np.sin(2.0), rtol=1e-6)
    assert y == float(res)  # the float32 value the function returns, printed in full


def test_vmap_and_lax_map_print_in_different_orders(page, capsys):
    mapped, f, xs = page.vmap_and_lax_map_block()
    lines = _printed(capsys)
    x = np.arange(3.0)
    _is(mapped, np.sin(x.astype(np.float32)), weak=False)
    vmap_lines, map_lines = lines[:6], lines[6:]
    assert len(map_lines) == 6
    # the same lines, in different orders: vmap prints each batched print once (all the x's, then all the y's),
    # lax.map prints element by element (each element's x and y before the next element's)
    assert sorted(vmap_lines) == sorted(map_lines) and vmap_lines != map_lines
    assert vmap_lines[:3] == [f"x: {v}" for v in x] and _numbers(vmap_lines[3:], "x") == []
    np.testing.assert_allclose(_numbers(vmap_lines[3:], "y"), np.sin(x), rtol=1e-6)
    for i, v in enumerate(x):
        pair = map_lines[2 * i:2 * i + 2]
        assert f"x: {v}" in pair
        np.testing.assert_allclose(_numbers(pair, "y"), [np.sin(v)], rtol=1e-6, atol=1e-7)
    # "jax.vmap(f)(xs) and jax.lax.map(f, xs) compute the same thing"
    np.testing.assert_array_equal(kiln.vmap(f)(xs), mapped)
    capsys.readouterr()


def test_pmap_block_needs_two_devices(page, capsys):
    if kiln.device_count() >= 2:
        pytest.skip("tests/multidevice/test_docs_print_breakpoint.py runs this block")
    with pytest.raises(ValueError) as info:
        page.pmap_block()
    msg = str(info.value)
    assert "the mapped axis has size 2, but there are only 1" in msg and "KILN_NUM_CPU_DEVICES" in msg
    assert _printed(capsys) == []


def test_grad_prints_the_forward_pass(page, capsys):
    g, f = page.grad_block()
    _is(g, fd_jacobian(lambda x: 2.0 * x, np.float64(1.0)))
    assert _printed(capsys) == ["x: 1.0"]
    # "the behavior is the same even if the caller applies a jax.jit"
    _is(kiln.jit(kiln.grad(f))(1.0), 2.0)
    assert _printed(capsys) == ["x: 1.0"]


def test_custom_vjp_prints_the_cotangent(page, capsys):
    g, f = page.print_grad_block()
    _is(g, fd_jacobian(lambda x: 2.0 * x, np.float64(1.0)))
    assert _printed(capsys) == ["x_grad: 2.0"]
    # through another loss, (2x)**2 at 3: the cotangent at print_grad's output is d(4x^2)/dx = 24
    g = kiln.jit(kiln.grad(lambda x: f(x) ** 2))(3.0)
    fd = fd_jacobian(lambda x: (2.0 * x) ** 2, np.float64(3.0))
    np.testing.assert_allclose(float(g), fd, rtol=1e-6)
    np.testing.assert_allclose(_numbers(_printed(capsys), "x_grad"), [fd], rtol=1e-6)
    f(3.0)  # nothing on the forward pass
    assert _printed(capsys) == []


def test_debug_callback_is_the_callback_sketch(capsys):
    """The page's sketch of ``jax.debug.callback``: calls ``fun(*args, **kwargs)`` and returns None (under jit, at
    run time, with the values)."""
    calls = []

    @kiln.jit
    def f(x):
        out = kiln.debug.callback(lambda a, b=None: calls.append((float(a), float(b))), x, b=x * 2)
        assert out is None
        return x
    f(1.5)
    f(-1.0)
    kiln.effects_barrier()
    assert calls == [(1.5, 3.0), (-1.0, -2.0)]


# -------------------------------------------- Sharp bits -----------------------------------------------------------

def test_unordered_prints_in_either_order(page, capsys):
    _is(page.ordering_block(), 5.0)
    assert sorted(_printed(capsys)) == ["x: 2.0", "y: 3.0"]


def test_ordered_prints_keep_program_order(capsys):
    """"you can use jax.debug.print(..., ordered=True), which will ensure the relative order of prints is
    preserved"."""
    @kiln.jit
    def f(x, y):
        kiln.debug.print("x: {}", x, ordered=True)
        kiln.debug.print("y: {}", y, ordered=True)
        return x + y
    for _ in range(3):
        f(2.0, 3.0)
    assert _printed(capsys) == ["x: 2.0", "y: 3.0"] * 3


def test_asynchronous_prints_and_effects_barrier(page, capsys):
    _is(page.asynchronous_block(), 2.0)
    assert _printed(capsys) == ["x: 2.0"]
    f = page.effects_barrier_block()
    # the block ends with jax.effects_barrier(): the print is done when it returns
    assert capsys.readouterr().out == "x: 2.0\n"
    for v in (0.5, -3.0):
        _is(f(v), v)
    kiln.effects_barrier()
    assert capsys.readouterr().out == "x: 0.5\nx: -3.0\n"


def test_print_between_a_linear_layer_and_relu(page, capsys):
    w = np.array([[1.0, -2.0, 0.5], [0.25, 1.0, -1.0]], np.float32)
    b = np.array([0.5, -3.0], np.float32)
    x = np.array([1.0, 2.0, -2.0], np.float32)
    logits = w.astype(np.float64) @ x + b
    for fn in (page.f, kiln.jit(page.f)):
        out = fn(jnp.asarray(w), jnp.asarray(b), jnp.asarray(x))
        _is(out, np.maximum(logits, 0.0), weak=False)
        assert _printed(capsys) == [f"logits: {logits.astype(np.float32)}"]


# -------------------------------------------- Interactive inspection with `jax.debug.breakpoint()` ----------------

@pytest.fixture
def stdin(monkeypatch):
    """Gives the debugger its commands: ``stdin("p y\\nc\\n")``."""
    return lambda commands: monkeypatch.setattr(sys, "stdin", io.StringIO(commands))


def _answers(out: str) -> list[str]:
    """What the debugger answered to each command (the text after each "(jdb) " prompt)."""
    return out.split("(jdb) ")[1:]


_SHOWN = r"(?:(?:array|Array)\(([^,()]+), dtype=float32\)|np\.float32\(([^,()]+)\))"


def _values(answer: str) -> list[float]:
    """The numbers in the shown float32 values of an answer (kiln: NumPy's ``array(v, dtype=float32)``, and a
    NumPy scalar where the expression made one; JAX: ``Array(v, dtype=float32)``)."""
    return [float(a or b) for a, b in re.findall(_SHOWN, answer)]


def _value(answer: str) -> float:
    assert re.fullmatch(_SHOWN + "\n", answer), answer
    return _values(answer)[0]


def test_breakpoint_stops_with_the_run_time_values(page, stdin, capsys):
    stdin("p y\np z\npp (y, z)\np x * 2\nn\nc\n")
    res = page.breakpoint_block()
    out = capsys.readouterr().out
    _is(res, np.sin(np.float32(2.0)) * np.cos(np.float32(2.0)), weak=True)
    assert out.startswith("Entering jdb:\n")
    answers = _answers(out)
    assert len(answers) == 6 and answers[-1] == ""  # six commands; `c` answers nothing: the program goes on
    np.testing.assert_allclose([_value(answers[0]), _value(answers[1])], [np.sin(2.0), np.cos(2.0)], rtol=1e-6)
    np.testing.assert_allclose(_values(answers[2]), [np.sin(2.0), np.cos(2.0)], rtol=1e-6)  # pp of the tuple
    assert _value(answers[3]) == 4.0  # x is the run-time 2.0
    # "you will not be able to step through the execution": `n` is not a command (an expression: an error)
    assert answers[4] == "*** NameError: name 'n' is not defined\n"


def test_debugger_commands(page, stdin, capsys):
    stdin("help\nw\nl\nu\nbt\nd\nd\nc\n")
    page.breakpoint_block()
    answers = _answers(capsys.readouterr().out)
    # help lists the page's commands
    listed = set(answers[0].split())
    assert {"help", "p", "pp", "u", "up", "d", "down", "w", "where", "bt", "l", "list", "c", "cont", "continue",
            "q", "quit", "exit"} <= listed
    # w: the frames, outermost first, ending at the breakpoint's line in the block's f
    trace = answers[1].splitlines()
    assert trace[0] == "Traceback:" and trace[-1].strip() == "jax.debug.breakpoint()"
    assert re.fullmatch(r'  File ".*docs_print_breakpoint\.py", line \d+', trace[-2])
    assert any("return f(2.) # ==> Pauses during execution!" in ln for ln in trace)
    # l: the source around the current line, the current one marked
    assert "->      jax.debug.breakpoint()" in answers[2] and "y, z = jnp.sin(x), jnp.cos(x)" in answers[2]
    # u: the caller (the block), bt as w, d back down, d again at the bottom
    assert "->    return f(2.) # ==> Pauses during execution!" in answers[3]
    assert answers[4] == answers[1]
    assert "->      jax.debug.breakpoint()" in answers[5] and answers[6].startswith("At bottommost frame.")
    assert not any("kiln/" in a for a in answers)  # kiln's own frames are left out


def test_quit_exits_the_program(page, stdin, capsys):
    """"q(uit)/exit - exits the program"; so does the end of the input."""
    for commands in ("q\n", "exit\n", ""):
        stdin(commands)
        with pytest.raises(SystemExit):
            page.breakpoint_block()
    capsys.readouterr()


def test_breakpoint_if_nonfinite(page, stdin, capsys):
    stdin("p x\nu\np is_finite\nu\np x, y, z\nc\n")
    with np.errstate(divide="ignore"):
        want = np.float32(2.0) / np.float32(0.0)
    res = page.nonfinite_block()
    assert np.isinf(want) and float(res) == float(want) and res.dtype == np.float32
    answers = _answers(capsys.readouterr().out)
    assert _value(answers[0]) == float("inf")  # false_fn's x: the non-finite z
    assert re.search(r"->\s+lax.cond\(is_finite, true_fn, false_fn, x\)", answers[1])
    assert re.fullmatch(r"(?:array|Array)\(False(?:, dtype=bool)?\)\n", answers[2])
    assert re.search(r"->\s+breakpoint_if_nonfinite\(z\)", answers[3])
    assert _values(answers[4]) == [2.0, 0.0, float("inf")]  # f's x, y and z


def test_no_stop_when_finite_and_one_stop_per_batch_element(page, stdin, capsys):
    @kiln.jit
    def f(x, y):  # the block's f
        z = x / y
        page.breakpoint_if_nonfinite(z)
        return z
    stdin("")  # a stop would read the end of the input and exit
    _is(f(2.0, 4.0), 0.5)
    assert capsys.readouterr().out == ""
    # "vmap-ing jax.debug.breakpoint() unrolls it across the mapped axis": one stop per element, with its value
    stdin("p x\nc\n" * 3)
    xs = np.array([1.0, -2.0, 0.5], np.float32)

    def g(x):
        kiln.debug.breakpoint()
        return x * 2
    np.testing.assert_array_equal(kiln.vmap(g)(jnp.asarray(xs)), xs * 2)
    answers = _answers(capsys.readouterr().out)
    assert [_value(a) for a in answers[::2]] == list(xs)
