"""How an array is laid out over devices: ``Mesh``, ``PartitionSpec``, ``NamedSharding``, ``SingleDeviceSharding``.

JAX's vocabulary (``kiln.sharding``). A mesh is an n-d array of devices with a name per axis; a
``PartitionSpec`` says, per array dimension, which mesh axes split it (``None``: not split); a
``NamedSharding`` pairs the two. Mesh axes that split no dimension replicate the array. kiln hands
these layouts to XLA's partitioner as Shardy attributes (``sdy.sharding``) and never schedules devices
itself. All mesh axes behave as JAX's ``AxisType.Auto`` axes (the partitioner chooses intermediate
layouts); ``Explicit`` and ``Manual`` types are accepted and recorded.
"""
from __future__ import annotations

import enum
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from kiln import runtime

from ..core.config import config


class AxisType(enum.Enum):
    """How a mesh axis is partitioned (JAX's ``jax.sharding.AxisType``); kiln treats all three as Auto."""
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self) -> str:
        return self.name


def _axis_types(axis_types: Any, n: int) -> tuple[AxisType, ...]:
    if axis_types is None:
        return (AxisType.Auto,) * n
    types = (axis_types,) if isinstance(axis_types, AxisType) else tuple(axis_types)
    if len(types) != n or not all(isinstance(t, AxisType) for t in types):
        raise ValueError(f"kiln.sharding: axis_types must be {n} kiln.sharding.AxisType values (one per mesh "
                         f"axis), got {axis_types!r}")
    return types


class _Unconstrained:
    """``PartitionSpec.UNCONSTRAINED``: the partitioner may split this dimension as it likes."""

    def __repr__(self) -> str:
        return "UNCONSTRAINED"

    def __reduce__(self) -> str:
        return "UNCONSTRAINED"


UNCONSTRAINED = _Unconstrained()


def _canonical_entry(entry: Any) -> Any:
    """One dimension's entry: None, an axis name, or a tuple of two or more axis names."""
    if entry is None or entry is UNCONSTRAINED or isinstance(entry, str):
        return entry
    if isinstance(entry, (tuple, list)):
        names = tuple(entry)
        for n in names:
            if not isinstance(n, str):
                raise TypeError(f"kiln.sharding.PartitionSpec: a dimension's entry must be None, a mesh axis name "
                                f"or a tuple of names; got {n!r} in {entry!r}")
        return None if not names else names[0] if len(names) == 1 else names
    raise TypeError(f"kiln.sharding.PartitionSpec: a dimension's entry must be None, a mesh axis name (str) or a "
                    f"tuple of names; got {type(entry).__name__} {entry!r}")


class PartitionSpec:
    """Per array dimension, the mesh axes that split it: ``P('data', None)`` splits dimension 0 over
    mesh axis ``data`` and leaves dimension 1 whole; missing trailing entries are ``None``.

    Specs are interned (``P('x') is P('x')``) and compare by identity, as JAX's; ``P('x')`` and
    ``P('x', None)`` are different specs that describe the same layout of a 2-d array.
    """
    __slots__ = ("_partitions", "__weakref__")
    UNCONSTRAINED = UNCONSTRAINED
    _interned: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def __new__(cls, *partitions: Any, unreduced: Any = frozenset(), reduced: Any = frozenset()) -> PartitionSpec:
        if unreduced or reduced:
            raise NotImplementedError(
                f"kiln.sharding.PartitionSpec: unreduced={set(unreduced) or '{}'}, reduced={set(reduced) or '{}'}: "
                "kiln has no unreduced or reduced axes (its mesh axes are Auto); leave them out, and reduce "
                "partial sums where they arise (kiln.lax.psum in shard_map, or let jit's partitioner do it)")
        key = tuple(_canonical_entry(p) for p in partitions)
        spec = cls._interned.get(key)
        if spec is None:
            spec = object.__new__(cls)
            object.__setattr__(spec, "_partitions", key)
            spec = cls._interned.setdefault(key, spec)
        return spec

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("kiln.sharding.PartitionSpec is immutable")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("kiln.sharding.PartitionSpec cannot be subclassed")

    def __reduce__(self) -> Any:
        return (PartitionSpec, self._partitions)

    @property
    def partitions(self) -> tuple[Any, ...]:
        return self._partitions

    unreduced = property(lambda self: frozenset(), doc="Always empty: kiln has no unreduced axes.")
    reduced = property(lambda self: frozenset(), doc="Always empty: kiln has no reduced axes.")

    def __repr__(self) -> str:
        return f"P({repr(self._partitions)[1:-1]})"

    def __getitem__(self, i: Any) -> Any:
        return self._partitions[i]

    def __iter__(self):
        return iter(self._partitions)

    def __len__(self) -> int:
        return len(self._partitions)

    def __add__(self, other: Any) -> PartitionSpec:
        if isinstance(other, (PartitionSpec, tuple)):
            return PartitionSpec(*self._partitions, *other)
        return NotImplemented

    def __radd__(self, other: Any) -> PartitionSpec:
        if isinstance(other, tuple):
            return PartitionSpec(*other, *self._partitions)
        return NotImplemented

    def index(self, value: Any) -> int:
        return self._partitions.index(_canonical_entry(value))

    def count(self, value: Any) -> int:
        return self._partitions.count(_canonical_entry(value))

    def axis_names_of(self, dim: int) -> tuple[str, ...]:
        """The mesh axes splitting dimension ``dim`` (major to minor)."""
        entry = self._partitions[dim] if dim < len(self._partitions) else None
        return () if entry is None or entry is UNCONSTRAINED else (entry,) if isinstance(entry, str) else entry


P = PartitionSpec


class _AxisTypeQueries:
    """JAX's questions about a mesh's axis types (``Mesh`` and ``AbstractMesh`` answer them alike)."""
    __slots__ = ()
    axis_names: tuple[str, ...]
    axis_types: tuple[AxisType, ...]

    def _axes_of(self, kind: AxisType) -> tuple[str, ...]:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t is kind)

    @property
    def auto_axes(self) -> tuple[str, ...]:
        return self._axes_of(AxisType.Auto)

    @property
    def explicit_axes(self) -> tuple[str, ...]:
        return self._axes_of(AxisType.Explicit)

    @property
    def manual_axes(self) -> tuple[str, ...]:
        return self._axes_of(AxisType.Manual)

    @property
    def are_all_axes_auto(self) -> bool:
        return all(t is AxisType.Auto for t in self.axis_types)

    @property
    def are_all_axes_explicit(self) -> bool:
        return all(t is AxisType.Explicit for t in self.axis_types)

    @property
    def are_all_axes_manual(self) -> bool:
        return all(t is AxisType.Manual for t in self.axis_types)


class Mesh(_AxisTypeQueries):
    """An n-d array of devices with a name per axis: ``Mesh(np.array(devices).reshape(4, 2), ('data', 'model'))``.

    Usable as a context manager (``with mesh:``) for JAX compatibility; kiln's functions take the mesh
    from the sharding they are given, so the context only records the mesh (``kiln.sharding.get_mesh``).
    """

    def __init__(self, devices: Any, axis_names: Any, axis_types: Any = None) -> None:
        devs = np.array(devices, dtype=object)
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if devs.ndim != len(names):
            raise ValueError(f"kiln.sharding.Mesh: the device array has {devs.ndim} dimensions {devs.shape} but "
                             f"{len(names)} axis names {names} were given; give one name per dimension")
        for n in names:
            if not isinstance(n, str):
                raise TypeError(f"kiln.sharding.Mesh: axis names must be strings, got {n!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"kiln.sharding.Mesh: axis names must be distinct, got {names}")
        flat = list(devs.flat)
        for d in flat:
            if not isinstance(d, runtime.Device):
                raise TypeError(f"kiln.sharding.Mesh: devices must be kiln devices (kiln.devices()), got "
                                f"{type(d).__name__} {d!r:.60}")
        if len(set(flat)) != len(flat):
            raise ValueError("kiln.sharding.Mesh: a device appears more than once in the mesh")
        if len({d.platform for d in flat}) > 1:
            raise ValueError(f"kiln.sharding.Mesh: all devices must be on one platform, got "
                             f"{sorted({d.platform for d in flat})}")
        self.devices = devs
        self.axis_names = names
        self.axis_types = _axis_types(axis_types, len(names))
        # A mesh never changes: its identity is computed once (meshes are compared and hashed on every call
        # of a jitted function over them).
        self._identity = (names, devs.shape, tuple(flat), self.axis_types)
        self._hash = hash(self._identity)

    @property
    def shape(self) -> OrderedDict[str, int]:
        return OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def empty(self) -> bool:
        return self.size == 0

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self) -> list[runtime.Device]:
        """The mesh's devices that belong to this process."""
        return [d for d in self.devices.flat if d.process_index == d.backend.process_index]

    @property
    def local_mesh(self) -> Mesh:
        """The mesh of this process's devices: the mesh itself in one process."""
        if self.is_multi_process:
            raise NotImplementedError("kiln.sharding.Mesh.local_mesh: the mesh spans several processes; kiln gives "
                                      "the local mesh of a one-process mesh only (use mesh.local_devices)")
        return self

    @property
    def is_multi_process(self) -> bool:
        return len({d.process_index for d in self.devices.flat}) > 1

    @property
    def platform(self) -> str:
        return self.devices.flat[0].platform

    def __eq__(self, other: Any) -> bool:
        return self is other or isinstance(other, Mesh) and self._hash == other._hash and \
            self._identity == other._identity

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        axes = ", ".join(f"'{n}': {s}" for n, s in self.shape_tuple)
        return f"Mesh({axes}, axis_types={self.axis_types})"

    def __repr__(self) -> str:
        # JAX's: the sizes and names as the constructor takes them (print, and a NamedSharding's repr, use str)
        return f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names!r}, axis_types={self.axis_types})"

    @property
    def abstract_mesh(self) -> AbstractMesh:
        """The mesh's axis names, sizes and types without its devices."""
        d = self.devices.flat[0]
        device = AbstractDevice(device_kind=d.device_kind, num_cores=getattr(d, "core_count", None),
                                platform=d.platform)
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types, abstract_device=device)

    def __enter__(self) -> Mesh:
        _context.saved.append(_swap_context(self, self.abstract_mesh))
        return self

    def __exit__(self, *exc: Any) -> None:
        _swap_context(*_context.saved.pop())


class AbstractDevice:
    """The kind of device a mesh is made of, without a device (JAX's ``jax.sharding.AbstractDevice``)."""
    __slots__ = ("device_kind", "num_cores", "platform")

    def __init__(self, device_kind: str, num_cores: int | None, platform: str) -> None:
        object.__setattr__(self, "device_kind", device_kind)
        object.__setattr__(self, "num_cores", num_cores)
        object.__setattr__(self, "platform", platform)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("kiln.sharding.AbstractDevice is immutable")

    def _key(self) -> tuple:
        return (self.device_kind, self.num_cores, self.platform)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AbstractDevice) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _repr(self) -> str:
        return f"device_kind={self.device_kind}, num_cores={self.num_cores}, platform={self.platform}"

    def __repr__(self) -> str:
        return f"AbstractDevice({self._repr()})"


class AbstractMesh(_AxisTypeQueries):
    """A mesh's axis sizes, names and types without devices (JAX's ``jax.sharding.AbstractMesh``):
    ``AbstractMesh((4, 2), ('data', 'model'))``. ``mesh.abstract_mesh`` is a concrete mesh's;
    ``kiln.sharding.get_abstract_mesh()`` the one in context. It has no ``devices``."""
    __slots__ = ("axis_sizes", "axis_names", "axis_types", "abstract_device", "size")

    def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str], axis_types: Any = None, *,
                 abstract_device: AbstractDevice | None = None) -> None:
        sizes = tuple(axis_sizes)
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if len(sizes) != len(names):
            raise ValueError(f"kiln.sharding.AbstractMesh: {len(sizes)} axis sizes {sizes} but {len(names)} axis "
                             f"names {names}; give one name per axis")
        if any(not isinstance(n, (int, np.integer)) or n < 1 for n in sizes):
            raise ValueError(f"kiln.sharding.AbstractMesh: axis sizes must be positive integers, got {sizes}")
        if any(not isinstance(n, str) for n in names) or len(set(names)) != len(names):
            raise ValueError(f"kiln.sharding.AbstractMesh: axis names must be distinct strings, got {names}")
        if abstract_device is not None and not isinstance(abstract_device, AbstractDevice):
            raise TypeError(f"kiln.sharding.AbstractMesh: abstract_device must be a kiln.sharding.AbstractDevice, "
                            f"got {abstract_device!r:.60}")
        for name, value in (("axis_sizes", tuple(int(n) for n in sizes)), ("axis_names", names),
                            ("axis_types", _axis_types(axis_types, len(names))),
                            ("abstract_device", abstract_device), ("size", math.prod(sizes) if sizes else 0)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("kiln.sharding.AbstractMesh is immutable")

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def shape(self) -> OrderedDict[str, int]:
        return OrderedDict(self.shape_tuple)

    @property
    def empty(self) -> bool:
        return self.size == 0

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    def update(self, axis_sizes: Any = None, axis_names: Any = None, axis_types: Any = None,
               **kwargs: Any) -> AbstractMesh:
        """A copy with the given fields replaced."""
        return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                            self.axis_names if axis_names is None else axis_names,
                            self.axis_types if axis_types is None else axis_types,
                            abstract_device=kwargs.get("abstract_device", self.abstract_device))

    def _no(self, what: str) -> Any:
        raise ValueError(f"AbstractMesh does not implement {what}: it has no devices (use a kiln.sharding.Mesh)")

    devices = property(lambda self: self._no("devices"))
    device_ids = property(lambda self: self._no("device_ids"))
    local_devices = property(lambda self: self._no("local_devices"))

    def __enter__(self) -> Any:
        self._no("__enter__")

    def __exit__(self, *exc: Any) -> None:
        self._no("__exit__")

    def _key(self) -> tuple:
        return (self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AbstractMesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        axes = ", ".join(f"'{n}': {s}" for n, s in self.shape_tuple) or "()"
        device = "" if self.abstract_device is None else f", {self.abstract_device._repr()}"
        return f"AbstractMesh({axes}, axis_types={self.axis_types}{device})"


_EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


class _Context(threading.local):
    """This thread's mesh context: the concrete mesh (``set_mesh``, ``with mesh:``), the abstract one, and
    what ``with`` blocks restore."""

    def __init__(self) -> None:
        self.mesh: Mesh | None = None
        self.abstract: AbstractMesh = _EMPTY_ABSTRACT_MESH
        self.saved: list[tuple[Mesh | None, AbstractMesh]] = []


_context = _Context()


def _swap_context(mesh: Mesh | None, abstract: AbstractMesh) -> tuple[Mesh | None, AbstractMesh]:
    previous = (_context.mesh, _context.abstract)
    _context.mesh, _context.abstract = mesh, abstract
    return previous


def get_mesh() -> Mesh | None:
    """The mesh in context (``kiln.set_mesh(mesh)``, ``with kiln.set_mesh(mesh):`` or ``with mesh:``), or None."""
    return _context.mesh


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh in context (``use_abstract_mesh``, or the abstract mesh of the mesh in context); an
    empty ``AbstractMesh`` when there is none. Usable inside a jitted function."""
    return _context.abstract


class set_mesh:  # noqa: N801  (JAX's name: a function-like class)
    """Make ``mesh`` the mesh in context for this thread: ``kiln.set_mesh(mesh)`` sets it from now on (``None``
    unsets it); ``with kiln.set_mesh(mesh): ...`` sets it inside the block only. Where a mesh is in context,
    a ``PartitionSpec`` stands for ``NamedSharding(mesh, spec)`` in ``jit``'s ``in_shardings``/``out_shardings``,
    ``device_put``, ``reshard`` and ``with_sharding_constraint``. Only outside a jitted function."""
    __slots__ = ("_previous",)

    def __init__(self, mesh: Mesh | None) -> None:
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"kiln.set_mesh: expected a kiln.sharding.Mesh (or None), got {type(mesh).__name__} "
                             f"{mesh!r:.60}")
        from ..core.tracing import current_builder
        if current_builder() is not None:
            raise ValueError("kiln.set_mesh can only be used outside of kiln.jit (and other transformations); "
                             "set the mesh before calling the jitted function")
        self._previous = _swap_context(mesh, _EMPTY_ABSTRACT_MESH if mesh is None else mesh.abstract_mesh)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        _swap_context(*self._previous)


class use_abstract_mesh:  # noqa: N801
    """``with kiln.sharding.use_abstract_mesh(abstract_mesh):`` makes ``get_abstract_mesh()`` return it inside the
    block; the concrete mesh in context does not change, and the size must match its size when one is set."""
    __slots__ = ("mesh", "_previous")

    def __init__(self, mesh: AbstractMesh) -> None:
        if not isinstance(mesh, AbstractMesh):
            raise ValueError(f"kiln.sharding.use_abstract_mesh: expected a kiln.sharding.AbstractMesh, got "
                             f"{type(mesh).__name__} {mesh!r:.60}")
        self.mesh = mesh

    def __enter__(self) -> None:
        previous = _context.abstract
        if not previous.empty and not self.mesh.empty and previous.size != self.mesh.size:
            raise ValueError(f"kiln.sharding.use_abstract_mesh cannot change the size of the mesh: got {self.mesh} "
                             f"of size {self.mesh.size} inside {previous} of size {previous.size}")
        self._previous = _swap_context(_context.mesh, self.mesh)

    def __exit__(self, *exc: Any) -> None:
        _swap_context(*self._previous)


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], axis_types: Any = None, *,
              devices: Sequence[runtime.Device] | None = None) -> Mesh:
    """A mesh of ``axis_shapes`` over the first ``prod(axis_shapes)`` devices (default: the default
    backend's), in device order: ``kiln.make_mesh((4, 2), ('data', 'model'))``."""
    shape = tuple(axis_shapes)
    if any(not isinstance(s, (int, np.integer)) or s < 1 for s in shape):
        raise ValueError(f"kiln.make_mesh: axis_shapes must be positive integers, got {axis_shapes!r}")
    devs = list(runtime.global_devices(config.default_backend) if devices is None else devices)
    need = math.prod(shape)
    if need > len(devs):
        hint = (" (set KILN_NUM_CPU_DEVICES=N before kiln starts for N CPU devices)"
                if devs and devs[0].platform == "cpu" else "")
        raise ValueError(f"kiln.make_mesh: a mesh of shape {shape} needs {need} devices but only {len(devs)} "
                         f"are available{hint}")
    return Mesh(np.array(devs[:need], dtype=object).reshape(shape), axis_names, axis_types)


def _canonical_memory(devices: Sequence[runtime.Device], memory_kind: Any, where: str) -> str | None:
    """``memory_kind`` as a sharding keeps it: None for the devices' default memory (None or its name, e.g.
    ``'device'``), else the kind, which every device must address."""
    if memory_kind is None:
        return None
    if not isinstance(memory_kind, str):
        raise TypeError(f"{where}: memory_kind must be a string such as 'device' or 'pinned_host', got "
                        f"{memory_kind!r:.60}")
    for device in devices:
        kinds = device.memory_kinds
        if memory_kind not in kinds:
            raise ValueError(f"{where}: {device!r} has no memory of kind {memory_kind!r}; its memory kinds are "
                             f"{', '.join(kinds)}")
    return None if memory_kind == devices[0].memory_kinds[0] else memory_kind


class Sharding:
    """The layout of an array over devices (base of ``NamedSharding`` and ``SingleDeviceSharding``), in the
    devices' default memory or in another memory they address (``memory_kind='pinned_host'``)."""

    _memory: str | None = None  # the memory kind, None for the default memory

    @property
    def memory_kind(self) -> str:
        """The kind of memory the array is in: ``'device'`` (the default memory), ``'pinned_host'``, ..."""
        return self._memory or self._device_assignment[0].memory_kinds[0]

    @property
    def _device_assignment(self) -> tuple[runtime.Device, ...]:
        raise NotImplementedError

    @property
    def device_set(self) -> set[runtime.Device]:
        return set(self._device_assignment)

    @property
    def addressable_devices(self) -> set[runtime.Device]:
        """The devices of this process (all of them unless the program runs as several processes)."""
        return {d for d in self._device_assignment if d.process_index == d.backend.process_index}

    @property
    def is_fully_addressable(self) -> bool:
        """Whether every device belongs to this process."""
        return all(d.process_index == d.backend.process_index for d in self._device_assignment)

    @property
    def num_devices(self) -> int:
        return len(self._device_assignment)

    @property
    def has_addressable_devices(self) -> bool:
        """Whether some of its devices belong to this process."""
        return bool(self.addressable_devices)

    def with_memory_kind(self, kind: str | None) -> Sharding:
        """This sharding in memory ``kind`` (``'device'``, ``'pinned_host'``, ``'unpinned_host'``; None: the
        default memory)."""
        memory = _canonical_memory(self._device_assignment, kind, f"kiln.sharding: {type(self).__name__}"
                                                                  f".with_memory_kind({kind!r})")
        if memory == self._memory:
            return self
        return self._in_memory(memory)

    def _in_memory(self, memory: str | None) -> Sharding:
        raise NotImplementedError

    def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of one device's piece of an array of ``global_shape``."""
        shape = tuple(global_shape)
        cuts = self._cuts(len(shape))
        for dim, (size, n) in enumerate(zip(shape, cuts)):
            if size % n:
                raise ValueError(f"kiln.sharding: {self!r} splits dimension {dim} of shape {shape} into {n} pieces, "
                                 f"which does not divide its size {size}; pad the array or choose a spec whose mesh "
                                 "axes divide it")
        return tuple(size // n for size, n in zip(shape, cuts))

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict[runtime.Device, tuple[slice, ...]]:
        """For each device, the slice of an array of ``global_shape`` it holds."""
        shape = tuple(global_shape)
        piece = self.shard_shape(shape)
        out = {}
        for device, coords in zip(self._device_assignment, self._coords(len(shape))):
            out[device] = tuple(slice(None) if n == 1 else slice(c * p, (c + 1) * p)
                                for c, p, n in zip(coords, piece, self._cuts(len(shape))))
        return out

    def addressable_devices_indices_map(self, global_shape: Sequence[int]) -> dict[runtime.Device, tuple[slice, ...]]:
        """For each device of this process, the slice of an array of ``global_shape`` it holds."""
        here = self.addressable_devices
        return {d: idx for d, idx in self.devices_indices_map(global_shape).items() if d in here}

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """Whether ``other`` puts the same pieces of an ``ndim``-d array on the same devices, in the same memory."""
        if not isinstance(other, Sharding) or self._device_assignment != other._device_assignment:
            return False
        if self._memory != other._memory:
            return False
        return self._cuts(ndim) == other._cuts(ndim) and self._coords(ndim) == other._coords(ndim)

    @property
    def is_fully_replicated(self) -> bool:
        return all(n == 1 for n in self._cuts(self._max_rank()))

    def _max_rank(self) -> int:
        return 0

    def _cuts(self, ndim: int) -> tuple[int, ...]:
        raise NotImplementedError

    def _coords(self, ndim: int) -> list[tuple[int, ...]]:
        raise NotImplementedError


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    def __init__(self, device: runtime.Device, *, memory_kind: str | None = None) -> None:
        if not isinstance(device, runtime.Device):
            raise TypeError(f"kiln.sharding.SingleDeviceSharding: expected a kiln device, got {device!r:.60}")
        self._device = device
        self._memory = _canonical_memory((device,), memory_kind, "kiln.sharding.SingleDeviceSharding")

    def _in_memory(self, memory: str | None) -> SingleDeviceSharding:
        return SingleDeviceSharding(self._device, memory_kind=memory)

    @property
    def _device_assignment(self) -> tuple[runtime.Device, ...]:
        return (self._device,)

    def _cuts(self, ndim: int) -> tuple[int, ...]:
        return (1,) * ndim

    def _coords(self, ndim: int) -> list[tuple[int, ...]]:
        return [(0,) * ndim]

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SingleDeviceSharding) and other._device == self._device and \
            other._memory == self._memory

    def __hash__(self) -> int:
        return hash(("single", self._device, self._memory))

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"


def spec_axes_problem(spec: PartitionSpec, axis_names: Sequence[str]) -> str | None:
    """What is wrong with the mesh axes ``spec`` names (an axis the mesh lacks, or one used twice), or None."""
    used: set[str] = set()
    for dim in range(len(spec)):
        for name in spec.axis_names_of(dim):
            if name not in axis_names:
                return f"names mesh axis {name!r}, which the mesh does not have (its axes: {tuple(axis_names)})"
            if name in used:
                return f"uses mesh axis {name!r} more than once; a mesh axis can split one dimension only"
            used.add(name)
    return None


class NamedSharding(Sharding):
    """An array laid out over ``mesh`` by ``spec``: ``NamedSharding(mesh, P('data', None))``."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec = PartitionSpec(), *, memory_kind: str | None = None) -> None:
        if isinstance(mesh, AbstractMesh):
            raise TypeError(f"kiln.sharding.NamedSharding: mesh is an AbstractMesh {mesh}; kiln's shardings need a "
                            "concrete kiln.sharding.Mesh of devices (a NamedSharding over an AbstractMesh, as JAX's "
                            "device-polymorphic export uses, is not supported: kiln exports one-device programs). "
                            "Make one with kiln.make_mesh(axis_sizes, axis_names)")
        if not isinstance(mesh, Mesh):
            raise TypeError(f"kiln.sharding.NamedSharding: mesh must be a kiln.sharding.Mesh, got "
                            f"{type(mesh).__name__}")
        if isinstance(spec, tuple) or spec is None:
            spec = PartitionSpec(*(spec or ()))
        if not isinstance(spec, PartitionSpec):
            raise TypeError(f"kiln.sharding.NamedSharding: spec must be a kiln.sharding.PartitionSpec (P(...)), got "
                            f"{type(spec).__name__} {spec!r:.60}")
        problem = spec_axes_problem(spec, mesh.axis_names)
        if problem:
            raise ValueError(f"kiln.sharding.NamedSharding: {spec} {problem}")
        self.mesh = mesh
        self.spec = spec
        self._memory = _canonical_memory(self._device_assignment, memory_kind, "kiln.sharding.NamedSharding")

    def _in_memory(self, memory: str | None) -> NamedSharding:
        return NamedSharding(self.mesh, self.spec, memory_kind=memory)

    @property
    def _device_assignment(self) -> tuple[runtime.Device, ...]:
        return tuple(self.mesh.devices.flat)

    def _max_rank(self) -> int:
        return len(self.spec)

    def _cuts(self, ndim: int) -> tuple[int, ...]:
        if len(self.spec) > ndim:
            extra = " (for a scalar the spec must be P())" if ndim == 0 else ""
            raise ValueError(f"kiln.sharding: {self.spec} has {len(self.spec)} entries, so it applies to arrays of "
                             f"rank {len(self.spec)} or more; this array has rank {ndim}{extra}")
        sizes = self.mesh.shape
        return tuple(math.prod(sizes[n] for n in self.spec.axis_names_of(d)) for d in range(ndim))

    def _coords(self, ndim: int) -> list[tuple[int, ...]]:
        """Each device's piece number along each dimension, in mesh order."""
        self._cuts(ndim)
        sizes = self.mesh.shape
        out = []
        for index in np.ndindex(*self.mesh.devices.shape):
            where = dict(zip(self.mesh.axis_names, index))
            coords = []
            for d in range(ndim):
                c = 0
                for name in self.spec.axis_names_of(d):  # major to minor
                    c = c * sizes[name] + where[name]
                coords.append(c)
            out.append(tuple(coords))
        return out

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, NamedSharding) and other.mesh == self.mesh and other.spec is self.spec and \
            other._memory == self._memory

    def __hash__(self) -> int:
        return hash((self.mesh, self.spec, self._memory))

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, memory_kind={self.memory_kind})"


class Shard:
    """One device's piece of an array (``x.addressable_shards``): ``device``, ``index`` (the slices of
    the whole array it holds), ``replica_id`` (which copy, when the piece is replicated) and ``data``."""

    def __init__(self, device: runtime.Device, sharding: Sharding, global_shape: tuple[int, ...], data: Any) -> None:
        self.device = device
        self.sharding = sharding
        self.global_shape = global_shape
        self.data = data

    @property
    def index(self) -> tuple[slice, ...]:
        return self.sharding.devices_indices_map(self.global_shape)[self.device]

    @property
    def replica_id(self) -> int:
        index = self.index
        same = [d for d, i in self.sharding.devices_indices_map(self.global_shape).items() if i == index]
        return same.index(self.device)

    def __repr__(self) -> str:
        return f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, data={self.data})"


def hlo_sharding_string(sharding: Sharding, ndim: int) -> str:
    """XLA's ``HloSharding`` text for an ``ndim``-d array laid out by ``sharding``; tile numbers index
    ``sharding._device_assignment``."""
    cuts = sharding._cuts(ndim)
    if all(n == 1 for n in cuts):
        return "{replicated}"
    replicas = sharding.num_devices // math.prod(cuts)
    tiles = np.full(cuts + (replicas,), -1, dtype=np.int64)
    for position, coords in enumerate(sharding._coords(ndim)):
        slot = tiles[coords]
        slot[np.argmax(slot < 0)] = position  # replicas of one piece in device order
    dims = cuts + ((replicas,) if replicas > 1 else ())
    last = " last_tile_dim_replicate" if replicas > 1 else ""
    return f"{{devices=[{','.join(map(str, dims))}]{','.join(map(str, tiles.flat))}{last}}}"


def runtime_sharding(sharding: Sharding, ndim: int) -> runtime.SpmdSharding:
    """The runtime's (jaxlib's) form of ``sharding`` for an ``ndim``-d array."""
    return runtime.spmd_sharding(sharding._device_assignment, hlo_sharding_string(sharding, ndim), sharding._memory)


def make_single_device_sharding(device: runtime.Device) -> SingleDeviceSharding:
    return SingleDeviceSharding(device)


def resolve_spec(sharding: Any, where: str) -> Any:
    """``sharding`` with a ``PartitionSpec`` turned into ``NamedSharding(mesh in context, spec)``; other values
    as they are."""
    if not isinstance(sharding, PartitionSpec):
        return sharding
    mesh = get_mesh()
    if mesh is None:
        raise ValueError(f"{where}: a PartitionSpec ({sharding}) needs a mesh in context: call it under "
                         "`with kiln.set_mesh(mesh):` (or after kiln.set_mesh(mesh)), or pass "
                         "NamedSharding(mesh, spec)")
    abstract = _context.abstract
    if not abstract.empty and (abstract.axis_names, abstract.axis_sizes) != (mesh.axis_names, mesh.axis_sizes):
        # `with use_abstract_mesh(AbstractMesh((8,), ('A',))):` views the mesh in context (same size, which
        # use_abstract_mesh checks) under other axes: its devices in their order, in the abstract mesh's shape.
        mesh = _relabelled_mesh(mesh, abstract)
    return NamedSharding(mesh, sharding)


def _relabelled_mesh(mesh: Mesh, abstract: AbstractMesh) -> Mesh:
    """``mesh``'s devices (flattened in order) arranged as ``abstract``'s axes."""
    return Mesh(np.array(list(mesh.devices.flat), dtype=object).reshape(abstract.axis_sizes),
                abstract.axis_names, abstract.axis_types)


def _is_sharding_leaf(x: Any) -> bool:
    return x is None or isinstance(x, (Sharding, PartitionSpec))


def flatten_shardings(tree: Any) -> tuple[list, Any]:
    """The leaves (shardings, PartitionSpecs, None) and structure of a pytree of shardings."""
    from ..core import tree_util
    return tree_util.tree_flatten(tree, is_leaf=_is_sharding_leaf)


def shardings_per_leaf(prefix_leaves: Sequence[Any], prefix_tree: Any, tree: Any, where: str,
                       path_name: Any = None) -> list:
    """For each leaf of ``tree``, the entry of the pytree prefix (``prefix_leaves`` of structure
    ``prefix_tree``, from :func:`flatten_shardings`) above it. A prefix that does not fit raises ValueError
    naming the path (``path_name(keypath)`` spells it; default: ``keystr``)."""
    from ..core import tree_util
    try:
        subtrees = tree_util.flatten_prefix(prefix_tree, tree)
    except tree_util._Mismatch as e:
        at = path_name(e.path) if path_name is not None else (tree_util.keystr(e.path) or "the root")
        raise ValueError(f"{where}: the shardings are not a pytree prefix of the values: at {at}, {e.detail}. "
                         "Give one sharding (or None) for each value, or one for a whole subtree") from None
    out: list = []
    for s, sub in zip(prefix_leaves, subtrees):
        out += [s] * len(tree_util.tree_leaves(sub))
    return out
