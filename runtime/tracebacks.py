"""jaxlib's Python tracebacks on arrays and launches: off in a kiln process.

With them on (jaxlib's default), jaxlib records the Python stack when it creates an array or launches a
program, for ``jax.Array.traceback`` and the allocation sites of a device memory profile. In jaxlib 0.10
that costs about 0.3 µs of every launch, and the calls kiln makes on its hot paths (``execute_sharded``,
``is_ready``, ``block_until_ready``: launches, transfers to the host, waits) each leak about 100 bytes while
it is on: a loop of a million eager ops grew by over 100 MB. (jaxlib's C++ jit dispatch, which JAX's jitted
calls take, does not leak.)

It is one process-wide jaxlib setting, so kiln changes it only where jax has not been imported yet, as
for the C++ dispatch path (fastpath.py), and turns it back on when jax is imported later: jax reads its
source locations (``print_saved_residuals``, checkify's errors) from these tracebacks, and without them its
checkify failed with an AttributeError. ``KILN_JAXLIB_TRACEBACKS=1`` keeps them on, for a device memory
profile that names the Python line that allocated each buffer.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys
from typing import Callable, TypeVar

from ._jaxlib import _jax, jax_loaded


class _GiveBackToJax:
    """A ``sys.meta_path`` entry that finds nothing: when ``import jax`` finds jax (it is installed), it turns
    jaxlib's tracebacks back on (jax's default) and removes itself. jaxlib itself tries ``import jax`` on some
    paths (an error's message, an array without an aval): where jax is not installed that import fails, and
    tracebacks stay off."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "jax" and importlib.machinery.PathFinder.find_spec(fullname, path) is not None:
            set_enabled = getattr(_jax, "set_tracebacks_enabled", None)
            if set_enabled is not None:
                set_enabled(True)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
        return None


def kiln_setting() -> bool:
    """Whether jaxlib records tracebacks in a process where kiln runs without jax: only with
    ``KILN_JAXLIB_TRACEBACKS=1``. (A benchmark that runs both frameworks in one process sets this for kiln's
    measurements, as jax's default for jax's.)"""
    return os.environ.get("KILN_JAXLIB_TRACEBACKS", "0") not in ("", "0")


def configure() -> None:
    """Turn jaxlib's tracebacks off, unless ``KILN_JAXLIB_TRACEBACKS=1`` or jax is already loaded (once, at
    import)."""
    if kiln_setting():
        return
    if jax_loaded():  # jax's process: its arrays keep their tracebacks
        return
    set_enabled = getattr(_jax, "set_tracebacks_enabled", None)
    if set_enabled is not None:  # absent from some jaxlib: nothing to turn off there
        set_enabled(False)
        sys.meta_path.insert(0, _GiveBackToJax())


def enabled() -> bool | None:
    """Whether jaxlib records tracebacks (None where this jaxlib cannot say)."""
    get = getattr(_jax, "tracebacks_enabled", None)
    return None if get is None else bool(get())


T = TypeVar("T")


def with_user_context(call: Callable[[], T]) -> T:
    """``call()`` with jaxlib's tracebacks on, for an array jaxlib makes outside an execution (a DLPack import):
    made while they are off, it has no "user context", and jaxlib 0.10 then refuses its pointer
    (``unsafe_buffer_pointer``: "null user context")."""
    set_enabled = getattr(_jax, "set_tracebacks_enabled", None)
    was = enabled()
    if set_enabled is None or was is None or was:
        return call()
    set_enabled(True)
    try:
        return call()
    finally:
        set_enabled(False)
