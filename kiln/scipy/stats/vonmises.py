"""kiln.scipy.stats.vonmises."""
from kiln.frontend.scipy.stats.vonmises import logpdf as logpdf
from kiln.frontend.scipy.stats.vonmises import pdf as pdf

__all__ = [
    "logpdf", "pdf"
]
