"""kiln.scipy."""
from . import linalg, special, stats

__all__ = ["linalg", "special", "stats"]
