"""jaxlib's profiler (its private ``_profiler`` and ``_profile_data`` modules) behind kiln's interface: one trace
session at a time written for TensorBoard/Perfetto, trace annotations, the profiler server, device memory profiles,
written profiles read back."""
from __future__ import annotations

import gzip
import threading
from typing import Any, Callable

from jaxlib import _profiler

try:
    from jaxlib import _profile_data
except ImportError:  # a jaxlib without it still imports kiln; kiln.profiler.ProfileData is then None
    _profile_data = None

from .errors import KilnRuntimeError, jaxlib_message


class ProfilerError(KilnRuntimeError, RuntimeError):
    """A trace started twice, stopped without a start, or a server started twice (a RuntimeError, as JAX)."""


ProfileOptions = _profiler.ProfileOptions
TraceMe = _profiler.TraceMe  # a context manager: an event on the trace timeline (cheap when not tracing)
# A written profile read back in memory (xprof's XSpace): ProfileData.from_file(path of a .xplane.pb) or
# .from_serialized_xspace(bytes), its planes (one per host or device), their lines and events.
ProfileData = getattr(_profile_data, "ProfileData", None)
ProfilePlane = getattr(_profile_data, "ProfilePlane", None)
ProfileEvent = getattr(_profile_data, "ProfileEvent", None)

_lock = threading.Lock()
_session: dict[str, Any] = {}
_server: dict[str, Any] = {}


def start_session(log_dir: str, options: Any = None, metadata: dict[str, str] | None = None) -> None:
    """Start collecting a profile that :func:`stop_session` writes under ``log_dir``."""
    with _lock:
        if _session:
            raise ProfilerError("kiln.profiler: a trace is already running (only one at a time); stop it "
                                   "with kiln.profiler.stop_trace() first")
        _profiler.clear_metadata()
        for key, value in (metadata or {}).items():
            _profiler.set_metadata(key, value)
        _session["session"] = _profiler.ProfilerSession(options if options is not None else ProfileOptions())
        _session["log_dir"] = str(log_dir)


def stop_session() -> str:
    """Stop the running profile and write it (``plugins/profile/<run>/*.xplane.pb`` and a trace
    ``.trace.json.gz`` under the log directory); returns the log directory."""
    with _lock:
        if not _session:
            raise ProfilerError("kiln.profiler.stop_trace: no trace is running; start one with "
                                   "kiln.profiler.start_trace(log_dir)")
        session, log_dir = _session.pop("session"), _session.pop("log_dir")
        session.stop_and_export(log_dir)
        _profiler.clear_metadata()
        return log_dir


def start_server(port: int) -> None:
    with _lock:
        if _server:
            raise ProfilerError("kiln.profiler.start_server: the profiler server is already running")
        _server["server"] = _profiler.start_server(port)


def stop_server() -> None:
    with _lock:
        if not _server:
            raise ProfilerError("kiln.profiler.stop_server: no profiler server is running")
        _server.clear()  # dropping the server object stops it


def register_subprocess(pid: int, port: int) -> Callable[[], None]:
    """Have this process's profiles take in those of the profiler server of process ``pid`` on ``port`` (on
    localhost); returns the function that undoes it. jaxlib waits 30 s for a server that does not answer: callers
    check that one listens first."""
    try:
        return _profiler.register_subprocess(pid, port)
    except Exception as e:  # jaxlib's JaxRuntimeError (already registered, cannot connect)
        raise ProfilerError(f"kiln.profiler.register_subprocess({pid}, {port}): {jaxlib_message(e)}") from e


def heap_profile(backend: Any) -> bytes:
    """The live device buffers and executables of ``backend`` (a :class:`~kiln.runtime.Backend`) as a
    gzipped pprof protocol buffer."""
    return gzip.compress(backend._client.heap_profile())
