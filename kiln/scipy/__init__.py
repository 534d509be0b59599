"""kiln.scipy."""
from . import special  # noqa: F401
