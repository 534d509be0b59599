"""kiln.scipy.stats.nbinom."""
from kiln.frontend.scipy.stats.nbinom import logpmf as logpmf
from kiln.frontend.scipy.stats.nbinom import pmf as pmf

__all__ = [
    "logpmf", "pmf"
]
