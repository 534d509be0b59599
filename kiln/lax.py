"""kiln.lax: the primitives as functions, without implicit promotion (as ``jax.lax``)."""
from kiln.frontend.lax import *  # noqa: F401,F403
from kiln.frontend.lax import RoundingMethod  # noqa: F401
