"""Top-level helpers around tracing and devices (as JAX's): ``disable_jit``, ``eval_shape``, ``make_jaxpr``,
``eval_jaxpr``, ``typeof``, ``named_scope``/``named_call``, ``local_device_count``, ``print_environment_info``."""
from __future__ import annotations

import contextlib
import functools
import operator
import os
import platform
import sys
from typing import Any, Callable, Iterator, Protocol, Sequence, Union, runtime_checkable

import numpy as np

from kiln import runtime

from ..core import caches, refs, tree_util
from ..core.avals import ManualShapedArray, ShapedArray, ShapeDtypeStruct
from ..core.config import config
from ..core.ir import IR, ClosedIR
from ..core.tracing import abstractify, eval_ir, trace_to_ir
from ..core.varying import varying_in_trace
from ..core.version import __version__
from .array import Array
from .jit import JittedFunction
from .placement import local_devices


def clear_caches() -> None:
    """Drop every in-memory cache of traces, transformed programs and executables (jitted functions, eager
    operations, pmap, grad/vmap of calls): the next call of anything traces and compiles again. The persistent
    compile cache on disk stays (turn it off with ``KILN_COMPILATION_CACHE=0``)."""
    caches.clear_all()


def disable_jit(disable: bool = True) -> contextlib.AbstractContextManager:
    """``with kiln.disable_jit(): ...`` runs jitted functions as plain Python, op by op (eagerly), so that
    ``print`` and debuggers see concrete values. Same as the ``disable_jit`` config flag."""
    return config.override("disable_jit", bool(disable))


def _aval_of(where: str, x: Any) -> ShapedArray:
    if isinstance(x, ShapedArray):
        return x
    try:
        return abstractify(x)
    except TypeError:
        shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
        if shape is not None and dtype is not None:  # an array-like with a shape and a dtype
            return ShapeDtypeStruct(shape, dtype).aval
        raise TypeError(f"kiln.{where}: argument of type {type(x).__name__} ({x!r:.60}) is not an array, "
                        "a ShapeDtypeStruct or a scalar") from None


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes of ``fun(*args, **kwargs)`` as a pytree of :class:`ShapeDtypeStruct`,
    computed by tracing only: nothing runs. Arguments may be arrays, ``ShapeDtypeStruct`` or any
    object with ``.shape`` and ``.dtype``."""
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    avals = [_aval_of("eval_shape", x) for x in leaves]
    out_tree_box = []

    def flat_fun(*tracers):
        a, k = tree_util.tree_unflatten(in_tree, list(tracers))
        out_leaves, out_tree = tree_util.tree_flatten(fun(*a, **k))
        out_tree_box.append(out_tree)
        return out_leaves
    closed, _ = trace_to_ir(flat_fun, avals, name=getattr(fun, "__name__", "function"))
    return tree_util.tree_unflatten(out_tree_box[0], [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                                                     for a in closed.ir.out_avals])


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (), axis_env: Any = None,
               return_shape: bool = False) -> Callable[..., Any]:
    """``make_jaxpr(f)(*args)`` is kiln's IR of ``f`` for these arguments (a ``ClosedIR``, which prints as
    the IR's text; kiln has no jaxprs). With ``return_shape=True`` also the output's ShapeDtypeStructs."""
    if axis_env is not None:
        raise NotImplementedError("kiln.make_jaxpr: axis_env is not supported; trace collectives inside "
                                  "kiln.vmap(..., axis_name=...) instead")
    jitted = fun if isinstance(fun, JittedFunction) else JittedFunction(fun, static_argnums=static_argnums)

    @functools.wraps(fun)
    def make(*args, **kwargs) -> ClosedIR | tuple[ClosedIR, Any]:
        entry = jitted.trace(*args, **kwargs).entry
        if not return_shape:
            return entry.closed
        shapes = tree_util.tree_unflatten(entry.out_tree, [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                                                           for a in entry.closed.ir.out_avals])
        return entry.closed, shapes
    return make


def eval_jaxpr(jaxpr: IR | ClosedIR, consts: Sequence[Any], *args: Any, propagate_source_info: bool = True
               ) -> list[Any]:
    """The outputs (a list) of the IR ``make_jaxpr`` gave (``closed.jaxpr`` and ``closed.consts``, as JAX's
    ``jax.core.eval_jaxpr``) on ``args``: eagerly, or recorded into the trace around the call."""
    del propagate_source_info  # kiln's equations always keep their source lines
    ir = jaxpr.ir if isinstance(jaxpr, ClosedIR) else jaxpr
    if not isinstance(ir, IR):
        raise TypeError(f"kiln.core.eval_jaxpr: expected the IR of kiln.make_jaxpr(f)(...) (or its .jaxpr), got "
                        f"{type(jaxpr).__name__}")
    if len(consts) != len(ir.constvars) or len(args) != len(ir.invars):
        raise TypeError(f"kiln.core.eval_jaxpr: the IR takes {len(ir.constvars)} constant(s) and {len(ir.invars)} "
                        f"argument(s), got {len(consts)} and {len(args)}")
    return eval_ir(ir, list(consts), list(args))


def jaxpr_as_fun(closed: ClosedIR) -> Callable[..., list[Any]]:
    """``closed`` (what ``make_jaxpr`` gave) as a function of its inputs returning the list of its outputs,
    as JAX's ``jax.extend.core.jaxpr_as_fun``."""
    if not isinstance(closed, ClosedIR):
        raise TypeError(f"kiln.extend.core.jaxpr_as_fun: expected the ClosedIR of kiln.make_jaxpr(f)(...), got "
                        f"{type(closed).__name__}")
    return lambda *args: eval_jaxpr(closed.ir, closed.consts, *args)


def max_dim(a: int, b: int) -> int:
    """The larger of two dimension sizes (kiln's shapes are plain ints; JAX's may be symbolic)."""
    return max(operator.index(a), operator.index(b))


def min_dim(a: int, b: int) -> int:
    """The smaller of two dimension sizes."""
    return min(operator.index(a), operator.index(b))


# typeof of the array-like types of higher floors (PRNG key arrays): type -> rule(x) giving its abstract value.
_TYPEOF_RULES: dict[type, Callable[[Any], Any]] = {}


def register_typeof(cls: type, rule: Callable[[Any], Any]) -> None:
    """Make :func:`typeof` of an instance ``x`` of ``cls`` return ``rule(x)`` (for types defined above the driver)."""
    _TYPEOF_RULES[cls] = rule


def typeof(x: Any) -> ShapedArray:
    """The abstract value (``ShapedArray``: shape, dtype, weak type) of an array, tracer or scalar; inside a
    ``shard_map`` body it also says which mesh axes the value varies along (``.manual_axis_type.varying``,
    printed ``f32[3]{V:i}``), as JAX's. Of a PRNG key array: ``key<fry>[...]``."""
    if isinstance(x, ShapedArray):
        return x
    if isinstance(x, refs.Ref):
        return x.aval  # Ref{float32[3]}
    rule = _TYPEOF_RULES.get(type(x))
    if rule is not None:
        return rule(x)
    try:
        aval = abstractify(x)
    except TypeError:
        raise TypeError(f"kiln.typeof: {type(x).__name__} ({x!r:.60}) is not an array or scalar") from None
    manual = varying_in_trace(x)
    return aval if manual is None else ManualShapedArray(aval, *manual)


@contextlib.contextmanager
def named_scope(name: str) -> Iterator[None]:
    """``with kiln.named_scope("block"): ...``. JAX adds the name to the operations' name stack (seen in
    profiles and HLO metadata); kiln's IR has no name stack, so this only checks the name."""
    if not isinstance(name, str):
        raise TypeError(f"kiln.named_scope: the name must be a str, got {type(name).__name__} {name!r:.60}")
    yield


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """``fun`` under a name (JAX uses it in the name stack; kiln's IR has none, so calls are unchanged)."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"kiln.named_call: name must be a str or None, got {type(name).__name__}")

    @functools.wraps(fun)
    def call(*args, **kwargs):
        with named_scope(name or getattr(fun, "__name__", "call")):
            return fun(*args, **kwargs)
    return call


def local_device_count(backend: str | None = None) -> int:
    """The number of this process's devices of ``backend`` (default: the default backend)."""
    return len(local_devices(backend))


def print_environment_info(return_string: bool = False) -> str | None:
    """Versions of kiln, jaxlib, NumPy and Python, the platform and the devices, for bug reports."""
    try:
        devs = ", ".join(str(d) for d in local_devices())
        backend = runtime.default_backend()
    except Exception as e:  # a broken backend is itself worth reporting
        devs, backend = f"unavailable ({e})", "unavailable"
    lines = [
        f"kiln:    {__version__}",
        f"jaxlib:  {runtime.jaxlib_version()}",
        f"numpy:   {np.__version__}",
        f"python:  {sys.version.replace(os.linesep, ' ')}",
        f"device info: {backend}: {devs}",
        "process_count: 1",
        f"platform: {platform.platform()} ({platform.machine()})",
        f"flags:   {config!r}",
    ]
    text = "\n".join(lines)
    if return_string:
        return text
    print(text)
    return None


# -- kiln.typing -------------------------------------------------------------------------------------
ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
"""What kiln functions accept as an array: kiln arrays, NumPy arrays and scalars, Python scalars."""


@runtime_checkable
class SupportsDType(Protocol):
    @property
    def dtype(self) -> Any: ...


DTypeLike = Union[str, type, np.dtype, SupportsDType]
"""What kiln functions accept as a dtype: a name ('float32'), a scalar type, a NumPy dtype, or an object
with a ``.dtype``."""
