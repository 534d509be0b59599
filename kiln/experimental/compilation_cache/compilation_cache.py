"""JAX's ``jax.experimental.compilation_cache.compilation_cache``: ``set_cache_dir(path)`` and ``reset_cache()``."""
from kiln.frontend.driver.compilation_cache import reset_cache as reset_cache
from kiln.frontend.driver.compilation_cache import set_cache_dir as set_cache_dir

__all__ = ["reset_cache", "set_cache_dir"]
