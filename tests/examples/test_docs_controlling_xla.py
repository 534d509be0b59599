"""JAX's docs page docs/new_docs/201/controlling-xla.md ("Controlling XLA from JAX"), ported to kiln by changing
imports (tests/examples/jax_ported/docs_controlling_xla.py), checked against the page and oracles that do not
involve JAX.

Oracles: the arithmetic of the page's `f` (sqrt(x**2) + 1), NumPy's sin/cos for the tagged blocks and their
derivatives; the HLO the page prints (its instructions, operands, calls and frontend attributes, compared after
numbering the instructions in their order: the page's names `x.1`, `sin.1` are JAX's location names, kiln's
`Arg_0.1`, `sine.1`); the page's prose: compiler options apply to the top-level jit only, at compile time, typos
raise; an effort level is a member or its name; the same options at the AOT compile step; XLA_FLAGS is read when
the backend starts (checked in a new process with XLA's --xla_dump_to) and a later change has no effect; XLA's
GPU-only flags are accepted on the CPU, as any option XLA knows; metadata survives vmap and grad (`ad_metadata`
as the page says); the set_xla_metadata context re-traces a jitted function per distinct context; value tagging
does not reach the backward pass; the optimized HLO keeps the attributes.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import textwrap
import warnings

import numpy as np
import pytest
from kiln.runtime.executable import CompilerOptionError
from ported import load

import kiln
import kiln.numpy as knp
from kiln.experimental.xla_metadata import set_xla_metadata


@pytest.fixture(scope="module")
def nb():
    return load("docs_controlling_xla")


def _run(fn, *args):
    """(what fn returns, what it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue()


def _is_two(x):
    assert isinstance(x, kiln.Array) and (x.dtype, x.weak_type, x.shape) == (np.float32, True, ())
    assert float(x) == 2.0  # sqrt(1 ** 2) + 1


# The HLO as structure: per computation (by its name less the ".N" XLA adds), its instructions in order as
# (ROOT?, type, opcode, operands as indices of instructions of that computation, the called computation, the
# frontend attributes).
_INSTRUCTION = re.compile(r"^\s*(ROOT )?(\S+) = (\(.*?\)|\S+) ([\w-]+)\(([^)]*)\)(.*)$")


def hlo_structure(text: str) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    for block in re.finditer(r"^(ENTRY )?(\S+) (?:\([^\n]*\) -> [^\n]* )?\{\n(.*?)\n\}", text, re.M | re.S):
        name = "ENTRY" if block.group(1) else re.sub(r"\.\d+$", "", block.group(2))
        index: dict[str, int] = {}
        rows = []
        for line in block.group(3).splitlines():
            m = _INSTRUCTION.match(line)
            root, iname, typ, opcode, operands, rest = m.groups()
            index[iname] = len(rows)
            called = re.search(r"to_apply=(\S+?)(?:,|$)", rest)
            attrs = re.search(r"frontend_attributes=(\{[^}]*\})", rest)
            # (an operand that names no instruction is a literal: a parameter's number, a constant's value)
            rows.append((bool(root), typ.replace("{0}", ""), opcode,
                         tuple(index.get(a.strip(), a.strip()) for a in operands.split(",") if a.strip()),
                         re.sub(r"\.\d+$", "", called.group(1)) if called else None, attrs.group(1) if attrs else None))
        out[name] = rows
    return out


PAGE_CALL_HLO = """
xla_metadata_call.1 {
  Arg_0.1 = f32[] parameter(0)
  sin.1 = f32[] sine(Arg_0.1)
  cos.1 = f32[] cosine(Arg_0.1)
  ROOT mul.1 = f32[] multiply(sin.1, cos.1)
}

ENTRY main.2 {
  x.1 = f32[] parameter(0)
  xla_metadata_call.1 = f32[] call(x.1), to_apply=xla_metadata_call.1, frontend_attributes={tag="my_block"}
  constant.1 = f32[] constant(1)
  ROOT add.1 = f32[] add(xla_metadata_call.1, constant.1)
}
"""

PAGE_SET_HLO = """
ENTRY main.1 {
  x.1 = f32[] parameter(0)
  sin.1 = f32[] sine(x.1)
  cos.1 = f32[] cosine(x.1)
  ROOT mul.1 = f32[] multiply(sin.1, cos.1), frontend_attributes={breakpoint="true"}
}
"""


def test_hlo_structure_reads_the_page():
    page = hlo_structure(PAGE_CALL_HLO)
    assert page["ENTRY"][1] == (False, "f32[]", "call", (0,), "xla_metadata_call", '{tag="my_block"}')
    assert page["ENTRY"][3] == (True, "f32[]", "add", (1, 2), None, None)
    assert [r[2] for r in page["xla_metadata_call"]] == ["parameter", "sine", "cosine", "multiply"]


# ==================================== XLA compiler flags ==========================================================

def test_compiler_options_apply_to_one_function(nb):
    _is_two(nb.compiler_options_cell())  # a GPU-only flag among them: XLA knows it, the CPU ignores it


def test_effort_levels_are_members_or_their_names(nb):
    g = nb.effort_level_cell()
    _is_two(g(1.0))
    assert [(m.name, m.value) for m in kiln.CompilerEffortLevel] == [("UNKNOWN", 0), ("O0", 9), ("O1", 19),
                                                                     ("O2", 29), ("O3", 39)]
    for level in ("O0", "O1", "O2", "O3", kiln.CompilerEffortLevel.O0):  # "valued as members or their string names"
        _is_two(kiln.jit(nb.f, compiler_options={"optimization_level": level, "memory_fitting_level": level})(1.0))
    with pytest.raises(CompilerOptionError) as e:
        kiln.jit(nb.f, compiler_options={"optimization_level": "O4"})(1.0)
    assert "'optimization_level' is an effort level, and 'O4' is not one" in str(e.value)
    assert "kiln.CompilerEffortLevel.O0 ... O3 or its name" in str(e.value)


def test_typos_raise_at_compile_time(nb):
    jitted = kiln.jit(nb.f, compiler_options={"not_a_real_flag": 1})  # not yet: options are read when compiling
    with pytest.raises(RuntimeError) as e:  # (JAX's JaxRuntimeError is a RuntimeError)
        nb.not_a_real_flag_cell()
    assert isinstance(e.value, CompilerOptionError) and isinstance(e.value, kiln.errors.JaxRuntimeError)
    assert "XLA has no option 'not_a_real_flag'" in str(e.value) and "correct the name or remove it" in str(e.value)
    assert "kiln.jit(f)" in str(e.value)  # whose options
    with pytest.raises(CompilerOptionError, match="'xla_embed_ir_in_executable' takes bool values, and 'yes' is not "
                                                  r"one; pass a bool \(True or False\)"):
        kiln.jit(nb.f, compiler_options={"xla_embed_ir_in_executable": "yes"})(1.0)
    with pytest.raises(CompilerOptionError, match="XLA has no option 'not_a_real_flag'"):
        jitted.lower(1.0).compile()


def test_options_at_the_aot_compile_step(nb):
    compiled = nb.aot_cell()
    _is_two(compiled(1.0))
    with pytest.raises(CompilerOptionError, match="XLA has no option 'not_a_real_flag'"):
        kiln.jit(nb.f).lower(1.0).compile(compiler_options={"not_a_real_flag": 1})


def test_compiler_options_belong_on_the_top_level_jit(nb):
    inner = kiln.jit(nb.f, compiler_options={"xla_embed_ir_in_executable": True})
    with pytest.raises(ValueError) as e:  # (JAX: ValueError: `compiler_options` can only be passed to top-level)
        kiln.jit(lambda x: inner(x) * 2.0)(1.0)
    assert "apply to the program of a top-level call only" in str(e.value)
    assert "Pass compiler_options to the outermost kiln.jit instead" in str(e.value)
    assert float(kiln.jit(lambda x: kiln.jit(nb.f)(x) * 2.0, compiler_options={
        "xla_embed_ir_in_executable": True})(1.0)) == 4.0  # given to the outermost jit instead


@pytest.mark.parametrize("options", [
    {"xla_gpu_enable_triton_gemm": False}, {"xla_gpu_autotune_level": 0},
    {"xla_gpu_enable_latency_hiding_scheduler": True}, {"xla_gpu_auto_spmd_partitioning_memory_budget_ratio": 0.25},
    {"xla_gpu_enable_command_buffer": ""}])
def test_gpu_only_flags_are_accepted_on_the_cpu(nb, options):
    # XLA's DebugOptions hold every backend's flags: the CPU compiler reads none of these, and takes them
    _is_two(kiln.jit(nb.f, compiler_options=options)(1.0))


@pytest.mark.parametrize("options, message", [
    ({"xla_gpu_no_such_flag": 1}, "XLA has no option 'xla_gpu_no_such_flag'"),
    ({"xla_gpu_enable_triton_gemm": "sometimes"}, "'xla_gpu_enable_triton_gemm' takes bool values, and 'sometimes' "
                                                  "is not one"),
    ({"xla_gpu_autotune_level": "max"}, "'xla_gpu_autotune_level' takes int32 values, and 'max' is not one"),
])
def test_gpu_only_flags_are_checked_on_the_cpu(nb, options, message):
    with pytest.raises(CompilerOptionError) as e:
        kiln.jit(nb.f, compiler_options=options)(1.0)
    assert message in str(e.value)


def test_xla_flags_are_read_when_the_backend_starts(nb, tmp_path):
    """XLA_FLAGS set for the process apply to every compilation (XLA's --xla_dump_to dumps each program); set
    once the backend has started, they change nothing."""
    script = tmp_path / "source.py"
    script.write_text(textwrap.dedent(f"""
        import os, kiln, kiln.numpy as knp
        def first_fn(x):
            return knp.sin(x) * 3.0
        print(float(kiln.jit(first_fn)(1.0)))
        os.environ["XLA_FLAGS"] = "--xla_dump_to={tmp_path / 'later'}"
        def second_fn(x):
            return knp.cos(x) * 5.0
        print(float(kiln.jit(second_fn)(1.0)))
    """))
    with _env(KILN_COMPILATION_CACHE="0"):  # (a program found in kiln's disk cache is not compiled, nor dumped)
        run = nb.xla_flags_cell(str(script), [f"--xla_dump_to={tmp_path / 'dumps'}",
                                              "--xla_gpu_enable_triton_gemm=false"])
    assert run.returncode == 0, run.stderr
    assert [float(v) for v in run.stdout.split()] == pytest.approx([3 * np.sin(1.0), 5 * np.cos(1.0)], rel=1e-6)
    dumped = os.listdir(tmp_path / "dumps")
    assert any(n.endswith("jit_first_fn.before_optimizations.txt") for n in dumped)
    assert any(n.endswith("jit_second_fn.before_optimizations.txt") for n in dumped)  # still the first value
    assert not (tmp_path / "later").exists()


@contextlib.contextmanager
def _env(**values):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ==================================== XLA metadata ================================================================

def test_xla_metadata_call_prints_the_pages_hlo(nb):
    f, printed = _run(nb.xla_metadata_call_cell)
    assert hlo_structure(printed) == hlo_structure(PAGE_CALL_HLO)
    assert float(f(1.0)) == pytest.approx(np.sin(1.0) * np.cos(1.0) + 1, rel=1e-6)
    x = np.linspace(-2, 2, 5).astype(np.float32)
    np.testing.assert_allclose(kiln.vmap(f)(x), np.sin(x) * np.cos(x) + 1, rtol=1e-6, atol=1e-7)
    # "Under jax.vmap the batched operations carry it"
    vmapped = hlo_structure(kiln.jit(kiln.vmap(f)).lower(x).as_text("hlo"))
    (call,) = [r for r in vmapped["ENTRY"] if r[2] == "call"]
    assert call[1] == "f32[5]" and call[5] == '{tag="my_block"}'
    # "When XLA inlines the call during optimization, it propagates the attributes": the optimized program has no
    # call left, and its fused operations carry the tag
    optimized = f.lower(1.0).compile().as_text()
    assert " call(" not in optimized and 'frontend_attributes={tag="my_block"}' in optimized


def test_metadata_values_are_attached_as_strings(nb):
    block = kiln.experimental.xla_metadata.xla_metadata_call(s="a", b=True, off=False, i=7, r=0.25)(knp.sin)
    (call,) = [r for r in hlo_structure(kiln.jit(block).lower(1.0).as_text("hlo"))["ENTRY"] if r[2] == "call"]
    assert call[5] == '{b="true",i="7",off="false",r="0.25",s="a"}'


def test_grad_stages_out_and_tags_forward_and_backward(nb):
    block, printed = _run(nb.grad_cell)
    hlo = hlo_structure(printed)
    calls = [r for r in hlo["ENTRY"] if r[2] == "call"]
    assert [(c[4], c[5]) for c in calls] == [("xla_metadata_call", '{tag="my_block"}'),
                                             ("xla_metadata_call_0", '{tag="my_block"}')]
    # the forward computation holds the cosine (the residual the backward pass needs); the backward one multiplies
    # it by the cotangent (the page's; kiln's forward computation also returns the sine, unused)
    assert "cosine" in [r[2] for r in hlo["xla_metadata_call"]]
    assert [r[2] for r in hlo["xla_metadata_call_0"]] == ["parameter", "parameter", "multiply"]
    assert hlo["ENTRY"][-1][2] == "call" and hlo["ENTRY"][-1][0]  # the backward call's result is the answer
    assert float(kiln.jit(kiln.grad(block))(1.0)) == pytest.approx(np.cos(1.0), rel=1e-6)
    assert float(kiln.grad(block)(0.25)) == pytest.approx(np.cos(0.25), rel=1e-6)


def test_ad_metadata_tags_the_backward_pass_as_asked(nb):
    fs = nb.xla_metadata_call2_cell()
    # tag fwd + bwd (default); tag fwd only; retag bwd
    for fn, bwd in zip(fs, ['{tag="x"}', None, '{tag="y"}']):
        calls = [r for r in hlo_structure(kiln.jit(kiln.grad(fn)).lower(1.0).as_text("hlo"))["ENTRY"] if r[2] == "call"]
        assert [c[5] for c in calls] == ['{tag="x"}', bwd]
        assert float(kiln.grad(fn)(1.0)) == pytest.approx(np.cos(1.0), rel=1e-6)
        # forward mode: one call for the primal and tangent computations, with the forward metadata regardless
        calls = [r for r in hlo_structure(kiln.jit(lambda x, t, fn=fn: kiln.jvp(fn, (x,), (t,))).lower(1.0, 1.0)
                                          .as_text("hlo"))["ENTRY"] if r[2] == "call"]
        assert [c[5] for c in calls] == ['{tag="x"}']
    # the linearized (tangent) computation too
    _, lin = kiln.linearize(fs[2], 1.0)
    calls = [r for r in hlo_structure(kiln.jit(lin).lower(1.0).as_text("hlo"))["ENTRY"] if r[2] == "call"]
    assert [c[5] for c in calls] == ['{tag="y"}'] and float(lin(2.0)) == pytest.approx(2 * np.cos(1.0), rel=1e-6)


def test_must_fuse_call_puts_the_function_in_one_fusion(nb):
    fused = nb.must_fuse_call_cell()(lambda x: knp.square(x).sum())
    x = np.arange(128, dtype=np.float32) / 64
    (call,) = [r for r in hlo_structure(kiln.jit(fused).lower(x).as_text("hlo"))["ENTRY"] if r[2] == "call"]
    assert call[5] == '{MUST_FUSE="1"}'
    # XLA's optimized program keeps the tag on what it made of the call (whether it fuses all of it is XLA's: the
    # CPU compiler of this jaxlib splits 128 elements into a multiply and a reduction fusion, both tagged)
    optimized = kiln.jit(fused).lower(x).compile().as_text()
    fusions = re.findall(r"= \S+ fusion\(.*frontend_attributes=\{MUST_FUSE=\"1\"\}", optimized)
    assert fusions and " call(" not in optimized
    assert float(kiln.jit(fused)(x)) == pytest.approx(float((x.astype(np.float64) ** 2).sum()), rel=1e-6)


def test_set_xla_metadata_tags_the_operation_producing_the_value(nb):
    _, printed = _run(nb.set_xla_metadata_cell)
    assert hlo_structure(printed) == hlo_structure(PAGE_SET_HLO)
    # "inspect the optimized HLO if a tool depends on the metadata surviving": it does here
    assert 'frontend_attributes={breakpoint="true"}' in kiln.jit(nb.g).lower(1.0).compile().as_text()
    assert float(kiln.jit(nb.g)(1.0)) == pytest.approx(np.sin(1.0) * np.cos(1.0), rel=1e-6)


def test_value_tagging_does_not_reach_the_backward_pass(nb):
    text = kiln.jit(kiln.grad(nb.g)).lower(1.0).as_text("hlo")
    assert "frontend_attributes" not in text  # "the backward-pass operations come out untagged"
    assert float(kiln.grad(nb.g)(1.0)) == pytest.approx(np.cos(2.0), rel=1e-6)  # d/dx sin x cos x = cos 2x


def test_context_manager_tags_everything_and_retraces_per_context():
    traces = []

    @kiln.jit
    def library(x):  # "library code that jits internally"
        traces.append(1)
        return knp.sin(x) * 2.0

    def h(x):
        with set_xla_metadata(k="v"):
            return library(x) + 1.0

    hlo = hlo_structure(kiln.jit(h).lower(1.0).as_text("hlo"))["ENTRY"]
    assert {r[5] for r in hlo if r[2] != "parameter" and r[2] != "constant"} == {'{k="v"}'}
    assert len(traces) == 1
    library(1.0)
    assert len(traces) == 2  # outside the context: traced again (the context is part of jit's cache key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for value in ("a", "b", "a"):
            with set_xla_metadata(group=value):
                assert float(library(1.0)) == pytest.approx(2 * np.sin(1.0), rel=1e-6)
    assert len(traces) == 4  # once per distinct metadata context: "a", "b"; "a" again from the cache
    library(1.0)
    assert len(traces) == 4

    @set_xla_metadata(group="dec")  # "(or decorator)"
    def decorated(x):
        return knp.cos(x)
    assert {r[5] for r in hlo_structure(kiln.jit(decorated).lower(1.0).as_text("hlo"))["ENTRY"]
            if r[2] == "cosine"} == {'{group="dec"}'}

