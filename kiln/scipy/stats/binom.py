"""kiln.scipy.stats.binom."""
from kiln.frontend.scipy.stats.binom import logpmf as logpmf
from kiln.frontend.scipy.stats.binom import pmf as pmf

__all__ = [
    "logpmf", "pmf"
]
