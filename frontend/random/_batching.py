"""Batching rules that kiln.random needs under ``vmap`` for primitives that did not declare one yet
(the special-function, bitcast and sort primitives). Registered only where no rule exists, so the
primitives' own modules take precedence as soon as they register theirs.
"""
from __future__ import annotations

from ..batching.core import BatchContext, batch_rules, move_dim
from ..lax import sorting as so
from ..lax import special as sp
from ..tracing import abstractify


def _elementwise(prim):
    def rule(ctx: BatchContext, args, dims, **params):
        d = next(d for d in dims if d is not None)
        return prim.bind(*[move_dim(a, bd, d, ctx.size) for a, bd in zip(args, dims)], **params), d
    return rule


def _bitcast_rule(ctx: BatchContext, args, dims, *, new_dtype):
    (x,), (d,) = args, dims
    aval = abstractify(x)
    if new_dtype.itemsize > aval.dtype.itemsize and d == aval.ndim - 1:
        x, d = move_dim(x, d, 0, ctx.size), 0  # the trailing dimension is consumed: keep the batch off it
    return sp.bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


def _sort_rule(ctx: BatchContext, args, dims, *, dimension, is_stable, num_keys):
    args = [move_dim(a, d, 0, ctx.size) for a, d in zip(args, dims)]
    outs = so.sort_p.bind(*args, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return list(outs), [0] * len(outs)


def _register() -> None:
    for prim in [*sp.special_unary_prims.values(), sp.nextafter_p, sp.real_p, sp.imag_p, sp.complex_p]:
        batch_rules.setdefault(prim, _elementwise(prim))
    batch_rules.setdefault(sp.bitcast_convert_type_p, _bitcast_rule)
    batch_rules.setdefault(so.sort_p, _sort_rule)


_register()
