"""``kiln.checking_leaks()`` / the ``check_tracer_leaks`` flag (JAX's): after a trace ends, a traced value
still referenced from outside (a global list it was appended to, an object attribute, a closure) is an
error naming who holds it. Off by default: the check runs the garbage collector after every trace."""
from __future__ import annotations

import gc
import sys
import types
from typing import Any, Iterable

from .errors import UnexpectedTracerError
from .ir import IR, ClosedIR, Eqn


def _global_name(holder: Any) -> str | None:
    for name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            if value is holder:
                return f"the global variable {key!r} of module {name}"
    return None


def _describe(holder: Any) -> str:
    """Who ``holder`` (an object referencing a leaked tracer) is, in the user's terms."""
    if isinstance(holder, types.CellType):
        return "a variable of an enclosing function (a closure cell)"
    named = _global_name(holder)
    attrs = [k for k, v in getattr(holder, "__dict__", {}).items() if _holds(v)]
    if attrs:  # an object whose attribute holds it
        where = f" ({named})" if named is not None else ""
        return f"attribute {attrs[0]!r} of a {type(holder).__name__} object{where}"
    if named is not None:
        return f"{named} (a {type(holder).__name__})"
    if isinstance(holder, dict):
        for owner in gc.get_referrers(holder):
            if getattr(owner, "__dict__", None) is holder:
                attrs = [k for k, v in holder.items() if _holds(v)]
                return f"attribute {attrs[0]!r} of a {type(owner).__name__} object" if attrs else \
                    f"the attributes of a {type(owner).__name__} object"
            if isinstance(owner, types.ModuleType):
                break
        if holder is vars(sys.modules.get("__main__", sys)):
            return "a global variable of __main__"
    return f"a {type(holder).__name__} object"


def _holds(value: Any) -> bool:
    from .tracing import Tracer  # the tracer type (tracing imports this module)
    return isinstance(value, Tracer)


def _internal(holder: Any, ignored: set[int], depth: int = 3) -> bool:
    """Whether ``holder`` belongs to kiln's own IR objects (a sub-IR's constants captured from the enclosing
    trace), looking ``depth`` referrers up: those are kiln's bookkeeping, not a user's leak."""
    if isinstance(holder, (IR, ClosedIR, Eqn)):
        return True
    if depth == 0:
        return False
    referrers = gc.get_referrers(holder)
    ignored.add(id(referrers))
    return any(_internal(r, ignored, depth - 1) for r in referrers
               if id(r) not in ignored and not isinstance(r, types.FrameType))


def check(builder: Any, fun_name: str, ignore: Iterable[Any]) -> None:
    """Raise when a tracer of ``builder``'s trace is referenced by anything but the objects in ``ignore``
    (the trace's own lists of inputs and outputs), frames and kiln's IR objects."""
    from .tracing import Tracer  # tracing imports this module
    ignored = {id(x) for x in ignore}
    gc.collect()  # garbage cycles (an exception's traceback, say) may hold tracers without leaking them
    referrers = gc.get_referrers(builder)
    ignored.add(id(referrers))
    for candidate in referrers:
        if not isinstance(candidate, Tracer):
            continue
        holders = gc.get_referrers(candidate)
        ignored.add(id(holders))
        holders = [h for h in holders if id(h) not in ignored and not isinstance(h, types.FrameType)]
        holders = [h for h in holders if not _internal(h, ignored)]
        if holders:
            raise UnexpectedTracerError(
                f"kiln.check_tracer_leaks: a traced value {candidate.aval.str_short()} created while tracing "
                f"{fun_name} is still referenced after that trace ended, by {_describe(holders[0])}. A traced "
                "value is only valid inside its trace (using it later raises an UnexpectedTracerError): return "
                "it from the function instead of storing it, or store a concrete value outside the trace.")
