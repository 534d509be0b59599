"""Collectives over a named vmap axis: psum, pmean, pmax, pmin, all_gather, axis_index.

Inside ``vmap(f, axis_name="i")`` these combine values across the batch elements of axis "i".
They are primitives whose batching rule (for their own axis name) does the reduction; the same
names will serve multi-device code later.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.primitive import Primitive
from ..core.tracing import abstractify
from .core import BatchContext, always_batched, batch_rules, move_dim


class _AxisNames(threading.local):
    def __init__(self) -> None:
        self.names: list[Any] = []


_axes = _AxisNames()


class axis_names_bound:
    """Context: ``name`` is a bound axis name while a vmap traces its function."""

    def __init__(self, name: Any):
        self.name = name

    def __enter__(self):
        if self.name is not None:
            _axes.names.append(self.name)

    def __exit__(self, *exc):
        if self.name is not None:
            _axes.names.pop()


def _check_bound(fname: str, axis_name: Any) -> None:
    names = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    for n in names:
        if n not in _axes.names:
            bound = ", ".join(map(repr, _axes.names)) or "none"
            raise NameError(f"kiln.lax.{fname}: unbound axis name {n!r} (bound axis names: {bound}). Collectives "
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
always_batched.add(axis_index_p)


def psum(x, axis_name):
    """Sum of ``x`` over the batch elements of the named axis (every element gets the total)."""
    _check_bound("psum", axis_name)
    from ..core import tree_util
    return tree_util.tree_map(lambda v: psum_p.bind(v, axis_name=axis_name), x)


def pmax(x, axis_name):
    _check_bound("pmax", axis_name)
    from ..core import tree_util
    return tree_util.tree_map(lambda v: pmax_p.bind(v, axis_name=axis_name), x)


def pmin(x, axis_name):
    _check_bound("pmin", axis_name)
    from ..core import tree_util
    return tree_util.tree_map(lambda v: pmin_p.bind(v, axis_name=axis_name), x)


def pmean(x, axis_name):
    """Mean of ``x`` over the named axis."""
    _check_bound("pmean", axis_name)
    from ..core import tree_util
    n = psum(1.0, axis_name) if not isinstance(axis_name, tuple) else psum(1.0, axis_name)

    def mean(v):
        total = psum_p.bind(v, axis_name=axis_name)
        return lax.div(total, lax.convert_element_type(n, abstractify(total).dtype) if abstractify(total).ndim == 0
                       else lax.broadcast_in_dim(lax.convert_element_type(n, abstractify(total).dtype),
                                                 abstractify(total).shape, ()))
    return tree_util.tree_map(mean, x)


def axis_index(axis_name):
    """The position of the current batch element along the named axis."""
    _check_bound("axis_index", axis_name)
    return axis_index_p.bind(axis_name=axis_name)


def all_gather(x, axis_name, *, axis: int = 0, tiled: bool = False):
    """The values of ``x`` of every batch element of the named axis, stacked along ``axis``."""
    _check_bound("all_gather", axis_name)
    size = _axis_size(axis_name)
    ndim = abstractify(x).ndim
    axis = axis % (ndim + (0 if tiled else 1))
    return all_gather_p.bind(x, axis_name=axis_name, axis=axis, tiled=tiled, axis_size=size)


_sizes: dict = {}


def _axis_size(axis_name) -> int:
    size = _sizes.get(axis_name)
    if size is None:
        raise NameError(f"kiln.lax.all_gather: unbound axis name {axis_name!r}")
    return size


class axis_size_bound:
    """Context: the size of a named axis while its vmap traces (all_gather needs it for its shape)."""

    def __init__(self, name: Any, size: int):
        self.name, self.size = name, size

    def __enter__(self):
        self.saved = _sizes.get(self.name)
        if self.name is not None:
            _sizes[self.name] = self.size

    def __exit__(self, *exc):
        if self.name is not None:
            if self.saved is None:
                _sizes.pop(self.name, None)
            else:
                _sizes[self.name] = self.saved


def _names(axis_name) -> tuple:
    return axis_name if isinstance(axis_name, tuple) else (axis_name,)


def _reducer_rule(prim, reduce):
    def rule(ctx: BatchContext, args, dims, *, axis_name):
        (x,), (d,) = args, dims
        names = _names(axis_name)
        if ctx.name not in names:
            return prim.bind(x, axis_name=axis_name), d
        if d is None:  # the same value in every element: psum multiplies by the size
            out = x if prim is not psum_p else lax.mul(x, _full_like(x, ctx.size))
        else:
            out = reduce(x, (d,))
        rest = tuple(n for n in names if n != ctx.name)
        if rest:
            out = prim.bind(out, axis_name=rest if len(rest) > 1 else rest[0])
        return out, None
    batch_rules[prim] = rule


_full_like = lax.full_like


_reducer_rule(psum_p, lax.reduce_sum)
_reducer_rule(pmax_p, lax.reduce_max)
_reducer_rule(pmin_p, lax.reduce_min)


def _all_gather_batch(ctx, args, dims, *, axis_name, axis, tiled, axis_size):
    (x,), (d,) = args, dims
    if axis_name != ctx.name:
        return all_gather_p.bind(x, axis_name=axis_name, axis=axis + (axis >= d) if d is not None else axis,
                                 tiled=tiled, axis_size=axis_size), d
    out = move_dim(x, d, axis, ctx.size)
    if tiled:
        shape = list(abstractify(out).shape)
        merged = shape[:axis] + [shape[axis] * shape[axis + 1]] + shape[axis + 2:]
        out = lax.reshape(out, tuple(merged))
    return out, None


batch_rules[all_gather_p] = _all_gather_batch


def _axis_index_batch(ctx, args, dims, *, axis_name):
    if axis_name != ctx.name:
        return axis_index_p.bind(axis_name=axis_name), None
    return lax.iota(dtypes.canonicalize_dtype(np.int32), ctx.size), 0


batch_rules[axis_index_p] = _axis_index_batch
# Collectives observe the axis even when their operand is the same for every element.
always_batched.update({psum_p, pmax_p, pmin_p, all_gather_p})

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "axis_index"]


def _register_derivatives() -> None:
    """psum is linear (its transpose is psum: every element's cotangent gathers all of them);
    pmax/pmin pass the tangent of the chosen element; the others are not differentiable."""
    from ..ad.jvp import jvp_rules, non_differentiable
    from ..ad.tangents import Zero
    from ..ad.transpose import transpose_rules

    def psum_jvp(primals, tangents, *, axis_name):
        (x,), (t,) = primals, tangents
        return psum_p.bind(x, axis_name=axis_name), (t if isinstance(t, Zero) else psum_p.bind(t, axis_name=axis_name))

    jvp_rules[psum_p] = psum_jvp
    transpose_rules[psum_p] = lambda ct, x, *, axis_name: [psum_p.bind(ct, axis_name=axis_name)]
    non_differentiable.update({axis_index_p, pmax_p, pmin_p})

    def all_gather_jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        return all_gather_p.bind(x, **params), all_gather_p.bind(t, **params)

    jvp_rules[all_gather_p] = all_gather_jvp


_register_derivatives()
