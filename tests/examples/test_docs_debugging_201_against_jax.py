"""JAX's docs page docs/new_docs/201/debugging.md under kiln and under JAX gives the same results and prints the same
lines (the against_jax session).

The kiln side is tests/examples/jax_ported/docs_debugging_201.py; the JAX side is the same source with JAX's imports
put back. The NumPy oracles and the page's claims are in test_docs_debugging_201.py; this checks that the two
libraries agree block by block: the values (dtypes, weak types, shapes), what ``print``/``jax.debug.print`` print
(the tracers' text included) and in which order, the messages the logging callback logs, the exception classes and
the frames of the ``jax_debug_nans`` traceback, and what pdb shows at the ``breakpoint()`` under ``jax_disable_jit``.
Differences, tested as such: the class name on the traceback's last line (kiln's ``InvalidValueError`` is a
``FloatingPointError``; README "NaNs and Infs"), kiln's message adds the line that made the NaN, and JAX prints
"Invalid nan value encountered in the output of a jax.jit function. Calling the de-optimized version." where kiln
prints nothing of its own.
"""
from __future__ import annotations

import io
import logging
import pdb
import re
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet  # noqa: E402

import kiln  # noqa: E402

JAX_NOTE = "Invalid nan value encountered in the output of a jax.jit function. Calling the de-optimized version.\n"


@pytest.fixture(scope="module")
def both():
    return load("docs_debugging_201"), load("docs_debugging_201", "jax")


@pytest.fixture
def flags_back():
    yield
    for lib in (kiln, jax):
        lib.config.update("jax_debug_nans", False)
        lib.config.update("jax_disable_jit", False)


def _same_block(k_fn, j_fn, *args):
    """(kiln's result, JAX's) of a block run under each (``args``: kiln's arguments, then as many of JAX's), having
    printed the same text (after each library's effects_barrier)."""
    (kres, kout), (jres, jout) = quiet(k_fn, *args[:len(args) // 2]), quiet(j_fn, *args[len(args) // 2:])
    kiln.effects_barrier()
    jax.effects_barrier()
    assert kout == jout
    return kres, jres


@pytest.mark.parametrize("block", ["print_block", "debug_print_block", "grad_block", "ordered_block"])
def test_debug_print_blocks(both, block):
    k, j = both
    assert_same(*_same_block(getattr(k, block), getattr(j, block)), rtol=0)


def test_vmap_and_lax_map_blocks(both):
    k, j = both
    (kres, kf, kxs), (jres, jf, jxs) = _same_block(k.vmap_block, j.vmap_block)
    assert_same((kres, kxs), (jres, jxs), rtol=0)
    assert_same(*_same_block(k.lax_map_block, j.lax_map_block, kf, kxs, jf, jxs), rtol=0)


def test_custom_vjp_print_and_effects_barrier(both):
    k, j = both
    (kg, kf), (jg, jf) = _same_block(k.print_grad_block, j.print_grad_block)
    assert_same(kg, jg, rtol=0)
    assert_same(*_same_block(kiln.grad(lambda x: kf(x) ** 2), jax.grad(lambda x: jf(x) ** 2), 3.0, 3.0), rtol=0)
    kf, jf = _same_block(k.effects_barrier_block, j.effects_barrier_block)
    assert_same(*_same_block(kf, jf, -1.5, -1.5), rtol=0)


def test_logging_callback_blocks(both, caplog):
    k, j = both
    logs = {}
    for name, mod, lib in (("kiln", k, kiln), ("jax", j, jax)):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            res, f = mod.callback_block()
            res = [res, mod.callback_vmap_block(f), mod.callback_grad_block(f)]
            lib.effects_barrier()
        logs[name] = res, [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert_same(logs["kiln"][0], logs["jax"][0], rtol=0)
    assert logs["kiln"][1] == logs["jax"][1]


def _frames(text):
    return re.findall(r'^  File "(?:.*/)?(?:jax_)?(docs_debugging_201)\.py", line (\d+), in (\w+)$', text, re.M)


def test_debug_nans_blocks(both, flags_back):
    k, j = both
    # JAX 0.10.2 returned the NaN without raising after another page (docs_custom_jvp_vjp's run) had run in the same
    # process (its cached eager programs): JAX's side starts from empty caches, as the page runs in a fresh process.
    jax.clear_caches()
    (kf, kout), (jf, jout) = quiet(k.debug_nans_block), quiet(j.debug_nans_block)
    assert _frames(kout) == _frames(jout) and len(_frames(kout)) == 2
    klast, jlast = kout.rstrip("\n").splitlines()[-1], jout.split("\n--------------------")[0].splitlines()[-1]
    assert jlast == "FloatingPointError: invalid value (nan) encountered in log"
    # kiln: its class (a FloatingPointError) and the line that made the NaN
    assert klast.startswith("kiln.frontend.driver.nan_check.InvalidValueError: invalid value (nan) encountered in log")
    assert jout.startswith(JAX_NOTE) and not kout.startswith(JAX_NOTE)
    (kerr, _), (jerr, _) = outcome(k.debug_nans_jit_block, kf), outcome(j.debug_nans_jit_block, jf)
    assert_same_exception(kerr, jerr)
    assert str(kerr).startswith(str(jerr))
    (_, kout), (_, jout) = quiet(k.debug_nans_off_block, kf), quiet(j.debug_nans_off_block, jf)
    assert kout == jout == "nan\n"
    k.debug_nans_reset_block()
    j.debug_nans_reset_block()
    assert not kiln.config.jax_debug_nans and not jax.config.jax_debug_nans


def test_breakpoint_under_disable_jit(both, monkeypatch, flags_back):
    k, j = both
    shown = {}
    for name, mod in (("kiln", k), ("jax", j)):
        out = io.StringIO()
        monkeypatch.setattr(sys, "breakpointhook", lambda *a, out=out, **kw: pdb.Pdb(
            stdin=io.StringIO("p y\np x\nc\n"), stdout=out, nosigint=True).set_trace(sys._getframe(1)))
        with np.errstate(invalid="ignore"):
            res = mod.disable_jit_block()
        # the stop line ("> .../docs_debugging_201.py(N)f()"), and what p printed
        text = out.getvalue()
        stop = re.search(r"docs_debugging_201\.py\((\d+)\)f\(\)", text).group(1)
        shown[name] = res, stop, [ln for ln in text.splitlines() if ln.startswith("(Pdb) ")]
    assert_same(shown["kiln"][0], shown["jax"][0], rtol=0)
    assert shown["kiln"][1:] == shown["jax"][1:]
