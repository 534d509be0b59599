"""kiln.scipy.stats.beta."""
from kiln.frontend.scipy.stats.beta import cdf as cdf
from kiln.frontend.scipy.stats.beta import logcdf as logcdf
from kiln.frontend.scipy.stats.beta import logpdf as logpdf
from kiln.frontend.scipy.stats.beta import logsf as logsf
from kiln.frontend.scipy.stats.beta import pdf as pdf
from kiln.frontend.scipy.stats.beta import sf as sf

__all__ = [
    "cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"
]
