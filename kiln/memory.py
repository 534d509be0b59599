"""kiln.memory: JAX's ``jax.memory`` (memory spaces: ``kiln.device_put(x, kiln.memory.Space.Host)``)."""
from kiln.frontend.driver.memory import Space as Space

__all__ = ["Space"]
