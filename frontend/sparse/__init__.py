"""``kiln.experimental.sparse``: sparse arrays in JAX's BCOO format (see ``bcoo.py``)."""
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
from .transform import sparsify as sparsify

__all__ = ["BCOO", "bcoo_dot_general", "bcoo_eliminate_zeros", "bcoo_fromdense", "bcoo_multiply_dense",
           "bcoo_reduce_sum", "bcoo_sort_indices", "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose", "empty",
           "eye", "fromdense", "sparsify", "todense"]
