"""kiln.scipy.stats.multivariate_normal."""
from kiln.frontend.scipy.stats.multivariate_normal import logpdf as logpdf
from kiln.frontend.scipy.stats.multivariate_normal import pdf as pdf

__all__ = [
    "logpdf", "pdf"
]
