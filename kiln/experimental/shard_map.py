"""``jax.experimental.shard_map``: the older spelling of :func:`kiln.shard_map` (positional mesh and specs,
``check_rep``)."""
from kiln.frontend.control.shard_map import legacy_shard_map as shard_map

__all__ = ["shard_map"]
