"""kiln's global configuration: ``kiln.config.update(name, value)`` and ``kiln.config.<name>``.

Flags that change what tracing produces (``enable_x64``, ...) are part of every compile-cache
key through :func:`Config.trace_key`, so flipping one never reuses a stale executable.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

from .errors import KilnError


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


class ConfigError(KilnError, ValueError):
    """An unknown configuration name or a value of the wrong type."""


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
        # CPU linear algebra through jaxlib's LAPACK kernels (they make jaxlib import SciPy): opt-in.
        "cpu_lapack": (_env_bool("KILN_CPU_LAPACK", False), bool, True),
        # Print why a jit cache missed (see kiln.explain_cache_misses).
        "explain_cache_misses": (_env_bool("KILN_EXPLAIN_CACHE_MISSES", False), bool, False),
    }

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {})
        for name, (default, _, _) in self._FLAGS.items():
            self._set(name, default)

    def _set(self, name: str, value: Any) -> None:
        # Flags are plain instance attributes: reading one is on every dispatch, so it must be cheap.
        self._values[name] = value
        object.__setattr__(self, name, value)
        object.__setattr__(self, "_trace_key", self._compute_trace_key())

    def __getattr__(self, name: str) -> Any:  # only called for names that are not flags
        raise AttributeError(f"kiln.config has no flag {name!r}; known flags: {', '.join(sorted(self._FLAGS))}")

    def __setattr__(self, name: str, value: Any) -> None:
        self.update(name, value)

    def update(self, name: str, value: Any) -> None:
        """Set flag ``name`` to ``value`` (``kiln.config.update("enable_x64", True)``)."""
        if name.startswith("jax_"):  # JAX spells its flags jax_enable_x64; accept both
            name = name[4:]
        if name not in self._FLAGS:
            raise ConfigError(f"kiln.config.update: unknown flag {name!r}; known flags: "
                              f"{', '.join(sorted(self._FLAGS))}")
        default, typ, _ = self._FLAGS[name]
        if value is not None and not isinstance(value, typ):
            raise ConfigError(f"kiln.config.update({name!r}, {value!r}): expected a {typ.__name__}, "
                              f"got {type(value).__name__}")
        if value is None and default is not None and typ is bool:
            raise ConfigError(f"kiln.config.update({name!r}, None): expected a bool")
        if name == "default_backend" and value is not None:
            from kiln import runtime
            runtime.get_backend(value)  # an unknown backend fails here, listing the available ones
        if name == "cpu_lapack":
            from kiln.runtime import lapack
            lapack.set_enabled(value)
        changed = self._values.get(name) != value
        self._set(name, value)
        if changed and self._FLAGS[name][2]:
            # Programs change with this flag: the C++ dispatch caches (keyed without kiln's flags) are dropped.
            from kiln import runtime
            runtime.fastpath.set_x64(self.enable_x64)

    def _compute_trace_key(self) -> tuple:
        return tuple(self._values.get(k) for k, (_, _, traced) in self._FLAGS.items() if traced)

    def trace_key(self) -> tuple:
        """The values of every flag that changes traced programs (part of jit's cache key)."""
        return self._trace_key

    @contextlib.contextmanager
    def override(self, name: str, value: Any) -> Iterator[None]:
        """Temporarily set a flag: ``with kiln.config.override("enable_x64", True): ...``."""
        old = getattr(self, name)
        self.update(name, value)
        try:
            yield
        finally:
            self.update(name, old)

    def __repr__(self) -> str:
        return "kiln.config(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"


config = Config()
