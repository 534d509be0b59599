"""kiln.scipy.stats.poisson."""
from kiln.frontend.scipy.stats.poisson import cdf as cdf
from kiln.frontend.scipy.stats.poisson import entropy as entropy
from kiln.frontend.scipy.stats.poisson import logpmf as logpmf
from kiln.frontend.scipy.stats.poisson import pmf as pmf

__all__ = [
    "cdf", "entropy", "logpmf", "pmf"
]
