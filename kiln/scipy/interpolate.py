"""kiln.scipy.interpolate."""
from kiln.frontend.scipy.interpolate import RegularGridInterpolator as RegularGridInterpolator

__all__ = [
    "RegularGridInterpolator"
]
