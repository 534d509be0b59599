"""kiln.scipy.cluster.vq."""
from kiln.frontend.scipy.cluster import vq as vq

__all__ = [
    "vq"
]
