"""Collectives outside their vmap have no meaning: their emission rules explain that."""
from __future__ import annotations

from ..registry import register


@register("psum", "pmax", "pmin", "all_gather", "axis_index", "ppermute", "all_to_all", "psum_scatter")
def _unbound(ctx, eqn, *args):
    raise NameError(f"kiln.lax.{eqn.prim.name}: unbound axis name {eqn.params['axis_name']!r}: collectives only "
                    "work inside kiln.vmap(..., axis_name=...) with that name")
