"""kiln.ffi: calling C/C++ XLA FFI handlers from kiln programs (as ``jax.ffi``): compile a handler against
:func:`include_dir`'s headers, register it with :func:`register_ffi_target`, call it with :func:`ffi_call`."""
from kiln.frontend.lax.ffi import ffi_call as ffi_call
from kiln.frontend.lax.ffi import include_dir as include_dir
from kiln.frontend.lax.ffi import pycapsule as pycapsule
from kiln.frontend.lax.ffi import register_ffi_target as register_ffi_target
from kiln.frontend.lax.ffi import (
    register_ffi_target_as_batch_partitionable as register_ffi_target_as_batch_partitionable,
)
from kiln.frontend.lax.ffi import register_ffi_type as register_ffi_type
from kiln.frontend.lax.ffi import register_ffi_type_id as register_ffi_type_id

__all__ = ["ffi_call", "include_dir", "pycapsule", "register_ffi_target", "register_ffi_target_as_batch_partitionable",
           "register_ffi_type", "register_ffi_type_id"]
