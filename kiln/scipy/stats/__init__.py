"""kiln.scipy.stats: probability distributions and statistics (as jax.scipy.stats)."""
from kiln.frontend.scipy.stats._core import mode as mode
from kiln.frontend.scipy.stats._core import rankdata as rankdata
from kiln.frontend.scipy.stats._core import sem as sem
from kiln.frontend.scipy.stats._kde import gaussian_kde as gaussian_kde

from . import (
    bernoulli,
    beta,
    betabinom,
    binom,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    gennorm,
    geom,
    gumbel_l,
    gumbel_r,
    laplace,
    logistic,
    multinomial,
    multivariate_normal,
    nbinom,
    norm,
    pareto,
    poisson,
    t,
    truncnorm,
    uniform,
    vonmises,
    wrapcauchy,
)

__all__ = [
    "bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma", "gaussian_kde",
    "gennorm", "geom",
    "gumbel_l", "gumbel_r", "laplace", "logistic", "mode", "multinomial", "multivariate_normal", "nbinom", "norm",
    "pareto", "poisson", "rankdata", "sem", "t", "truncnorm", "uniform", "vonmises", "wrapcauchy"
]
