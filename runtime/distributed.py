"""Multi-process runs on PJRT's distributed runtime (NOTES §10): ``kiln.distributed.initialize``.

Process 0 starts the coordination service; every process connects a client to it. The backends
created afterwards see every process's devices: the CPU client exchanges data between processes
with gloo over TCP, a GPU plugin's client with NCCL. Everything here must happen before the first
backend is created, since a PJRT client's device list is fixed when it is made.

What this jaxlib does when a peer fails (checked on 0.10.2, CPU):
- a peer that never arrives: ``connect()`` fails once ``init_timeout`` has passed (about twice it on
  0.10.2); kiln raises :class:`DistributedError`;
- a peer that dies while the others run a collective: gloo fails that execution at once ("Connection
  closed by peer"); kiln's error says that another process probably died;
- a peer that dies while the others do not talk to it: the coordination service notices its missing
  heartbeats after ``heartbeat_timeout`` seconds and the runtime terminates every other process (as
  in JAX); nothing can catch that in Python.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, Sequence

from ._jaxlib import _jax
from .errors import KilnRuntimeError, jaxlib_message


class DistributedError(KilnRuntimeError, RuntimeError):
    """The distributed runtime could not start, was started twice or too late, or a peer failed."""


class DistributedArgumentError(KilnRuntimeError, ValueError):
    """``kiln.distributed.initialize`` was given missing or inconsistent arguments."""


@dataclass
class DistributedState:
    """What ``initialize`` set up; ``None`` in a single-process program."""
    coordinator_address: str
    num_processes: int
    process_id: int
    local_device_ids: tuple[int, ...] | None
    client: Any
    service: Any = None
    connected: bool = False


_state: DistributedState | None = None
_lock = threading.Lock()

ENV_ADDRESS, ENV_NUM, ENV_ID, ENV_LOCAL_IDS = ("KILN_COORDINATOR_ADDRESS", "KILN_NUM_PROCESSES", "KILN_PROCESS_ID",
                                               "KILN_LOCAL_DEVICE_IDS")


def _supported(fn: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``kwargs`` this jaxlib's ``fn`` takes (its signature drifts between releases)."""
    doc = getattr(fn, "__doc__", None) or ""
    return {k: v for k, v in kwargs.items() if v is not None and (not doc or f"{k}:" in doc)}


def _int_arg(name: str, value: Any, env: str) -> int | None:
    if value is None:
        text = os.environ.get(env, "").strip()
        if not text:
            return None
        try:
            return int(text)
        except ValueError:
            raise DistributedArgumentError(f"kiln.distributed.initialize: {env}={text!r} is not an integer; set it "
                                           f"to the {name.replace('_', ' ')}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise DistributedArgumentError(f"kiln.distributed.initialize: {name} must be an int, got "
                                       f"{type(value).__name__} {value!r}")
    return value


def _device_ids(local_device_ids: Any) -> tuple[int, ...] | None:
    if local_device_ids is None:
        text = os.environ.get(ENV_LOCAL_IDS, "").strip()
        if not text:
            return None
        try:
            return tuple(int(t) for t in text.split(","))
        except ValueError:
            raise DistributedArgumentError(f"kiln.distributed.initialize: {ENV_LOCAL_IDS}={text!r} is not a "
                                           "comma-separated list of device ids") from None
    ids = (local_device_ids,) if isinstance(local_device_ids, int) else tuple(local_device_ids)
    if not ids or any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in ids):
        raise DistributedArgumentError(f"kiln.distributed.initialize: local_device_ids must be a non-negative int "
                                       f"or a non-empty sequence of them, got {local_device_ids!r}")
    return ids


def _local_coordinator(address: str) -> bool:
    host = address.rsplit(":", 1)[0].strip("[]")
    return host in ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids: int | Sequence[int] | None = None,
               initialization_timeout: int = 300, heartbeat_timeout_seconds: int = 100,
               shutdown_timeout_seconds: int = 300, coordinator_bind_address: str | None = None) -> DistributedState:
    """Connect this process to the others (see ``kiln.distributed.initialize``). Arguments left ``None``
    come from ``KILN_COORDINATOR_ADDRESS``, ``KILN_NUM_PROCESSES``, ``KILN_PROCESS_ID`` and
    ``KILN_LOCAL_DEVICE_IDS``."""
    global _state
    from . import backends  # backends builds on this module
    where = "kiln.distributed.initialize"
    if _state is not None:
        raise DistributedError(f"{where}() was already called (this is process {_state.process_id} of "
                               f"{_state.num_processes}); call it once per process.")
    address = coordinator_address if coordinator_address is not None else os.environ.get(ENV_ADDRESS, "").strip()
    num = _int_arg("num_processes", num_processes, ENV_NUM)
    pid = _int_arg("process_id", process_id, ENV_ID)
    ids = _device_ids(local_device_ids)
    missing = [f"{arg} (or {env})" for arg, env, v in (("coordinator_address", ENV_ADDRESS, address),
                                                        ("num_processes", ENV_NUM, num),
                                                        ("process_id", ENV_ID, pid)) if v in (None, "")]
    if missing:
        raise DistributedArgumentError(f"{where}: {', '.join(missing)} must be given; kiln does not detect "
                                       "clusters (Slurm, MPI, TPU pods) automatically. Example: initialize("
                                       "'10.0.0.1:1234', num_processes=2, process_id=0) on the first process.")
    if not isinstance(address, str) or ":" not in address or not address.rsplit(":", 1)[1].isdigit():
        raise DistributedArgumentError(f"{where}: coordinator_address must be 'host:port' (process 0's address and "
                                       f"a free port there), got {address!r}")
    if num < 1:
        raise DistributedArgumentError(f"{where}: num_processes must be at least 1, got {num}")
    if not 0 <= pid < num:
        raise DistributedArgumentError(f"{where}: process_id must be in 0..{num - 1} (num_processes={num}), got "
                                       f"{pid}; give each process a different id, 0 for the coordinator")
    for name, value in (("initialization_timeout", initialization_timeout),
                        ("heartbeat_timeout_seconds", heartbeat_timeout_seconds),
                        ("shutdown_timeout_seconds", shutdown_timeout_seconds)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise DistributedArgumentError(f"{where}: {name} must be a positive number of seconds, got {value!r}")
    if backends.started():
        raise DistributedError(f"{where}() must be called before anything that starts kiln's backends (computing, "
                               "kiln.devices(), kiln.device_put, ...): the device list of every process is fixed "
                               "when a backend starts. Call it first thing in the program.")
    with _lock:
        if _state is not None:
            raise DistributedError(f"{where}() was already called; call it once per process.")
        service = None
        if pid == 0:
            bind = coordinator_bind_address or f"[::]:{address.rsplit(':', 1)[1]}"
            try:
                service = _jax.get_distributed_runtime_service(bind, num, **_supported(
                    _jax.get_distributed_runtime_service, {"heartbeat_timeout": int(heartbeat_timeout_seconds),
                                                           "cluster_register_timeout": int(initialization_timeout),
                                                           "shutdown_timeout": int(shutdown_timeout_seconds)}))
            except Exception as e:
                raise DistributedError(f"{where}: process 0 could not start the coordination service on {bind}: "
                                       f"{jaxlib_message(e)} (is the port already in use?)") from e
        state = DistributedState(address, num, pid, ids, None, service)
        kwargs = {"init_timeout": int(initialization_timeout), "heartbeat_timeout": int(heartbeat_timeout_seconds),
                  "shutdown_timeout": int(shutdown_timeout_seconds), "use_compression": True,
                  # Given a callback, a failed connect raises instead of terminating the process.
                  "missed_heartbeat_callback": _fatal_callback(state)}
        try:
            client = _jax.get_distributed_runtime_client(address, pid, **_supported(
                _jax.get_distributed_runtime_client, kwargs))
            client.connect()
        except Exception as e:
            if service is not None:
                _quiet(service.shutdown)
            others = "the other processes" if pid == 0 else "the coordinator (process 0) and the other processes"
            raise DistributedError(
                f"{where}: process {pid} of {num} could not connect to the coordinator at {address} within "
                f"initialization_timeout={initialization_timeout} s: {others} did not all arrive ({_reason(e)}). "
                f"Start all {num} processes with the same coordinator_address and num_processes and distinct "
                f"process_ids 0..{num - 1}, or raise initialization_timeout.") from e
        state.client = client
        state.connected = True
        _state = state
    return state


def _reason(e: BaseException) -> str:
    msg = jaxlib_message(e)
    return "timed out" if msg in ("std::bad_cast", "") or "DEADLINE_EXCEEDED" in msg else msg.splitlines()[0]


def _fatal_callback(state: DistributedState) -> Any:
    def on_fatal(status: Any = None, *_: Any) -> None:
        # Called by the runtime when the coordination service reports an error (a dead peer). While
        # connecting, connect() raises the error itself. (On jaxlib 0.10.2 the status cannot reach
        # Python and the runtime terminates the process instead, with its own message.)
        if not state.connected:
            return
        sys.stderr.write(f"kiln.distributed: the distributed runtime reports a fatal error in process "
                         f"{state.process_id}: {status}. Another process probably died; this one exits too.\n")
        sys.stderr.flush()
        os._exit(70)
    return on_fatal


def _quiet(fn: Any) -> None:
    try:
        fn()
    except Exception:
        pass


# Run before the distributed client shuts down: what uses the client and must stop first (coordination.py's
# preemption sync manager registers itself here).
before_shutdown: list[Any] = []


def shutdown() -> None:
    """Disconnect from the other processes (waits for them up to the shutdown timeout). No-op when not
    initialised. Backends created while connected keep their devices."""
    global _state
    with _lock:
        state, _state = _state, None
    if state is None:
        return
    state.connected = False
    for hook in before_shutdown:
        _quiet(hook)
    if state.client is not None:
        _quiet(state.client.shutdown)
    if state.service is not None:
        _quiet(state.service.shutdown)


atexit.register(shutdown)


def state() -> DistributedState | None:
    """The distributed state, or None in a single-process program."""
    return _state


def is_initialized() -> bool:
    return _state is not None


def cpu_client_kwargs() -> dict[str, Any]:
    """Extra arguments of ``make_cpu_client`` in a distributed run: gloo collectives over TCP."""
    s = _state
    if s is None:
        return {}
    host = "127.0.0.1" if _local_coordinator(s.coordinator_address) else None
    collectives = _jax.make_gloo_tcp_collectives(**_supported(
        _jax.make_gloo_tcp_collectives, {"distributed_client": s.client, "hostname": host}))
    return {"distributed_client": s.client, "node_id": s.process_id, "num_nodes": s.num_processes,
            "collectives": collectives}


def plugin_client_options(platform: str) -> tuple[dict[str, Any], Any]:
    """Extra options and the distributed client of a PJRT plugin's client (NOTES §10 [S]: GPU plugins
    take node_id/num_nodes; NCCL does the collectives). ``({}, None)`` when not distributed."""
    s = _state
    if s is None:
        return {}, None
    options: dict[str, Any] = {"node_id": s.process_id, "num_nodes": s.num_processes}
    if s.local_device_ids is not None and platform in ("cuda", "rocm"):
        options["visible_devices"] = list(s.local_device_ids)
    return options, s.client


PEER_FAILURE_MARKS = ("Gloo", "gloo", "Connection closed by peer", "Connection reset by peer", "NCCL",
                      "unhealthy", "coordination service")


def peer_failure_hint(message: str) -> str:
    """A sentence to add to an execution error that looks like a failed peer (empty otherwise)."""
    s = _state
    if s is None or not any(m in message for m in PEER_FAILURE_MARKS):
        return ""
    return (f" A collective with the other processes failed in process {s.process_id} of {s.num_processes}: "
            "another process of the distributed run probably died or exited early; see its output.")
