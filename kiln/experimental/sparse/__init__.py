"""``jax.experimental.sparse``: sparse arrays in JAX's formats (BCOO, BCSR; the 2-D COO, CSR and CSC), their
operations (conversions, products with dense and sparse arrays, structural operations), sparse-aware
``grad``/``jacobian``, ``random_bcoo``, ``linalg`` (``lobpcg_standard``, ``spsolve``) and the ``sparsify``
transformation, usable under jit, vmap and grad."""
from kiln.experimental.sparse import linalg
from kiln.frontend.sparse import BCOO as BCOO
from kiln.frontend.sparse import BCSR as BCSR
from kiln.frontend.sparse import COO as COO
from kiln.frontend.sparse import CSC as CSC
from kiln.frontend.sparse import CSR as CSR
from kiln.frontend.sparse import CuSparseEfficiencyWarning as CuSparseEfficiencyWarning
from kiln.frontend.sparse import JAXSparse as JAXSparse
from kiln.frontend.sparse import SparseEfficiencyError as SparseEfficiencyError
from kiln.frontend.sparse import SparseEfficiencyWarning as SparseEfficiencyWarning
from kiln.frontend.sparse import bcoo_broadcast_in_dim as bcoo_broadcast_in_dim
from kiln.frontend.sparse import bcoo_concatenate as bcoo_concatenate
from kiln.frontend.sparse import bcoo_conv_general_dilated as bcoo_conv_general_dilated
from kiln.frontend.sparse import bcoo_dot_general as bcoo_dot_general
from kiln.frontend.sparse import bcoo_dot_general_sampled as bcoo_dot_general_sampled
from kiln.frontend.sparse import bcoo_dynamic_slice as bcoo_dynamic_slice
from kiln.frontend.sparse import bcoo_eliminate_zeros as bcoo_eliminate_zeros
from kiln.frontend.sparse import bcoo_extract as bcoo_extract
from kiln.frontend.sparse import bcoo_fromdense as bcoo_fromdense
from kiln.frontend.sparse import bcoo_gather as bcoo_gather
from kiln.frontend.sparse import bcoo_multiply_dense as bcoo_multiply_dense
from kiln.frontend.sparse import bcoo_multiply_sparse as bcoo_multiply_sparse
from kiln.frontend.sparse import bcoo_reduce_sum as bcoo_reduce_sum
from kiln.frontend.sparse import bcoo_reshape as bcoo_reshape
from kiln.frontend.sparse import bcoo_rev as bcoo_rev
from kiln.frontend.sparse import bcoo_slice as bcoo_slice
from kiln.frontend.sparse import bcoo_sort_indices as bcoo_sort_indices
from kiln.frontend.sparse import bcoo_squeeze as bcoo_squeeze
from kiln.frontend.sparse import bcoo_sum_duplicates as bcoo_sum_duplicates
from kiln.frontend.sparse import bcoo_todense as bcoo_todense
from kiln.frontend.sparse import bcoo_transpose as bcoo_transpose
from kiln.frontend.sparse import bcoo_update_layout as bcoo_update_layout
from kiln.frontend.sparse import bcsr_broadcast_in_dim as bcsr_broadcast_in_dim
from kiln.frontend.sparse import bcsr_concatenate as bcsr_concatenate
from kiln.frontend.sparse import bcsr_dot_general as bcsr_dot_general
from kiln.frontend.sparse import bcsr_eliminate_zeros as bcsr_eliminate_zeros
from kiln.frontend.sparse import bcsr_extract as bcsr_extract
from kiln.frontend.sparse import bcsr_fromdense as bcsr_fromdense
from kiln.frontend.sparse import bcsr_sum_duplicates as bcsr_sum_duplicates
from kiln.frontend.sparse import bcsr_todense as bcsr_todense
from kiln.frontend.sparse import coo_fromdense as coo_fromdense
from kiln.frontend.sparse import coo_matmat as coo_matmat
from kiln.frontend.sparse import coo_matvec as coo_matvec
from kiln.frontend.sparse import coo_todense as coo_todense
from kiln.frontend.sparse import csr_fromdense as csr_fromdense
from kiln.frontend.sparse import csr_matmat as csr_matmat
from kiln.frontend.sparse import csr_matvec as csr_matvec
from kiln.frontend.sparse import csr_todense as csr_todense
from kiln.frontend.sparse import empty as empty
from kiln.frontend.sparse import eye as eye
from kiln.frontend.sparse import fromdense as fromdense
from kiln.frontend.sparse import grad as grad
from kiln.frontend.sparse import jacfwd as jacfwd
from kiln.frontend.sparse import jacobian as jacobian
from kiln.frontend.sparse import jacrev as jacrev
from kiln.frontend.sparse import random_bcoo as random_bcoo
from kiln.frontend.sparse import sparsify as sparsify
from kiln.frontend.sparse import todense as todense
from kiln.frontend.sparse import value_and_grad as value_and_grad

__all__ = ["BCOO", "BCSR", "COO", "CSC", "CSR", "CuSparseEfficiencyWarning", "JAXSparse", "SparseEfficiencyError",
           "SparseEfficiencyWarning", "bcoo_broadcast_in_dim", "bcoo_concatenate", "bcoo_conv_general_dilated",
           "bcoo_dot_general", "bcoo_dot_general_sampled", "bcoo_dynamic_slice", "bcoo_eliminate_zeros", "bcoo_extract",
           "bcoo_gather", "bcoo_fromdense", "bcoo_multiply_dense", "bcoo_multiply_sparse", "bcoo_reduce_sum",
           "bcoo_reshape", "bcoo_rev", "bcoo_slice", "bcoo_sort_indices", "bcoo_squeeze", "bcoo_sum_duplicates",
           "bcoo_todense", "bcoo_transpose", "bcoo_update_layout", "bcsr_broadcast_in_dim", "bcsr_concatenate",
           "bcsr_dot_general", "bcsr_eliminate_zeros", "bcsr_extract", "bcsr_fromdense", "bcsr_sum_duplicates",
           "bcsr_todense", "coo_fromdense", "coo_matmat", "coo_matvec", "coo_todense", "csr_fromdense", "csr_matmat",
           "csr_matvec", "csr_todense", "empty", "eye", "fromdense", "grad", "jacfwd", "jacobian", "jacrev",
           "random_bcoo", "sparsify", "todense", "value_and_grad", "linalg"]
