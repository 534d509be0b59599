"""JAX's docs page docs/new_docs/201/controlling-xla.md under kiln and under JAX 0.10.2 (the against_jax session).

The kiln side is tests/examples/jax_ported/docs_controlling_xla.py; the JAX side is the same source with JAX's
imports put back. The page's oracles are in test_docs_controlling_xla.py; this checks that the two libraries agree:
the results of the compiler-options blocks, which options each accepts and refuses (XLA's GPU-only flags on the
CPU among them) and with which exception classes, XLA_FLAGS in a new process, and the HLO of the set_xla_metadata
block (the same instructions, operands and frontend attributes; the instruction names differ: JAX's are its
location names).

Differences, tested as such:
- JAX 0.10.2 lacks what the page documents from JAX 0.11: ``jax.CompilerEffortLevel``, effort levels given by name
  (``"O3"``: JAX 0.10.2 raises TypeError from jaxlib), and ``xla_metadata_call``, ``xla_metadata_call2``,
  ``must_fuse_call`` (AttributeError); kiln has them (checked against the page in test_docs_controlling_xla.py).
- kiln's errors for a refused option are its CompilerOptionError (a RuntimeError, as JAX's JaxRuntimeError, and a
  ValueError), with a message that says how to fix it; for the nested-jit restriction kiln's JitArgumentError is a
  ValueError, as JAX's.
"""
from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome  # noqa: E402
from test_docs_controlling_xla import hlo_structure  # noqa: E402

import kiln  # noqa: E402
import kiln.experimental.xla_metadata  # noqa: E402

pytest.importorskip("jax.experimental.xla_metadata")


@pytest.fixture(scope="module")
def both():
    return load("docs_controlling_xla"), load("docs_controlling_xla", "jax")


def test_compiler_options_blocks(both):
    k, j = both
    assert_same(k.compiler_options_cell(), j.compiler_options_cell(), rtol=0)
    kc, jc = k.aot_cell(), j.aot_cell()
    assert_same(kc(1.0), jc(1.0), rtol=0)
    (ke, _), (je, _) = outcome(k.not_a_real_flag_cell), outcome(j.not_a_real_flag_cell)
    assert isinstance(je, jax.errors.JaxRuntimeError) and "No such compile option: 'not_a_real_flag'" in str(je)
    assert_same_exception(ke, je)
    assert "XLA has no option 'not_a_real_flag'" in str(ke)


def test_jax_0_10_lacks_the_0_11_blocks(both):
    k, j = both
    for name in ("effort_level_cell", "xla_metadata_call_cell", "grad_cell", "xla_metadata_call2_cell",
                 "must_fuse_call_cell"):
        (kr, _), (jr, _) = outcome(getattr(k, name)), outcome(getattr(j, name))
        assert isinstance(jr, AttributeError), (name, jr)  # JAX 0.11's API
        assert not isinstance(kr, Exception), (name, kr)
    # an effort level by name: JAX 0.10.2 hands the string to jaxlib, which wants XLA's number
    for lib in (kiln, jax):
        g = lib.jit(k.f if lib is kiln else j.f, compiler_options={"optimization_level": 39})
        assert float(g(1.0)) == 2.0
    res, _ = outcome(lambda: jax.jit(j.f, compiler_options={"optimization_level": "O3"})(1.0))
    assert isinstance(res, TypeError)
    assert float(kiln.jit(k.f, compiler_options={"optimization_level": "O3"})(1.0)) == 2.0


OPTIONS = [
    {"xla_embed_ir_in_executable": True}, {"xla_gpu_auto_spmd_partitioning_memory_budget_ratio": 0.5},
    {"xla_gpu_enable_triton_gemm": False}, {"xla_gpu_autotune_level": 0},
    {"xla_gpu_enable_latency_hiding_scheduler": True}, {"xla_gpu_enable_command_buffer": ""},
    {"xla_gpu_no_such_flag": 1}, {"xla_gpu_enable_triton_gemm": "sometimes"}, {"xla_gpu_autotune_level": "max"},
    {"xla_embed_ir_in_executable": "yes"}, {"xla_cpu_enable_fast_math": True},
    {"xla_backend_optimization_level": 0}, {"exec_time_optimization_effort": 0.5}, {"optimization_level": 19},
    {"memory_fitting_level": 9},
]


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_options_accepted_and_refused_alike(both, options):
    """GPU-only flags on the CPU: XLA knows them (accepted, unused) or refuses a name or value, in both."""
    k, j = both
    (kr, _), (jr, _) = (outcome(lambda lib=lib, nb=nb: lib.jit(nb.f, compiler_options=options)(1.0))
                        for lib, nb in ((kiln, k), (jax, j)))
    if isinstance(jr, Exception):
        assert isinstance(kr, Exception), kr
        assert_same_exception(kr, jr)
    else:
        assert_same(kr, jr, rtol=0)


def test_nested_jit_with_options_raises_alike(both):
    k, j = both
    errors = []
    for lib, nb in ((kiln, k), (jax, j)):
        inner = lib.jit(nb.f, compiler_options={"xla_embed_ir_in_executable": True})
        res, _ = outcome(lambda lib=lib, inner=inner: lib.jit(lambda x: inner(x) * 2.0)(1.0))
        errors.append(res)
    assert isinstance(errors[1], ValueError)
    assert_same_exception(*errors)


def test_xla_flags_in_a_new_process(both, tmp_path):
    runs = {}
    for lib, nb in zip(("kiln", "jax"), both):
        script = tmp_path / f"{lib}_source.py"
        script.write_text(textwrap.dedent(f"""
            import os
            import {lib} as lib
            def first_fn(x):
                return lib.numpy.sin(x) * 3.0
            print(float(lib.jit(first_fn)(1.0)))
            os.environ["XLA_FLAGS"] = "--xla_dump_to={tmp_path / (lib + '_later')}"
            def second_fn(x):
                return lib.numpy.cos(x) * 5.0
            print(float(lib.jit(second_fn)(1.0)))
        """))
        env = {"KILN_COMPILATION_CACHE": "0"}
        old = {name: os.environ.get(name) for name in env}
        os.environ.update(env)
        try:
            run = nb.xla_flags_cell(str(script), [f"--xla_dump_to={tmp_path / lib}"])
        finally:
            for name, value in old.items():
                os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)
        assert run.returncode == 0, run.stderr
        runs[lib] = (run.stdout, sorted(n.split(".", 1)[1] for n in os.listdir(tmp_path / lib)
                                        if n.endswith(".before_optimizations.txt") and "_fn" in n),
                     (tmp_path / (lib + "_later")).exists())
    assert runs["kiln"] == runs["jax"]
    assert runs["kiln"][1] == ["jit_first_fn.before_optimizations.txt", "jit_second_fn.before_optimizations.txt"]
    assert runs["kiln"][2] is False


def test_set_xla_metadata_block(both):
    k, j = both
    (_, kout), (_, jout) = outcome(k.set_xla_metadata_cell), outcome(j.set_xla_metadata_cell)
    assert hlo_structure(kout) == hlo_structure(jout)
    for lib, nb in ((kiln, k), (jax, j)):  # value tagging does not reach the backward pass, in either
        assert "frontend_attributes" not in lib.jit(lib.grad(nb.g)).lower(1.0).as_text("hlo")
    np.testing.assert_allclose(float(kiln.grad(k.g)(1.0)), float(jax.grad(j.g)(1.0)), rtol=1e-6)


def _trace_count(lib, set_md) -> list[int]:
    """How many times a jitted function has been traced after each call: plain, under three contexts, plain."""
    traces = []

    @lib.jit
    def library(x):
        traces.append(1)
        return lib.numpy.sin(x) * 2.0

    counts = [library(1.0) is not None and len(traces)]
    for value in ("a", "b", "a"):
        with set_md(group=value):
            library(1.0)
        counts.append(len(traces))
    library(1.0)
    return counts + [len(traces)]


def test_set_xla_metadata_context_retraces_alike():
    k = _trace_count(kiln, kiln.experimental.xla_metadata.set_xla_metadata)
    j = _trace_count(jax, jax.experimental.xla_metadata.set_xla_metadata)
    assert k == j == [1, 2, 3, 3, 3]  # once per distinct metadata context
