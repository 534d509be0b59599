"""Compilation of StableHLO for one device, the in-memory executable cache, and dispatch."""
from __future__ import annotations

import collections
import threading
from typing import Any, Sequence

import numpy as np

from ._jaxlib import JaxRuntimeError, result_handler, xc
from .avals import Aval, aval_for
from .backends import Device
from .buffers import Buffer, buffer_device
from .errors import (
    CompileError,
    DeletedBufferError,
    DeviceError,
    ExecutionError,
    KilnRuntimeError,
    deleted_error,
    jaxlib_message,
)
from .lapack import ensure_lapack_registered, lapack_unavailable_reason

OutTypes = Sequence[tuple[tuple[int, ...], Any]]


class Executable:
    """A module compiled for one device. :meth:`execute` is kiln's dispatch hot path."""

    __slots__ = ("device", "out_avals", "num_donated", "_exe", "_handlers", "_module", "_text",
                 "__weakref__")

    def __init__(self, exe: Any, device: Device, out_avals: list[Aval], num_donated: int, module: Any,
                 text: str) -> None:
        self.device = device
        self.out_avals = out_avals
        self.num_donated = num_donated
        self._exe = exe
        self._module = module
        self._text = text
        sharding = device._sharding
        # Built once: C++ result handlers wrap outputs without Python callbacks (and without jax, §2).
        self._handlers = [result_handler(av, sharding) for av in out_avals]

    def execute(self, args: list[Buffer]) -> list[Buffer]:
        """Launch the computation on ``args``; returns the output buffers without waiting for them."""
        try:
            results = self._exe.execute_sharded(args)
        except (JaxRuntimeError, TypeError) as e:
            raise self._argument_error(e, args) from e
        return results.consume_with_handlers(self._handlers)

    __call__ = execute

    def _argument_error(self, e: BaseException, args: Sequence[Any]) -> Exception:
        """Explain a failed launch: deleted/donated or misplaced argument, wrong count, or XLA's message."""
        msg = jaxlib_message(e)
        for i, a in enumerate(args):
            if not isinstance(a, Buffer):
                return TypeError(f"Argument {i} of the computation is a {type(a).__name__}, not a device "
                                 "buffer; transfer it with runtime.put(...) first.")
        for i, a in enumerate(args):
            if a.is_deleted():
                return deleted_error(f"argument {i} of the computation")
        for i, a in enumerate(args):
            try:
                dev = buffer_device(a)
            except KilnRuntimeError:
                dev = None
            if dev is not self.device:
                where = repr(dev) if dev is not None else "a device outside kiln"
                return DeviceError(f"Argument {i} of the computation is on {where}, but the executable was "
                                   f"compiled for {self.device!r}. Move it with runtime.copy_to(buf, "
                                   f"{self.device!r}) or compile for {where}.")
        if "previously donated in the same call" in msg:
            return DeletedBufferError(f"The same buffer was passed twice to one call, once as a donated "
                                      f"argument; pass a copy instead. XLA: {msg}")
        n = self.num_args
        if n is not None and n != len(args):
            return TypeError(f"The computation takes {n} arguments but was given {len(args)}.")
        if isinstance(e, TypeError):
            return TypeError(f"Bad arguments to the computation: {msg}")
        return ExecutionError(f"Executing the computation on {self.device!r} failed: {msg}")

    @property
    def num_args(self) -> int | None:
        try:
            return len(self._exe.get_parameter_layouts())
        except Exception:
            return None

    def as_text(self) -> str:
        """The StableHLO module text this executable was compiled from."""
        return self._text

    def hlo_text(self) -> str:
        """The optimised HLO XLA produced."""
        return str(self._exe.get_hlo_text())

    def cost_analysis(self) -> dict[str, float] | None:
        """XLA's cost estimates (flops, bytes accessed, ...), or None when the backend has none."""
        try:
            return dict(self._exe.cost_analysis())
        except Exception:
            return None

    def memory_stats(self) -> Any:
        """XLA's compiled memory statistics, or None when the backend has none."""
        try:
            return self._exe.get_compiled_memory_stats()
        except Exception:
            return None

    def __repr__(self) -> str:
        outs = ", ".join(f"{av.dtype}{list(av.shape)}" for av in self.out_avals)
        return f"Executable(device={self.device!r}, outputs=[{outs}])"


_CACHE_CAPACITY = 4096
_cache: collections.OrderedDict[tuple, Executable] = collections.OrderedDict()
_cache_lock = threading.Lock()


def clear_compile_cache() -> None:
    """Drop every cached executable."""
    with _cache_lock:
        _cache.clear()


def _module_text(module: Any) -> str:
    if isinstance(module, str):
        return module
    if type(module).__name__ == "Module" and hasattr(module, "operation"):  # jaxlib.mlir ir.Module
        return str(module)
    raise TypeError(f"runtime.compile expects StableHLO text (str) or a jaxlib.mlir ir.Module, "
                    f"got {type(module).__name__}.")


def _compile_options(device: Device) -> Any:
    opts = xc.CompileOptions()
    opts.device_assignment = xc.DeviceAssignment.create(np.array([[device._raw.id]]))
    debug = opts.executable_build_options.debug_options
    for name, value in device.backend.debug_options.items():
        try:
            setattr(debug, name, value)
        except AttributeError:  # option renamed or removed in this jaxlib
            pass
    return opts


def compile(module: Any, device: Device, out_types: OutTypes, num_donated: int = 0) -> Executable:
    """Compile a StableHLO module (text or ``ir.Module``) for ``device``; cached in memory.

    ``out_types`` lists each result's ``(shape, dtype)``; ``num_donated`` is the number of leading
    arguments the module donates (recorded for messages; the aliasing itself is in the module's
    ``tf.aliasing_output`` / ``jax.buffer_donor`` argument attributes).
    """
    if not isinstance(device, Device):
        raise TypeError(f"runtime.compile expects a kiln runtime.Device, got {device!r}.")
    text = _module_text(module)
    out_avals = [aval_for(tuple(shape), np.dtype(dtype)) for shape, dtype in out_types]
    key = (text, device, tuple(out_avals), num_donated)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    client = device.backend._client
    if device.platform == "cpu" and "lapack_" in text:
        ensure_lapack_registered()  # custom calls to jaxlib's LAPACK kernels: register them first
    try:
        exe = client.compile_and_load(module, xc.DeviceList((device._raw,)), _compile_options(device))
    except (JaxRuntimeError, ValueError, RuntimeError) as e:  # parse, verify and XLA errors
        msg = f"XLA failed to compile the module for {device!r}:\n{jaxlib_message(e)}"
        if "lapack_" in text and lapack_unavailable_reason():
            msg += f"\n(kiln could not register jaxlib's LAPACK kernels: {lapack_unavailable_reason()})"
        raise CompileError(msg) from e
    _check_outputs(exe, out_avals)
    executable = Executable(exe, device, out_avals, num_donated, module, text)
    with _cache_lock:
        executable = _cache.setdefault(key, executable)  # a concurrent compile of the same key: keep one
        while len(_cache) > _CACHE_CAPACITY:
            _cache.popitem(last=False)
    return executable


def _check_outputs(exe: Any, out_avals: list[Aval]) -> None:
    try:
        n = len(exe.get_output_layouts())
    except Exception:  # not every plugin reports layouts
        return
    if n != len(out_avals):
        raise CompileError(f"The module returns {n} results but out_types lists {len(out_avals)}: "
                           f"{[f'{av.dtype}{list(av.shape)}' for av in out_avals]}.")
