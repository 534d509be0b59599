"""kiln.scipy.ndimage."""
from kiln.frontend.scipy.ndimage import map_coordinates as map_coordinates

__all__ = [
    "map_coordinates"
]
