"""Eager execution: a primitive applied outside any trace runs as a cached one-equation program."""
from __future__ import annotations

import functools
import weakref
from typing import Any, Sequence

from kiln.runtime import fastpath

from kiln import runtime

from ..core import caches, tracing
from ..core.config import config, no_execution_error, no_tracing_error
from ..core.errors import KilnError
from ..core.ir import IR, Eqn, Literal, Var
from ..core.tracing import abstractify
from . import dispatch, nan_check, spmd
from .array import Array, held_on
from .direct_call import DirectCall, LaunchFailed, direct_call

# Bytes of executables the eager caches may keep (least recently used go first).
EAGER_CACHE_BYTES = 128 << 20


def _evicted(key: Any, compiled: dispatch.CompiledIR) -> None:
    # The C++ fast paths of this (primitive, parameters) hold the executable too: let them go.
    fn = _cpp.get(key[:2])
    if fn is not None:
        fn._clear_cache()
    _direct.pop(key[:2], None)


# (primitive, parameters, argument avals, device, flags) -> CompiledIR, bounded in bytes: parameters that hold
# sub-IRs (a scan of a fresh lambda, say) make new keys on every call.
_cache = runtime.ExecutableCache(EAGER_CACHE_BYTES, size_of=lambda c: c.executable.size_estimate,
                                 on_evict=_evicted)
# (StableHLO text, device) -> CompiledIR while some entry of _cache holds it: a fresh lambda's loop that
# lowers to a program compiled before reuses that executable instead of compiling it again.
_by_text: "weakref.WeakValueDictionary[Any, dispatch.CompiledIR]" = weakref.WeakValueDictionary()


def _params_key(params: dict) -> Any:
    if not params:
        return ()
    return tuple(sorted(params.items()))


def one_equation_ir(prim, in_avals, params) -> IR:
    invars = [Var(a) for a in in_avals]
    outvars = [Var(a) for a in prim.out_avals(list(in_avals), params)]
    return IR([], invars, [Eqn(prim, list(invars), outvars, params)], list(outvars))


# (primitive, parameters) -> jaxlib C++ dispatch function (see kiln.runtime.fastpath); bounded in count
# (each one's fast paths keep executables that _cache also holds).
_cpp: dict[Any, Any] = {}
_CPP_FUNCTIONS = 4096
# (primitive, parameters) -> the last all-arrays signature, launched directly (see direct_call.py); an entry
# goes with its C++ function.
_direct: dict[Any, DirectCall] = {}


def apply_eagerly(prim, args: Sequence[Any], params: dict) -> Any:
    """Run ``prim`` on concrete arguments now and return kiln Arrays (checked for NaN/Inf when
    ``debug_nans``/``debug_infs`` is on)."""
    out = _apply_eagerly(prim, args, params)
    if config._debug_special:
        nan_check.check_eager(prim, args, params, out)
    return out


def _apply_eagerly(prim, args: Sequence[Any], params: dict) -> Any:
    """Run ``prim`` on concrete arguments now and return kiln Arrays.

    A repeated call of the last all-arrays signature launches directly (direct_call.py); other repeated calls
    with kiln arrays go through jaxlib's C++ dispatch; anything else (host values, literals, a first call, no
    C++ dispatch in this process) through :func:`_apply`. A primitive with its own ``impl`` (host
    callbacks: the callable runs right away; a user's primitive's def_impl) runs that, on values (an IR literal
    as its NumPy value).
    """
    if prim.impl is not None:
        return prim.impl(*[a.val if isinstance(a, Literal) else a for a in args], **params)
    try:
        key = (prim, _params_key(params))
        direct = _direct.get(key)
    except TypeError:  # unhashable parameters: no caching at all
        return _apply(prim, args, params)[0]
    if direct is not None:
        try:
            out = direct.run(args)
        except LaunchFailed:  # the Python path explains it
            return _apply(prim, args, params)[0]
        if out is not None:
            return out
    if not fastpath.available():  # (jax imported first): the direct launch still is
        if len(_direct) >= _CPP_FUNCTIONS:
            _direct.pop(next(iter(_direct), None), None)
        return _run_and_record(key, prim, params, *args)[0]
    fn = _cpp.get(key)
    if fn is None:
        if len(_cpp) >= _CPP_FUNCTIONS:
            oldest = next(iter(_cpp))
            del _cpp[oldest]
            _direct.pop(oldest, None)
        fn = _cpp[key] = fastpath.make_function(prim.name, functools.partial(_cpp_miss, key, prim, params),
                                                (), ())
    try:
        return fn(*args)
    except BaseException as e:
        if fastpath.raised_in_miss(e):
            fn._clear_cache()  # the C++ would keep this signature on the Python path
            raise
        if not isinstance(e, Exception) or isinstance(e, KilnError):
            raise
        # A jaxlib error from the C++ path itself: the Python path explains it.
    return _apply(prim, args, params)[0]


def _run_and_record(key: Any, prim, params: dict, *args) -> tuple[Any, Any]:
    """Run ``prim`` in Python; keep its direct launch when every argument is a kiln array on the device it ran
    on. Returns the outputs and that compiled program (None when the signature is not one to record)."""
    out, compiled, committed = _apply(prim, args, params)
    device = None if compiled is None else compiled.device
    if device is None or compiled.executable.host_callbacks or not all(
            held_on(a, device) for a in args):
        return out, None
    if not prim.multiple_results:  # (a DirectCall returns a tuple for several results; a primitive a list)
        direct = direct_call(args, [a.aval for a in args], compiled.kept, [], compiled.executable, out, device)
        if direct is not None:
            _direct[key] = direct
    return out, compiled


def _cpp_miss(key: Any, prim, params: dict, *args):
    out, compiled = _run_and_record(key, prim, params, *args)
    if compiled is None:
        return out, None
    _, out_treedef = fastpath.flatten(out)
    return out, fastpath.record(compiled.executable, out_treedef, (), [True] * len(args))


def _apply(prim, args: Sequence[Any], params: dict) -> tuple[Any, dispatch.CompiledIR, bool]:
    """The Python path: returns the result, the executable that computed it, and its committed flag."""
    if any(type(a) is Array and a._device is None for a in args) or spmd.params_mesh(params) is not None:
        return _apply_over_mesh(prim, args, params)
    avals = tuple([a.aval if type(a) is Array else abstractify(a) for a in args])
    try:
        device, committed = dispatch.pick_device(args)
    except dispatch.DeviceMismatchError:
        raise dispatch.device_mismatch(args, None, f"kiln.lax.{prim.name}") from None
    # The flags that change programs (cpu_lapack, ...) are in the key: flipping one must not reuse a program.
    key = (prim, _params_key(params), avals, device, config.trace_key())
    if config.no_execution:  # (the fast paths do not get here: setting it changed dispatch_epoch)
        raise no_execution_error(f"kiln.lax.{prim.name} (an eager operation)")
    compiled = _cache.get(key)
    if compiled is None:
        if config.no_tracing:
            raise no_tracing_error(f"kiln.lax.{prim.name} (an eager operation)", avals)
        compiled = _cache.put(key, _compile(prim, avals, params, device))
    outs = compiled.run([dispatch.to_buffer(a, device) for a in args], committed)
    return (outs if prim.multiple_results else outs[0]), compiled, committed


def _apply_over_mesh(prim, args: Sequence[Any], params: dict) -> tuple[Any, None, bool]:
    """A primitive on arrays laid out over a device mesh runs as a jitted one-primitive program (as JAX's
    eager ops do): the partitioner splits it over the mesh, and the result keeps a mesh layout."""
    key = (prim, _params_key(params))
    fn = _over_mesh.get(key)
    if fn is None:
        from .jit import jit  # jit builds on dispatch, as this module does
        fn = _over_mesh[key] = jit(functools.partial(prim.bind, **params))
    return fn(*args), None, True  # no CompiledIR: these calls stay off the C++ fast path


# (primitive, parameters) -> the jitted primitive that runs it over a mesh.
_over_mesh: dict[Any, Any] = {}


def _compile(prim, avals, params: dict, device) -> dispatch.CompiledIR:
    ir = one_equation_ir(prim, avals, params)  # runs the shape rule: bad input fails here
    # keep_unused: the executable takes every argument, so dispatch needs no filtering.
    lowered = dispatch.lower_ir(ir, keep_unused=True, device=device)
    # Weak types are not in the StableHLO: the output avals are part of the key.
    text_key = (lowered.as_text(), device, tuple(v.aval for v in ir.outvars))
    if lowered.host_callbacks:  # the text names its callables by index only: not shareable
        text_key = None
    compiled = _by_text.get(text_key) if text_key is not None else None
    if compiled is None:
        compiled = dispatch.compile_lowered(ir, lowered, device)
        compiled.lowered = None  # cached for long: keep the executable, not the MLIR module
        if text_key is not None:
            _by_text[text_key] = compiled
    return compiled


@caches.register
def clear_cache() -> None:
    _cache.clear()
    _cpp.clear()
    _direct.clear()
    _over_mesh.clear()


tracing.install_eager(apply_eagerly, dispatch.put)  # the core floor's bind runs primitives through here
