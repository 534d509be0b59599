"""``kiln.transfer_guard`` and its three directions (JAX's API): context managers that set the calling
thread's transfer guard level; ``kiln.config.update("transfer_guard", level)`` sets the global default.

Levels: "allow" (the default), "log" (log implicit transfers), "disallow" (refuse implicit transfers with a
:class:`~kiln.runtime.transfer_guard.TransferGuardError`), "log_explicit" and "disallow_explicit" (the same for
explicit ``kiln.device_put``/``kiln.device_get`` too). jaxlib's C++ does the checking.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from kiln import runtime

from ..core.errors import KilnError

_LEVELS = runtime.transfer_guard.LEVELS


class TransferGuardLevelError(KilnError, ValueError):
    """An unknown transfer guard level."""


@contextlib.contextmanager
def _guard(directions: tuple[str, ...], level: str, name: str) -> Iterator[None]:
    if level not in _LEVELS:
        raise TransferGuardLevelError(f"kiln.{name}({level!r}): the level must be one of "
                                      f"{', '.join(repr(v) for v in _LEVELS)}")
    old = [runtime.transfer_guard.set_level(d, level, thread_local=True) for d in directions]
    try:
        yield
    finally:
        for d, level_before in zip(directions, old):
            runtime.transfer_guard.set_level(d, level_before, thread_local=True)


def transfer_guard(new_val: str) -> contextlib.AbstractContextManager:
    """``with kiln.transfer_guard("disallow"):`` refuses implicit transfers in every direction in this
    thread (explicit ``kiln.device_put``/``device_get`` stay allowed)."""
    return _guard(runtime.transfer_guard.DIRECTIONS, new_val, "transfer_guard")


def transfer_guard_host_to_device(new_val: str) -> contextlib.AbstractContextManager:
    """The transfer guard for host values (NumPy arrays, Python scalars) becoming device arrays."""
    return _guard(("host_to_device",), new_val, "transfer_guard_host_to_device")


def transfer_guard_device_to_device(new_val: str) -> contextlib.AbstractContextManager:
    """The transfer guard for copies between devices."""
    return _guard(("device_to_device",), new_val, "transfer_guard_device_to_device")


def transfer_guard_device_to_host(new_val: str) -> contextlib.AbstractContextManager:
    """The transfer guard for fetching device arrays to the host (never a transfer on CPU, as in JAX)."""
    return _guard(("device_to_host",), new_val, "transfer_guard_device_to_host")
