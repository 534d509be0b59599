"""What every training script under examples/ needs besides its model: flags, the device, progress, a plot,
checkpoints and a summary line.

The scripts import it as a sibling module (``python examples/mlp.py`` puts examples/ on ``sys.path``).
tqdm and matplotlib come with ``pip install 'kiln[examples]'``; without them the scripts print plain
progress lines and skip the plot.

Checkpoints are ``.npz`` files: one array per leaf of the parameter pytree, stored under its path
(``kiln.tree_util.keystr``), plus a JSON record of the step, the paths, shapes and dtypes. Restoring takes
a template pytree (the freshly initialised parameters) and checks that the file matches it leaf for leaf.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

import kiln

_META_KEY = "__kiln_checkpoint__"


# -- flags and device -----------------------------------------------------------------------------

def make_parser(doc: str, *, steps: int | None = None, epochs: int | None = None, seed: int = 0,
                name: str) -> argparse.ArgumentParser:
    """A parser with the flags every example shares; pass ``steps`` or ``epochs`` (the default count)."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--backend", default=None,
                        help="backend to run on: cpu, cuda, rocm, tpu, gpu (default: the best available)")
    parser.add_argument("--device", type=int, default=0, help="index of the device in that backend (default 0)")
    if steps is not None:
        parser.add_argument("--steps", type=int, default=steps, help=f"training steps (default {steps})")
    if epochs is not None:
        parser.add_argument("--epochs", type=int, default=epochs, help=f"training epochs (default {epochs})")
    parser.add_argument("--seed", type=int, default=seed, help=f"random seed (default {seed})")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs") / name,
                        help=f"folder for the plot and the checkpoint (default runs/{name})")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the checkpoint in --out (its step count counts towards the total)")
    parser.add_argument("--no-plot", action="store_true", help="do not save the loss/accuracy plot")
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parses the flags, checks the counts, and selects the backend and device (``args.device_obj``)."""
    args = parser.parse_args(argv)
    for count in ("steps", "epochs"):
        if getattr(args, count, 1) < 1:
            parser.error(f"--{count} must be positive, got {getattr(args, count)}")
    try:
        devices = kiln.devices(args.backend)
    except kiln.BackendError as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")
    if not 0 <= args.device < len(devices):
        parser.error(f"--device {args.device} is out of range: the {devices[0].platform} backend has "
                     f"{len(devices)} device(s), numbered 0 to {len(devices) - 1}")
    if args.backend is not None:
        kiln.config.update("default_backend", args.backend)
    args.device_obj = devices[args.device]
    print(f"kiln {kiln.__version__}: running on {args.device_obj} ({args.device_obj.device_kind}), "
          f"seed {args.seed}")
    return args


# -- progress -------------------------------------------------------------------------------------

class Progress:
    """A tqdm bar on a terminal; otherwise (a pipe, a log file, a test) about ten plain lines."""

    def __init__(self, total: int, desc: str, start: int = 0):
        self.total, self.desc, self.done = total, desc, start
        self._bar = None
        if sys.stderr.isatty():
            with contextlib.suppress(ImportError):
                from tqdm import tqdm
                self._bar = tqdm(total=total, initial=start, desc=desc, unit=desc.rstrip("s"), dynamic_ncols=True)
        self._every = max(1, total // 10)

    def update(self, **metrics: float) -> None:
        """One step done; ``metrics`` (loss, accuracy, ...) are shown beside the bar."""
        self.done += 1
        shown = {k: f"{v:.4f}" for k, v in metrics.items()}
        if self._bar is not None:
            self._bar.set_postfix(shown, refresh=False)
            self._bar.update(1)
        elif self.done % self._every == 0 or self.done == self.total:
            fields = "  ".join(f"{k} {v}" for k, v in shown.items())
            print(f"  {self.desc} {self.done:>{len(str(self.total))}}/{self.total}  {fields}", flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class StepTimer:
    """Wall time of each step; the first one (trace + compile + run) is kept apart from the steady ones."""

    def __init__(self):
        self.first_s: float | None = None
        self.steady_s: list[float] = []

    @contextlib.contextmanager
    def step(self):
        start = time.perf_counter()
        yield
        elapsed = time.perf_counter() - start
        if self.first_s is None:
            self.first_s = elapsed
        else:
            self.steady_s.append(elapsed)

    def describe(self) -> str:
        steady = f"{statistics.median(self.steady_s) * 1e3:.3f} ms" if self.steady_s else "n/a"
        first = f"{self.first_s * 1e3:.1f} ms" if self.first_s is not None else "n/a"
        return f"first step (trace + compile + run) {first}, steady step {steady} (median of {len(self.steady_s)})"


# -- plot -----------------------------------------------------------------------------------------

def save_plot(path: pathlib.Path, curves: dict[str, list[float]], *, xlabel: str, title: str) -> pathlib.Path | None:
    """Saves one panel per curve as a PNG; returns its path, or None when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only: no window, no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no plot: matplotlib is not installed; pip install 'kiln[examples]')")
        return None
    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.6), squeeze=False)
    for ax, (name, values) in zip(axes[0], curves.items()):
        ax.plot(range(1, len(values) + 1), values)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# -- checkpoints ----------------------------------------------------------------------------------

def save_checkpoint(path: pathlib.Path, tree, *, step: int, extra: dict | None = None) -> pathlib.Path:
    """Writes ``tree``'s leaves (device arrays are copied to the host) and ``step`` to ``path`` atomically."""
    leaves_with_paths, _ = kiln.tree_util.tree_flatten_with_path(tree)
    arrays, leaves_meta = {}, []
    for i, (key_path, leaf) in enumerate(leaves_with_paths):
        host = np.asarray(leaf)
        # NumPy cannot store ml_dtypes' types (bfloat16, float8_*): their bytes go in, the dtype goes in the record.
        arrays[f"leaf{i}"] = host.reshape(-1).view(np.uint8) if host.dtype.kind == "V" else host
        leaves_meta.append({"path": kiln.tree_util.keystr(key_path), "shape": list(host.shape),
                            "dtype": str(host.dtype)})
    meta = {"format": 1, "step": step, "leaves": leaves_meta, "extra": extra or {}}
    arrays[_META_KEY] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A temporary file renamed into place: an interrupted save never leaves half a checkpoint behind.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes the file private; a checkpoint gets the usual mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def load_checkpoint(path: pathlib.Path, template):
    """Reads a checkpoint written by :func:`save_checkpoint` into the structure of ``template``.

    Returns ``(tree, step, extra)``; the leaves are host NumPy arrays. Raises ValueError naming the first
    leaf whose path, shape or dtype differs from the template's (e.g. a checkpoint of another model).
    """
    with np.load(path) as f:
        if _META_KEY not in f:
            raise ValueError(f"{path} is not a kiln example checkpoint (no {_META_KEY} record)")
        meta = json.loads(f[_META_KEY].tobytes())
        stored = [f[f"leaf{i}"] for i in range(len(meta["leaves"]))]
    wanted, treedef = kiln.tree_util.tree_flatten_with_path(template)
    if len(wanted) != len(stored):
        raise ValueError(f"{path} holds {len(stored)} arrays but the model has {len(wanted)}: it was saved by "
                         f"another model or configuration; delete it or pick another --out")
    leaves = []
    for (key_path, like), info, array in zip(wanted, meta["leaves"], stored):
        like = np.asarray(like)
        name = kiln.tree_util.keystr(key_path)
        if info["path"] != name or tuple(info["shape"]) != like.shape or info["dtype"] != str(like.dtype):
            raise ValueError(f"{path}: leaf {info['path']} {info['dtype']}{info['shape']} does not match the model's "
                             f"{name} {like.dtype}{list(like.shape)}; delete the checkpoint or pick another --out")
        leaves.append(array if array.dtype == like.dtype else array.view(like.dtype).reshape(like.shape))
    return kiln.tree_util.tree_unflatten(treedef, leaves), meta["step"], meta["extra"]


def resume(parser: argparse.ArgumentParser, args: argparse.Namespace, template):
    """``(tree, step, extra)`` from ``--out``'s checkpoint with ``--resume`` (in ``template``'s structure, on
    ``args.device_obj``), else ``(template, 0, {})``. A missing or mismatched checkpoint is a parser error."""
    if not args.resume:
        return template, 0, {}
    path = args.out / "checkpoint.npz"
    if not path.exists():
        parser.error(f"--resume: there is no checkpoint at {path}")
    try:
        tree, step, extra = load_checkpoint(path, template)
    except ValueError as e:  # a checkpoint of another model or configuration
        parser.error(f"--resume: {e}")
    return kiln.device_put(tree, args.device_obj), step, extra


# -- the end --------------------------------------------------------------------------------------

def summary(name: str, **fields) -> str:
    """The last line every example prints: ``summary: NAME key=value ...`` (tests read it)."""
    def show(v):
        return f"{v:.4f}" if isinstance(v, float) else str(v)
    line = f"summary: {name} " + " ".join(f"{k}={show(v)}" for k, v in fields.items())
    print(line, flush=True)
    return line
