"""kiln.example_libraries: JAX's ``jax.example_libraries`` -- ``stax`` (layers) and ``optimizers``."""
from kiln.example_libraries import optimizers, stax

__all__ = ["optimizers", "stax"]
