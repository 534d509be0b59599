"""kiln.scipy.stats implementation: one module per distribution (as ``jax.scipy.stats``)."""
