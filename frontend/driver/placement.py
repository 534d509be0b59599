"""Devices and data placement: ``kiln.devices``, ``kiln.device_put``, ``kiln.device_get``."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from kiln import runtime

from ..core import dtypes, tree_util
from ..core.tracing import Tracer, abstractify
from . import dispatch
from .array import Array
from .sharding import NamedSharding, PartitionSpec, Sharding, resolve_spec, runtime_sharding


def devices(backend: str | None = None) -> list[runtime.Device]:
    """The devices of ``backend`` (default: the default backend), e.g. ``[CpuDevice(id=0)]``."""
    from ..core.config import config
    return runtime.devices(backend or config.default_backend)


local_devices = devices


def device_count(backend: str | None = None) -> int:
    """The number of devices of ``backend`` (default: the default backend)."""
    return len(devices(backend))


def default_backend() -> str:
    """The platform name of the default backend ('cuda', 'cpu', ...)."""
    from ..core.config import config
    return config.default_backend or runtime.default_backend()


def process_index(backend: str | None = None) -> int:
    """This process's index (0 in a single-process program)."""
    return _backend(backend).process_index


def process_indices(backend: str | None = None) -> list[int]:
    """The indices of every process of the program."""
    return _backend(backend).process_indices


def process_count(backend: str | None = None) -> int:
    """The number of processes of the program (1 unless started with the distributed runtime)."""
    return len(process_indices(backend))


def _backend(backend: str | None) -> runtime.Backend:
    return devices(backend)[0].backend


def make_array_from_callback(shape: Sequence[int], sharding: Sharding, data_callback: Callable[[Any], Any],
                             dtype: Any = None) -> Array:
    """An array of ``shape`` laid out by ``sharding`` whose pieces come from ``data_callback(index)`` (the
    slices of the whole array each device holds)."""
    shape = tuple(int(d) for d in shape)
    indices = sharding.devices_indices_map(shape)
    pieces = {d: np.asarray(data_callback(idx)) for d, idx in indices.items()}
    return _assemble(shape, sharding, pieces, dtype, "make_array_from_callback")


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Sharding, arrays: Sequence[Any], *,
                                         dtype: Any = None) -> Array:
    """An array of ``shape`` laid out by ``sharding`` from one array per device (each on its device, in the
    order of ``sharding``'s devices, holding that device's piece). The pieces go through the host."""
    shape = tuple(int(d) for d in shape)
    devices = sharding._device_assignment
    if len(arrays) != len(devices):
        raise ValueError(f"kiln.make_array_from_single_device_arrays: {len(arrays)} arrays for the {len(devices)} "
                         f"devices of {sharding}; give one per device")
    for a, d in zip(arrays, devices):
        if type(a) is Array and a._device is not None and a._device != d:
            raise ValueError(f"kiln.make_array_from_single_device_arrays: the array for {d} is on {a._device}; "
                             "put each piece on its device, in the order of the sharding's devices")
    return _assemble(shape, sharding, {d: np.asarray(a) for a, d in zip(arrays, devices)}, dtype,
                     "make_array_from_single_device_arrays")


def make_array_from_process_local_data(sharding: Sharding, local_data: Any, global_shape: Any = None) -> Array:
    """The global array whose part on this process's devices is ``local_data``. With one process the local
    data is the whole array."""
    local = np.asarray(local_data)
    if global_shape is not None and tuple(global_shape) != local.shape and process_count() == 1:
        raise ValueError(f"kiln.make_array_from_process_local_data: with one process the local data is the whole "
                         f"array, but its shape {local.shape} differs from global_shape {tuple(global_shape)}")
    return device_put(local, sharding)


def _assemble(shape: tuple[int, ...], sharding: Sharding, pieces: dict, dtype: Any, where: str) -> Array:
    want = sharding.shard_shape(shape)
    for d, p in pieces.items():
        if p.shape != want:
            raise ValueError(f"kiln.{where}: the piece for {d} has shape {p.shape}, but {sharding} gives each device "
                             f"a piece of shape {want} of the shape {shape}")
    first = next(iter(pieces.values()))
    target = dtypes.canonicalize_dtype(dtype if dtype is not None else first.dtype)
    whole = np.empty(shape, target)
    for d, idx in sharding.devices_indices_map(shape).items():
        whole[idx] = pieces[d]
    return device_put(whole, sharding)


def _resolve_device(device: Any) -> runtime.Device | Sharding | None:
    if device is None or isinstance(device, runtime.Device):
        return device
    if isinstance(device, PartitionSpec):  # with the mesh in context (kiln.set_mesh)
        device = resolve_spec(device, "kiln.device_put")
    if isinstance(device, str):  # a backend name: its first device
        return runtime.get_backend(device).devices()[0]
    if isinstance(device, Sharding):
        devices = device._device_assignment
        return devices[0] if len(devices) == 1 and not isinstance(device, NamedSharding) else device
    raise TypeError(f"kiln.device_put: device must be a kiln device (from kiln.devices()), a kiln.sharding "
                    "Sharding (or a PartitionSpec with a mesh in context) "
                    f"or a backend name, got {type(device).__name__} {device!r:.60}")


def device_put(x: Any, device: Any = None) -> Any:
    """Copy ``x`` (an array, NumPy array, scalar or pytree of them) to ``device``: a device, or a
    ``kiln.sharding`` Sharding that lays each array out over several devices (``NamedSharding``).

    With a device or sharding the result is *committed*: computations on it run there. Without
    one, arrays go to the default device uncommitted.
    """
    target = _resolve_device(device)

    def put_leaf(leaf):
        if isinstance(leaf, Tracer):
            return leaf  # inside a trace placement is decided by the enclosing computation
        if isinstance(target, Sharding):
            return _put_sharded(leaf, target)
        return dispatch.put(leaf, target, committed=target is not None)
    return tree_util.tree_map(put_leaf, x)


def _put_sharded(x: Any, sharding: Sharding) -> Array:
    """``x`` laid out by ``sharding``: each device gets its piece (through the host)."""
    if type(x) is Array and x._sharding is sharding:
        return x
    value = np.asarray(x) if type(x) is Array else dispatch.canonical_host_array(x)
    aval = abstractify(x)
    indices = sharding.devices_indices_map(value.shape)  # checks that the pieces divide the shape
    devices = sharding._device_assignment
    if len(devices) == 1:
        return Array(runtime.put(np.ascontiguousarray(value), devices[0]), aval, devices[0], True, sharding)
    pieces = [value[indices[d]] for d in devices]
    buf = runtime.put_sharded(pieces, runtime_sharding(sharding, value.ndim), value.shape, value.dtype)
    return Array(buf, aval, None, True, sharding)


def device_get(x: Any) -> Any:
    """Copy arrays in ``x`` (a pytree) to host NumPy arrays; other leaves are returned as they are."""
    def get_leaf(leaf):
        if isinstance(leaf, Array):
            return np.asarray(leaf)
        return leaf
    return tree_util.tree_map(get_leaf, x)


def block_until_ready(x: Any) -> Any:
    """Wait for every array in the pytree ``x``; returns ``x``."""
    for leaf in tree_util.tree_leaves(x):
        if isinstance(leaf, Array):
            leaf.block_until_ready()
    return x
