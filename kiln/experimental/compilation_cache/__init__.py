"""kiln.experimental.compilation_cache: JAX's ``jax.experimental.compilation_cache``
(``compilation_cache.set_cache_dir``, ``reset_cache``)."""
from kiln.experimental.compilation_cache import compilation_cache

__all__ = ["compilation_cache"]
