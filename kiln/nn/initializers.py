"""kiln.nn.initializers: parameter initializers that take PRNG keys (as jax.nn.initializers)."""
from kiln.frontend.nn.initializers import *  # noqa: F401,F403
from kiln.frontend.nn.initializers import __all__  # noqa: F401
