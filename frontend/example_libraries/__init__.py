"""JAX's ``jax.example_libraries``: ``stax`` (a small neural-network layer library) and ``optimizers``
(first-order optimizers over pytrees), built on kiln's own numpy/lax/random/nn functions (floor F5)."""
