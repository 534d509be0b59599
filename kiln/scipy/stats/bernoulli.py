"""kiln.scipy.stats.bernoulli."""
from kiln.frontend.scipy.stats.bernoulli import cdf as cdf
from kiln.frontend.scipy.stats.bernoulli import logpmf as logpmf
from kiln.frontend.scipy.stats.bernoulli import pmf as pmf
from kiln.frontend.scipy.stats.bernoulli import ppf as ppf

__all__ = [
    "cdf", "logpmf", "pmf", "ppf"
]
