"""LAPACK kernels for XLA:CPU: jaxlib ships them as typed-FFI custom-call targets; kiln registers them.

``jaxlib.cpu._lapack`` (a private jaxlib module) holds one FFI handler per LAPACK routine and dtype
(``lapack_sgetrf_ffi``, ``lapack_dpotrf_ffi``, ...). Using them takes two steps, both done here once
per process, lazily (the first time a module needs them):

1. ``_lapack.initialize()`` binds the handlers to a LAPACK library. jaxlib takes it from SciPy
   (``scipy.linalg.cython_lapack``), so this imports SciPy; without SciPy it fails and kiln reports
   no LAPACK targets (its linear algebra then uses its portable implementation, also on CPU).
2. ``xla_client.register_custom_call_target(name, capsule, platform="cpu", api_version=1)`` puts
   each handler in XLA's process-wide FFI registry (first registration wins; it also works after
   the CPU client exists).

The interface for the rest of kiln is :func:`custom_call_targets` (the target names a module may
call on a platform) and :func:`ensure_lapack_registered`.

Step 1 makes jaxlib import SciPy (a dependency of jaxlib itself), on the first CPU lowering that needs
a decomposition. As in JAX, CPU linear algebra uses these kernels by default (fast, accurate, complex-
capable); ``KILN_CPU_LAPACK=0`` or ``kiln.config.update("cpu_lapack", False)`` selects kiln's portable
StableHLO algorithms instead, the ones other platforms use.
"""
from __future__ import annotations

import os
import threading
from typing import Any

from ._jaxlib import xc

_lock = threading.Lock()
_lapack_targets: frozenset[str] | None = None  # None: not tried yet
_lapack_error: str | None = None
_enabled: bool = os.environ.get("KILN_CPU_LAPACK", "1").strip().lower() not in ("0", "false", "no", "off")


def set_enabled(enabled: bool) -> None:
    """Use (or stop using) jaxlib's LAPACK kernels for CPU linear algebra."""
    global _enabled
    _enabled = bool(enabled)


def _load_lapack() -> tuple[frozenset[str], str | None]:
    try:
        from jaxlib.cpu import _lapack  # private jaxlib module (its API can change between releases)
    except ImportError as e:
        return frozenset(), f"this jaxlib has no jaxlib.cpu._lapack ({e})"
    try:
        _lapack.initialize()  # binds the kernels to SciPy's LAPACK; without it they would call NULL
    except Exception as e:  # ImportError (no SciPy), or anything else jaxlib raises
        return frozenset(), f"jaxlib could not load LAPACK ({type(e).__name__}: {e}); it needs SciPy"
    registrations: dict[str, Any] = _lapack.registrations()
    names = []
    for name, capsule in registrations.items():
        if not name.endswith("_ffi"):  # legacy (untyped) kernels: kiln emits only typed-FFI calls
            continue
        try:
            xc.register_custom_call_target(name, capsule, platform="cpu", api_version=1)
        except Exception:  # registration API drift: leave this target out
            continue
        names.append(name)
    return frozenset(names), None


def ensure_lapack_registered() -> frozenset[str]:
    """Register jaxlib's LAPACK FFI targets for XLA:CPU (once); returns the registered names.

    Returns an empty set when they are unavailable (see :func:`lapack_unavailable_reason`).
    """
    global _lapack_targets, _lapack_error
    if _lapack_targets is None:
        with _lock:
            if _lapack_targets is None:
                _lapack_targets, _lapack_error = _load_lapack()
    return _lapack_targets


def lapack_unavailable_reason() -> str | None:
    """Why LAPACK targets could not be registered (None when they were, or were not tried yet)."""
    return _lapack_error


def custom_call_targets(platform: str) -> frozenset[str]:
    """The custom-call target names that compiled modules may call on ``platform``.

    On 'cpu', when opted in: jaxlib's LAPACK FFI targets (registered on first use). Other platforms:
    none yet: the GPU plugin's extension registers cuSOLVER targets (``plugins.register_gpu_extension``),
    but kiln's linear algebra on GPUs still emits its portable StableHLO algorithms.
    """
    if platform == "cpu" and _enabled:
        return ensure_lapack_registered()
    return frozenset()


__all__ = ["custom_call_targets", "ensure_lapack_registered", "lapack_unavailable_reason"]
