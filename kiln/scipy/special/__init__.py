"""kiln.scipy.special."""
from kiln.frontend.scipy.special import bernoulli as bernoulli
from kiln.frontend.scipy.special import bessel_jn as bessel_jn
from kiln.frontend.scipy.special import beta as beta
from kiln.frontend.scipy.special import betainc as betainc
from kiln.frontend.scipy.special import betaln as betaln
from kiln.frontend.scipy.special import boxcox as boxcox
from kiln.frontend.scipy.special import boxcox1p as boxcox1p
from kiln.frontend.scipy.special import comb as comb
from kiln.frontend.scipy.special import dawsn as dawsn
from kiln.frontend.scipy.special import digamma as digamma
from kiln.frontend.scipy.special import entr as entr
from kiln.frontend.scipy.special import erf as erf
from kiln.frontend.scipy.special import erfc as erfc
from kiln.frontend.scipy.special import erfcx as erfcx
from kiln.frontend.scipy.special import erfinv as erfinv
from kiln.frontend.scipy.special import exp1 as exp1
from kiln.frontend.scipy.special import expi as expi
from kiln.frontend.scipy.special import expit as expit
from kiln.frontend.scipy.special import expn as expn
from kiln.frontend.scipy.special import factorial as factorial
from kiln.frontend.scipy.special import fresnel as fresnel
from kiln.frontend.scipy.special import gamma as gamma
from kiln.frontend.scipy.special import gammainc as gammainc
from kiln.frontend.scipy.special import gammaincc as gammaincc
from kiln.frontend.scipy.special import gammaln as gammaln
from kiln.frontend.scipy.special import gammasgn as gammasgn
from kiln.frontend.scipy.special import hyp1f1 as hyp1f1
from kiln.frontend.scipy.special import hyp2f1 as hyp2f1
from kiln.frontend.scipy.special import i0 as i0
from kiln.frontend.scipy.special import i0e as i0e
from kiln.frontend.scipy.special import i1 as i1
from kiln.frontend.scipy.special import i1e as i1e
from kiln.frontend.scipy.special import kl_div as kl_div
from kiln.frontend.scipy.special import log_ndtr as log_ndtr
from kiln.frontend.scipy.special import log_softmax as log_softmax
from kiln.frontend.scipy.special import loggamma as loggamma
from kiln.frontend.scipy.special import logit as logit
from kiln.frontend.scipy.special import logsumexp as logsumexp
from kiln.frontend.scipy.special import multigammaln as multigammaln
from kiln.frontend.scipy.special import ndtr as ndtr
from kiln.frontend.scipy.special import ndtri as ndtri
from kiln.frontend.scipy.special import owens_t as owens_t
from kiln.frontend.scipy.special import poch as poch
from kiln.frontend.scipy.special import polygamma as polygamma
from kiln.frontend.scipy.special import psi as psi
from kiln.frontend.scipy.special import rel_entr as rel_entr
from kiln.frontend.scipy.special import sici as sici
from kiln.frontend.scipy.special import softmax as softmax
from kiln.frontend.scipy.special import spence as spence
from kiln.frontend.scipy.special import sph_harm_y as sph_harm_y
from kiln.frontend.scipy.special import wofz as wofz
from kiln.frontend.scipy.special import xlog1py as xlog1py
from kiln.frontend.scipy.special import xlogy as xlogy
from kiln.frontend.scipy.special import zeta as zeta

__all__ = [
    "bernoulli", "bessel_jn", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "dawsn", "digamma", "entr",
    "erf", "erfc", "erfcx", "erfinv", "exp1", "expi", "expit", "expn", "factorial", "fresnel", "gamma", "gammainc",
    "gammaincc", "gammaln", "gammasgn", "hyp1f1", "hyp2f1", "i0", "i0e", "i1", "i1e", "kl_div", "log_ndtr",
    "log_softmax", "loggamma", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "owens_t", "poch",
    "polygamma", "psi", "rel_entr", "sici", "softmax", "spence", "sph_harm_y", "wofz", "xlog1py", "xlogy", "zeta"
]
