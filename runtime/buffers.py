"""Device buffers: host -> device transfer, readback, device-to-device copies, lifetime.

A kiln buffer is a jaxlib ``ArrayImpl`` on one device whose sharding is the device's interned
:class:`~kiln.runtime.avals.DeviceSharding` and whose aval is an interned
:class:`~kiln.runtime.avals.Aval`.
"""
from __future__ import annotations

import ctypes
import sys
import weakref
from typing import Callable, TypeVar

import ml_dtypes
import numpy as np

from . import distributed
from ._jaxlib import ALWAYS_COPY, JaxRuntimeError, device_put, xc
from .avals import DeviceSharding, aval_for
from .backends import Device, device_of_raw, get_backend
from .errors import DeletedBufferError, DeviceError, KilnRuntimeError, deleted_error, jaxlib_message
from .transfer_guard import guard_error

T = TypeVar("T")

Buffer = xc.ArrayImpl  # the jaxlib array type kiln uses as its device buffer


def put(x: np.ndarray, device: Device, memory_kind: str | None = None) -> Buffer:
    """Copy the host array ``x`` onto ``device`` (into its memory ``memory_kind``; None: the default); the stored
    dtype is ``x.dtype`` (in native byte order).

    Always copies: with jaxlib's default ZERO_COPY semantics a CPU buffer would alias (and see later
    writes to) 64-byte-aligned numpy memory.
    """
    if not isinstance(x, np.ndarray):
        raise TypeError(f"runtime.put expects a numpy.ndarray, got {type(x).__name__}; convert Python "
                        "scalars and lists with numpy first.")
    if not isinstance(device, Device):
        raise TypeError(f"runtime.put expects a kiln runtime.Device, got {device!r}.")
    dtype = x.dtype
    if not dtype.isnative:  # jaxlib would reinterpret the bytes as native-endian
        dtype = dtype.newbyteorder("=")
        x = x.astype(dtype)
    try:
        sharding = device._sharding if memory_kind is None else device.sharding_in(memory_kind)
        return device_put(aval_for(x.shape, dtype), sharding, [x], [device._raw])
    except JaxRuntimeError as e:
        if "Unknown NumPy dtype" in str(e):
            if dtype.type.__module__ == "ml_dtypes":  # e.g. float6_e2m3fn on jaxlib 0.10.x
                raise TypeError(f"runtime.put: jaxlib cannot transfer arrays of dtype {dtype} to a device (its "
                                "runtime does not know this ml_dtypes type); convert on the host first, e.g. "
                                "x.astype(numpy.float32).") from e
            raise TypeError(f"runtime.put: dtype {dtype} cannot be stored on a device; use a numeric, "
                            "bool or ml_dtypes dtype.") from e
        guarded = guard_error(jaxlib_message(e), f"moving a {dtype}{list(x.shape)} host array to {device!r}")
        if guarded is not None:
            raise guarded from None
        raise KilnRuntimeError(f"Transfer of a {dtype}{list(x.shape)} array to {device!r} failed: "
                               f"{jaxlib_message(e)}") from e


def buffer_device(buf: Buffer) -> Device:
    """The :class:`Device` holding ``buf``."""
    sharding = buf._sharding
    if type(sharding) is DeviceSharding:
        return sharding.kiln_device
    return device_of_raw(sharding._internal_device_list[0])  # an array created outside kiln


def _check_alive(buf: Buffer, where: str) -> None:
    # Several jaxlib methods crash the process on a deleted buffer (is_ready() segfaults on 0.10.2).
    if buf.is_deleted():
        raise deleted_error(where)


def block_until_ready(buf: Buffer) -> None:
    """Wait until ``buf``'s value has been computed."""
    _check_alive(buf, "block_until_ready")
    try:
        buf.block_until_ready()
    except JaxRuntimeError as e:
        raise _runtime_error(e, "block_until_ready") from e


def is_ready(buf: Buffer) -> bool:
    """Whether ``buf``'s value has been computed (never blocks)."""
    _check_alive(buf, "is_ready")
    return bool(buf.is_ready())


# Buffers whose memory another library may be reading (exported over DLPack). jaxlib aborts the process when
# such a buffer is deleted (NOTES §9), so kiln refuses; the memory goes when the last reference does.
# (Buffers are not hashable: keyed by id, each entry dropped with its buffer.)
_shared: dict[int, weakref.ref] = {}


def mark_shared(buf: Buffer) -> None:
    """Record that ``buf``'s memory is shared with another library (see :func:`delete`)."""
    key = id(buf)
    _shared[key] = weakref.ref(buf, lambda _, key=key: _shared.pop(key, None))


def delete(buf: Buffer) -> None:
    """Free ``buf``'s device memory now; later uses raise :class:`DeletedBufferError`."""
    shared = _shared.get(id(buf))
    if shared is not None and shared() is buf:
        raise KilnRuntimeError("Cannot delete this array: its memory was exported over DLPack (x.__dlpack__, "
                               "np.from_dlpack, torch.from_dlpack...) and another library may still read it. Drop "
                               "the references instead; the memory is freed when the last one goes.")
    buf.delete()


def is_deleted(buf: Buffer) -> bool:
    """Whether ``buf`` was deleted or donated."""
    return bool(buf.is_deleted())


def buffer_pointer(buf: Buffer) -> int:
    """The device address of ``buf``'s memory (a buffer on one device)."""
    _check_alive(buf, "unsafe_buffer_pointer")
    try:
        return _without_jax_import(buf.unsafe_buffer_pointer)  # (see _slow_to_numpy)
    except (RuntimeError, ValueError) as e:  # e.g. an array over several devices
        raise _runtime_error(e, "unsafe_buffer_pointer") from e


def nbytes(buf: Buffer) -> int:
    """Bytes of device memory ``buf`` occupies."""
    _check_alive(buf, "nbytes")
    return int(buf.on_device_size_in_bytes())


def live_buffers(backend: str | None = None) -> list[Buffer]:
    """Every buffer of ``backend`` (default backend if None) not yet deleted or freed, whoever holds it."""
    return list(get_backend(backend)._client.live_arrays())


def _runtime_error(e: BaseException, where: str) -> KilnRuntimeError:
    msg = jaxlib_message(e)
    if "deleted or donated" in msg:
        return deleted_error(where)
    hint = distributed.peer_failure_hint(msg)
    if hint:
        return distributed.DistributedError(f"{where} failed: {msg}.{hint}")
    return KilnRuntimeError(f"{where} failed: {msg}")


def to_numpy(buf: Buffer) -> np.ndarray:
    """Block until ``buf`` is ready and return its value as a (possibly read-only) numpy array."""
    if buf.is_deleted():
        raise deleted_error("to_numpy")
    try:
        # Fastest path (~1 µs): zero-copy read-only view of a CPU buffer via the buffer protocol.
        # np.asarray(buf) alone would silently give a 0-d object array when the protocol refuses.
        return np.asarray(memoryview(buf))
    except BufferError:
        pass
    except JaxRuntimeError as e:  # the computation that produced buf failed
        raise _runtime_error(e, "to_numpy") from e
    if buf.is_deleted():  # deleted between the check and the read (another thread)
        raise deleted_error("to_numpy")
    try:
        return _slow_to_numpy(buf)
    except JaxRuntimeError as e:
        guarded = guard_error(jaxlib_message(e), f"fetching a {buf.dtype}{list(buf.shape)} array to the host")
        if guarded is not None:
            raise guarded from None
        raise _runtime_error(e, "to_numpy") from e


def copy_to_host_async(buf: Buffer) -> None:
    """Start copying ``buf`` to host memory (on accelerators; a no-op on CPU, whose memory is the host's) so
    that a later :func:`to_numpy` need not wait for the transfer."""
    _check_alive(buf, "copy_to_host_async")
    start = getattr(buf, "_copy_single_device_array_to_host_async", None)
    if start is not None and buffer_device(buf).platform != "cpu":
        try:
            start()
        except JaxRuntimeError as e:
            raise _runtime_error(e, "copy_to_host_async") from e


def _slow_to_numpy(buf: Buffer) -> np.ndarray:
    aval = buf.aval  # None on arrays made outside kiln (e.g. from DLPack)
    if aval is not None and buffer_device(buf).platform == "cpu":
        dtype, shape = aval.dtype, aval.shape
        # bf16/fp8/int4 on CPU: the buffer protocol refuses them, so copy the bytes out directly.
        # Avoids _single_device_array_to_np_array_did_copy, which imports jax behind our back (NOTES §0.1).
        buf.block_until_ready()
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if size == 0:
            return np.zeros(shape, dtype)
        if _stored_bits(dtype) == dtype.itemsize * 8 and buf.on_device_size_in_bytes() == size:
            # (jaxlib's unsafe_buffer_pointer tries `import jax`: an installed jax, found there, would turn jaxlib's
            # tracebacks back on mid-call (tracebacks.py) and the pointer of an array made with them off be refused:
            # "null user context")
            pointer = _without_jax_import(buf.unsafe_buffer_pointer)
            raw = ctypes.string_at(pointer, size)  # copy: the buffer may be freed later
            return np.frombuffer(raw, dtype=dtype).reshape(shape)
    return _without_jax_import(buf._single_device_array_to_np_array_did_copy)[0]


def _stored_bits(dtype: np.dtype) -> int:
    """Bits per element on device: sub-byte types (int4, float4_e2m1fn, ...) are packed there."""
    if dtype.kind in "biufc":  # numpy's own types are never packed
        return dtype.itemsize * 8
    for info in (ml_dtypes.finfo, ml_dtypes.iinfo):
        try:
            return int(info(dtype).bits)
        except (TypeError, ValueError):
            pass
    return dtype.itemsize * 8


def _without_jax_import(call: Callable[[], T]) -> T:
    """``call()`` with ``import jax`` failing during it: jaxlib catches the ImportError and builds the
    array without jax (NOTES §0.1). If jax is already imported by the user, nothing is blocked.

    No lock: a lock held across the call could stay held after a KeyboardInterrupt. Two threads
    blocking at once may unblock early for one of them; at worst jaxlib then imports jax.
    """
    if "jax" in sys.modules:
        return call()
    sys.modules["jax"] = None  # type: ignore[assignment]
    try:
        return call()
    finally:
        if sys.modules.get("jax", 0) is None:
            sys.modules.pop("jax", None)


def buffer_memory_kind(buf: Buffer) -> str:
    """The kind of memory holding ``buf`` (``'device'``, ``'pinned_host'``, ...)."""
    return buf._sharding._memory_kind  # (jaxlib's C++ shardings all keep it: a shard's SingleDeviceSharding too)


def copy(buf: Buffer) -> Buffer:
    """A copy of ``buf`` in buffers of its own, where it is (its devices, memory and layout): device to device."""
    _check_alive(buf, "copy")
    sharding = buf._sharding
    try:
        (out,) = xc.batched_copy_array_to_devices_with_sharding(
            [buf], [sharding._internal_device_list], [sharding], [ALWAYS_COPY])
    except JaxRuntimeError as e:
        raise _runtime_error(e, "copy") from e
    return out


def copy_to(buf: Buffer, device: Device, memory_kind: str | None = None) -> Buffer:
    """A copy of ``buf`` on ``device``, in its memory ``memory_kind`` (None: the default memory); ``buf`` itself
    when it is already there."""
    if not isinstance(device, Device):
        raise TypeError(f"runtime.copy_to expects a kiln runtime.Device, got {device!r}.")
    _check_alive(buf, "copy_to")
    target = device._sharding if memory_kind is None else device.sharding_in(memory_kind)
    src = buffer_device(buf)
    if src is device and buf._sharding is target:
        return buf
    if src.backend is not device.backend:
        # Different PJRT clients cannot copy directly: go through the host.
        return put(np.asarray(to_numpy(buf), order="C"), device, memory_kind)
    try:
        (out,) = xc.batched_copy_array_to_devices_with_sharding(
            [buf], [target._internal_device_list], [target], [ALWAYS_COPY])
    except JaxRuntimeError as e:
        err = _runtime_error(e, f"copy_to({device!r})")
        if isinstance(err, DeletedBufferError):
            raise err from e
        guarded = guard_error(jaxlib_message(e), f"copying an array from {src!r} to {device!r}")
        if guarded is not None:
            raise guarded from None
        raise DeviceError(f"Copying a buffer from {src!r} to {device!r} failed: {jaxlib_message(e)}") from e
    return out
