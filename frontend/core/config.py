"""kiln's global configuration: ``kiln.config.update(name, value)`` and ``kiln.config.<name>``.

Flags that change what tracing produces (``enable_x64``, ...) are part of every compile-cache
key through :func:`Config.trace_key`, so flipping one never reuses a stale executable.
"""
from __future__ import annotations

import contextlib
import difflib
import itertools
import os
import sys
import threading
import warnings
from typing import Any, Iterator

from kiln.runtime import compile_cache as _compile_cache
from kiln.runtime import ir_dump as _ir_dump

from .errors import KilnError
from .jax_flags import JAX_FLAG_NAMES
from .source_info import current_metadata as _current_metadata
from .version import __version__ as _kiln_version

_compile_cache.configure(kiln_version=_kiln_version)  # part of the compile cache's key


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


# The levels of the transfer guards (kiln.runtime.transfer_guard.LEVELS; None: the default, "allow").
_GUARD_LEVELS = (None, "allow", "log", "disallow", "log_explicit", "disallow_explicit")


class ConfigError(KilnError, ValueError):
    """An unknown configuration name or a value of the wrong type."""


class UnknownFlagError(ConfigError, AttributeError):
    """``config.update`` of a name that is no flag: an AttributeError too, as JAX's (``Unrecognized config
    option``), e.g. the removed ``jax_new_checkpoint``."""


class NoTracingError(KilnError, RuntimeError):
    """A function was about to be traced while ``no_tracing`` is set (``kiln.no_tracing``)."""


class NoExecutionError(KilnError, RuntimeError):
    """A program was about to run while ``no_execution`` is set (``kiln.no_execution``)."""


def no_tracing_error(what: str, avals: Any) -> NoTracingError:
    """The error of ``what`` (a function, with where it is defined) about to be traced for ``avals`` under
    ``no_tracing``."""
    signature = ", ".join(a.str_short() for a in avals)
    return NoTracingError(
        f"{what}: about to trace it for arguments ({signature}), which it has no compiled program for, but "
        "no_tracing is set (kiln.no_tracing, JAX's 'jax_no_tracing'). Call it once with arguments of these types "
        "before setting no_tracing (calls it has a program for still run), or unset it: "
        "kiln.config.update('jax_no_tracing', False)")


def no_execution_error(what: str) -> NoExecutionError:
    """The error of ``what`` about to run under ``no_execution``."""
    return NoExecutionError(
        f"kiln tried to execute {what}, but no_execution is set (kiln.no_execution, JAX's 'jax_no_execution'): "
        "no program runs, jitted or eager. Tracing (kiln.make_jaxpr), lowering and compiling "
        "(kiln.jit(f).lower(...).compile()) and transfers still work; to run it, unset it: "
        "kiln.config.update('jax_no_execution', False)")


class _DispatchEpoch:
    """``dispatch_epoch.current``: one object per combination of the flags that decide which program a call runs and
    how. A launch recorded under it stays valid while this is the same object (checked by identity on every
    direct launch), and is valid again when the flags come back to those values. It lives here, not on
    :class:`Config`, because Config's ``__getattr__`` hook makes every read of its attributes slower."""

    __slots__ = ("current",)


dispatch_epoch = _DispatchEpoch()
_holds_lock = threading.Lock()


def _unset_sponge(dump_ir_to: Any) -> bool:
    """Whether ``dump_ir_to`` is JAX's 'sponge' (Bazel's TEST_UNDECLARED_OUTPUTS_DIR) and that variable is not set."""
    return dump_ir_to == "sponge" and not os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")


class Config:
    """Holds kiln's flags. Read them as attributes, change them with :meth:`update`."""

    # name -> (default, type, affects tracing?)
    _FLAGS: dict[str, tuple[Any, type, bool]] = {
        "enable_x64": (_env_bool("KILN_ENABLE_X64", False), bool, True),
        # Default platform ("cpu", "cuda", "gpu", ...); None picks the best available one.
        "default_backend": (os.environ.get("KILN_DEFAULT_BACKEND") or None, str, False),
        # PRNG mode, used by kiln.random (part of the trace key: it changes the program).
        "threefry_partitionable": (_env_bool("KILN_THREEFRY_PARTITIONABLE", True), bool, True),
        # Run every jit-decorated function eagerly, op by op (debugging aid, as JAX's disable_jit).
        "disable_jit": (_env_bool("KILN_DISABLE_JIT", False), bool, False),
        # CPU linear algebra through jaxlib's LAPACK kernels (as JAX); False: kiln's portable algorithms.
        "cpu_lapack": (_env_bool("KILN_CPU_LAPACK", True), bool, True),
        # After a NaN (debug_infs: an Inf) in a floating-point result, raise FloatingPointError naming the
        # primitive and source line that produced it (jit: re-run op by op). See frontend/driver/nan_check.py.
        "debug_nans": (_env_bool("KILN_DEBUG_NANS", False), bool, False),
        "debug_infs": (_env_bool("KILN_DEBUG_INFS", False), bool, False),
        # Print why a jit cache missed (see kiln.explain_cache_misses).
        "explain_cache_misses": (_env_bool("KILN_EXPLAIN_CACHE_MISSES", False), bool, False),
        # Log every trace and compile (function, seconds) on the "kiln" logger at WARNING level (as JAX's).
        "log_compiles": (_env_bool("KILN_LOG_COMPILES", False), bool, False),
        # Warn (once per function) when a jitted function has been traced more than this many times, with
        # what changed between the calls; 0 turns the warning off.
        "retrace_warning_limit": (int(os.environ.get("KILN_RETRACE_WARNING_LIMIT", "10") or 10), int, False),
        # Warn when a global or closed-over value a jitted function baked in has changed since its trace.
        "stale_value_warnings": (_env_bool("KILN_STALE_VALUE_WARNINGS", True), bool, False),
        # After each trace, raise when a traced value is still referenced from outside (kiln.checking_leaks).
        "check_tracer_leaks": (_env_bool("KILN_CHECK_TRACER_LEAKS", False), bool, False),
        # Out-of-bounds gathers, scatters and dynamic slices raise at run time (a compiled check reported by a
        # host callback) instead of JAX's clamping/dropping. Part of the trace key: it changes programs.
        "index_checks": (_env_bool("KILN_INDEX_CHECKS", False), bool, True),
        # JAX's promotion modes: "standard" (the lattice) or "strict" (no implicit promotion between
        # different dtypes; only Python scalars adapt). See kiln.numpy_dtype_promotion.
        "numpy_dtype_promotion": ("standard", str, True),
        # CPU devices of the CPU backend (JAX's jax_num_cpu_devices), before the backends start; -1: from
        # KILN_NUM_CPU_DEVICES or XLA_FLAGS' --xla_force_host_platform_device_count (default 1).
        "num_cpu_devices": (-1, int, False),
        # Where uncommitted arrays and computations on them go (None: the default backend's first
        # device). A kiln Device or a backend name. See kiln.default_device.
        "default_device": (None, object, True),
        # PRNG implementation of new keys and of raw uint32 keys: threefry2x32 (JAX's default), rbg or unsafe_rbg
        # (part of the trace key: kiln.random reads it when tracing).
        "default_prng_impl": ("threefry2x32", str, True),
        # precision= of dot products and convolutions that pass None (kiln.lax.canonicalize_precision reads it at
        # trace time; a dot algorithm's name applies to dot products, as precision= itself).
        "default_matmul_precision": (os.environ.get("KILN_DEFAULT_MATMUL_PRECISION") or None, str, True),
        # What kiln.numpy's elementwise functions do when they broadcast arrays of different ranks (scalars
        # aside): "allow", "warn" or "raise", as JAX's (part of the trace key: a program traced under "allow"
        # must not serve a call under "raise").
        "numpy_rank_promotion": ("allow", str, True),
        # What kiln.random's functions do with a raw uint32 key (kiln.random.PRNGKey's): "allow", "warn" or
        # "error", as JAX's. Checked at every call, outside any compiled program.
        "legacy_prng_key": ("allow", str, False),
        # Raise KeyReuseError when a typed PRNG key is consumed twice (see kiln/frontend/core/consumption.py).
        "debug_key_reuse": (False, bool, True),
        # JAX flags kiln accepts and keeps but does not act on (see _NOT_ENFORCED): setting another
        # value than the default warns once.
        "enable_checks": (False, bool, False),
        "enable_custom_prng": (False, bool, False),
        "allow_f16_reductions": (True, bool, False),
        "softmax_custom_jvp": (False, bool, False),
        "auto_pcast": (True, bool, False),
        # Transfer guards (JAX's): what implicit transfers do; None: follow "transfer_guard" (all three).
        "transfer_guard": (None, str, False),
        "transfer_guard_host_to_device": (None, str, False),
        "transfer_guard_device_to_device": (None, str, False),
        "transfer_guard_device_to_host": (None, str, False),
        # The persistent compile cache (kiln.runtime.compile_cache; README "Compile cache"): on/off
        # (KILN_COMPILATION_CACHE), its directory (None: KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
        # ~/.cache/kiln), its bound in bytes (-1: none, 0: off), and the compile time below which
        # executables are not written (0: every executable is).
        "compilation_cache": (_compile_cache.settings()["enabled"], bool, False),
        "compilation_cache_dir": (None, str, False),
        "compilation_cache_max_size": (_compile_cache.settings()["max_size"], int, False),
        "persistent_cache_min_compile_time_secs": (0.0, float, False),
        # Where to write the StableHLO of every module compiled ("": nowhere) and kiln's IR of every jitted function
        # lowered, and a pprof profile of its equations per source line: which of these (dump_ir_modes: "stablehlo",
        # "jaxpr", "eqn_count_pprof"), and whether with source locations
        # (kiln.runtime.ir_dump; JAX's jax_dump_ir_to, jax_dump_ir_modes, jax_include_debug_info_in_dumps).
        "dump_ir_to": (os.environ.get("KILN_DUMP_IR_TO", ""), str, False),
        "dump_ir_modes": (os.environ.get("KILN_DUMP_IR_MODES", "stablehlo"), str, False),
        "include_debug_info_in_dumps": (_env_bool("KILN_INCLUDE_DEBUG_INFO_IN_DUMPS", True), bool, False),
        # Raise NoTracingError when a jitted function (or an eager operation) meets argument types it has no program
        # for, instead of tracing it; calls it has a program for run. Checked on cache misses only.
        "no_tracing": (False, bool, False),
        # Raise NoExecutionError instead of running any program (jitted calls, eager operations); tracing, lowering,
        # compiling and transfers still work. Not in the trace key, but in the dispatch epoch (see _set_epoch):
        # setting it sends every call to the Python paths, which check it.
        "no_execution": (False, bool, False),
        # What happens when Python's cyclic garbage collector, not reference counting, frees a kiln Array:
        # None or "allow" (nothing), "log" (an error on the "kiln" logger) or "fatal" (log, then abort the process).
        # See frontend/driver/gc_guard.py.
        "array_garbage_collection_guard": (None, str, False),
        # The calling convention version kiln.export records (JAX's jax_export_calling_convention_version): 9 or
        # 10, which differ in what TensorFlow's XlaCallModule is told (10: the partitioner), not in kiln's module.
        "export_calling_convention_version": (
            int(os.environ.get("KILN_EXPORT_CALLING_CONVENTION_VERSION", "10") or 10), int, False),
        # JAX's flags about what kiln does not have (mesh axes in array types; jax2tf): accepted, no effect, which
        # is what they do to a kiln program (README "Differences from JAX").
        "remove_size_one_mesh_axis_from_type": (False, bool, False),
        "jax2tf_associative_scan_reductions": (False, bool, False),
    }

    # Flags that are in the dispatch epoch without changing programs (see _set_epoch): setting one drops the C++
    # dispatch caches too, so that calls reach the Python paths, which check it.
    _OFF_THE_FAST_PATHS = frozenset({"no_execution"})

    # Flags with a fixed set of values.
    _CHOICES: dict[str, tuple] = {
        **{name: _GUARD_LEVELS for name in ("transfer_guard", "transfer_guard_host_to_device",
                                            "transfer_guard_device_to_device", "transfer_guard_device_to_host")},
        "numpy_dtype_promotion": ("standard", "strict"),
        "numpy_rank_promotion": ("allow", "warn", "raise"),
        "legacy_prng_key": ("allow", "warn", "error"),
        "array_garbage_collection_guard": (None, "allow", "log", "fatal"),
        "default_prng_impl": ("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32", "philox4x32"),
        "default_matmul_precision": (None, "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
                                     "fastest", "bfloat16_3x", "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM",
                                     "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16",
                                     "F16_F16_F32", "BF16_BF16_BF16", "BF16_BF16_F32", "BF16_BF16_F32_X3",
                                     "BF16_BF16_F32_X6", "BF16_BF16_F32_X9", "TF32_TF32_F32", "TF32_TF32_F32_X3",
                                     "F32_F32_F32", "F64_F64_F64"),
    }

    # Flags kept for JAX programs but not acted on: why, said once when one is set to a non-default value.
    _NOT_ENFORCED: dict[str, str] = {
        "allow_f16_reductions": "kiln always allows float16 reductions",
        "auto_pcast": "kiln's types carry no varying mesh axes, so operands never need a pcast to agree",
    }

    # JAX flag names (JAX_FLAG_NAMES) that are spelled differently in kiln; the others drop "jax_".
    JAX_TO_KILN: dict[str, str] = {"jax_platform_name": "default_backend", "jax_platforms": "default_backend",
                                   "jax_enable_compilation_cache": "compilation_cache"}

    # Flags the runtime's compile cache reads: pushed down to it on every change.
    _CACHE_SETTINGS: dict[str, str] = {"compilation_cache": "enabled", "compilation_cache_dir": "directory",
                                       "compilation_cache_max_size": "max_size",
                                       "persistent_cache_min_compile_time_secs": "min_compile_time"}
    # Flags the compile cache's logging reads (whether a miss / a hit is a warning): pushed down likewise.
    _CACHE_LOG_SETTINGS: dict[str, str] = {"explain_cache_misses": "explain_misses", "log_compiles": "log_hits"}
    # Flags the runtime's IR dumps read: pushed down likewise.
    _DUMP_SETTINGS: dict[str, str] = {"dump_ir_to": "directory", "dump_ir_modes": "modes",
                                      "include_debug_info_in_dumps": "debug_info"}
    _DUMP_MODES = ("stablehlo", "jaxpr", "eqn_count_pprof")

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_jax_only", {})  # JAX flags kiln does not implement: the values set
        object.__setattr__(self, "_warned", set())
        object.__setattr__(self, "_epochs", {})
        # The set_xla_metadata contexts open now, in every thread (see _hold_python_dispatch).
        object.__setattr__(self, "_metadata_holds", 0)
        object.__setattr__(self, "_user_contexts", [])  # kiln.make_user_context's, in the trace key
        object.__setattr__(self, "_hooks", {})  # flag -> callable(value) of a floor above, run on every change
        for name, (default, _, _) in self._FLAGS.items():
            self._set(name, default)
        if self.default_matmul_precision not in self._CHOICES["default_matmul_precision"]:  # (from the environment)
            raise ConfigError(f"KILN_DEFAULT_MATMUL_PRECISION={self.default_matmul_precision!r}: expected one of "
                              f"{', '.join(repr(c) for c in self._CHOICES['default_matmul_precision'][1:])}")
        if _unset_sponge(self.dump_ir_to):
            warnings.warn("kiln: KILN_DUMP_IR_TO is 'sponge' (Bazel's TEST_UNDECLARED_OUTPUTS_DIR), which is not "
                          "set: modules are not dumped", stacklevel=2)
            self._set("dump_ir_to", "")
        for name in (*self._DUMP_SETTINGS, *self._CACHE_LOG_SETTINGS):  # (their defaults come from the environment)
            self._push_to_runtime(name, self._values[name])

    def _set(self, name: str, value: Any) -> None:
        # Flags are plain instance attributes: reading one is on every dispatch, so it must be cheap.
        self._values[name] = value
        object.__setattr__(self, name, value)
        object.__setattr__(self, "_trace_key", self._compute_trace_key())
        # Read on every dispatch (one attribute each): checks on results, and whether jit must leave C++.
        special = bool(self._values.get("debug_nans") or self._values.get("debug_infs"))
        object.__setattr__(self, "_debug_special", special)
        # (debug_key_reuse: the Python path marks the keys a jitted function consumes)
        python_dispatch = special or bool(self._values.get("disable_jit") or self._values.get("debug_key_reuse"))
        object.__setattr__(self, "_python_dispatch", python_dispatch)
        self._set_epoch()

    def _set_epoch(self) -> None:
        held = self._metadata_holds > 0
        # jit's calls also leave jaxlib's C++ dispatch (and the direct launches, through the epoch) while XLA metadata
        # is in effect in some thread: the Python path's cache key holds it (trace_key), which the fast paths miss.
        object.__setattr__(self, "_jit_python_dispatch", self._python_dispatch or held)
        # (no_execution: direct launches recorded without it do not match, so calls reach the checks of the Python
        # paths; the C++ paths' caches are dropped when it changes)
        epoch = (self._trace_key, self._python_dispatch, held, bool(self._values.get("no_execution")))
        dispatch_epoch.current = self._epochs.setdefault(epoch, epoch)

    def _hold_python_dispatch(self, delta: int) -> None:
        """Count a ``set_xla_metadata`` context entered (+1) or left (-1), in any thread: while one is open, calls
        of jitted functions take the Python path (see :meth:`_set_epoch`)."""
        with _holds_lock:
            object.__setattr__(self, "_metadata_holds", self._metadata_holds + delta)
            self._set_epoch()

    def __getattr__(self, name: str) -> Any:  # only called for names that are not flags
        kiln_name = self._kiln_name(name)
        if kiln_name is not None:  # config.jax_enable_x64
            return self._values[kiln_name]
        if name in JAX_FLAG_NAMES:
            if name in self._jax_only:
                return self._jax_only[name]
            raise AttributeError(f"kiln.config: JAX's flag {name!r} is not implemented by kiln and was not set; "
                                 f"kiln's flags: {', '.join(sorted(self._FLAGS))}")
        raise AttributeError(f"kiln.config has no flag {name!r}; known flags: {', '.join(sorted(self._FLAGS))}"
                             + self._did_you_mean(name))

    def _kiln_name(self, name: str) -> str | None:
        """kiln's flag for ``name`` (kiln's spelling or JAX's ``jax_...``), or None."""
        if name in self._FLAGS:
            return name
        if name in self.JAX_TO_KILN:
            return self.JAX_TO_KILN[name]
        if name.startswith("jax_") and name[4:] in self._FLAGS:
            return name[4:]
        return None

    def _did_you_mean(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self._FLAGS) + sorted(JAX_FLAG_NAMES), n=3, cutoff=0.7)
        return f". Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, stacklevel=3)

    def __setattr__(self, name: str, value: Any) -> None:
        self.update(name, value)

    def update(self, name: str, value: Any) -> None:
        """Set flag ``name`` to ``value`` (``kiln.config.update("enable_x64", True)``).

        ``name`` is kiln's spelling or JAX's (``"jax_enable_x64"``). A JAX flag that kiln does not
        implement is accepted with a warning (once per flag) and has no effect; any other unknown
        name raises :class:`ConfigError`.
        """
        jax_name = name
        kiln_name = self._kiln_name(name)
        if kiln_name is None:
            if name in JAX_FLAG_NAMES:
                self._jax_only[name] = value
                self._warn_once(name, f"kiln.config.update({name!r}, ...): kiln does not implement JAX's flag "
                                      f"{name!r}; the setting is recorded but has no effect")
                return
            raise UnknownFlagError(f"kiln.config.update: unknown flag {name!r}; known flags: "
                                   f"{', '.join(sorted(self._FLAGS))}" + self._did_you_mean(name))
        name = kiln_name
        if jax_name == "jax_platforms" and isinstance(value, str):  # "cuda,cpu": the first is the default
            value = value.split(",")[0].strip() or None
        default, typ, _ = self._FLAGS[name]
        choices = self._CHOICES.get(name)
        if choices is not None and value not in choices:
            if name == "default_prng_impl":
                raise ConfigError(f"kiln.config.update({jax_name!r}, {value!r}): unknown PRNG implementation; "
                                  f"kiln implements {', '.join(map(repr, choices[:-1]))} and {choices[-1]!r}")
            raise ConfigError(f"kiln.config.update({jax_name!r}, {value!r}): expected one of "
                              f"{', '.join(repr(c) for c in choices)}")
        if name == "default_device":
            value = self._check_device(value)
        elif typ is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # jax_persistent_cache_min_compile_time_secs=0
        elif name in ("compilation_cache_dir", "dump_ir_to") and isinstance(value, os.PathLike):
            value = os.fspath(value)
        elif value is not None and not isinstance(value, typ):
            raise ConfigError(f"kiln.config.update({name!r}, {value!r}): expected a {typ.__name__}, "
                              f"got {type(value).__name__}")
        if value is None and default is not None and typ is bool:
            raise ConfigError(f"kiln.config.update({name!r}, None): expected a bool")
        if name == "dump_ir_modes":
            self._check_dump_modes(jax_name, value)
        if name == "dump_ir_to" and _unset_sponge(value):
            raise ConfigError(f"kiln.config.update({jax_name!r}, 'sponge'): 'sponge' means Bazel's "
                              "TEST_UNDECLARED_OUTPUTS_DIR, which is not set; set it, or give a directory")
        if name == "default_backend" and value is not None:
            from kiln import runtime
            if runtime.backends.started():  # (else checked when they start: the check would start them, which
                runtime.get_backend(value)  # jax_num_cpu_devices set next must precede; JAX checks it late too)
        if name == "num_cpu_devices":
            from kiln import runtime
            try:
                runtime.backends.set_num_cpu_devices(None if value is None or value < 0 else value)
            except runtime.BackendError as e:
                raise ConfigError(f"kiln.config.update({jax_name!r}, {value!r}): {e}") from None
        self._push_to_runtime(name, value)
        if name in self._NOT_ENFORCED and value != default:
            self._warn_once(name, f"kiln.config: {jax_name}={value!r} is accepted but has no effect: "
                                  f"{self._NOT_ENFORCED[name]}")
        self._set_and_apply(name, value)

    def _set_and_apply(self, name: str, value: Any) -> None:
        """Set flag ``name`` and do what setting it does: the transfer guard, the C++ dispatch caches dropped when
        programs change with it (they are keyed without kiln's flags) or when it sends calls off the fast paths,
        and the hook a floor above registered (:meth:`on_change`)."""
        changed = self._values.get(name) != value
        self._set(name, value)
        if name.startswith("transfer_guard"):
            self._apply_transfer_guard(name, value)
        if changed and (self._FLAGS[name][2] or name in self._OFF_THE_FAST_PATHS):
            from kiln import runtime
            runtime.fastpath.set_x64(self.enable_x64)
        if name in self._hooks:
            self._hooks[name](value)

    def parse_flags_with_absl(self) -> None:
        """Apply the ``--jax_...`` flags of the command line (``sys.argv`` up to a ``--``), as JAX's method of
        this name: ``--jax_enable_x64``, ``--nojax_enable_x64``, ``--jax_enable_x64=false``,
        ``--jax_platform_name=cpu``. kiln reads them itself; it does not import absl."""
        for arg in itertools.takewhile(lambda a: a != "--", sys.argv[1:]):
            parsed = _command_line_flag(arg)
            if parsed is not None:
                name, text = parsed
                kiln_name = self._kiln_name(name)
                typ = self._FLAGS[kiln_name][1] if kiln_name is not None else str
                try:
                    self.update(name, _flag_value(typ, text))
                except (ConfigError, ValueError) as e:
                    raise ConfigError(f"kiln.config.parse_flags_with_absl: command-line flag {arg!r}: {e}") from None

    def config_with_absl(self) -> None:
        """JAX registers its flags with absl here, for ``absl.app.run`` to parse; kiln applies the ``--jax_...``
        flags of the command line at once instead (:meth:`parse_flags_with_absl`)."""
        self.parse_flags_with_absl()

    @staticmethod
    def _apply_transfer_guard(name: str, value: str | None) -> None:
        """Set jaxlib's global transfer guard levels (the context managers set the thread's)."""
        from kiln.runtime import transfer_guard
        directions = transfer_guard.DIRECTIONS if name == "transfer_guard" else (name[len("transfer_guard_"):],)
        for direction in directions:
            transfer_guard.set_level(direction, value, thread_local=False)

    @staticmethod
    def _check_device(value: Any) -> Any:
        from kiln import runtime
        if value is None or isinstance(value, runtime.Device):
            return value
        if isinstance(value, str):
            if runtime.backends.started():  # an unknown backend fails here, listing the available ones (later:
                runtime.get_backend(value)  # when the backends start, as for default_backend)
            return value
        raise ConfigError(f"kiln.config default_device: expected a kiln device (from kiln.devices()), a backend "
                          f"name or None, got {type(value).__name__} {value!r:.60}")

    def _compute_trace_key(self) -> tuple:
        key = tuple(self._values.get(k) for k, (_, _, traced) in self._FLAGS.items() if traced)
        if self._user_contexts:  # (typed: 1 and True are different values of a context)
            key += (tuple((type(c._value), c._value) for c in self._user_contexts),)
        return key

    def trace_key(self) -> tuple:
        """The values of every flag that changes traced programs (part of jit's cache key), and the XLA metadata in
        effect (``kiln.experimental.xla_metadata``), when there is some: it is written into the program."""
        metadata = _current_metadata()
        return self._trace_key if metadata is None else (*self._trace_key, metadata)

    @contextlib.contextmanager
    def override(self, name: str, value: Any) -> Iterator[None]:
        """Temporarily set a flag: ``with kiln.config.override("enable_x64", True): ...``."""
        kiln_name = self._kiln_name(name)
        if kiln_name is None and name in JAX_FLAG_NAMES:
            had, old = name in self._jax_only, self._jax_only.get(name)
            self.update(name, value)
            try:
                yield
            finally:
                if had:
                    self._jax_only[name] = old
                else:
                    self._jax_only.pop(name, None)
            return
        old = getattr(self, kiln_name or name)
        self.update(name, value)
        try:
            yield
        finally:
            self._restore(kiln_name or name, old)

    def _push_to_runtime(self, name: str, value: Any) -> None:
        """Hand a flag the runtime acts on (LAPACK kernels, the compile cache, IR dumps) down to it."""
        if name == "cpu_lapack":
            from kiln.runtime import lapack
            lapack.set_enabled(value)
        elif name in self._CACHE_SETTINGS:
            _compile_cache.configure(**{self._CACHE_SETTINGS[name]: value})
        elif name in self._DUMP_SETTINGS:
            _ir_dump.configure(**{self._DUMP_SETTINGS[name]: value or ""})
        elif name in self._CACHE_LOG_SETTINGS:
            _compile_cache.configure(**{self._CACHE_LOG_SETTINGS[name]: value})

    def _check_dump_modes(self, jax_name: str, value: Any) -> None:
        modes = [m.strip() for m in (value or "").split(",") if m.strip()]
        unknown = [m for m in modes if m not in self._DUMP_MODES]
        if unknown:
            missing = " (JAX's 'jaxpr_html' is not implemented in kiln)" if "jaxpr_html" in unknown else ""
            raise ConfigError(f"kiln.config.update({jax_name!r}, {value!r}): unknown dump mode "
                              f"{', '.join(repr(m) for m in unknown)}{missing}; give a comma-separated list of "
                              f"{', '.join(repr(m) for m in self._DUMP_MODES)}")

    def _restore(self, name: str, value: Any) -> None:
        """Set a flag back to a value it had (no validation, no warning)."""
        self._push_to_runtime(name, value)
        self._set_and_apply(name, value)

    def on_change(self, name: str, hook: Any) -> None:
        """Have ``hook(value)`` called whenever flag ``name`` is set (a floor above registers what it does; see
        DESIGN "The floors of frontend/")."""
        self._hooks[name] = hook

    def _set_user_value(self, context: "UserContext", value: Any, new: bool = False) -> None:
        """Give a :func:`make_user_context` context ``value``: part of the trace key, so jitted functions trace
        again for a value they have not seen (and find their programs again when it comes back)."""
        try:
            hash(value)
        except TypeError:
            raise ConfigError(f"kiln.make_user_context: the value must be hashable (it is part of jit's cache key), "
                              f"got {type(value).__name__} {value!r:.60}") from None
        old = context._value
        context._value = value
        if type(old) is type(value) and old == value and not new:
            return
        object.__setattr__(self, "_trace_key", self._compute_trace_key())
        self._set_epoch()
        from kiln import runtime
        runtime.fastpath.clear_all()  # (the C++ paths' keys do not hold the value)

    def __repr__(self) -> str:
        return "kiln.config(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"


config = Config()


# JAX's environment variables that have a kiln counterpart. kiln reads only its own: without a word, a JAX user's
# ``JAX_ENABLE_X64=1 python train.py`` would compute in float32.
_JAX_ENVIRONMENT = {
    "JAX_ENABLE_X64": "KILN_ENABLE_X64", "JAX_PLATFORMS": "KILN_PLATFORMS", "JAX_PLATFORM_NAME": "KILN_PLATFORMS",
    "JAX_DISABLE_JIT": "KILN_DISABLE_JIT", "JAX_DEBUG_NANS": "KILN_DEBUG_NANS", "JAX_DEBUG_INFS": "KILN_DEBUG_INFS",
    "JAX_LOG_COMPILES": "KILN_LOG_COMPILES", "JAX_EXPLAIN_CACHE_MISSES": "KILN_EXPLAIN_CACHE_MISSES",
    "JAX_CHECK_TRACER_LEAKS": "KILN_CHECK_TRACER_LEAKS", "JAX_COMPILATION_CACHE_DIR": "KILN_CACHE_DIR",
    "JAX_NUM_CPU_DEVICES": "KILN_NUM_CPU_DEVICES", "JAX_DUMP_IR_TO": "KILN_DUMP_IR_TO",
    "JAX_DUMP_IR_MODES": "KILN_DUMP_IR_MODES", "JAX_INCLUDE_DEBUG_INFO_IN_DUMPS": "KILN_INCLUDE_DEBUG_INFO_IN_DUMPS",
    "JAX_DEFAULT_MATMUL_PRECISION": "KILN_DEFAULT_MATMUL_PRECISION",
}


def jax_environment_message(environ: Any) -> str | None:
    """What to tell a user whose environment sets JAX's variables that kiln does not read (and not kiln's own
    counterparts), or None."""
    ignored = [(jax_name, kiln_name) for jax_name, kiln_name in _JAX_ENVIRONMENT.items()
               if jax_name in environ and kiln_name not in environ]
    if not ignored:
        return None
    items = "; ".join(f"{j}={environ[j]!r} (kiln's variable: {k})" for j, k in ignored)
    return (f"kiln reads its own environment variables, not JAX's, so these have no effect on kiln: {items}. Set "
            "kiln's variables too (or call kiln.config.update with the flag's name, e.g. 'jax_enable_x64').")


_message = jax_environment_message(os.environ)
if _message:
    warnings.warn(_message, stacklevel=2)
del _message


def _command_line_flag(arg: str) -> tuple[str, str] | None:
    """``("jax_enable_x64", "true")`` for ``--jax_enable_x64`` (``"false"`` for ``--nojax_enable_x64``), the
    name and text of ``--jax_name=text``; None for any other argument."""
    if not arg.startswith(("--jax", "--nojax")):
        return None
    body = arg[2:]
    if "=" in body:
        name, text = body.split("=", 1)
        return name, text
    if body.startswith("nojax"):
        return body[2:], "false"
    return body, "true"


def _flag_value(typ: type, text: str) -> Any:
    """A command-line flag's text as the flag's type (bools: true/false/1/0, any case)."""
    if typ is bool:
        lowered = text.lower()
        if lowered not in ("true", "false", "1", "0"):
            raise ValueError(f"expected true or false, got {text!r}")
        return lowered in ("true", "1")
    return typ(text) if typ in (int, float) else text


class FlagContext:
    """A flag as JAX exposes it at top level (``jax.enable_x64``): calling it gives a context manager
    that sets the flag inside the ``with`` block; ``.value`` is the current value."""

    def __init__(self, name: str, doc: str, bool_default: bool = False):
        self._name, self._bool_default = name, bool_default
        self.__name__ = self.__qualname__ = name
        self.__doc__ = doc

    def __call__(self, new_val: Any = ...) -> contextlib.AbstractContextManager:
        if new_val is ...:
            if not self._bool_default:
                raise TypeError(f"kiln.{self._name}() needs a value: with kiln.{self._name}(value): ...")
            new_val = True
        return config.override(self._name, new_val)

    @property
    def value(self) -> Any:
        return getattr(config, self._name)

    def __repr__(self) -> str:
        return f"<kiln flag {self._name}={self.value!r}>"


def _ctx(name: str, what: str, bool_flag: bool = False) -> FlagContext:
    call = f"kiln.{name}({'True' if bool_flag else 'value'})"
    return FlagContext(name, f"``with {call}:`` sets the ``{name}`` flag in the block ({what}). "
                             f"``kiln.{name}.value`` is the current value.", bool_flag)


enable_x64 = _ctx("enable_x64", "64-bit types", True)
numpy_dtype_promotion = _ctx("numpy_dtype_promotion", "'standard' or 'strict' type promotion")
numpy_rank_promotion = _ctx("numpy_rank_promotion", "'allow', 'warn' or 'raise' when kiln.numpy's elementwise "
                                                    "functions broadcast arrays of different ranks")
default_matmul_precision = _ctx("default_matmul_precision", "the precision of dot products and convolutions "
                                                            "called with precision=None: 'bfloat16', "
                                                            "'tensorfloat32', 'float32', ...")
default_prng_impl = _ctx("default_prng_impl", "'threefry2x32', 'threefry4x32', 'rbg', 'unsafe_rbg', 'philox2x32' or "
                                              "'philox4x32': the PRNG implementation of new keys and raw keys")
enable_checks = _ctx("enable_checks", "no effect in kiln", True)
enable_custom_prng = _ctx("enable_custom_prng", "no effect in kiln", True)
legacy_prng_key = _ctx("legacy_prng_key", "'allow', 'warn' or 'error' when a raw uint32 key is passed to a "
                                          "kiln.random function")
debug_key_reuse = _ctx("debug_key_reuse", "raise KeyReuseError when a typed PRNG key is consumed twice", True)
allow_f16_reductions = _ctx("allow_f16_reductions", "kiln always allows them", True)
softmax_custom_jvp = _ctx("softmax_custom_jvp", "no effect on kiln's numbers", True)
auto_pcast = _ctx("auto_pcast", "accepted; kiln's types carry no varying mesh axes", True)
check_tracer_leaks = _ctx("check_tracer_leaks", "raise when a traced value outlives its trace", True)


def checking_leaks() -> contextlib.AbstractContextManager:
    """``with kiln.checking_leaks():`` raises when a traced value is still referenced after its trace
    ended (stored in a global, an attribute, a closure), naming who holds it."""
    return config.override("check_tracer_leaks", True)


log_compiles = _ctx("log_compiles", "log every trace and compile on the 'kiln' logger", True)


debug_nans = _ctx("debug_nans", "raise FloatingPointError at the first primitive producing a NaN", True)
debug_infs = _ctx("debug_infs", "raise FloatingPointError at the first primitive producing an Inf", True)
threefry_partitionable = _ctx("threefry_partitionable", "the PRNG's bits: True (the default, as current JAX) "
                                                        "or JAX's older non-partitionable threefry bits", True)
default_device = _ctx("default_device", "where uncommitted arrays and computations go: a device, a backend "
                                        "name, or None")
no_tracing = _ctx("no_tracing", "raise instead of tracing a jitted function (or an eager operation) for argument "
                                "types it has no program for; calls it has a program for run", True)
no_execution = _ctx("no_execution", "raise instead of running any program: jitted calls and eager operations; "
                                    "tracing, lowering, compiling and transfers still work", True)
array_garbage_collection_guard = _ctx("array_garbage_collection_guard",
                                      "'allow', 'log' or 'fatal' when Python's cyclic garbage collector, not reference "
                                      "counting, frees a kiln.Array")
remove_size_one_mesh_axis_from_type = _ctx("remove_size_one_mesh_axis_from_type",
                                           "accepted; kiln's array types carry no mesh axes", True)
jax2tf_associative_scan_reductions = _ctx("jax2tf_associative_scan_reductions",
                                          "accepted; it chooses jax2tf's lowering, and kiln has no jax2tf", True)


class UserContext:
    """A jit-cache-sensitive value made by :func:`make_user_context`: ``with ctx(value):`` sets it in the block,
    ``ctx.value`` reads it, ``ctx.set_global(value)`` / ``ctx.get_global()`` set and read it outside any block.
    Jitted functions trace again (and compile again, unless the program is the same) for a value they have not
    been traced with; the value must be hashable."""

    def __init__(self, default_value: Any = None) -> None:
        self._value = None
        config._user_contexts.append(self)
        try:
            config._set_user_value(self, default_value, new=True)
        except ConfigError:
            config._user_contexts.remove(self)
            raise

    @property
    def value(self) -> Any:
        return self._value

    def get_global(self) -> Any:
        return self._value

    def set_global(self, new_value: Any) -> None:
        config._set_user_value(self, new_value)

    @contextlib.contextmanager
    def _override(self, new_value: Any) -> Iterator[None]:
        old = self._value
        config._set_user_value(self, new_value)
        try:
            yield
        finally:
            config._set_user_value(self, old)

    def __call__(self, new_value: Any) -> contextlib.AbstractContextManager:
        return self._override(new_value)

    def __repr__(self) -> str:
        return f"<kiln user context value={self._value!r}>"


def make_user_context(default_value: Any = None) -> UserContext:
    """A ``kiln.jit`` cache-sensitive context (``jax.make_user_context``).

    When its value changes, jitted functions miss their caches and are traced, lowered and compiled again for
    the new value (a program already compiled for the same StableHLO is reused); when it comes back to a value
    they were traced with, they reuse that trace.

    Parameters
    ----------
    default_value : hashable, optional
        The value outside any ``with`` block (default None).

    Returns
    -------
    UserContext
        ``with ctx(value): ...`` sets the value in the block; ``ctx.value`` is the current value.

    Notes
    -----
    As kiln's other flag contexts, a ``with`` block sets the value for the whole process, not only for the
    calling thread (JAX: the thread).

    Examples
    --------
    >>> my_context = kiln.make_user_context(default_value=None)
    >>> with my_context(1):
    ...     f(1.0)
    >>> with my_context(2):
    ...     f(1.0)  # traced again
    """
    return UserContext(default_value)
