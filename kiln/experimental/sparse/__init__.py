"""``jax.experimental.sparse``: sparse arrays in the BCOO format (``BCOO``, ``fromdense``/``todense``, products
with dense arrays, ``sum``, ``transpose``) and the ``sparsify`` transformation, usable under jit, vmap and grad."""
from kiln.frontend.sparse import BCOO as BCOO
from kiln.frontend.sparse import bcoo_dot_general as bcoo_dot_general
from kiln.frontend.sparse import bcoo_eliminate_zeros as bcoo_eliminate_zeros
from kiln.frontend.sparse import bcoo_fromdense as bcoo_fromdense
from kiln.frontend.sparse import bcoo_multiply_dense as bcoo_multiply_dense
from kiln.frontend.sparse import bcoo_reduce_sum as bcoo_reduce_sum
from kiln.frontend.sparse import bcoo_sort_indices as bcoo_sort_indices
from kiln.frontend.sparse import bcoo_sum_duplicates as bcoo_sum_duplicates
from kiln.frontend.sparse import bcoo_todense as bcoo_todense
from kiln.frontend.sparse import bcoo_transpose as bcoo_transpose
from kiln.frontend.sparse import empty as empty
from kiln.frontend.sparse import eye as eye
from kiln.frontend.sparse import fromdense as fromdense
from kiln.frontend.sparse import sparsify as sparsify
from kiln.frontend.sparse import todense as todense

__all__ = ["BCOO", "bcoo_dot_general", "bcoo_eliminate_zeros", "bcoo_fromdense", "bcoo_multiply_dense",
           "bcoo_reduce_sum", "bcoo_sort_indices", "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose", "empty",
           "eye", "fromdense", "sparsify", "todense"]
