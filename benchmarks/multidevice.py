"""Benchmarks that need 8 CPU devices: ``python benchmarks/multidevice.py CASE [--quick]`` (CASE: ``dp_mlp`` or
``psum_loop``) measures CASE on kiln and, where it is installed, on JAX, both in one fresh interpreter, their batches
interleaved as run.py interleaves the steady rows (``timing.interleaved``), and prints the seconds per step of each
framework as one JSON object on its last line.

The device count is fixed when a framework starts its CPU backend, so ``cases.py`` runs this script in a fresh
interpreter (:func:`run`) with ``KILN_NUM_CPU_DEVICES=8`` (kiln) and ``JAX_NUM_CPU_DEVICES=8`` (JAX) set, both on
the CPU. One process for both, not one per framework, so that both meet the machine in the same state (a process
started later may find it busier: the rows then measured the order of the processes).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from timing import Plan, interleaved  # noqa: E402

N_DEVICES = 8
DP_BATCH = 128 * N_DEVICES  # 128 examples per device
SYNC_EVERY = 8  # steps between waits (JAX's CPU collectives abort when too many executions queue up)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for k in ("KILN_PLATFORMS", "KILN_NUM_CPU_DEVICES", "JAX_PLATFORMS", "JAX_NUM_CPU_DEVICES", "KILN_DEFAULT_BACKEND"):
        env.pop(k, None)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "xla_force_host_platform_device_count" not in f]
    env.update(KILN_PLATFORMS="cpu", KILN_NUM_CPU_DEVICES=str(N_DEVICES), JAX_PLATFORMS="cpu",
               JAX_NUM_CPU_DEVICES=str(N_DEVICES), XLA_FLAGS=" ".join(flags))
    return env


_measured: dict[tuple[str, bool], dict[str, float]] = {}


def run(framework: str, case: str, quick: bool) -> float | None:
    """Seconds per step of ``case`` in ``framework`` ("kiln" or "jax"). One fresh process measures both frameworks;
    each of its numbers is handed out once, so that the next request for a framework (run.py's next round) starts
    a new process."""
    results = _measured.get((case, quick))
    if not results or framework not in results:
        cmd = [sys.executable, os.path.join(HERE, "multidevice.py"), case] + (["--quick"] if quick else [])
        proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"benchmarks/multidevice.py {case} failed (rc={proc.returncode}):\n"
                               f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        results = _measured[(case, quick)] = json.loads(proc.stdout.strip().splitlines()[-1])
    return results.pop(framework, None)


def _data_parallel_mlp_step(fw, top, quick: bool) -> tuple[Plan, int]:
    """The MLP train step of cases.py (784-512-512-10, value_and_grad + SGD) on a batch of 1024 split over 8
    devices (mesh axis 'data'); the parameters replicated on every device (out_shardings keeps them so). One call
    of the plan is SYNC_EVERY steps."""
    from cases import _mlp_train_step, mlp_host_data

    mesh = top.make_mesh((N_DEVICES,), ("data",))
    replicated = top.sharding.NamedSharding(mesh, top.sharding.PartitionSpec())
    split = top.sharding.NamedSharding(mesh, top.sharding.PartitionSpec("data"))
    params, x, labels = mlp_host_data(DP_BATCH)
    params = top.device_put(params, replicated)
    x, labels = top.device_put(x, split), top.device_put(labels, split)
    step = top.jit(_mlp_train_step(fw), out_shardings=(replicated, replicated))
    return _synced_steps(top, step, params, x, labels, quick)


def _synced_steps(top, step, params, x, labels, quick: bool) -> tuple[Plan, int]:
    """A plan whose call runs SYNC_EVERY training steps ``(loss, params) = step(params, x, labels)``, then waits
    for the loss."""
    def steps():
        nonlocal params
        for _ in range(SYNC_EVERY):
            loss, params = step(params, x, labels)
        top.block_until_ready(loss)
        return params
    number, repeat = (1, 3) if quick else (4, 15)
    return Plan(steps, top.block_until_ready, number, repeat, warmup=1), SYNC_EVERY


def _shard_map_mlp_step(fw, top, quick: bool) -> tuple[Plan, int]:
    """The MLP train step with the loss a shard_map over 8 devices (each device's mean loss on its 128 rows, pmean
    over the mesh axis 'data'), value_and_grad of it and the SGD update in one jit: the transpose of a shard_map
    whose parameters are replicated (one psum per parameter backward, JEP 17111). One call of the plan is
    SYNC_EVERY steps."""
    from cases import LEARNING_RATE, _mlp_loss, mlp_host_data

    P = top.sharding.PartitionSpec
    mesh = top.make_mesh((N_DEVICES,), ("data",))
    replicated, split = top.sharding.NamedSharding(mesh, P()), top.sharding.NamedSharding(mesh, P("data"))
    per_device = _mlp_loss(top.numpy)
    loss = top.shard_map(lambda p, x, y: top.lax.pmean(per_device(p, x, y), "data"), mesh=mesh,
                         in_specs=(P(), P("data"), P("data")), out_specs=P())

    def train_step(params, x, labels):
        value, grads = top.value_and_grad(loss)(params, x, labels)
        return value, top.tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)
    step = top.jit(train_step, out_shardings=(replicated, replicated))
    params, x, labels = mlp_host_data(DP_BATCH)
    params = top.device_put(params, replicated)
    x, labels = top.device_put(x, split), top.device_put(labels, split)
    return _synced_steps(top, step, params, x, labels, quick)


PSUM_STEPS = 100
PSUM_SIZE = 8 * 1024


def _shard_map_psum_loop(fw, top, quick: bool) -> tuple[Plan, int]:
    """A jitted shard_map over 8 devices whose body runs PSUM_STEPS all-reduces in a fori_loop (each device a
    1024-float block): the collectives inside one program, not dispatch."""
    from_p = top.sharding.PartitionSpec
    mesh = top.make_mesh((N_DEVICES,), ("data",))

    def body(x):
        return top.lax.fori_loop(0, PSUM_STEPS, lambda i, c: c * 0.5 + top.lax.psum(c, "data") * 0.0625, x)
    f = top.jit(top.shard_map(body, mesh=mesh, in_specs=from_p("data"), out_specs=from_p("data")))
    x = top.device_put(np.ones(PSUM_SIZE, np.float32), top.sharding.NamedSharding(mesh, from_p("data")))
    number, repeat = (4, 3) if quick else (10, 10)
    return Plan(lambda: f(x), top.block_until_ready, number, repeat, warmup=1), 1


CASES = {"dp_mlp": _data_parallel_mlp_step, "sm_mlp": _shard_map_mlp_step, "psum_loop": _shard_map_psum_loop}


def _frameworks() -> list:
    """(framework, its top-level module) for kiln and, where it is installed, JAX; each with 8 CPU devices."""
    from frameworks import load_jax, load_kiln

    import kiln
    loaded = [(load_kiln(), kiln)]
    jax_fw = load_jax()
    if jax_fw is not None:
        import jax
        loaded.append((jax_fw, jax))
    for fw, top in loaded:
        if len(top.devices()) < N_DEVICES:
            raise RuntimeError(f"{fw.name} has {len(top.devices())} devices, not {N_DEVICES}")
    return loaded


def main(argv: list[str]) -> int:
    case, quick = argv[0] if argv else "", "--quick" in argv[1:]
    if case not in CASES:
        print(f"usage: multidevice.py {'|'.join(CASES)} [--quick]; got {case!r}", file=sys.stderr)
        return 2
    plans, per_call, enter = {}, {}, {}
    for fw, top in _frameworks():
        enter[fw.name] = fw.enter
        fw.enter()
        plans[fw.name], per_call[fw.name] = CASES[case](fw, top, quick)
    seconds, _ = interleaved(plans, enter, rounds=1)
    print(json.dumps({name: s / per_call[name] for name, s in seconds.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
