"""kiln.scipy.sparse (as ``jax.scipy.sparse``): its ``linalg`` sub-module holds the Krylov solvers."""
from kiln.scipy.sparse import linalg

__all__ = ["linalg"]
