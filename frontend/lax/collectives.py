"""Collectives over a named axis: psum, pmean, pmax, pmin, all_gather, axis_index.

Inside ``vmap(f, axis_name="i")`` they combine values across the batch elements of axis "i" (their
batching rules, in ``batching/rules_collectives.py``, do the reduction). An axis name must be bound
(``core.axis_env``) when the collective is traced; outside any binding it is a ``NameError``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import axis_env, dtypes, tree_util
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.tracing import abstractify
from . import api as lax


def _names(axis_name: Any) -> tuple:
    return axis_name if isinstance(axis_name, tuple) else (axis_name,)


def _check_bound(fname: str, axis_name: Any) -> None:
    bound = axis_env.bound_names()
    for n in _names(axis_name):
        if n not in bound:
            listed = ", ".join(map(repr, bound)) or "none"
            raise NameError(f"kiln.lax.{fname}: unbound axis name {n!r} (bound axis names: {listed}). Collectives "
                            "only work inside kiln.vmap(..., axis_name=...) with that name.")


def _same_rule(x: ShapedArray, *, axis_name) -> ShapedArray:
    return x


psum_p = Primitive("psum", _same_rule)
pmax_p = Primitive("pmax", _same_rule)
pmin_p = Primitive("pmin", _same_rule)


def _all_gather_rule(x: ShapedArray, *, axis_name, axis: int, tiled: bool, axis_size: int) -> ShapedArray:
    shape = list(x.shape)
    if tiled:
        shape[axis] *= axis_size
    else:
        shape.insert(axis, axis_size)
    return x.update(shape=tuple(shape))


all_gather_p = Primitive("all_gather", _all_gather_rule)


def _axis_index_rule(*, axis_name) -> ShapedArray:
    return ShapedArray((), dtypes.canonicalize_dtype(np.int32), False)


axis_index_p = Primitive("axis_index", _axis_index_rule)


def _reducer(fname: str, prim: Primitive):
    def collective(x, axis_name):
        _check_bound(fname, axis_name)
        return tree_util.tree_map(lambda v: prim.bind(v, axis_name=axis_name), x)
    collective.__name__ = collective.__qualname__ = fname
    return collective


psum = _reducer("psum", psum_p)
psum.__doc__ = "Sum of ``x`` over the named axis (every element gets the total)."
pmax = _reducer("pmax", pmax_p)
pmax.__doc__ = "Maximum of ``x`` over the named axis."
pmin = _reducer("pmin", pmin_p)
pmin.__doc__ = "Minimum of ``x`` over the named axis."


def pmean(x, axis_name):
    """Mean of ``x`` over the named axis."""
    _check_bound("pmean", axis_name)
    count = psum(1.0, axis_name)

    def mean(v):
        total = psum_p.bind(v, axis_name=axis_name)
        aval = abstractify(total)
        n = lax.convert_element_type(count, aval.dtype)
        return lax.div(total, n if aval.ndim == 0 else lax.broadcast_in_dim(n, aval.shape, ()))
    return tree_util.tree_map(mean, x)


def axis_index(axis_name):
    """The position of the current element along the named axis."""
    _check_bound("axis_index", axis_name)
    return axis_index_p.bind(axis_name=axis_name)


def all_gather(x, axis_name, *, axis: int = 0, tiled: bool = False):
    """The values of ``x`` of every element of the named axis, stacked along ``axis`` (``tiled``:
    concatenated along it)."""
    _check_bound("all_gather", axis_name)
    size = axis_env.axis_size(axis_name)
    if size is None:
        raise NameError(f"kiln.lax.all_gather: unbound axis name {axis_name!r}")
    ndim = abstractify(x).ndim
    axis = axis % (ndim + (0 if tiled else 1))
    return all_gather_p.bind(x, axis_name=axis_name, axis=axis, tiled=tiled, axis_size=size)


__all__ = ["all_gather", "axis_index", "pmax", "pmean", "pmin", "psum"]
