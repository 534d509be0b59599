"""Benchmarks that need 8 CPU devices, one framework per process: ``python benchmarks/multidevice.py kiln|jax
CASE [--quick]`` (CASE: ``dp_mlp`` or ``psum_loop``) prints the seconds per step as one JSON object on its last
line.

The device count is fixed when a framework starts its CPU backend, so ``cases.py`` runs this script in a
fresh interpreter per framework with ``KILN_NUM_CPU_DEVICES=8`` (kiln) or
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` (JAX) set, both on the CPU (see :func:`run`).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
N_DEVICES = 8
DP_BATCH = 128 * N_DEVICES  # 128 examples per device
SYNC_EVERY = 8  # steps between waits (JAX's CPU collectives abort when too many executions queue up)


def _env(framework: str) -> dict[str, str]:
    env = dict(os.environ)
    for k in ("KILN_PLATFORMS", "KILN_NUM_CPU_DEVICES", "JAX_PLATFORMS", "KILN_DEFAULT_BACKEND"):
        env.pop(k, None)
    if framework == "kiln":
        env.update(KILN_PLATFORMS="cpu", KILN_NUM_CPU_DEVICES=str(N_DEVICES))
    else:
        flags = [f for f in env.get("XLA_FLAGS", "").split() if "xla_force_host_platform_device_count" not in f]
        env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=" ".join(flags + [
            f"--xla_force_host_platform_device_count={N_DEVICES}"]))
    return env


def run(framework: str, case: str, quick: bool) -> float | None:
    """Seconds per step of ``case`` in ``framework`` ("kiln" or "jax"), measured in a fresh process."""
    cmd = [sys.executable, os.path.join(HERE, "multidevice.py"), framework, case] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, env=_env(framework), capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmarks/multidevice.py {framework} failed (rc={proc.returncode}):\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]


def _data_parallel_mlp_step(top, quick: bool) -> float:
    """The MLP train step of cases.py (784-512-512-10, value_and_grad + SGD) on a batch of 1024 split over 8
    devices (mesh axis 'data'); the parameters replicated on every device (out_shardings keeps them so)."""
    sys.path.insert(0, HERE)
    from cases import _mlp_train_step, mlp_host_data
    from frameworks import Framework

    np_ = top.numpy
    fw = Framework(name=top.__name__, version="", device="", np=np_, jit=top.jit, put=top.device_put,
                   block=top.block_until_ready, tree_map=top.tree_util.tree_map, value_and_grad=top.value_and_grad)
    devices = top.devices()
    if len(devices) < N_DEVICES:
        raise RuntimeError(f"{top.__name__} has {len(devices)} devices, not {N_DEVICES}")
    mesh = top.make_mesh((N_DEVICES,), ("data",))
    replicated = top.sharding.NamedSharding(mesh, top.sharding.PartitionSpec())
    split = top.sharding.NamedSharding(mesh, top.sharding.PartitionSpec("data"))
    params, x, labels = mlp_host_data(DP_BATCH)
    params = top.device_put(params, replicated)
    x, labels = top.device_put(x, split), top.device_put(labels, split)
    step = top.jit(_mlp_train_step(fw), out_shardings=(replicated, replicated))

    def steps(n: int):
        nonlocal params
        loss = None
        for i in range(n):
            loss, params = step(params, x, labels)
            if (i + 1) % SYNC_EVERY == 0:
                top.block_until_ready(loss)
        top.block_until_ready((loss, params))

    steps(3)  # warm-up: compile
    number, repeat = (SYNC_EVERY, 3) if quick else (4 * SYNC_EVERY, 15)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        steps(number)
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


PSUM_STEPS = 100
PSUM_SIZE = 8 * 1024


def _shard_map_psum_loop(top, quick: bool) -> float:
    """A jitted shard_map over 8 devices whose body runs PSUM_STEPS all-reduces in a fori_loop (each device a
    1024-float block): the collectives inside one program, not dispatch."""
    import numpy as np
    from_p = top.sharding.PartitionSpec
    mesh = top.make_mesh((N_DEVICES,), ("data",))

    def body(x):
        return top.lax.fori_loop(0, PSUM_STEPS, lambda i, c: c * 0.5 + top.lax.psum(c, "data") * 0.0625, x)
    f = top.jit(top.shard_map(body, mesh=mesh, in_specs=from_p("data"), out_specs=from_p("data")))
    x = top.device_put(np.ones(PSUM_SIZE, np.float32), top.sharding.NamedSharding(mesh, from_p("data")))
    top.block_until_ready(f(x))
    number, repeat = (4, 3) if quick else (10, 10)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            y = f(x)
        top.block_until_ready(y)
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


CASES = {"dp_mlp": _data_parallel_mlp_step, "psum_loop": _shard_map_psum_loop}


def main(argv: list[str]) -> int:
    framework, case, quick = argv[0], argv[1] if len(argv) > 1 else "", "--quick" in argv[2:]
    if case not in CASES:
        print(f"usage: multidevice.py kiln|jax {'|'.join(CASES)} [--quick]; got case {case!r}", file=sys.stderr)
        return 2
    if framework == "kiln":
        import kiln as top
    elif framework == "jax":
        import jax as top
    else:
        print(f"usage: multidevice.py kiln|jax CASE [--quick]; got {framework!r}", file=sys.stderr)
        return 2
    print(json.dumps({"seconds": CASES[case](top, quick)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
