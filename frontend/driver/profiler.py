"""``kiln.profiler`` (JAX's ``jax.profiler``): traces of host and device activity for TensorBoard's profile
plugin or Perfetto, annotations on their timeline, and device memory profiles (pprof)."""
from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import pathlib
import socket
from typing import Any, Callable, Iterator

from kiln import runtime

from ..core.version import __version__
from .placement import devices

ProfileOptions = runtime.profiler.ProfileOptions
# A written trace read back (JAX's jax.profiler.ProfileData, ProfilePlane, ProfileEvent: jaxlib's classes).
ProfileData = runtime.profiler.ProfileData
ProfilePlane = runtime.profiler.ProfilePlane
ProfileEvent = runtime.profiler.ProfileEvent
_perfetto: dict[str, bool] = {}


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
                profiler_options: Any = None) -> None:
    """Start a profiler trace of CPU and device activity; :func:`stop_trace` writes it under ``log_dir``
    (open it with TensorBoard's profile plugin). ``create_perfetto_trace`` also writes a
    ``perfetto_trace.json.gz`` for https://ui.perfetto.dev. One trace at a time. ``create_perfetto_link``
    is accepted and writes that file (kiln serves no link)."""
    devices()  # the backends exist before the session starts (their tracers register then)
    metadata = {"kiln_version": __version__, "jaxlib_version": runtime.jaxlib_version()}
    runtime.profiler.start_session(str(log_dir), profiler_options, metadata)
    _perfetto["write"] = bool(create_perfetto_trace or create_perfetto_link)


def stop_trace() -> None:
    """Stop the trace :func:`start_trace` began and write it."""
    log_dir = runtime.profiler.stop_session()
    if _perfetto.pop("write", False):
        _write_perfetto_trace(log_dir)


def _write_perfetto_trace(log_dir: str) -> pathlib.Path:
    """``perfetto_trace.json.gz`` beside the newest run's ``*.trace.json.gz`` (Perfetto rejects its
    ``metadata`` field)."""
    runs = (pathlib.Path(log_dir).absolute() / "plugins" / "profile").iterdir()
    latest = max(runs, key=os.path.getmtime)
    traces = list(latest.glob("*.trace.json.gz"))
    if len(traces) != 1:
        raise ValueError(f"kiln.profiler: expected one *.trace.json.gz in {latest}, found {len(traces)}")
    with gzip.open(traces[0], "rb") as f:
        trace_data = json.load(f)
    trace_data.pop("metadata", None)
    out = latest / "perfetto_trace.json.gz"
    with gzip.open(out, "wb") as f:
        f.write(json.dumps(trace_data).encode("utf-8"))
    return out


@contextlib.contextmanager
def trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
          profiler_options: Any = None) -> Iterator[None]:
    """``with kiln.profiler.trace(log_dir):`` traces the block (see :func:`start_trace`)."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation(runtime.profiler.TraceMe):
    """``with kiln.profiler.TraceAnnotation("name"):`` marks the block on the trace timeline (costs almost
    nothing when no trace runs)."""


class StepTraceAnnotation(TraceAnnotation):
    """A training step on the timeline: ``StepTraceAnnotation("train", step_num=i)``."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, _r=1, **kwargs)


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs: Any) -> Callable:
    """Decorator: every call of ``func`` is an event named ``name`` (default: its qualified name)."""
    name = name or getattr(func, "__qualname__", None) or getattr(func, "__name__", "function")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(name, **decorator_kwargs):
            return func(*args, **kwargs)
    return wrapper


def start_server(port: int) -> None:
    """Start the profiler server on ``port`` (TensorBoard's "capture profile" connects to it)."""
    runtime.profiler.start_server(port)


def stop_server() -> None:
    runtime.profiler.stop_server()


def register_subprocess(pid: int, port: int) -> Callable[[], None]:
    """Profile process ``pid`` alongside this one (``jax.profiler.register_subprocess``): a profile this process
    collects through its profiler server asks the profiler server that ``pid`` runs on ``port`` (started there with
    :func:`start_server`) for its part. Returns the function that unregisters it (called, or garbage collected).
    The server must be listening already: kiln checks, where jaxlib would wait 30 s for it."""
    for name, value in (("pid", pid), ("port", port)):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise TypeError(f"kiln.profiler.register_subprocess: {name} must be a positive int, got {value!r}")
    try:
        os.kill(pid, 0)  # (signal 0: only asks whether the process exists)
    except ProcessLookupError:
        raise ValueError(f"kiln.profiler.register_subprocess: no process has pid {pid}") from None
    except PermissionError:
        pass  # it exists, owned by another user
    try:
        socket.create_connection(("localhost", port), timeout=2).close()
    except OSError:
        raise runtime.profiler.ProfilerError(
            f"kiln.profiler.register_subprocess: nothing listens on localhost:{port}; start the profiler server in "
            f"process {pid} first (kiln.profiler.start_server({port}))") from None
    return runtime.profiler.register_subprocess(pid, port)


def device_memory_profile(backend: str | None = None) -> bytes:
    """The device memory in use (live arrays and executables, with where they were allocated) as a gzipped
    pprof protocol buffer (view with ``pprof``)."""
    return runtime.profiler.heap_profile(devices(backend)[0].backend)


def save_device_memory_profile(filename: os.PathLike | str, backend: str | None = None) -> None:
    """Write :func:`device_memory_profile` to ``filename``."""
    profile = device_memory_profile(backend)
    with open(filename, "wb") as f:
        f.write(profile)
