"""kiln.numpy.linalg."""
from kiln.frontend.numpy.linalg import EighResult as EighResult
from kiln.frontend.numpy.linalg import EigResult as EigResult
from kiln.frontend.numpy.linalg import QRResult as QRResult
from kiln.frontend.numpy.linalg import SlogdetResult as SlogdetResult
from kiln.frontend.numpy.linalg import SVDResult as SVDResult
from kiln.frontend.numpy.linalg import cholesky as cholesky
from kiln.frontend.numpy.linalg import cond as cond
from kiln.frontend.numpy.linalg import cross as cross
from kiln.frontend.numpy.linalg import det as det
from kiln.frontend.numpy.linalg import diagonal as diagonal
from kiln.frontend.numpy.linalg import eig as eig
from kiln.frontend.numpy.linalg import eigh as eigh
from kiln.frontend.numpy.linalg import eigvals as eigvals
from kiln.frontend.numpy.linalg import eigvalsh as eigvalsh
from kiln.frontend.numpy.linalg import inv as inv
from kiln.frontend.numpy.linalg import lstsq as lstsq
from kiln.frontend.numpy.linalg import matmul as matmul
from kiln.frontend.numpy.linalg import matrix_norm as matrix_norm
from kiln.frontend.numpy.linalg import matrix_power as matrix_power
from kiln.frontend.numpy.linalg import matrix_rank as matrix_rank
from kiln.frontend.numpy.linalg import matrix_transpose as matrix_transpose
from kiln.frontend.numpy.linalg import multi_dot as multi_dot
from kiln.frontend.numpy.linalg import norm as norm
from kiln.frontend.numpy.linalg import outer as outer
from kiln.frontend.numpy.linalg import pinv as pinv
from kiln.frontend.numpy.linalg import qr as qr
from kiln.frontend.numpy.linalg import slogdet as slogdet
from kiln.frontend.numpy.linalg import solve as solve
from kiln.frontend.numpy.linalg import svd as svd
from kiln.frontend.numpy.linalg import svdvals as svdvals
from kiln.frontend.numpy.linalg import tensordot as tensordot
from kiln.frontend.numpy.linalg import tensorinv as tensorinv
from kiln.frontend.numpy.linalg import tensorsolve as tensorsolve
from kiln.frontend.numpy.linalg import trace as trace
from kiln.frontend.numpy.linalg import vecdot as vecdot
from kiln.frontend.numpy.linalg import vector_norm as vector_norm

__all__ = [
    "EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cond", "cross", "det",
    "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq", "matmul", "matrix_norm", "matrix_power",
    "matrix_rank", "matrix_transpose", "multi_dot", "norm", "outer", "pinv", "qr", "slogdet", "solve", "svd",
    "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot", "vector_norm",
]
