"""From IR to results: choose the device, move arguments there, compile, execute, wrap outputs.

Shared by eager primitives (one-equation IRs) and ``jit``.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from kiln import lowering, runtime

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.config import config
from ..core.errors import KilnError
from ..core.ir import IR, Literal
from . import eqn_profile
from .array import Array, held_on
from .sharding import SingleDeviceSharding


class DeviceMismatchError(KilnError, ValueError):
    """Arguments committed to different devices."""


_default_device_cache: dict[Any, runtime.Device] = {}


def default_device() -> runtime.Device:
    """``kiln.config.default_device`` (set with ``kiln.default_device``) when set, else the first device of
    the default backend (``kiln.config.default_backend`` or the best one)."""
    chosen = config.default_device
    if chosen is not None:
        if isinstance(chosen, runtime.Device):
            return chosen
        name = chosen  # a backend name: its first device
    else:
        name = config.default_backend
    dev = _default_device_cache.get(name)
    if dev is None:
        dev = _default_device_cache[name] = runtime.get_backend(name).devices()[0]
    return dev


def device_of(backend: str | None = None, device: Any = None) -> runtime.Device | None:
    """Resolve jit's ``device=``/``backend=`` options to one device (None when neither is given)."""
    if device is not None:
        if isinstance(device, runtime.Device):
            return device
        raise TypeError(f"kiln: device= expects a kiln device (from kiln.devices()), got {device!r}")
    if backend is not None:
        return runtime.get_backend(backend).devices()[0]
    return None


def pick_device(values: Sequence[Any], names: Sequence[str] | None = None,
                explicit: runtime.Device | None = None) -> tuple[runtime.Device, bool]:
    """The device a computation on ``values`` runs on, and whether its results are committed.

    Computation follows committed arrays; committed arrays on different devices are an error.
    An explicit device wins (arguments are moved to it).
    """
    if explicit is not None:
        return explicit, True
    device = None
    for v in values:
        if type(v) is Array and v._committed:
            if v._device is None:
                raise several_devices_unsupported(v)
            if device is None:
                device = v._device
            elif v._device != device:
                raise device_mismatch(values, names)
    if device is None:
        return default_device(), False
    return device, True


def several_devices_unsupported(x: Array) -> NotImplementedError:
    return NotImplementedError(
        f"kiln: an array laid out over several devices ({x.sharding}) reached a one-device computation; "
        "run it under kiln.jit (which partitions it over the mesh), or gather it first with "
        "kiln.device_put(x, device).")


def device_mismatch(values: Sequence[Any], names: Sequence[str] | None = None,
                    where: str = "kiln") -> DeviceMismatchError:
    """The error for ``values`` committed to different devices, naming the first two that disagree."""
    committed = [(i, v._device) for i, v in enumerate(values) if type(v) is Array and v._committed]
    (first, device), (i, other) = committed[0], next(c for c in committed if c[1] != committed[0][1])

    def name(j):
        return names[j] if names else f"argument {j}"
    return DeviceMismatchError(
        f"{where}: arguments are committed to different devices: {name(first)} is on {device!r} and {name(i)} is "
        f"on {other!r}. Move them to one device with kiln.device_put first.")


def canonical_host_array(x: Any) -> np.ndarray:
    """A NumPy array of ``x`` with kiln's canonical dtype (float64 -> float32 unless x64...)."""
    if isinstance(x, Literal):
        return x.val
    if isinstance(x, dtypes.PY_SCALARS):
        dtype, _ = dtypes.dtype_of_value(x)
        return np.asarray(x, dtype)
    arr = np.asarray(x)
    dtype = dtypes.canonicalize_dtype(arr.dtype)
    return arr if arr.dtype == dtype else arr.astype(dtype)


def to_buffer(x: Any, device: runtime.Device) -> Any:
    """The device buffer for argument ``x`` on ``device`` (moving or transferring it as needed)."""
    if held_on(x, device):
        return x._buf
    if type(x) is Array:
        if x._device is None:  # laid out over several devices: gathered through the host
            return runtime.put(np.asarray(x._value(), order="C"), device)
        return runtime.copy_to(x._buf, device)  # (into its default memory: one-device programs compute there)
    from ..core.tracing import Tracer
    if isinstance(x, Tracer):  # outside any trace: it escaped the function that was traced
        from ..core.errors import UnexpectedTracerError
        raise UnexpectedTracerError(
            f"kiln: a traced value {x.aval.str_short()} created while tracing {x.builder.fun_name} was used "
            "after that trace ended, outside any transformation. This happens when a traced value escapes a "
            "transformed function, e.g. stored in a global or an object attribute. Return it from the "
            "function instead.")
    return runtime.put(canonical_host_array(x), device)


def put(x: Any, device: runtime.Device | None = None, committed: bool = True) -> Array:
    """``kiln.device_put`` for one leaf."""
    from ..core.tracing import abstractify
    aval = abstractify(x)
    target = device or default_device()
    if type(x) is Array:
        if x._device is None:  # laid out over several devices: gather through the host
            return Array(runtime.put(np.asarray(x._value(), order="C"), target), x.aval, target, committed)
        if x.is_deleted():
            raise runtime.DeletedBufferError("kiln.device_put: the array was deleted or donated to an earlier "
                                             "computation; it has no value to place")
        if held_on(x, target) and (x._committed or not committed):
            return x
        return Array(to_buffer(x, target), x.aval, target, committed)
    return Array(runtime.put(canonical_host_array(x), target), aval, target, committed)


@dataclass
class CompiledIR:
    """An IR compiled for one device."""

    executable: runtime.Executable
    lowered: lowering.LoweredModule
    out_avals: list[ShapedArray]
    kept: list[bool]           # for each of constvars + invars: passed to the executable?
    device: runtime.Device

    def run(self, buffers: Sequence[Any], committed: bool) -> list[Array]:
        outs = self.executable.execute(list(buffers))
        device = self.device
        return [Array(b, a, device, committed) for b, a in zip(outs, self.out_avals)]


# Whether this thread is inside lower_ir (a lowering rule may run eager code that lowers again).
_lowering: contextvars.ContextVar[bool] = contextvars.ContextVar("kiln_lowering", default=False)


def lower_ir(ir: IR, *, donated: Sequence[bool] = (), keep_unused: bool = False,
             device: runtime.Device | None = None, mesh: lowering.MeshLayout | None = None,
             debug_name: str | None = None, embedded_consts: Sequence | None = None,
             platform_index_param: bool = False) -> lowering.LoweredModule:
    """Lower ``ir`` for ``device``'s platform (rules may then use its custom calls, e.g. LAPACK on CPU);
    ``mesh`` states the layouts of a program partitioned over a device mesh; ``debug_name`` (a jitted
    function's name) goes into the operations' locations; ``embedded_consts`` (host values of the constvars)
    writes the constants into the module instead of taking them as parameters; ``platform_index_param`` gives
    it a leading unused i32 parameter (export's multi-platform convention)."""
    if not _lowering.get():
        runtime.drop_stale_scopes()  # MLIR scopes an interrupted lowering left entered
    if runtime.ir_dump.enabled("jaxpr"):  # kiln.config's dump_ir_to with "jaxpr" in dump_ir_modes (as JAX's)
        runtime.ir_dump.dump_text("jaxpr", f"jit_{debug_name}" if debug_name else "main", "ir.txt", str(ir))
    eqn_profile.dump(ir, f"jit_{debug_name}" if debug_name else "main")  # (the eqn_count_pprof mode)
    lowered = contextvars.copy_context().run(_lower, ir, donated, keep_unused, device, mesh, debug_name,
                                             embedded_consts, platform_index_param)
    if mesh is None and device is not None:
        report_unpartitioned(lowered, SingleDeviceSharding(device))
    return lowered


def report_unpartitioned(lowered: lowering.LoweredModule, sharding: Any) -> None:
    """Tell the inspectors of the values of ``lowered`` that the partitioner does not lay out (a program on one
    device; inside shard_map) that they are laid out by ``sharding`` (kiln.debug.inspect_array_sharding)."""
    for inspector, probe, _ in lowered.sharding_probes:
        if probe is None:
            inspector.report(sharding)


def _lower(ir: IR, donated: Sequence[bool], keep_unused: bool, device: runtime.Device | None,
           mesh: lowering.MeshLayout | None, debug_name: str | None, embedded_consts: Sequence | None = None,
           platform_index_param: bool = False) -> lowering.LoweredModule:
    _lowering.set(True)
    extra = dict(mesh=mesh, debug_name=debug_name, embedded_consts=embedded_consts,
                 platform_index_param=platform_index_param)
    if device is None:
        return lowering.lower(ir, context=runtime.mlir_context(), donated=donated, keep_unused=keep_unused, **extra)
    platform = device.platform
    return lowering.lower(ir, context=runtime.mlir_context(), donated=donated, keep_unused=keep_unused,
                          platform=platform, custom_call_targets=lambda: runtime.custom_call_targets(platform),
                          native_bf16=platform == "cpu" and runtime.cpu_has_native_bf16(), **extra)


def compile_ir(ir: IR, device: runtime.Device, *, donated: Sequence[bool] = (),
               keep_unused: bool = False, debug_name: str | None = None,
               lowered: lowering.LoweredModule | None = None, compiler_options: Sequence = ()) -> CompiledIR:
    """Lower ``ir`` to StableHLO (unless ``lowered``, the module :func:`lower_ir` made with these arguments, is
    given) and compile it for ``device`` (with XLA's ``compiler_options``, ``(name, value)`` pairs)."""
    if lowered is None:
        lowered = lower_ir(ir, donated=donated, keep_unused=keep_unused, device=device, debug_name=debug_name)
    return compile_lowered(ir, lowered, device, num_donated=sum(bool(d) for d in donated),
                           compiler_options=compiler_options)


def compile_lowered(ir: IR, lowered: lowering.LoweredModule, device: runtime.Device,
                    num_donated: int = 0, compiler_options: Sequence = ()) -> CompiledIR:
    """Compile the StableHLO module ``lowered`` (of ``ir``) for ``device``."""
    out_types = [(a.shape, a.dtype) for a in lowered.out_avals]
    exe = runtime.compile(lowered.module, device, out_types, num_donated=num_donated, text=lowered.as_text(),
                          host_callbacks=lowered.host_callbacks, ordered_effects=lowered.ordered_effects,
                          compiler_options=compiler_options)
    return CompiledIR(exe, lowered, [v.aval for v in ir.outvars], lowered.kept_inputs, device)
