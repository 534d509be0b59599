"""JAX's ``jax.experimental.mesh_utils`` and ``multihost_utils``: device grids for meshes, and the small
cross-process helpers training scripts use (a barrier, gathering host values from every process, checking that
every process holds the same values, host-local data to global arrays and back, preemption sync points, the
live devices).

Every value that crosses processes goes through a kiln program over all devices (XLA's collectives), as in
JAX; in a single-process program the helpers work the same over the local devices. What the coordination
service answers (live processes, preemption) comes from :mod:`kiln.runtime.coordination`.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import warnings
from typing import Any, Sequence

import numpy as np
from kiln.runtime import coordination

from kiln import runtime

from ..core import tree_util
from ..core.errors import KilnError
from ..core.tracing import Tracer
from . import placement
from .array import Array
from .jit import jit
from .sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["create_device_mesh", "create_hybrid_device_mesh", "sync_global_devices", "process_allgather",
           "broadcast_one_to_all", "thread_guard", "assert_equal", "host_local_array_to_global_array",
           "global_array_to_host_local_array", "reached_preemption_sync_point", "live_devices",
           "ProcessFailureError"]

_WHERE = "kiln.experimental.multihost_utils"


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[runtime.Device] | None = None, *,
                       contiguous_submeshes: bool = False, allow_split_physical_axes: bool = False) -> np.ndarray:
    """The devices (``kiln.devices()`` by default) as an array of ``mesh_shape``, in device order (kiln knows
    no physical topology: on CPU and single-host GPU machines the order is the natural one)."""
    devs = list(placement.devices() if devices is None else devices)
    shape = tuple(int(n) for n in mesh_shape)
    if math.prod(shape) != len(devs):
        raise ValueError(f"kiln.experimental.mesh_utils.create_device_mesh: a mesh of shape {shape} needs "
                         f"{math.prod(shape)} devices, but {len(devs)} were given")
    return np.array(devs, dtype=object).reshape(shape)


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[runtime.Device] | None = None, *, process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
    """A mesh whose axes are ``dcn_mesh_shape[i] * mesh_shape[i]``: the outer factor across processes (one
    granule per process), the inner one within a process."""
    devs = list(placement.devices() if devices is None else devices)
    inner, outer = tuple(int(n) for n in mesh_shape), tuple(int(n) for n in dcn_mesh_shape)
    if len(inner) != len(outer):
        raise ValueError("kiln.experimental.mesh_utils.create_hybrid_device_mesh: mesh_shape and dcn_mesh_shape "
                         f"must have the same length, got {inner} and {outer}")
    by_process: dict[int, list] = {}
    for d in devs:
        by_process.setdefault(d.process_index, []).append(d)
    granules = [by_process[p] for p in sorted(by_process)]
    if len(granules) != math.prod(outer) or any(len(g) != math.prod(inner) for g in granules):
        raise ValueError(f"kiln.experimental.mesh_utils.create_hybrid_device_mesh: {len(granules)} processes of "
                         f"{sorted({len(g) for g in granules})} devices do not make dcn_mesh_shape {outer} of "
                         f"mesh_shape {inner}")
    blocks = np.array([np.array(g, dtype=object).reshape(inner) for g in granules], dtype=object)
    blocks = blocks.reshape(outer + inner)
    n = len(inner)
    # Interleave: axis i is (outer_i, inner_i), the outer factor major.
    order = [k for i in range(n) for k in (i, n + i)]
    return blocks.transpose(order).reshape(tuple(o * i for o, i in zip(outer, inner)))


def _process_mesh() -> Mesh:
    """All devices as a (processes, local devices) mesh: one row per process."""
    rows = [placement.local_devices(process_index=p) for p in range(placement.process_count())]
    return Mesh(np.array(rows, dtype=object), ("processes", "local"))


def _identity(a: Any) -> Any:
    return a


@functools.lru_cache(maxsize=16)
def _replicator(mesh: Mesh) -> Any:
    """A jitted identity whose result is replicated over ``mesh`` (one per mesh: compiled once per shape)."""
    return jit(_identity, out_shardings=NamedSharding(mesh, PartitionSpec()))


def _host_copy(gathered: Array) -> np.ndarray:
    """A replicated result of a cross-process program as a NumPy array, once every local device's part of the
    program has run. Reading it waits for one device only: another's collective (a group of the other devices)
    could still be in flight when this process moves on, and if the processes then exit, it waits forever for peers
    that have gone (a hang at exit)."""
    gathered.block_until_ready()
    return np.asarray(gathered)


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's values of ``in_tree`` (host or kiln arrays), as NumPy arrays on every process: stacked
    along a new leading axis in process order, or concatenated along axis 0 with ``tiled``. An array laid out
    over devices of several processes is gathered whole (and returned as it is, as in JAX)."""
    mesh = _process_mesh()
    rows = NamedSharding(mesh, PartitionSpec("processes"))

    def one(x):
        if hasattr(x, "is_fully_addressable") and not x.is_fully_addressable:
            return _host_copy(_replicator(x.sharding.mesh)(x))
        stacked = placement.make_array_from_process_local_data(rows, np.asarray(x)[None])
        out = _host_copy(_replicator(mesh)(stacked))
        return out.reshape((-1,) + out.shape[2:]) if tiled and out.ndim > 1 else out
    return tree_util.tree_map(one, in_tree)


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """Process 0's values of ``in_tree`` (or those of the process where ``is_source``), on every process."""
    source = placement.process_index() == 0 if is_source is None else bool(is_source)
    flags = process_allgather(np.array(source))
    if int(flags.sum()) != 1:
        raise ValueError(f"kiln.experimental.multihost_utils.broadcast_one_to_all: exactly one process must be the "
                         f"source, but {int(flags.sum())} are")
    which = int(np.argmax(flags))
    return tree_util.tree_map(lambda x: process_allgather(x)[which], in_tree)


def sync_global_devices(name: str) -> None:
    """Wait until every process reaches this point with the same ``name`` (a cross-process all-gather of its
    hash; a different name is an error, as JAX's)."""
    digest = np.frombuffer(hashlib.sha1(name.encode()).digest()[:8], np.uint8).astype(np.int32)
    got = process_allgather(digest)
    if not (got == got[:1]).all():
        raise RuntimeError(f"kiln.experimental.multihost_utils.sync_global_devices: processes reached different "
                           f"barriers (this one: {name!r})")


@contextlib.contextmanager
def thread_guard(enabled: bool = True):
    """JAX's ``jax.thread_guard``: in a program of several processes, JAX raises when a computation is dispatched
    from a thread other than the one that entered the guard. In one process it checks nothing (as JAX's); with
    several, kiln does not check either and warns so once."""
    if enabled and placement.process_count() > 1:
        warnings.warn("kiln.thread_guard: kiln does not check which thread dispatches computations in a program of "
                      "several processes; the guard is accepted and has no effect", stacklevel=3)
    yield


# -- assert_equal ----------------------------------------------------------------------------------------

def _host_value(x: Any) -> np.ndarray:
    """This process's value of a leaf: an array spanning processes is one value, of which this process's first
    piece stands for it (as JAX's)."""
    if type(x) is Array and not x.is_fully_addressable:
        return np.asarray(x.addressable_data(0))
    return np.asarray(x)


def _digest(text: str) -> np.ndarray:
    return np.frombuffer(hashlib.sha1(text.encode()).digest()[:8], np.uint8).astype(np.int32)


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal, NaNs equal to NaNs (a NaN held by every process is the same value)."""
    same = a == b
    if a.dtype.kind not in "biuSUO":  # floating and complex, ml_dtypes' narrow floats too: NaN != NaN
        same = same | ((a != a) & (b != b))
    return bool(np.all(same))


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """Check that every process holds the same pytree of values (host or kiln arrays, scalars); raises
    ``AssertionError`` (starting with ``fail_message``) naming the first leaf that differs and the processes
    whose value differs from this one's. Call it in every process. The structures, shapes and dtypes are
    compared first, so that different ones fail instead of starting mismatched collectives."""
    paths_leaves, treedef = tree_util.tree_flatten_with_path(in_tree)
    values = [_host_value(x) for _, x in paths_leaves]
    prefix = f"{fail_message}. " if fail_message else ""
    where = f"{_WHERE}.assert_equal"
    layout = f"{treedef} " + ", ".join(f"{v.dtype}{list(v.shape)}" for v in values)
    signatures = process_allgather(_digest(layout))
    if not (signatures == signatures[:1]).all():
        raise AssertionError(f"{prefix}{where}: the processes hold pytrees of different structures, shapes or "
                             f"dtypes; this process ({placement.process_index()}) holds {layout}")
    gathered = process_allgather(values)
    here = placement.process_index()
    for (path, _), value, rows in zip(paths_leaves, values, gathered):
        differ = [p for p, row in enumerate(rows) if not _same_values(row, value)]
        if differ:
            at = tree_util.keystr(path) or "the root"
            raise AssertionError(f"{prefix}{where}: the processes hold different values at {at}: process(es) "
                                 f"{differ} differ from this process ({here}), which holds {value!r:.200}")


# -- host-local data <-> global arrays ----------------------------------------------------------------------

def _is_spec(x: Any) -> bool:
    return x is None or isinstance(x, PartitionSpec)


def _specs_per_leaf(tree: Any, pspecs: Any, where: str) -> tuple[list, list, Any]:
    """The leaves of ``tree``, the PartitionSpec of each (``pspecs`` is a pytree prefix of ``tree``) and
    ``tree``'s structure."""
    leaves, treedef = tree_util.tree_flatten(tree)
    specs, spec_tree = tree_util.tree_flatten(pspecs, is_leaf=_is_spec)
    try:
        parts = tree_util.flatten_prefix(spec_tree, tree)
    except ValueError as e:
        at = tree_util.keystr(getattr(e, "path", ())) or "the root"
        raise ValueError(f"{where}: pspecs is not a pytree prefix of the inputs: at {at}, {e}. The inputs have "
                         f"structure {treedef}; give one PartitionSpec, or a pytree of them with one for each array "
                         "or subtree") from None
    per_leaf = [spec for part, spec in zip(parts, specs) for _ in tree_util.tree_leaves(part)]
    return leaves, per_leaf, treedef


def _check_spec(spec: Any, where: str) -> PartitionSpec:
    if spec is None:
        raise ValueError(f"{where}: `None` is not a valid input to the pspecs argument. Please use "
                         "kiln.sharding.PartitionSpec() if you wanted to replicate your input.")
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"{where}: pspecs must be kiln.sharding.PartitionSpecs (or a pytree of them), got "
                        f"{type(spec).__name__} {spec!r:.60}")
    return spec


def _check_mesh(mesh: Any, where: str) -> Mesh:
    if not isinstance(mesh, Mesh):
        raise TypeError(f"{where}: global_mesh must be a kiln.sharding.Mesh, got {type(mesh).__name__}")
    return mesh


def _traced(x: Any, mesh: Mesh, where: str) -> Any:
    """A traced value (under jit, grad, vmap): in one process host-local and global are one value, so it is
    returned as it is (JAX's rule lowers to the identity too); across processes kiln cannot change its shape."""
    if mesh.is_multi_process:
        raise NotImplementedError(f"{where}: kiln converts between host-local and global arrays outside traced "
                                  "functions only when the mesh spans several processes; call it before (or after) "
                                  "the kiln.jit function, on its arguments (or results)")
    return x


def local_mesh_of(mesh: Mesh, where: str) -> Mesh:
    """The sub-mesh of this process's devices: they must form one block of the mesh (as JAX requires)."""
    if not mesh.is_multi_process:
        return mesh
    here = placement.process_index()
    mine = np.argwhere(np.vectorize(lambda d: d.process_index == here, otypes=[bool])(mesh.devices))
    if not len(mine):
        raise ValueError(f"{where}: the mesh {mesh} has no device of this process ({here})")
    block = tuple(slice(lo, hi + 1) for lo, hi in zip(mine.min(0), mine.max(0)))
    devices = mesh.devices[block]
    if devices.size != len(mine):
        raise ValueError(f"{where}: this process's devices do not form one block of the mesh {mesh}, so its local "
                         "data cannot be one block of the global array; order the mesh's devices by process "
                         "(kiln.make_mesh does) or use kiln.make_array_from_single_device_arrays")
    return Mesh(devices, mesh.axis_names, mesh.axis_types)


def _local_to_global(x: Any, mesh: Mesh, spec: Any, where: str) -> Any:
    spec = _check_spec(spec, where)
    if isinstance(x, Tracer):
        return _traced(x, mesh, where)
    if type(x) is Array and not x.is_fully_addressable:
        return x  # global already
    sharding = NamedSharding(mesh, spec)
    if not mesh.is_multi_process:
        return placement.device_put(x, sharding)
    local_mesh_of(mesh, where)  # the block check, with this function's message
    return placement.make_array_from_process_local_data(sharding, x)


def host_local_array_to_global_array(local_inputs: Any, global_mesh: Mesh, pspecs: Any) -> Any:
    """Each process's host-local values (a pytree of host or kiln arrays) as global arrays laid out over
    ``global_mesh`` by ``pspecs`` (one ``PartitionSpec``, or a pytree prefix of ``local_inputs``): a dimension a
    spec splits over mesh axes that span processes is the concatenation of the processes' values (in mesh
    order), a replicated one is the value of every process (which must then be the same). This process's
    devices must form one block of the mesh. In one process the global array is the local one, laid out by the
    spec. Arrays that span processes already are returned as they are; traced values (inside jit, grad, vmap) in
    a one-process mesh too."""
    where = f"{_WHERE}.host_local_array_to_global_array"
    mesh = _check_mesh(global_mesh, where)
    leaves, specs, treedef = _specs_per_leaf(local_inputs, pspecs, where)
    return treedef.unflatten([_local_to_global(x, mesh, s, where) for x, s in zip(leaves, specs)])


@functools.lru_cache(maxsize=16)
def _resharder(sharding: NamedSharding) -> Any:
    """A jitted identity whose result is laid out by ``sharding`` (moves arrays that span processes)."""
    return jit(_identity, out_shardings=sharding)


def _local_shape(shape: tuple[int, ...], mesh: Mesh, local: Mesh, spec: PartitionSpec, where: str) -> tuple:
    """The shape of this process's block of a global array of ``shape`` laid out over ``mesh`` by ``spec``."""
    out = []
    for dim, n in enumerate(shape):
        blocks = math.prod(mesh.shape[a] // local.shape[a] for a in spec.axis_names_of(dim))
        if n % blocks:
            raise ValueError(f"{where}: dimension {dim} of the global shape {shape} does not split into the "
                             f"{blocks} processes' blocks {spec} gives it over {mesh}")
        out.append(n // blocks)
    return tuple(out)


def _global_to_local(x: Any, mesh: Mesh, spec: Any, where: str) -> Any:
    spec = _check_spec(spec, where)
    if isinstance(x, Tracer):
        return _traced(x, mesh, where)
    if type(x) is Array and x.is_fully_addressable:
        return x  # host-local already
    sharding = NamedSharding(mesh, spec)
    if not mesh.is_multi_process:
        return placement.device_put(x, sharding)
    local = local_mesh_of(mesh, where)
    local_sharding = NamedSharding(local, spec)
    if type(x) is Array:
        if not x.sharding.is_equivalent_to(sharding, x.ndim):
            x = _resharder(sharding)(x)
        pieces = {s.device: s.data for s in x.addressable_shards}
    else:  # a host value of the global array: this process's pieces of it
        value = np.asarray(x)
        pieces = {d: value[idx] for d, idx in sharding.addressable_devices_indices_map(value.shape).items()}
    shape = _local_shape(tuple(x.shape if type(x) is Array else value.shape), mesh, local, spec, where)
    return placement.make_array_from_single_device_arrays(shape, local_sharding,
                                                          [pieces[d] for d in local.devices.flat])


def global_array_to_host_local_array(global_inputs: Any, global_mesh: Mesh, pspecs: Any) -> Any:
    """The inverse of :func:`host_local_array_to_global_array`: each global array of ``global_inputs`` (laid out
    over ``global_mesh`` by ``pspecs``, and moved to that layout first if it is laid out otherwise) as this
    process's block of it, an array over this process's devices. Arrays held by this process alone are
    returned as they are; in one process the global array is the local one."""
    where = f"{_WHERE}.global_array_to_host_local_array"
    mesh = _check_mesh(global_mesh, where)
    leaves, specs, treedef = _specs_per_leaf(global_inputs, pspecs, where)
    return treedef.unflatten([_global_to_local(x, mesh, s, where) for x, s in zip(leaves, specs)])


# -- the coordination service: preemption, live devices -----------------------------------------------------

def reached_preemption_sync_point(step_id: int) -> bool:
    """Whether every process has reached the step at which to save a checkpoint after a preemption notice
    (SIGTERM) reached one of them. Call it at every step, in every process, from the same first step; the
    processes agree on the step after the largest one any had reached when the notice came, and the call for
    that step returns True. Always False in a single-process program."""
    return coordination.reached_preemption_sync_point(step_id, f"{_WHERE}.reached_preemption_sync_point")


class ProcessFailureError(KilnError, RuntimeError):
    """Raised by ``live_devices`` when processes failed during its ``with`` block; ``failed_devices`` is the set
    of their devices."""

    def __init__(self, failed_devices: set[runtime.Device]) -> None:
        self.failed_devices = failed_devices
        super().__init__(f"Devices failed: {failed_devices}")


class _LiveDevices:
    """``with live_devices(devices) as alive:``: the devices among ``devices`` whose processes are alive, the
    same list in every process (entering is a barrier among the live processes of ``devices``). On leaving, the
    processes ask again: if some died (or restarted) meanwhile, every live process raises
    :class:`ProcessFailureError` naming their devices (chained to the block's own exception, if any); otherwise
    the block's exception, if any, propagates. ``devices`` must include some of this process's. Needs
    ``kiln.distributed.initialize``."""

    def __init__(self) -> None:
        self._known: tuple[tuple, dict] | None = None  # (the devices asked about, their live ones -> incarnation)

    @staticmethod
    def _alive(devices: Sequence[runtime.Device], where: str) -> dict:
        processes = {d.process_index for d in devices}
        if placement.process_index() not in processes:
            raise ValueError(f"{where}: none of the devices given belongs to this process "
                             f"({placement.process_index()}); include this process's devices")
        incarnations = coordination.live_processes(processes, where)
        return {d: incarnations[d.process_index] for d in devices if d.process_index in incarnations}

    @contextlib.contextmanager
    def __call__(self, devices: Sequence[runtime.Device]):
        where = f"{_WHERE}.live_devices"
        if runtime.distributed.state() is None:
            raise runtime.distributed.DistributedError(f"{where}: the distributed runtime is not initialized; call "
                                                       "kiln.distributed.initialize(...) first, in every process")
        devices = list(devices) if devices is not None else []
        if not devices:
            raise ValueError(f"{where}: no devices given; pass the devices to run on, e.g. kiln.devices()")
        key = tuple(devices)
        old = self._known[1] if self._known is not None and self._known[0] == key else self._alive(devices, where)
        failure: BaseException | None = None
        try:
            yield sorted(old, key=lambda d: d.id)
        except Exception as e:
            failure = e
        new = self._alive(devices, where)
        self._known = (key, new)
        failed = {d for d in old if new.get(d) != old[d]}
        if failed:
            raise ProcessFailureError(failed) from failure
        if failure is not None:
            raise failure


live_devices = _LiveDevices()
