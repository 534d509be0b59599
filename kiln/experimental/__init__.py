"""kiln.experimental: JAX's ``jax.experimental`` modules that programs still import (``shard_map``'s older
spelling, ``mesh_utils``, ``multihost_utils``, ``checkify``, ``compilation_cache``, ``ode``,
``jet``, ``random``'s stateful generator), and ``io_callback``."""
from kiln.experimental import (
    checkify,
    compilation_cache,
    jet,
    mesh_utils,
    multihost_utils,
    ode,
    optimizers,
    random,
    shard_map,
    sparse,
    stax,
)
from kiln.frontend.lax.callbacks import io_callback as io_callback

__all__ = ["checkify", "compilation_cache", "io_callback", "jet", "mesh_utils", "multihost_utils", "ode",
           "optimizers", "random", "shard_map", "sparse", "stax"]
