"""kiln.runtime: everything kiln needs from jaxlib's PJRT runtime, behind kiln's own interface.

Backends and devices, host<->device transfers, compilation of StableHLO and asynchronous execution.
This package imports only jaxlib, numpy, ml_dtypes and the standard library, and never jax.
"""
from __future__ import annotations

import os

# Before the first jaxlib import: silences the "PjRt-IFRT device count" INFO lines on stderr.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import gc  # noqa: E402

from . import (
    compile_cache,  # noqa: E402,F401  (the persistent compile cache)
    distributed,  # noqa: E402
    dlpack,  # noqa: E402,F401  (DLPack exchange)
    fastpath,  # noqa: E402,F401  (the C++ jit dispatch path)
    ffi,  # noqa: E402,F401  (registering XLA FFI targets: kiln.ffi)
    ir_dump,  # noqa: E402,F401  (dumping compiled modules: kiln.config's dump_ir_to)
    portable,  # noqa: E402,F401  (portable StableHLO artifacts, for export)
    profiler,  # noqa: E402,F401  (jaxlib's profiler)
    tracebacks,  # noqa: E402  (jaxlib's per-array Python tracebacks: off, see there)
    transfer_guard,  # noqa: E402,F401  (jaxlib's transfer guards)
)
from ._jaxlib import JAXLIB_VERSION, _jax  # noqa: E402
from .avals import Aval  # noqa: E402
from .backends import (  # noqa: E402
    Backend,
    Device,
    Memory,
    available_backends,
    cpu_has_native_bf16,
    default_backend,
    devices,
    get_backend,
    global_devices,
    local_device,
    set_default_backend,
)
from .buffers import (  # noqa: E402
    Buffer,
    block_until_ready,
    buffer_device,
    buffer_memory_kind,
    buffer_pointer,
    copy,
    copy_to,
    copy_to_host_async,
    delete,
    is_deleted,
    is_ready,
    live_buffers,
    nbytes,
    put,
    to_numpy,
)
from .callbacks import CallbackError, CallbackResultError, HostCallback, effects_barrier, run_on_host  # noqa: E402
from .errors import (  # noqa: E402
    BackendError,
    CompileError,
    DeletedBufferError,
    DeviceError,
    ExecutionError,
    KilnRuntimeError,
)
from .executable import (  # noqa: E402
    Executable,
    ExecutableCache,
    MemoryAnalysis,
    compile,
    module_cost_analysis,
    module_hlo_computation,
    module_hlo_text,
)
from .lapack import custom_call_targets, ensure_lapack_registered, lapack_unavailable_reason  # noqa: E402
from .mlir import drop_stale_scopes, mlir_context  # noqa: E402
from .sharded import (  # noqa: E402
    SpmdExecutable,
    SpmdSharding,
    compile_spmd,
    devices_of,
    is_tiled_layout,
    put_sharded,
    shards_of,
    spmd_sharding,
    tile_layout,
)
from .sharding_probe import ShardingProbe  # noqa: E402


def jaxlib_version() -> str:
    """The installed jaxlib's version string, e.g. '0.10.2'."""
    return JAXLIB_VERSION


def _collect_garbage(*_: object) -> None:
    # Frees Python references whose release jaxlib deferred from its runtime threads (as jax does).
    _jax.collect_garbage()


tracebacks.configure()

if not any(getattr(cb, "__name__", "") == "_kiln_collect_garbage" for cb in gc.callbacks):
    _collect_garbage.__name__ = "_kiln_collect_garbage"
    gc.callbacks.append(_collect_garbage)

__all__ = [
    "available_backends", "Aval", "Backend", "BackendError", "block_until_ready", "Buffer", "buffer_device",
    "buffer_pointer", "compile", "compile_spmd", "CompileError", "copy", "copy_to", "cpu_has_native_bf16",
    "copy_to_host_async", "custom_call_targets",
    "default_backend", "delete",
    "DeletedBufferError", "Device", "DeviceError", "devices", "devices_of", "distributed", "dlpack",
    "drop_stale_scopes", "ensure_lapack_registered", "Executable", "ExecutableCache", "ExecutionError", "get_backend",
    "global_devices", "is_deleted", "is_ready", "is_tiled_layout", "jaxlib_version", "KilnRuntimeError",
    "lapack_unavailable_reason",
    "live_buffers", "local_device", "MemoryAnalysis", "mlir_context", "module_cost_analysis",
    "module_hlo_computation", "module_hlo_text", "nbytes", "portable",
    "profiler", "put",
    "put_sharded", "set_default_backend", "shards_of", "spmd_sharding", "SpmdExecutable", "SpmdSharding", "tile_layout",
    "to_numpy", "transfer_guard",
]
__all__ += ["CallbackError", "CallbackResultError", "effects_barrier", "HostCallback", "run_on_host"]  # issue 16
__all__ += ["buffer_memory_kind", "Memory"]  # memory kinds (jax.memory)
__all__ += ["ShardingProbe"]  # jax.debug.inspect_array_sharding
__all__ += ["compile_cache"]  # issue 16: the persistent compile cache
__all__ += ["ir_dump"]  # kiln.config's dump_ir_to (JAX's jax_dump_ir_to)
