"""kiln.lax.linalg: the linear-algebra primitives and functions (as ``jax.lax.linalg``)."""
from kiln.frontend.lax.linalg import EighImplementation as EighImplementation
from kiln.frontend.lax.linalg import EigImplementation as EigImplementation
from kiln.frontend.lax.linalg import SvdAlgorithm as SvdAlgorithm
from kiln.frontend.lax.linalg import cholesky as cholesky
from kiln.frontend.lax.linalg import cholesky_p as cholesky_p
from kiln.frontend.lax.linalg import cholesky_update as cholesky_update
from kiln.frontend.lax.linalg import eig as eig
from kiln.frontend.lax.linalg import eig_p as eig_p
from kiln.frontend.lax.linalg import eigh as eigh
from kiln.frontend.lax.linalg import eigh_p as eigh_p
from kiln.frontend.lax.linalg import hessenberg as hessenberg
from kiln.frontend.lax.linalg import householder_product as householder_product
from kiln.frontend.lax.linalg import lu as lu
from kiln.frontend.lax.linalg import lu_p as lu_p
from kiln.frontend.lax.linalg import lu_pivots_to_permutation as lu_pivots_to_permutation
from kiln.frontend.lax.linalg import ormqr as ormqr
from kiln.frontend.lax.linalg import qdwh as qdwh
from kiln.frontend.lax.linalg import qr as qr
from kiln.frontend.lax.linalg import qr_p as qr_p
from kiln.frontend.lax.linalg import schur as schur
from kiln.frontend.lax.linalg import schur_p as schur_p
from kiln.frontend.lax.linalg import svd as svd
from kiln.frontend.lax.linalg import svd_p as svd_p
from kiln.frontend.lax.linalg import symmetric_product as symmetric_product
from kiln.frontend.lax.linalg import triangular_solve as triangular_solve
from kiln.frontend.lax.linalg import triangular_solve_p as triangular_solve_p
from kiln.frontend.lax.linalg import tridiagonal as tridiagonal
from kiln.frontend.lax.linalg import tridiagonal_solve as tridiagonal_solve

__all__ = [
    "cholesky", "cholesky_p", "cholesky_update", "eig", "eig_p", "eigh", "eigh_p", "EighImplementation",
    "EigImplementation", "hessenberg", "householder_product", "lu", "lu_p", "lu_pivots_to_permutation", "ormqr",
    "qdwh", "qr", "qr_p", "schur", "schur_p", "svd", "svd_p", "SvdAlgorithm", "symmetric_product", "triangular_solve",
    "triangular_solve_p", "tridiagonal", "tridiagonal_solve",
]
