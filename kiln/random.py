"""kiln.random: explicit, splittable PRNG keys and samplers (as ``jax.random``), bit-exact with JAX."""
from kiln.frontend.random import *  # noqa: F401,F403
