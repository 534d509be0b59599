"""jaxlib's C++ jit dispatch (``_jax.pjit``) behind kiln's own interface (NOTES §2.3).

After the first call of a signature, later calls with the same argument structure, shapes, dtypes
and placements are flattened, checked, launched and unflattened in C++: kiln arrays are registered
in a private pytree registry as nodes whose one child is their device buffer, so the C++ sees
plain jaxlib arrays.

All of this is private jaxlib API and process-global state that jax also sets, so it is used
only when it can be set up safely (jax not imported, the expected entry points present, not turned
off with ``KILN_CPP_DISPATCH=0``); otherwise :func:`available` is False and kiln dispatches in
Python.
"""
from __future__ import annotations

import collections
import os
import threading
import weakref
from typing import Any, Callable, Sequence

from ._jaxlib import _jax, jax_loaded

_lock = threading.Lock()
_state: dict[str, Any] = {}
_functions: "weakref.WeakSet[Any]" = weakref.WeakSet()


def _setup() -> bool:
    """Set the three process-global jit states and create the registry (once)."""
    if "ok" in _state:
        return _state["ok"]
    with _lock:
        if "ok" in _state:
            return _state["ok"]
        ok = False
        try:
            if os.environ.get("KILN_CPP_DISPATCH", "1") == "0" or jax_loaded():
                raise RuntimeError("disabled")  # jax owns these states when it is loaded (NOTES §0.2)
            jit = _jax.jax_jit
            x64 = _jax.config.Config("kiln_enable_x64", False, include_in_jit_key=True,
                                     include_in_trace_context=True)
            jit.set_enable_x64_state(x64)
            jit.set_disable_jit_state(_jax.config.Config("kiln_disable_jit", False, include_in_trace_context=True))
            jit.set_post_hook_state(_jax.config.Config("kiln_post_hook", None))
            registry = _jax.pytree.PyTreeRegistry(enable_none=True, enable_tuple=True, enable_namedtuple=True,
                                                  enable_list=True, enable_dict=True)
            _state.update(x64=x64, registry=registry)
            ok = True
        except Exception:  # any missing or changed entry point: use the Python path
            ok = False
        _state["ok"] = ok
        return ok


def available() -> bool:
    """Whether the C++ dispatch path can be used in this process."""
    return _setup()


def register_node(cls: type, to_iterable: Callable, from_iterable: Callable) -> None:
    """Mirror a pytree node type into the C++ registry (``to_iterable(x) -> (children, aux)``)."""
    if _setup():
        try:
            _state["registry"].register_node(cls, to_iterable, from_iterable)
        except ValueError:
            pass  # already registered


def set_x64(enabled: bool) -> None:
    """Keep the C++ dtype canonicalisation of NumPy/Python arguments in step with kiln's flag, and drop
    the compiled fast paths (called whenever a flag that changes programs changes)."""
    if _setup():
        _state["x64"].set_global(bool(enabled))
        clear_all()


def clear_all() -> None:
    """Drop every compiled fast path (after a config change that alters programs)."""
    for f in list(_functions):
        f._clear_cache()


def flatten(value: Any) -> tuple[list, Any]:
    """Flatten with the C++ registry (the treedef that the fast path unflattens outputs with)."""
    return _state["registry"].flatten(value)


def container_flattener() -> Callable[[Any], tuple[list, Any]] | None:
    """jaxlib's C++ flatten with only Python's containers as nodes (tuple, list, dict by sorted keys,
    namedtuple, None), everything else a leaf: ``flatten(value) -> (leaves, treedef)``, whose treedefs
    compare with ``==`` and rebuild with ``treedef.unflatten(leaves)``. None when this jaxlib lacks it.

    A registry of its own, not process-global state: it is there whether jax is loaded or not."""
    if "containers" not in _state:
        try:
            registry = _jax.pytree.PyTreeRegistry(enable_none=True, enable_tuple=True, enable_namedtuple=True,
                                                  enable_list=True, enable_dict=True)
            flatten_ = registry.flatten
        except Exception:  # a changed entry point: the callers keep their other paths
            flatten_ = None
        _state["containers"] = flatten_
    return _state["containers"]


# The record jaxlib's C++ reads positionally: these nine fields, in this order, have been stable across
# the jaxlib releases kiln supports (0.10.x, 0.11.x).
_FastPathData = collections.namedtuple("_FastPathData", [
    "xla_executable", "out_pytree_def", "in_shardings", "out_shardings", "out_avals", "out_committed",
    "kept_var_bitvec", "in_device_local_layouts", "const_args"])


def record(executable: Any, out_treedef: Any, const_args: Sequence[Any], kept_args: Sequence[bool],
           arg_buffers: Sequence[Any] | None = None) -> Any:
    """What the C++ needs to run one signature of ``executable`` (a :class:`~kiln.runtime.Executable`)
    without Python.

    ``const_args`` are buffers the executable takes ahead of the call's arguments (every one of them
    is passed); ``kept_args`` says, for each flattened argument, whether the executable takes it.
    The C++ prepends ``const_args`` to the arguments, filters both with one kept-bit vector, and reads
    one input sharding and one input layout per *kept* position: those two lists must be exactly that
    long (shorter lists are read past their end, which crashed the process).

    ``arg_buffers``: for a program over a mesh (a :class:`~kiln.runtime.SpmdExecutable`), the buffer of each
    *kept* argument of the call just run; later calls' arguments must have their layouts (the C++ passes them
    on as they are: the caller checks they are laid out as the program takes them). The outputs get the
    program's output layouts. None for a one-device program: everything on its device.
    """
    kept = [True] * len(const_args) + [bool(k) for k in kept_args]
    n_in = sum(kept)
    out_avals = list(executable.out_avals)
    n_out = len(out_avals)
    if arg_buffers is None:
        sharding = executable.device._sharding
        in_shardings, out_shardings = [sharding] * n_in, [sharding] * n_out
    else:
        in_shardings = [b._sharding for b in (*const_args, *arg_buffers)]
        out_shardings = list(executable.out_shardings)
        if len(in_shardings) != n_in or len(out_shardings) != n_out:
            raise ValueError(f"fastpath.record: {len(in_shardings)} input and {len(out_shardings)} output layouts "
                             f"for {n_in} inputs and {n_out} outputs")
    return _FastPathData(executable._exe, out_treedef, in_shardings, out_shardings, out_avals,
                         [True] * n_out, kept, [None] * n_in, list(const_args))


_MISS_MARK = "_kiln_raised_in_miss"


def _mark_raised_in_miss(e: BaseException) -> None:
    try:
        setattr(e, _MISS_MARK, True)
    except Exception:  # an exception type without attributes: it is then treated as a C++ error
        pass


def raised_in_miss(e: BaseException) -> bool:
    """Whether ``e`` came out of the Python miss of a C++ jitted callable (tracing, compiling, the
    user's function), rather than from the C++ dispatch itself. Such an error must propagate as it
    is: running the Python path again would run the failing code a second time."""
    return getattr(e, _MISS_MARK, False)


def make_function(name: str, cache_miss: Callable, static_argnums: Sequence[int],
                  static_argnames: Sequence[str], capacity: int = 256) -> Any:
    """A C++ jitted callable. ``cache_miss(*args, **kwargs)`` returns ``(outputs, FastPath | None)``;
    None keeps that signature on the Python path. It keeps at most ``capacity`` signatures (and their
    executables)."""
    def miss(*args, **kwargs):
        try:
            out, fast = cache_miss(*args, **kwargs)
        except BaseException as e:
            _mark_raised_in_miss(e)
            raise
        return out, fast, False

    def shard_arg_fallback(x, sharding, layout):
        # Only reached for argument kinds the C++ cannot place itself: refuse, so the call goes back to
        # the Python path through cache_miss (the C++ treats the exception as a miss).
        raise TypeError(f"kiln fast path: cannot place argument of type {type(x).__name__}")

    f = _jax.pjit(name, None, miss, list(static_argnums), list(static_argnames), object(), _state["registry"],
                  shard_arg_fallback, _jax.PjitFunctionCache(capacity=capacity))
    _functions.add(f)
    return f
