"""kiln.scipy.stats.truncnorm."""
from kiln.frontend.scipy.stats.truncnorm import cdf as cdf
from kiln.frontend.scipy.stats.truncnorm import logcdf as logcdf
from kiln.frontend.scipy.stats.truncnorm import logpdf as logpdf
from kiln.frontend.scipy.stats.truncnorm import logsf as logsf
from kiln.frontend.scipy.stats.truncnorm import pdf as pdf
from kiln.frontend.scipy.stats.truncnorm import sf as sf

__all__ = [
    "cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"
]
