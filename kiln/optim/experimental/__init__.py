"""kiln.optim.experimental: optax.experimental (its aggregating module: per-example gradient aggregators)."""
from kiln.optim.experimental import aggregating as aggregating

__all__ = ["aggregating"]
