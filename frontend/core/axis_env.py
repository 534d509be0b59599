"""The named axes in scope: ``vmap(f, axis_name="i")`` binds "i" (with its size) while it traces ``f``.

Collectives (``kiln.lax.psum`` etc.) check their axis names against this environment and
``all_gather`` reads an axis's size from it. Like the trace stack, it is a context variable changed
only inside a copied context (``Context.run``), so each thread has its own and nothing, not even an
interrupt between two Python lines, can leave a name bound.
"""
from __future__ import annotations

import contextvars
from typing import Any, Callable

# Innermost last: ((name, size), ...).
_axes: contextvars.ContextVar[tuple] = contextvars.ContextVar("kiln_named_axes", default=())


def _run_with_axes(axes: tuple, fun: Callable, args: tuple) -> Any:
    _axes.set(axes)
    return fun(*args)


def run_with_axis(name: Any, size: int, fun: Callable, *args: Any) -> Any:
    """``fun(*args)`` with axis ``name`` of ``size`` bound (``name`` None: nothing is bound)."""
    if name is None:
        return fun(*args)
    return contextvars.copy_context().run(_run_with_axes, _axes.get() + ((name, size),), fun, args)


def run_with_axes(axes: tuple, fun: Callable, *args: Any) -> Any:
    """``fun(*args)`` with every ``(name, size)`` of ``axes`` bound (``shard_map`` binds its mesh's axes)."""
    return contextvars.copy_context().run(_run_with_axes, _axes.get() + tuple(axes), fun, args)


def bound_names() -> tuple:
    return tuple(n for n, _ in _axes.get())


def axis_size(name: Any) -> int | None:
    """The size of the innermost axis bound as ``name``, or None when it is not bound."""
    for n, size in reversed(_axes.get()):
        if n == name:
            return size
    return None
