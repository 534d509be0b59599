"""JAX's docs page docs/new_docs/201/aot.md ("Ahead-of-time lowering and compilation": trace, lower, compile and
call as separate steps; their text, cost and memory analyses; static arguments; compiled functions refuse other
argument types and transformations), ported to kiln by changing imports (tests/examples/jax_ported/docs_aot_201.py),
checked against oracles that do not involve JAX: the arithmetic of the examples (2 * x + y, zs @ ones(2) in NumPy
float64), the page's doctest outputs where they are kiln's promise (the jaxpr's text, the values' reprs, the FLOP
count and the memory sizes: 2 flops, 8 argument bytes, 4 output bytes, no temporaries), and the page's claims about
what the StableHLO contains (the lowered text itself legitimately differs from JAX's: kiln writes no
``jax.result_info`` attributes, README "Differences from JAX"). The error blocks check the exception class of the
page's tracebacks and that kiln's message says what went wrong and how to fix it.
"""
from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest
from ported import load

import kiln
import kiln.numpy as jnp
import kiln.stages

PAGE_JAXPR = """{ lambda ; a:i32[] b:i32[]. let
    c:i32[] = mul 2:i32[] a
    d:i32[] = add c b
  in (d,) }"""


@pytest.fixture(scope="module")
def page():
    return load("docs_aot_201")


@pytest.fixture(scope="module")
def stages(page):
    """What the page's first example returns (traced, lowered, compiled, flops, result), and what it printed."""
    return _run(page.stages_block)


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
    assert buf.getvalue() == ""
    return info.value


def _is(x, value, dtype, weak=False):
    assert isinstance(x, kiln.Array) and (x.dtype, x.weak_type) == (np.dtype(dtype), weak)
    np.testing.assert_array_equal(np.asarray(x), value)


def _main(text):
    """The lines of the module's @main, stripped."""
    return [line.strip() for line in text.splitlines() if line.startswith("    ")]


# ---------------------------------------------- The stages ---------------------------------------------------------

def test_trace_lower_compile_execute(stages):
    (traced, lowered, compiled, flops, res), out = stages
    *jaxpr_lines, hlo = out.split("\n", 4)
    assert "\n".join(jaxpr_lines) == PAGE_JAXPR  # the specialized, staged-out representation
    assert str(traced.jaxpr) == PAGE_JAXPR
    # the lowered StableHLO: module jit_f, main of two i32 scalars, 2 * x, + y (the page's program)
    assert hlo.startswith("module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}")
    assert re.search(r"func\.func public @main\(%arg0: tensor<i32>, %arg1: tensor<i32>\) -> ", hlo)
    assert _main(hlo) == ["%c = stablehlo.constant dense<2> : tensor<i32>",
                          "%0 = stablehlo.multiply %c, %arg0 : tensor<i32>",
                          "%1 = stablehlo.add %0, %arg1 : tensor<i32>",
                          "return %1 : tensor<i32>"]
    assert hlo == lowered.as_text() + "\n"
    # the FLOP estimate: one multiply, one add
    assert isinstance(compiled.cost_analysis(), dict) and flops == 2.0
    assert repr(res) == "Array(10, dtype=int32, weak_type=True)"
    _is(res, 2 * 3 + 4, np.int32, weak=True)
    _is(compiled(-5, 11), 2 * -5 + 11, np.int32, weak=True)  # the executable, on other values of the same types


def test_the_stages_are_jax_stages_objects(stages):
    """The page: the methods are "provided via methods on the jax.stages.Lowered and jax.stages.Compiled objects"."""
    (traced, lowered, compiled, _, _), _ = stages
    assert isinstance(traced, kiln.stages.Traced)
    assert isinstance(lowered, kiln.stages.Lowered) and isinstance(compiled, kiln.stages.Compiled)


def test_debug_info_and_compiled_text(page, stages):
    (_, lowered, compiled, _, _), _ = stages
    # "more debugging information, e.g., source location, by using the debug_info parameter"
    plain, located = lowered.as_text(), lowered.as_text(debug_info=True)
    assert "loc(" not in plain
    line = f"{page.f.__code__.co_firstlineno}"
    assert re.search(rf'loc\("[^"]*docs_aot_201\.py":{line}:\d+\)', located), located
    # "Compiled functions do the same": XLA's compiled HLO, as text
    text = compiled.as_text()
    assert isinstance(text, str) and text.startswith("HloModule jit_f")


def test_compile_takes_compiler_options(stages):
    (_, lowered, _, _, _), _ = stages
    _is(lowered.compile(compiler_options={"xla_cpu_enable_fast_math": False})(3, 4), 10, np.int32, weak=True)
    # a name XLA does not know: JAX's error is a RuntimeError (INVALID_ARGUMENT: No such compile option)
    with pytest.raises(RuntimeError, match="XLA has no option 'xla_no_such_flag'"):
        lowered.compile(compiler_options={"xla_no_such_flag": 1})


def test_memory_analysis(page, stages):
    (_, _, compiled, _, _), _ = stages
    # two int32 arguments, one int32 result, no temporaries: the page's (8, 4, 0)
    assert page.memory_analysis_block(compiled) == (8, 4, 0)


def test_eval_shape(page):
    out = page.eval_shape_block()
    assert repr(out) == "ShapeDtypeStruct(shape=(), dtype=int32)"
    assert (out.shape, out.dtype) == ((), np.int32)
    # "The same is available for un-jitted functions as jax.eval_shape"
    assert repr(kiln.eval_shape(page.f, page.i32_scalar, page.i32_scalar)) == repr(out)
    matrix = kiln.ShapeDtypeStruct((2, 5), jnp.dtype("float32"))
    assert repr(kiln.jit(page.f).eval_shape(matrix, matrix)) == "ShapeDtypeStruct(shape=(2, 5), dtype=float32)"


def test_traced_from_shape_dtype_structs(page):
    res = page.shape_dtype_block(3, 4)
    assert repr(res) == "Array(10, dtype=int32)"  # strong: the arguments' types are the ShapeDtypeStructs'
    _is(res, 10, np.int32)


@pytest.mark.parametrize("block, called", [("wrong_shape_block", "i32[3]"), ("wrong_dtype_block", "f32[]")])
def test_calling_with_other_argument_types_raises(page, block, called):
    # the page: TypeError: Argument types differ from the types for which this computation was compiled
    msg = str(_raises(TypeError, getattr(page, block)))
    assert "f was compiled for arguments (i32[], i32[])" in msg and f"called with ({called}, {called})" in msg
    assert "lower and compile again" in msg


def test_donate_argnums_is_respected_ahead_of_time(page):
    """"All optional arguments to jit ... are respected in the corresponding tracing, lowering, compilation, and
    execution": a donated argument of the AOT-compiled function is deleted by the call."""
    compiled = kiln.jit(page.f, donate_argnums=1).trace(jnp.ones(3), jnp.ones(3)).lower().compile()
    x, y = jnp.arange(3.0), jnp.ones(3)
    _is(compiled(x, y), 2 * np.arange(3.0) + 1, np.float32)
    assert y.is_deleted() and not x.is_deleted()


# ---------------------------------------------- Tracing with static arguments ----------------------------------------

def test_static_argument_is_folded_into_the_program(page):
    (lowered_with_x, res), out = _run(page.static_block)
    assert out == lowered_with_x.as_text() + "\n"
    # specialized to the value 7: one argument, 2 * 7 folded into the constant 14, no multiply
    assert re.search(r"@main\(%arg0: tensor<i32>\) -> ", out)
    assert _main(out) == ["%c = stablehlo.constant dense<14> : tensor<i32>",
                          "%0 = stablehlo.add %c, %arg0 : tensor<i32>",
                          "return %0 : tensor<i32>"]
    assert repr(res) == "Array(19, dtype=int32, weak_type=True)"
    _is(res, 2 * 7 + 5, np.int32, weak=True)
    # "the subsequent compiled function accepts only the remaining non-static second argument"
    with pytest.raises(TypeError, match="was compiled for arguments \\(i32\\[\\]\\) \\(without the static arguments"):
        lowered_with_x.compile()(7, 5)


def test_a_static_argument_must_be_concrete(page):
    err = _raises(TypeError, page.static_hollow_block)
    assert str(err) == "unsupported operand type(s) for *: 'int' and 'ShapeDtypeStruct'"  # the page's text
    res = page.static_concrete_block()
    assert repr(res) == "Array(25, dtype=int32)"
    _is(res, 2 * 10 + 5, np.int32)


# ---------------------------------------------- AOT-compiled functions cannot be transformed -------------------------

PAGE_VMAPPED = [[1.0, 5.0, 9.0], [13.0, 17.0, 21.0], [25.0, 29.0, 33.0], [37.0, 41.0, 45.0]]


def _cannot_be_transformed(err):
    msg = str(err)
    assert "g was lowered and compiled for one signature and cannot be transformed" in msg
    assert "transform the function and then lower and compile it" in msg


def test_compiled_functions_cannot_be_transformed(page):
    vmapped, g_aot, z, zs = page.transform_block()
    expected = np.asarray(zs, np.float64) @ np.ones(2)
    np.testing.assert_array_equal(expected, PAGE_VMAPPED)
    _is(vmapped, expected, np.float32)
    _is(g_aot(z), np.asarray(z, np.float64) @ np.ones(2), np.float32)  # called on its own signature: fine
    # the page: TypeError: Cannot apply JAX transformations to a function lowered and compiled for a particular
    # signature
    _cannot_be_transformed(_raises(TypeError, page.vmap_compiled_block, g_aot, zs))
    # "A similar error is raised when g_aot is involved in autodiff ... transformation by jax.jit is disallowed as
    # well" (compiled for float arguments, so that grad accepts them)
    zf = z.astype(np.float32)
    g_aot_f = kiln.jit(page.g).trace(zf).lower().compile()
    _cannot_be_transformed(_raises(TypeError, kiln.grad(lambda z: g_aot_f(z).sum()), zf))
    _cannot_be_transformed(_raises(TypeError, kiln.jit(g_aot), z))
