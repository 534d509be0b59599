"""kiln.scipy.stats.gennorm."""
from kiln.frontend.scipy.stats.gennorm import cdf as cdf
from kiln.frontend.scipy.stats.gennorm import logpdf as logpdf
from kiln.frontend.scipy.stats.gennorm import pdf as pdf

__all__ = [
    "cdf", "logpdf", "pdf"
]
