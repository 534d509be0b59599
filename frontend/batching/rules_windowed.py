"""Batching rule of ``reduce_window``: the batch dimension gets a window of size 1 (stride 1, no
padding, no dilation), so it stays where it is.

A batched initial value (rare: it is usually a constant) cannot be a parameter of one
``reduce_window``: the batch is then reduced from the monoid's identity and each batch element's
initial value is combined into its windows once, which is what XLA computes for an initial value
that is not the identity (padding and base dilation add no elements).

The cumulative reductions (JAX's ``_cumred_batch_rule``): the batch dimension stays where it is and the
reduced axis shifts past it.
"""
from __future__ import annotations

from .. import lax
from ..core.tracing import abstractify
from ..lax import windowed as win
from .core import batch_rules, move_dim

_COMBINE = {"add": lax.add, "mul": lax.mul, "max": lax.max, "min": lax.min, "and": lax.bitwise_and,
            "or": lax.bitwise_or}


def _insert(values, d, value):
    out = list(values)
    out.insert(d, value)
    return tuple(out)


def _reduce_window_rule(ctx, args, dims, *, computation, window_dimensions, window_strides, padding,
                        base_dilation, window_dilation):
    (x, init), (xd, initd) = args, dims
    if xd is None:
        x, xd = move_dim(x, None, 0, ctx.size), 0
    params = dict(computation=computation, window_dimensions=_insert(window_dimensions, xd, 1),
                  window_strides=_insert(window_strides, xd, 1), padding=_insert(padding, xd, (0, 0)),
                  base_dilation=_insert(base_dilation, xd, 1), window_dilation=_insert(window_dilation, xd, 1))
    if initd is None:
        return win.reduce_window_p.bind(x, init, **params), xd
    dtype = abstractify(x).dtype
    out = win.reduce_window_p.bind(x, lax.literal(win._identity(computation, dtype), dtype), **params)
    init = lax.broadcast_in_dim(init, abstractify(out).shape, (xd,))
    return _COMBINE[computation](out, init), xd


batch_rules[win.reduce_window_p] = _reduce_window_rule


def _cumulative_rule(prim):
    def rule(ctx, args, dims, *, axis, reverse):
        (x,), (d,) = args, dims
        if d is None:
            return prim.bind(x, axis=axis, reverse=reverse), None
        return prim.bind(x, axis=axis if axis < d else axis + 1, reverse=reverse), d
    return rule


for _prim in (win.cumsum_p, win.cumprod_p, win.cummax_p, win.cummin_p, win.cumlogsumexp_p):
    batch_rules[_prim] = _cumulative_rule(_prim)
