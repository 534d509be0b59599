"""kiln.scipy.sparse.linalg (as ``jax.scipy.sparse.linalg``): iterative solvers of ``A x = b``."""
from kiln.frontend.scipy.sparse_linalg import bicgstab as bicgstab
from kiln.frontend.scipy.sparse_linalg import cg as cg
from kiln.frontend.scipy.sparse_linalg import gmres as gmres

__all__ = ["bicgstab", "cg", "gmres"]
