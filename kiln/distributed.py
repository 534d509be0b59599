"""kiln.distributed: one program run as several processes (JAX's ``jax.distributed``)."""
from kiln.frontend.driver.distributed import initialize as initialize
from kiln.frontend.driver.distributed import is_initialized as is_initialized
from kiln.frontend.driver.distributed import shutdown as shutdown

__all__ = ["initialize", "is_initialized", "shutdown"]
