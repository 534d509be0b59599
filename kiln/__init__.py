"""kiln: a GPU-first compiler for numerical Python.

Trace NumPy-style functions into kiln IR, transform them, lower them to StableHLO and run them
with XLA on CPU, GPU or TPU. The vocabulary is JAX's: ``kiln.jit``, ``kiln.numpy``, ``kiln.lax``.
This module only re-exports; the implementation lives in ``kiln.frontend``, ``kiln.lowering``
and ``kiln.runtime``.
"""
from kiln import (  # the public sub-modules
    ad,
    ad_checkpoint,
    core,
    custom_batching,
    custom_derivatives,
    debug,
    distributed,
    dlpack,
    dtypes,
    errors,
    experimental,
    export,
    extend,
    ffi,
    flatten_util,
    image,
    interpreters,
    lax,
    memory,
    monitoring,
    nn,
    numpy,
    ops,
    profiler,
    random,
    ref,
    scipy,
    sharding,
    stages,
    test_util,
    tree,
    tree_util,
    typing,
    version,
)
from kiln.frontend.ad.api import closure_convert as closure_convert
from kiln.frontend.ad.api import custom_gradient as custom_gradient
from kiln.frontend.ad.api import fwd_and_bwd as fwd_and_bwd
from kiln.frontend.ad.api import grad as grad
from kiln.frontend.ad.api import hessian as hessian
from kiln.frontend.ad.api import jacfwd as jacfwd
from kiln.frontend.ad.api import jacobian as jacobian
from kiln.frontend.ad.api import jacrev as jacrev
from kiln.frontend.ad.api import jvp as jvp
from kiln.frontend.ad.api import linear_transpose as linear_transpose
from kiln.frontend.ad.api import linearize as linearize
from kiln.frontend.ad.api import value_and_grad as value_and_grad
from kiln.frontend.ad.api import vjp as vjp
from kiln.frontend.ad.custom import CustomDerivativeError as CustomDerivativeError
from kiln.frontend.ad.custom import custom_jvp as custom_jvp
from kiln.frontend.ad.custom import custom_vjp as custom_vjp
from kiln.frontend.ad.remat import checkpoint as checkpoint
from kiln.frontend.ad.remat import checkpoint_policies as checkpoint_policies
from kiln.frontend.ad.remat import remat as remat
from kiln.frontend.ad.tangents import float0 as float0
from kiln.frontend.batching.api import vmap as vmap
from kiln.frontend.control.pmap import pmap as pmap
from kiln.frontend.control.shard_map import shard_map as shard_map
from kiln.frontend.core.avals import ShapedArray as ShapedArray
from kiln.frontend.core.avals import ShapeDtypeStruct as ShapeDtypeStruct
from kiln.frontend.core.config import allow_f16_reductions as allow_f16_reductions
from kiln.frontend.core.config import array_garbage_collection_guard as array_garbage_collection_guard
from kiln.frontend.core.config import auto_pcast as auto_pcast
from kiln.frontend.core.config import check_tracer_leaks as check_tracer_leaks
from kiln.frontend.core.config import checking_leaks as checking_leaks
from kiln.frontend.core.config import config as config
from kiln.frontend.core.config import debug_infs as debug_infs
from kiln.frontend.core.config import debug_key_reuse as debug_key_reuse
from kiln.frontend.core.config import debug_nans as debug_nans
from kiln.frontend.core.config import default_device as default_device
from kiln.frontend.core.config import default_matmul_precision as default_matmul_precision
from kiln.frontend.core.config import default_prng_impl as default_prng_impl
from kiln.frontend.core.config import enable_checks as enable_checks
from kiln.frontend.core.config import enable_custom_prng as enable_custom_prng
from kiln.frontend.core.config import enable_x64 as enable_x64
from kiln.frontend.core.config import jax2tf_associative_scan_reductions as jax2tf_associative_scan_reductions
from kiln.frontend.core.config import legacy_prng_key as legacy_prng_key
from kiln.frontend.core.config import log_compiles as log_compiles
from kiln.frontend.core.config import make_user_context as make_user_context
from kiln.frontend.core.config import no_execution as no_execution
from kiln.frontend.core.config import no_tracing as no_tracing
from kiln.frontend.core.config import numpy_dtype_promotion as numpy_dtype_promotion
from kiln.frontend.core.config import numpy_rank_promotion as numpy_rank_promotion
from kiln.frontend.core.config import remove_size_one_mesh_axis_from_type as remove_size_one_mesh_axis_from_type
from kiln.frontend.core.config import softmax_custom_jvp as softmax_custom_jvp
from kiln.frontend.core.config import threefry_partitionable as threefry_partitionable
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
from kiln.frontend.core.tracing import ensure_compile_time_eval as ensure_compile_time_eval
from kiln.frontend.core.version import __version__ as __version__  # noqa: F401  (not in __all__, as in JAX)
from kiln.frontend.driver.array import PublicArray as Array
from kiln.frontend.driver.array import live_arrays as live_arrays
from kiln.frontend.driver.jit import explain_cache_misses as explain_cache_misses
from kiln.frontend.driver.jit import jit as jit
from kiln.frontend.driver.jit import make_ir as make_ir
from kiln.frontend.driver.multihost import thread_guard as thread_guard
from kiln.frontend.driver.placement import block_until_ready as block_until_ready
from kiln.frontend.driver.placement import copy_to_host_async as copy_to_host_async
from kiln.frontend.driver.placement import default_backend as default_backend
from kiln.frontend.driver.placement import device_count as device_count
from kiln.frontend.driver.placement import device_get as device_get
from kiln.frontend.driver.placement import device_put as device_put
from kiln.frontend.driver.placement import devices as devices
from kiln.frontend.driver.placement import host_count as host_count
from kiln.frontend.driver.placement import host_id as host_id
from kiln.frontend.driver.placement import host_ids as host_ids
from kiln.frontend.driver.placement import local_devices as local_devices
from kiln.frontend.driver.placement import make_array_from_callback as make_array_from_callback
from kiln.frontend.driver.placement import make_array_from_process_local_data as make_array_from_process_local_data
from kiln.frontend.driver.placement import make_array_from_single_device_arrays as make_array_from_single_device_arrays
from kiln.frontend.driver.placement import process_count as process_count
from kiln.frontend.driver.placement import process_index as process_index
from kiln.frontend.driver.placement import process_indices as process_indices
from kiln.frontend.driver.sharding import NamedSharding as NamedSharding
from kiln.frontend.driver.sharding import PartitionSpec as P
from kiln.frontend.driver.sharding import Shard as Shard
from kiln.frontend.driver.sharding import make_mesh as make_mesh
from kiln.frontend.driver.sharding import set_mesh as set_mesh
from kiln.frontend.driver.tools import clear_caches as clear_caches
from kiln.frontend.driver.tools import disable_jit as disable_jit
from kiln.frontend.driver.tools import eval_shape as eval_shape
from kiln.frontend.driver.tools import local_device_count as local_device_count
from kiln.frontend.driver.tools import make_jaxpr as make_jaxpr
from kiln.frontend.driver.tools import named_call as named_call
from kiln.frontend.driver.tools import named_scope as named_scope
from kiln.frontend.driver.tools import print_environment_info as print_environment_info
from kiln.frontend.driver.tools import typeof as typeof
from kiln.frontend.driver.transfer_guard import transfer_guard as transfer_guard
from kiln.frontend.driver.transfer_guard import transfer_guard_device_to_device as transfer_guard_device_to_device
from kiln.frontend.driver.transfer_guard import transfer_guard_device_to_host as transfer_guard_device_to_host
from kiln.frontend.driver.transfer_guard import transfer_guard_host_to_device as transfer_guard_host_to_device
from kiln.frontend.lax.callbacks import effects_barrier as effects_barrier
from kiln.frontend.lax.callbacks import pure_callback as pure_callback
from kiln.frontend.lax.sharding import reshard as reshard
from kiln.frontend.numpy.indexing import ds as ds
from kiln.frontend.refs import Ref as Ref
from kiln.frontend.refs import empty_ref as empty_ref
from kiln.frontend.refs import free_ref as free_ref
from kiln.frontend.refs import freeze as freeze
from kiln.frontend.refs import new_ref as new_ref
from kiln.runtime import BackendError as BackendError
from kiln.runtime import DeletedBufferError as DeletedBufferError
from kiln.runtime import Device as Device
from kiln.runtime import DeviceError as DeviceError
from kiln.runtime.executable import CompilerEffortLevel as CompilerEffortLevel

__all__ = [
    "ad", "ad_checkpoint", "allow_f16_reductions", "Array", "auto_pcast", "AxisError", "BackendError",
    "block_until_ready", "BroadcastError", "check_tracer_leaks", "checking_leaks", "checkpoint", "checkpoint_policies",
    "clear_caches", "closure_convert", "CompilerEffortLevel",
    "ConcretizationTypeError", "config", "copy_to_host_async", "core", "custom_batching", "custom_derivatives",
    "custom_gradient", "custom_jvp", "custom_vjp", "CustomDerivativeError", "debug", "debug_infs", "debug_key_reuse",
    "debug_nans", "default_backend", "default_device", "default_matmul_precision", "default_prng_impl",
    "DeletedBufferError", "Device", "device_count", "device_get", "device_put", "DeviceError", "devices", "disable_jit",
    "distributed", "dlpack", "dtypes", "effects_barrier", "enable_checks", "enable_custom_prng", "enable_x64",
    "ensure_compile_time_eval", "errors", "eval_shape", "experimental", "explain_cache_misses", "extend", "ffi",
    "flatten_util", "interpreters",
    "float0", "fwd_and_bwd", "grad", "hessian", "image", "IndexTypeError", "IntegerOverflowError", "jacfwd", "jacobian",
    "jacrev", "jit", "jvp", "KilnError", "lax", "legacy_prng_key", "linear_transpose", "linearize",
    "local_device_count", "local_devices", "log_compiles", "memory", "monitoring", "make_array_from_callback",
    "make_array_from_process_local_data", "make_array_from_single_device_arrays", "make_ir", "make_jaxpr", "make_mesh",
    "MatrixShapeError", "named_call", "named_scope", "NamedSharding", "NegativeDimensionError", "nn", "numpy",
    "numpy_dtype_promotion", "numpy_rank_promotion", "ops", "P", "pmap", "print_environment_info", "process_count",
    "thread_guard", "process_index", "process_indices", "profiler", "pure_callback", "random", "remat", "reshard",
    "scipy", "set_mesh",
    "ShapedArray", "ShapeDtypeStruct", "ShapeError", "ShapeTooLargeError", "Shard", "shard_map", "sharding",
    "softmax_custom_jvp", "stages", "test_util", "threefry_partitionable", "TracerArrayConversionError",
    "TracerBoolConversionError", "TracerIntegerConversionError", "transfer_guard", "transfer_guard_device_to_device",
    "transfer_guard_device_to_host", "transfer_guard_host_to_device", "tree", "tree_util", "typeof", "typing",
    "UnexpectedTracerError", "value_and_grad", "version", "vjp", "vmap",
]
__all__ += ["host_count", "host_id", "host_ids"]  # JAX's old names (they warn)
__all__ += ["export", "live_arrays"]  # issue 16: export, compiled introspection
__all__ += ["empty_ref", "free_ref", "freeze", "new_ref", "ref", "Ref"]  # mutable array references
__all__ += ["ds"]  # dynamic slices for indexing (jax.ds)
__all__ += ["array_garbage_collection_guard", "jax2tf_associative_scan_reductions", "make_user_context", "no_execution",
            "no_tracing", "remove_size_one_mesh_axis_from_type"]  # config contexts
