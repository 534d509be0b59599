"""examples/_training.py, the helpers every training example shares: checkpoints, progress lines, the summary line,
the step timer, the plot and the flags."""
from __future__ import annotations

import importlib.util
import json
import pathlib
from typing import NamedTuple

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.numpy as knp

REPO = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("examples_training", REPO / "examples" / "_training.py")
_training = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_training)


class State(NamedTuple):
    count: object
    scale: object


def _tree():
    return {
        "dense": (knp.arange(6, dtype=knp.float32).reshape(2, 3), knp.array([0.5, -1.5], dtype=knp.bfloat16)),
        "state": State(count=knp.array(7, dtype=knp.int32), scale=np.float32(2.5)),  # 0-d leaves, device and host
        "mask": np.array([True, False, True]),
        "half": np.array([[1.0, 2.0]], dtype=np.float16),
    }


def test_checkpoint_round_trip(tmp_path):
    tree = _tree()
    path = _training.save_checkpoint(tmp_path / "sub" / "ck.npz", tree, step=42, extra={"epoch": 3, "losses": [1.5]})
    assert path == tmp_path / "sub" / "ck.npz" and path.exists()
    assert [p.name for p in path.parent.iterdir()] == ["ck.npz"]  # no temporary file left behind
    template = kiln.tree_util.tree_map(lambda x: np.zeros_like(np.asarray(x)), tree)
    restored, step, extra = _training.load_checkpoint(path, template)
    assert step == 42 and extra == {"epoch": 3, "losses": [1.5]}
    assert kiln.tree_util.tree_structure(restored) == kiln.tree_util.tree_structure(tree)
    for got, want in zip(kiln.tree_util.tree_leaves(restored), kiln.tree_util.tree_leaves(tree)):
        want = np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
    assert restored["dense"][1].dtype == ml_dtypes.bfloat16 and restored["state"].count.shape == ()


def test_checkpoint_overwrites_and_defaults(tmp_path):
    path = tmp_path / "ck.npz"
    _training.save_checkpoint(path, [np.ones(2, np.float32)], step=1)
    _training.save_checkpoint(path, [np.full(2, 3.0, np.float32)], step=2)
    restored, step, extra = _training.load_checkpoint(path, [np.zeros(2, np.float32)])
    assert step == 2 and extra == {}
    np.testing.assert_array_equal(restored[0], [3.0, 3.0])


@pytest.mark.parametrize("template, message", [
    ({"a": np.zeros(3, np.float32)}, "holds 2 arrays but the model has 1"),
    ({"a": np.zeros(4, np.float32), "b": np.zeros((), np.int32)},
     "leaf ['a'] float32[3] does not match the model's ['a'] float32[4]"),
    ({"a": np.zeros(3, ml_dtypes.bfloat16), "b": np.zeros((), np.int32)},
     "leaf ['a'] float32[3] does not match the model's ['a'] bfloat16[3]"),
    ({"x": np.zeros(3, np.float32), "y": np.zeros((), np.int32)},
     "leaf ['a'] float32[3] does not match the model's ['x'] float32[3]"),
])
def test_checkpoint_mismatched_template(tmp_path, template, message):
    path = _training.save_checkpoint(tmp_path / "ck.npz", {"a": np.zeros(3, np.float32), "b": np.int32(1)}, step=0)
    with pytest.raises(ValueError) as e:
        _training.load_checkpoint(path, template)
    assert message in str(e.value) and str(path) in str(e.value)
    assert "delete" in str(e.value) and "--out" in str(e.value)  # says how to fix it


def test_checkpoint_rejects_a_plain_npz(tmp_path):
    path = tmp_path / "weights.npz"
    np.savez(path, w=np.zeros(3))
    with pytest.raises(ValueError, match=r"weights.npz is not a kiln example checkpoint \(no __kiln_checkpoint__"):
        _training.load_checkpoint(path, {"w": np.zeros(3)})


def test_checkpoint_record_is_readable_json(tmp_path):
    path = _training.save_checkpoint(tmp_path / "ck.npz", {"w": np.zeros((2, 3), ml_dtypes.bfloat16)}, step=5)
    with np.load(path) as f:
        meta = json.loads(f["__kiln_checkpoint__"].tobytes())
    assert meta == {"format": 1, "step": 5, "extra": {},
                    "leaves": [{"path": "['w']", "shape": [2, 3], "dtype": "bfloat16"}]}


def test_progress_plain_lines(capsys):
    # Under pytest stderr is not a terminal: about ten plain lines instead of a tqdm bar.
    with _training.Progress(20, "steps") as progress:
        for i in range(20):
            progress.update(loss=1.0 / (i + 1), acc=0.5)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 10
    assert lines[0] == "  steps  2/20  loss 0.5000  acc 0.5000"
    assert lines[-1] == "  steps 20/20  loss 0.0500  acc 0.5000"


def test_progress_resumed_and_uneven(capsys):
    progress = _training.Progress(7, "epochs", start=4)  # resumed at epoch 4 of 7; prints every epoch
    for _ in range(3):
        progress.update(loss=0.25)
    progress.close()
    assert capsys.readouterr().out.splitlines() == ["  epochs 5/7  loss 0.2500", "  epochs 6/7  loss 0.2500",
                                                    "  epochs 7/7  loss 0.2500"]


def test_summary_format(capsys):
    line = _training.summary("mlp", test_accuracy=0.97777, epochs=15, device="cpu", ok=True)
    assert line == "summary: mlp test_accuracy=0.9778 epochs=15 device=cpu ok=True"
    assert capsys.readouterr().out == line + "\n"


def test_step_timer():
    timer = _training.StepTimer()
    assert timer.describe() == "first step (trace + compile + run) n/a, steady step n/a (median of 0)"
    for _ in range(3):
        with timer.step():
            pass
    assert timer.first_s is not None and len(timer.steady_s) == 2
    assert timer.describe().startswith("first step (trace + compile + run) ")
    assert timer.describe().endswith("(median of 2)")


def test_save_plot(tmp_path):
    pytest.importorskip("matplotlib")
    path = _training.save_plot(tmp_path / "plots" / "p.png", {"loss": [3.0, 2.0, 1.0], "accuracy": [0.1, 0.5, 0.9]},
                               xlabel="epoch", title="t")
    assert path == tmp_path / "plots" / "p.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_flags(tmp_path, capsys):
    parser = _training.make_parser("Doc line.\n\nMore.", epochs=3, name="thing")
    args = _training.parse(parser, ["--out", str(tmp_path), "--backend", "cpu"])
    assert args.epochs == 3 and args.seed == 0 and not args.resume and not args.no_plot
    assert args.device_obj == kiln.devices("cpu")[0]
    assert "running on" in capsys.readouterr().out
    assert _training.make_parser("d", steps=5, name="x").parse_args([]).out == pathlib.Path("runs") / "x"
    for argv, message in ((["--epochs", "0"], "--epochs must be positive, got 0"),
                          (["--device", "99", "--backend", "cpu"], "--device 99 is out of range: the cpu backend has"),
                          (["--backend", "nosuch"], "Unknown backend 'nosuch'")):
        with pytest.raises(SystemExit) as e:
            _training.parse(parser, argv)
        assert e.value.code == 2 and message in capsys.readouterr().err, argv


def test_checkpoint_file_mode_follows_the_umask(tmp_path):
    """The temporary file a checkpoint is written to is private; the checkpoint itself gets the usual mode."""
    import os
    old = os.umask(0o022)
    try:
        path = _training.save_checkpoint(tmp_path / "ck.npz", {"a": np.zeros(2)}, step=1)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["ck.npz"]  # no temporary file left behind
