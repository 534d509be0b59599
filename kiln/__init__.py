"""kiln: a GPU-first compiler for numerical Python.

Trace NumPy-style functions into kiln IR, transform them, lower them to StableHLO and run them
with XLA on CPU, GPU or TPU. The vocabulary is JAX's: ``kiln.jit``, ``kiln.numpy``, ``kiln.lax``.
This module only re-exports; the implementation lives in ``kiln.frontend``, ``kiln.lowering``
and ``kiln.runtime``.
"""
from kiln import lax, nn, numpy, random, scipy, tree_util  # the public sub-modules
from kiln.frontend.ad.api import grad as grad
from kiln.frontend.ad.api import hessian as hessian
from kiln.frontend.ad.api import jacfwd as jacfwd
from kiln.frontend.ad.api import jacrev as jacrev
from kiln.frontend.ad.api import jvp as jvp
from kiln.frontend.ad.api import linearize as linearize
from kiln.frontend.ad.api import value_and_grad as value_and_grad
from kiln.frontend.ad.api import vjp as vjp
from kiln.frontend.ad.custom import CustomDerivativeError as CustomDerivativeError
from kiln.frontend.ad.custom import custom_jvp as custom_jvp
from kiln.frontend.ad.custom import custom_vjp as custom_vjp
from kiln.frontend.ad.remat import checkpoint as checkpoint
from kiln.frontend.ad.remat import remat as remat
from kiln.frontend.batching.api import vmap as vmap
from kiln.frontend.core.avals import ShapedArray as ShapedArray
from kiln.frontend.core.config import config as config
from kiln.frontend.core.errors import AxisError as AxisError
from kiln.frontend.core.errors import BroadcastError as BroadcastError
from kiln.frontend.core.errors import ConcretizationTypeError as ConcretizationTypeError
from kiln.frontend.core.errors import IndexTypeError as IndexTypeError
from kiln.frontend.core.errors import IntegerOverflowError as IntegerOverflowError
from kiln.frontend.core.errors import KilnError as KilnError
from kiln.frontend.core.errors import MatrixShapeError as MatrixShapeError
from kiln.frontend.core.errors import NegativeDimensionError as NegativeDimensionError
from kiln.frontend.core.errors import ShapeError as ShapeError
from kiln.frontend.core.errors import ShapeTooLargeError as ShapeTooLargeError
from kiln.frontend.core.errors import TracerArrayConversionError as TracerArrayConversionError
from kiln.frontend.core.errors import TracerBoolConversionError as TracerBoolConversionError
from kiln.frontend.core.errors import TracerIntegerConversionError as TracerIntegerConversionError
from kiln.frontend.core.errors import UnexpectedTracerError as UnexpectedTracerError
from kiln.frontend.driver.array import Array as Array
from kiln.frontend.driver.jit import explain_cache_misses as explain_cache_misses
from kiln.frontend.driver.jit import jit as jit
from kiln.frontend.driver.jit import make_ir as make_ir
from kiln.frontend.driver.placement import block_until_ready as block_until_ready
from kiln.frontend.driver.placement import default_backend as default_backend
from kiln.frontend.driver.placement import device_count as device_count
from kiln.frontend.driver.placement import device_get as device_get
from kiln.frontend.driver.placement import device_put as device_put
from kiln.frontend.driver.placement import devices as devices
from kiln.frontend.driver.placement import local_devices as local_devices
from kiln.runtime import BackendError as BackendError
from kiln.runtime import DeletedBufferError as DeletedBufferError
from kiln.runtime import Device as Device
from kiln.runtime import DeviceError as DeviceError

__version__ = "0.1.0"

__all__ = [
    "Array", "AxisError", "BackendError", "BroadcastError", "ConcretizationTypeError", "CustomDerivativeError",
    "DeletedBufferError", "Device", "DeviceError", "IndexTypeError", "IntegerOverflowError", "KilnError",
    "MatrixShapeError", "NegativeDimensionError", "ShapeError", "ShapeTooLargeError", "ShapedArray",
    "TracerArrayConversionError",
    "TracerBoolConversionError", "TracerIntegerConversionError", "UnexpectedTracerError", "block_until_ready",
    "checkpoint", "config", "custom_jvp", "custom_vjp", "default_backend", "device_count", "device_get", "device_put",
    "devices", "explain_cache_misses", "grad", "hessian", "jacfwd", "jacrev", "jit", "jvp", "lax", "linearize",
    "local_devices", "make_ir", "nn", "numpy", "random", "remat", "scipy", "tree_util", "value_and_grad", "vjp",
    "vmap",
]
