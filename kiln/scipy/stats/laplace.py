"""kiln.scipy.stats.laplace."""
from kiln.frontend.scipy.stats.laplace import cdf as cdf
from kiln.frontend.scipy.stats.laplace import logpdf as logpdf
from kiln.frontend.scipy.stats.laplace import pdf as pdf

__all__ = [
    "cdf", "logpdf", "pdf"
]
