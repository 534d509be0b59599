"""kiln.nn: activations and other neural-network helpers (as jax.nn)."""
from kiln.frontend.nn import celu as celu
from kiln.frontend.nn import dot_product_attention as dot_product_attention
from kiln.frontend.nn import elu as elu
from kiln.frontend.nn import gelu as gelu
from kiln.frontend.nn import get_scaled_dot_general_config as get_scaled_dot_general_config
from kiln.frontend.nn import glu as glu
from kiln.frontend.nn import hard_sigmoid as hard_sigmoid
from kiln.frontend.nn import hard_silu as hard_silu
from kiln.frontend.nn import hard_swish as hard_swish
from kiln.frontend.nn import hard_tanh as hard_tanh
from kiln.frontend.nn import identity as identity
from kiln.frontend.nn import leaky_relu as leaky_relu
from kiln.frontend.nn import log1mexp as log1mexp
from kiln.frontend.nn import log_sigmoid as log_sigmoid
from kiln.frontend.nn import log_softmax as log_softmax
from kiln.frontend.nn import logmeanexp as logmeanexp
from kiln.frontend.nn import logsumexp as logsumexp
from kiln.frontend.nn import mish as mish
from kiln.frontend.nn import one_hot as one_hot
from kiln.frontend.nn import relu as relu
from kiln.frontend.nn import relu6 as relu6
from kiln.frontend.nn import scaled_dot_general as scaled_dot_general
from kiln.frontend.nn import scaled_matmul as scaled_matmul
from kiln.frontend.nn import selu as selu
from kiln.frontend.nn import sigmoid as sigmoid
from kiln.frontend.nn import silu as silu
from kiln.frontend.nn import soft_sign as soft_sign
from kiln.frontend.nn import softmax as softmax
from kiln.frontend.nn import softplus as softplus
from kiln.frontend.nn import sparse_plus as sparse_plus
from kiln.frontend.nn import sparse_sigmoid as sparse_sigmoid
from kiln.frontend.nn import squareplus as squareplus
from kiln.frontend.nn import standardize as standardize
from kiln.frontend.nn import swish as swish
from kiln.frontend.nn import tanh as tanh
from kiln.nn import initializers

__all__ = [
    "celu", "dot_product_attention", "elu", "gelu", "get_scaled_dot_general_config", "glu", "hard_sigmoid",
    "hard_silu", "hard_swish", "hard_tanh", "identity", "initializers", "leaky_relu", "log1mexp", "log_sigmoid",
    "log_softmax", "logmeanexp", "logsumexp", "mish", "one_hot", "relu", "relu6", "scaled_dot_general",
    "scaled_matmul", "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus", "sparse_plus", "sparse_sigmoid",
    "squareplus", "standardize", "swish", "tanh",
]
