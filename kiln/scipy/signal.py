"""kiln.scipy.signal."""
from kiln.frontend.scipy.signal import convolve as convolve
from kiln.frontend.scipy.signal import convolve2d as convolve2d
from kiln.frontend.scipy.signal import correlate as correlate
from kiln.frontend.scipy.signal import correlate2d as correlate2d
from kiln.frontend.scipy.signal import detrend as detrend

__all__ = [
    "convolve", "convolve2d", "correlate", "correlate2d", "detrend"
]
