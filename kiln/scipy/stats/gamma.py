"""kiln.scipy.stats.gamma."""
from kiln.frontend.scipy.stats.gamma import cdf as cdf
from kiln.frontend.scipy.stats.gamma import logcdf as logcdf
from kiln.frontend.scipy.stats.gamma import logpdf as logpdf
from kiln.frontend.scipy.stats.gamma import logsf as logsf
from kiln.frontend.scipy.stats.gamma import pdf as pdf
from kiln.frontend.scipy.stats.gamma import sf as sf

__all__ = [
    "cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"
]
