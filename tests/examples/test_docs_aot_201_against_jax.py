"""JAX's docs page docs/new_docs/201/aot.md under kiln and under JAX gives the same results (the against_jax
session).

The kiln side is tests/examples/jax_ported/docs_aot_201.py; the JAX side is the same source with JAX's imports put
back. The oracles and the page's claims are in test_docs_aot_201.py; this checks that the two libraries agree block
by block: the jaxpr's text, the values (dtypes, weak types, shapes), the FLOP estimate, the keys of the cost
analysis, the memory sizes, the ShapeDtypeStructs, the exception classes of the blocks that raise (and of a call of
a compiled function with a wrong number of arguments, a transformation of it under grad and jit, an unknown compiler
option). The StableHLO texts are compared less what legitimately differs: kiln writes no ``jax.result_info``
attributes (README "Differences from JAX"), and its ``debug_info`` locations are the primitives' lines only.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet  # noqa: E402

import kiln  # noqa: E402


@pytest.fixture(scope="module")
def both():
    return load("docs_aot_201"), load("docs_aot_201", "jax")


def _without_result_info(text):
    return re.sub(r"\(tensor<i32> \{jax\.result_info = \"result\"\}\)", "tensor<i32>", text)


def test_stages(both):
    k, j = both
    (kt, kl, kc, kflops, kres), kout = quiet(k.stages_block)
    (jt, jl, jc, jflops, jres), jout = quiet(j.stages_block)
    assert str(kt.jaxpr) == str(jt.jaxpr)
    assert kout == _without_result_info(jout)
    assert kflops == jflops == 2.0
    kcost, jcost = kc.cost_analysis(), jc.cost_analysis()
    assert set(kcost) == set(jcost) and {key: kcost[key] for key in jcost} == jcost
    assert_same(kres, jres, 0.0)
    assert repr(kres) == repr(jres)
    assert k.memory_analysis_block(kc) == j.memory_analysis_block(jc)
    assert_same(kl.compile(compiler_options={"xla_cpu_enable_fast_math": False})(3, 4),
                jl.compile(compiler_options={"xla_cpu_enable_fast_math": False})(3, 4), 0.0)
    (kerr, _), (jerr, _) = (outcome(lambda: kl.compile(compiler_options={"xla_no_such_flag": 1})),
                            outcome(lambda: jl.compile(compiler_options={"xla_no_such_flag": 1})))
    assert isinstance(jerr, RuntimeError)
    assert_same_exception(kerr, jerr)
    # debug_info: both locate the multiply and the add at f's line
    line = k.f.__code__.co_firstlineno
    for text in (kl.as_text(debug_info=True), jl.as_text(debug_info=True)):
        assert re.search(rf'docs_aot_201\.py":{line}:', text) and '"jit(f)/mul"' in text and '"jit(f)/add"' in text
    assert kc.as_text().startswith("HloModule jit_f") and jc.as_text().startswith("HloModule jit_f")


def test_eval_shape_and_shape_dtype_structs(both):
    k, j = both
    assert repr(k.eval_shape_block()) == repr(j.eval_shape_block())
    assert repr(kiln.eval_shape(k.f, k.i32_scalar, k.i32_scalar)) == repr(jax.eval_shape(j.f, j.i32_scalar,
                                                                                         j.i32_scalar))
    kres, jres = k.shape_dtype_block(3, 4), j.shape_dtype_block(3, 4)
    assert_same(kres, jres, 0.0)
    assert repr(kres) == repr(jres)


def test_other_argument_types(both):
    k, j = both
    for block in ("wrong_shape_block", "wrong_dtype_block"):
        (kerr, _), (jerr, _) = outcome(getattr(k, block)), outcome(getattr(j, block))
        assert isinstance(jerr, TypeError) and "Argument types differ" in str(jerr)
        assert_same_exception(kerr, jerr)


def test_static_arguments(both):
    k, j = both
    (kl, kres), kout = quiet(k.static_block)
    (jl, jres), jout = quiet(j.static_block)
    assert kout == _without_result_info(jout)
    assert_same(kres, jres, 0.0)
    (kerr, _), (jerr, _) = outcome(kl.compile(), 7, 5), outcome(jl.compile(), 7, 5)  # the static one passed again
    assert isinstance(jerr, TypeError)
    assert_same_exception(kerr, jerr)
    (kerr, _), (jerr, _) = outcome(k.static_hollow_block), outcome(j.static_hollow_block)
    assert type(jerr) is TypeError and str(kerr) == str(jerr)
    kres, jres = k.static_concrete_block(), j.static_concrete_block()
    assert_same(kres, jres, 0.0)


def test_compiled_functions_cannot_be_transformed(both):
    k, j = both
    (kv, kg, kz, kzs), (jv, jg, jz, jzs) = k.transform_block(), j.transform_block()
    assert_same(kv, jv, 0.0)
    assert_same(kg(kz), jg(jz), 0.0)
    (kerr, _), (jerr, _) = outcome(k.vmap_compiled_block, kg, kzs), outcome(j.vmap_compiled_block, jg, jzs)
    assert isinstance(jerr, TypeError) and "Cannot apply JAX transformations" in str(jerr)
    assert_same_exception(kerr, jerr)
    kzf, jzf = kz.astype(np.float32), jz.astype(np.float32)
    kgf, jgf = kiln.jit(k.g).trace(kzf).lower().compile(), jax.jit(j.g).trace(jzf).lower().compile()
    for kcall, jcall in ((lambda: kiln.grad(lambda z: kgf(z).sum())(kzf),
                          lambda: jax.grad(lambda z: jgf(z).sum())(jzf)),
                         (lambda: kiln.jit(kg)(kz), lambda: jax.jit(jg)(jz))):
        (kerr, _), (jerr, _) = outcome(kcall), outcome(jcall)
        assert isinstance(jerr, TypeError) and "Cannot apply JAX transformations" in str(jerr)
        assert_same_exception(kerr, jerr)
