"""Derivative rules of ``lax/sharding.py``: a sharding constraint is linear (the tangent and the cotangent
get the same layout)."""
from __future__ import annotations

from ..lax import sharding
from .jvp import linear_jvp
from .transpose import transpose_rules

linear_jvp(sharding.sharding_constraint_p)
transpose_rules[sharding.sharding_constraint_p] = lambda ct, x, **params: [
    sharding.sharding_constraint_p.bind(ct, **params)]
