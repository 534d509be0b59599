"""Eager execution: a primitive applied outside any trace runs as a cached one-equation program."""
from __future__ import annotations

import functools
from typing import Any, Sequence

from kiln.runtime import fastpath

from . import dispatch
from .array import Array
from .errors import KilnError
from .ir import IR, Eqn, Var
from .tracing import abstractify

# (primitive, parameters, argument avals, device) -> Compiled. Bounded: parameters that hold sub-IRs
# (a scan of a fresh lambda, say) make new keys on every call, and each entry keeps an executable alive.
_cache: dict[Any, dispatch.Compiled] = {}
_CACHE_SIZE = 4096


def _params_key(params: dict) -> Any:
    if not params:
        return ()
    return tuple(sorted(params.items()))


def one_equation_ir(prim, in_avals, params) -> IR:
    invars = [Var(a) for a in in_avals]
    outvars = [Var(a) for a in prim.out_avals(list(in_avals), params)]
    return IR([], invars, [Eqn(prim, list(invars), outvars, params)], list(outvars))


# (primitive, parameters) -> jaxlib C++ dispatch function (see kiln.runtime.fastpath); bounded like _cache.
_cpp: dict[Any, Any] = {}


def apply_eagerly(prim, args: Sequence[Any], params: dict) -> Any:
    """Run ``prim`` on concrete arguments now and return kiln Arrays.

    Repeated calls with kiln arrays of the same types go through jaxlib's C++ dispatch; anything else
    (host values, literals, a first call) through :func:`_apply`.
    """
    if fastpath.available():
        try:
            key = (prim, _params_key(params))
            fn = _cpp.get(key)
        except TypeError:  # unhashable parameters: no caching at all
            return _apply(prim, args, params)[0]
        if fn is None:
            if len(_cpp) >= _CACHE_SIZE:
                del _cpp[next(iter(_cpp))]
            fn = _cpp[key] = fastpath.make_function(prim.name, functools.partial(_cpp_miss, prim, params), (), ())
        try:
            return fn(*args)
        except KilnError:
            raise
        except Exception:  # a jaxlib error from the C++ path: the Python path explains it
            pass
    return _apply(prim, args, params)[0]


def _cpp_miss(prim, params: dict, *args):
    out, compiled, committed = _apply(prim, args, params)
    device = compiled.device
    if not all(type(a) is Array and a._device is device for a in args):
        return out, None
    _, out_treedef = fastpath.flatten(out)
    return out, fastpath.record(compiled.executable, out_treedef, (), [True] * len(args))


def _apply(prim, args: Sequence[Any], params: dict) -> tuple[Any, dispatch.Compiled, bool]:
    """The Python path: returns the result, the executable that computed it, and its committed flag."""
    avals = tuple([a.aval if type(a) is Array else abstractify(a) for a in args])
    try:
        device, committed = dispatch.pick_device(args)
    except dispatch.DeviceMismatchError:
        raise dispatch.device_mismatch(args, None, f"kiln.lax.{prim.name}") from None
    key = (prim, _params_key(params), avals, device)
    compiled = _cache.get(key)
    if compiled is None:
        ir = one_equation_ir(prim, avals, params)  # runs the shape rule: bad input fails here
        # keep_unused: the executable takes every argument, so dispatch needs no filtering.
        compiled = dispatch.compile_ir(ir, device, keep_unused=True)
        if len(_cache) >= _CACHE_SIZE:
            del _cache[next(iter(_cache))]  # the oldest entry
        _cache[key] = compiled
    outs = compiled.run([a._buf if type(a) is Array and a._device is device else dispatch.to_buffer(a, device)
                         for a in args], committed)
    return (outs if prim.multiple_results else outs[0]), compiled, committed


def clear_cache() -> None:
    _cache.clear()
    _cpp.clear()
