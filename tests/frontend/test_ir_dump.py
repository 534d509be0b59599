"""kiln.config's dump_ir_to / dump_ir_modes / include_debug_info_in_dumps (JAX's jax_dump_ir_to, ...): every module
kiln compiles, and kiln's IR of every function it lowers, written to a directory; and the module names (JAX's
``jit_f``) that name the files and XLA's HLO modules."""
import os
import subprocess
import sys

import numpy as np
import pytest
from kiln.frontend.core.config import ConfigError

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
    with pytest.raises(ConfigError, match=r"unknown dump mode 'html'.*'stablehlo' and 'jaxpr'"):
        kiln.config.update("jax_dump_ir_modes", "stablehlo,html")
    with pytest.raises(ConfigError, match="'jaxpr_html' and 'eqn_count_pprof' are not implemented in kiln"):
        kiln.config.update("jax_dump_ir_modes", "jaxpr_html")
    assert kiln.config.dump_ir_modes == "stablehlo"


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
