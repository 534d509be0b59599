"""kiln.scipy.stats.betabinom."""
from kiln.frontend.scipy.stats.betabinom import logpmf as logpmf
from kiln.frontend.scipy.stats.betabinom import pmf as pmf

__all__ = [
    "logpmf", "pmf"
]
