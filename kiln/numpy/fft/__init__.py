"""kiln.numpy.fft."""
from kiln.frontend.numpy.fft import fft as fft
from kiln.frontend.numpy.fft import fft2 as fft2
from kiln.frontend.numpy.fft import fftfreq as fftfreq
from kiln.frontend.numpy.fft import fftn as fftn
from kiln.frontend.numpy.fft import fftshift as fftshift
from kiln.frontend.numpy.fft import hfft as hfft
from kiln.frontend.numpy.fft import ifft as ifft
from kiln.frontend.numpy.fft import ifft2 as ifft2
from kiln.frontend.numpy.fft import ifftn as ifftn
from kiln.frontend.numpy.fft import ifftshift as ifftshift
from kiln.frontend.numpy.fft import ihfft as ihfft
from kiln.frontend.numpy.fft import irfft as irfft
from kiln.frontend.numpy.fft import irfft2 as irfft2
from kiln.frontend.numpy.fft import irfftn as irfftn
from kiln.frontend.numpy.fft import rfft as rfft
from kiln.frontend.numpy.fft import rfft2 as rfft2
from kiln.frontend.numpy.fft import rfftfreq as rfftfreq
from kiln.frontend.numpy.fft import rfftn as rfftn

__all__ = [
    "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn", "ifftshift", "ihfft", "irfft",
    "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn",
]
