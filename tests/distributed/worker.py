"""One process of the 2-process tests in test_distributed.py (run as a script, never collected by pytest).

usage: worker.py SCENARIO   with KILN_COORDINATOR_ADDRESS, KILN_NUM_PROCESSES, KILN_PROCESS_ID set.
Prints "OK <process id>" at the end when every check passed.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

import kiln
import kiln.numpy as knp
from kiln.sharding import NamedSharding
from kiln.sharding import PartitionSpec as P


def expect_error(kind, match, fn, *args):
    try:
        fn(*args)
    except kind as e:
        assert match in str(e), f"expected {match!r} in {e}"
        return e
    raise AssertionError(f"{fn} did not raise {kind.__name__}")


def basic(pid: int, n: int) -> None:
    kiln.distributed.initialize(initialization_timeout=60)
    assert kiln.distributed.is_initialized()
    expect_error(RuntimeError, "already called", kiln.distributed.initialize)
    local = int(os.environ["KILN_NUM_CPU_DEVICES"])
    assert kiln.process_index() == pid and kiln.process_count() == n, (kiln.process_index(), kiln.process_count())
    assert kiln.device_count() == n * local and kiln.local_device_count() == local
    assert [d.process_index for d in kiln.devices()] == sorted(p for p in range(n) for _ in range(local))
    assert all(d.process_index == pid for d in kiln.local_devices())
    assert kiln.local_devices(process_index=1 - pid) == [d for d in kiln.devices() if d.process_index == 1 - pid]

    mesh = kiln.make_mesh((n * local,), ("data",))
    rows = 4 * n * local
    data = NamedSharding(mesh, P("data"))
    assert not data.is_fully_addressable and data.addressable_devices == set(kiln.local_devices())
    x_np = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) / 10
    w_np = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    mine = slice(pid * rows // n, (pid + 1) * rows // n)
    x = kiln.make_array_from_process_local_data(data, x_np[mine])
    assert x.shape == (rows, 3) and not x.is_fully_addressable and x.sharding is data
    assert len(x.addressable_shards) == local
    for s in x.addressable_shards:
        assert s.device.process_index == pid
        np.testing.assert_array_equal(np.asarray(s.data), x_np[s.index])
    expect_error(RuntimeError, "spans devices of other processes", np.asarray, x)
    assert repr(x) == f"Array(shape=({rows}, 3), dtype=float32)", repr(x)
    # global_shape given explicitly; a wrong one is an error
    x2 = kiln.make_array_from_process_local_data(data, x_np[mine], (rows, 3))
    assert x2.shape == (rows, 3)
    expect_error(ValueError, "not of global_shape", kiln.make_array_from_process_local_data, data, x_np[mine],
                 (rows + 1, 3))

    @kiln.jit
    def step(x, w):
        y = knp.tanh(x @ w)
        return y, (y * y).sum(), y.mean(axis=0)

    y, total, colmean = step(x, w_np)
    y_np = np.tanh(x_np @ w_np)
    np.testing.assert_allclose(float(total), (y_np * y_np).sum(), rtol=1e-5)  # a cross-process all-reduce
    np.testing.assert_allclose(np.asarray(colmean), y_np.mean(axis=0), rtol=1e-5, atol=1e-6)
    assert not y.is_fully_addressable and len(y.addressable_shards) == local
    for s in y.addressable_shards:
        np.testing.assert_allclose(np.asarray(s.data), y_np[s.index], rtol=1e-5, atol=1e-6)
    # a jitted function fed its own sharded output, and out_shardings replicating the result
    gather = kiln.jit(lambda v: v * 2, out_shardings=NamedSharding(mesh, P()))
    full = gather(y)
    assert full.is_fully_replicated and not full.is_fully_addressable
    np.testing.assert_allclose(np.asarray(full), 2 * y_np, rtol=1e-5, atol=1e-6)
    # eager operations on a cross-process array
    np.testing.assert_allclose(float((x * 2).sum()), 2 * x_np.sum(), rtol=1e-5)

    # make_array_from_callback: each process is asked for its own devices' pieces only
    asked = []
    z = kiln.make_array_from_callback((rows, 3), data, lambda idx: (asked.append(idx), x_np[idx])[1])
    assert len(asked) == local
    np.testing.assert_allclose(float(step(z, w_np)[1]), (y_np * y_np).sum(), rtol=1e-5)
    # make_array_from_single_device_arrays: one array per local device
    pieces = [kiln.device_put(x_np[data.addressable_devices_indices_map((rows, 3))[d]], d)
              for d in kiln.local_devices()]
    u = kiln.make_array_from_single_device_arrays((rows, 3), data, pieces)
    np.testing.assert_allclose(float(step(u, w_np)[1]), (y_np * y_np).sum(), rtol=1e-5)
    expect_error(ValueError, "addressable (this process's) devices", kiln.make_array_from_single_device_arrays,
                 (rows, 3), data, pieces[:1])
    # shard_map: an explicit psum across the processes' devices, and its gradient
    def sq_total(v):
        return kiln.shard_map(lambda b: kiln.lax.psum((b * b).sum(), "data"), mesh=mesh, in_specs=P("data"),
                              out_specs=P())(v)
    np.testing.assert_allclose(float(kiln.jit(sq_total)(x)), (x_np * x_np).sum(), rtol=1e-5)
    g = kiln.jit(kiln.grad(sq_total))(x)
    for s in g.addressable_shards:
        np.testing.assert_allclose(np.asarray(s.data), 2 * x_np[s.index], rtol=1e-5)
    # kiln.experimental's multihost helpers across the processes
    from kiln.experimental import mesh_utils, multihost_utils
    gathered = multihost_utils.process_allgather({"pid": np.array([pid, 10 * pid])})
    np.testing.assert_array_equal(gathered["pid"], np.array([[p, 10 * p] for p in range(n)]))
    np.testing.assert_array_equal(multihost_utils.broadcast_one_to_all(np.float32(pid + 5)), np.float32(5))
    multihost_utils.sync_global_devices("after the helpers")
    hybrid = mesh_utils.create_hybrid_device_mesh((local,), (n,))
    assert [d.process_index for d in hybrid.flat] == sorted(p for p in range(n) for _ in range(local))
    # a 2-d mesh whose 'model' axis is inside a process: a matmul split both ways
    if local == 2:
        mesh2 = kiln.make_mesh((n, local), ("data", "model"))
        xs = kiln.make_array_from_process_local_data(NamedSharding(mesh2, P("data", None)), x_np[mine])
        ws = kiln.device_put(np.ones((3, 8), np.float32), NamedSharding(mesh2, P(None, "model")))
        out = kiln.jit(lambda a, b: (a @ b).sum(axis=1), out_shardings=NamedSharding(mesh2, P()))(xs, ws)
        np.testing.assert_allclose(np.asarray(out), (x_np @ np.ones((3, 8), np.float32)).sum(axis=1), rtol=1e-5)
    kiln.distributed.shutdown()
    assert not kiln.distributed.is_initialized()


def lonely(pid: int, n: int) -> None:
    """Process 0 of 2 whose peer never starts: initialize must fail within its timeout."""
    t0 = time.monotonic()
    try:
        kiln.distributed.initialize(initialization_timeout=int(os.environ.get("INIT_TIMEOUT", "1")))
    except RuntimeError as e:
        print(f"ERROR after {time.monotonic() - t0:.1f} s: {type(e).__name__}: {e}", flush=True)
        assert not kiln.distributed.is_initialized()
        return
    raise AssertionError("initialize returned without the peer")


def dies(pid: int, n: int) -> None:
    """Process 1 exits in the middle of the run; process 0's next collective must fail with kiln's error."""
    kiln.distributed.initialize(initialization_timeout=60)
    mesh = kiln.make_mesh((n,), ("data",))
    data = NamedSharding(mesh, P("data"))
    x = kiln.make_array_from_process_local_data(data, np.ones((4, 2), np.float32))
    f = kiln.jit(lambda x: x.sum())
    assert float(f(x)) == 4 * n * 2
    if pid == 1:
        os._exit(0)  # gone without a word
    t0 = time.monotonic()
    try:
        for _ in range(1000):
            float(f(x))
            time.sleep(0.01)
    except RuntimeError as e:
        print(f"ERROR after {time.monotonic() - t0:.1f} s: {type(e).__name__}: {e}", flush=True)
        os._exit(0)  # skip the shutdown barrier: the peer is gone
    raise AssertionError("the collective kept working without the peer")


def dies_quietly(pid: int, n: int) -> None:
    """Process 1 exits while process 0 does no collective: the runtime notices the missing heartbeats and
    ends process 0 (it cannot be caught); process 0 must not hang."""
    kiln.distributed.initialize(initialization_timeout=60, heartbeat_timeout_seconds=3)
    assert kiln.device_count() == n
    if pid == 1:
        os._exit(0)
    print("waiting", flush=True)
    time.sleep(30)
    raise AssertionError("process 0 outlived its dead peer by 30 s")


if __name__ == "__main__":
    scenario = sys.argv[1]
    pid, n = int(os.environ["KILN_PROCESS_ID"]), int(os.environ["KILN_NUM_PROCESSES"])
    globals()[scenario](pid, n)
    print(f"OK {pid}", flush=True)
