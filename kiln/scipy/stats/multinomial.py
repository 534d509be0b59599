"""kiln.scipy.stats.multinomial."""
from kiln.frontend.scipy.stats.multinomial import logpmf as logpmf
from kiln.frontend.scipy.stats.multinomial import pmf as pmf

__all__ = [
    "logpmf", "pmf"
]
