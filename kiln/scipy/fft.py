"""kiln.scipy.fft."""
from kiln.frontend.scipy.fft import dct as dct
from kiln.frontend.scipy.fft import dctn as dctn
from kiln.frontend.scipy.fft import idct as idct
from kiln.frontend.scipy.fft import idctn as idctn

__all__ = [
    "dct", "dctn", "idct", "idctn"
]
