"""Arrays laid out over several devices: one jaxlib ``ArrayImpl`` holding a shard per device (NOTES §6).

The layout is an XLA ``HloSharding`` over an ordered tuple of devices: tile numbers in the sharding
string index that tuple. kiln's frontend derives both from a ``NamedSharding``; XLA's SPMD partitioner
does the rest.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._jaxlib import JaxRuntimeError, device_put, xc
from .avals import aval_for
from .backends import Device, device_of_raw
from .buffers import Buffer, _check_alive
from .errors import KilnRuntimeError, jaxlib_message


class SpmdSharding(xc.GSPMDSharding):
    """An ``HloSharding`` over an ordered tuple of devices, as jaxlib's C++ reads it from an array.

    Interned per (devices, sharding string), like :class:`~kiln.runtime.avals.DeviceSharding`: jaxlib
    compares shardings by identity.
    """

    def __init__(self, devices: tuple[Device, ...], hlo: str) -> None:
        self._hlo = xc.HloSharding.from_string(hlo)
        self._devs = tuple(d._raw for d in devices)
        super().__init__(xc.DeviceList(self._devs), self._hlo)
        self.kiln_devices = devices
        self.hlo_text = hlo
        self.is_fully_replicated = self._hlo.is_replicated()
        self.is_fully_addressable = True

    def _to_xla_hlo_sharding(self, ndim: int) -> Any:  # read by batched_device_put
        return self._hlo

    @property
    def _device_assignment(self) -> tuple[Any, ...]:
        return self._devs

    @property
    def memory_kind(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"SpmdSharding({self.hlo_text}, devices={[d.id for d in self.kiln_devices]})"


_interned: dict[tuple[tuple[Device, ...], str], SpmdSharding] = {}


def spmd_sharding(devices: Sequence[Device], hlo: str) -> SpmdSharding:
    """The interned :class:`SpmdSharding` of ``hlo`` (an HloSharding string) over ``devices``."""
    key = (tuple(devices), hlo)
    s = _interned.get(key)
    if s is None:
        for d in key[0]:
            if not isinstance(d, Device):
                raise TypeError(f"runtime.spmd_sharding expects kiln runtime.Devices, got {d!r}.")
        s = _interned.setdefault(key, SpmdSharding(key[0], hlo))
    return s


def put_sharded(pieces: Sequence[np.ndarray], sharding: SpmdSharding, shape: tuple[int, ...], dtype: Any) -> Buffer:
    """One array of ``shape`` made of ``pieces[i]`` on ``sharding``'s i-th device (copied, never aliased)."""
    dtype = np.dtype(dtype)
    if len(pieces) != len(sharding.kiln_devices):
        raise ValueError(f"runtime.put_sharded: {len(pieces)} pieces for {len(sharding.kiln_devices)} devices")
    # A fresh contiguous copy per device: jaxlib 0.10 fails (bad_function_call) when two pieces share memory.
    host = [np.array(p, dtype=dtype, copy=True, order="C") for p in pieces]
    try:
        return device_put(aval_for(tuple(shape), dtype), sharding, host, list(sharding._devs))
    except JaxRuntimeError as e:
        raise KilnRuntimeError(f"Transfer of a {dtype}{list(shape)} array to {sharding!r} failed: "
                               f"{jaxlib_message(e)}") from e


def shards_of(buf: Buffer) -> list[Buffer]:
    """The single-device buffers making up ``buf``, in its sharding's device order."""
    _check_alive(buf, "shards_of")
    return list(buf._arrays)


def devices_of(buf: Buffer) -> list[Device]:
    """The devices holding ``buf``'s shards, in its sharding's device order."""
    return [device_of_raw(d) for d in buf._sharding._internal_device_list]
