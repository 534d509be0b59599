"""tools/gpu_check.sh (issue 13's one-command GPU run) and the GPU benchmark selection, checked without a GPU:
the script parses and explains itself, and ``benchmarks/run.py --gpu`` selects the issue's cases with the
issue's sizes (listed, never run: nothing here allocates the 1 GiB arrays)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "tools", "gpu_check.sh")
BASH = shutil.which("bash")

needs_bash = pytest.mark.skipif(BASH is None, reason="no bash")


def _script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([BASH, SCRIPT, *args], cwd=REPO, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=60)


@needs_bash
def test_script_parses_and_is_executable():
    proc = subprocess.run([BASH, "-n", SCRIPT], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert os.access(SCRIPT, os.X_OK)
    with open(SCRIPT) as f:
        text = f.read()
    assert text.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in text


@needs_bash
def test_usage_without_arguments():
    proc = _script()
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("usage: tools/gpu_check.sh OUTDIR")
    for word in ("KILN_TEST_BACKEND=cuda", "GPU_CHECK_ONLY=tests|bench", "PYTEST_ARGS", "junit.xml", "bench.md"):
        assert word in proc.stderr
    help_ = _script("--help")
    assert help_.returncode == 0 and help_.stdout == proc.stderr


@needs_bash
def test_bad_settings_fail_before_doing_anything(tmp_path):
    out = tmp_path / "out"
    for env in ({"GPU_CHECK_ONLY": "both"}, {"GPU_CHECK_TIME_S": "ten minutes"}):
        proc = _script(str(out), env=env)
        assert proc.returncode == 2, proc.stderr
        assert "gpu_check.sh:" in proc.stderr
        assert not out.exists()  # nothing installed, nothing written
    proc = _script(str(out), "extra")
    assert proc.returncode == 2 and proc.stderr.startswith("usage:")


def _benchmarks(code: str) -> dict:
    """Run ``code`` in a fresh interpreter with benchmarks/ importable; it prints one JSON object."""
    prelude = f"import json, sys\nsys.path.insert(0, {os.path.join(REPO, 'benchmarks')!r})\n"
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


GPU_SUITE = [
    "jit dispatch: f32[4] add",
    "MLP train step (value_and_grad + SGD)",
    "RNN h=128, 200 steps (scan), batch 32: forward",
    "RNN h=128, 200 steps (scan), batch 32: value_and_grad",
    "jit random.normal f32[64Mi]",
    "per-example grads: jit(vmap(grad)) MLP 64-128-128-10, batch 256",
    "jit SELU f32[1,000,000] (seed 004)",
    "jit SELU f32[256Mi]",
    "jit copy f32[256Mi] (device to device)",
    "↳ copy bandwidth (read + write)",
    "↳ SELU: fraction of copy bandwidth (copy time / SELU time)",
    "jit matmul bf16[4096,4096] @ bf16[4096,4096]",
    "↳ matmul throughput (2n³ / time)",
]


def test_gpu_selection_lists_the_issue_cases_without_loading_anything():
    got = _benchmarks("""
        import contextlib, io
        import run
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = run.main(["--gpu", "--list", "--backend", "cuda"])
        cpu = io.StringIO()
        with contextlib.redirect_stdout(cpu):
            run.main(["--gpu", "--list", "--backend", "cpu"])
        loaded = sorted(m for m in ("kiln", "jax") if m in sys.modules)
        print(json.dumps({"rc": rc, "gpu": out.getvalue().splitlines(), "cpu": cpu.getvalue().splitlines(),
                          "loaded": loaded}))
    """)
    assert got["rc"] == 0 and got["loaded"] == []
    assert got["gpu"] == GPU_SUITE
    # the same cases on the CPU, with small data
    assert len(got["cpu"]) == len(GPU_SUITE)
    assert "jit SELU f32[6Mi]" in got["cpu"] and "jit matmul bf16[1024,1024] @ bf16[1024,1024]" in got["cpu"]
    assert not any("256Mi" in line or "64Mi" in line for line in got["cpu"])


def test_benchmark_tables_are_consistent():
    got = _benchmarks("""
        import numpy as np
        import cases
        names = [c.name for c in cases.CASES]
        x = np.linspace(-3, 3, 101, dtype=np.float32)
        selu = cases._selu(np)(x)
        alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
        ref = scale * np.where(x > 0, x, alpha * np.exp(x) - alpha)
        print(json.dumps({
            "unique": len(names) == len(set(names)),
            "derived_inputs_known": all(i in names for d in cases.DERIVED for i in d.inputs),
            "cpu_max_bytes": 4 * max(cases.SIZES["cpu"]["stream"], cases.SIZES["cpu"]["normal"]),
            "gpu": cases.SIZES["gpu"],
            "selu_err": float(np.max(np.abs(selu - ref))),
        }))
    """)
    assert got["unique"] and got["derived_inputs_known"]
    assert got["cpu_max_bytes"] <= 64 * 2**20  # the CPU suite never allocates the GPU suite's 1 GiB arrays
    assert got["gpu"] == {"stream": 256 * 2**20, "normal": 64 * 2**20, "matmul": 4096}
    assert got["selu_err"] == 0.0
