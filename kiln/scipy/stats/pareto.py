"""kiln.scipy.stats.pareto."""
from kiln.frontend.scipy.stats.pareto import cdf as cdf
from kiln.frontend.scipy.stats.pareto import logcdf as logcdf
from kiln.frontend.scipy.stats.pareto import logpdf as logpdf
from kiln.frontend.scipy.stats.pareto import logsf as logsf
from kiln.frontend.scipy.stats.pareto import pdf as pdf
from kiln.frontend.scipy.stats.pareto import ppf as ppf
from kiln.frontend.scipy.stats.pareto import sf as sf

__all__ = [
    "cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"
]
