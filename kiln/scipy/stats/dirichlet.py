"""kiln.scipy.stats.dirichlet."""
from kiln.frontend.scipy.stats.dirichlet import logpdf as logpdf
from kiln.frontend.scipy.stats.dirichlet import pdf as pdf

__all__ = [
    "logpdf", "pdf"
]
