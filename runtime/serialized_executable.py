"""Compiled executables as bytes and back (``kiln.experimental.serialize_executable``; NOTES §7).

:func:`serialize` writes a loaded :class:`~.executable.Executable` (one device) or
:class:`~.sharded.SpmdExecutable` (a mesh) as bytes: a header (magic, format version, the length of a JSON
record), the JSON record (what kind of executable, the platform, jaxlib's version, the number of devices,
the output types, the number of donated arguments, the StableHLO text) and XLA's own serialized
executable. :func:`deserialize` loads those bytes onto the given devices, which need not be the ones it was
compiled for (PJRT retargets a loaded executable), but must be as many and of the same platform; jaxlib's
version must be the one that wrote it (XLA's format is not stable across releases).

Executables that call Python functions on the host cannot be serialized: XLA refers to the callables by
index, and Python functions cannot be written as bytes.

This module imports only jaxlib, numpy and the standard library.
"""
from __future__ import annotations

import json
import struct
import zlib
from typing import Any, Sequence

import numpy as np

from . import compile_cache
from ._jaxlib import JAXLIB_VERSION, xc
from .avals import aval_for
from .backends import Device
from .errors import KilnRuntimeError, jaxlib_message
from .executable import Executable
from .lapack import ensure_lapack_registered
from .sharded import SpmdExecutable

MAGIC = b"KILNSXE\0"
FORMAT_VERSION = 1
# magic, format version, length of the JSON record
_HEADER = struct.Struct("<8sHI")


class SerializedExecutableError(KilnRuntimeError, ValueError):
    """Bytes that are not a serialized kiln executable, or that cannot be loaded here."""


def _dtype_name(dtype: Any) -> str:
    return np.dtype(dtype).name


def dtype_from_name(name: str) -> np.dtype:
    """The dtype named ``name`` (``np.dtype(x).name``), ml_dtypes' narrow types included."""
    try:
        return np.dtype(name)
    except TypeError:  # the narrow ml_dtypes types (bfloat16, float8_*, int4, ...): known once ml_dtypes is
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


def serialize(exe: Executable) -> bytes:
    """``exe`` (a one-device or mesh executable) as bytes that :func:`deserialize` loads again."""
    if not isinstance(exe, Executable):
        raise TypeError(f"runtime.serialize_executable expects a kiln runtime Executable, got {type(exe).__name__}")
    if exe.host_callbacks:
        raise SerializedExecutableError(
            "the program calls Python functions on the host (kiln.debug.print, pure_callback, io_callback, ...), "
            "which cannot be written as bytes; serialize a program without host callbacks")
    blob = _xla_bytes(exe)
    devices = exe.devices if isinstance(exe, SpmdExecutable) else (exe.device,)
    record = {"kind": "spmd" if isinstance(exe, SpmdExecutable) else "single", "platform": exe.device.platform,
              "jaxlib": JAXLIB_VERSION, "num_devices": len(devices), "num_donated": exe.num_donated,
              "out_types": [[list(av.shape), _dtype_name(av.dtype)] for av in exe.out_avals],
              "text": exe.as_text()}
    meta = zlib.compress(json.dumps(record).encode())
    return _HEADER.pack(MAGIC, FORMAT_VERSION, len(meta)) + meta + blob


def _xla_bytes(exe: Executable) -> bytes:
    """XLA's serialized form of ``exe``. One loaded from the persistent compile cache is the cache entry's bytes:
    XLA's CPU executables deserialized there serialize again without their kernels (the bytes load, and their
    first execution fails with 'Function ..._kernel not found')."""
    if exe.cache_entry is not None:
        blob = compile_cache.read_entry(*exe.cache_entry)
        if blob is None:
            raise SerializedExecutableError(
                "the executable was loaded from the persistent compile cache, whose entry has been removed since "
                "(trimmed or cleared); compile the function again (kiln.clear_caches() first) and serialize that")
        return blob
    try:
        return exe._exe.serialize()
    except Exception as e:  # a backend whose executables cannot be serialized
        raise SerializedExecutableError(f"the {exe.device.platform} backend cannot serialize this executable: "
                                        f"{jaxlib_message(e)}") from e


def _read(data: bytes) -> tuple[dict, bytes]:
    """The JSON record and XLA's executable of serialized ``data``."""
    data = bytes(data)
    if len(data) < _HEADER.size:
        raise SerializedExecutableError("the data is too short to be a serialized kiln executable")
    magic, version, length = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise SerializedExecutableError("the data is not a serialized kiln executable (it does not start with "
                                        "kiln's marker); pass the bytes serialize() returned")
    if version != FORMAT_VERSION:
        raise SerializedExecutableError(f"the data was written in format version {version} of kiln's serialized "
                                        f"executables; this kiln reads version {FORMAT_VERSION}")
    try:
        record = json.loads(zlib.decompress(data[_HEADER.size:_HEADER.size + length]))
    except (zlib.error, ValueError):
        raise SerializedExecutableError("the serialized executable is truncated or corrupted") from None
    return record, data[_HEADER.size + length:]


def platform_of(data: bytes) -> str:
    """The platform ('cpu', 'cuda', ...) the executable serialized in ``data`` was compiled for."""
    return _read(data)[0]["platform"]


def deserialize(data: bytes, devices: Sequence[Device]) -> Executable:
    """Load bytes written by :func:`serialize` onto ``devices`` (as many as it was compiled for, in the order of
    its mesh; one for a one-device executable)."""
    record, blob = _read(data)
    devices = tuple(devices)
    where = "loading a serialized executable"
    if record["jaxlib"] != JAXLIB_VERSION:
        raise SerializedExecutableError(f"{where}: it was written with jaxlib {record['jaxlib']}, and this is "
                                        f"jaxlib {JAXLIB_VERSION}; XLA's executables load only with the jaxlib "
                                        "that compiled them: compile the function again")
    if len(devices) != record["num_devices"]:
        raise SerializedExecutableError(f"{where}: it was compiled for {record['num_devices']} devices, but "
                                        f"{len(devices)} were given")
    platforms = {d.platform for d in devices}
    if platforms != {record["platform"]}:
        raise SerializedExecutableError(f"{where}: it was compiled for the {record['platform']} backend, but the "
                                        f"devices given are {sorted(platforms)} devices")
    text = record["text"]
    if record["platform"] == "cpu" and "lapack_" in text:
        ensure_lapack_registered()  # its custom calls to jaxlib's LAPACK kernels
    client = devices[0].backend._client
    try:
        exe = client.deserialize_executable(blob, xc.DeviceList(tuple(d._raw for d in devices)), None)
    except Exception as e:
        raise SerializedExecutableError(f"{where}: XLA could not load it: {jaxlib_message(e)}") from e
    out_avals = [aval_for(tuple(shape), dtype_from_name(dtype)) for shape, dtype in record["out_types"]]
    if record["kind"] == "spmd":
        return SpmdExecutable(exe, devices, out_avals, record["num_donated"], text)
    return Executable(exe, devices[0], out_avals, record["num_donated"], text)
