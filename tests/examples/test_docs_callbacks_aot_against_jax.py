"""JAX's docs pages external-callbacks.md, debugging.md and aot.md under kiln and under JAX give the same results
(the against_jax session).

The kiln side is tests/examples/jax_ported/docs_callbacks_aot.py; the JAX side is the same source with JAX's imports
put back. The NumPy/SciPy and finite-difference oracles are in test_docs_callbacks_aot.py; this checks that the
two libraries agree cell by cell: the numbers (bit for bit where a NumPy/SciPy host function computes them, else to
float32 rounding), dtypes and weak types, what every cell prints (tracers, debug prints in their order, the
io_callback draws from each side's own generator, checkify's messages, aot.md's jaxpr, and its StableHLO less JAX's
``jax.result_info`` attributes, which kiln leaves out: README "Differences from JAX"), and the exception classes
of the error cells. One documented difference: with ``jax_debug_nans`` JAX calls the Python function again on
the page's Python floats, so ``0. / 0.`` raises ZeroDivisionError, where kiln re-runs the traced program and
raises FloatingPointError (both ArithmeticErrors; on arrays both raise FloatingPointError).
"""
from __future__ import annotations

import logging

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, outcome  # noqa: E402

import kiln  # noqa: E402


@pytest.fixture(scope="module")
def k():
    return load("docs_callbacks_aot")


@pytest.fixture(scope="module")
def j():
    return load("docs_callbacks_aot", "jax")


def _same_cell(k, j, name, *args, rtol=1e-6):
    """Run cell NAME on both sides: the same results and the same printed text."""
    (kr, kout), (jr, jout) = outcome(getattr(k, name), *args), outcome(getattr(j, name), *args)
    assert not isinstance(kr, Exception) and not isinstance(jr, Exception), (kr, jr)
    assert_same(kr, jr, rtol=rtol)
    assert kout == jout
    return kr, jr


def _same_error(k, j, name, *args):
    """Cell NAME raises on both sides, and kiln's exception is an instance of JAX's class."""
    (kr, kout), (jr, jout) = outcome(getattr(k, name), *args), outcome(getattr(j, name), *args)
    assert isinstance(kr, Exception) and isinstance(jr, Exception), (kr, jr)
    assert isinstance(kr, type(jr)), (type(kr).__mro__, type(jr))
    assert kout == jout
    return kr, jr


# ============================================ external-callbacks.md ============================================

@pytest.mark.parametrize("name, rtol", [
    ("why_print_cell", 0), ("why_debug_print_cell", 0), ("pure_callback_cell", 0), ("pure_callback_jit_cell", 0),
    ("pure_callback_scan_cell", 0), ("pure_callback_vmap_cell", 0), ("f1_cell", 0), ("f2_cell", 0),
    ("raise_loop_cell", 0), ("debug_callback_cell", 0), ("debug_callback_vmap_cell", 0),
    ("debug_callback_grad_cell", 0), ("jv_cells", 0), ("jv_custom_grad_cell", 1e-6), ("jv_hessian_cell", 1e-6)])
def test_external_callbacks_cells(k, j, name, rtol):
    _same_cell(k, j, name, rtol=rtol)


@pytest.mark.parametrize("name", ["pure_callback_grad_cell", "raise_vmap_cell", "jv_grad_cell"])
def test_external_callbacks_errors(k, j, name):
    _same_error(k, j, name)


def test_io_callback_cells_in_order(k, j):
    """Each side's generator seeded again, the cells in the page's order: the same draws and prints."""
    _same_cell(k, j, "io_callback_cell", rtol=0)
    _same_cell(k, j, "io_callback_vmap_cell", rtol=0)
    _same_error(k, j, "io_callback_ordered_vmap_cell")
    _same_cell(k, j, "io_callback_scan_cell", rtol=0)
    _same_error(k, j, "io_callback_grad_cell")
    _same_cell(k, j, "io_callback_unused_grad_cell", rtol=0)


# ================================================ debugging.md ================================================

@pytest.mark.parametrize("name", [
    "print_under_jit_cell", "debug_print_under_jit_cell", "debug_print_vmap_cell", "debug_print_lax_map_cell",
    "debug_print_grad_cell", "debug_print_ordered_cell", "breakpoint_not_reached_cell"])
def test_debugging_cells(k, j, name):
    _same_cell(k, j, name)


def test_debug_callback_logging(k, j, caplog):
    logged = {}
    for side, mod, lib in [("kiln", k, kiln), ("jax", j, jax)]:
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            res = [mod.logging_callback_cell(), mod.logging_callback_vmap_cell(), mod.logging_callback_grad_cell()]
            lib.effects_barrier()
        logged[side] = res, [r.getMessage() for r in caplog.records if r.name == "root"]
    assert_same(logged["kiln"][0], logged["jax"][0], rtol=0)
    assert logged["kiln"][1] == logged["jax"][1] and len(logged["kiln"][1]) == 7


def test_checkify(k, j):
    (kerr, kz), kout = outcome(k.checkify_jit_cell)
    (jerr, jz), jout = outcome(j.checkify_jit_cell)
    assert kout == jout
    assert_same(kz, jz)
    kraised, jraised = k.checkify_errors_cells(), j.checkify_errors_cells()
    for a, b in zip(kraised, jraised, strict=True):
        assert isinstance(b, ValueError) and isinstance(a, ValueError)  # checkify's JaxRuntimeError, both sides
        assert type(a).__name__ == type(b).__name__ == "JaxRuntimeError"
        assert str(a) == str(b)


def test_debug_nans(k, j):
    (kr, _), (jr, _) = outcome(k.debug_nans_cell), outcome(j.debug_nans_cell)
    # the page's Python floats: JAX's de-optimized re-run divides them in Python (README "Differences from JAX")
    assert isinstance(kr, FloatingPointError) and isinstance(jr, ZeroDivisionError)
    # on arrays both raise FloatingPointError
    (kr, _), (jr, _) = outcome(k.debug_nans_cell, np.float32(0), np.float32(0)), \
        outcome(j.debug_nans_cell, np.float32(0), np.float32(0))
    assert isinstance(kr, FloatingPointError) and isinstance(jr, FloatingPointError)
    assert not kiln.config.jax_debug_nans and not jax.config.jax_debug_nans


# =================================================== aot.md ===================================================

def _without_result_info(text):
    return text.replace(' -> (tensor<i32> {jax.result_info = "result"}) {', " -> tensor<i32> {")


def test_aot_stages(k, j):
    ((kflops, kres), kout), ((jflops, jres), jout) = outcome(k.aot_stages_cell), outcome(j.aot_stages_cell)
    assert kout == _without_result_info(jout)
    assert kflops == jflops == 2.0
    assert_same(kres, jres, rtol=0)
    _same_cell(k, j, "aot_shape_dtype_cell", rtol=0)


def test_aot_static_arguments(k, j):
    (kres, kout), (jres, jout) = outcome(k.aot_static_cell), outcome(j.aot_static_cell)
    assert kout == _without_result_info(jout)
    assert_same(kres, jres, rtol=0)
    _same_cell(k, j, "aot_static_concrete_cell", rtol=0)
    kr, jr = _same_error(k, j, "aot_static_hollow_cell")
    assert str(kr) == str(jr)


@pytest.mark.parametrize("name", ["aot_wrong_shape_cell", "aot_wrong_dtype_cell"])
def test_aot_called_with_other_types(k, j, name):
    _same_error(k, j, name)  # TypeError


def test_aot_compiled_functions_cannot_be_transformed(k, j):
    kv, kg, kz, kzs = k.aot_transform_cells()
    jv, jg, jz, jzs = j.aot_transform_cells()
    assert_same((kv, kz, kzs), (jv, jz, jzs), rtol=0)
    for name, kargs, jargs in [("aot_vmap_compiled_cell", (kg, kzs), (jg, jzs)),
                               ("aot_grad_compiled_cell", (kg, kz), (jg, jz)),
                               ("aot_jit_compiled_cell", (kg, kz), (jg, jz))]:
        (kr, _), (jr, _) = outcome(getattr(k, name), *kargs), outcome(getattr(j, name), *jargs)
        assert isinstance(jr, TypeError) and isinstance(kr, TypeError), (kr, jr)
