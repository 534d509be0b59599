"""``kiln.clear_caches()``: every in-memory cache of traces, transformed IRs and executables registers how to
clear itself here (a table owned by the lowest floor, filled from above). The persistent compile cache on
disk is not touched (as JAX's ``clear_caches``)."""
from __future__ import annotations

from typing import Callable

_clearers: list[Callable[[], None]] = []


def register(clear: Callable[[], None]) -> Callable[[], None]:
    """Call ``clear()`` from :func:`clear_all`."""
    _clearers.append(clear)
    return clear


def clear_all() -> None:
    """Clear every registered cache: the next call of any jitted function or eager operation traces and
    compiles again."""
    for clear in list(_clearers):
        clear()
