"""JAX's ``jax.experimental.mesh_utils`` and ``multihost_utils``: device grids for meshes, and the small
cross-process helpers training scripts use (a barrier, gathering host values from every process).

Every value that crosses processes goes through a kiln program over all devices (XLA's collectives), as in
JAX; in a single-process program the helpers work the same over the local devices.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import warnings
from typing import Any, Sequence

import numpy as np

from kiln import runtime

from ..core import tree_util
from . import placement
from .jit import jit
from .sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["create_device_mesh", "create_hybrid_device_mesh", "sync_global_devices", "process_allgather",
           "broadcast_one_to_all", "thread_guard"]


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


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's values of ``in_tree`` (host or kiln arrays), as NumPy arrays on every process: stacked
    along a new leading axis in process order, or concatenated along axis 0 with ``tiled``. An array laid out
    over devices of several processes is gathered whole (and returned as it is, as in JAX)."""
    mesh = _process_mesh()
    rows = NamedSharding(mesh, PartitionSpec("processes"))

    def one(x):
        if hasattr(x, "is_fully_addressable") and not x.is_fully_addressable:
            return np.asarray(_replicator(x.sharding.mesh)(x))
        stacked = placement.make_array_from_process_local_data(rows, np.asarray(x)[None])
        out = np.asarray(_replicator(mesh)(stacked))
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
