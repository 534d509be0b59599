"""kiln.scipy."""
from . import special, stats

__all__ = ["special", "stats"]
