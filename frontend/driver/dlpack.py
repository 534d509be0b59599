"""DLPack: kiln arrays to and from other array libraries (NumPy, PyTorch, CuPy...) without copies where the
memory can be shared (JAX's ``jax.dlpack`` and ``x.__dlpack__``; NOTES §9).

An imported array aliases the producer's memory, as in JAX: writing to the NumPy array afterwards changes the
kiln array too; pass ``copy=True`` to own the data. The runtime side is :mod:`kiln.runtime.dlpack`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from kiln import runtime

from ..core import dtypes
from ..core.avals import ShapedArray
from .array import Array
from .sharding import SingleDeviceSharding

__all__ = ["from_dlpack", "is_supported_dtype"]

_SUPPORTED = {np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128,
                                    np.bool_)} | {dtypes.canonicalize_dtype("bfloat16", True)}
_PLATFORM_OF = {runtime.dlpack.KDL_CPU: "cpu", runtime.dlpack.KDL_CUDA: "cuda", runtime.dlpack.KDL_ROCM: "rocm"}


def is_supported_dtype(dtype: Any) -> bool:
    """Whether arrays of ``dtype`` can cross DLPack."""
    return np.dtype(dtype) in _SUPPORTED


def _source_device(dl_type: int, dl_id: int) -> runtime.Device:
    """kiln's device holding memory that DLPack describes as (device type, id)."""
    platform = _PLATFORM_OF.get(dl_type)
    if platform is None:
        raise runtime.dlpack.DLPackError(f"kiln.from_dlpack: the array lives on DLPack device type {dl_type}, "
                                         "which kiln cannot read; copy it to the CPU first")
    try:
        candidates = runtime.devices(platform)
    except Exception as e:  # no such backend here
        raise runtime.dlpack.DLPackError(f"kiln.from_dlpack: the array is on a {platform} device, but kiln has no "
                                         f"{platform} backend in this process ({e})") from None
    for d in candidates:
        if (getattr(d._raw, "local_hardware_id", None) or 0) == dl_id:
            return d
    return candidates[0]


def _target(device: Any) -> runtime.Device | None:
    if device is None or isinstance(device, runtime.Device):
        return device
    if isinstance(device, SingleDeviceSharding):
        return device._device
    raise TypeError(f"kiln.from_dlpack: device must be a kiln device or a SingleDeviceSharding, got {device!r:.60}")


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array:
    """A kiln array of ``x``: an object with ``__dlpack__`` (a NumPy array, a PyTorch tensor, ...) or a DLPack
    capsule. Zero-copy on the producer's device (the arrays share memory); ``device`` moves it there, ``copy``
    True always copies, False refuses to. Dtypes kiln does not compute in (float64 without x64) are converted,
    as JAX does."""
    from .placement import device_put
    target = _target(device)
    if isinstance(x, Array):
        out = x
    else:
        if hasattr(x, "__dlpack__"):
            dl_type, dl_id = (int(v) for v in x.__dlpack_device__())
            src = _source_device(dl_type, dl_id)
            stream = None
            if dl_type != runtime.dlpack.KDL_CPU:  # a GPU producer orders its work before ours (JAX's protocol)
                get_stream = getattr(src._raw, "get_stream_for_external_ready_events", None)
                stream = get_stream() if get_stream is not None else None
            try:
                capsule = x.__dlpack__() if stream is None else x.__dlpack__(stream=stream)
            except BufferError as e:
                raise runtime.dlpack.DLPackError(f"kiln.from_dlpack: {type(x).__name__} cannot export this array "
                                                 f"over DLPack: {e}") from None
        elif type(x).__name__ == "PyCapsule":
            capsule = x
            src = _source_device(*runtime.dlpack.capsule_info(x)[2])
        else:
            raise TypeError(f"kiln.from_dlpack: expected an array with __dlpack__ (NumPy, PyTorch, ...) or a DLPack "
                            f"capsule, got {type(x).__name__}")
        buf = runtime.dlpack.from_capsule(capsule, src)
        shape, dtype = buf.aval.shape, buf.aval.dtype
        out = Array(buf, ShapedArray(shape, dtype), src, committed=target is not None)
    wanted = dtypes.canonicalize_dtype(out.dtype)
    if wanted != out.dtype:
        if copy is False:
            raise ValueError(f"kiln.from_dlpack: copy=False, but {out.dtype} arrays are stored as {wanted} here "
                             "(enable_x64 is off), which needs a copy")
        out = out.astype(wanted)
    elif copy:
        out = out.copy()
    if target is not None and target is not out._device:
        if copy is False:
            raise ValueError(f"kiln.from_dlpack: copy=False, but the array is on {out._device!r} and device={target!r}")
        out = device_put(out, target)
    return out


def array_dlpack(x: Array, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                 copy: bool | None = None) -> Any:
    """``x.__dlpack__``: a capsule of ``x``'s memory (of a copy of it with ``copy=True``, or of a host copy
    when ``dl_device`` asks for the CPU and ``x`` is elsewhere)."""
    if x._device is None:
        raise runtime.dlpack.DLPackError(f"x.__dlpack__: the array is laid out over {len(x.devices())} devices; "
                                         "DLPack describes one device's memory. Export x.addressable_data(i), or "
                                         "gather it with kiln.device_put(x, device)")
    if dl_device is not None and tuple(int(v) for v in dl_device) != runtime.dlpack.dl_device(x._device):
        if int(dl_device[0]) != runtime.dlpack.KDL_CPU:
            raise runtime.dlpack.DLPackError(f"x.__dlpack__: cannot export to DLPack device {tuple(dl_device)} "
                                             f"from {x._device!r}")
        return np.array(x).__dlpack__()  # a host copy for a CPU consumer
    source = x.copy() if copy else x
    return runtime.dlpack.to_capsule(source._buf, stream)
