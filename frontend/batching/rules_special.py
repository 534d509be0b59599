"""Batching rules of the special elementwise primitives (``frontend/lax/special.py``).

They are elementwise, so the batch dimension stays where it is (the helper of ``rules.py``);
``bitcast_convert_type`` changes the last dimension only, so it too keeps the batch dimension
unless the batch is that last dimension.
"""
from __future__ import annotations

from ..core.tracing import abstractify
from ..lax import special as sp
from .core import batch_rules, move_dim
from .rules_elementwise import register_elementwise

for _p in [*sp.special_unary_prims.values(), sp.nextafter_p, sp.mulhi_p, sp.real_p, sp.imag_p, sp.complex_p, sp.conj_p,
           sp.integer_pow_p]:
    register_elementwise(_p)


def _bitcast_convert_type_rule(ctx, args, dims, *, new_dtype):
    (x,), (d,) = args, dims
    aval = abstractify(x)
    if new_dtype.itemsize > aval.dtype.itemsize and d == aval.ndim - 1:
        # A widening bitcast consumes the last dimension: the batch must not be it.
        x, d = move_dim(x, d, 0, ctx.size), 0
    return sp.bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


batch_rules[sp.bitcast_convert_type_p] = _bitcast_convert_type_rule
