"""kiln.experimental: JAX's ``jax.experimental`` modules that programs still import (``shard_map``'s older
spelling, ``mesh_utils``, ``multihost_utils``, ``checkify``), and ``io_callback``."""
from kiln.experimental import checkify, mesh_utils, multihost_utils, optimizers, shard_map, sparse, stax
from kiln.frontend.lax.callbacks import io_callback as io_callback

__all__ = ["checkify", "io_callback", "mesh_utils", "multihost_utils", "optimizers", "shard_map", "sparse", "stax"]
