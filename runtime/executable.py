"""Compilation of StableHLO for one device, the in-memory executable cache, and dispatch."""
from __future__ import annotations

import collections
import dataclasses
import enum
import operator
import re
from typing import Any, Sequence

import numpy as np

from . import compile_cache
from ._jaxlib import JaxRuntimeError, _jax, result_handler, xc
from .avals import Aval, aval_for
from .backends import Device
from .buffers import Buffer, buffer_device
from .callbacks import HostCallback, after_launch, before_ordered_launch, raise_pending
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

    __slots__ = ("device", "out_avals", "num_donated", "_exe", "_handlers", "_text", "_size",
                 "host_callbacks", "ordered_effects", "cache_entry", "out_memory_kinds", "__weakref__")

    def __init__(self, exe: Any, device: Device, out_avals: list[Aval], num_donated: int, text: str) -> None:
        self.device = device
        self.out_avals = out_avals
        self.num_donated = num_donated
        self._exe = exe
        self._text = text
        # (directory, key) of the persistent cache's entry it was loaded from, else None (compiled here):
        # what runtime.serialize_executable writes for it
        self.cache_entry: tuple[str, str] | None = None
        self._size: int | None = None
        self.host_callbacks: tuple[HostCallback, ...] = ()  # kept alive with the executable (set by compile)
        self.ordered_effects = False
        # Each output's memory kind: the default memory's (None), unless the module placed it elsewhere
        # (``mhlo.memory_kind`` on a result: kiln.device_put to host memory, jit's out_shardings).
        self.out_memory_kinds = output_memory_kinds(exe, device, len(out_avals))
        # Built once: C++ result handlers wrap outputs without Python callbacks (and without jax, §2).
        self._handlers = [result_handler(av, device.sharding_in(kind))
                          for av, kind in zip(out_avals, self.out_memory_kinds)]

    def execute(self, args: list[Buffer]) -> list[Buffer]:
        """Launch the computation on ``args``; returns the output buffers without waiting for them."""
        if self.host_callbacks:
            return self._execute_with_callbacks(args)
        for i, a in enumerate(args):
            # Checked first, not from the launch's error: a launch on a deleted buffer has PJRT log an error line,
            # and callers come here after a fast path's launch failed (one such line is enough).
            if type(a) is Buffer and a.is_deleted():
                raise deleted_error(f"argument {i} of the computation")
        try:
            results = self._launch(args)
        except (JaxRuntimeError, TypeError) as e:
            raise self._argument_error(e, args) from e
        return results.consume_with_handlers(self._handlers)

    def _launch(self, args: list[Buffer]) -> Any:
        """jaxlib's launch (results not yet wrapped); a mesh program also waits for its turn here."""
        return self._exe.execute_sharded(args)

    def _execute_with_callbacks(self, args: list[Buffer]) -> list[Buffer]:
        """A launch of a program that calls host functions: ordered after the previous launch with ordered
        effects (when it has some), and an exception in a callback raised here as a CallbackError."""
        if self.ordered_effects:
            before_ordered_launch()
        try:
            results = self._launch(args)
            outs = results.consume_with_handlers(self._handlers)
        except (JaxRuntimeError, TypeError) as e:
            raise_pending(self.host_callbacks, e)
            raise self._argument_error(e, args) from e
        after_launch(outs, self.ordered_effects)
        return outs

    __call__ = execute

    def launcher(self) -> tuple[Any, Any]:
        """``(start, finish)``: ``finish(start(buffers))`` is :meth:`execute` without its checks (the output
        buffers), for a caller that has matched the arguments to this executable itself and falls back to
        :meth:`execute` (which explains errors) when the launch raises. Two C-level callables, so that no
        Python frame runs between them: one costs a tenth of a microsecond on a launch of about three. Not
        for executables with host callbacks."""
        return self._exe.execute_sharded, operator.methodcaller("consume_with_handlers", self._handlers)

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

    @property
    def size_estimate(self) -> int:
        """Host bytes this executable keeps alive (an estimate: generated code plus a fixed overhead)."""
        if self._size is None:
            code = 0
            stats = self.memory_stats()
            if stats is not None:
                code = int(getattr(stats, "generated_code_size_in_bytes", 0) or 0)
            self._size = EXECUTABLE_OVERHEAD_BYTES + code
        return self._size

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

    def memory_analysis(self) -> MemoryAnalysis | None:
        """XLA's compiled memory statistics as a :class:`MemoryAnalysis`, or None when the backend has none."""
        stats = self.memory_stats()
        if stats is None:
            return None
        return MemoryAnalysis(**{f.name: int(getattr(stats, f.name, 0) or 0)
                                 for f in dataclasses.fields(MemoryAnalysis)})

    def __repr__(self) -> str:
        outs = ", ".join(f"{av.dtype}{list(av.shape)}" for av in self.out_avals)
        return f"Executable(device={self.device!r}, outputs=[{outs}])"


@dataclasses.dataclass(frozen=True)
class MemoryAnalysis:
    """The memory a compiled program needs, per device, in bytes (the attributes of JAX's
    ``Compiled.memory_analysis()``; 0 where this jaxlib does not report one)."""
    argument_size_in_bytes: int = 0
    output_size_in_bytes: int = 0
    alias_size_in_bytes: int = 0
    temp_size_in_bytes: int = 0
    generated_code_size_in_bytes: int = 0
    host_argument_size_in_bytes: int = 0
    host_output_size_in_bytes: int = 0
    host_alias_size_in_bytes: int = 0
    host_temp_size_in_bytes: int = 0
    host_generated_code_size_in_bytes: int = 0
    peak_memory_in_bytes: int = 0


# What one executable costs beyond its generated code (XLA's module, buffer assignment, the loaded
# program's bookkeeping): measured as the RSS of a few hundred tiny executables on CPU.
EXECUTABLE_OVERHEAD_BYTES = 160 * 1024


class ExecutableCache:
    """A least-recently-used map from keys to values that own executables, bounded in bytes.

    ``size_of(value)`` gives a value's size in bytes; entries are dropped, oldest first, while the
    total exceeds ``max_bytes``, and ``on_evict(key, value)`` is told about each one.

    Thread-safe without a lock: every step is one GIL-atomic operation of an ``OrderedDict``, so a
    ``KeyboardInterrupt`` between two lines cannot leave the cache locked; ``nbytes`` is an estimate
    that racing threads may leave slightly off.
    """

    def __init__(self, max_bytes: int, size_of: Any = None, on_evict: Any = None) -> None:
        self.max_bytes = max_bytes
        self._size_of = size_of or (lambda exe: exe.size_estimate)
        self._on_evict = on_evict
        self._entries: collections.OrderedDict[Any, tuple[Any, int]] = collections.OrderedDict()
        self.nbytes = 0

    def get(self, key: Any) -> Any:
        hit = self._entries.get(key)
        if hit is None:
            return None
        try:
            self._entries.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile
            pass
        return hit[0]

    def put(self, key: Any, value: Any) -> Any:
        """Insert ``value`` (or keep the value already there for ``key``); returns the cached value."""
        size = int(self._size_of(value))
        hit = self._entries.setdefault(key, (value, size))
        if hit[0] is not value:
            return hit[0]
        self.nbytes += size
        while self.nbytes > self.max_bytes and len(self._entries) > 1:
            try:
                old_key, (old, old_size) = self._entries.popitem(last=False)
            except KeyError:
                break
            self.nbytes -= old_size
            if self._on_evict is not None:
                self._on_evict(old_key, old)
        return value

    def clear(self) -> None:
        self._entries.clear()
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self):
        return iter(list(self._entries))


# XLA's names of ml_dtypes' narrow types, as they appear in its error messages.
_NARROW_XLA_NAMES = {"S2": "int2", "S4": "int4", "U2": "uint2", "U4": "uint4", "F4E2M1FN": "float4_e2m1fn",
                     "F8E3M4": "float8_e3m4", "F8E4M3": "float8_e4m3", "F8E4M3FN": "float8_e4m3fn",
                     "F8E4M3FNUZ": "float8_e4m3fnuz", "F8E4M3B11FNUZ": "float8_e4m3b11fnuz",
                     "F8E5M2": "float8_e5m2", "F8E5M2FNUZ": "float8_e5m2fnuz", "F8E8M0FNU": "float8_e8m0fnu"}
_NARROW_XLA_TYPE = re.compile(r"\b(S2|S4|U2|U4|F4E2M1FN|F8E[0-9A-Z]+)\b")
# The same types as StableHLO element types (tensor<2x3xi4>, tensor<f8E4M3FN>).
_NARROW_MLIR_TYPE = re.compile(r"[<x](i2|ui2|i4|ui4|f4E2M1FN|f8E[0-9A-Z]+)>")
_NARROW_MLIR_NAMES = {"i2": "int2", "ui2": "uint2", "i4": "int4", "ui4": "uint4",
                      **{"f" + k[1:]: v for k, v in _NARROW_XLA_NAMES.items() if k.startswith("F")}}


def _narrow_dtypes_in(msg: str, text: str) -> list[str]:
    """The narrow ml_dtypes types an XLA error message names or, failing that, the module uses."""
    found = [_NARROW_XLA_NAMES.get(m, m) for m in _NARROW_XLA_TYPE.findall(msg)]
    if not found:
        found = [_NARROW_MLIR_NAMES.get(m, m) for m in _NARROW_MLIR_TYPE.findall(text)]
    return sorted(set(found))

def _module_text(module: Any) -> str:
    if isinstance(module, str):
        return module
    if type(module).__name__ == "Module" and hasattr(module, "operation"):  # jaxlib.mlir ir.Module
        return str(module)
    raise TypeError(f"runtime.compile expects StableHLO text (str) or a jaxlib.mlir ir.Module, "
                    f"got {type(module).__name__}.")


def apply_debug_options(debug: Any, device: Device) -> None:
    """Set the backend's XLA debug options on ``debug`` (a CompileOptions' ``debug_options``)."""
    for name, value in device.backend.debug_options.items():
        try:
            setattr(debug, name, value)
        except AttributeError:  # option renamed or removed in this jaxlib
            pass


class CompilerOptionError(CompileError, ValueError):
    """XLA rejected one of ``compiler_options``: a name it has no option of, or a value it cannot read for that
    option."""


# The options set as fields of ExecutableBuildOptions rather than as overrides of XLA's DebugOptions (as JAX's
# compiler.get_compile_options does; fdo_profile is bytes).
BUILD_OPTIONS = ("exec_time_optimization_effort", "memory_fitting_effort", "optimization_level",
                 "memory_fitting_level", "fdo_profile")


class CompilerEffortLevel(enum.Enum):
    """How hard XLA works at a goal (https://openxla.org/xla/effort_levels): the values of the
    ``optimization_level`` (run time) and ``memory_fitting_level`` (fitting in memory) compiler options, as
    JAX's ``jax.CompilerEffortLevel``. Higher levels spend more compile time for a better result. The options take
    a member, its name (``"O0"`` to ``"O3"``) or XLA's number for it."""

    UNKNOWN = 0
    O0 = 9
    O1 = 19
    O2 = 29
    O3 = 39


EFFORT_OPTIONS = ("optimization_level", "memory_fitting_level")


def _effort_level(name: str, value: Any) -> Any:
    """The number XLA reads for the effort level ``value`` (a CompilerEffortLevel, or its name) of option
    ``name``; other values as they are (an int is XLA's number already)."""
    if isinstance(value, CompilerEffortLevel):
        return value.value
    if isinstance(value, str):
        if value not in CompilerEffortLevel.__members__:
            names = ", ".join(repr(m) for m in CompilerEffortLevel.__members__)
            raise CompilerOptionError(f"compiler_options: {name!r} is an effort level, and {value!r} is not one; pass "
                                      f"kiln.CompilerEffortLevel.O0 ... O3 or its name ({names})")
        return CompilerEffortLevel[value].value
    return value


def apply_compiler_options(opts: Any, compiler_options: Sequence[tuple[str, Any]]) -> None:
    """Set ``compiler_options`` (``(name, value)`` pairs, JAX's ``compiler_options``) on the CompileOptions ``opts``:
    :data:`BUILD_OPTIONS` as fields, the others as XLA's option overrides, which XLA reads by name (and rejects
    when unknown) when it compiles. The overrides are part of ``opts.SerializeAsString()``, so of the persistent
    cache's key."""
    build = opts.executable_build_options
    overrides = []
    for name, value in compiler_options:
        if name not in BUILD_OPTIONS:
            overrides.append((name, value))
            continue
        if name in EFFORT_OPTIONS:
            value = _effort_level(name, value)
        try:
            setattr(build, name, value)
        except TypeError:
            want = type(getattr(build, name)).__name__
            raise CompilerOptionError(f"compiler_options: {name!r} takes {want} values, got a {type(value).__name__} "
                                      f"({value!r:.60}); pass a value of type {want}") from None
    if overrides:
        try:
            opts.env_option_overrides = overrides
        except TypeError:
            name, value = next((n, v) for n, v in overrides if not isinstance(v, (str, bool, int, float)))
            raise CompilerOptionError(f"compiler_options: {name!r} is a {type(value).__name__} ({value!r:.60}); "
                                      "XLA's options take a str, bool, int or float") from None


# XLA's messages for a compiler option it rejects (xla/pjrt/compile_options.cc).
_UNKNOWN_OPTION = re.compile(r"No such compile option: '([^']*)'")
_BAD_OPTION_VALUE = re.compile(r"While setting option (\S+), '(.*)' is not a valid (\w+) value")
# What to pass for each field type XLA names in the second message.
_OPTION_VALUE_HINTS = {"bool": "a bool (True or False)", "string": "a str (a list of names: one comma-separated str)",
                       "enum": "the name of one of the enum's values as a str", "float": "a float", "double": "a float"}


def compiler_option_error(msg: str) -> CompilerOptionError | None:
    """The kiln error for XLA's message ``msg`` when it rejects a compiler option, else None."""
    unknown = _UNKNOWN_OPTION.search(msg)
    if unknown:
        return CompilerOptionError(
            f"compiler_options: XLA has no option {unknown.group(1)!r}. The names are the fields of XLA's "
            f"DebugOptions (xla/xla.proto: 'xla_backend_optimization_level', 'xla_disable_hlo_passes', "
            f"'xla_cpu_enable_fast_math', ...) and {', '.join(map(repr, BUILD_OPTIONS))}; correct the name or "
            "remove it")
    bad = _BAD_OPTION_VALUE.search(msg)
    if bad:
        name, value, kind = bad.groups()
        hint = _OPTION_VALUE_HINTS.get(kind, "an int" if "int" in kind else f"a {kind} value")
        return CompilerOptionError(f"compiler_options: XLA's option {name!r} takes {kind} values, and {value!r} is "
                                   f"not one; pass {hint}")
    return None


def _compile_options(device: Device, compiler_options: Sequence[tuple[str, Any]] = ()) -> Any:
    opts = xc.CompileOptions()
    opts.device_assignment = xc.DeviceAssignment.create(np.array([[device._raw.id]]))
    apply_debug_options(opts.executable_build_options.debug_options, device)
    apply_compiler_options(opts, compiler_options)
    return opts


def compile(module: Any, device: Device, out_types: OutTypes, num_donated: int = 0,
            text: str | None = None, host_callbacks: Sequence[HostCallback] = (),
            ordered_effects: bool = False, compiler_options: Sequence[tuple[str, Any]] = ()) -> Executable:
    """Compile a StableHLO module (text or ``ir.Module``) for ``device``.

    Not cached here: an executable belongs to whoever compiled it (a jitted function's signature, an
    eager primitive's :class:`ExecutableCache`) and is freed with it.

    ``out_types`` lists each result's ``(shape, dtype)``; ``num_donated`` is the number of leading
    arguments the module donates (recorded for messages; the aliasing itself is in the module's
    ``tf.aliasing_output`` / ``jax.buffer_donor`` argument attributes). ``host_callbacks``: the callables
    the module's Python-callback custom calls name by index (the module must then be an ``ir.Module``);
    ``ordered_effects``: the module threads a token through ordered callbacks (its launches are ordered).
    ``compiler_options``: XLA options for this compilation, ``(name, value)`` pairs (see
    :func:`apply_compiler_options`); a name or value XLA rejects raises :class:`CompilerOptionError`.
    The persistent compile cache (:mod:`.compile_cache`) is asked first.
    """
    if not isinstance(device, Device):
        raise TypeError(f"runtime.compile expects a kiln runtime.Device, got {device!r}.")
    text = _module_text(module) if text is None else text  # the caller may have rendered it already
    out_avals = [aval_for(tuple(shape), np.dtype(dtype)) for shape, dtype in out_types]
    client = device.backend._client
    needs_lapack = device.platform == "cpu" and "lapack_" in text
    if needs_lapack:
        ensure_lapack_registered()  # custom calls to jaxlib's LAPACK kernels: register them first
    options = _compile_options(device, compiler_options)
    try:
        exe, entry = compile_cache.compile_and_load(client, module, xc.DeviceList((device._raw,)), options,
                                                    text=text, **callback_args(module, host_callbacks))
    except (JaxRuntimeError, ValueError, RuntimeError) as e:  # parse, verify and XLA errors
        option_error = compiler_option_error(jaxlib_message(e)) if compiler_options else None
        if option_error is not None:
            raise option_error from e
        msg = f"XLA failed to compile the module for {device!r}:\n{jaxlib_message(e)}"
        if needs_lapack and lapack_unavailable_reason():
            msg += f"\n(kiln could not register jaxlib's LAPACK kernels: {lapack_unavailable_reason()})"
        if "No FFI handler registered" in msg:
            msg += ("\n(register the handler with kiln.ffi.register_ffi_target(name, kiln.ffi.pycapsule(lib.Handler), "
                    "platform=...) before calling kiln.ffi.ffi_call; target names are case sensitive)")
        narrow = _narrow_dtypes_in(msg, text)
        if narrow:
            msg += (f"\n(the module computes on the narrow dtype{'s' if len(narrow) > 1 else ''} {', '.join(narrow)}, "
                    f"and XLA's {device.platform.upper()} backend does not support every operation on them: cast "
                    "the operands to a wider dtype first, e.g. x.astype('float32') or x.astype('int8'))")
        raise CompileError(msg) from e
    _check_outputs(exe, out_avals)
    # Only the text is kept, not the ir.Module: an executable should not keep MLIR objects alive.
    loaded = Executable(exe, device, out_avals, num_donated, text)
    loaded.cache_entry = entry
    return with_callbacks(loaded, host_callbacks, ordered_effects)


def callback_args(module: Any, host_callbacks: Sequence[HostCallback]) -> dict:
    """The keyword arguments of ``compile_and_load`` for ``host_callbacks`` (none when there are none)."""
    if not host_callbacks:
        return {}
    if isinstance(module, (str, bytes)):
        raise TypeError("runtime.compile: a module with host callbacks must be given as a jaxlib.mlir ir.Module "
                        "(jaxlib binds host_callbacks only then)")
    return {"host_callbacks": list(host_callbacks)}


def with_callbacks(exe: Executable, host_callbacks: Sequence[HostCallback], ordered: bool) -> Executable:
    exe.host_callbacks = tuple(host_callbacks)
    exe.ordered_effects = bool(ordered)
    return exe


def output_memory_kinds(exe: Any, device: Device, n: int) -> tuple[str | None, ...]:
    """Per output of the loaded executable ``exe``, the kind of memory of ``device`` XLA puts it in; None for the
    default memory."""
    default = device._sharding.memory_kind
    try:
        kinds = exe.get_output_memory_kinds()[0]
    except Exception:  # noqa: BLE001  (a backend that does not report them: its default memory)
        return (None,) * n
    if len(kinds) != n:
        return (None,) * n
    return tuple(None if k == default else str(k) for k in kinds)


def _check_outputs(exe: Any, out_avals: list[Aval]) -> None:
    try:
        n = len(exe.get_output_layouts())
    except Exception:  # not every plugin reports layouts
        return
    if n != len(out_avals):
        raise CompileError(f"The module returns {n} results but out_types lists {len(out_avals)}: "
                           f"{[f'{av.dtype}{list(av.shape)}' for av in out_avals]}.")


def module_hlo_computation(stablehlo_text: str) -> Any:
    """A StableHLO module as XLA's HLO before its optimisations: jaxlib's ``XlaComputation`` (JAX's
    ``Lowered.compiler_ir("hlo")``: ``.as_hlo_text()``, ``.as_serialized_hlo_module_proto()``, ...)."""
    try:
        return _jax.mlir.mlir_module_to_xla_computation(stablehlo_text, use_tuple_args=False, return_tuple=False)
    except JaxRuntimeError as e:
        raise CompileError(f"Converting the StableHLO module to HLO failed: {jaxlib_message(e)}") from e


def module_cost_analysis(stablehlo_text: str, device: Device) -> dict[str, float] | None:
    """XLA's cost estimates (flops, bytes accessed, ...) of a StableHLO module before its optimisations, for
    ``device``'s backend (JAX's ``Lowered.cost_analysis()``); None when the backend or this jaxlib has none."""
    try:
        module = module_hlo_computation(stablehlo_text).as_hlo_module()
        return dict(_jax.hlo_module_cost_analysis(device.backend._client, module))
    except Exception:  # a plugin without cost analysis, or a jaxlib without the entry point
        return None


def module_hlo_text(stablehlo_text: str, debug_info: bool = False) -> str:
    """The HLO text of a StableHLO module before XLA's optimisations (JAX's ``Lowered.as_text("hlo")``),
    printed as JAX prints it (short and parsable); ``debug_info`` keeps each instruction's metadata (its
    primitive and source line)."""
    computation = module_hlo_computation(stablehlo_text)
    options_type = getattr(getattr(xc, "hlo", None), "HloPrintOptions", None)
    if options_type is None:  # a jaxlib without the printer's options: its default text
        return str(computation.as_hlo_text())
    options = options_type.short_parsable()
    options.print_metadata = debug_info
    return str(computation.as_hlo_module().to_string(options))
