"""kiln.version: kiln's version (as ``jax.version``)."""
from kiln.frontend.core.version import __version__ as __version__
from kiln.frontend.core.version import __version_info__ as __version_info__

__all__ = ["__version__", "__version_info__"]
