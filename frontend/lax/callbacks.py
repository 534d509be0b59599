"""Host callbacks: Python functions a compiled program calls while it runs (JAX's ``jax.pure_callback``,
``jax.experimental.io_callback``, ``jax.debug.callback``, ``jax.debug.print``).

Three primitives, each with the callable as a parameter (a checked :class:`kiln.runtime.HostCallback` taking
and returning flat NumPy arrays):

- ``pure_callback``: results of declared shapes/dtypes, no effects (unused results let the passes drop it,
  identical calls may be merged, it is not differentiable; ``vmap_method`` says how it batches);
- ``io_callback``: results, with effects (kept even when its results are unused, never merged); ``ordered=True``
  runs it in program order with the other ordered callbacks;
- ``debug_callback``: no results, effects (``kiln.debug.callback`` and ``kiln.debug.print``); under ``grad``
  it sees primal values, under ``vmap`` it runs once per batch element.

Outside any trace the callable runs right away (the primitives' ``impl``), with the same checks and errors.
The emission rules are in ``lowering/rules/callbacks.py``, the derivative rules in ``ad/rules_callbacks.py``,
the batching rules in ``batching/rules_callbacks.py``.
"""
from __future__ import annotations

import copy
import functools
import logging
import string
import sys
from typing import Any, Callable

import numpy as np

from kiln import runtime

from ..core import dtypes, source_info, tree_util
from ..core.avals import ShapedArray
from ..core.errors import KilnError
from ..core.ir import Literal
from ..core.primitive import Primitive
from ..core.tracing import Tracer, abstractify, device_put_eager

__all__ = ["debug_callback", "debug_log", "debug_print", "effects_barrier", "inspect_array_sharding", "io_callback",
           "pure_callback"]

runtime.callbacks.register_wrapper_file(__file__)

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized")


# -- primitives ----------------------------------------------------------------------------------------------

def _debug_rule(*avals, callback, ordered: bool, partitioned: bool):
    return []


def _results_rule(*avals, callback, result_avals: tuple, **params):
    return list(result_avals)


def _eager(*args, callback: runtime.HostCallback, **params):
    """Outside any trace: run the callable now, on NumPy copies of the arguments (an ordered one after the
    launched programs' callbacks)."""
    if params.get("ordered"):
        runtime.effects_barrier()
    arrays = []
    for a in args:
        if isinstance(a, Literal):  # an IR's literal, as eval_ir passes them
            a = a.val
        value = np.array(a, dtype=abstractify(a).dtype)  # a private copy: Arrays, NumPy and Python scalars
        value.flags.writeable = False  # as inside a program, where the callable gets read-only views
        arrays.append(value)
    outs = runtime.run_on_host(callback, arrays)
    return [device_put_eager(o) for o in outs]


debug_callback_p = Primitive("debug_callback", _debug_rule, multiple_results=True)
pure_callback_p = Primitive("pure_callback", _results_rule, multiple_results=True)
io_callback_p = Primitive("io_callback", _results_rule, multiple_results=True)
for _p, _effects in ((debug_callback_p, True), (pure_callback_p, False), (io_callback_p, True)):
    _p.has_effects = _effects
    _p.impl = _eager


class CallbackUsageError(KilnError, TypeError):
    """A host callback was given an argument of the wrong type (a callable that is not, results without
    shapes)."""


class CallbackValueError(KilnError, ValueError):
    """A host callback was given a bad value (an unknown ``vmap_method``, 64-bit results without x64, bad
    arguments to ``kiln.debug.print``'s format)."""


# -- building the flat callables -------------------------------------------------------------------------------

def _name_of(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


def _check_callable(fn: Any, where: str) -> None:
    if not callable(fn):
        raise CallbackUsageError(f"kiln.{where}: the first argument must be callable, got an object of type "
                                 f"{type(fn).__name__}")


def _is_array_like(x: Any) -> bool:
    if isinstance(x, Tracer):
        return True
    try:
        abstractify(x)
    except TypeError:
        return False
    return True


def _split_args(args: tuple, kwargs: dict) -> tuple[Any, list, dict[int, Any]]:
    """Flatten ``(args, kwargs)``; array leaves are passed to the program, the others (strings, objects) kept
    aside and given back to the callable as they are."""
    leaves, treedef = tree_util.tree_flatten((args, kwargs))
    dynamic, static = [], {}
    for i, leaf in enumerate(leaves):
        if _is_array_like(leaf):
            dynamic.append(leaf)
        else:
            static[i] = leaf
    return treedef, dynamic, static


def _merge(treedef: Any, dynamic, static: dict[int, Any]) -> tuple[tuple, dict]:
    it = iter(dynamic)
    n = len(static) + len(dynamic)
    return tree_util.tree_unflatten(treedef, [static[i] if i in static else next(it) for i in range(n)])


def _canonicalize(dtype: np.dtype) -> np.dtype:
    return dtypes.canonicalize_dtype(dtype)


def _result_avals(result_shape_dtypes: Any, where: str) -> tuple[list[ShapedArray], Any]:
    leaves, treedef = tree_util.tree_flatten(result_shape_dtypes)
    avals = []
    for i, leaf in enumerate(leaves):
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        if shape is None or dtype is None:
            raise CallbackUsageError(f"kiln.{where}: result_shape_dtypes must be a pytree of objects with .shape and "
                                     f".dtype (kiln.ShapeDtypeStruct or arrays); leaf {i} is {leaf!r}")
        dtype = np.dtype(dtype)
        if dtypes.canonicalize_dtype(dtype) != dtype:
            raise CallbackValueError(f"kiln.{where}: result_shape_dtypes cannot specify 64-bit types ({dtype.name}) "
                                     "when enable_x64 is off; declare the 32-bit type or turn on "
                                     "kiln.config.update('enable_x64', True)")
        avals.append(ShapedArray(tuple(int(d) for d in shape), dtype))
    return avals, treedef


def _flat_results_callable(callback: Callable, in_tree: Any) -> Callable:
    def flat(*arrays):
        args, kwargs = tree_util.tree_unflatten(in_tree, arrays)
        return tree_util.tree_leaves(callback(*args, **kwargs))
    return flat


# -- user functions --------------------------------------------------------------------------------------------

def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any, sharding: Any = None,
                  vmap_method: str | None = None, **kwargs: Any) -> Any:
    """Call the pure Python function ``callback(*args, **kwargs)`` on the host, from inside transformed code
    (``jax.pure_callback``).

    ``callback`` gets NumPy arrays (read-only) and must return a pytree of arrays matching
    ``result_shape_dtypes`` (a pytree of :class:`kiln.ShapeDtypeStruct` or arrays); results are checked (a
    wrong count, shape or dtype raises :class:`kiln.errors.CallbackError` naming the callback). Being pure,
    the call may be dropped when its results are unused, merged with an identical one, or repeated.
    ``vmap_method`` (``"sequential"``, ``"sequential_unrolled"``, ``"expand_dims"``, ``"broadcast_all"``,
    ``"legacy_vectorized"``) says how it runs under :func:`kiln.vmap`; without one, ``vmap`` raises.
    Not differentiable: wrap it in :func:`kiln.custom_jvp` or :func:`kiln.custom_vjp`. ``sharding`` is
    accepted for JAX compatibility (a callback of a multi-device program runs on its first device).
    """
    _check_callable(callback, "pure_callback")
    if vmap_method not in VMAP_METHODS + (None,):
        raise CallbackValueError(f"kiln.pure_callback: vmap_method must be one of {list(VMAP_METHODS)} or None, "
                                 f"got {vmap_method!r}")
    flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
    avals, out_tree = _result_avals(result_shape_dtypes, "pure_callback")
    cb = runtime.HostCallback(_flat_results_callable(callback, in_tree), f"pure_callback({_name_of(callback)})",
                              [(a.shape, a.dtype) for a in avals], _canonicalize)
    outs = pure_callback_p.bind(*flat_args, callback=cb, result_avals=tuple(avals), vmap_method=vmap_method)
    return tree_util.tree_unflatten(out_tree, outs)


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any, sharding: Any = None,
                ordered: bool = False, **kwargs: Any) -> Any:
    """Call the impure Python function ``callback(*args, **kwargs)`` on the host, from inside transformed
    code (``jax.experimental.io_callback``).

    As :func:`pure_callback`, but the call is an effect: it runs every time the program reaches it, even when
    its results are unused. ``ordered=True`` runs it in program order with the other ordered callbacks (also
    across calls of compiled functions); ordered callbacks cannot be vmapped (as in JAX). Not
    differentiable. ``result_shape_dtypes`` may be None for a callback without results.
    """
    _check_callable(callback, "experimental.io_callback")
    flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
    avals, out_tree = _result_avals(result_shape_dtypes, "experimental.io_callback")
    cb = runtime.HostCallback(_flat_results_callable(callback, in_tree), f"io_callback({_name_of(callback)})",
                              [(a.shape, a.dtype) for a in avals], _canonicalize)
    outs = io_callback_p.bind(*flat_args, callback=cb, result_avals=tuple(avals), ordered=bool(ordered))
    return tree_util.tree_unflatten(out_tree, outs)


def _bind_debug(fn: Callable, name: str, args: tuple, kwargs: dict, ordered: bool, partitioned: bool) -> None:
    treedef, dynamic, static = _split_args(args, kwargs)

    def flat(*arrays):
        a, k = _merge(treedef, arrays, static)
        fn(*a, **k)

    cb = runtime.HostCallback(flat, name)
    debug_callback_p.bind(*dynamic, callback=cb, ordered=bool(ordered), partitioned=bool(partitioned))


def debug_callback(callback: Callable[..., None] | None = None, *args: Any, ordered: bool = False,
                   partitioned: bool = False, **kwargs: Any) -> Callable[..., None] | None:
    """Call ``callback(*args, **kwargs)`` on the host for its effect, every time the program runs it
    (``jax.debug.callback``): under ``jit`` at run time, under ``grad`` on primal values, under ``vmap`` once
    per batch element, outside any transformation right away. Array arguments arrive as NumPy arrays; other
    arguments (strings, objects) as they were given. Its return value is ignored.

    ``ordered=True`` runs it in program order with the other ordered callbacks. ``partitioned``: inside
    ``shard_map`` a callback runs on every device with its block; elsewhere in a multi-device program it
    runs once, with whole values. Two-call form: ``kiln.debug.callback(ordered=True)(f, *args)``.
    """
    if callback is None:
        if args or kwargs:
            raise CallbackUsageError(f"kiln.debug.callback received unexpected arguments in the two-call form: "
                                     f"args={args} kwargs={kwargs}")
        return lambda f, *a, **k: debug_callback(f, *a, ordered=ordered, partitioned=partitioned, **k)
    _check_callable(callback, "debug.callback")
    _bind_debug(callback, f"debug.callback({_name_of(callback)})", args, kwargs, ordered, partitioned)
    return None


class _FormatChecker(string.Formatter):
    """Checks a format string against its arguments without formatting anything."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused = [a for i, a in enumerate(args) if i not in used_args]
        unused_kw = [k for k in kwargs if k not in used_args]
        if unused:
            raise CallbackValueError(f"kiln.debug.print: unused positional arguments {unused}")
        if unused_kw:
            raise CallbackValueError(f"kiln.debug.print: unused keyword arguments {unused_kw}. You may be passing an "
                             "f-string (f\"{x}\") to kiln.debug.print: pass a plain format string and the values as "
                             "arguments instead, e.g. kiln.debug.print(\"x = {x}\", x=x)")


def _print(fmt: str, has_placeholders: bool, printoptions: dict, record: logging.LogRecord | None, *args,
           **kwargs) -> None:
    # 0-d values as NumPy scalars: they format as JAX's 0-d arrays do (``{:.3f}`` works, float32 prints short).
    args = tuple(a[()] if isinstance(a, np.ndarray) and a.ndim == 0 else a for a in args)
    kwargs = {k: a[()] if isinstance(a, np.ndarray) and a.ndim == 0 else a for k, a in kwargs.items()}
    if has_placeholders:
        with np.printoptions(**printoptions):
            msg = fmt.format(*args, **kwargs)
    else:
        msg = " ".join((fmt, *(str(a) for a in args)))
    if record is None:
        sys.stdout.write(msg + "\n")
    else:  # kiln.debug.log: a copy of the record made where it was traced, with this run's message
        record = copy.copy(record)
        record.msg = msg
        _debug_logger.handle(record)


# kiln.debug.log's records: INFO, from the user's line that called it.
_debug_logger = logging.getLogger("kiln.debug")


def debug_print(fmt: str | None = None, *args: Any, ordered: bool = False, partitioned: bool = False,
                skip_format_check: bool = False, _use_logging: bool = False,
                **kwargs: Any) -> Callable[..., None] | None:
    """Print ``fmt.format(*args, **kwargs)`` every time the program runs this line (``jax.debug.print``):
    the values are NumPy arrays at run time (under ``jit``, ``vmap``, ``grad``, loops and branches),
    formatted with the NumPy print options in force where it was traced. Write ``kiln.debug.print("x = {x}",
    x=x)``, not an f-string (that would format the traced value once, at trace time). A format string
    without placeholders is printed followed by the arguments. ``ordered=True``: in program order with the
    other ordered callbacks. Two-call form: ``kiln.debug.print(ordered=True)("x = {}", x)``.
    """
    if fmt is None:
        if args or kwargs:
            raise CallbackUsageError(f"kiln.debug.print received unexpected arguments in the two-call form: "
                                     f"args={args} kwargs={kwargs}")
        return lambda f, *a, **k: debug_print(f, *a, ordered=ordered, partitioned=partitioned,
                                              skip_format_check=skip_format_check, _use_logging=_use_logging, **k)
    what = "debug.log" if _use_logging else "debug.print"
    if not isinstance(fmt, str):
        raise CallbackUsageError(f"kiln.{what}: the format must be a string, got {type(fmt).__name__}")
    if not skip_format_check:
        _FormatChecker().format(fmt, *args, **kwargs)
    has_placeholders = bool(fmt) and next(iter(string.Formatter().parse(fmt)))[1] is not None
    record = _log_record() if _use_logging else None
    printer = functools.partial(_print, fmt, has_placeholders, dict(np.get_printoptions()), record)
    short = fmt if len(fmt) <= 40 else fmt[:37] + "..."
    _bind_debug(printer, f"{what}({short!r})", args, kwargs, ordered, partitioned)
    return None


def _log_record() -> logging.LogRecord:
    """An INFO record of the ``kiln.debug`` logger from the user's line (its message is set at each run)."""
    where = source_info.user_frame_info(2)
    file, line = (where.file, where.line) if where is not None else ("(unknown file)", 0)
    return _debug_logger.makeRecord(_debug_logger.name, logging.INFO, file, line, "", (), None)


debug_log = functools.partial(debug_print, _use_logging=True)
debug_log.__doc__ = """``kiln.debug.print``, but each message goes to the ``kiln.debug`` logger (level INFO, from the
line that called it) instead of standard output (``jax.debug.log``)."""


def effects_barrier() -> None:
    """Wait until the host callbacks of every launched computation have run (``jax.effects_barrier``)."""
    runtime.effects_barrier()


# -- the layout of a value inside a program (jax.debug.inspect_array_sharding) ------------------------------------

class ShardingInspector:
    """The parameter of an ``inspect_sharding`` equation: the user's callable, called with the value's sharding
    once it is known. Eagerly that is the array's own; under ``jit`` the driver reports it when the program is
    lowered (one device, or inside ``shard_map``) or compiled (partitioned over a mesh: the layout XLA's
    partitioner chose, read through a :class:`kiln.runtime.ShardingProbe`)."""

    call_target = runtime.sharding_probe.CALL_TARGET

    def __init__(self, callback: Callable[[Any], Any]) -> None:
        self.callback = callback

    def probe(self) -> runtime.ShardingProbe:
        return runtime.ShardingProbe()

    def report(self, sharding: Any) -> None:
        self.callback(sharding)

    def __repr__(self) -> str:
        return f"ShardingInspector({_name_of(self.callback)})"


def _inspect_eager(value, *, inspector: ShardingInspector):
    sharding = getattr(value, "sharding", None)
    if sharding is not None:  # (an IR literal, evaluated eagerly, lives on no device)
        inspector.report(sharding)
    return []


inspect_sharding_p = Primitive("inspect_sharding", lambda aval, *, inspector: [], multiple_results=True)
inspect_sharding_p.has_effects = True  # (it has no results, and must not be dropped)
inspect_sharding_p.impl = _inspect_eager


def inspect_array_sharding(value: Any, *, callback: Callable[[Any], Any]) -> None:
    """Call ``callback`` with the sharding of each array of the pytree ``value`` (``jax.debug.inspect_array_sharding``).

    On a concrete array it is called right away with ``x.sharding``. Inside ``kiln.jit`` it is called when the
    sharding is known: when the function is lowered for one device (a ``SingleDeviceSharding``) or inside
    ``shard_map`` (``NamedSharding(mesh, P())``), and when it is compiled for a mesh (the ``NamedSharding``
    XLA's partitioner chose for the value). A function already compiled is not compiled again, so a later call
    does not call it again (as in JAX)."""
    _check_callable(callback, "debug.inspect_array_sharding")
    inspector = ShardingInspector(callback)
    for leaf in tree_util.tree_leaves(value):
        if not isinstance(leaf, Tracer) and getattr(leaf, "sharding", None) is None:
            raise CallbackUsageError(f"kiln.debug.inspect_array_sharding: expected kiln arrays, got a "
                                     f"{type(leaf).__name__}; put it on a device first (kiln.device_put)")
        inspect_sharding_p.bind(leaf, inspector=inspector)
