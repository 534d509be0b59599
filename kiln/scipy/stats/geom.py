"""kiln.scipy.stats.geom."""
from kiln.frontend.scipy.stats.geom import logpmf as logpmf
from kiln.frontend.scipy.stats.geom import pmf as pmf

__all__ = [
    "logpmf", "pmf"
]
