"""kiln.distributed: two processes on localhost over PJRT's distributed runtime (CPU, gloo), and the
error paths. Each pair runs tests/distributed/worker.py; every subprocess has a hard timeout and is
killed when it passes it, so a hang fails a test instead of stalling the run."""
from __future__ import annotations

import concurrent.futures
import os

import launcher
import numpy as np
import pytest

import kiln

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.py")


def launch(scenario: str, ids=(0, 1), num: int = 2, devices: int = 1, timeout: float = 120, **kwargs) -> list:
    """Run the worker's ``scenario`` as processes ``ids`` of ``num``; returns (rc, output) per process."""
    return launcher.launch(WORKER, scenario, ids=ids, num=num, devices=devices, timeout=timeout, **kwargs)


pytestmark = pytest.mark.backend("cpu")  # the processes use CPU devices (gloo collectives)


def test_two_processes_run_one_sharded_program():
    """Both processes see 4 devices (2 each), build a global array from their local rows, and run jitted steps
    whose reductions cross processes; the values match NumPy (checked in worker.basic)."""
    for rc, out in launch("basic", devices=2):
        assert rc == 0 and "OK" in out, out[-4000:]


def test_peer_that_never_arrives():
    """Process 0 alone (and process 1 alone, with no coordinator): initialize raises kiln's error soon
    after initialization_timeout, instead of waiting forever."""
    # The two lonely processes wait at the same time (most of this test is their waiting), each with a
    # coordinator port of its own: process 1 must not find process 0's coordinator.
    ports = [launcher.free_port(), launcher.free_port()]
    while ports[1] == ports[0]:
        ports[1] = launcher.free_port()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(launch, "lonely", ids=(pid,), timeout=60, port=ports[pid]) for pid in (0, 1)]
        results = [run.result() for run in runs]
    for pid, ((rc, out),) in enumerate(results):
        assert rc == 0 and f"OK {pid}" in out, out[-3000:]
        line = next(ln for ln in out.splitlines() if ln.startswith("ERROR after"))
        assert "DistributedError" in line and f"process {pid} of 2 could not connect" in line, line
        assert "within initialization_timeout=1 s" in line and "did not all arrive" in line, line
        assert float(line.split()[2]) < 30, line


def test_peer_that_dies_mid_run():
    """Process 1 exits between steps: process 0's next step fails at once with kiln's error naming the cause."""
    (rc0, out0), (rc1, out1) = launch("dies", timeout=60)
    assert rc1 == 0, out1[-3000:]
    assert rc0 == 0, out0[-3000:]
    line = next(ln for ln in out0.splitlines() if ln.startswith("ERROR after"))
    assert "DistributedError" in line and "another process of the distributed run probably died" in line, line


def test_peer_that_dies_while_idle_ends_the_others():
    """Process 1 exits while process 0 runs no collective: the runtime misses its heartbeats and ends process 0
    (as JAX's runtime does; nothing catches this in Python) within a few heartbeat timeouts, not a hang."""
    (rc0, out0), (rc1, _) = launch("dies_quietly", timeout=60)
    assert rc1 == 0
    assert rc0 != 0 and "outlived its dead peer" not in out0, out0[-3000:]
    assert "stopped sending heartbeats" in out0 or "coordination service" in out0, out0[-3000:]


# -- error paths in this process (they raise before connecting to anything) ----------------------------

def _init_error(kind, match, monkeypatch=None, **kwargs):
    with pytest.raises(kind) as info:
        kiln.distributed.initialize(**kwargs)
    assert match in str(info.value), str(info.value)
    assert not kiln.distributed.is_initialized()
    return info.value


def test_initialize_argument_errors(monkeypatch):
    for var in ("KILN_COORDINATOR_ADDRESS", "KILN_NUM_PROCESSES", "KILN_PROCESS_ID", "KILN_LOCAL_DEVICE_IDS"):
        monkeypatch.delenv(var, raising=False)
    e = _init_error(ValueError, "coordinator_address (or KILN_COORDINATOR_ADDRESS), num_processes (or "
                    "KILN_NUM_PROCESSES), process_id (or KILN_PROCESS_ID) must be given")
    assert isinstance(e, kiln.KilnError)
    _init_error(ValueError, "process_id (or KILN_PROCESS_ID) must be given", coordinator_address="h:1", num_processes=2)
    _init_error(ValueError, "coordinator_address must be 'host:port'", coordinator_address="nohost",
                num_processes=2, process_id=0)
    _init_error(ValueError, "process_id must be in 0..1 (num_processes=2), got 2", coordinator_address="h:1",
                num_processes=2, process_id=2)
    _init_error(ValueError, "num_processes must be at least 1, got 0", coordinator_address="h:1", num_processes=0,
                process_id=0)
    _init_error(ValueError, "num_processes must be an int, got str '2'", coordinator_address="h:1",
                num_processes="2", process_id=0)
    _init_error(ValueError, "initialization_timeout must be a positive number of seconds, got 0",
                coordinator_address="h:1", num_processes=2, process_id=0, initialization_timeout=0)
    _init_error(ValueError, "local_device_ids must be a non-negative int or a non-empty sequence",
                coordinator_address="h:1", num_processes=2, process_id=0, local_device_ids=[])
    _init_error(ValueError, "cluster_detection_method='slurm' is not supported", cluster_detection_method="slurm")
    _init_error(ValueError, "partition_index / slice_index", coordinator_address="h:1", num_processes=2,
                process_id=0, partition_index=1)
    monkeypatch.setenv("KILN_NUM_PROCESSES", "two")
    _init_error(ValueError, "KILN_NUM_PROCESSES='two' is not an integer", coordinator_address="h:1", process_id=0)
    monkeypatch.setenv("KILN_NUM_PROCESSES", "2")
    monkeypatch.setenv("KILN_PROCESS_ID", "5")
    monkeypatch.setenv("KILN_COORDINATOR_ADDRESS", "h:1")
    _init_error(ValueError, "process_id must be in 0..1 (num_processes=2), got 5")  # read from the environment
    monkeypatch.setenv("KILN_LOCAL_DEVICE_IDS", "0,x")
    _init_error(ValueError, "KILN_LOCAL_DEVICE_IDS='0,x' is not a comma-separated list", process_id=0)


def test_initialize_after_the_backends_started():
    kiln.devices()  # this session's backends exist
    e = _init_error(RuntimeError, "must be called before anything that starts kiln's backends",
                    coordinator_address="127.0.0.1:1", num_processes=2, process_id=1)
    assert isinstance(e, kiln.KilnError)


def test_single_process_defaults():
    assert not kiln.distributed.is_initialized()
    kiln.distributed.shutdown()  # a no-op when not initialised
    assert kiln.process_count() == 1 and kiln.process_index() == 0
    assert kiln.local_devices() == kiln.devices() and kiln.local_devices(process_index=0) == kiln.devices()
    assert kiln.local_devices(process_index=1) == []
    x = kiln.device_put(np.array([1.0, 2.0]))
    assert x.is_fully_addressable and x.sharding.is_fully_addressable
