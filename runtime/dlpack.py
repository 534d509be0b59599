"""DLPack exchange with other array libraries (NOTES §9): a device buffer as a DLPack capsule, and a capsule
as a device buffer. Both are zero-copy on CPU: the capsule or the new buffer aliases the same memory.

jaxlib kills the process when a buffer is deleted while an export of it is alive: an exported buffer is
marked shared, and ``runtime.delete`` refuses it.
"""
from __future__ import annotations

import ctypes
from typing import Any

import ml_dtypes
import numpy as np

from ._jaxlib import JaxRuntimeError, _jax
from .avals import aval_for
from .backends import Device
from .buffers import Buffer, _check_alive, _without_jax_import, mark_shared
from .errors import KilnRuntimeError, jaxlib_message
from .tracebacks import with_user_context

# DLPack's device types (dlpack.h) kiln's platforms map to.
KDL_CPU, KDL_CUDA, KDL_ROCM = 1, 2, 10
_DL_TYPES = {"cpu": KDL_CPU, "cuda": KDL_CUDA, "gpu": KDL_CUDA, "rocm": KDL_ROCM}


class DLPackError(KilnRuntimeError, BufferError):
    """A DLPack exchange that cannot happen: a dtype DLPack has no code for, strides jaxlib cannot take, a
    device kiln cannot read from."""


def dl_device(device: Device) -> tuple[int, int]:
    """``__dlpack_device__`` of a buffer on ``device``: (DLPack device type, the device's number there)."""
    kind = _DL_TYPES.get(device.platform)
    if kind is None:
        raise DLPackError(f"DLPack has no device type for kiln's {device.platform!r} devices")
    return kind, getattr(device._raw, "local_hardware_id", None) or 0


def to_capsule(buf: Buffer, stream: Any = None) -> Any:
    """A DLPack capsule of ``buf``'s memory (one device's buffer)."""
    _check_alive(buf, "DLPack export")
    try:
        capsule = _jax.buffer_to_dlpack_managed_tensor(buf, stream=stream)
    except (JaxRuntimeError, TypeError, ValueError) as e:
        raise DLPackError(f"DLPack export of a {buf.aval} buffer failed: {jaxlib_message(e)}") from e
    mark_shared(buf)
    return capsule


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):  # dlpack.h's DLTensor: a stable ABI
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype, _is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]

# (DLPack type code, bits) -> NumPy dtype: int, uint, float, bfloat, complex, bool.
_DTYPES = {(0, 8): np.int8, (0, 16): np.int16, (0, 32): np.int32, (0, 64): np.int64, (1, 8): np.uint8,
           (1, 16): np.uint16, (1, 32): np.uint32, (1, 64): np.uint64, (2, 16): np.float16, (2, 32): np.float32,
           (2, 64): np.float64, (4, 16): ml_dtypes.bfloat16, (5, 64): np.complex64, (5, 128): np.complex128,
           (6, 8): np.bool_}


def capsule_info(capsule: Any) -> tuple[tuple[int, ...], np.dtype, tuple[int, int]]:
    """Shape, dtype and (device type, device id) of an unused DLPack capsule (read from its DLTensor header;
    the DLManagedTensor begins with it)."""
    if not _is_valid(capsule, b"dltensor"):
        raise DLPackError("DLPack import: expected an unused DLPack capsule (or an object with __dlpack__); a "
                          "capsule can be consumed only once")
    t = _DLTensor.from_address(_get_pointer(capsule, b"dltensor"))
    key = (t.dtype.code, t.dtype.bits)
    if key not in _DTYPES or t.dtype.lanes != 1:
        raise DLPackError(f"DLPack import: no kiln dtype for DLPack type code {t.dtype.code} with {t.dtype.bits} "
                          f"bits and {t.dtype.lanes} lanes")
    return tuple(t.shape[i] for i in range(t.ndim)), np.dtype(_DTYPES[key]), (t.device_type, t.device_id)


def from_capsule(capsule: Any, device: Device) -> Buffer:
    """The device buffer a DLPack capsule describes, on ``device`` (aliasing its memory where jaxlib can)."""
    shape, dtype, _ = capsule_info(capsule)
    try:
        # jaxlib tries to import jax for the new array's aval (NOTES §0.1); kiln sets its own just below.
        raw = with_user_context(lambda: _without_jax_import(
            lambda: _jax.dlpack_managed_tensor_to_buffer(capsule, device._raw, None)))
    except (JaxRuntimeError, TypeError, ValueError) as e:
        msg = jaxlib_message(e)
        if "striding" in msg:
            raise DLPackError("DLPack import: kiln (XLA) takes only compact arrays (strides that are a transposition "
                              "of the memory, no broadcasting or stepping); pass a contiguous copy, e.g. "
                              "numpy.ascontiguousarray(x)") from e
        raise DLPackError(f"DLPack import failed: {msg}") from e
    return raw._rewrap_with_aval_and_sharding(aval_for(shape, dtype), device._sharding)
