"""Why a jitted function traces again: the explanation of one cache miss (``explain_cache_misses``), the
warning when one function keeps retracing (on by default: ``retrace_warning_limit``), and ``log_compiles``.

Nothing here runs on a cache hit: these are called on the Python path of a miss only.
"""
from __future__ import annotations

import functools
import logging
import time
import types
import warnings
import weakref
from typing import Any, Callable

from ..core import monitoring, source_info
from ..core.config import config

logger = logging.getLogger("kiln")

# The parts of a jit cache key, in order: (treedef, avals, static arguments, config flags (and the XLA metadata in
# effect: config.trace_key), device).
KEY_PARTS = ("argument structure", "argument shapes/dtypes", "static arguments", "config flags (or XLA metadata)",
             "device", "Ref arguments", "varying mesh axes of the arguments (in a shard_map body)")

def unwrap_function(fun: Any) -> Any:
    """The plain function inside partials and bound methods."""
    while True:
        if isinstance(fun, functools.partial):
            fun = fun.func
        elif isinstance(fun, types.MethodType):
            fun = fun.__func__
        else:
            return fun


def is_kiln_function(fun: Any) -> bool:
    """Whether ``fun`` is kiln's own (its retraces are the caller's shapes, not a trap in kiln's code)."""
    code = getattr(unwrap_function(fun), "__code__", None)
    return code is None or source_info.is_internal(code.co_filename)


def warn_at_user(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn with the location of the innermost caller outside kiln."""
    where = source_info.user_frame_info()
    filename, lineno = (where.file, where.line) if where is not None else ("<unknown>", 0)
    warnings.warn_explicit(message, category, filename, lineno)


def explain_miss(name: str, old: tuple, new: tuple) -> None:
    """Warn which part of the cache key changed between the last call of ``name`` and this one."""
    changed = [p for p, a, b in zip(KEY_PARTS, old, new) if a != b]
    detail = ""
    if old[1] != new[1] and len(old[1]) == len(new[1]):
        diffs = [f"{a.str_short()} -> {b.str_short()}" for a, b in zip(old[1], new[1]) if a != b]
        detail = " (" + ", ".join(diffs) + ")"
    warn_at_user(f"kiln.jit({name}): cache miss, retracing because the {' and '.join(changed)} changed{detail}")



def explain_first_trace(fun: Any, name: str) -> None:
    """``explain_cache_misses`` on the first trace of a user's function object (as JAX's "never seen function"),
    saying when another object made from the same code was traced before: a function jitted anew per call."""
    code = getattr(unwrap_function(fun), "__code__", None)
    where = f", defined at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
    message = f"kiln.jit({name}): cache miss, tracing for the first time (a function never called before{where})"
    seen = _fresh_functions.get(code) if code is not None else None
    if seen is not None and seen[0]() is not fun:
        message += ("; another function made from the same code was traced before: if the function is created and "
                    "jitted anew for every call, no compiled program is reused (create and jit it once)")
    warn_at_user(message)

class TraceHistory:
    """The signatures one function (under one set of jit options) was traced for, kept until the retrace
    warning has been given."""

    __slots__ = ("keys", "arg_names", "warned")

    def __init__(self) -> None:
        self.keys: list[tuple] = []
        self.arg_names: list[list[str]] = []
        self.warned = False

    def note(self, fun: Any, key: tuple, arg_names: list[str], name: str, static_name: Callable[[Any], str]) -> None:
        """Record one more trace; past ``config.retrace_warning_limit`` traces, warn (once) what changed."""
        limit = config.retrace_warning_limit
        if self.warned or limit <= 0:
            return
        if not self.keys and is_kiln_function(fun):
            self.warned = True  # never for kiln's own functions
            return
        self.keys.append(key)
        self.arg_names.append(arg_names)
        if len(self.keys) > limit:
            self.warned = True
            warn_at_user(_retrace_message(name, self.keys, self.arg_names, static_name), RetraceWarning)
            self.keys, self.arg_names = [], []


class RetraceWarning(UserWarning):
    """A jitted function was traced (and compiled) again many times."""


def _distinct(values: list) -> list:
    out: list = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _shown(values: list, show: Callable[[Any], str], most: int = 6) -> str:
    text = ", ".join(show(v) for v in values[:most])
    return text + (f", ... ({len(values)} in all)" if len(values) > most else "")


def _retrace_message(name: str, keys: list[tuple], arg_names: list[list[str]],
                     static_name: Callable[[Any], str]) -> str:
    lines = [f"kiln.jit({name}) has been traced and compiled {len(keys)} times, once per new signature; each "
             "retrace costs a full compile. What changed between the calls:"]
    structures = _distinct([k[0] for k in keys])
    if len(structures) > 1:
        lines.append(f"  - the pytree structure of the arguments ({len(structures)} different ones): keep the "
                     "same containers (dict keys, list lengths, None vs array) from call to call")
    same_structure = [(k, n) for k, n in zip(keys, arg_names) if k[0] == keys[-1][0]]
    leaf_avals = list(zip(*[k[1] for k, _ in same_structure])) if same_structure else []
    names = same_structure[-1][1] if same_structure else []
    for i, avals in enumerate(leaf_avals):
        distinct = _distinct(list(avals))
        if len(distinct) < 2:
            continue
        what = "dtypes" if len({a.shape for a in distinct}) == 1 else "shapes"
        arg = names[i] if i < len(names) else f"argument {i}"
        hint = ("cast it to one dtype before the call" if what == "dtypes" else
                "pad it to a few fixed sizes (buckets), or keep the size fixed and pass the varying count as an "
                "array argument")
        lines.append(f"  - argument {arg}: {_shown(distinct, lambda a: a.str_short())}: {hint}")
    statics = [dict(k[2]) for k in keys]
    for where in _distinct([w for s in statics for w in s]):
        distinct = _distinct([s.get(where) for s in statics])
        if len(distinct) > 1:
            lines.append(f"  - static argument {static_name(where)}: "
                         f"{_shown(distinct, lambda v: repr(getattr(v, 'value', v))[:40])}: every value compiles "
                         "its own program; if it is a number used in arithmetic, pass it as a normal (traced) "
                         "argument instead of a static one")
    if len(_distinct([k[3] for k in keys])) > 1:
        lines.append("  - kiln.config flags that change programs (e.g. enable_x64), or the XLA metadata in effect "
                     "(set_xla_metadata), were switched between calls")
    if len(_distinct([k[4] for k in keys])) > 1:
        lines.append("  - the device the call runs on: place the arguments on one device (kiln.device_put)")
    lines.append("Set kiln.config.update('retrace_warning_limit', 0) to silence this warning, or "
                 "kiln.config.update('explain_cache_misses', True) to see every miss.")
    return "\n".join(lines)


# code object -> [a weak reference to the last function object traced with it, how many in a row were new].
_fresh_functions: dict[Any, list] = {}


def note_fresh_function(fun: Any, name: str) -> None:
    """Warn (once per code object) when a function is jitted and traced again as a new function object each
    time, e.g. ``kiln.jit(lambda x: ...)(x)`` inside a loop: each new object starts with an empty cache. Counted
    in a row: a trace of an object seen before starts the count again."""
    limit = config.retrace_warning_limit
    code = getattr(unwrap_function(fun), "__code__", None)
    if code is None or limit <= 0 or is_kiln_function(fun):
        return
    try:
        ref = weakref.ref(fun)
    except TypeError:
        return
    seen = _fresh_functions.get(code)
    if seen is None:
        if len(_fresh_functions) > 4096:  # bounded: this keeps code objects alive
            _fresh_functions.clear()
        _fresh_functions[code] = [ref, 1]
        return
    previous = seen[0]()
    if previous is fun or seen[1] < 0:
        return
    seen[0] = ref
    seen[1] += 1
    if seen[1] > limit:
        seen[1] = -1  # warned
        warn_at_user(
            f"kiln.jit({name}) (defined at {code.co_filename}:{code.co_firstlineno}) has been traced and compiled "
            f"for {limit + 1} different function objects in a row made from the same code. If the function (a "
            "lambda, a nested def or a functools.partial) is created and jitted anew for every call, no compiled "
            "program is ever reused: create it and jit it once, outside the loop, and pass the changing values as "
            "arguments. (If these are meant to be different functions, e.g. one per setting of a sweep, this "
            "warning can be ignored.)", RetraceWarning)


def _log_level() -> int:
    """``log_compiles`` logs at WARNING; without it the same lines go to DEBUG (as JAX's)."""
    return logging.WARNING if config.log_compiles else logging.DEBUG


def log_trace(name: str, seconds: float) -> None:
    """One line per trace on the ``kiln`` logger (see :func:`_log_level`); and the trace's duration to
    kiln.monitoring's listeners, under JAX's event name."""
    logger.log(_log_level(), "Finished tracing + transforming %s for jit in %.6f sec", name, seconds)
    _report(monitoring.TRACE_EVENT, name, seconds)


def log_lowering(what: str, seconds: float) -> None:
    """One line per lowering of a traced program to StableHLO (JAX's "jaxpr to MLIR module conversion")."""
    logger.log(_log_level(), "Finished lowering %s to StableHLO in %.6f sec", what, seconds)
    _report(monitoring.LOWERING_EVENT, what, seconds)


def log_compile(what: str, seconds: float) -> None:
    """One line per XLA compile of a lowered program; and the compile's duration to kiln.monitoring's
    listeners."""
    logger.log(_log_level(), "Finished XLA compilation of %s in %.6f sec", what, seconds)
    _report(monitoring.BACKEND_COMPILE_EVENT, what, seconds)


def _report(event: str, fun_name: str, seconds: float) -> None:
    if monitoring.has_listeners():
        end = time.time()
        monitoring.record_duration(event, end - seconds, end, fun_name=fun_name)
