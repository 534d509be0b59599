"""kiln.scipy.stats.wrapcauchy."""
from kiln.frontend.scipy.stats.wrapcauchy import logpdf as logpdf
from kiln.frontend.scipy.stats.wrapcauchy import pdf as pdf

__all__ = [
    "logpdf", "pdf"
]
