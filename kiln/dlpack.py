"""kiln.dlpack: arrays to and from other libraries over DLPack (JAX's ``jax.dlpack``)."""
from kiln.frontend.driver.dlpack import from_dlpack as from_dlpack
from kiln.frontend.driver.dlpack import is_supported_dtype as is_supported_dtype

__all__ = ["from_dlpack", "is_supported_dtype"]
