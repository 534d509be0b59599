"""Transfer guards (JAX's ``jax.transfer_guard``): jaxlib's C++ checks every host->device, device->device and
device->host transfer against a level kept per thread (and a global default); kiln sets the levels and marks
its explicit transfers (``device_put``, ``device_get``) so that only implicit ones are refused or logged.
Fetching from a CPU device is never a transfer (as in JAX)."""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator

from ._jaxlib import _jax
from .errors import KilnRuntimeError

LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
DIRECTIONS = ("host_to_device", "device_to_device", "device_to_host")

_guard = getattr(_jax, "guard_lib", None)


class TransferGuardError(KilnRuntimeError, RuntimeError):
    """A transfer the transfer guard disallows (a ``RuntimeError``, as JAX raises)."""


def available() -> bool:
    return _guard is not None


def _state(thread_local: bool):
    if _guard is None:
        raise KilnRuntimeError("this jaxlib has no transfer guards (jaxlib._jax.guard_lib is missing)")
    return _guard.thread_local_state() if thread_local else _guard.global_state()


# (thread id, or None for the global default) of every host-to-device level set other than "allow": while any
# is set, kiln does not reuse device copies of host values (a Python scalar argument's), so that every
# implicit transfer is checked (or logged) by jaxlib as it happens.
_watching_host_to_device: set = set()


def set_level(direction: str, level: str | None, *, thread_local: bool) -> str | None:
    """Set the guard of ``direction`` to ``level`` (None: the global default); returns the previous level."""
    state = _state(thread_local)
    old = getattr(state, direction)
    setattr(state, direction, None if level is None else getattr(_guard.TransferGuardLevel, level.upper()))
    if direction == "host_to_device":
        key = threading.get_ident() if thread_local else None
        if level in (None, "allow"):
            _watching_host_to_device.discard(key)
        else:
            _watching_host_to_device.add(key)
    return None if old is None else old.name.lower()


def host_to_device_watched() -> bool:
    """Whether a host-to-device guard level other than "allow" is set anywhere (any thread, or globally)."""
    return bool(_watching_host_to_device)


@contextlib.contextmanager
def _explicit(attr: str) -> Iterator[None]:
    if _guard is None:
        yield
        return
    state = _guard.thread_local_state()
    old = getattr(state, attr)
    setattr(state, attr, True)
    try:
        yield
    finally:
        setattr(state, attr, old)


def explicit_put() -> contextlib.AbstractContextManager:
    """Transfers inside are explicit ``device_put``s (allowed by "disallow", logged by "log_explicit")."""
    return _explicit("explicit_device_put")


def explicit_get() -> contextlib.AbstractContextManager:
    """Transfers inside are explicit ``device_get``s."""
    return _explicit("explicit_device_get")


def guard_error(message: str, what: str) -> TransferGuardError | None:
    """kiln's error for jaxlib's "Disallowed ... transfer" message (None for any other message)."""
    for direction in ("host-to-device", "device-to-device", "device-to-host"):
        if f"Disallowed {direction} transfer" in message:
            name = direction.replace("-", "_")
            return TransferGuardError(
                f"kiln.transfer_guard: {what} is an implicit {direction} transfer, which the transfer guard "
                f"disallows. Make it explicit (kiln.device_put / kiln.device_get), or allow it: "
                f"`with kiln.transfer_guard_{name}('allow'):`. (jaxlib: {message})")
    return None
