"""kiln.scipy."""
from . import cluster, fft, integrate, interpolate, linalg, ndimage, optimize, signal, sparse, spatial, special, stats

__all__ = ["cluster", "fft", "integrate", "interpolate", "linalg", "ndimage", "optimize", "signal", "sparse", "spatial",
           "special", "stats"]
