"""kiln.flatten_util: ``ravel_pytree`` (a pytree of arrays as one flat array, and back)."""
from kiln.frontend.flatten_util import ravel_pytree as ravel_pytree

__all__ = ["ravel_pytree"]
