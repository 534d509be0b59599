"""kiln.scipy.stats.gumbel_l."""
from kiln.frontend.scipy.stats.gumbel_l import cdf as cdf
from kiln.frontend.scipy.stats.gumbel_l import logcdf as logcdf
from kiln.frontend.scipy.stats.gumbel_l import logpdf as logpdf
from kiln.frontend.scipy.stats.gumbel_l import logsf as logsf
from kiln.frontend.scipy.stats.gumbel_l import pdf as pdf
from kiln.frontend.scipy.stats.gumbel_l import ppf as ppf
from kiln.frontend.scipy.stats.gumbel_l import sf as sf

__all__ = [
    "cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"
]
