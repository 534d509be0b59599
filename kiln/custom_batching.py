"""kiln.custom_batching: functions with user-defined batching rules (as ``jax.custom_batching``)."""
from kiln.frontend.custom_batching import custom_vmap as custom_vmap
from kiln.frontend.custom_batching import sequential_vmap as sequential_vmap

__all__ = ["custom_vmap", "sequential_vmap"]
