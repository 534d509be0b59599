"""kiln.scipy.special."""
from kiln.frontend.scipy.special import digamma as digamma
from kiln.frontend.scipy.special import entr as entr
from kiln.frontend.scipy.special import erf as erf
from kiln.frontend.scipy.special import erfc as erfc
from kiln.frontend.scipy.special import erfinv as erfinv
from kiln.frontend.scipy.special import expit as expit
from kiln.frontend.scipy.special import gammaln as gammaln
from kiln.frontend.scipy.special import logit as logit
from kiln.frontend.scipy.special import logsumexp as logsumexp
from kiln.frontend.scipy.special import ndtr as ndtr
from kiln.frontend.scipy.special import psi as psi
from kiln.frontend.scipy.special import xlog1py as xlog1py
from kiln.frontend.scipy.special import xlogy as xlogy

__all__ = [
    "digamma", "entr", "erf", "erfc", "erfinv", "expit", "gammaln", "logit", "logsumexp", "ndtr", "psi", "xlog1py",
    "xlogy",
]
