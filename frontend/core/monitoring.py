"""Event listeners (``kiln.monitoring``, as ``jax.monitoring``): libraries and tools register callbacks, and
kiln reports events to them (each jit trace and compile, with JAX's event names, so that a listener written
for JAX hears kiln's).

Four kinds of records, each with its own listeners: a plain event, an event's duration in seconds, an
event's time span (start and end, from ``time.time()``), and a scalar value. Keyword arguments of a record
are passed on to every listener of its kind.
"""
from __future__ import annotations

from typing import Any, Callable

# The names JAX records its trace, lowering and compile times under.
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWERING_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

_KINDS = ("event", "duration", "time_span", "scalar")
_listeners: dict[str, list[Callable[..., Any]]] = {kind: [] for kind in _KINDS}


def record_event(event: str, **kwargs: str | int) -> None:
    """Report ``event`` to every listener registered with :func:`register_event_listener`."""
    for callback in list(_listeners["event"]):
        callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
    """Report that ``event`` took ``duration`` seconds (to :func:`register_event_duration_secs_listener`'s)."""
    for callback in list(_listeners["duration"]):
        callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs: str | int) -> None:
    """Report that ``event`` ran from ``start_time`` to ``end_time`` (seconds since the epoch)."""
    for callback in list(_listeners["time_span"]):
        callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
    """Report a scalar ``value`` under ``event`` (to :func:`register_scalar_listener`'s)."""
    for callback in list(_listeners["scalar"]):
        callback(event, value, **kwargs)


def _register(kind: str, callback: Callable[..., Any], what: str) -> None:
    if not callable(callback):
        raise TypeError(f"kiln.monitoring.{what}: the listener must be callable, got {type(callback).__name__} "
                        f"({callback!r})")
    _listeners[kind].append(callback)


def _unregister(kind: str, callback: Callable[..., Any], what: str) -> None:
    try:
        _listeners[kind].remove(callback)
    except ValueError:
        raise ValueError(f"kiln.monitoring.{what}: {callback!r} is not a registered listener of this kind "
                         "(was it registered with the matching register_... function?)") from None


def register_event_listener(callback: Callable[..., Any]) -> None:
    """Call ``callback(event, **kwargs)`` on every :func:`record_event`."""
    _register("event", callback, "register_event_listener")


def register_event_duration_secs_listener(callback: Callable[..., Any]) -> None:
    """Call ``callback(event, duration_secs, **kwargs)`` on every :func:`record_event_duration_secs`."""
    _register("duration", callback, "register_event_duration_secs_listener")


def register_event_time_span_listener(callback: Callable[..., Any]) -> None:
    """Call ``callback(event, start_time, end_time, **kwargs)`` on every :func:`record_event_time_span`."""
    _register("time_span", callback, "register_event_time_span_listener")


def register_scalar_listener(callback: Callable[..., Any]) -> None:
    """Call ``callback(event, value, **kwargs)`` on every :func:`record_scalar`."""
    _register("scalar", callback, "register_scalar_listener")


def unregister_event_listener(callback: Callable[..., Any]) -> None:
    _unregister("event", callback, "unregister_event_listener")


def unregister_event_duration_listener(callback: Callable[..., Any]) -> None:
    _unregister("duration", callback, "unregister_event_duration_listener")


def unregister_event_time_span_listener(callback: Callable[..., Any]) -> None:
    _unregister("time_span", callback, "unregister_event_time_span_listener")


def unregister_scalar_listener(callback: Callable[..., Any]) -> None:
    _unregister("scalar", callback, "unregister_scalar_listener")


def clear_event_listeners() -> None:
    """Remove every registered listener of every kind."""
    for listeners in _listeners.values():
        listeners.clear()


def has_listeners() -> bool:
    """Whether anything listens (kiln's hot paths skip building their records otherwise)."""
    return any(_listeners.values())


def record_duration(event: str, start_time: float, end_time: float, **kwargs: str | int) -> None:
    """Report a timed piece of kiln's work both as a duration and as a time span (as JAX reports its own)."""
    record_event_duration_secs(event, end_time - start_time, **kwargs)
    record_event_time_span(event, start_time, end_time, **kwargs)
