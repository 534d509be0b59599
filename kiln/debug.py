"""kiln.debug: debugging aids (JAX's ``jax.debug``): how arrays are laid out over devices. Host callbacks
(``print``, ``callback``, ``inspect_array_sharding``) are not there yet."""
from kiln.frontend.driver.visualize import visualize_array_sharding as visualize_array_sharding
from kiln.frontend.driver.visualize import visualize_sharding as visualize_sharding

__all__ = ["visualize_array_sharding", "visualize_sharding"]
