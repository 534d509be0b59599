"""kiln.scipy.stats.gumbel_r."""
from kiln.frontend.scipy.stats.gumbel_r import cdf as cdf
from kiln.frontend.scipy.stats.gumbel_r import logcdf as logcdf
from kiln.frontend.scipy.stats.gumbel_r import logpdf as logpdf
from kiln.frontend.scipy.stats.gumbel_r import logsf as logsf
from kiln.frontend.scipy.stats.gumbel_r import pdf as pdf
from kiln.frontend.scipy.stats.gumbel_r import ppf as ppf
from kiln.frontend.scipy.stats.gumbel_r import sf as sf

__all__ = [
    "cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"
]
