"""kiln.scipy."""
from . import integrate, linalg, ndimage, optimize, signal, spatial, special, stats

__all__ = ["integrate", "linalg", "ndimage", "optimize", "signal", "spatial", "special", "stats"]
