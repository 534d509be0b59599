"""Foreign function interface: calling C/C++ XLA FFI handlers from kiln programs (JAX's ``jax.ffi``).

One primitive, ``ffi_call``: a ``stablehlo.custom_call`` of a target registered with
:func:`register_ffi_target` (typed FFI, ``api_version = 4``), with the results declared by the user.
Its parameters (all hashable): ``target_name``, ``result_avals``, ``vmap_method``, ``has_side_effect``
(the call is then an effect: kept when its results are unused, never merged), ``input_layouts`` /
``output_layouts`` (XLA minor-to-major orders, one per operand/result), ``input_output_aliases``
(``(input, output)`` pairs), ``custom_call_api_version``, ``legacy_backend_config`` and ``attributes``
(the keyword arguments of the call, a sorted tuple of ``(name, value)``; NumPy arrays and dicts wrapped
hashable). It is not differentiable; under ``vmap`` it follows ``vmap_method`` as ``pure_callback`` does.
Outside any trace it runs as a one-equation program, like every primitive.

The emission rule is in ``lowering/rules/ffi.py``, the derivative rule in ``ad/rules_ffi.py``, the
batching rule in ``batching/rules_ffi.py``; the registration functions wrap ``runtime/ffi.py``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

import numpy as np

from kiln import runtime

from ..core.avals import ShapedArray
from ..core.errors import KilnError
from ..core.primitive import Primitive
from ..core.tracing import abstractify
from .callbacks import VMAP_METHODS

__all__ = ["ffi_call", "include_dir", "pycapsule", "register_ffi_target",
           "register_ffi_target_as_batch_partitionable", "register_ffi_type", "register_ffi_type_id"]


class FfiUsageError(KilnError, ValueError):
    """``kiln.ffi.ffi_call`` was given bad arguments (result types, layouts, aliases, vmap_method)."""


class FfiAttributeError(KilnError, TypeError):
    """A keyword argument of an FFI call cannot be passed to the handler as an attribute."""


# -- the primitive --------------------------------------------------------------------------------------------

def _ffi_rule(*avals, result_avals: tuple, **params):
    return list(result_avals)


class _FfiCallPrimitive(Primitive):
    def effects_of(self, params: dict[str, Any]) -> bool:
        return bool(params.get("has_side_effect", False))


ffi_call_p = _FfiCallPrimitive("ffi_call", _ffi_rule, multiple_results=True)


# -- attributes -----------------------------------------------------------------------------------------------

class ArrayAttribute:
    """A NumPy array given as an FFI attribute, hashable by value (a dense array attribute when lowered)."""

    __slots__ = ("value", "_key")

    def __init__(self, value: np.ndarray):
        self.value = np.array(value, copy=True)
        self.value.flags.writeable = False
        self._key = (self.value.shape, self.value.dtype.str, self.value.tobytes())

    def unwrap(self) -> np.ndarray:
        return self.value

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ArrayAttribute) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"array({self.value.tolist()!r}, dtype={self.value.dtype.name})"


class DictAttribute:
    """A dict given as an FFI attribute (a dictionary attribute when lowered), hashable by value."""

    __slots__ = ("items",)

    def __init__(self, items: tuple):
        self.items = items

    def unwrap(self) -> dict:
        return dict(self.items)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, DictAttribute) and self.items == other.items

    def __hash__(self) -> int:
        return hash(self.items)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k}: {v!r}" for k, v in self.items) + "}"


_KINDS = "biuf"  # NumPy kinds an attribute may have: bool, signed, unsigned, float


def _attribute(name: str, v: Any) -> Any:
    """``v`` as a hashable attribute value (what the emission rule converts to an MLIR attribute)."""
    def bad(why: str) -> FfiAttributeError:
        return FfiAttributeError(f"kiln.ffi.ffi_call: the attribute {name}={v!r} {why}")
    if isinstance(v, (bool, str, bytes, np.dtype)):
        return v
    if isinstance(v, int):
        if not -2**63 <= v < 2**63:
            raise bad("does not fit in int64 (Python ints are passed as i64); pass a NumPy scalar of another type")
        return v
    if isinstance(v, float):
        return v
    if isinstance(v, np.generic):
        if v.dtype.kind not in _KINDS:
            raise bad(f"has dtype {v.dtype.name}; scalar attributes may be bool, integer or floating point")
        return v
    if isinstance(v, np.ndarray):
        if v.dtype.kind not in _KINDS:
            raise bad(f"has dtype {v.dtype.name}; array attributes may be bool, integer or floating point")
        if 0 in v.strides and v.size > 1:
            raise bad("has zero strides (a broadcast view); pass np.ascontiguousarray(...) of it")
        return ArrayAttribute(v)
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            raise bad("is a dict with non-string keys; dictionary attributes need string keys")
        return DictAttribute(tuple((k, _attribute(f"{name}[{k!r}]", x)) for k, x in sorted(v.items())))
    if isinstance(v, (list, tuple)):
        return tuple(_attribute(f"{name}[{i}]", x) for i, x in enumerate(v))
    raise bad(f"has type {type(v).__name__}, which cannot be an FFI attribute: pass a Python bool/int/float/str, "
              "a NumPy scalar or array, a dict or a list of these (arrays go as positional arguments)")


# -- layouts --------------------------------------------------------------------------------------------------

def _default_layout(rank: int) -> tuple[int, ...]:
    return tuple(range(rank - 1, -1, -1))


def _layout(layout: Any, rank: int, what: str) -> tuple[int, ...]:
    """A user layout (None: row major; a major-to-minor sequence of axes; an object with ``major_to_minor``)
    as XLA's minor-to-major order."""
    if layout is None:
        return _default_layout(rank)
    if getattr(layout, "tiling", None) is not None:
        raise FfiUsageError(f"kiln.ffi.ffi_call: {what}: the FFI does not support layouts with tiling")
    order = getattr(layout, "major_to_minor", layout)
    try:
        order = tuple(int(d) for d in order)
    except TypeError:
        raise FfiUsageError(f"kiln.ffi.ffi_call: {what} must be None or a sequence of axes in major-to-minor order, "
                            f"got {layout!r}") from None
    if sorted(order) != list(range(rank)):
        raise FfiUsageError(f"kiln.ffi.ffi_call: {what} {order} is not a permutation of the {rank} axes of its array "
                            f"(major-to-minor, e.g. {tuple(range(rank))} for row major)")
    return order[::-1]


def _result_avals(results: Sequence[Any]) -> tuple[ShapedArray, ...]:
    avals = []
    for i, r in enumerate(results):
        shape, dtype = getattr(r, "shape", None), getattr(r, "dtype", None)
        if shape is None or dtype is None:
            raise FfiUsageError("kiln.ffi.ffi_call: all elements of result_shape_dtypes must have 'shape' and 'dtype' "
                                f"attributes (e.g. kiln.ShapeDtypeStruct); got {r!r} at position {i}")
        avals.append(ShapedArray(tuple(int(d) for d in shape), np.dtype(dtype)))
    return tuple(avals)


# -- the user function ----------------------------------------------------------------------------------------

def ffi_call(target_name: str, result_shape_dtypes: Any, *, has_side_effect: bool = False,
             vmap_method: str | None = None, input_layouts: Sequence[Any] | None = None,
             output_layouts: Any = None, input_output_aliases: dict[int, int] | None = None,
             custom_call_api_version: int = 4, legacy_backend_config: str | None = None) -> Callable[..., Any]:
    """A function calling the FFI target ``target_name`` (registered with :func:`register_ffi_target`):
    ``ffi_call(name, result_shape_dtypes, ...)(*arrays, **attributes)`` (``jax.ffi.ffi_call``).

    ``result_shape_dtypes``: one object with ``shape`` and ``dtype`` (one result) or a sequence of them (a
    list or tuple of results). The positional arguments are the handler's buffers; the keyword arguments
    its attributes (Python ``int`` → i64, ``float`` → f64, ``bool``, ``str``, NumPy scalars with their
    dtype, NumPy arrays → dense arrays, dicts, lists). ``has_side_effect``: run it even when the results
    are unused. ``vmap_method``: as for :func:`kiln.pure_callback` (without one, ``vmap`` raises).
    ``input_layouts``/``output_layouts``: per array, None (row major) or the axes in major-to-minor order.
    ``input_output_aliases``: ``{input index: output index}``, the output reusing the input's buffer.
    Not differentiable: give it a :func:`kiln.custom_jvp` or :func:`kiln.custom_vjp` rule.
    """
    if vmap_method not in VMAP_METHODS + (None,):
        raise FfiUsageError(f"kiln.ffi.ffi_call: vmap_method must be one of {list(VMAP_METHODS) + [None]}, got "
                            f"{vmap_method!r}")
    if not isinstance(target_name, str) or not target_name:
        raise FfiUsageError(f"kiln.ffi.ffi_call: target_name must be the name of a registered FFI target, got "
                            f"{target_name!r}")
    multiple = isinstance(result_shape_dtypes, (list, tuple))
    result_avals = _result_avals(result_shape_dtypes if multiple else [result_shape_dtypes])
    out_layouts_in = output_layouts if multiple else (output_layouts,)
    if custom_call_api_version >= 4 and legacy_backend_config is not None:
        raise FfiUsageError("kiln.ffi.ffi_call: legacy_backend_config requires custom_call_api_version < 4; got "
                            f"custom_call_api_version={custom_call_api_version}")
    if out_layouts_in is not None and len(out_layouts_in) != len(result_avals):
        raise FfiUsageError(f"kiln.ffi.ffi_call({target_name!r}): the number of outputs ({len(result_avals)}) must "
                            f"equal the number of output layouts ({len(out_layouts_in)})")
    out_layouts = tuple(_layout(None if out_layouts_in is None else lay, len(a.shape), f"output layout {i}")
                        for i, (a, lay) in enumerate(zip(result_avals, out_layouts_in or [None] * len(result_avals))))

    def call(*args: Any, **kwargs: Any) -> Any:
        in_avals = [abstractify(x) for x in args]
        if input_layouts is not None and len(input_layouts) != len(in_avals):
            raise FfiUsageError(f"kiln.ffi.ffi_call({target_name!r}): the number of input arguments ({len(in_avals)}) "
                                f"must equal the number of input layouts ({len(input_layouts)})")
        in_layouts = tuple(_layout(None if input_layouts is None else input_layouts[i], len(a.shape),
                                   f"input layout {i}") for i, a in enumerate(in_avals))
        aliases = []
        for i, o in sorted((input_output_aliases or {}).items()):
            i, o = int(i), int(o)
            if not 0 <= i < len(args):
                raise FfiUsageError(f"kiln.ffi.ffi_call({target_name!r}): input_output_aliases maps input {i} to "
                                    f"output {o}, but there are {len(args)} inputs")
            if not 0 <= o < len(result_avals):
                raise FfiUsageError(f"kiln.ffi.ffi_call({target_name!r}): input_output_aliases maps input {i} to "
                                    f"output {o}, but there are {len(result_avals)} outputs")
            a, r = in_avals[i], result_avals[o]
            if (a.shape, a.dtype) != (r.shape, r.dtype):
                raise FfiUsageError(f"kiln.ffi.ffi_call({target_name!r}): input_output_aliases maps input {i} "
                                    f"({a.dtype.name}{list(a.shape)}) to output {o} ({r.dtype.name}{list(r.shape)}); "
                                    "an output can alias only an input of the same shape and dtype")
            if in_layouts[i] != out_layouts[o]:
                raise FfiUsageError(f"kiln.ffi.ffi_call({target_name!r}): input_output_aliases maps input {i} (layout "
                                    f"{in_layouts[i]}) to output {o} with a different layout {out_layouts[o]}")
            aliases.append((i, o))
        if custom_call_api_version < 4 and kwargs:
            raise FfiUsageError(f"kiln.ffi.ffi_call({target_name!r}): attributes (keyword arguments) need "
                                f"custom_call_api_version >= 4; got {custom_call_api_version}")
        attributes = tuple((k, _attribute(k, v)) for k, v in sorted(kwargs.items()))
        outs = ffi_call_p.bind(*args, target_name=target_name, result_avals=result_avals, vmap_method=vmap_method,
                               has_side_effect=bool(has_side_effect), input_layouts=in_layouts,
                               output_layouts=out_layouts, input_output_aliases=tuple(aliases),
                               custom_call_api_version=int(custom_call_api_version),
                               legacy_backend_config=legacy_backend_config, attributes=attributes)
        if not multiple:
            return outs[0]
        return tuple(outs) if isinstance(result_shape_dtypes, tuple) else list(outs)

    return call


# -- registration (runtime/ffi.py) ----------------------------------------------------------------------------

def include_dir() -> str:
    """The directory of the XLA FFI C++ headers bundled with jaxlib (``#include "xla/ffi/api/ffi.h"``):
    compile a handler with ``g++ -std=c++17 -shared -fPIC -I $(python -c 'import kiln.ffi as f;
    print(f.include_dir())')``."""
    return runtime.ffi.include_dir()


def pycapsule(funcptr: Any) -> Any:
    """Wrap a ctypes function pointer (``ctypes.cdll.LoadLibrary(path).MyHandler``) in a PyCapsule, the form
    :func:`register_ffi_target` takes."""
    return runtime.ffi.pycapsule(funcptr)


def register_ffi_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1, **kwargs: Any) -> None:
    """Register an FFI handler as the target ``name`` on ``platform`` ("cpu", "cuda", ...), for
    :func:`ffi_call`. ``fn``: a PyCapsule of the handler (:func:`pycapsule`), or a dict of FFI stage name →
    PyCapsule. ``api_version``: 1 for the typed FFI (``XLA_FFI_DEFINE_HANDLER``), 0 for the legacy
    custom-call API. Other keyword arguments go to jaxlib's ``register_custom_call_target``."""
    runtime.ffi.register_target(name, fn, platform, api_version, **kwargs)


def register_ffi_type(name: str, type_registration: dict, platform: str = "cpu") -> None:
    """Register a user type for FFI handlers: ``type_registration`` = ``{"type_id": capsule}`` (optionally
    ``"type_info"``), a PyCapsule of the ``XLA_FFI_TypeId``."""
    runtime.ffi.register_type(name, type_registration, platform)


def register_ffi_type_id(name: str, obj: Any, platform: str = "cpu") -> None:
    """Removed in JAX (jaxlib > 0.381): raises; use :func:`register_ffi_type`."""
    raise FfiUsageError("kiln.ffi.register_ffi_type_id is not supported by this jaxlib (as in JAX); use "
                        "kiln.ffi.register_ffi_type(name, {'type_id': capsule}, platform) instead")


def register_ffi_target_as_batch_partitionable(name: str) -> None:
    """Tell XLA's SPMD partitioner that the target ``name`` may run independently on each shard of its
    leading (batch) dimensions, so that a call on arrays sharded along them under :func:`kiln.jit` need
    not be gathered onto one device."""
    runtime.ffi.register_batch_partitionable(name)
