"""Stale captured values (seed 003's trap): ``kiln.jit`` bakes the values of the globals and closed-over
variables a function reads into the traced program; changing one later does not change the program.

At each trace the values the function reads from its globals and closure (numbers, arrays, and containers
of them) are remembered; each call checks them by identity, then by value when the identity changed, and
warns once per variable whose value has changed (a NumPy array changed in place keeps its identity and is not seen; a
container changed in place is: its leaves are compared). Only the function's own code (and the functions and
lambdas defined inside it) is looked at, not the functions it calls.

The same goes for the attributes of the object a jitted method is bound to (``kiln.jit(model.loss)`` reading
``self.w``) and of static arguments that are plain objects (JAX's docs' "marking self as static" strategy, where
``c.mul = False`` after the trace is never seen): those whose names the function's code reads are remembered.
"""
from __future__ import annotations

import dis
import functools
import operator
import types
from typing import Any, Sequence

import numpy as np

from ..core import tree_util
from ..core.config import config
from .array import Array
from .retrace import unwrap_function, warn_at_user

_SCALARS = (int, float, complex, np.generic)
_CONTAINERS = (tuple, list, dict)
_MISSING = object()


class StaleValueWarning(UserWarning):
    """A jitted function runs with the value a global or closed-over variable had when it was traced."""


class Baked:
    """One variable a traced program read: where it lives, and its value at trace time. ``kind``: "global",
    "closed-over", or "attribute" (of ``holder``, an object the function is bound to or takes as a static
    argument)."""

    __slots__ = ("name", "kind", "holder", "value", "leaves")

    def __init__(self, name: str, kind: str, holder: Any, value: Any, leaves: list) -> None:
        self.name, self.kind, self.holder, self.value, self.leaves = name, kind, holder, value, leaves

    def current(self) -> Any:
        if self.kind == "global":
            return self.holder.get(self.name, _MISSING)
        if self.kind == "attribute":
            return vars(self.holder).get(self.name, _MISSING)
        try:
            return self.holder.cell_contents
        except ValueError:  # an empty cell
            return _MISSING

    @property
    def key(self) -> str:
        """What the once-per-variable record remembers."""
        return f"attribute {id(self.holder)}.{self.name}" if self.kind == "attribute" else self.name

    def described(self) -> str:
        """The variable, as the warning names it."""
        if self.kind == "attribute":
            return f"attribute {self.name!r} of the {type(self.holder).__name__} object"
        return f"{self.kind} variable {self.name!r}"


@functools.lru_cache(maxsize=1024)
def _names_read(code: types.CodeType) -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str]]:
    """The global names, the free variables and the attribute names ``code`` (and code nested in it) loads."""
    globals_read: set[str] = set()
    derefs: set[str] = set()
    attrs: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        for ins in dis.get_instructions(c):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                globals_read.add(ins.argval)
            elif ins.opname in ("LOAD_DEREF", "LOAD_CLASSDEREF"):
                derefs.add(ins.argval)
            elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                attrs.add(ins.argval)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return tuple(sorted(globals_read)), tuple(n for n in code.co_freevars if n in derefs), frozenset(attrs)


def _bakeable_leaves(value: Any) -> list | None:
    """The leaves of ``value`` when it is a number, an array or a (small) container of them, else None."""
    if isinstance(value, _SCALARS + (np.ndarray, Array)):
        return [value]
    if isinstance(value, _CONTAINERS):
        try:
            leaves = tree_util.tree_leaves(value)
        except ValueError:  # not a pytree (a dict whose keys do not sort): no value of the program
            return None
        if leaves and len(leaves) <= 256 and all(isinstance(x, _SCALARS + (np.ndarray, Array)) for x in leaves):
            return leaves
    return None


def captured_values(fun: Any, holders: Sequence[Any] = ()) -> tuple[Baked, ...]:
    """The numbers and arrays ``fun`` reads from its globals and closure now (when it is being traced), and from
    the attributes of ``holders`` (the object a method is bound to, static arguments) that its code reads by
    name."""
    fun = unwrap_function(fun)
    code = getattr(fun, "__code__", None)
    if code is None or (getattr(fun, "__module__", None) or "").startswith("kiln."):
        return ()
    globals_read, free_read, attrs_read = _names_read(code)
    out = []
    for holder in holders:
        for name, value in vars(holder).items():
            leaves = _bakeable_leaves(value) if name in attrs_read else None
            if leaves is not None:
                out.append(Baked(name, "attribute", holder, value, leaves))
    g = getattr(fun, "__globals__", {})
    for name in globals_read:
        value = g.get(name, _MISSING)
        leaves = None if value is _MISSING else _bakeable_leaves(value)
        if leaves is not None:
            out.append(Baked(name, "global", g, value, leaves))
    cells = dict(zip(code.co_freevars, fun.__closure__ or ()))
    for name in free_read:
        try:
            value = cells[name].cell_contents
        except (KeyError, ValueError):
            continue
        leaves = _bakeable_leaves(value)
        if leaves is not None:
            out.append(Baked(name, "closed-over", cells[name], value, leaves))
    return tuple(out)


def _same_leaf(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (np.ndarray, Array)):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(np.asarray(a), np.asarray(b)))
    try:
        return bool(a == b)
    except Exception:
        return False


def _show(value: Any, leaves: list) -> str:
    if isinstance(value, _CONTAINERS):  # its leaves as they were (the container may have changed in place)
        shown = ", ".join(_show(x, [x]) for x in leaves[:4])
        return f"a {type(value).__name__} with leaves [{shown}{', ...' if len(leaves) > 4 else ''}]"
    if isinstance(value, (np.ndarray, Array)):
        return f"an array {value.dtype}{list(value.shape)}" if value.size > 8 else repr(np.asarray(value).tolist())
    return repr(value)[:60]


def check(name: str, baked: tuple[Baked, ...], warned: set) -> None:
    """Warn (once per variable) about each baked-in value that has changed since the trace."""
    if not config.stale_value_warnings:
        return
    for b in baked:
        now = b.current()
        if b.key in warned or now is b.value and not isinstance(now, _CONTAINERS):
            continue
        leaves = None if now is _MISSING else _bakeable_leaves(now)
        if leaves is not None and len(leaves) == len(b.leaves) and all(map(operator.is_, leaves, b.leaves)):
            continue  # a container whose leaves are the same objects
        if leaves is not None and len(leaves) == len(b.leaves) and all(map(_same_leaf, leaves, b.leaves)):
            b.value, b.leaves = now, leaves  # an equal value: nothing is stale; compare by identity again
            continue
        warned.add(b.key)
        now_text = "deleted" if now is _MISSING else f"now {_show(now, leaves or [])}"
        was = _show(b.value, b.leaves)
        what = ("the attributes of the object a method is bound to, or of a static argument, that it reads"
                if b.kind == "attribute" else "globals and closed-over variables")
        warn_at_user(
            f"kiln.jit({name}): the {b.described()} is {now_text}, but it was {was} when {name} was traced"
            f", and the compiled program still uses that old value (jit bakes in the values of {what}, as JAX "
            f"does). Pass {b.name} as an argument instead, or call {name}.clear_cache() after changing it. "
            "Silence with kiln.config.update('stale_value_warnings', False).", StaleValueWarning)
