"""kiln.scipy.spatial.transform."""
from kiln.frontend.scipy.spatial_transform import Rotation as Rotation
from kiln.frontend.scipy.spatial_transform import Slerp as Slerp

__all__ = [
    "Rotation", "Slerp"
]
