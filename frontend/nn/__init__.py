"""kiln.nn implementation: activations and other neural-network helpers (as ``jax.nn``)."""
from . import initializers  # noqa: F401,E402  (kiln.nn.initializers)
from .functions import *  # noqa: F401,F403
from .functions import __all__  # noqa: F401
