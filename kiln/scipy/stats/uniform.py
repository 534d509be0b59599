"""kiln.scipy.stats.uniform."""
from kiln.frontend.scipy.stats.uniform import cdf as cdf
from kiln.frontend.scipy.stats.uniform import logpdf as logpdf
from kiln.frontend.scipy.stats.uniform import pdf as pdf
from kiln.frontend.scipy.stats.uniform import ppf as ppf

__all__ = [
    "cdf", "logpdf", "pdf", "ppf"
]
