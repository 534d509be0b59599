"""kiln's persistent compilation cache: compiled executables on disk, shared between processes (NOTES §7).

``compile_and_load(client, module, device_list, options, ...)`` is the one place kiln compiles: it looks the
module up on disk first (``client.deserialize_executable``, milliseconds) and compiles only on a miss, then
writes the serialized executable for the next process.

- **Where:** ``$KILN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kiln``, else ``~/.cache/kiln`` (one file per entry).
- **Key:** a SHA-256 over everything that changes the executable and nothing else (:func:`key_parts`): the
  module text without locations, kiln's and jaxlib's versions, the platform and its version, the plugin
  binary, the serialized compile options (device assignment, partitions, debug options), the device kinds,
  the host CPU on CPU, ``XLA_FLAGS`` and ``LIBTPU_INIT_ARGS``.
- **Entries:** a header (magic, format version, flags, CRC-32 and length of the payload, the key) and the
  zlib-compressed executable; written to a temporary file in the same directory and renamed, so readers
  and concurrent writers only ever see whole entries. An entry that fails its checks is ignored (compiled
  instead) and rewritten.
- **Size:** bounded (default 1 GiB); a hit refreshes the entry's modification time and the oldest entries
  are removed when a write takes the total over the bound.
- **Host callbacks:** the executable refers to its callbacks by index (NOTES §8), so an entry is loaded with
  the current callables passed again, in the same order.
- **Off:** ``KILN_COMPILATION_CACHE=0``, or :func:`configure` (the frontend pushes ``kiln.config``'s
  ``compilation_cache*`` flags here). An unwritable directory gives one warning and turns the cache off.

This module imports only jaxlib, numpy and the standard library.
"""
from __future__ import annotations

import hashlib
import logging
import os
import platform as _platform
import struct
import tempfile
import time
import warnings
import zlib
from typing import Any, Sequence

from . import ir_dump
from ._jaxlib import API_VERSION, JAXLIB_VERSION

DEFAULT_MAX_SIZE = 1 << 30
FORMAT_VERSION = 1
MAGIC = b"KILNXEC\0"
SUFFIX = ".kxc"
_TMP_PREFIX = ".tmp-"
_FLAG_ZLIB = 1
# magic, format version, flags, CRC-32 of the payload, payload length, SHA-256 key
_HEADER = struct.Struct("<8sHHIQ32s")
# zlib level 1: within a few per cent of level 6's size on executables, at a fraction of its time.
_ZLIB_LEVEL = 1
# Temporary files older than this are debris of a killed writer: removed when the cache is trimmed.
_STALE_TMP_SECS = 3600.0
# The directory's total is re-measured after this many writes (other processes write too).
_RESCAN_EVERY = 64


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    try:
        return int(value) if value and value.strip() else default
    except ValueError:
        warnings.warn(f"{name}={value!r} is not an integer number of bytes; using {default}", RuntimeWarning,
                      stacklevel=2)
        return default


def default_dir() -> str:
    """``$KILN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kiln``, else ``~/.cache/kiln``."""
    explicit = os.environ.get("KILN_CACHE_DIR")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.abspath(os.path.join(base, "kiln"))


class _Settings:
    def __init__(self) -> None:
        self.enabled = _env_bool("KILN_COMPILATION_CACHE", True)
        self.directory: str | None = None  # None: default_dir(), read when first needed
        self.max_size = _env_int("KILN_COMPILATION_CACHE_MAX_SIZE", DEFAULT_MAX_SIZE)
        self.min_compile_time = 0.0
        self.broken: str | None = None  # the directory that failed, after its one warning
        # Each lookup's outcome is logged on the ``kiln`` logger: a miss at WARNING with ``explain_misses`` (JAX's
        # explain_cache_misses), a hit at WARNING with ``log_hits`` (JAX's log_compiles); else at DEBUG.
        self.explain_misses = False
        self.log_hits = False


_settings = _Settings()
_stats = {"hits": 0, "misses": 0, "writes": 0, "errors": 0, "skipped": 0}
_last: list[str | None] = [None]  # "hit", "miss" or "off": the outcome of the latest compile
_total: dict[str, Any] = {"dir": None, "bytes": 0, "writes": 0}  # the directory's size, as last measured
_kiln_version: list[str | None] = [None]  # pushed by the frontend (configure), else read from the metadata
_client_parts: dict[int, tuple[Any, list[tuple[str, str]]]] = {}  # per client: the key's fixed parts


def configure(*, enabled: bool | None = None, directory: Any = ..., max_size: int | None = None,
              min_compile_time: float | None = None, kiln_version: str | None = None,
              explain_misses: bool | None = None, log_hits: bool | None = None) -> None:
    """Set the cache's settings (the frontend pushes ``kiln.config``'s flags here).

    ``directory=None`` means the default (:func:`default_dir`); ``max_size`` is in bytes, -1 for no bound,
    0 turns the cache off (as JAX's ``jax_compilation_cache_max_size``); executables that compiled in less
    than ``min_compile_time`` seconds are not written. ``kiln_version`` (part of the key) is told by the
    frontend: asking the package metadata costs 20 ms at the first compile of a process. ``explain_misses`` /
    ``log_hits``: log each miss / hit as a warning rather than a debug message.
    """
    if explain_misses is not None:
        _settings.explain_misses = bool(explain_misses)
    if log_hits is not None:
        _settings.log_hits = bool(log_hits)
    if kiln_version is not None and kiln_version != _kiln_version[0]:
        _kiln_version[0] = kiln_version
        _client_parts.clear()
    if enabled is not None:
        _settings.enabled = bool(enabled)
    if directory is not ...:
        path = None if directory is None else os.fspath(directory)
        if path is not None and "://" in path:  # gs://bucket/...: JAX reads those through etils; kiln does not
            if _settings.directory != path:
                warnings.warn(f"kiln: the compile cache directory {path!r} is a URL, and kiln's persistent compile "
                              "cache writes to local directories only: it is off until "
                              "kiln.config.update('compilation_cache_dir', ...) names a local directory.", stacklevel=3)
            _settings.directory = _settings.broken = path
            return
        new = None if path is None else os.path.abspath(os.path.expanduser(path))
        if new != _settings.directory:
            _settings.directory = new
            _settings.broken = None  # a new directory gets a new chance (and its own warning)
    if max_size is not None:
        _settings.max_size = int(max_size)
    if min_compile_time is not None:
        _settings.min_compile_time = float(min_compile_time)


def settings() -> dict[str, Any]:
    """The current settings: ``enabled``, ``directory`` (None: :func:`default_dir`), ``max_size``,
    ``min_compile_time``."""
    s = _settings
    return {"enabled": s.enabled, "directory": s.directory, "max_size": s.max_size,
            "min_compile_time": s.min_compile_time}


def cache_dir() -> str | None:
    """The directory in use, or None when the cache is off."""
    s = _settings
    if not s.enabled or s.max_size == 0:
        return None
    d = s.directory or default_dir()
    return None if d == s.broken else d


def stats() -> dict[str, Any]:
    """Counts since the start (or :func:`reset_stats`): ``hits``, ``misses`` (compiled), ``writes``,
    ``errors`` (corrupt or unreadable entries, failed writes), ``skipped`` (compiles not written: faster
    than the minimum compile time, or larger than the bound), and ``last``: ``"hit"``, ``"miss"`` or
    ``"off"`` for the latest compile (None before the first)."""
    return {**_stats, "last": _last[0]}


def reset() -> None:
    """Back to a fresh state (JAX's ``compilation_cache.reset_cache``): a directory that failed gets a new chance,
    and the counters start again; the settings stay."""
    if _settings.directory is None or "://" not in _settings.directory:
        _settings.broken = None
    reset_stats()


def reset_stats() -> None:
    for k in _stats:
        _stats[k] = 0
    _last[0] = None


def clear() -> None:
    """Delete every entry of the cache directory (the directory itself stays)."""
    d = _settings.directory or default_dir()
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        if name.endswith(SUFFIX) or name.startswith(_TMP_PREFIX):
            try:
                os.unlink(os.path.join(d, name))
            except OSError:
                pass
    _total["dir"] = None


# ---------------------------------------------------------------------------------------------------------
# The key

def _strip_locations(text: str) -> str:
    """``text`` printed without ``loc(...)`` debug information (parsed and printed again)."""
    from jaxlib.mlir import ir

    from .mlir import mlir_context
    with mlir_context():
        return ir.Module.parse(text).operation.get_asm(enable_debug_info=False)


def module_text(module: Any, text: str | None = None) -> str:
    """The module's text without locations: what the key hashes (source locations do not change code)."""
    if text is not None and "loc(" not in text:
        return text
    if not isinstance(module, (str, bytes)) and hasattr(module, "operation"):  # ir.Module
        return module.operation.get_asm(enable_debug_info=False)
    if text is None:
        text = module.decode() if isinstance(module, bytes) else module
    return _strip_locations(text) if "loc(" in text else text


def kiln_version() -> str:
    if _kiln_version[0] is None:
        try:
            from importlib.metadata import version
            _kiln_version[0] = version("kiln")
        except Exception:
            _kiln_version[0] = "unknown"
    return _kiln_version[0]


def _host_cpu() -> str:
    """The host CPU's model and feature flags: XLA's CPU code is compiled for them."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            keep = []
            for line in f:
                if line.startswith(("flags", "model name", "Features", "CPU part")):
                    keep.append(line.strip())
                elif not line.strip() and keep:
                    break  # the first processor is enough
        return _platform.machine() + "\n" + "\n".join(keep)
    except OSError:
        return _platform.machine() + " " + _platform.processor()


def _plugin_version(client: Any) -> str:
    """The PJRT plugin's library (path, size and modification time) for a plugin client; '' for CPU."""
    from . import backends
    if not backends.started():
        return ""
    for b in backends._get_state().backends.values():
        if b._client is client and b._spec is not None:
            try:
                st = os.stat(b._spec.path)
                return f"{b._spec.name} {b._spec.path} {st.st_size} {st.st_mtime_ns}"
            except OSError:
                return f"{b._spec.name} {b._spec.path}"
    return ""


def _static_parts(client: Any) -> list[tuple[str, str]]:
    hit = _client_parts.get(id(client))
    if hit is not None and hit[0] is client:
        return hit[1]
    plat = str(client.platform)
    parts = [("kiln", kiln_version()), ("jaxlib", f"{JAXLIB_VERSION} api {API_VERSION}"),
             ("platform", plat), ("platform_version", str(client.platform_version)),
             ("plugin", _plugin_version(client)), ("host_cpu", _host_cpu() if plat == "cpu" else "")]
    _client_parts[id(client)] = (client, parts)
    return parts


def key_parts(client: Any, module: Any, device_list: Sequence[Any], options: Any,
              text: str | None = None) -> list[tuple[str, bytes]]:
    """The named components of the cache key, in order."""
    parts = [("format", str(FORMAT_VERSION).encode()),
             ("module", module_text(module, text).encode())]
    parts += [(name, value.encode()) for name, value in _static_parts(client)]
    parts += [("compile_options", options.SerializeAsString()),
              ("device_kinds", "\n".join(str(d.device_kind) for d in device_list).encode()),
              ("XLA_FLAGS", os.environ.get("XLA_FLAGS", "").encode()),
              ("LIBTPU_INIT_ARGS", os.environ.get("LIBTPU_INIT_ARGS", "").encode())]
    return parts


def cache_key(client: Any, module: Any, device_list: Sequence[Any], options: Any, text: str | None = None) -> str:
    """The SHA-256 (hex) of :func:`key_parts`: each part's name and length are hashed with it."""
    h = hashlib.sha256()
    for name, value in key_parts(client, module, device_list, options, text):
        h.update(name.encode())
        h.update(len(value).to_bytes(8, "little"))
        h.update(value)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------------------
# Entries

def entry_path(directory: str, key: str) -> str:
    return os.path.join(directory, key + SUFFIX)


def encode_entry(key: str, blob: bytes) -> bytes:
    """Header + payload of one entry (the payload is ``blob`` zlib-compressed when that makes it smaller)."""
    payload, flags = zlib.compress(blob, _ZLIB_LEVEL), _FLAG_ZLIB
    if len(payload) >= len(blob):
        payload, flags = blob, 0
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, flags, zlib.crc32(payload), len(payload), bytes.fromhex(key))
    return header + payload


def decode_entry(key: str, data: bytes) -> bytes | None:
    """The executable stored in ``data``, or None when the entry is not a whole, intact entry for ``key``."""
    if len(data) < _HEADER.size:
        return None
    magic, version, flags, crc, length, stored_key = _HEADER.unpack_from(data)
    if magic != MAGIC or version != FORMAT_VERSION or stored_key != bytes.fromhex(key):
        return None
    payload = memoryview(data)[_HEADER.size:]
    if len(payload) != length or zlib.crc32(payload) != crc:
        return None
    if flags & _FLAG_ZLIB:
        try:
            return zlib.decompress(payload)
        except zlib.error:
            return None
    return bytes(payload)


def _load(directory: str, key: str, client: Any, device_list: Any, options: Any, callbacks: list) -> Any:
    path = entry_path(directory, key)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError:
        _stats["errors"] += 1
        return None
    blob = decode_entry(key, data)
    if blob is None:
        _stats["errors"] += 1  # corrupt, truncated or foreign: compiled again and rewritten
        return None
    try:
        kwargs = {"host_callbacks": callbacks} if callbacks else {}
        exe = client.deserialize_executable(blob, device_list, options, **kwargs)
    except Exception:
        _stats["errors"] += 1
        return None
    try:
        os.utime(path)  # most recently used: evicted last
    except OSError:
        pass
    return exe


def _disable(directory: str, why: BaseException) -> None:
    if _settings.broken == directory:
        return  # warned already
    _settings.broken = directory
    warnings.warn(f"kiln: the compile cache directory {directory!r} is not writable ({why}); the persistent "
                  "compile cache is off for this process. Point KILN_CACHE_DIR or "
                  "kiln.config.update('compilation_cache_dir', ...) at a writable directory, or turn the cache "
                  "off with KILN_COMPILATION_CACHE=0.", RuntimeWarning, stacklevel=4)


def write_entry(directory: str, key: str, data: bytes) -> None:
    """Write one entry atomically: a temporary file in ``directory``, then ``os.replace``."""
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, entry_path(directory, key))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _store(directory: str, key: str, client: Any, exe: Any) -> None:
    try:
        blob = client.serialize_executable(exe)
    except Exception:  # a backend that cannot serialize: nothing to store
        _stats["errors"] += 1
        return
    data = encode_entry(key, blob)
    bound = _settings.max_size
    if 0 < bound < len(data):
        _stats["skipped"] += 1
        return
    try:
        write_entry(directory, key, data)
    except OSError as e:
        _stats["errors"] += 1
        _disable(directory, e)
        return
    _stats["writes"] += 1
    if bound > 0:
        _account(directory, len(data), bound)


def _account(directory: str, nbytes: int, bound: int) -> None:
    """Add a written entry to the directory's total; trim the directory when it may be over ``bound``.

    No lock (here or anywhere in this module): a KeyboardInterrupt raised as a ``with lock:`` block exits
    leaves the lock held (tests/frontend/test_interrupts.py). Racing threads may leave the total slightly
    off; the next rescan corrects it.
    """
    if _total["dir"] != directory:
        _total.update(dir=directory, bytes=None, writes=0)
    _total["writes"] += 1
    known = _total["bytes"]
    if known is not None and known + nbytes <= bound and _total["writes"] % _RESCAN_EVERY:
        _total["bytes"] = known + nbytes
        return
    _total["bytes"] = trim(directory, bound)


def trim(directory: str, bound: int) -> int:
    """Remove the least recently used entries until the directory holds at most ``bound`` bytes (and
    stale temporary files); returns the bytes left."""
    entries = []
    now = time.time()
    try:
        scan = os.scandir(directory)
    except OSError:
        return 0
    with scan:
        for e in scan:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if e.name.endswith(SUFFIX):
                entries.append((st.st_mtime, st.st_size, e.path))
            elif e.name.startswith(_TMP_PREFIX) and now - st.st_mtime > _STALE_TMP_SECS:
                try:
                    os.unlink(e.path)
                except OSError:
                    pass
    total = sum(size for _, size, _ in entries)
    if total > bound:
        entries.sort()
        for _, size, path in entries:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass  # removed by another process
            except OSError:
                continue
            total -= size
            if total <= bound:
                break
    return total


# ---------------------------------------------------------------------------------------------------------
# Compile

def lookup(client: Any, module: Any, device_list: Any, options: Any, *, text: str | None = None,
           host_callbacks: Sequence[Any] = ()) -> tuple[str | None, Any]:
    """The module's key and its executable loaded from the cache, or None (a miss, or the cache is off).
    What a miss costs before compiling: hashing the key and probing one file."""
    directory = cache_dir()
    try:
        key = cache_key(client, module, device_list, options, text)
    except Exception:  # a module the key cannot read: compiled without the cache
        _stats["errors"] += 1
        return None, None
    if directory is None:
        return key, None
    return key, _load(directory, key, client, device_list, options, list(host_callbacks))


def read_entry(directory: str, key: str) -> bytes | None:
    """XLA's serialized executable stored under ``key`` in ``directory``, or None (removed since, or unreadable)."""
    try:
        with open(entry_path(directory, key), "rb") as f:
            return decode_entry(key, f.read())
    except OSError:
        return None


def compile_and_load(client: Any, module: Any, device_list: Any, options: Any, *, text: str | None = None,
                     host_callbacks: Sequence[Any] = (), use_cache: bool = True) -> tuple[Any, tuple[str, str] | None]:
    """``client.compile_and_load(module, device_list, options)`` through the persistent cache: the loaded
    executable, and ``(directory, key)`` of the cache entry it was loaded from (None when it was compiled; see
    :func:`read_entry`).

    ``text`` is the module's text when the caller has it (saves printing it again); ``host_callbacks`` are
    the module's host callbacks by index (bound again on a load). ``use_cache=False`` compiles
    without the cache (a module that must be compiled to have its effect: a sharding probe's, whose key is an
    address in this process, would only add an entry no one reads). Errors of the compile itself
    propagate unchanged; the cache's own failures never raise (they count as ``errors`` in :func:`stats`).
    """
    ir_dump.dump(module, "compile")  # (kiln.config's dump_ir_to: JAX's dump of each module it compiles)
    callbacks = list(host_callbacks)
    kwargs = {"host_callbacks": callbacks} if callbacks else {}
    directory = cache_dir() if use_cache else None
    if directory is None:
        _last[0] = "off"
        return client.compile_and_load(module, device_list, options, **kwargs), None
    key, exe = lookup(client, module, device_list, options, text=text, host_callbacks=callbacks)
    if exe is not None:
        _stats["hits"] += 1
        _last[0] = "hit"
        _log(_settings.log_hits, "Persistent compilation cache hit for %r with key %r", module, key)
        return exe, (directory, key)
    # (all capitals, as JAX's, to match the tracing cache's "TRACING CACHE MISS")
    _log(_settings.explain_misses, "PERSISTENT COMPILATION CACHE MISS for %r with key %r", module, key)
    start = time.perf_counter()
    exe = client.compile_and_load(module, device_list, options, **kwargs)
    elapsed = time.perf_counter() - start
    _stats["misses"] += 1
    _last[0] = "miss"
    if key is not None:
        if elapsed < _settings.min_compile_time:
            _stats["skipped"] += 1
        else:
            _store(directory, key, client, exe)
    return exe, None


def _log(loud: bool, message: str, module: Any, key: str | None) -> None:
    """``message`` about ``module`` (named by its symbol name, ``jit_f``) on the ``kiln`` logger: at WARNING when
    ``loud``, else at DEBUG."""
    level = logging.WARNING if loud else logging.DEBUG
    if _logger.isEnabledFor(level):
        _logger.log(level, message, ir_dump.module_name(module), key)


_logger = logging.getLogger("kiln")


__all__ = ["cache_dir", "cache_key", "clear", "compile_and_load", "configure", "decode_entry", "default_dir",
           "encode_entry", "key_parts", "lookup", "module_text", "read_entry", "reset_stats", "settings", "stats",
           "trim", "write_entry"]
