"""kiln: a GPU-first compiler for numerical Python.

Trace NumPy-style functions into kiln IR, transform them, lower them to StableHLO and run them
with XLA on CPU, GPU or TPU. The vocabulary is JAX's: ``kiln.jit``, ``kiln.numpy``, ``kiln.lax``.
This module only re-exports; the implementation lives in ``kiln.frontend``, ``kiln.lowering``
and ``kiln.runtime``.
"""
from kiln import lax, nn, numpy, random, scipy, tree_util  # noqa: E402  (public sub-modules)
from kiln.frontend.ad.api import grad, hessian, jacfwd, jacrev, jvp, linearize, value_and_grad, vjp
from kiln.frontend.ad.custom import CustomDerivativeError, custom_jvp, custom_vjp
from kiln.frontend.ad.remat import checkpoint, remat
from kiln.frontend.batching.api import vmap
from kiln.frontend.core.avals import ShapedArray
from kiln.frontend.core.config import config
from kiln.frontend.core.errors import (
    AxisError,
    BroadcastError,
    ConcretizationTypeError,
    IndexTypeError,
    IntegerOverflowError,
    KilnError,
    MatrixShapeError,
    NegativeDimensionError,
    ShapeError,
    ShapeTooLargeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from kiln.frontend.driver.array import Array
from kiln.frontend.driver.jit import explain_cache_misses, jit, make_ir
from kiln.frontend.driver.placement import (
    block_until_ready,
    default_backend,
    device_count,
    device_get,
    device_put,
    devices,
    local_devices,
)
from kiln.runtime import BackendError, DeletedBufferError, Device, DeviceError

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
