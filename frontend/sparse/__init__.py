"""``kiln.experimental.sparse``: JAX's sparse arrays (BCOO and BCSR, the 2-D COO/CSR/CSC), their operations,
sparse-aware differentiation, ``random_bcoo`` and the ``sparsify`` transformation."""
from .ad import grad as grad
from .ad import jacfwd as jacfwd
from .ad import jacobian as jacobian
from .ad import jacrev as jacrev
from .ad import value_and_grad as value_and_grad
from .base import CuSparseEfficiencyWarning as CuSparseEfficiencyWarning
from .base import JAXSparse as JAXSparse
from .base import SparseEfficiencyError as SparseEfficiencyError
from .base import SparseEfficiencyWarning as SparseEfficiencyWarning
from .bcoo import BCOO as BCOO
from .bcoo import bcoo_dot_general as bcoo_dot_general
from .bcoo import bcoo_eliminate_zeros as bcoo_eliminate_zeros
from .bcoo import bcoo_fromdense as bcoo_fromdense
from .bcoo import bcoo_multiply_dense as bcoo_multiply_dense
from .bcoo import bcoo_reduce_sum as bcoo_reduce_sum
from .bcoo import bcoo_sort_indices as bcoo_sort_indices
from .bcoo import bcoo_sum_duplicates as bcoo_sum_duplicates
from .bcoo import bcoo_todense as bcoo_todense
from .bcoo import bcoo_transpose as bcoo_transpose
from .bcoo import empty as empty
from .bcoo import eye as eye
from .bcoo import fromdense as fromdense
from .bcoo import todense as todense
from .bcoo_structure import bcoo_broadcast_in_dim as bcoo_broadcast_in_dim
from .bcoo_structure import bcoo_concatenate as bcoo_concatenate
from .bcoo_structure import bcoo_dynamic_slice as bcoo_dynamic_slice
from .bcoo_structure import bcoo_extract as bcoo_extract
from .bcoo_structure import bcoo_reshape as bcoo_reshape
from .bcoo_structure import bcoo_rev as bcoo_rev
from .bcoo_structure import bcoo_slice as bcoo_slice
from .bcoo_structure import bcoo_squeeze as bcoo_squeeze
from .bcoo_structure import bcoo_update_layout as bcoo_update_layout
from .bcsr import BCSR as BCSR
from .bcsr import bcsr_broadcast_in_dim as bcsr_broadcast_in_dim
from .bcsr import bcsr_concatenate as bcsr_concatenate
from .bcsr import bcsr_dot_general as bcsr_dot_general
from .bcsr import bcsr_eliminate_zeros as bcsr_eliminate_zeros
from .bcsr import bcsr_extract as bcsr_extract
from .bcsr import bcsr_fromdense as bcsr_fromdense
from .bcsr import bcsr_sum_duplicates as bcsr_sum_duplicates
from .bcsr import bcsr_todense as bcsr_todense
from .conv import bcoo_conv_general_dilated as bcoo_conv_general_dilated
from .coo_csr import COO as COO
from .coo_csr import CSC as CSC
from .coo_csr import CSR as CSR
from .coo_csr import coo_fromdense as coo_fromdense
from .coo_csr import coo_matmat as coo_matmat
from .coo_csr import coo_matvec as coo_matvec
from .coo_csr import coo_todense as coo_todense
from .coo_csr import csr_fromdense as csr_fromdense
from .coo_csr import csr_matmat as csr_matmat
from .coo_csr import csr_matvec as csr_matvec
from .coo_csr import csr_todense as csr_todense
from .gather import bcoo_gather as bcoo_gather
from .products import bcoo_dot_general_sampled as bcoo_dot_general_sampled
from .products import bcoo_multiply_sparse as bcoo_multiply_sparse
from .random import random_bcoo as random_bcoo
from .transform import sparsify as sparsify

__all__ = ["BCOO", "BCSR", "COO", "CSC", "CSR", "CuSparseEfficiencyWarning", "JAXSparse", "SparseEfficiencyError",
           "SparseEfficiencyWarning", "bcoo_broadcast_in_dim", "bcoo_concatenate", "bcoo_conv_general_dilated",
           "bcoo_dot_general", "bcoo_dot_general_sampled", "bcoo_dynamic_slice", "bcoo_eliminate_zeros", "bcoo_extract",
           "bcoo_gather", "bcoo_fromdense", "bcoo_multiply_dense", "bcoo_multiply_sparse", "bcoo_reduce_sum",
           "bcoo_reshape", "bcoo_rev", "bcoo_slice", "bcoo_sort_indices", "bcoo_squeeze", "bcoo_sum_duplicates",
           "bcoo_todense", "bcoo_transpose", "bcoo_update_layout", "bcsr_broadcast_in_dim", "bcsr_concatenate",
           "bcsr_dot_general", "bcsr_eliminate_zeros", "bcsr_extract", "bcsr_fromdense", "bcsr_sum_duplicates",
           "bcsr_todense", "coo_fromdense", "coo_matmat", "coo_matvec", "coo_todense", "csr_fromdense", "csr_matmat",
           "csr_matvec", "csr_todense", "empty", "eye", "fromdense", "grad", "jacfwd", "jacobian", "jacrev",
           "random_bcoo", "sparsify", "todense", "value_and_grad"]
