"""kiln.interpreters.batching (JAX's ``jax.interpreters.batching``): ``primitive_batchers[p] =
rule(batched_args, batch_dims, **params) -> (out, out_dim)``, a batch dim being an axis or ``not_mapped``."""
from kiln.frontend.extend import not_mapped as not_mapped
from kiln.frontend.extend import primitive_batchers as primitive_batchers

__all__ = ["not_mapped", "primitive_batchers"]
