"""kiln.scipy.stats.t."""
from kiln.frontend.scipy.stats.t import logpdf as logpdf
from kiln.frontend.scipy.stats.t import pdf as pdf

__all__ = [
    "logpdf", "pdf"
]
