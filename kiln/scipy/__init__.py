"""kiln.scipy."""
from . import fft, special

__all__ = ["fft", "special"]
