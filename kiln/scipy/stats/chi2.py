"""kiln.scipy.stats.chi2."""
from kiln.frontend.scipy.stats.chi2 import cdf as cdf
from kiln.frontend.scipy.stats.chi2 import logcdf as logcdf
from kiln.frontend.scipy.stats.chi2 import logpdf as logpdf
from kiln.frontend.scipy.stats.chi2 import logsf as logsf
from kiln.frontend.scipy.stats.chi2 import pdf as pdf
from kiln.frontend.scipy.stats.chi2 import sf as sf

__all__ = [
    "cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"
]
