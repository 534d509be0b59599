"""The runnable examples under examples/ run to completion and print what they promise."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent


def _run_example(name: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if env.get("KILN_TEST_BACKEND"):  # run the example on the backend the suite is testing
        args = (*args, "--backend", env["KILN_TEST_BACKEND"])
    return subprocess.run([sys.executable, str(REPO / "examples" / name), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def linear_regression_400(tmp_path_factory):
    """One run of 400 steps (the checks of its output, and the run a resumed one must end as): its process and
    output directory."""
    out = tmp_path_factory.mktemp("linear_regression_400")
    return _run_example("linear_regression.py", "--steps", "400", "--out", str(out)), out


def test_linear_regression(linear_regression_400):
    proc, out_dir = linear_regression_400
    assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    out = proc.stdout
    assert "running on" in out and "seed 42" in out  # the device, from examples/_training.py
    assert "{ lambda" in out  # the kiln IR of the update step
    assert "stablehlo." in out and "func.func public @main" in out  # its StableHLO
    assert "steps 400/400  loss" in out and "fitted: weight" in out and "step times: first step" in out
    assert "OK: the fit is within 0.2 of the truth" in out
    assert out.splitlines()[-1].startswith("summary: linear_regression weight=")
    assert "steps=400" in out.splitlines()[-1]
    assert (out_dir / "linear_regression.png").exists() and (out_dir / "checkpoint.npz").exists()


def test_linear_regression_resume(tmp_path, linear_regression_400):
    """200 steps (too few: exit 1 with the reason) then --resume to 400 ends where 400 straight steps end."""
    import numpy as np

    proc = _run_example("linear_regression.py", "--steps", "200", "--out", str(tmp_path / "resumed"), "--no-plot")
    assert proc.returncode == 1 and "FAILED: the fit" in proc.stderr and "not within 0.2" in proc.stderr, proc.stderr
    assert "summary: linear_regression" in proc.stdout
    assert not (tmp_path / "resumed" / "linear_regression.png").exists()
    proc = _run_example("linear_regression.py", "--steps", "400", "--out", str(tmp_path / "resumed"), "--resume")
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "at step 200" in proc.stdout and "steps 400/400" in proc.stdout and "steps  20/400" not in proc.stdout
    straight, straight_out = linear_regression_400
    assert straight.returncode == 0, straight.stderr
    with np.load(tmp_path / "resumed" / "checkpoint.npz") as got, \
            np.load(straight_out / "checkpoint.npz") as want:
        assert sorted(got) == sorted(want) == ["__kiln_checkpoint__", "leaf0", "leaf1"]  # weight, bias
        for key in ("leaf0", "leaf1"):
            np.testing.assert_allclose(got[key], want[key], rtol=1e-5)


def test_linear_regression_bad_arguments(tmp_path):
    proc = _run_example("linear_regression.py", "--steps", "0")
    assert proc.returncode == 2 and "--steps must be positive, got 0" in proc.stderr, proc.stderr
    proc = _run_example("linear_regression.py", "--resume", "--out", str(tmp_path))
    assert proc.returncode == 2 and "--resume: there is no checkpoint at" in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "linear_regression.py"), "--backend", "nosuch"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Unknown backend 'nosuch'" in proc.stderr, proc.stderr


def test_benchmarks_smoke():
    """benchmarks/run.py --quick runs every benchmark once and prints the table (kiln only, unless jax is there)."""
    import importlib.util

    jax_missing = importlib.util.find_spec("jax") is None
    cmd = [sys.executable, str(REPO / "benchmarks" / "run.py"), "--quick", "--rounds", "1"]
    proc = subprocess.run(cmd + ([] if jax_missing else ["--no-jax"]), cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    out = proc.stdout
    assert "| benchmark " in out and "| kiln/jax |" in out
    for row in ("jit dispatch: f32[4] add", "eager matmul f32[64,64]", "trace+lower: 1,000-op chain",
                "compile: 1,000-op chain", "MLP forward+loss", "MLP train step: stax + adam",
                "GCN epoch (seed 003)",
                "jit copy f32[6Mi] (device to device)"):  # (measured in the one-arena child process: run.py)
        assert row in out, row
    assert ("jax not installed" in out) == jax_missing


def test_benchmark_op_counts(monkeypatch):
    """benchmarks/hlo_ops.py counts StableHLO operations (no terminators) and optimized HLO instructions over all
    computations (no parameters; a fusion once, its body's instructions too), and kernels outside fusions."""
    import numpy as np

    import kiln
    import kiln.numpy as knp

    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import hlo_ops

    lowered = kiln.jit(lambda x: knp.sum(knp.sin(x) * 2.0)).lower(np.ones(4, np.float32))
    shlo = hlo_ops.stablehlo_counts(lowered.as_text())
    assert shlo == {"stablehlo.sine": 1, "stablehlo.constant": 2, "stablehlo.broadcast_in_dim": 1,
                    "stablehlo.multiply": 1, "stablehlo.reduce": 1}, shlo
    hlo, kernels = hlo_ops.hlo_counts(lowered.compile().as_text())
    # (the reducer's add, then in the fusion sine, 2 constants, broadcast, multiply, reduce; the fusion itself)
    assert sum(hlo.values()) == 8 and hlo["fusion"] == 1 and hlo["sine"] == 1 and "parameter" not in hlo, hlo
    assert kernels == 1


def test_benchmarks_warn_about_mixed_checkouts(monkeypatch):
    """run.py says so when kiln comes from one checkout and its implementation from another (an editable install
    of another checkout, PYTHONPATH pointing at this one): its numbers would measure the other checkout."""
    import importlib.util

    import kiln.frontend

    spec = importlib.util.spec_from_file_location("kiln_bench_run", REPO / "benchmarks" / "run.py")
    run = importlib.util.module_from_spec(spec)
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec.loader.exec_module(run)
    assert run._mixed_checkouts() is None
    monkeypatch.setattr(kiln.frontend, "__file__", "/elsewhere/checkout/frontend/__init__.py")
    message = run._mixed_checkouts()
    assert message is not None and "kiln.frontend from /elsewhere/checkout/frontend" in message
    assert "pip install -e ." in message


def _run_data_parallel(*args: str, devices: str = "2") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env.update(KILN_NUM_CPU_DEVICES=devices, KILN_PLATFORMS="cpu")
    return subprocess.run([sys.executable, str(REPO / "examples" / "data_parallel.py"), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_data_parallel_matches_one_device():
    """Two devices in one process, then two processes on localhost (one device each): the losses equal the
    single-device run's to 1e-5 (the example's --check)."""
    for args, where in ((("--steps", "12", "--check"), "1 process(es) x 2 device(s)"),
                        (("--steps", "12", "--check", "--processes", "2", "--timeout", "120"),
                         "2 process(es) x 1 device(s)")):
        proc = _run_data_parallel(*args)
        assert proc.returncode == 0, f"{args}: rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        assert "step    11  loss" in proc.stdout and where in proc.stdout, proc.stdout
        assert "OK: the losses equal the single-device run's" in proc.stdout, proc.stdout


def test_data_parallel_bad_arguments():
    proc = _run_data_parallel("--batch", "7")
    assert proc.returncode == 2 and "--batch 7 must be a multiple of the 2 devices" in proc.stderr, proc.stderr
    proc = _run_data_parallel("--processes", "0")
    assert proc.returncode == 2 and "--processes must be positive, got 0" in proc.stderr, proc.stderr
