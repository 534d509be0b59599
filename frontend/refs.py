"""``kiln.new_ref``, ``kiln.freeze`` and ``kiln.ref`` (JAX's ``jax.ref``): mutable array references.

The reference itself and how traces discharge it are in ``core/refs.py``; this module has what users call and
the indexing of a ref's value (installed into the core's ``Ref``), which needs kiln.numpy.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import numpy as knp
from .core import refs as _core
from .core.refs import AbstractRef, Ref, RefError
from .core.tracing import abstractify, current_builder
from .driver.array import Array
from .lax import api as _lax

__all__ = ["AbstractRef", "Ref", "RefError", "addupdate", "empty_ref", "free_ref", "freeze", "get", "new_ref",
           "set", "swap"]


def new_ref(init_val: Any, *, memory_space: Any = None, kind: str | None = None) -> Ref:
    """A new mutable reference holding ``init_val`` (an array or a scalar: a Python scalar keeps its weak type).
    ``memory_space`` and ``kind`` are JAX's; kiln keeps refs in device memory and takes None only."""
    if memory_space is not None or kind is not None:
        raise NotImplementedError(f"kiln.new_ref: memory_space={memory_space!r}, kind={kind!r}: kiln keeps refs in "
                                  "device memory; leave both out")
    if isinstance(init_val, Ref):
        raise RefError("kiln.new_ref: the initial value is a Ref; refs of refs are not supported (as in JAX): pass "
                       "its value, ref[...]")
    if isinstance(init_val, (list, tuple)):
        raise TypeError(f"kiln.new_ref: the initial value is a {type(init_val).__name__}; pass an array "
                        "(kiln.numpy.asarray(...)) or a scalar")
    return _core.new_ref(_own(knp.asarray(init_val), init_val))


def empty_ref(ty: Any, memory_space: Any = None) -> Ref:
    """A new reference of ``ty``'s shape and dtype (a ``ShapeDtypeStruct`` or an array), holding zeros: kiln
    has no uninitialized memory (JAX's contents are unspecified)."""
    if memory_space is not None:
        raise NotImplementedError("kiln.empty_ref: memory_space: kiln keeps refs in device memory; leave it out")
    return _core.new_ref(knp.zeros(ty.shape, ty.dtype))


def freeze(ref: Ref) -> Any:
    """The final value of ``ref`` (an array); the ref is invalidated (a later use raises). Only in the scope that
    created the ref, as in JAX."""
    _check_ref("freeze", ref)
    value = ref[...]
    _core.invalidate(ref, "kiln.freeze")
    return value


def free_ref(ref: Ref) -> None:
    """Invalidate ``ref`` (a later use raises), in the scope that created it; kiln frees a ref's memory when the
    ref goes away."""
    _check_ref("free_ref", ref)
    _core.invalidate(ref, "kiln.free_ref")


def get(ref: Ref, idx: Any = None) -> Any:
    """``ref[idx]`` (the whole value for ``idx=None``)."""
    _check_ref("get", ref)
    return ref[... if idx is None else idx]


def swap(ref: Ref, idx: Any, value: Any) -> Any:
    """Write ``value`` at ``ref[idx]`` and return what was there."""
    _check_ref("swap", ref)
    idx = ... if idx is None else idx
    old = ref[idx]
    ref[idx] = value
    return old


def set(ref: Ref, idx: Any, value: Any) -> None:  # noqa: A001  (JAX's name)
    """``ref[idx] = value``."""
    _check_ref("set", ref)
    ref[... if idx is None else idx] = value


def addupdate(ref: Ref, idx: Any, x: Any) -> None:
    """Add ``x`` to ``ref[idx]`` (repeated indices add up, as ``x.at[idx].add``)."""
    _check_ref("addupdate", ref)
    idx = ... if idx is None else idx
    value = _core.read(ref)
    _check_bounds("addupdate", value, idx)
    _check_update("addupdate", _get(value, idx), x)
    _core.write(ref, _typed(value + x if _whole(idx) else value.at[idx].add(x), value), owned=True)


def _check_ref(fname: str, ref: Any) -> None:
    if not isinstance(ref, Ref):
        raise TypeError(f"kiln.ref.{fname}: expected a Ref (from kiln.new_ref), got {type(ref).__name__}")


def _whole(index: Any) -> bool:
    """``ref[...]`` or ``ref[()]``: the whole value."""
    return index is Ellipsis or (type(index) is tuple and not index)


def _get(value: Any, index: Any) -> Any:
    return value if _whole(index) else value[index]


def _own(value: Any, given: Any) -> Any:
    """``value``, or outside any trace a copy of it where it is ``given``, an array the caller holds: a ref owns its
    buffer, which jit updates in place (donates), so no array outside may share it (as JAX's refs: reading or
    writing a whole ref copies)."""
    if value is given and type(value) is Array and current_builder() is None:
        return knp.array(value)
    return value


def _static_int(index: Any) -> int | None:
    """``index`` as an int where it is an integer index known before the program runs (a Python or NumPy integer,
    a concrete 0-d integer Array), else None."""
    if isinstance(index, (bool, np.bool_)):
        return None
    if isinstance(index, (int, np.integer)):
        return int(index)
    if type(index) is Array and index.ndim == 0 and np.issubdtype(index.dtype, np.integer):
        return int(index)
    return None


def _check_bounds(what: str, value: Any, index: Any) -> None:
    """A static integer index of a Ref must be in bounds (JAX's docs: "an out-of-bounds index raises an error when
    its value is known in advance", where an Array's read clamps and its write drops). Traced indices, index arrays
    and slices are left to the indexing (clamped, as an Array's)."""
    entries = index if type(index) is tuple else (index,)
    if any(isinstance(e, (bool, np.bool_)) or getattr(e, "dtype", None) == np.bool_ for e in entries):
        return  # boolean masks: the indexing's own rules and errors
    shape = abstractify(value).shape
    consuming = sum(1 for e in entries if e is not None and e is not Ellipsis)
    if consuming > len(shape):
        return  # too many indices: the indexing's own error
    axis = 0
    for e in entries:
        if e is Ellipsis:
            axis += len(shape) - consuming
            continue
        if e is None:
            continue
        i = _static_int(e)
        if i is not None and not -shape[axis] <= i < shape[axis]:
            raise RefError(f"kiln: Ref {what}: index {i} is out of bounds for axis {axis} of size {shape[axis]} "
                           f"(the Ref has shape {shape}); use an index in {-shape[axis]}..{shape[axis] - 1}. A "
                           "Ref's integer index known before the program runs must be in bounds, as JAX's docs say "
                           "(an Array's out-of-bounds read would be clamped and its write dropped)")
        axis += 1


def _read(value: Any, index: Any) -> Any:
    """``ref[index]`` (the ref's ``indexing.get``): a new array, never the ref's own buffer."""
    _check_bounds("read", value, index)
    return _own(_get(value, index), value)


def _check_update(fname: str, current: Any, update: Any) -> None:
    """An update must have the shape and dtype of what it replaces, as JAX's ``swap`` checks (a Python scalar
    of the same kind is taken)."""
    want, got = abstractify(current), abstractify(update)
    if got.shape != want.shape:
        raise ValueError(f"kiln.ref.{fname}: the value has shape {got.shape}, but the indexed part of the Ref has "
                         f"shape {want.shape}; broadcast it first (kiln.numpy.broadcast_to)")
    if got.dtype != want.dtype:
        raise ValueError(f"kiln.ref.{fname}: the value has dtype {got.dtype.name}, but the Ref holds "
                         f"{want.dtype.name}; convert it first (.astype({want.dtype.name}))")


def _set(value: Any, index: Any, update: Any) -> Any:
    """The ref's value after ``ref[index] = update``, of the ref's type."""
    _check_bounds("write", value, index)
    _check_update("set", _get(value, index), update)
    return _own(_typed(update if _whole(index) else value.at[index].set(update), value), update)


def _typed(new: Any, value: Any) -> Any:
    """``new``, a ref's new value, with the type of ``value``, its value before: a ref's dtype and weak type are
    fixed when it is created, whatever is written into it (as JAX's: ``new_ref(0.)`` is a ``Ref{float32[]}`` that
    stays weakly typed, and gives way in promotion, after ``ref[...] = jnp.float32(1)``)."""
    aval = abstractify(value)
    return _lax.convert_element_type(new, aval.dtype, weak_type=aval.weak_type)


_core.indexing.get = _read
_core.indexing.copy = knp.array
_core.indexing.set = _set
