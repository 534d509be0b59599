"""JAX's docs pages external-callbacks.md, debugging.md and aot.md, ported to kiln by changing imports
(tests/examples/jax_ported/docs_callbacks_aot.py), checked against oracles that do not involve JAX.

Every cell runs once. Oracles: NumPy for the host functions the callbacks call (np.sin, and the draws of
``np.random.default_rng(0)`` that the io_callback cells consume in the page's order); SciPy's ``jv`` in float64
for the Bessel cells, with the derivative recurrence in closed form and float64 central differences of
``scipy.special.jv`` for the custom_jvp gradient and Hessian; the arithmetic of the aot.md examples
(2 * x + y, zs @ ones(2)); the text the pages print where it is deterministic: aot.md's jaxpr and StableHLO
(less the ``jax.result_info`` attributes, which kiln leaves out: README "Differences from JAX"), the
``jax.debug.print``/``debug.callback``/``io_callback`` lines, checkify's message. The error cells check the
exception class JAX raises (the pages' ``raises-exception`` cells and doctest tracebacks) and that kiln's message
names what failed and how to fix it. test_docs_callbacks_aot_against_jax.py compares the same cells with JAX.
"""
from __future__ import annotations

import contextlib
import io
import logging
import re

import numpy as np
import pytest
import scipy.special
from ported import load

import kiln


@pytest.fixture(scope="module")
def nb():
    return load("docs_callbacks_aot")


def _run(fn, *args):
    """(what fn returns, what it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue()


def _raises(exc, fn, *args):
    """The exception fn raises (of class exc), with nothing printed."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(exc) as info:
        fn(*args)
    return info.value


def _is(x, value, dtype, weak=False):
    assert (x.dtype, x.weak_type) == (np.dtype(dtype), weak)
    np.testing.assert_array_equal(np.asarray(x), value)


# ============================================ external-callbacks.md ============================================

def test_print_shows_the_tracer_and_debug_print_the_value(nb):
    res, out = _run(nb.why_print_cell)
    _is(res, 6, np.int32, weak=True)  # (2 + 1) * 2
    assert re.fullmatch(r"intermediate value: \w*Tracer\W*~?int32\[\]\W*\n", out), out
    res, out = _run(nb.why_debug_print_cell)
    _is(res, 6, np.int32, weak=True)
    assert out == "intermediate value: 3\n"


def test_pure_callback_eager_jit_scan_vmap(nb):
    """np.sin of float32 on the host: the same bits however the callback is reached."""
    expected = np.sin(np.arange(5, dtype=np.float32))
    for cell in (nb.pure_callback_cell, nb.pure_callback_jit_cell, nb.pure_callback_scan_cell,
                 nb.pure_callback_vmap_cell):
        res, out = _run(cell)
        _is(res, expected, np.float32)
        assert out == ""


def test_pure_callback_is_not_differentiable(nb):
    # JAX: ValueError: Pure callbacks do not support JVP. Please use `jax.custom_jvp` ...
    err = _raises(ValueError, nb.pure_callback_grad_cell)
    assert "pure_callback(f_host)" in str(err) and "custom_jvp" in str(err)


def test_unused_pure_callback_is_dropped(nb):
    res, out = _run(nb.f1_cell)
    _is(res, 0, np.int32)
    assert out == "printing something\n"
    res, out = _run(nb.f2_cell)
    _is(res, 1.0, np.float32, weak=True)
    assert out == ""  # the compiler eliminated the callback


def test_raising_callback_in_cond(nb):
    res, out = _run(nb.raise_loop_cell)  # does not raise: the branch is never taken
    assert [int(r) for r in res] == [0, 1, 2, 3] and out == ""
    # The page's comment says "ValueError: value of x is 0"; the callback has no vmap_method, and JAX 0.10 raises
    # NotImplementedError for that before anything runs (kiln's VmapMethodError is one, and a ValueError).
    err = _raises(NotImplementedError, nb.raise_vmap_cell)
    assert "vmap_method" in str(err) and "_raise" in str(err) and "'sequential'" in str(err)


@pytest.fixture(scope="module")
def io_cells(nb):
    """The io_callback cells in the page's order (they share the global generator), each (result, stdout)."""
    out = {"first": _run(nb.io_callback_cell), "vmap": _run(nb.io_callback_vmap_cell)}
    out["ordered_vmap"] = _raises(ValueError, nb.io_callback_ordered_vmap_cell)
    out["scan"] = _run(nb.io_callback_scan_cell)
    out["grad"] = _raises(ValueError, nb.io_callback_grad_cell)
    out["unused_grad"] = _run(nb.io_callback_unused_grad_cell)
    return out


def test_io_callback_draws_in_the_pages_order(io_cells):
    rng = np.random.default_rng(0)
    first = rng.uniform(size=5).astype(np.float32)
    vmapped = np.array([rng.uniform(size=()) for _ in range(5)]).astype(np.float32)  # one call per element
    scanned = np.array([rng.uniform(size=()) for _ in range(5)]).astype(np.float32)  # the ordered vmap drew none
    res, out = io_cells["first"]
    _is(res, first, np.float32)
    assert out == "generating float32[5]\n"
    res, out = io_cells["vmap"]
    _is(res, vmapped, np.float32)
    assert out == "generating float32[]\n" * 5
    res, out = io_cells["scan"]
    _is(res, scanned, np.float32)
    assert out == "generating float32[]\n" * 5


def test_io_callback_errors_and_unused_effect(io_cells):
    # JAX: ValueError: Cannot `vmap` ordered IO callback.
    msg = str(io_cells["ordered_vmap"])
    assert "io_callback(host_side_random_like)" in msg and "ordered=False" in msg
    # JAX: ValueError: IO callbacks do not support JVP.
    msg = str(io_cells["grad"])
    assert "io_callback(host_side_random_like)" in msg and "custom_jvp" in msg
    res, out = io_cells["unused_grad"]
    _is(res, 1.0, np.float32, weak=True)  # d x / dx
    assert out == "hello\n"  # an effect: kept though its result is unused


def test_debug_callback_jit_vmap_grad(nb):
    res, out = _run(nb.debug_callback_cell)
    _is(res, 1.0, np.float32, weak=True)
    assert out == "log: 1.0\n"
    res, out = _run(nb.debug_callback_vmap_cell)
    _is(res, np.arange(5.0), np.float32)
    assert out == "".join(f"log: {float(i)}\n" for i in range(5))
    res, out = _run(nb.debug_callback_grad_cell)
    _is(res, 1.0, np.float32, weak=True)
    assert out == "log: 1.0\n"  # the forward pass only


def test_bessel_pure_callback(nb):
    z = np.arange(5.0)
    (eager, jitted, vmapped), out = _run(nb.jv_cells)
    expected = scipy.special.jv(1, z)
    for r in (eager, jitted, vmapped):
        assert (r.dtype, r.weak_type) == (np.float32, False)
        np.testing.assert_allclose(np.asarray(r), expected, rtol=1e-6, atol=1e-7)
    assert out == f"{np.asarray(eager)}\n" * 3
    err = _raises(ValueError, nb.jv_grad_cell)
    assert "pure_callback" in str(err) and "custom_jvp" in str(err)


def _fd(fn, z, h=1e-4):
    return (fn(z + h) - fn(z - h)) / (2 * h)


def test_bessel_custom_jvp_gradient_and_hessian(nb):
    J = scipy.special.jv
    res, out = _run(nb.jv_custom_grad_cell)
    grad = (J(0, 2.0) - J(2, 2.0)) / 2  # dJ1/dz = (J0 - J2) / 2
    assert (res.dtype, res.weak_type) == (np.float32, True)
    np.testing.assert_allclose(float(res), grad, rtol=1e-6)
    np.testing.assert_allclose(grad, _fd(lambda z: J(1, z), 2.0), rtol=1e-7)
    assert out == str(np.float32(res)) + "\n"  # a float32 scalar as NumPy prints it
    hess = nb.jv_hessian_cell()
    # the rule applied twice: d/dz (J0 - J2)/2 = (-J1 - (J1 - J3)/2) / 2
    closed = -0.75 * J(1, 2.0) + 0.25 * J(3, 2.0)
    np.testing.assert_allclose(closed, _fd(lambda z: _fd(lambda w: J(1, w), z), 2.0, 1e-3), rtol=1e-5)
    assert (hess.dtype, hess.weak_type) == (np.float32, True)
    np.testing.assert_allclose(float(hess), closed, rtol=1e-6)


# ================================================ debugging.md ================================================

def _printed(out, name):
    """The floats the lines ``jax.debug.print(NAME) -> v`` printed, in order."""
    return [float(v) for v in re.findall(rf"^jax\.debug\.print\({name}\) -> (\S+)$", out, re.M)]


def test_print_vs_debug_print_under_jit(nb):
    res, out = _run(nb.print_under_jit_cell)
    np.testing.assert_allclose(float(res), np.sin(2.0), rtol=1e-6)
    lines = out.splitlines()
    assert [ln.split(" -> ")[0] for ln in lines] == ["print(x)", "print(y)"]
    assert all("Tracer" in ln and "float32[]" in ln for ln in lines)
    res, out = _run(nb.debug_print_under_jit_cell)
    assert (res.dtype, res.weak_type) == (np.float32, True)
    assert out == f"jax.debug.print(x) -> 2.0\njax.debug.print(y) -> {float(res)}\n"
    np.testing.assert_allclose(_printed(out, "y"), [np.sin(2.0)], rtol=1e-6)


def test_debug_print_under_vmap_and_lax_map(nb):
    xs = np.arange(3.0)
    res, out = _run(nb.debug_print_vmap_cell)
    np.testing.assert_allclose(np.asarray(res), np.sin(xs), rtol=1e-6)
    # vmap: each print once per element, x's first (y depends on x)
    assert [ln.split(" -> ")[0] for ln in out.splitlines()] == ["jax.debug.print(x)"] * 3 + ["jax.debug.print(y)"] * 3
    assert _printed(out, "x") == list(xs)
    np.testing.assert_allclose(_printed(out, "y"), np.sin(xs), rtol=1e-6)
    res, out = _run(nb.debug_print_lax_map_cell)
    np.testing.assert_allclose(np.asarray(res), np.sin(xs), rtol=1e-6)
    # lax.map: one element after the other (within one, the two unordered prints in either order)
    lines = out.splitlines()
    assert len(lines) == 6
    for i in range(3):
        pair = sorted(lines[2 * i:2 * i + 2])
        assert pair[0] == f"jax.debug.print(x) -> {xs[i]}"
        np.testing.assert_allclose(_printed(pair[1], "y"), [np.sin(xs[i])], rtol=1e-6)


def test_debug_print_under_grad_and_ordered(nb):
    res, out = _run(nb.debug_print_grad_cell)
    _is(res, 2.0, np.float32, weak=True)  # d x**2 / dx at 1
    assert out == "jax.debug.print(x) -> 1.0\n"  # the forward pass only
    res, out = _run(nb.debug_print_ordered_cell)
    _is(res, 3, np.int32, weak=True)
    assert out == "jax.debug.print(x) -> 1\njax.debug.print(y) -> 2\n"


def test_breakpoint_not_reached(nb):
    res, out = _run(nb.breakpoint_not_reached_cell)
    _is(res, 2.0, np.float32, weak=True)
    assert out == ""


def test_debug_callback_logging(nb, caplog):
    with caplog.at_level(logging.WARNING):
        _is(nb.logging_callback_cell(), 1.0, np.float32, weak=True)
        _is(nb.logging_callback_vmap_cell(), np.arange(5.0), np.float32)
        _is(nb.logging_callback_grad_cell(), 1.0, np.float32, weak=True)
        kiln.effects_barrier()
    assert [r.getMessage() for r in caplog.records] == [
        f"Logged value: {v}" for v in (1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 1.0)]


def test_checkify(nb):
    (err, z), out = _run(nb.checkify_jit_cell)
    # the page: "index needs to be non-negative! (check failed at <...>:6 (f))" (an older JAX's wording)
    assert out == "index needs to be non-negative! (`check` failed)\n"
    np.testing.assert_allclose(float(z), np.sin(1.0), rtol=1e-6)  # x[-1] = 1 still computed
    oob, negative, nan = nb.checkify_errors_cells()
    # the page: "ValueError: ..." for each; checkify's JaxRuntimeError is a ValueError (as JAX's)
    assert all(isinstance(e, ValueError) for e in (oob, negative, nan))
    assert "out-of-bounds indexing" in str(oob) and "index 100" in str(oob) and "size 5" in str(oob)
    assert "index needs to be non-negative!" in str(negative)
    assert "nan generated by primitive: sin" in str(nan)


def test_debug_nans(nb):
    # kiln re-runs the traced program op by op and raises FloatingPointError at the division, as the page says
    # (README "Differences from JAX": JAX calls f again on the Python floats, so there 0./0. raises
    # ZeroDivisionError).
    err = _raises(FloatingPointError, nb.debug_nans_cell)
    assert "nan" in str(err) and "div" in str(err) and "docs_callbacks_aot.py" in str(err)
    assert not kiln.config.jax_debug_nans  # the cell set it back


# =================================================== aot.md ===================================================

PAGE_JAXPR = """{ lambda ; a:i32[] b:i32[]. let
    c:i32[] = mul 2:i32[] a
    d:i32[] = add c b
  in (d,) }"""

PAGE_HLO = """module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i32>, %arg1: tensor<i32>) -> (tensor<i32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<2> : tensor<i32>
    %0 = stablehlo.multiply %c, %arg0 : tensor<i32>
    %1 = stablehlo.add %0, %arg1 : tensor<i32>
    return %1 : tensor<i32>
  }
}"""

PAGE_HLO_STATIC = """module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i32>) -> (tensor<i32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<14> : tensor<i32>
    %0 = stablehlo.add %c, %arg0 : tensor<i32>
    return %0 : tensor<i32>
  }
}"""


def _without_result_info(text):
    """The page's StableHLO as kiln writes it: no ``jax.result_info`` (README "Differences from JAX")."""
    return text.replace(' -> (tensor<i32> {jax.result_info = "result"}) {', " -> tensor<i32> {")


def test_aot_stages(nb):
    (flops, res), out = _run(nb.aot_stages_cell)
    assert out == f"{PAGE_JAXPR}\n{_without_result_info(PAGE_HLO)}\n\n"
    assert flops == 2.0
    _is(res, 10, np.int32, weak=True)  # 2 * 3 + 4
    _is(nb.aot_shape_dtype_cell(), 10, np.int32)  # traced from ShapeDtypeStructs: not weak


@pytest.mark.parametrize("cell, called", [("aot_wrong_shape_cell", "i32[3]"), ("aot_wrong_dtype_cell", "f32[]")])
def test_aot_called_with_other_types(nb, cell, called):
    # the page: TypeError: Argument types differ from the types for which this computation was compiled ...
    msg = str(_raises(TypeError, getattr(nb, cell)))
    assert "f was compiled for arguments (i32[], i32[])" in msg and f"called with ({called}, {called})" in msg
    assert "lower and compile again" in msg


def test_aot_static_arguments(nb):
    res, out = _run(nb.aot_static_cell)
    assert out == f"{_without_result_info(PAGE_HLO_STATIC)}\n\n"
    _is(res, 19, np.int32, weak=True)  # 2 * 7 + 5
    err = _raises(TypeError, nb.aot_static_hollow_cell)
    assert str(err) == "unsupported operand type(s) for *: 'int' and 'ShapeDtypeStruct'"  # the page's text
    _is(nb.aot_static_concrete_cell(), 25, np.int32)  # 2 * 10 + 5


def test_aot_compiled_functions_cannot_be_transformed(nb):
    vmapped, g_aot, z, zs = nb.aot_transform_cells()
    expected = np.asarray(zs, np.float64) @ np.ones(2)
    _is(vmapped, expected, np.float32)
    np.testing.assert_array_equal(expected, [[1, 5, 9], [13, 17, 21], [25, 29, 33], [37, 41, 45]])  # the page
    # the page: TypeError: Cannot apply JAX transformations to a function lowered and compiled for a particular
    # signature. (vmap; "a similar error" under grad, and jit)
    for cell, arg in [(nb.aot_vmap_compiled_cell, zs), (nb.aot_grad_compiled_cell, z), (nb.aot_jit_compiled_cell, z)]:
        msg = str(_raises(TypeError, cell, g_aot, arg))
        assert "g was lowered and compiled for one signature and cannot be transformed" in msg
        assert "transform the function and then lower and compile it" in msg
