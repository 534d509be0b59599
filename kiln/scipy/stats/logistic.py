"""kiln.scipy.stats.logistic."""
from kiln.frontend.scipy.stats.logistic import cdf as cdf
from kiln.frontend.scipy.stats.logistic import isf as isf
from kiln.frontend.scipy.stats.logistic import logpdf as logpdf
from kiln.frontend.scipy.stats.logistic import pdf as pdf
from kiln.frontend.scipy.stats.logistic import ppf as ppf
from kiln.frontend.scipy.stats.logistic import sf as sf

__all__ = [
    "cdf", "isf", "logpdf", "pdf", "ppf", "sf"
]
