"""kiln.config's dump_ir_to / dump_ir_modes / include_debug_info_in_dumps (JAX's jax_dump_ir_to, ...): every module
kiln compiles, and kiln's IR of every function it lowers, written to a directory; and the module names (JAX's
``jit_f``) that name the files and XLA's HLO modules."""
import functools
import os
import subprocess
import sys

import numpy as np
import pytest
from kiln.frontend.core.config import ConfigError
from kiln.runtime import ir_dump

import kiln
import kiln.numpy as knp


@pytest.fixture
def dump_dir(tmp_path):
    """Dumps on, into a fresh directory, for the test; off again afterwards."""
    with kiln.config.override("dump_ir_to", str(tmp_path)), kiln.config.override("dump_ir_modes", "stablehlo,jaxpr"):
        yield tmp_path


def _files(directory, suffix):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(suffix))


def test_module_named_after_the_function_as_jax():
    def step_fn(x):
        return x * 2.0

    assert kiln.jit(step_fn).lower(1.0).as_text().startswith("module @jit_step_fn attributes")
    assert kiln.jit(lambda x: x).lower(1.0).as_text().startswith("module @jit__lambda_ attributes")
    # XLA names the HLO module after it (profiles and XLA's own dumps show it)
    assert kiln.jit(step_fn).lower(1.0).compile().as_text().startswith("HloModule jit_step_fn,")


def test_dump_writes_stablehlo_and_ir_of_a_jitted_function(dump_dir):
    def scaled_sin(x):
        return knp.sin(x) * 3.0

    x = np.linspace(0, 1, 5, dtype=np.float32)
    out = kiln.jit(scaled_sin)(x)
    np.testing.assert_allclose(np.asarray(out), np.sin(x) * 3.0, rtol=1e-6)
    mlir = [n for n in _files(dump_dir, ".mlir") if "jit_scaled_sin" in n]
    assert len(mlir) == 1 and mlir[0].startswith("kiln_ir") and mlir[0].endswith("_jit_scaled_sin_compile.mlir")
    text = (dump_dir / mlir[0]).read_text()
    assert "module @jit_scaled_sin" in text and "stablehlo.sine" in text
    assert "loc(" in text  # with source locations by default (JAX's include_debug_info_in_dumps)
    ir = [n for n in _files(dump_dir, ".ir.txt") if "jit_scaled_sin" in n]
    assert len(ir) == 1
    assert "sin" in (dump_dir / ir[0]).read_text() and "mul" in (dump_dir / ir[0]).read_text()


def test_dump_numbers_files_in_order_and_each_compile_once(dump_dir):
    @kiln.jit
    def f(x):
        return x + 1

    f(np.float32(1))
    f(np.float32(2))  # (cached: not compiled again)
    f(np.zeros(3, np.float32))
    names = [n for n in _files(dump_dir, ".mlir") if "jit_f_" in n]
    assert len(names) == 2
    numbers = [int(n[len("kiln_ir"):len("kiln_ir") + 4]) for n in names]
    assert numbers[0] < numbers[1]


def test_dump_without_debug_info(dump_dir):
    with kiln.config.override("include_debug_info_in_dumps", False):
        kiln.jit(lambda x: x * 5.0)(np.float32(1))
    text = (dump_dir / [n for n in _files(dump_dir, ".mlir") if "jit__lambda_" in n][0]).read_text()
    assert "loc(" not in text and "stablehlo.multiply" in text


def test_dump_modes_select_what_is_written(tmp_path):
    with kiln.config.override("dump_ir_to", str(tmp_path)), kiln.config.override("dump_ir_modes", "jaxpr"):
        kiln.jit(lambda x: x - 7.0)(np.float32(1))
    assert _files(tmp_path, ".mlir") == [] and _files(tmp_path, ".ir.txt")


def test_no_dump_when_off(tmp_path):
    before = set(os.listdir(tmp_path))
    kiln.jit(lambda x: x * 11.0)(np.float32(1))
    assert set(os.listdir(tmp_path)) == before
    assert kiln.config.dump_ir_to == ""


def test_unknown_dump_mode_is_an_error_naming_the_modes():
    with pytest.raises(ConfigError, match=r"unknown dump mode 'html'.*'stablehlo', 'jaxpr', 'eqn_count_pprof'"):
        kiln.config.update("jax_dump_ir_modes", "stablehlo,html")
    with pytest.raises(ConfigError, match="'jaxpr_html' is not implemented in kiln"):
        kiln.config.update("jax_dump_ir_modes", "jaxpr_html")
    assert kiln.config.dump_ir_modes == "stablehlo"


def test_eqn_count_pprof_counts_equations_per_source_line(tmp_path):
    """JAX's eqn_count_pprof mode: a pprof profile per program, one sample per (line, primitive) whose value is the
    number of equations that line made; the unrolled loop's line holds them all."""
    def unrolled(x):
        for _ in range(30):
            x = knp.sin(x)  # line A
        return kiln.lax.fori_loop(0, 3, lambda i, y: y * 2.0, x)  # line B: the body counts inside the loop

    line_a = unrolled.__code__.co_firstlineno + 2
    with kiln.config.override("dump_ir_to", str(tmp_path)), kiln.config.override("dump_ir_modes", "eqn_count_pprof"):
        np.testing.assert_allclose(np.asarray(kiln.jit(unrolled)(np.float32(0.5))),
                                   functools.reduce(lambda y, _: np.sin(y), range(30), np.float32(0.5)) * 8,
                                   rtol=1e-5)
    assert _files(tmp_path, ".mlir") == [] and _files(tmp_path, ".ir.txt") == []  # only the profiles
    (name,) = [n for n in _files(tmp_path, ".eqn_count_pprof") if "jit_unrolled" in n]
    assert name.startswith("kiln_") and name.endswith("_jit_unrolled.eqn_count_pprof")
    profile = ir_dump.read_profile((tmp_path / name).read_bytes())
    strings = profile["stringTable"]
    s = lambda i: strings[int(i)]  # noqa: E731
    assert [(s(t["type"]), s(t["unit"])) for t in profile["sampleType"]] == [("equations", "count")]
    assert s(profile["comment"][0]) == "jit_unrolled"
    functions = {f["id"]: f for f in profile["function"]}
    lines = {loc["id"]: loc["line"][0] for loc in profile["location"]}
    per = {}
    for sample in profile["sample"]:
        (label,) = sample["label"]
        assert s(label["key"]) == "primitive"
        (loc,) = sample["locationId"]
        where = lines[loc]
        f = functions[where["functionId"]]
        per[s(f["name"]).split(".")[-1], int(where["line"]), s(label["str"])] = int(sample["value"][0])
        assert s(f["filename"]) == __file__
    assert per[("unrolled", line_a, "sin")] == 30
    body = {k: v for k, v in per.items() if k[0] == "<lambda>"}
    assert body and sum(body.values()) >= 1 and all(k[1] == line_a + 1 for k in body)  # the loop body's multiply
    assert per[("unrolled", line_a + 1, "scan")] == 1  # (fori_loop with static bounds: a scan)


def test_eqn_count_profile_is_pprofs_encoding():
    counts = [(("/w/model.py", "Net.step", 10, 12), "add", 5000), (("/w/model.py", "<module>", 1, 40), "mul", 1),
              (None, "iota", 2)]
    profile = ir_dump.read_profile(ir_dump.eqn_count_profile(counts, "jit_step"))
    s = lambda i: profile["stringTable"][int(i)]  # noqa: E731
    assert [int(x["value"][0]) for x in profile["sample"]] == [5000, 1, 2]
    assert profile["sample"][2].get("locationId", []) == []  # no user line: no stack
    names = sorted(s(f["name"]) for f in profile["function"])
    assert names == [".w.model.<module>", ".w.model.Net.step"]  # JAX's naming: the path dotted, then the qualname
    assert sorted(int(loc["line"][0]["line"]) for loc in profile["location"]) == [12, 40]


def test_sponge_without_its_variable_is_an_error(monkeypatch, tmp_path):
    monkeypatch.delenv("TEST_UNDECLARED_OUTPUTS_DIR", raising=False)
    with pytest.raises(ConfigError, match="TEST_UNDECLARED_OUTPUTS_DIR, which is not set"):
        kiln.config.update("jax_dump_ir_to", "sponge")
    assert kiln.config.dump_ir_to == ""
    monkeypatch.setenv("TEST_UNDECLARED_OUTPUTS_DIR", str(tmp_path))
    with kiln.config.override("dump_ir_to", "sponge"):
        kiln.jit(lambda x: x * 13.0)(np.float32(1))
    assert _files(tmp_path, ".mlir")


def test_environment_variable_turns_dumps_on(tmp_path):
    code = ("import numpy as np, kiln, kiln.numpy as knp\n"
            "def from_env(x):\n    return knp.cos(x)\n"
            "print(kiln.jit(from_env)(np.float32(0)))\n")
    env = {**os.environ, "KILN_DUMP_IR_TO": str(tmp_path), "KILN_COMPILATION_CACHE": "0"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert any("jit_from_env_compile.mlir" in n for n in os.listdir(tmp_path))
    env.update(KILN_DUMP_IR_TO="sponge")
    env.pop("TEST_UNDECLARED_OUTPUTS_DIR", None)
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "KILN_DUMP_IR_TO is 'sponge'" in run.stderr, run.stderr
