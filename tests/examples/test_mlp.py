"""examples/mlp.py: learns the digits, saves a plot and a checkpoint, resumes exactly, rejects bad flags.

Most runs call the script's ``main(argv)`` in this process (a subprocess pays seconds of imports each
time); one runs it as a program, as a user does.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

pytest.importorskip("sklearn")  # the digits come from scikit-learn (the kiln[examples] extra)


def _load(name: str):
    if str(EXAMPLES) not in sys.path:  # the scripts import their sibling _training, as `python examples/x.py` does
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mlp = _load("mlp")


def _backend() -> tuple[str, ...]:
    backend = os.environ.get("KILN_TEST_BACKEND")  # run the example on the backend the suite is testing
    return ("--backend", backend) if backend else ()


def _main(capsys, *args: str) -> tuple[int, str, str]:
    """Runs mlp.main in this process: (exit status, stdout, stderr); a flag error's SystemExit gives its code."""
    capsys.readouterr()
    try:
        rc = mlp.main([*args, *_backend()])
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def _summary(out: str) -> dict[str, str]:
    line = [line for line in out.splitlines() if line.startswith("summary: mlp ")][-1]
    return dict(field.split("=", 1) for field in line.split()[2:])


def _checkpoint(path: pathlib.Path) -> tuple[list[np.ndarray], dict]:
    with np.load(path) as f:
        meta = json.loads(f["__kiln_checkpoint__"].tobytes())
        return [f[f"leaf{i}"] for i in range(len(meta["leaves"]))], meta


def test_mlp_learns_and_resume_continues_exactly(tmp_path, capsys):
    """4 epochs straight reach a reliable floor; 2 epochs + --resume to 4 end with the same parameters, Adam
    state and history."""
    common = ("--batch-size", "64", "--seed", "0")
    rc, out, err = _main(capsys, "--epochs", "4", "--out", str(tmp_path / "straight"), *common, "--min-accuracy", "0.9")
    assert rc == 0, f"stdout:\n{out}\nstderr:\n{err}"
    fields = _summary(out)
    assert float(fields["test_accuracy"]) >= 0.9 and fields["epochs"] == "4" and fields["steps"] == str(4 * 22)
    assert re.search(r"epochs 4/4 +loss \d\.\d{4} +test_accuracy 0\.9\d{3}", out), out
    assert "step times: first step (trace + compile + run)" in out
    assert (tmp_path / "straight" / "mlp.png").stat().st_size > 1000
    assert "{ lambda" not in out  # the program is printed only with --show-program

    rc, out, err = _main(capsys, "--epochs", "2", "--out", str(tmp_path / "resumed"), "--no-plot", *common,
                         "--min-accuracy", "0")
    assert rc == 0, err
    assert not (tmp_path / "resumed" / "mlp.png").exists()  # --no-plot
    rc, out, err = _main(capsys, "--epochs", "4", "--out", str(tmp_path / "resumed"), "--resume", *common)
    assert rc == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert "resumed from" in out and "epoch 2, step 44" in out
    assert "epochs 3/4" in out and "epochs 1/4" not in out

    want, want_meta = _checkpoint(tmp_path / "straight" / "checkpoint.npz")
    got, got_meta = _checkpoint(tmp_path / "resumed" / "checkpoint.npz")
    assert got_meta["step"] == want_meta["step"] == 88 and got_meta["leaves"] == want_meta["leaves"]
    assert len(got) == 6 + 1 + 12  # 3 Dense layers' (W, b), Adam's count, mu and nu
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_meta["extra"]["history"]["loss"], want_meta["extra"]["history"]["loss"], rtol=1e-5)
    assert _summary(out)["test_accuracy"] == fields["test_accuracy"]

    # Resuming a finished run trains nothing and reports the same result.
    rc, out, err = _main(capsys, "--epochs", "3", "--out", str(tmp_path / "resumed"), "--resume", "--no-plot", *common,
                         "--min-accuracy", "0")
    assert rc == 0 and "nothing to train: the checkpoint is at epoch 4, --epochs is 3" in out, out
    assert _summary(out)["test_accuracy"] == fields["test_accuracy"]


def test_mlp_program_show_program_and_accuracy_floor(tmp_path):
    """As a program: --show-program prints the IR and StableHLO; below --min-accuracy it exits 1."""
    proc = subprocess.run([sys.executable, str(EXAMPLES / "mlp.py"), "--epochs", "1", "--batch-size", "256",
                           "--show-program", "--min-accuracy", "0.999", "--no-plot", "--out", str(tmp_path),
                           *_backend()], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "kiln IR of the training step" in proc.stdout and "{ lambda" in proc.stdout
    assert "StableHLO of the training step" in proc.stdout and "func.func public @main" in proc.stdout
    assert "FAILED: test accuracy" in proc.stderr and "below the floor 0.999" in proc.stderr
    assert "summary: mlp test_accuracy=" in proc.stdout and (tmp_path / "checkpoint.npz").exists()


def test_mlp_bad_flags(tmp_path, capsys):
    for args, message in ((("--epochs", "0"), "--epochs must be positive, got 0"),
                          (("--device", "99"), "--device 99 is out of range"),
                          (("--batch-size", "0"), "--batch-size must be positive, got 0"),
                          (("--learning-rate", "-1"), "--learning-rate must be positive, got -1.0"),
                          (("--batch-size", "5000"), "--batch-size 5000 is larger than the 1438 training images"),
                          (("--resume", "--out", str(tmp_path / "none")), "--resume: there is no checkpoint at")):
        rc, _, err = _main(capsys, "--out", str(tmp_path / "out"), *args)
        assert rc == 2 and message in err, (args, err)
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        mlp.main(["--backend", "nosuch"])
    assert e.value.code == 2 and "Unknown backend 'nosuch'" in capsys.readouterr().err


def test_mlp_resume_rejects_another_models_checkpoint(tmp_path, capsys):
    import _training

    _training.save_checkpoint(tmp_path / "checkpoint.npz", {"w": np.zeros(3, np.float32)}, step=1)
    rc, _, err = _main(capsys, "--resume", "--out", str(tmp_path))
    assert rc == 2 and "--resume:" in err and "holds 1 arrays but the model has 19" in err, err
