"""kiln.scipy.stats.norm."""
from kiln.frontend.scipy.stats.norm import cdf as cdf
from kiln.frontend.scipy.stats.norm import isf as isf
from kiln.frontend.scipy.stats.norm import logcdf as logcdf
from kiln.frontend.scipy.stats.norm import logpdf as logpdf
from kiln.frontend.scipy.stats.norm import logsf as logsf
from kiln.frontend.scipy.stats.norm import pdf as pdf
from kiln.frontend.scipy.stats.norm import ppf as ppf
from kiln.frontend.scipy.stats.norm import sf as sf

__all__ = [
    "cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"
]
