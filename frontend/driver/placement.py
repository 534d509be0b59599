"""Devices and data placement: ``kiln.devices``, ``kiln.device_put``, ``kiln.device_get``."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from kiln import runtime

from ..core import dtypes, tree_util
from ..core.avals import ShapedArray
from ..core.tracing import Tracer, abstractify
from . import dispatch
from .array import Array
from .layout import Format, resolve_format
from .memory import Space
from .retrace import warn_at_user
from .sharding import NamedSharding, PartitionSpec, Sharding, SingleDeviceSharding, resolve_spec, runtime_sharding


def devices(backend: str | None = None) -> list[runtime.Device]:
    """The devices of ``backend`` (default: the default backend), e.g. ``[CpuDevice(id=0)]``; in a
    multi-process run (``kiln.distributed``) every process's devices."""
    from ..core.config import config
    return runtime.global_devices(backend or config.default_backend)


def local_devices(process_index: int | None = None, backend: str | None = None,
                  host_id: int | None = None) -> list[runtime.Device]:
    """This process's devices of ``backend`` (default: the default backend); with ``process_index``, that
    process's."""
    from ..core.config import config
    if process_index is None and host_id is not None:
        process_index = host_id
    if process_index is None:
        return runtime.devices(backend or config.default_backend)
    return [d for d in devices(backend) if d.process_index == process_index]


def device_count(backend: str | None = None) -> int:
    """The number of devices of ``backend`` (default: the default backend), of every process."""
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


def _renamed(old: str, new: Callable[..., Any]) -> Callable[..., Any]:
    """JAX's older ``host_*`` names: they still work, with a warning naming the new one (as in JAX)."""
    def alias(backend: str | None = None) -> Any:
        warn_at_user(f"kiln.{old} is the old name of kiln.{new.__name__} (JAX renamed it; the old name will be "
                     f"removed): call kiln.{new.__name__}() instead.", DeprecationWarning)
        return new(backend)
    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"The old name of :func:`{new.__name__}` (warns)."
    return alias


host_count = _renamed("host_count", process_count)
host_id = _renamed("host_id", process_index)
host_ids = _renamed("host_ids", process_indices)


def _backend(backend: str | None) -> runtime.Backend:
    return devices(backend)[0].backend


def make_array_from_callback(shape: Sequence[int], sharding: Sharding, data_callback: Callable[[Any], Any],
                             dtype: Any = None) -> Array:
    """An array of ``shape`` laid out by ``sharding`` whose pieces come from ``data_callback(index)`` (the
    slices of the whole array each device holds). In a multi-process run each process asks only for the
    pieces of its own devices."""
    shape = tuple(int(d) for d in shape)
    indices = sharding.addressable_devices_indices_map(shape)
    pieces = {d: np.asarray(data_callback(idx)) for d, idx in indices.items()}
    with runtime.transfer_guard.explicit_put():
        return _assemble(shape, sharding, pieces, dtype, "make_array_from_callback")


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Sharding, arrays: Sequence[Any], *,
                                         dtype: Any = None) -> Array:
    """An array of ``shape`` laid out by ``sharding`` from one array per device of this process (in the order
    of ``sharding``'s devices, each holding that device's piece). The pieces go through the host."""
    shape = tuple(int(d) for d in shape)
    devices = _addressable(sharding)
    if len(arrays) != len(devices):
        scope = "" if len(devices) == sharding.num_devices else " addressable (this process's)"
        raise ValueError(f"kiln.make_array_from_single_device_arrays: {len(arrays)} arrays for the {len(devices)}"
                         f"{scope} devices of {sharding}; give one per device")
    for a, d in zip(arrays, devices):
        if type(a) is Array and a._device is not None and a._device != d:
            raise ValueError(f"kiln.make_array_from_single_device_arrays: the array for {d!r} is on {a._device!r}; "
                             "put each piece on its device, in the order of the sharding's devices")
    return _assemble(shape, sharding, {d: np.asarray(a) for a, d in zip(arrays, devices)}, dtype,
                     "make_array_from_single_device_arrays")


def make_array_from_process_local_data(sharding: Any, local_data: Any, global_shape: Any = None) -> Any:
    """The global array whose part on this process's devices is ``local_data``: the block of the global array
    those devices hold (with one process, the whole array). ``global_shape`` defaults to the local shape
    scaled by the number of processes' blocks along each dimension.

    As JAX's: ``local_data`` may be a pytree of arrays (the result has its structure), ``sharding`` a sharding
    or a ``PartitionSpec`` (over the mesh in context), or a pytree prefix of them, and ``global_shape`` a shape
    or a pytree prefix of shapes."""
    where = "kiln.make_array_from_process_local_data"
    leaves, treedef = tree_util.tree_flatten(local_data)
    if treedef.num_nodes == 1 and treedef.num_leaves == 1:  # one array: the common case
        return _from_process_local_data(resolve_spec(sharding, where), leaves[0], global_shape, where)

    def per_leaf(prefix: Any, is_leaf: Callable[[Any], bool], what: str) -> list:
        try:
            return tree_util.tree_leaves(tree_util.tree_broadcast(prefix, local_data, is_leaf=is_leaf),
                                         is_leaf=is_leaf)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{where}: {what} must be one value or a pytree prefix of local_data's structure "
                             f"{treedef}: {e}") from None
    shardings = per_leaf(sharding, lambda x: isinstance(x, (Sharding, PartitionSpec)), "sharding")
    shapes = per_leaf(global_shape, lambda x: x is None or (isinstance(x, tuple) and all(
        isinstance(d, (int, np.integer)) for d in x)), "global_shape")
    return treedef.unflatten([_from_process_local_data(resolve_spec(s, where), x, g, where)
                              for s, x, g in zip(shardings, leaves, shapes)])


def _from_process_local_data(sharding: Sharding, local_data: Any, global_shape: Any, where: str) -> Array:
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{where}: sharding must be a kiln sharding or a PartitionSpec, got {sharding!r:.60}")
    local = np.asarray(local_data)
    if sharding.is_fully_addressable:
        if global_shape is not None and tuple(global_shape) != local.shape:
            raise ValueError(f"{where}: the sharding's devices all belong to this process, so the local data is "
                             f"the whole array, but its shape {local.shape} differs from global_shape "
                             f"{tuple(global_shape)}")
        return device_put(local, sharding)
    ndim = local.ndim
    cuts = sharding._cuts(ndim)
    mine = [c for d, c in zip(sharding._device_assignment, sharding._coords(ndim)) if d in _addressable_set(sharding)]
    lows, counts = [], []
    for dim in range(ndim):
        held = sorted({c[dim] for c in mine})
        if held != list(range(held[0], held[0] + len(held))):
            raise ValueError(f"{where}: this process's devices hold pieces {held} along dimension {dim} of "
                             f"{sharding}, which are not contiguous, so one local block cannot describe them; "
                             "order the mesh's devices by process (kiln.make_mesh does) or use "
                             "kiln.make_array_from_callback")
        lows.append(held[0])
        counts.append(len(held))
        if local.shape[dim] % len(held):
            raise ValueError(f"{where}: dimension {dim} of the local data ({local.shape[dim]}) does not split into "
                             f"the {len(held)} pieces this process's devices hold along it")
    inferred = tuple(n * cut // k for n, cut, k in zip(local.shape, cuts, counts))
    shape = inferred if global_shape is None else tuple(int(n) for n in global_shape)
    if len(shape) != ndim or any(g * k != n * cut for g, n, cut, k in zip(shape, local.shape, cuts, counts)):
        raise ValueError(f"{where}: local data of shape {local.shape} is this process's block of an array of shape "
                         f"{inferred} under {sharding}, not of global_shape {shape}")
    piece = sharding.shard_shape(shape)
    pieces = {}
    for d, c in zip(sharding._device_assignment, sharding._coords(ndim)):
        if d in _addressable_set(sharding):
            pieces[d] = local[tuple(slice((ci - lo) * p, (ci - lo + 1) * p) for ci, lo, p in zip(c, lows, piece))]
    return _assemble(shape, sharding, pieces, None, where.split(".", 1)[1])


def _addressable(sharding: Sharding) -> list[runtime.Device]:
    """The sharding's devices that belong to this process, in its device order."""
    here = _addressable_set(sharding)
    return [d for d in sharding._device_assignment if d in here]


def _addressable_set(sharding: Sharding) -> set[runtime.Device]:
    return sharding.addressable_devices


def _assemble(shape: tuple[int, ...], sharding: Sharding, pieces: dict, dtype: Any, where: str) -> Array:
    """The array of ``shape`` laid out by ``sharding`` from ``pieces`` (one per addressable device)."""
    want = sharding.shard_shape(shape)
    for d, p in pieces.items():
        if p.shape != want:
            raise ValueError(f"kiln.{where}: the piece for {d} has shape {p.shape}, but {sharding} gives each device "
                             f"a piece of shape {want} of the shape {shape}")
    first = next(iter(pieces.values()))
    target = dtypes.canonicalize_dtype(dtype if dtype is not None else first.dtype)
    if sharding.is_fully_addressable:
        whole = np.empty(shape, target)
        for d, idx in sharding.devices_indices_map(shape).items():
            whole[idx] = pieces[d]
        return device_put(whole, sharding)
    devices = _addressable(sharding)
    buf = runtime.put_sharded([pieces[d] for d in devices], runtime_sharding(sharding, len(shape)), shape, target)
    return Array(buf, ShapedArray(shape, target), None, True, sharding)


def _resolve_device(device: Any) -> runtime.Device | Sharding | None:
    if device is None or isinstance(device, runtime.Device):
        return device
    if isinstance(device, PartitionSpec):  # with the mesh in context (kiln.set_mesh)
        device = resolve_spec(device, "kiln.device_put")
    if isinstance(device, str):  # a backend name: its first device
        return runtime.get_backend(device).devices()[0]
    if isinstance(device, Sharding):
        devices = device._device_assignment
        one = len(devices) == 1 and not isinstance(device, NamedSharding) and device._memory is None
        return devices[0] if one else device
    raise TypeError(f"kiln.device_put: device must be a kiln device (from kiln.devices()), a kiln.sharding "
                    "Sharding (or a PartitionSpec with a mesh in context) "
                    f"or a backend name, got {type(device).__name__} {device!r:.60}")


def _is_placement(d: Any) -> bool:
    """Whether ``d`` is one placement (not a pytree of them): None, a device, a sharding, a PartitionSpec or a
    backend name."""
    return d is None or isinstance(d, (runtime.Device, Sharding, PartitionSpec, str, Format, Space))


# The sharding constraint of a traced value, ``(tracer, NamedSharding) -> tracer``: registered by
# frontend/lax/sharding.py, a floor above this one, which owns the primitive.
traced_layout: list[Callable[[Any, NamedSharding], Any]] = []


def device_put(x: Any, device: Any = None, *, src: Any = None, donate: bool = False,
               may_alias: bool | None = None) -> Any:
    """Copy ``x`` (an array, NumPy array, scalar or pytree of them) to ``device``: a device, or a
    ``kiln.sharding`` Sharding that lays each array out over several devices (``NamedSharding``), or (as JAX)
    a pytree of those that is a prefix of ``x``'s structure, one placement per subtree.

    With a device or sharding the result is *committed*: computations on it run there. Without one, host
    values go to the default device uncommitted, and a kiln array stays as it is (as JAX's).

    As JAX's: ``src`` (where ``x`` is; kiln reads that from ``x``) is accepted; ``donate=True`` lets the result
    reuse the input's buffers, best effort (kiln never does: the input stays valid, as JAX's on the CPU); with
    ``may_alias=False`` the result never shares the input's buffers. ``donate`` and ``may_alias`` are bools.
    """
    if not isinstance(donate, bool):
        raise TypeError(f"kiln.device_put: donate must be a bool, got {donate!r:.60} (kiln takes one flag for the "
                        "whole of x)")
    if not (may_alias is None or isinstance(may_alias, bool)):
        raise TypeError(f"kiln.device_put: may_alias must be a bool or None, got {may_alias!r:.60} (kiln takes one "
                        "flag for the whole of x)")
    if donate and may_alias:
        raise ValueError("may_alias and donate cannot be True at the same time. (kiln.device_put: pass one)")
    if may_alias is False:  # the same placement, then buffers of its own for any array that would be shared
        put = device_put(x, device)
        return tree_util.tree_map(lambda old, new: _copied(new) if new is old and type(new) is Array else new,
                                  x, put)
    if isinstance(device, Format):  # a layout (kiln's: the default) with a sharding
        for leaf in tree_util.tree_leaves(x):
            resolve_format(device, leaf.ndim if hasattr(leaf, "ndim") else np.ndim(leaf), "kiln.device_put")
        device = device.sharding
    if not _is_placement(device) and isinstance(device, (tuple, list, dict)):
        targets, tree = tree_util.tree_flatten(device, is_leaf=_is_placement)
        try:
            parts = tree_util.flatten_prefix(tree, x)
        except ValueError as e:
            at = tree_util.keystr(getattr(e, "path", ())) or "the root"
            raise ValueError(f"kiln.device_put: the placements are not a pytree prefix of x: at {at}, {e}. x has "
                             f"structure {tree_util.tree_structure(x)}; give one placement (a device or sharding), "
                             "or a pytree of them with one for each array or subtree of x") from None
        return tree.unflatten([device_put(part, d) for part, d in zip(parts, targets)])
    if isinstance(device, Space):
        return tree_util.tree_map(lambda leaf: _put_in_space(leaf, device), x)
    target = _resolve_device(device)

    def put_leaf(leaf):
        if target is None and type(leaf) is Array and not leaf.is_deleted():
            return leaf  # no target: an array keeps its placement and commitment (JAX: returned as it is)
        if isinstance(leaf, Tracer):
            # Inside a trace a layout over a mesh is a sharding constraint, as JAX's device_put under jit (a mesh
            # of other devices than the program's is then refused where jit places the program); a device or
            # another memory is decided by the enclosing computation.
            if isinstance(target, NamedSharding) and target._memory is None and traced_layout:
                return traced_layout[0](leaf, target)
            return leaf
        if isinstance(target, Sharding):
            return _put_sharded(leaf, target)
        return dispatch.put(leaf, target, committed=target is not None)
    with runtime.transfer_guard.explicit_put():  # what the transfer guards let through
        return tree_util.tree_map(put_leaf, x)


def _copied(x: Array) -> Array:
    """``x`` where it is, in buffers of its own (a device-to-device copy)."""
    return Array(runtime.copy(x._buf), x.aval, x._device, x._committed, x._sharding)


def _put_in_space(x: Any, space: Space) -> Any:
    """``x`` in memory ``space`` of the devices it is on (the default device for a host value), laid out as it is."""
    if isinstance(x, Tracer):
        return x  # inside a trace placement is decided by the enclosing computation
    sharding = x.sharding if type(x) is Array else SingleDeviceSharding(dispatch.default_device())
    return device_put(x, sharding.with_memory_kind(space.memory_kind))


def _put_sharded(x: Any, sharding: Sharding) -> Array:
    """``x`` laid out by ``sharding``: each device gets its piece (through the host)."""
    if type(x) is Array and x._sharding is sharding:
        return x
    if type(x) is Array and not x.is_fully_addressable:
        if x._sharding is not None and x._sharding.is_equivalent_to(sharding, x.ndim):
            return Array(x._buf, x.aval, None, True, sharding)
        raise ValueError(f"kiln.device_put: the array spans devices of other processes ({x.sharding}); kiln cannot "
                         f"move it to {sharding} outside a computation. Pass it to a kiln.jit function with "
                         "out_shardings=... to re-lay it out")
    devices = sharding._device_assignment
    # On one device, the array keeps the sharding where it says more than the device: a mesh's, another memory.
    kept = sharding if isinstance(sharding, NamedSharding) or sharding._memory is not None else None
    if len(devices) == 1 and type(x) is Array and x._device is not None:  # device to device (or memory)
        return Array(runtime.copy_to(x._buf, devices[0], sharding._memory), x.aval, devices[0], True, kept)
    value = np.asarray(x) if type(x) is Array else dispatch.canonical_host_array(x)
    aval = abstractify(x)
    indices = sharding.devices_indices_map(value.shape)  # checks that the pieces divide the shape
    if len(devices) == 1:
        return Array(runtime.put(np.asarray(value, order="C"), devices[0], sharding._memory), aval, devices[0],
                     True, kept)
    pieces = [value[indices[d]] for d in _addressable(sharding)]
    buf = runtime.put_sharded(pieces, runtime_sharding(sharding, value.ndim), value.shape, value.dtype)
    return Array(buf, aval, None, True, sharding)


def device_get(x: Any) -> Any:
    """Copy arrays in ``x`` (a pytree) to host NumPy arrays; other leaves are returned as they are."""
    def get_leaf(leaf):
        if isinstance(leaf, Array):
            return np.asarray(leaf)
        return leaf
    with runtime.transfer_guard.explicit_get():
        return tree_util.tree_map(get_leaf, x)


def copy_to_host_async(x: Any) -> Any:
    """Start copying every array in the pytree ``x`` to the host (see ``Array.copy_to_host_async``);
    returns ``x``. Other leaves are left alone."""
    for leaf in tree_util.tree_leaves(x):
        if isinstance(leaf, Array):
            leaf.copy_to_host_async()
    return x


def block_until_ready(x: Any) -> Any:
    """Wait for every array in the pytree ``x``; returns ``x``."""
    for leaf in tree_util.tree_leaves(x):
        if isinstance(leaf, Array):
            leaf.block_until_ready()
    return x
