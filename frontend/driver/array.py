"""``kiln.Array``: an immutable array living in one device's memory."""
from __future__ import annotations

import gc
import operator
from typing import Any

import numpy as np
from kiln.runtime import fastpath

from kiln import runtime

from ..core.array_methods import ArrayMethods, check_to_device_stream, concrete_rows
from ..core.avals import ShapedArray
from ..core.tracing import Tracer

_new_object = object.__new__


def held_on(x: Any, device: Any) -> bool:
    """Whether ``x`` is a kiln array whose buffer a one-device program on ``device`` takes as it is: on that device,
    in its default memory (one-device programs read their arguments there, not from ``'pinned_host'`` memory)."""
    return type(x) is Array and x._device is device and (x._sharding is None or x._sharding._memory is None)


class Array(ArrayMethods):
    """An immutable n-dimensional array on a device (the result of every kiln computation).

    ``committed`` arrays were placed on their device explicitly (``kiln.device_put(x, device)``,
    or computed from committed arrays): computations on them run on that device. Uncommitted
    arrays live on the default device and follow committed ones.
    """

    __slots__ = ("_buf", "aval", "_device", "_committed", "_npy", "_flat", "_sharding")
    __array_priority__ = 100

    def __init__(self, buf: Any, aval: ShapedArray, device: runtime.Device | None, committed: bool = False,
                 sharding: Any = None):
        self._buf = buf
        self.aval = aval
        self._device = device  # None when the array is laid out over several devices (by ``sharding``)
        self._committed = committed
        self._npy = None
        self._sharding = sharding  # a kiln.sharding.Sharding over several devices, or None
        # (children, aux) for the C++ pytree registry: the buffer is the leaf jaxlib's dispatch sees.
        self._flat = ((buf,), (aval, device, committed, sharding))

    @staticmethod
    def _from_flat(aux: tuple, children: tuple) -> Array:
        # The C++ dispatch path builds every output through this: set the slots directly (no __init__ call,
        # and the children and aux tuples are reused as they are).
        a = _new_object(Array)
        a._buf = children[0]
        a.aval, a._device, a._committed, a._sharding = aux
        a._npy = None
        a._flat = (children, aux)
        return a

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return concrete_rows(self)

    # -- device -------------------------------------------------------------------------------
    @property
    def device(self) -> Any:
        """The device holding the array; for an array over several devices, its sharding (as JAX's)."""
        return self._device if self._device is not None else self._sharding

    def devices(self) -> set[runtime.Device]:
        return {self._device} if self._device is not None else self._sharding.device_set

    @property
    def sharding(self) -> Any:
        """The array's layout over devices (a ``kiln.sharding.Sharding``)."""
        if self._sharding is not None:
            return self._sharding
        from .sharding import SingleDeviceSharding  # sharding builds on placement, which builds on this module
        return SingleDeviceSharding(self._device)

    @property
    def format(self) -> Any:
        """The array's layout in memory (XLA's default, row-major: kiln uses no other) with its sharding, as a
        ``kiln.experimental.layout.Format``."""
        from .layout import array_format  # layout builds on sharding, which builds on placement and this module
        return array_format(self)

    @property
    def addressable_shards(self) -> list[Any]:
        """The pieces of the array on this process's devices, one per device (``.device``, ``.index``,
        ``.replica_id``, ``.data``: a single-device array)."""
        from .sharding import Shard, SingleDeviceSharding
        if self._device is not None:
            return [Shard(self._device, self.sharding, self.aval.shape, self)]
        shape = self._sharding.shard_shape(self.aval.shape)
        aval = self.aval.update(shape=shape)
        memory = self._sharding._memory  # (a piece in host memory says so)
        return [Shard(d, self._sharding, self.aval.shape, Array(b, aval, d, True, None if memory is None else
                                                                SingleDeviceSharding(d, memory_kind=memory)))
                for d, b in zip(runtime.devices_of(self._buf), runtime.shards_of(self._buf))]

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: bool | None = None) -> Any:
        """A DLPack capsule of the array's memory (zero-copy; see ``kiln.dlpack``)."""
        from .dlpack import array_dlpack
        return array_dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        if self._device is None:
            raise BufferError("x.__dlpack_device__: the array is laid out over several devices")
        return runtime.dlpack.dl_device(self._device)

    @property
    def global_shards(self) -> list[Any]:
        """Every piece of the array (JAX's ``global_shards``); in kiln only this process's can be listed, so
        an array spanning processes is an error."""
        if not self.is_fully_addressable:
            raise RuntimeError("kiln.Array.global_shards: the array spans devices of other processes; use "
                               "addressable_shards for this process's pieces")
        return self.addressable_shards

    def addressable_data(self, index: int) -> Array:
        """The single-device array of this process's ``index``-th piece (``addressable_shards[index].data``)."""
        return self.addressable_shards[index].data

    @property
    def is_fully_replicated(self) -> bool:
        return self._sharding is None or self._sharding.is_fully_replicated

    @property
    def is_fully_addressable(self) -> bool:
        """Whether every device holding the array belongs to this process (False for arrays spanning the
        processes of a distributed run)."""
        return self._sharding is None or self._sharding.is_fully_addressable

    def to_device(self, device: Any, /, *, stream: Any = None) -> Array:
        """A copy committed to ``device`` (the array API's spelling of ``kiln.device_put(x, device)``)."""
        from .placement import device_put  # placement builds on this module
        check_to_device_stream(stream)
        return device_put(self, device)

    @property
    def committed(self) -> bool:
        return self._committed

    def block_until_ready(self) -> Array:
        """Wait until the computation producing this array has finished; returns the array."""
        runtime.block_until_ready(self._buf)
        return self

    def is_ready(self) -> bool:
        return runtime.is_ready(self._buf)

    def is_deleted(self) -> bool:
        return runtime.is_deleted(self._buf)

    def delete(self) -> None:
        """Free the device memory now; using the array afterwards raises an error."""
        self._npy = None
        runtime.delete(self._buf)

    def unsafe_buffer_pointer(self) -> int:
        """The device address of the array's memory (an array on one device), as JAX's."""
        return runtime.buffer_pointer(self._buf)

    def on_device_size_in_bytes(self) -> int:
        """Bytes of device memory the array occupies, over all its devices (a replicated array counts once
        per device)."""
        return runtime.nbytes(self._buf)

    def copy_to_host_async(self) -> None:
        """Start copying the value to host memory, so that a later ``np.asarray(x)`` need not wait for the
        transfer (nothing to do on CPU or once the host copy exists)."""
        if self._npy is None:
            for shard in self.addressable_shards if self._device is None else ():
                shard.data.copy_to_host_async()
            if self._device is not None:
                runtime.copy_to_host_async(self._buf)

    # -- conversion to host values ------------------------------------------------------------
    def _value(self) -> np.ndarray:
        if self._npy is None:
            self._npy = runtime.to_numpy(self._buf) if self._device is not None else self._gather()
        return self._npy

    def _holds_value(self) -> bool:
        """Whether this process's devices hold every piece of the array (always, unless it spans processes)."""
        if self.is_fully_addressable:
            return True
        shape = self.aval.shape
        every = {str(i) for i in self._sharding.devices_indices_map(shape).values()}
        return every == {str(i) for i in self._sharding.addressable_devices_indices_map(shape).values()}

    def _gather(self) -> np.ndarray:
        """The value of an array over several devices, assembled on the host from its shards."""
        shards = self.addressable_shards
        if not self._holds_value():
            raise RuntimeError(
                f"Fetching the value of a kiln.Array that spans devices of other processes is not possible "
                f"(shape {self.shape}, {self.sharding}): this process holds only some of its pieces. Read "
                "those with x.addressable_shards, or replicate the array first, e.g. kiln.jit(lambda x: x, "
                "out_shardings=NamedSharding(mesh, P()))(x); every process can read a replicated array.")
        out = np.empty(self.aval.shape, self.aval.dtype)
        done = set()
        for shard in shards:
            key = str(shard.index)
            if key not in done:  # one copy of each piece (the first replica this process holds)
                done.add(key)
                out[shard.index] = runtime.to_numpy(shard.data._buf)
        out.flags.writeable = False
        return out

    def tobytes(self, order: str = "C") -> bytes:
        """The elements' bytes, read back to the host (``numpy.ndarray.tobytes``)."""
        return self._value().tobytes(order)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        value = self._value()
        if dtype is not None and np.dtype(dtype) != value.dtype:
            return value.astype(dtype)
        if copy:
            return value.copy()
        return value

    def item(self, *args):
        return self._value().item(*args)

    def tolist(self):
        return self._value().tolist()

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(f"The truth value of an array with {self.size} elements is ambiguous. "
                             "Use a.any() or a.all()")
        return bool(self._value())

    def __int__(self) -> int:
        return int(self._value())

    def __float__(self) -> float:
        return float(self._value())

    def __complex__(self) -> complex:
        return complex(self._value())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer arrays can be used as an index, got {self.dtype.name}")
        return int(self._value())

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:
            return format(self._value()[()], spec)
        return format(str(self), spec)

    def __reduce__(self):
        # Pickles as its value; unpickling gives an uncommitted array on the default device.
        return (_from_pickle, (np.array(self._value()),))

    # -- printing -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        if self.is_deleted():
            return f"Array(<deleted>, shape={self.shape}, dtype={self.dtype.name})"
        if not self._holds_value():  # the array spans processes and this one lacks some pieces
            return f"Array(shape={self.shape}, dtype={self.dtype.name}{', weak_type=True' if self.weak_type else ''})"
        # Laid out as JAX lays it out, so that programs print what they print under JAX: NumPy wraps
        # the numbers as if only a ',' followed them, and the dtype then goes on the last line after
        # one space -- or after len("Array(") spaces, still on that line, when JAX's measure of the
        # line (its length plus two, not counting "Array(" on a first line) and the dtype would pass
        # the line width. An empty array of any shape prints "[], shape=...".
        dtype_text = f"dtype={self.dtype.name}" + (", weak_type=True" if self.weak_type else "")
        width = np.get_printoptions()["linewidth"]
        if self.size == 0:
            body = f"[], shape={self.shape}"
        else:
            body = np.array2string(self._value(), max_line_width=width, separator=", ",
                                   prefix="Array(", suffix=",")
        measured = len(body) - body.rfind("\n") + 1
        gap = " " * len("Array(") if measured + len(dtype_text) + 2 > width else " "
        return f"Array({body},{gap}{dtype_text})"

    def __str__(self) -> str:
        return str(self._value())


# Mirrored into jaxlib's C++ pytree registry, for the C++ jit dispatch path (kiln.runtime.fastpath).
fastpath.register_node(Array, operator.attrgetter("_flat"), Array._from_flat)


def _from_pickle(value: np.ndarray) -> Array:
    """An unpickled array: uncommitted, on the default device."""
    from .dispatch import put  # dispatch imports this module
    return put(value, None, committed=False)


def live_arrays(platform: str | None = None) -> list[Array]:
    """Every kiln array alive on ``platform``'s devices (the default backend's if None), not deleted or
    donated (as ``jax.live_arrays``); buffers kiln holds internally (a jitted function's constants) are
    not arrays and are not listed. Walks the garbage collector's objects: for debugging, not hot loops."""
    bufs = runtime.live_buffers(platform)
    if not bufs:
        return []
    by_buf: dict[int, list[Array]] = {}
    for obj in gc.get_referrers(*bufs):
        if type(obj) is Array:
            by_buf.setdefault(id(obj._buf), []).append(obj)
    return [a for b in bufs for a in by_buf.get(id(b), ())]


# -- kiln.Array: the public type of arrays, traced ones included ---------------------------------------------------

_array_like_types: tuple[type, ...] = (Array,)  # what isinstance(x, kiln.Array) accepts (with tracers, below)


def register_array_type(cls: type) -> None:
    """Make instances of ``cls`` (PRNG key arrays) instances of ``kiln.Array`` too."""
    global _array_like_types
    if cls not in _array_like_types:
        _array_like_types = (*_array_like_types, cls)


class _PublicArrayType(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        if type(obj) is Array or isinstance(obj, _array_like_types):
            return True
        return isinstance(obj, Tracer) and isinstance(getattr(obj, "aval", None), ShapedArray)

    def __subclasscheck__(cls, sub: type) -> bool:
        return isinstance(sub, type) and issubclass(sub, _array_like_types)


class PublicArray(metaclass=_PublicArrayType):
    """``kiln.Array`` (also ``kiln.numpy.ndarray``), as ``jax.Array``: the type for instance checks and annotations
    of kiln arrays. ``isinstance(x, kiln.Array)`` is True for the arrays kiln computes, PRNG key arrays, and the
    traced values a function sees inside ``jit``, ``grad`` or ``vmap``, so that such a check takes the same branch
    traced as run eagerly. Arrays are made by ``kiln.numpy`` (``kiln.numpy.asarray``), not by calling this."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any):
        raise TypeError("kiln.Array cannot be instantiated: make arrays with kiln.numpy.asarray, kiln.numpy.zeros, "
                        "kiln.device_put, ...")


PublicArray.__name__ = PublicArray.__qualname__ = "Array"
PublicArray.__module__ = "kiln"
