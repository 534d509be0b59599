"""The aval and sharding objects jaxlib's C++ reads from arrays (NOTES §1).

The C++ reads only ``shape``/``dtype``/``weak_type`` from an aval and a few attributes from a
sharding. Both are interned: a sharding compares by identity without jax, and identical objects let
the hot paths compare with ``is``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._jaxlib import xc


class Aval:
    """Abstract value of a device buffer as jaxlib sees it: shape, dtype, weak_type."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, weak_type: bool = False) -> None:
        self.shape = shape
        self.dtype = dtype
        self.weak_type = weak_type

    def __repr__(self) -> str:
        return f"Aval({self.dtype}{list(self.shape)})"


_avals: dict[tuple[tuple[int, ...], np.dtype], Aval] = {}


def aval_for(shape: tuple[int, ...], dtype: Any) -> Aval:
    """The interned :class:`Aval` for ``(shape, dtype)``."""
    key = (shape, dtype)
    av = _avals.get(key)
    if av is None:
        shape = tuple(int(d) for d in shape)
        dtype = np.dtype(dtype)
        # setdefault is atomic: threads interning one aval at once get the same object (no lock, which
        # an interrupt could leave held).
        av = _avals.setdefault((shape, dtype), Aval(shape, dtype))
        _avals[key] = av
    return av


class KilnSharding(xc.GSPMDSharding):
    """An ``HloSharding`` over an ordered tuple of jaxlib devices, with the attributes jaxlib's C++ reads.

    Subclassing the C++ ``GSPMDSharding`` keeps jaxlib on its C++ fast paths (a plain Python
    ``xc.Sharding`` subclass makes every argument go through a Python fallback).
    """

    def __init__(self, raw_devices: tuple[Any, ...], hlo: Any, memory_kind: str | None = None) -> None:
        super().__init__(xc.DeviceList(raw_devices), hlo, memory_kind=memory_kind)
        self._hlo = hlo
        self._devs = raw_devices  # (the C++ keeps memory_kind, read back as _memory_kind)
        self.is_fully_replicated = hlo.is_replicated()
        self.is_fully_addressable = True

    def _to_xla_hlo_sharding(self, ndim: int) -> Any:  # read by batched_device_put
        return self._hlo

    @property
    def _device_assignment(self) -> tuple[Any, ...]:
        return self._devs

    @property
    def memory_kind(self) -> str:
        return self._memory_kind  # (jaxlib's C++ canonical name: 'device' for the default memory of every device)


class DeviceSharding(KilnSharding):
    """A fully replicated sharding over one device, in its default memory or in the memory ``memory_kind``
    (``'pinned_host'``, ...); ``kiln_device`` points back to kiln's :class:`~kiln.runtime.Device`."""

    def __init__(self, raw_device: Any, kiln_device: Any, memory_kind: str | None = None) -> None:
        super().__init__((raw_device,), xc.HloSharding.replicate(), memory_kind)
        self.kiln_device = kiln_device

    def __repr__(self) -> str:
        where = "" if self is self.kiln_device._sharding else f", memory_kind={self._memory_kind}"
        return f"DeviceSharding({self.kiln_device!r}{where})"
