"""Data-parallel training of a small MLP over every device, in one process or in several.

Each step takes a global batch laid out over a one-axis mesh (``NamedSharding(mesh, P("data"))``: each
device holds a slice of the rows) while the parameters are replicated (``P()``). ``kiln.jit`` with
``in_shardings``/``out_shardings`` states these layouts; XLA's partitioner computes each device's part
of the gradient and inserts the all-reduce that sums them. Nothing in the step mentions devices.

    python examples/data_parallel.py                          # every local device (KILN_NUM_CPU_DEVICES=4 for 4)
    python examples/data_parallel.py --processes 2 --devices 2  # 2 processes on localhost, 2 CPU devices each

With ``--processes N`` the script starts itself N times with ``KILN_COORDINATOR_ADDRESS``,
``KILN_NUM_PROCESSES``, ``KILN_PROCESS_ID`` and ``KILN_NUM_CPU_DEVICES`` set; each child calls
``kiln.distributed.initialize()``, builds its part of every batch with
``kiln.make_array_from_process_local_data`` and runs the same program. On several machines, start one
process per machine with those variables instead (the coordinator address of process 0).

``--check`` also trains the same model on one device and checks that the losses agree to 1e-5.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

import numpy as np

import kiln
import kiln.numpy as knp
from kiln.sharding import NamedSharding
from kiln.sharding import PartitionSpec as P

IN, HIDDEN, OUT = 8, 32, 1
NUM_POINTS = 1024
LEARNING_RATE = 0.1


def make_data() -> tuple[np.ndarray, np.ndarray]:
    """A regression problem from a fixed random teacher network (the same in every process)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((NUM_POINTS, IN)).astype(np.float32)
    teacher = rng.standard_normal((IN, OUT)).astype(np.float32)
    y = np.sin(x @ teacher) + 0.1 * rng.standard_normal((NUM_POINTS, OUT)).astype(np.float32)
    return x, y.astype(np.float32)


def init_params() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {"w1": (rng.standard_normal((IN, HIDDEN)) / np.sqrt(IN)).astype(np.float32),
            "b1": np.zeros(HIDDEN, np.float32),
            "w2": (rng.standard_normal((HIDDEN, OUT)) / np.sqrt(HIDDEN)).astype(np.float32),
            "b2": np.zeros(OUT, np.float32)}


def loss_fn(params, x, y):
    h = knp.tanh(x @ params["w1"] + params["b1"])
    pred = h @ params["w2"] + params["b2"]
    return knp.mean((pred - y) ** 2)


def train_step(params, x, y):
    loss, grads = kiln.value_and_grad(loss_fn)(params, x, y)
    params = kiln.tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)
    return params, loss


def batch_rows(step: int, batch: int) -> slice:
    start = (step * batch) % NUM_POINTS
    return slice(start, start + batch)


def train_data_parallel(steps: int, batch: int) -> tuple[list[float], list[float]]:
    """Train over every device of every process; returns the losses and the step times (seconds)."""
    mesh = kiln.make_mesh((kiln.device_count(),), ("data",))
    replicated, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    step_fn = kiln.jit(train_step, in_shardings=(replicated, rows, rows), out_shardings=(replicated, replicated))
    x_all, y_all = make_data()
    n, me = kiln.process_count(), kiln.process_index()
    mine = slice(me * batch // n, (me + 1) * batch // n)  # this process's rows of each global batch
    params = kiln.device_put(init_params(), replicated)
    losses, times = [], []
    for step in range(steps):
        t0 = time.perf_counter()
        sl = batch_rows(step, batch)
        x = kiln.make_array_from_process_local_data(rows, x_all[sl][mine])
        y = kiln.make_array_from_process_local_data(rows, y_all[sl][mine])
        params, loss = step_fn(params, x, y)
        losses.append(float(loss))  # replicated: every process can read it
        times.append(time.perf_counter() - t0)
    return losses, times


def train_one_device(steps: int, batch: int) -> list[float]:
    """The same training on this process's first device, without any sharding."""
    device = kiln.local_devices()[0]
    step_fn = kiln.jit(train_step)
    x_all, y_all = make_data()
    params = kiln.device_put(init_params(), device)
    losses = []
    for step in range(steps):
        sl = batch_rows(step, batch)
        params, loss = step_fn(params, kiln.device_put(x_all[sl], device), kiln.device_put(y_all[sl], device))
        losses.append(float(loss))
    return losses


def run(args: argparse.Namespace) -> int:
    if os.environ.get("KILN_PROCESS_ID") is not None:
        kiln.distributed.initialize()
    me = kiln.process_index()
    say = print if me == 0 else (lambda *a, **k: None)
    if args.batch % kiln.device_count():
        print(f"--batch {args.batch} must be a multiple of the {kiln.device_count()} devices", file=sys.stderr)
        return 2
    say(f"process {me} of {kiln.process_count()}: {kiln.local_device_count()} local devices, "
        f"{kiln.device_count()} in all: {kiln.devices()}")
    losses, times = train_data_parallel(args.steps, args.batch)
    for step, loss in enumerate(losses):
        if step % args.print_every == 0 or step == len(losses) - 1:
            say(f"step {step:5d}  loss {loss:.6f}")
    steady = times[min(5, len(times) - 1):]  # after compilation
    say(f"first step (compile) {times[0] * 1e3:.1f} ms; per step after it: median "
        f"{statistics.median(steady) * 1e3:.3f} ms over {len(steady)} steps "
        f"({kiln.process_count()} process(es) x {kiln.local_device_count()} device(s))")
    status = 0
    if args.check:
        ref = train_one_device(args.steps, args.batch)
        worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, ref))
        if worst <= 1e-5:
            say(f"OK: the losses equal the single-device run's (largest relative difference {worst:.2e})")
        else:
            print(f"MISMATCH in process {me}: losses differ from the single-device run by up to {worst:.2e} "
                  f"(relative)", file=sys.stderr)
            status = 1
    if kiln.distributed.is_initialized():
        kiln.distributed.shutdown()
    return status


def launch(args: argparse.Namespace, argv: list[str]) -> int:
    """Start this script ``--processes`` times on localhost as one distributed program; print process 0's
    output (and a failed process's)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    child_argv = [a for i, a in enumerate(argv) if a != "--processes" and (i == 0 or argv[i - 1] != "--processes")
                  and not a.startswith("--processes=")]
    env = dict(os.environ, KILN_COORDINATOR_ADDRESS=f"127.0.0.1:{port}", KILN_NUM_PROCESSES=str(args.processes),
               KILN_NUM_CPU_DEVICES=str(args.devices), KILN_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), *child_argv],
                              env={**env, "KILN_PROCESS_ID": str(i)}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for i in range(args.processes)]
    outputs, codes = [], []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=args.timeout)
            outputs.append(out)
            codes.append(p.returncode)
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        print(f"the processes did not finish within --timeout {args.timeout} s; killed them", file=sys.stderr)
        return 1
    sys.stdout.write(outputs[0])
    for i, (code, out) in enumerate(zip(codes, outputs)):
        if code != 0 and i != 0:
            sys.stdout.write(f"--- process {i} exited with {code}:\n{out}")
    return max(codes, key=abs)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=128, help="global batch size (rows per step, all devices)")
    parser.add_argument("--processes", type=int, default=1, help="run as this many processes on localhost")
    parser.add_argument("--devices", type=int, default=1, help="CPU devices per process (with --processes)")
    parser.add_argument("--print-every", type=int, default=20)
    parser.add_argument("--check", action="store_true", help="compare the losses with a single-device run")
    parser.add_argument("--timeout", type=float, default=300, help="seconds before the launcher kills the processes")
    args = parser.parse_args(argv)
    for name in ("steps", "batch", "processes", "devices", "print_every"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if args.processes > 1 and os.environ.get("KILN_PROCESS_ID") is None:
        return launch(args, argv)
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
