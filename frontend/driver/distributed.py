"""``kiln.distributed``: run one program as several processes (one per host, or several on one machine),
as ``jax.distributed``. The work is in :mod:`kiln.runtime.distributed`."""
from __future__ import annotations

from typing import Sequence

from kiln import runtime


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids: int | Sequence[int] | None = None,
               cluster_detection_method: str | None = None, initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100, shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None, slice_index: int | None = None,
               partition_index: int | None = None) -> None:
    """Connect this process to the other processes of the program. Call it first, before anything that
    starts kiln's backends, in every process.

    Process 0 starts the coordination service at ``coordinator_address`` ('host:port', the address of
    process 0 and a free port there); every process connects to it. Afterwards ``kiln.devices()`` lists
    every process's devices, ``kiln.local_devices()`` this one's, and a ``kiln.jit`` function over a mesh
    spanning the processes runs as one program (CPU: gloo over TCP; GPU: NCCL).

    Arguments left ``None`` are read from ``KILN_COORDINATOR_ADDRESS``, ``KILN_NUM_PROCESSES``,
    ``KILN_PROCESS_ID`` and ``KILN_LOCAL_DEVICE_IDS``. ``local_device_ids`` restricts a GPU process to
    those devices. A peer that does not arrive within ``initialization_timeout`` seconds makes
    ``initialize`` raise; a peer that stops sending heartbeats for ``heartbeat_timeout_seconds`` makes the
    runtime end the other processes. ``cluster_detection_method`` (only ``None`` or ``'deactivate'``),
    ``slice_index`` and ``partition_index`` are accepted for JAX compatibility (see the README).
    """
    if cluster_detection_method not in (None, "deactivate"):
        raise runtime.distributed.DistributedArgumentError(
            f"kiln.distributed.initialize: cluster_detection_method={cluster_detection_method!r} is not supported; "
            "kiln does not detect clusters (Slurm, MPI, TPU pods). Pass coordinator_address, num_processes and "
            "process_id (or set KILN_COORDINATOR_ADDRESS, KILN_NUM_PROCESSES, KILN_PROCESS_ID).")
    if (slice_index if partition_index is None else partition_index) is not None:
        raise runtime.distributed.DistributedArgumentError(
            "kiln.distributed.initialize: partition_index / slice_index (multi-slice TPU jobs) are not supported "
            "by kiln; leave them None.")
    runtime.distributed.initialize(coordinator_address, num_processes, process_id, local_device_ids,
                                   initialization_timeout, heartbeat_timeout_seconds, shutdown_timeout_seconds,
                                   coordinator_bind_address)


def shutdown() -> None:
    """Disconnect from the other processes (waits for them, up to the shutdown timeout). Does nothing when
    ``initialize`` was not called."""
    runtime.distributed.shutdown()


def is_initialized() -> bool:
    """Whether ``initialize`` was called (and ``shutdown`` not since)."""
    return runtime.distributed.is_initialized()
