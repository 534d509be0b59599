"""kiln.debug.visualize_array_sharding on one device (the layouts over 8 devices are in
tests/multidevice/test_sharding_api.py): the printed boxes, compared as text, and the errors."""
from __future__ import annotations

import io

import numpy as np
import pytest

import kiln
import kiln.numpy as knp


def _shown(capsys, x, **kw):
    kiln.debug.visualize_array_sharding(x, use_color=False, **kw)
    return capsys.readouterr().out


def test_single_device_2d_and_1d(capsys):
    kind = kiln.devices()[0].platform.upper()
    label = f"{kind} {kiln.devices()[0].id}"
    # A square array: a box of 10 * scale rows (9 text lines) and 25 * scale columns (23 inside).
    assert _shown(capsys, knp.zeros((4, 4))) == (
        "┌" + "─" * 23 + "┐\n" + ("│" + " " * 23 + "│\n") * 4 + "│" + label.center(23) + "│\n"
        + ("│" + " " * 23 + "│\n") * 4 + "└" + "─" * 23 + "┘\n")
    # 1-d: one line; the width has a floor of min_width.
    assert _shown(capsys, knp.zeros((4,))) == f"┌───────┐\n│ {label} │\n└───────┘\n"
    assert _shown(capsys, np.float32(1.0) + knp.zeros((3,)), min_width=12) == (
        f"┌──────────┐\n│  {label}   │\n└──────────┘\n")
    # A wide array is capped at max_width; scale=2 doubles the height.
    out = _shown(capsys, knp.zeros((2, 16)), scale=2).splitlines()
    assert len(out) == 21 and all(len(line) == 80 for line in out) and out[10].strip("│ ") == label


def test_visualize_sharding_takes_a_shape_and_a_sharding(capsys):
    s = kiln.sharding.SingleDeviceSharding(kiln.devices()[0])
    kiln.debug.visualize_sharding((4,), s, use_color=False)
    assert capsys.readouterr().out == _shown(capsys, knp.zeros(4))


def test_color_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True
    out = Terminal()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    kiln.debug.visualize_array_sharding(knp.zeros(4), color_map=lambda v: (1.0, 0.0, 0.0, 1.0))
    text = out.getvalue()
    assert "\x1b[48;2;255;0;0m\x1b[38;2;255;255;255m" in text and "┌" not in text and "\x1b[0m" in text
    monkeypatch.setenv("NO_COLOR", "1")  # plain boxes again
    out.seek(0), out.truncate()
    kiln.debug.visualize_array_sharding(knp.zeros(4))
    assert out.getvalue().startswith("┌") and "\x1b" not in out.getvalue()


@pytest.mark.parametrize("call, error, message", [
    (lambda: kiln.debug.visualize_array_sharding(knp.zeros((2, 2, 2))), ValueError,
     "`visualize_sharding` only works for shapes with 1 and 2 dimensions."),
    (lambda: kiln.debug.visualize_array_sharding(knp.zeros(())), ValueError, "only works for shapes with 1 and 2"),
    (lambda: kiln.debug.visualize_array_sharding(np.zeros(3)), TypeError,
     "expected a kiln array, got ndarray; put it on devices first"),
    (lambda: kiln.jit(kiln.debug.visualize_array_sharding)(knp.zeros(3)), TypeError,
     "the value is traced .* call it on the jitted function's result, or use kiln.debug.inspect_array_sharding"),
    (lambda: kiln.debug.visualize_sharding((3,), "cpu"), TypeError, "expected a kiln.sharding Sharding, got str"),
    (lambda: kiln.debug.visualize_sharding((0, 3), kiln.sharding.SingleDeviceSharding(kiln.devices()[0])),
     ValueError, r"the shape \(0, 3\) has no elements to draw"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
