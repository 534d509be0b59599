"""kiln.scipy.spatial."""
from . import transform

__all__ = ["transform"]
