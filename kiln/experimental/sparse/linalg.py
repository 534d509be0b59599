"""``jax.experimental.sparse.linalg``: ``lobpcg_standard`` (largest eigenpairs of a symmetric operator by LOBPCG)
and ``spsolve`` (a linear solve with a CSR matrix given by its buffers; a dense solve in kiln)."""
from kiln.frontend.sparse.linalg import lobpcg_standard as lobpcg_standard
from kiln.frontend.sparse.linalg import spsolve as spsolve

__all__ = ["lobpcg_standard", "spsolve"]
