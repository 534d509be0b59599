"""kiln.nn: activations and other neural-network helpers (as jax.nn)."""
from kiln.frontend.nn import *  # noqa: F401,F403
from kiln.nn import initializers  # noqa: F401,E402  (kiln.nn.initializers)
