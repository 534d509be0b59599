"""kiln.scipy.linalg."""
from kiln.frontend.scipy.linalg import block_diag as block_diag
from kiln.frontend.scipy.linalg import cho_factor as cho_factor
from kiln.frontend.scipy.linalg import cho_solve as cho_solve
from kiln.frontend.scipy.linalg import cholesky as cholesky
from kiln.frontend.scipy.linalg import circulant as circulant
from kiln.frontend.scipy.linalg import companion as companion
from kiln.frontend.scipy.linalg import convolution_matrix as convolution_matrix
from kiln.frontend.scipy.linalg import det as det
from kiln.frontend.scipy.linalg import dft as dft
from kiln.frontend.scipy.linalg import eigh as eigh
from kiln.frontend.scipy.linalg import eigh_tridiagonal as eigh_tridiagonal
from kiln.frontend.scipy.linalg import expm as expm
from kiln.frontend.scipy.linalg import expm_frechet as expm_frechet
from kiln.frontend.scipy.linalg import fiedler as fiedler
from kiln.frontend.scipy.linalg import fiedler_companion as fiedler_companion
from kiln.frontend.scipy.linalg import funm as funm
from kiln.frontend.scipy.linalg import hadamard as hadamard
from kiln.frontend.scipy.linalg import hankel as hankel
from kiln.frontend.scipy.linalg import helmert as helmert
from kiln.frontend.scipy.linalg import hessenberg as hessenberg
from kiln.frontend.scipy.linalg import hilbert as hilbert
from kiln.frontend.scipy.linalg import inv as inv
from kiln.frontend.scipy.linalg import invhilbert as invhilbert
from kiln.frontend.scipy.linalg import invpascal as invpascal
from kiln.frontend.scipy.linalg import leslie as leslie
from kiln.frontend.scipy.linalg import lu as lu
from kiln.frontend.scipy.linalg import lu_factor as lu_factor
from kiln.frontend.scipy.linalg import lu_solve as lu_solve
from kiln.frontend.scipy.linalg import pascal as pascal
from kiln.frontend.scipy.linalg import polar as polar
from kiln.frontend.scipy.linalg import qr as qr
from kiln.frontend.scipy.linalg import qr_multiply as qr_multiply
from kiln.frontend.scipy.linalg import rsf2csf as rsf2csf
from kiln.frontend.scipy.linalg import schur as schur
from kiln.frontend.scipy.linalg import solve as solve
from kiln.frontend.scipy.linalg import solve_sylvester as solve_sylvester
from kiln.frontend.scipy.linalg import solve_triangular as solve_triangular
from kiln.frontend.scipy.linalg import sqrtm as sqrtm
from kiln.frontend.scipy.linalg import svd as svd
from kiln.frontend.scipy.linalg import toeplitz as toeplitz

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion", "convolution_matrix", "det",
    "dft", "eigh", "eigh_tridiagonal", "expm", "expm_frechet", "fiedler", "fiedler_companion", "funm", "hadamard",
    "hankel", "helmert", "hessenberg", "hilbert", "inv", "invhilbert", "invpascal", "leslie", "lu", "lu_factor",
    "lu_solve", "pascal", "polar", "qr", "qr_multiply", "rsf2csf", "schur", "solve", "solve_sylvester",
    "solve_triangular", "sqrtm", "svd", "toeplitz"
]
