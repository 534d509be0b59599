"""``array_garbage_collection_guard`` (JAX's ``jax_array_garbage_collection_guard``): say when a kiln Array is freed
by Python's cyclic garbage collector rather than by reference counting (it was held by a reference cycle, and so
kept its device memory until a collection).

With the guard at its default (None, ``'allow'``) nothing here is installed: no cost. Under ``'log'`` or ``'fatal'``
:class:`~kiln.frontend.driver.array.Array` gets a ``__del__`` and ``gc.callbacks`` a callback that notes when a
collection is running: an Array finalized during a collection was freed by it (an Array in a cycle, or one that only
a cycle held). ``'log'`` logs an error on the ``kiln`` logger; ``'fatal'`` logs it and aborts the process, as
JAX's fatal log does. An Array freed by reference counting in another thread while this one collects is counted
as collected too (rare: it needs a thread switch inside the collection).
"""
from __future__ import annotations

import gc
import logging
import os
from typing import Any

from ..core.config import config
from .array import Array

_logger = logging.getLogger("kiln")
_state = {"collecting": 0, "level": None}

MESSAGE = ("kiln.Array {aval} was deleted by Python's garbage collector instead of reference counting. Break the "
           "reference cycle that delays the deletion of this kiln.Array to avoid holding on to its device memory "
           "(array_garbage_collection_guard={level!r})")


def _on_gc(phase: str, info: dict) -> None:
    _state["collecting"] = 1 if phase == "start" else 0


def _finalize(self: Any) -> None:  # Array.__del__ while the guard is on
    if not _state["collecting"]:
        return
    level = _state["level"]
    try:
        aval = self.aval.str_short()
    except Exception:  # a half-built Array
        aval = "(unknown type)"
    _logger.error(MESSAGE.format(aval=aval, level=level))
    if level == "fatal":
        logging.shutdown()
        os.abort()


def _apply(level: str | None) -> None:
    """Install (``'log'``, ``'fatal'``) or remove (None, ``'allow'``) the finalizer and the gc callback."""
    on = level in ("log", "fatal")
    _state["level"] = level
    if on:
        if _on_gc not in gc.callbacks:
            gc.callbacks.append(_on_gc)
        if Array.__dict__.get("__del__") is not _finalize:
            Array.__del__ = _finalize  # (sets the type's finalizer slot, for existing Arrays too)
    else:
        if _on_gc in gc.callbacks:
            gc.callbacks.remove(_on_gc)
        if "__del__" in Array.__dict__:
            del Array.__del__
        _state["collecting"] = 0


config.on_change("array_garbage_collection_guard", _apply)
