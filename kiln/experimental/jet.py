"""kiln.experimental.jet: Taylor-mode automatic differentiation (as ``jax.experimental.jet``)."""
from kiln.frontend.jet import jet as jet

__all__ = ["jet"]
