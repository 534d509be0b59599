"""kiln.experimental: JAX's ``jax.experimental`` modules that programs still import (``shard_map``'s older
spelling, ``mesh_utils``, ``multihost_utils``, ``checkify``, ``compilation_cache``, ``ode``,
``jet``, ``random``'s stateful generator, ``rnn``, ``sparse``, ``layout``, ``compute_on``,
``serialize_executable``, ``xla_metadata``, ``hijax``'s VJPHiPrimitive, ``key_reuse``), and ``io_callback``."""
from kiln.experimental import (
    checkify,
    compilation_cache,
    compute_on,
    hijax,
    jet,
    key_reuse,
    layout,
    mesh_utils,
    multihost_utils,
    ode,
    optimizers,
    random,
    rnn,
    serialize_executable,
    shard_map,
    sparse,
    stax,
    xla_metadata,
)
from kiln.frontend.lax.callbacks import io_callback as io_callback

__all__ = ["checkify", "compilation_cache", "compute_on", "hijax", "io_callback", "jet", "key_reuse", "layout",
           "mesh_utils", "multihost_utils", "ode", "optimizers", "random", "rnn", "serialize_executable", "shard_map",
           "sparse", "stax", "xla_metadata"]
