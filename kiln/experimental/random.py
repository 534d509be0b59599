"""kiln.experimental.random: a stateful random generator (as ``jax.experimental.random``)."""
from kiln.frontend.random.stateful import StatefulPRNG as StatefulPRNG
from kiln.frontend.random.stateful import stateful_rng as stateful_rng

__all__ = ["StatefulPRNG", "stateful_rng"]
