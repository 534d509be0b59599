"""kiln.experimental.multihost_utils' assert_equal, host-local <-> global arrays, reached_preemption_sync_point and
live_devices: in one process here, and across two processes of two CPU devices each (this file run as a script
by the tests below: one launch per scenario, each with a hard timeout, so that a hang fails instead of
stalling the run). NumPy gives the expected values."""
from __future__ import annotations

import os
import signal
import sys
import time

import launcher
import numpy as np
import pytest

import kiln
from kiln.experimental import multihost_utils as mu
from kiln.sharding import NamedSharding
from kiln.sharding import PartitionSpec as P

HERE = os.path.abspath(__file__)


# -- one process ----------------------------------------------------------------------------------------------

def test_public_names():
    assert {"assert_equal", "host_local_array_to_global_array", "global_array_to_host_local_array",
            "reached_preemption_sync_point", "live_devices", "ProcessFailureError"} <= set(mu.__all__)
    assert issubclass(mu.ProcessFailureError, kiln.KilnError)
    e = mu.ProcessFailureError({kiln.devices()[0]})
    assert e.failed_devices == {kiln.devices()[0]} and str(e).startswith("Devices failed: {")


def test_assert_equal_one_process():
    mu.assert_equal({"a": np.arange(3), "b": np.float32(np.nan), "c": kiln.device_put(np.ones(2))}, "same")
    mu.assert_equal([])


def test_host_local_is_global_in_one_process():
    mesh = kiln.make_mesh((1,), ("x",))
    local = {"a": np.arange(6, dtype=np.float32).reshape(3, 2), "b": np.float64(2.5)}
    g = mu.host_local_array_to_global_array(local, mesh, {"a": P("x"), "b": P()})
    assert g["a"].sharding == NamedSharding(mesh, P("x")) and g["a"].shape == (3, 2)
    assert g["b"].dtype == np.float32  # canonicalised, as kiln.device_put
    np.testing.assert_array_equal(np.asarray(g["a"]), local["a"])
    back = mu.global_array_to_host_local_array(g, mesh, P("x"))
    assert back["a"] is g["a"] and back["b"] is g["b"]  # host-local already
    host = mu.global_array_to_host_local_array(np.arange(4), mesh, P())
    np.testing.assert_array_equal(np.asarray(host), np.arange(4))
    # traced values pass through (jit, grad, vmap)
    f = kiln.jit(lambda v: mu.host_local_array_to_global_array(v, mesh, P()) * 2)
    np.testing.assert_array_equal(np.asarray(f(np.ones(3, np.float32))), np.full(3, 2.0))
    grad = kiln.grad(lambda v: (mu.global_array_to_host_local_array(v, mesh, P()) ** 2).sum())(np.arange(3.0))
    np.testing.assert_allclose(np.asarray(grad), 2 * np.arange(3.0))
    vm = kiln.vmap(lambda v: mu.host_local_array_to_global_array(v, mesh, P()) + 1)(np.zeros((2, 3)))
    np.testing.assert_array_equal(np.asarray(vm), np.ones((2, 3)))


def test_host_local_errors():
    mesh = kiln.make_mesh((1,), ("x",))
    with pytest.raises(ValueError, match="`None` is not a valid input to the pspecs argument. Please use "
                                         r"kiln.sharding.PartitionSpec\(\)"):
        mu.host_local_array_to_global_array(np.ones(2), mesh, None)
    with pytest.raises(ValueError, match="global_array_to_host_local_array: `None` is not a valid input"):
        mu.global_array_to_host_local_array({"a": np.ones(2)}, mesh, {"a": None})
    with pytest.raises(TypeError, match="pspecs must be kiln.sharding.PartitionSpecs"):
        mu.host_local_array_to_global_array(np.ones(2), mesh, "x")
    with pytest.raises(TypeError, match="global_mesh must be a kiln.sharding.Mesh, got str"):
        mu.host_local_array_to_global_array(np.ones(2), "mesh", P())
    with pytest.raises(ValueError, match="pspecs is not a pytree prefix of the inputs"):
        mu.host_local_array_to_global_array({"a": np.ones(2)}, mesh, {"b": P()})


def test_preemption_and_live_devices_in_one_process():
    assert mu.reached_preemption_sync_point(0) is False  # no distributed run: never (as JAX)
    with pytest.raises(RuntimeError, match="live_devices: the distributed runtime is not initialized; call "
                                           r"kiln.distributed.initialize\(...\) first"):
        with mu.live_devices(kiln.devices()):
            pass


# -- two processes ----------------------------------------------------------------------------------------------

def _launch(scenario: str, timeout: float = 120) -> list[tuple[int, str]]:
    return launcher.launch(HERE, scenario, devices=2, timeout=timeout)


@pytest.mark.backend("cpu")
def test_two_processes_helpers():
    """assert_equal, host-local <-> global arrays, live_devices across 2 processes (checked in _helpers)."""
    for rc, out in _launch("helpers"):
        assert rc == 0 and "OK" in out, out[-4000:]


@pytest.mark.backend("cpu")
def test_two_processes_preemption_sync_point():
    """Process 1 gets SIGTERM at step 3: both processes' reached_preemption_sync_point is True at one step after."""
    results = _launch("preempted")
    steps = []
    for rc, out in results:
        assert rc == 0 and "OK" in out, out[-4000:]
        steps.append(int(next(ln for ln in out.splitlines() if ln.startswith("SYNC")).split()[1]))
    assert steps[0] == steps[1] and steps[0] > 3, steps


# -- the processes' side (run as a script) ---------------------------------------------------------------------

def _expect(kind, match, fn, *args):
    try:
        fn(*args)
    except kind as e:
        assert match in str(e), f"expected {match!r} in {e}"
        return
    raise AssertionError(f"{fn} did not raise {kind.__name__}")


def _helpers(pid: int) -> None:
    # assert_equal: equal trees pass; a differing leaf, shape or structure fails in every process
    mu.assert_equal({"step": np.int32(7), "w": np.linspace(0, 1, 5)}, "same")
    _expect(AssertionError, f"differ. kiln.experimental.multihost_utils.assert_equal: the processes hold different "
            f"values at ['w']: process(es) [{1 - pid}] differ from this process ({pid})", mu.assert_equal,
            {"step": np.int32(7), "w": np.arange(3) + pid}, "differ")
    _expect(AssertionError, "the processes hold pytrees of different structures, shapes or dtypes", mu.assert_equal,
            np.zeros(2 + pid))
    mu.sync_global_devices("after assert_equal")

    # host-local -> global over a 1-d mesh: the processes' blocks concatenated
    mesh = kiln.make_mesh((4,), ("x",))
    local = (np.arange(8, dtype=np.float32).reshape(4, 2) + 100 * pid)
    both = np.concatenate([np.arange(8, dtype=np.float32).reshape(4, 2) + 100 * p for p in (0, 1)])
    g = mu.host_local_array_to_global_array({"d": local, "r": np.float32(3)}, mesh, {"d": P("x"), "r": P()})
    assert g["d"].shape == (8, 2) and not g["d"].is_fully_addressable and g["r"].shape == ()
    for s in g["d"].addressable_shards:
        np.testing.assert_array_equal(np.asarray(s.data), both[s.index])
    np.testing.assert_allclose(float(kiln.jit(lambda a: a.sum())(g["d"])), both.sum())
    assert mu.host_local_array_to_global_array(g["d"], mesh, P("x")) is g["d"]  # global already
    # ... and back: this process's block, over its own devices
    back = mu.global_array_to_host_local_array(g, mesh, {"d": P("x"), "r": P()})
    assert back["d"].is_fully_addressable and back["d"].shape == (4, 2)
    assert set(back["d"].sharding.device_set) == set(kiln.local_devices())
    np.testing.assert_array_equal(np.asarray(back["d"]), local)
    assert float(back["r"]) == 3
    # an array laid out otherwise is re-laid out first; a host value is sliced
    doubled = kiln.jit(lambda a: a * 2, out_shardings=NamedSharding(mesh, P()))(g["d"])
    np.testing.assert_array_equal(np.asarray(mu.global_array_to_host_local_array(doubled, mesh, P("x"))), 2 * local)
    np.testing.assert_array_equal(np.asarray(mu.global_array_to_host_local_array(both, mesh, P("x"))), local)

    # a (process, local) mesh split over processes only: each process's value replicated over its devices
    mesh2 = kiln.make_mesh((2, 2), ("proc", "local"))
    g2 = mu.host_local_array_to_global_array(local, mesh2, P("proc"))
    assert g2.shape == (8, 2)
    for s in g2.addressable_shards:
        np.testing.assert_array_equal(np.asarray(s.data), local)
    np.testing.assert_array_equal(np.asarray(mu.global_array_to_host_local_array(g2, mesh2, P("proc"))), local)

    # errors: a mesh whose processes' devices interleave; traced values across processes
    devs = kiln.devices()
    mixed = kiln.sharding.Mesh(np.array([devs[0], devs[2], devs[1], devs[3]]), ("x",))
    _expect(ValueError, "this process's devices do not form one block of the mesh",
            mu.host_local_array_to_global_array, local, mixed, P("x"))
    _expect(NotImplementedError, "outside traced functions only when the mesh spans several processes",
            kiln.jit(lambda v: mu.host_local_array_to_global_array(v, mesh, P("x"))), local)

    # no preemption: never a sync point
    assert not any(mu.reached_preemption_sync_point(step) for step in range(3))

    # live_devices: every device, in id order, the same in both processes; the block's own error propagates
    with mu.live_devices(kiln.devices()) as alive:
        assert alive == sorted(kiln.devices(), key=lambda d: d.id)
        mu.assert_equal(np.array([d.id for d in alive]))
    _expect(KeyError, "inside", _raise_inside_live_devices)
    other = [d for d in kiln.devices() if d.process_index != pid]
    _expect(ValueError, "none of the devices given belongs to this process", _enter_live_devices, other)
    mu.sync_global_devices("done")
    kiln.distributed.shutdown()


def _raise_inside_live_devices() -> None:
    with mu.live_devices(kiln.devices()):
        raise KeyError("inside")


def _enter_live_devices(devices) -> None:
    with mu.live_devices(devices):
        pass


def _preempted(pid: int) -> None:
    for step in range(200):
        if pid == 1 and step == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # the scheduler's preemption notice, to one process
        if mu.reached_preemption_sync_point(step):
            print(f"SYNC {step}", flush=True)
            break
        time.sleep(0.05)
    else:
        raise AssertionError("no preemption sync point within 200 steps")
    mu.sync_global_devices("saved")
    kiln.distributed.shutdown()


if __name__ == "__main__":
    kiln.distributed.initialize(initialization_timeout=60)
    {"helpers": _helpers, "preempted": _preempted}[sys.argv[1]](int(os.environ["KILN_PROCESS_ID"]))
    print(f"OK {os.environ['KILN_PROCESS_ID']}", flush=True)
