"""kiln.nn.initializers: parameter initializers that take PRNG keys (as jax.nn.initializers)."""
from kiln.frontend.nn.initializers import Initializer as Initializer
from kiln.frontend.nn.initializers import constant as constant
from kiln.frontend.nn.initializers import delta_orthogonal as delta_orthogonal
from kiln.frontend.nn.initializers import glorot_normal as glorot_normal
from kiln.frontend.nn.initializers import glorot_uniform as glorot_uniform
from kiln.frontend.nn.initializers import he_normal as he_normal
from kiln.frontend.nn.initializers import he_uniform as he_uniform
from kiln.frontend.nn.initializers import kaiming_normal as kaiming_normal
from kiln.frontend.nn.initializers import kaiming_uniform as kaiming_uniform
from kiln.frontend.nn.initializers import lecun_normal as lecun_normal
from kiln.frontend.nn.initializers import lecun_uniform as lecun_uniform
from kiln.frontend.nn.initializers import normal as normal
from kiln.frontend.nn.initializers import ones as ones
from kiln.frontend.nn.initializers import orthogonal as orthogonal
from kiln.frontend.nn.initializers import truncated_normal as truncated_normal
from kiln.frontend.nn.initializers import uniform as uniform
from kiln.frontend.nn.initializers import variance_scaling as variance_scaling
from kiln.frontend.nn.initializers import xavier_normal as xavier_normal
from kiln.frontend.nn.initializers import xavier_uniform as xavier_uniform
from kiln.frontend.nn.initializers import zeros as zeros

__all__ = [
    "Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
    "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal", "ones", "orthogonal",
    "truncated_normal", "uniform", "variance_scaling", "xavier_normal", "xavier_uniform", "zeros",
]
