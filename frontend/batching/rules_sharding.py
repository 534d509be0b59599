"""Batching rule of ``lax/sharding.py``: the batch dimension is not split (a ``None`` in the spec)."""
from __future__ import annotations

from ..driver.sharding import NamedSharding, PartitionSpec
from ..lax import sharding
from .core import batch_rules


def _rule(ctx, args, dims, **params):
    (x,), (d,) = args, dims
    layout = params["sharding"]
    if d is None:
        return sharding.sharding_constraint_p.bind(x, **params), None
    entries = list(layout.spec.partitions) + [None] * (len(x.aval.shape) - 1 - len(layout.spec))
    entries.insert(d, None)
    return sharding.constrain(x, NamedSharding(layout.mesh, PartitionSpec(*entries))), d


batch_rules[sharding.sharding_constraint_p] = _rule
