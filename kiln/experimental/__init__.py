"""kiln.experimental: JAX's ``jax.experimental`` modules that programs still import (``shard_map``'s older
spelling, ``mesh_utils``, ``multihost_utils``)."""
from kiln.experimental import mesh_utils, multihost_utils, shard_map

__all__ = ["mesh_utils", "multihost_utils", "shard_map"]
