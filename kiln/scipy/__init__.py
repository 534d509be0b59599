"""kiln.scipy."""
from . import special

__all__ = ["special"]
