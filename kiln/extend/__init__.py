"""kiln.extend: the part of ``jax.extend`` kiln has: ``kiln.extend.core``, the IR's classes under JAX's names."""
from kiln.extend import core

__all__ = ["core"]
