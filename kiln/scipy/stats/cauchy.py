"""kiln.scipy.stats.cauchy."""
from kiln.frontend.scipy.stats.cauchy import cdf as cdf
from kiln.frontend.scipy.stats.cauchy import isf as isf
from kiln.frontend.scipy.stats.cauchy import logcdf as logcdf
from kiln.frontend.scipy.stats.cauchy import logpdf as logpdf
from kiln.frontend.scipy.stats.cauchy import logsf as logsf
from kiln.frontend.scipy.stats.cauchy import pdf as pdf
from kiln.frontend.scipy.stats.cauchy import ppf as ppf
from kiln.frontend.scipy.stats.cauchy import sf as sf

__all__ = [
    "cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"
]
