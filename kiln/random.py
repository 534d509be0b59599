"""kiln.random: explicit, splittable PRNG keys and samplers (as ``jax.random``), bit-exact with JAX."""
from kiln.frontend.random import KeyArray as KeyArray
from kiln.frontend.random import KeyDtype as KeyDtype
from kiln.frontend.random import PRNGKey as PRNGKey
from kiln.frontend.random import ball as ball
from kiln.frontend.random import bernoulli as bernoulli
from kiln.frontend.random import beta as beta
from kiln.frontend.random import binomial as binomial
from kiln.frontend.random import bits as bits
from kiln.frontend.random import categorical as categorical
from kiln.frontend.random import cauchy as cauchy
from kiln.frontend.random import chisquare as chisquare
from kiln.frontend.random import choice as choice
from kiln.frontend.random import clone as clone
from kiln.frontend.random import dirichlet as dirichlet
from kiln.frontend.random import double_sided_maxwell as double_sided_maxwell
from kiln.frontend.random import exponential as exponential
from kiln.frontend.random import f as f
from kiln.frontend.random import fold_in as fold_in
from kiln.frontend.random import gamma as gamma
from kiln.frontend.random import generalized_normal as generalized_normal
from kiln.frontend.random import geometric as geometric
from kiln.frontend.random import gumbel as gumbel
from kiln.frontend.random import key as key
from kiln.frontend.random import key_data as key_data
from kiln.frontend.random import key_dtype as key_dtype
from kiln.frontend.random import key_impl as key_impl
from kiln.frontend.random import laplace as laplace
from kiln.frontend.random import loggamma as loggamma
from kiln.frontend.random import logistic as logistic
from kiln.frontend.random import lognormal as lognormal
from kiln.frontend.random import maxwell as maxwell
from kiln.frontend.random import multinomial as multinomial
from kiln.frontend.random import multivariate_normal as multivariate_normal
from kiln.frontend.random import normal as normal
from kiln.frontend.random import orthogonal as orthogonal
from kiln.frontend.random import pareto as pareto
from kiln.frontend.random import permutation as permutation
from kiln.frontend.random import poisson as poisson
from kiln.frontend.random import rademacher as rademacher
from kiln.frontend.random import randint as randint
from kiln.frontend.random import rayleigh as rayleigh
from kiln.frontend.random import split as split
from kiln.frontend.random import t as t
from kiln.frontend.random import triangular as triangular
from kiln.frontend.random import truncated_normal as truncated_normal
from kiln.frontend.random import uniform as uniform
from kiln.frontend.random import wald as wald
from kiln.frontend.random import weibull_min as weibull_min
from kiln.frontend.random import wrap_key_data as wrap_key_data

__all__ = [
    "KeyArray", "KeyDtype", "PRNGKey", "ball", "bernoulli", "beta", "binomial", "bits", "categorical", "cauchy",
    "chisquare", "choice", "clone", "dirichlet", "double_sided_maxwell", "exponential", "f", "fold_in", "gamma",
    "generalized_normal", "geometric", "gumbel", "key", "key_data", "key_dtype", "key_impl", "laplace", "loggamma",
    "logistic", "lognormal", "maxwell", "multinomial", "multivariate_normal", "normal", "orthogonal", "pareto",
    "permutation", "poisson", "rademacher", "randint", "rayleigh", "split", "t", "triangular", "truncated_normal",
    "uniform", "wald", "weibull_min", "wrap_key_data"
]
