"""kiln.scipy.cluster."""
from kiln.scipy.cluster import vq

__all__ = ["vq"]
