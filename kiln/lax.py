"""kiln.lax: the primitives as functions, without implicit promotion (as ``jax.lax``)."""
from kiln.frontend.batching.collectives import all_gather, axis_index, pmax, pmean, pmin, psum  # noqa: F401
from kiln.frontend.lax import *  # noqa: F401,F403
from kiln.frontend.lax import RoundingMethod  # noqa: F401
