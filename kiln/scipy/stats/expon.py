"""kiln.scipy.stats.expon."""
from kiln.frontend.scipy.stats.expon import cdf as cdf
from kiln.frontend.scipy.stats.expon import logcdf as logcdf
from kiln.frontend.scipy.stats.expon import logpdf as logpdf
from kiln.frontend.scipy.stats.expon import logsf as logsf
from kiln.frontend.scipy.stats.expon import pdf as pdf
from kiln.frontend.scipy.stats.expon import ppf as ppf
from kiln.frontend.scipy.stats.expon import sf as sf

__all__ = [
    "cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"
]
