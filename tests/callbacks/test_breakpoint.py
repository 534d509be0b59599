"""kiln.debug.breakpoint: the command-line debugger at run time, on the values of the frames that traced it
(commands fed through stdin=, output read from stdout=)."""
from __future__ import annotations

import io

import numpy as np
import pytest

import kiln
import kiln.numpy as knp


def _inner(y, commands, out):
    z = y * 2
    kiln.debug.breakpoint(stdin=io.StringIO(commands), stdout=out)
    return z


def _outer(x, commands, out):
    label = "a static local"  # noqa: F841  (inspected in the debugger)
    return _inner(x + 1, commands, out)


def test_breakpoint_under_jit_shows_run_time_values_and_frames():
    out = io.StringIO()
    f = kiln.jit(_outer, static_argnums=(1, 2))
    cmds = "p z\npp z.sum()\nw\nu\np x\np label\nl\nnope\nd\nc\n"
    np.testing.assert_array_equal(f(knp.arange(3.0), cmds, out), [2, 4, 6])
    text = out.getvalue()
    assert "(jdb) array([2., 4., 6.], dtype=float32)" in text
    assert "np.float32(12.0)" in text or "12.0" in text
    # JAX's jdb layout: a banner, the prompt, frames as "> file(line)", a traceback of "File ..., line N"
    assert text.startswith("Entering jdb:\n") and f"> {__file__}(" in text
    assert "Traceback:" in text and f'  File "{__file__}", line' in text and "return _inner(x + 1" in text
    assert "(jdb) array([0., 1., 2.], dtype=float32)" in text and "'a static local'" in text
    assert "->      return _inner(x + 1, commands, out)" in text
    assert "*** NameError: name 'nope' is not defined" in text
    assert "kiln/frontend" not in text  # kiln's own frames are left out


def test_breakpoint_eager_and_under_vmap():
    out = io.StringIO()
    _outer(knp.arange(2.0), "p z\nc\n", out)
    assert "Array([2., 4.], dtype=float32)" in out.getvalue()
    out = io.StringIO()
    kiln.vmap(lambda v: _inner(v, "p z\nc\n" * 2, out))(knp.arange(2.0))  # one stop per batch element
    assert out.getvalue().count("(jdb) array(") == 2


def test_breakpoint_token_and_errors():
    out = io.StringIO()
    f = kiln.jit(lambda x: kiln.debug.breakpoint(token=x, stdin=io.StringIO("p 1 + 1\nc\n"), stdout=out) * 2)
    np.testing.assert_array_equal(f(knp.ones(2)), [2, 2])
    assert "(jdb) 2" in out.getvalue()
    with pytest.raises(ValueError, match="unknown debugger backend 'web'"):
        kiln.debug.breakpoint(backend="web")
    with pytest.raises(ValueError, match="`ordered` and `token` are mutually exclusive"):
        kiln.debug.breakpoint(ordered=True, token=1.0)
    with pytest.raises(ValueError, match=r"unexpected keyword arguments \['colour'\]"):
        kiln.debug.breakpoint(colour=True)


def test_quit_exits_the_program():
    with pytest.raises(SystemExit):
        kiln.debug.breakpoint(stdin=io.StringIO("q\n"), stdout=io.StringIO())
