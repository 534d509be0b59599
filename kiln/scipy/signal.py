"""kiln.scipy.signal."""
from kiln.frontend.scipy.signal import convolve as convolve
from kiln.frontend.scipy.signal import convolve2d as convolve2d
from kiln.frontend.scipy.signal import correlate as correlate
from kiln.frontend.scipy.signal import correlate2d as correlate2d
from kiln.frontend.scipy.signal import csd as csd
from kiln.frontend.scipy.signal import detrend as detrend
from kiln.frontend.scipy.signal import fftconvolve as fftconvolve
from kiln.frontend.scipy.signal import istft as istft
from kiln.frontend.scipy.signal import stft as stft
from kiln.frontend.scipy.signal import welch as welch

__all__ = [
    "convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend", "fftconvolve", "istft", "stft",
    "welch",
]
