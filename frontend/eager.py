"""Eager execution: a primitive applied outside any trace runs as a cached one-equation program."""
from __future__ import annotations

from typing import Any, Sequence

from . import dispatch
from .array import Array
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


def apply_eagerly(prim, args: Sequence[Any], params: dict) -> Any:
    """Run ``prim`` on concrete arguments now and return kiln Arrays."""
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
    return outs if prim.multiple_results else outs[0]


def clear_cache() -> None:
    _cache.clear()
