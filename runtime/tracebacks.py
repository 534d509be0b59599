"""jaxlib's Python tracebacks on arrays and launches: off in a kiln process.

With them on (jaxlib's default), jaxlib records the Python stack when it creates an array or launches a
program, for ``jax.Array.traceback`` and the allocation sites of a device memory profile. In jaxlib 0.10
that costs about 0.3 µs of every launch, and the calls kiln makes on its hot paths (``execute_sharded``,
``is_ready``, ``block_until_ready``: launches, transfers to the host, waits) each leak about 100 bytes while
it is on: a loop of a million eager ops grew by over 100 MB. (jaxlib's C++ jit dispatch, which JAX's jitted
calls take, does not leak.)

It is one process-wide jaxlib setting, so kiln changes it only where jax has not been imported yet, as
for the C++ dispatch path (fastpath.py); a jax imported later leaves it as it is. ``KILN_JAXLIB_TRACEBACKS=1``
keeps them on, for a device memory profile that names the Python line that allocated each buffer.
"""
from __future__ import annotations

import os

from ._jaxlib import _jax, jax_loaded


def configure() -> None:
    """Turn jaxlib's tracebacks off, unless ``KILN_JAXLIB_TRACEBACKS=1`` or jax is already loaded (once, at
    import)."""
    if os.environ.get("KILN_JAXLIB_TRACEBACKS", "0") not in ("", "0"):
        return
    if jax_loaded():  # jax's process: its arrays keep their tracebacks
        return
    set_enabled = getattr(_jax, "set_tracebacks_enabled", None)
    if set_enabled is not None:  # absent from some jaxlib: nothing to turn off there
        set_enabled(False)


def enabled() -> bool | None:
    """Whether jaxlib records tracebacks (None where this jaxlib cannot say)."""
    get = getattr(_jax, "tracebacks_enabled", None)
    return None if get is None else bool(get())
