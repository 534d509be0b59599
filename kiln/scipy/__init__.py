"""kiln.scipy."""
from . import fft, integrate, linalg, ndimage, optimize, signal, spatial, special, stats

__all__ = ["fft", "integrate", "linalg", "ndimage", "optimize", "signal", "spatial", "special", "stats"]
