"""XLA FFI targets: registering user C/C++ kernels with XLA (the runtime side of ``kiln.ffi``).

A typed-FFI handler (``XLA_FFI_DEFINE_HANDLER_SYMBOL`` in ``xla/ffi/api/ffi.h``) is registered by name in
XLA's process-wide registry, per platform, through jaxlib's ``xla_client.register_custom_call_target``
(private jaxlib API: kept here). A registration made before the platform's client exists is queued by
jaxlib and applied when the client is created. A compiled program then calls the handler with
``stablehlo.custom_call @name`` (``api_version = 4``).
"""
from __future__ import annotations

import ctypes
import os
from typing import Any

import jaxlib

from ._jaxlib import xc
from .errors import KilnRuntimeError


class FfiRegistrationError(KilnRuntimeError, ValueError):
    """An FFI target or type could not be registered (bad arguments, or jaxlib refused it)."""


def include_dir() -> str:
    """The directory of the C++ headers jaxlib ships (``xla/ffi/api/ffi.h``, ``c_api.h``, ``api.h``)."""
    base = getattr(jaxlib, "__file__", None)
    root = os.path.dirname(os.path.abspath(base)) if base else next(iter(getattr(jaxlib, "__path__", [])), None)
    if root is None:
        raise FfiRegistrationError("kiln.ffi.include_dir: cannot locate the installed jaxlib package")
    return os.path.join(root, "include")


_CAPSULE_NEW = ctypes.pythonapi.PyCapsule_New
_CAPSULE_NEW.restype = ctypes.py_object
_CAPSULE_NEW.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)


# ctypes function pointers (a library's symbols, CFUNCTYPE objects), void pointers and typed pointers.
_POINTERS = (ctypes._CFuncPtr, ctypes.c_void_p, ctypes._Pointer)


def pycapsule(funcptr: Any) -> Any:
    """An unnamed PyCapsule (without destructor) holding the address of a ctypes function pointer (or of a
    ctypes pointer / integer address)."""
    if isinstance(funcptr, int) and not isinstance(funcptr, bool):
        address = funcptr
    elif isinstance(funcptr, _POINTERS):
        address = ctypes.cast(funcptr, ctypes.c_void_p).value
    else:
        raise FfiRegistrationError(
            f"kiln.ffi.pycapsule: expected a ctypes function pointer (e.g. ctypes.cdll.LoadLibrary(path).MyHandler), "
            f"got an object of type {type(funcptr).__name__}")
    if not address:
        raise FfiRegistrationError("kiln.ffi.pycapsule: the function pointer is NULL")
    return _CAPSULE_NEW(address, None, None)


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


def register_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1, **kwargs: Any) -> None:
    """Register the handler ``fn`` (a PyCapsule, or a dict of FFI stage name -> PyCapsule) as the custom-call
    target ``name`` on ``platform``; ``api_version`` 1 is the typed FFI, 0 the legacy custom-call API.
    Other keyword arguments go to jaxlib's ``register_custom_call_target`` (``traits``)."""
    if not isinstance(name, str) or not name:
        raise FfiRegistrationError(f"kiln.ffi.register_ffi_target: the name must be a non-empty string, got {name!r}")
    if api_version not in (0, 1):
        raise FfiRegistrationError(f"kiln.ffi.register_ffi_target: api_version must be 1 (the typed FFI) or 0 (the "
                                   f"legacy custom-call API), got {api_version!r}")
    stages = fn.values() if isinstance(fn, dict) else [fn]
    if not stages or not all(_is_capsule(s) for s in stages):
        raise FfiRegistrationError(
            f"kiln.ffi.register_ffi_target({name!r}): fn must be a PyCapsule holding the handler (wrap a ctypes "
            f"function pointer with kiln.ffi.pycapsule) or a dict of stage name -> PyCapsule, got "
            f"{type(fn).__name__}")
    try:
        xc.register_custom_call_target(name, fn, platform, api_version, **kwargs)
    except TypeError as e:
        raise FfiRegistrationError(f"kiln.ffi.register_ffi_target({name!r}): jaxlib rejected the arguments: {e}") from e


def register_type(name: str, type_registration: Any, platform: str = "cpu") -> None:
    """Register a user type for FFI handlers (jaxlib's ``register_custom_type``): ``type_registration`` is a
    dict with ``type_id`` (a PyCapsule of an ``XLA_FFI_TypeId``) and optionally ``type_info``."""
    register = getattr(xc, "register_custom_type", None)
    if register is None:
        raise FfiRegistrationError("kiln.ffi.register_ffi_type: this jaxlib cannot register FFI types")
    if (not isinstance(type_registration, dict) or "type_id" not in type_registration
            or not all(_is_capsule(v) for v in type_registration.values())):
        raise FfiRegistrationError(f"kiln.ffi.register_ffi_type({name!r}): type_registration must be a dict with a "
                                   "'type_id' PyCapsule (and optionally a 'type_info' one; kiln.ffi.pycapsule wraps a "
                                   f"ctypes pointer), got {type_registration!r}")
    register(name, type_registration, platform=platform)


def register_batch_partitionable(name: str) -> None:
    """Mark the custom-call target ``name`` as batch partitionable for XLA's SPMD partitioner (it may run
    independently on each shard of the leading dimensions)."""
    register = getattr(xc, "register_custom_call_as_batch_partitionable", None)
    if register is None:
        raise FfiRegistrationError("kiln.ffi.register_ffi_target_as_batch_partitionable: this jaxlib cannot mark "
                                   "targets batch partitionable")
    register(name)
