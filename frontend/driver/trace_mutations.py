"""Attributes a jitted method rebinds while it is traced (JAX's "stateful computations" trap).

``kiln.jit(counter.count)`` where ``count`` does ``self.n += 1`` runs that line once, while tracing; later calls
run the compiled program, in which ``self.n`` was a constant, so the counter never moves again (JAX's docs
show it printing 1, 1, 1). JAX says nothing; kiln compares the attributes of the object a jitted function is
bound to (and of the callable object itself, and of its static arguments) before and after each trace, and
warns once per attribute that the trace rebound. Only rebinding is seen (``self.n = ...``), not changes inside
an attribute's value (``self.log.append(...)``).
"""
from __future__ import annotations

import functools
import types
from typing import Any

from ..core.tracing import Tracer
from .retrace import warn_at_user
from .stale import _MISSING, StaleValueWarning


class TraceSideEffectWarning(StaleValueWarning):
    """A jitted function changed an object's attribute while it was traced: the change does not repeat."""


def watched_objects(fun: Any, static_values: tuple = ()) -> list[Any]:
    """The objects whose attributes a trace of ``fun`` may rebind: the instance a bound method belongs to, a
    callable object itself, and static arguments that are plain objects (with a ``__dict__``)."""
    out = []
    while True:
        if isinstance(fun, functools.partial):
            static_values = (*static_values, *fun.args, *fun.keywords.values())
            fun = fun.func
        elif isinstance(fun, types.MethodType):
            out.append(fun.__self__)
            fun = fun.__func__
        else:
            break
    if not isinstance(fun, (types.FunctionType, types.BuiltinFunctionType, type)):
        out.append(fun)  # a callable object: its __call__ sees it as self
    out.extend(static_values)
    return [o for o in out if _plain_object(o)]


def _plain_object(obj: Any) -> bool:
    # (kiln's own objects are left out: a jitted function passed as a static argument keeps its cache bookkeeping
    # in attributes, which a call inside the trace rebinds)
    return (isinstance(getattr(obj, "__dict__", None), dict)
            and not isinstance(obj, (type, types.ModuleType, types.FunctionType, types.MethodType))
            and not type(obj).__module__.startswith("kiln."))


def snapshot(objects: list[Any]) -> list[tuple[Any, dict]]:
    """Each object with a shallow copy of its attributes."""
    return [(o, dict(vars(o))) for o in objects]


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is type(b) and type(a) in (int, float, complex, str, bool):
        return a == b  # an equal number that is another object: nothing changed
    return False



def warn_rebound(name: str, before: list[tuple[Any, dict]], warned: set) -> None:
    """Warn once per attribute that changed since ``before`` (taken just before the trace of ``name``)."""
    for obj, old in before:
        new = vars(obj)
        for attr in sorted(set(old) | set(new), key=str):
            was, now = old.get(attr, _MISSING), new.get(attr, _MISSING)
            key = f"rebound {id(obj)}.{attr}"  # (not stale.Baked.key's: a later change still warns as stale)
            if _same(was, now) or key in warned:
                continue
            warned.add(key)
            warn_at_user(_message(name, type(obj).__name__, attr, was, now), TraceSideEffectWarning)


def _message(name: str, owner: str, attr: str, was: Any, now: Any) -> str:
    if now is _MISSING:
        change = "deleted it"
    elif was is _MISSING:
        change = f"set it to {_show(now)}"
    else:
        change = f"changed it from {_show(was)} to {_show(now)}"
    escaped = (" The new value is a traced value, which is invalid outside the trace (a leaked tracer)."
               if isinstance(now, Tracer) else "")
    return (f"kiln.jit({name}): while it was traced, {name} rebound the attribute {attr!r} of an object of type "
            f"{owner} (it {change}).{escaped} A jitted function's Python code runs only when it is traced: later "
            "calls run the compiled program, so this change will not happen again, and the attribute's value at trace "
            "time is baked into the program (JAX behaves the same, silently). Pass the state in as an argument "
            "and return the new state instead (state, out = f(state, ...)). Silence with "
            "kiln.config.update('stale_value_warnings', False).")


def _show(value: Any) -> str:
    if isinstance(value, Tracer):
        return f"a traced {value.aval.str_short()}"
    return repr(value)[:60]
