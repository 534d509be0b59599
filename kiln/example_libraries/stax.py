"""kiln.example_libraries.stax: neural-network layers as (init_fun, apply_fun) pairs, as in JAX."""
from kiln.frontend.example_libraries.stax import AvgPool as AvgPool
from kiln.frontend.example_libraries.stax import BatchNorm as BatchNorm
from kiln.frontend.example_libraries.stax import Conv as Conv
from kiln.frontend.example_libraries.stax import Conv1DTranspose as Conv1DTranspose
from kiln.frontend.example_libraries.stax import ConvTranspose as ConvTranspose
from kiln.frontend.example_libraries.stax import Dense as Dense
from kiln.frontend.example_libraries.stax import Dropout as Dropout
from kiln.frontend.example_libraries.stax import Elu as Elu
from kiln.frontend.example_libraries.stax import Exp as Exp
from kiln.frontend.example_libraries.stax import FanInConcat as FanInConcat
from kiln.frontend.example_libraries.stax import FanInSum as FanInSum
from kiln.frontend.example_libraries.stax import FanOut as FanOut
from kiln.frontend.example_libraries.stax import Flatten as Flatten
from kiln.frontend.example_libraries.stax import Gelu as Gelu
from kiln.frontend.example_libraries.stax import GeneralConv as GeneralConv
from kiln.frontend.example_libraries.stax import GeneralConvTranspose as GeneralConvTranspose
from kiln.frontend.example_libraries.stax import Identity as Identity
from kiln.frontend.example_libraries.stax import LeakyRelu as LeakyRelu
from kiln.frontend.example_libraries.stax import LogSoftmax as LogSoftmax
from kiln.frontend.example_libraries.stax import MaxPool as MaxPool
from kiln.frontend.example_libraries.stax import Relu as Relu
from kiln.frontend.example_libraries.stax import Selu as Selu
from kiln.frontend.example_libraries.stax import Sigmoid as Sigmoid
from kiln.frontend.example_libraries.stax import Softmax as Softmax
from kiln.frontend.example_libraries.stax import Softplus as Softplus
from kiln.frontend.example_libraries.stax import SumPool as SumPool
from kiln.frontend.example_libraries.stax import Tanh as Tanh
from kiln.frontend.example_libraries.stax import elementwise as elementwise
from kiln.frontend.example_libraries.stax import elu as elu
from kiln.frontend.example_libraries.stax import gelu as gelu
from kiln.frontend.example_libraries.stax import glorot as glorot
from kiln.frontend.example_libraries.stax import glorot_normal as glorot_normal
from kiln.frontend.example_libraries.stax import leaky_relu as leaky_relu
from kiln.frontend.example_libraries.stax import log_softmax as log_softmax
from kiln.frontend.example_libraries.stax import logsoftmax as logsoftmax
from kiln.frontend.example_libraries.stax import normal as normal
from kiln.frontend.example_libraries.stax import ones as ones
from kiln.frontend.example_libraries.stax import parallel as parallel
from kiln.frontend.example_libraries.stax import randn as randn
from kiln.frontend.example_libraries.stax import relu as relu
from kiln.frontend.example_libraries.stax import selu as selu
from kiln.frontend.example_libraries.stax import serial as serial
from kiln.frontend.example_libraries.stax import shape_dependent as shape_dependent
from kiln.frontend.example_libraries.stax import sigmoid as sigmoid
from kiln.frontend.example_libraries.stax import softmax as softmax
from kiln.frontend.example_libraries.stax import softplus as softplus
from kiln.frontend.example_libraries.stax import standardize as standardize
from kiln.frontend.example_libraries.stax import zeros as zeros

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout", "Elu", "Exp",
    "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv", "GeneralConvTranspose", "Identity",
    "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu", "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh",
    "elementwise", "elu", "gelu", "glorot", "glorot_normal", "leaky_relu", "log_softmax", "logsoftmax", "normal",
    "ones", "parallel", "randn", "relu", "selu", "serial", "shape_dependent", "sigmoid", "softmax", "softplus",
    "standardize", "zeros",
]
