"""Backends (one PJRT client per platform), kiln's Device, and the default-backend choice.

Initialisation is lazy: the first call that needs the list of backends creates the CPU client and
loads the discovered plugins. A plugin that fails gives a warning and is left out, unless it was
requested explicitly through ``KILN_PLATFORMS`` (then it is an error, as with ``JAX_PLATFORMS``).
"""
from __future__ import annotations

import os
import re
import threading
import warnings
from typing import Any

from . import distributed, plugins
from ._jaxlib import xc
from .avals import DeviceSharding
from .errors import BackendError, DeviceError, jaxlib_message

GPU_ALIASES = ("cuda", "rocm")  # 'gpu' means the first of these that initialised
_BUILTIN_NAMES = ("cpu", "cuda", "rocm", "tpu", "gpu")


class Device:
    """kiln's handle on one device of a backend. One object per jaxlib device (interned).

    Attributes: ``platform`` (canonical backend name), ``id``, ``device_kind``, ``process_index``,
    ``backend`` (the :class:`Backend`) and ``_raw`` (the jaxlib device).
    """

    __slots__ = ("platform", "id", "device_kind", "process_index", "backend", "_raw", "_sharding",
                 "_in_memory", "_kinds", "_hash", "__weakref__")

    def __init__(self, raw: Any, backend: Backend) -> None:
        self.platform: str = backend.platform
        self.id: int = int(raw.id)
        self.device_kind: str = str(raw.device_kind)
        self.process_index: int = int(raw.process_index)
        self.backend = backend
        self._raw = raw
        self._sharding = DeviceSharding(raw, self)  # used for every transfer to / result on this device
        self._in_memory = {None: self._sharding, self._sharding.memory_kind: self._sharding}  # (see sharding_in)
        self._kinds: tuple[str, ...] | None = None
        self._hash = hash((self.platform, self.id))

    def __repr__(self) -> str:
        return f"{self.platform.capitalize()}Device(id={self.id})"

    # -- memories (jax.Device.addressable_memories, ...) ----------------------------------------------------------

    @property
    def memory_kinds(self) -> tuple[str, ...]:
        """The kinds of memory this device addresses, its default first (``('device', 'pinned_host',
        'unpinned_host')`` on the CPU and on GPUs)."""
        if self._kinds is None:
            default = self._sharding.memory_kind
            self._kinds = (default, *[m.kind for m in self._raw.addressable_memories() if m.kind != default])
        return self._kinds

    def addressable_memories(self) -> list[Memory]:
        """The memories this device reads and writes (its own, pinned and unpinned host memory, ...)."""
        return [Memory(m) for m in self._raw.addressable_memories()]

    def default_memory(self) -> Memory:
        """The memory arrays on this device are in unless placed elsewhere."""
        return Memory(self._raw.default_memory())

    def memory(self, kind: str) -> Memory:
        """This device's memory of ``kind`` (``'device'``, ``'pinned_host'``, ...)."""
        self.sharding_in(kind)  # (an unknown kind: the error naming the ones there are)
        return next(Memory(m) for m in self._raw.addressable_memories() if m.kind == kind)

    def sharding_in(self, memory_kind: str | None) -> DeviceSharding:
        """The (interned) sharding of an array on this device in memory ``memory_kind`` (None: the default);
        an unknown kind is a ValueError naming the ones there are."""
        sharding = self._in_memory.get(memory_kind)
        if sharding is None:
            if memory_kind not in self.memory_kinds:
                raise ValueError(f"{self!r} has no memory of kind {memory_kind!r}; its memory kinds are "
                                 f"{', '.join(self.memory_kinds)}")
            sharding = self._in_memory.setdefault(memory_kind, DeviceSharding(self._raw, self, memory_kind))
        return sharding

    def memory_stats(self) -> dict[str, int] | None:
        """The device allocator's statistics (``bytes_in_use``, ``peak_bytes_in_use``, ``bytes_limit``, ...), as
        JAX's; None where the backend keeps none (the CPU)."""
        return self._raw.memory_stats()

    @property
    def local_hardware_id(self) -> int | None:
        """The device's number on its machine (a GPU's CUDA ordinal), as JAX's."""
        return self._raw.local_hardware_id

    @property
    def host_id(self) -> int:
        """``process_index`` (JAX's older name)."""
        return self.process_index

    def __str__(self) -> str:  # as JAX's: cpu:0, cuda:1
        return f"{self.platform}:{self.id}"

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Device):
            return NotImplemented
        return self.platform == other.platform and self.id == other.id

    def __reduce__(self) -> Any:  # pickles as a lookup, so unpickling gives the interned object
        return (_device_by_id, (self.platform, self.id))


class Memory:
    """One memory space of a backend's devices (jaxlib's ``Memory``, as ``jax.Device.memory(kind)`` returns it):
    ``kind`` (``'device'``, ``'pinned_host'``, ``'unpinned_host'``), ``platform``, ``process_index``."""

    __slots__ = ("_raw",)

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    kind = property(lambda self: self._raw.kind)
    platform = property(lambda self: self._raw.platform)
    process_index = property(lambda self: self._raw.process_index)

    def addressable_by_devices(self) -> list[Device]:
        """The devices that read and write this memory."""
        return [device_of_raw(d) for d in self._raw.addressable_by_devices()]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Memory) and other._raw == self._raw

    def __hash__(self) -> int:
        return hash(self._raw)

    def __repr__(self) -> str:
        return repr(self._raw)  # PINNED_HOST_1, as JAX's

    def __str__(self) -> str:
        return str(self._raw)  # PinnedHostMemory(id=1, process_index=0, client=cpu)


class Backend:
    """One initialised PJRT client. ``platform`` is the canonical name ('cpu', 'cuda', ...)."""

    def __init__(self, platform: str, client: Any, priority: int, spec: plugins.PluginSpec | None = None):
        self.platform = platform
        self.priority = priority
        self._client = client
        self._spec = spec
        self._devices = [Device(d, self) for d in client.local_devices()]
        local = {d._raw: d for d in self._devices}
        # Every process's devices (the same as the local ones unless kiln.distributed was initialised).
        self._global = [local.get(d) or Device(d, self) for d in client.devices()]
        self._by_id = {d.id: d for d in self._global}
        self._by_raw = {d._raw: d for d in self._global}
        # Extra XLA debug options applied at compile (the CUDA data dir, as jax sets it).
        self.debug_options: dict[str, Any] = {}
        if platform == "cuda":
            data_dir = plugins.cuda_data_dir(spec.cuda_major if spec else None)
            if data_dir:
                self.debug_options["xla_gpu_cuda_data_dir"] = data_dir

    def devices(self) -> list[Device]:
        """This process's devices of the backend, in the client's order."""
        return list(self._devices)

    def global_devices(self) -> list[Device]:
        """The devices of every process (this process's only, unless kiln.distributed was initialised)."""
        return list(self._global)

    @property
    def platform_version(self) -> str:
        return str(self._client.platform_version)

    @property
    def process_index(self) -> int:
        """This process's index among the processes sharing the backend (0 when there is one)."""
        return int(self._client.process_index())

    @property
    def process_indices(self) -> list[int]:
        """The indices of every process with devices of this backend."""
        return sorted({int(d.process_index) for d in self._client.devices()})

    def __repr__(self) -> str:
        return f"Backend({self.platform!r}, devices={len(self._devices)})"


class _State:
    """Everything initialisation decided; replaced as a whole, never mutated after creation."""

    def __init__(self, backends: list[Backend], failures: dict[str, str], aliases: dict[str, str]):
        self.backends = {b.platform: b for b in backends}  # in priority order, best first
        self.failures = failures  # name -> why it is unavailable
        self.aliases = aliases  # plugin registration name -> canonical platform


_state: _State | None = None
_init_error: BackendError | None = None
_default_override: str | None = None
_lock = threading.RLock()


_configured_cpu_devices: int | None = None  # kiln.config's num_cpu_devices (JAX's jax_num_cpu_devices)


_NATIVE_BF16 = frozenset({"avx512_bf16", "amx_bf16", "bf16"})  # x86's flags; Arm's Features entry
_native_bf16: list[bool] = []


def cpu_has_native_bf16() -> bool:
    """Whether this host's CPU multiplies bfloat16 natively (x86's AVX512-BF16 or AMX-BF16, Arm's BF16), as
    /proc/cpuinfo lists it (False where there is none). XLA's CPU backend runs a bf16 dot with an f32 result on its
    native bf16 kernel: about twice as fast as the f32 dot it converts a bf16-result dot to on such a CPU, and
    1.4 times slower on one without (measured on an AMD EPYC without AVX-512: 23 ms against 16 ms for 1024²)."""
    if not _native_bf16:
        from .compile_cache import _host_cpu  # (the same reading of /proc/cpuinfo the cache keys on)
        words = {w for line in _host_cpu().splitlines() if line.startswith(("flags", "Features"))
                 for w in line.split()}
        _native_bf16.append(bool(words & _NATIVE_BF16))
    return _native_bf16[0]


def set_num_cpu_devices(n: int | None) -> None:
    """The number of CPU devices the CPU backend will have (None: from the environment). Only before the
    backends start, as JAX's ``jax_num_cpu_devices``."""
    global _configured_cpu_devices
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
        raise BackendError(f"num_cpu_devices={n!r} is not a positive integer; set it to the number of CPU devices "
                           "wanted")
    # (the count the backend has, set or back to the default, is no change)
    if started() and (n if n is not None else _env_cpu_devices()) != _num_cpu_devices():
        raise BackendError("num_cpu_devices can be set only before the backends start (before the first array, "
                           "computation or kiln.devices() call); set it at the top of the program, or set the "
                           "KILN_NUM_CPU_DEVICES environment variable")
    _configured_cpu_devices = n


_FORCE_COUNT = re.compile(r"--xla_force_host_platform_device_count=(\S+)")


def _num_cpu_devices() -> int:
    """kiln.config's num_cpu_devices, else the environment's count."""
    return _configured_cpu_devices if _configured_cpu_devices is not None else _env_cpu_devices()


def _env_cpu_devices() -> int:
    """KILN_NUM_CPU_DEVICES, else XLA_FLAGS' ``--xla_force_host_platform_device_count`` (which JAX honours too),
    else 1."""
    name, value = "KILN_NUM_CPU_DEVICES", os.environ.get("KILN_NUM_CPU_DEVICES")
    if value is None:
        forced = _FORCE_COUNT.findall(os.environ.get("XLA_FLAGS", ""))
        name, value = "--xla_force_host_platform_device_count (XLA_FLAGS)", forced[-1] if forced else "1"
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise BackendError(f"{name}={value!r} is not a positive integer; set it to the number "
                           "of CPU devices wanted (default 1).")
    return n


def _make_cpu() -> Backend:
    client = xc.make_cpu_client(asynchronous=True, num_devices=_num_cpu_devices(), **distributed.cpu_client_kwargs())
    return Backend("cpu", client, plugins.CPU_PRIORITY)


def _make_plugin(spec: plugins.PluginSpec) -> Backend:
    client = plugins.make_client(spec)
    raw = getattr(client, "_raw_platform", None) or client.platform  # CUDA clients say 'gpu'
    platform = raw if raw in ("cuda", "rocm", "tpu") else spec.name
    return Backend(platform, client, spec.priority, spec)


def _describe(spec: plugins.PluginSpec) -> str:
    return f"PJRT plugin {spec.name!r} ({spec.source}, {spec.path})"


def _initialize() -> _State:
    specs = plugins.discover()
    by_name = {s.name: s for s in specs}
    requested = os.environ.get("KILN_PLATFORMS", "").strip()
    backends: list[Backend] = []
    failures: dict[str, str] = {}
    aliases: dict[str, str] = {}

    def try_plugin(spec: plugins.PluginSpec, explicit: bool) -> bool:
        skip = plugins.hardware_missing(spec)
        if skip is not None:
            failures[spec.name] = skip
            if explicit:
                raise BackendError(f"KILN_PLATFORMS requests {spec.name!r}, but {skip}.")
            return False
        try:
            backend = _make_plugin(spec)
        except Exception as e:  # a broken plugin must never take kiln down
            failures[spec.name] = f"failed to load {spec.path}: {jaxlib_message(e)}"
            if explicit:
                raise BackendError(f"KILN_PLATFORMS requests {spec.name!r}, but {_describe(spec)} failed "
                                   f"to initialise: {jaxlib_message(e)}") from e
            warnings.warn(f"kiln: {_describe(spec)} failed to initialise and is skipped: "
                          f"{jaxlib_message(e)}", RuntimeWarning, stacklevel=4)
            return False
        if backend.platform in {b.platform for b in backends}:
            return False  # e.g. both xla_cuda12 and xla_cuda13 installed: the first one wins
        backends.append(backend)
        aliases[spec.name] = backend.platform
        return True

    if requested:
        for name in (n.strip().lower() for n in requested.split(",")):
            if not name:
                continue
            if name == "cpu":
                backends.append(_make_cpu())
            elif name == "gpu":
                gpu_specs = [by_name[n] for n in GPU_ALIASES if n in by_name]
                if not gpu_specs:
                    raise BackendError("KILN_PLATFORMS requests 'gpu', but no CUDA or ROCm PJRT plugin is "
                                       "installed (pip install 'kiln[cuda13]').")
                if not any(try_plugin(s, explicit=False) for s in gpu_specs):
                    why = "; ".join(f"{s.name}: {failures.get(s.name)}" for s in gpu_specs)
                    raise BackendError(f"KILN_PLATFORMS requests 'gpu', but no GPU backend initialised "
                                       f"({why}).")
            elif name in by_name:
                try_plugin(by_name[name], explicit=True)
            else:
                raise BackendError(f"KILN_PLATFORMS requests {name!r}, but no PJRT plugin for it was found "
                                   f"(found: {', '.join(['cpu'] + sorted(by_name)) }). Install the plugin or "
                                   "name its library with KILN_PJRT_PLUGINS='name:/path/plugin.so'.")
    else:
        backends.append(_make_cpu())
        for spec in specs:
            try_plugin(spec, explicit=False)
        backends.sort(key=lambda b: -b.priority)  # stable: discovery order among equals
    return _State(backends, failures, aliases)


def _get_state() -> _State:
    global _state, _init_error
    state = _state
    if state is not None:
        return state
    with _lock:
        if _state is None:
            if _init_error is not None:
                raise _init_error
            try:
                _state = _initialize()
            except BackendError as e:
                _init_error = e  # the same error on every later use, not a half-initialised state
                raise
        return _state


def started() -> bool:
    """Whether the backends were created (or their creation was attempted)."""
    return _state is not None or _init_error is not None


def available_backends() -> list[str]:
    """Canonical names of the backends that initialised, best first (the default is first)."""
    return list(_get_state().backends)


def _resolve(name: str) -> Backend:
    state = _get_state()
    if not isinstance(name, str):
        raise BackendError(f"Backend name must be a string such as 'cpu' or 'cuda', got {name!r}.")
    key = name.strip().lower()
    if key == "gpu":
        for alias in GPU_ALIASES:
            if alias in state.backends:
                return state.backends[alias]
    key = state.aliases.get(key, key)
    backend = state.backends.get(key)
    if backend is not None:
        return backend
    available = ", ".join(state.backends)
    if key not in _BUILTIN_NAMES and key not in state.failures:
        raise BackendError(f"Unknown backend {name!r}. Available backends: {available}")
    if key == "gpu":
        reasons = [f"{a}: {state.failures[a]}" for a in GPU_ALIASES if a in state.failures]
    else:
        reasons = [state.failures[key]] if key in state.failures else []
    why = f" ({'; '.join(reasons)})" if reasons else " (not installed or excluded by KILN_PLATFORMS)"
    raise BackendError(f"Backend {name!r} is not available{why}. Available backends: {available}")


def get_backend(name: str | None = None) -> Backend:
    """The backend called ``name`` ('cpu', 'cuda', 'rocm', 'tpu', 'gpu', a plugin's name), or the default."""
    if name is None:
        return _resolve(default_backend())
    return _resolve(name)


def default_backend() -> str:
    """Canonical name of the default backend."""
    state = _get_state()
    if _default_override is not None:
        return _default_override
    return next(iter(state.backends))


def set_default_backend(name: str | None) -> None:
    """Make ``name`` the default backend (``None``: back to the best available one)."""
    global _default_override
    _default_override = None if name is None else _resolve(name).platform


def devices(backend: str | None = None) -> list[Device]:
    """The devices of ``backend`` (default backend if None)."""
    return get_backend(backend).devices()


def global_devices(backend: str | None = None) -> list[Device]:
    """The devices of ``backend`` (default backend if None) on every process of a distributed run."""
    return get_backend(backend).global_devices()


def local_device(backend: str | None, index: int) -> Device:
    """Device number ``index`` of ``backend`` (default backend if None)."""
    b = get_backend(backend)
    if isinstance(index, bool) or not isinstance(index, int):
        raise DeviceError(f"Device index must be an int, got {index!r}.")
    if not 0 <= index < len(b._devices):
        n = len(b._devices)
        hint = " (set KILN_NUM_CPU_DEVICES for more CPU devices)" if b.platform == "cpu" else ""
        raise DeviceError(f"Device index {index} is out of range for backend {b.platform!r}, which has "
                          f"{n} device{'s' if n != 1 else ''} (valid indices 0..{n - 1}){hint}.")
    return b._devices[index]


def _device_by_id(platform: str, id: int) -> Device:
    device = get_backend(platform)._by_id.get(id)
    if device is None:
        raise DeviceError(f"No device with id {id} on backend {platform!r}.")
    return device


def device_of_raw(raw: Any) -> Device:
    """kiln's Device for a jaxlib device (from any initialised backend)."""
    for backend in _get_state().backends.values():
        device = backend._by_raw.get(raw)
        if device is not None:
            return device
    raise DeviceError(f"Device {raw!r} does not belong to any kiln backend.")
