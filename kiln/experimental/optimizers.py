"""``jax.experimental.optimizers``, the older home of kiln.example_libraries.optimizers (the same objects)."""
from kiln.frontend.example_libraries.optimizers import Array as Array
from kiln.frontend.example_libraries.optimizers import InitFn as InitFn
from kiln.frontend.example_libraries.optimizers import JoinPoint as JoinPoint
from kiln.frontend.example_libraries.optimizers import Optimizer as Optimizer
from kiln.frontend.example_libraries.optimizers import OptimizerState as OptimizerState
from kiln.frontend.example_libraries.optimizers import Params as Params
from kiln.frontend.example_libraries.optimizers import ParamsFn as ParamsFn
from kiln.frontend.example_libraries.optimizers import Schedule as Schedule
from kiln.frontend.example_libraries.optimizers import State as State
from kiln.frontend.example_libraries.optimizers import Step as Step
from kiln.frontend.example_libraries.optimizers import UpdateFn as UpdateFn
from kiln.frontend.example_libraries.optimizers import Updates as Updates
from kiln.frontend.example_libraries.optimizers import adagrad as adagrad
from kiln.frontend.example_libraries.optimizers import adam as adam
from kiln.frontend.example_libraries.optimizers import adamax as adamax
from kiln.frontend.example_libraries.optimizers import clip_grads as clip_grads
from kiln.frontend.example_libraries.optimizers import constant as constant
from kiln.frontend.example_libraries.optimizers import exponential_decay as exponential_decay
from kiln.frontend.example_libraries.optimizers import inverse_time_decay as inverse_time_decay
from kiln.frontend.example_libraries.optimizers import l2_norm as l2_norm
from kiln.frontend.example_libraries.optimizers import make_schedule as make_schedule
from kiln.frontend.example_libraries.optimizers import momentum as momentum
from kiln.frontend.example_libraries.optimizers import nesterov as nesterov
from kiln.frontend.example_libraries.optimizers import optimizer as optimizer
from kiln.frontend.example_libraries.optimizers import pack_optimizer_state as pack_optimizer_state
from kiln.frontend.example_libraries.optimizers import piecewise_constant as piecewise_constant
from kiln.frontend.example_libraries.optimizers import polynomial_decay as polynomial_decay
from kiln.frontend.example_libraries.optimizers import rmsprop as rmsprop
from kiln.frontend.example_libraries.optimizers import rmsprop_momentum as rmsprop_momentum
from kiln.frontend.example_libraries.optimizers import sgd as sgd
from kiln.frontend.example_libraries.optimizers import sm3 as sm3
from kiln.frontend.example_libraries.optimizers import unpack_optimizer_state as unpack_optimizer_state

__all__ = [
    "Array", "InitFn", "JoinPoint", "Optimizer", "OptimizerState", "Params", "ParamsFn", "Schedule", "State", "Step",
    "UpdateFn", "Updates", "adagrad", "adam", "adamax", "clip_grads", "constant",
    "exponential_decay", "inverse_time_decay", "l2_norm", "make_schedule", "momentum", "nesterov", "optimizer",
    "pack_optimizer_state", "piecewise_constant", "polynomial_decay", "rmsprop", "rmsprop_momentum", "sgd", "sm3",
    "unpack_optimizer_state",
]
