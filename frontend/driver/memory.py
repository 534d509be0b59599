"""Memory spaces (``jax.memory``): ``kiln.memory.Space.Device`` / ``Host`` name the kinds of memory an array can
be placed in (``kiln.device_put(x, kiln.memory.Space.Host)``: into pinned host memory, on the devices it is on)."""
from __future__ import annotations

import enum


class MemorySpace(enum.Enum):
    """Where an array lives: its devices' own memory, or host memory they address (pinned)."""

    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()

    def __repr__(self) -> str:
        return f"MemorySpace.{self.name}"

    @property
    def memory_kind(self) -> str:
        """The kind of memory of the space (``'device'``, ``'pinned_host'``); ``Any`` names none."""
        if self is MemorySpace.Any:
            raise ValueError("kiln.memory.Space.Any names no memory to place an array in; use Space.Device or "
                             "Space.Host")
        return "device" if self is MemorySpace.Device else "pinned_host"


Space = MemorySpace  # (jax.memory.Space)
