"""kiln.optim.tree_utils: optax.tree_utils' maths on pytrees, casts, random trees and state look-ups."""
from kiln.frontend.optim.tree_utils import NamedTupleKey as NamedTupleKey
from kiln.frontend.optim.tree_utils import tree_add as tree_add
from kiln.frontend.optim.tree_utils import tree_add_scalar_mul as tree_add_scalar_mul
from kiln.frontend.optim.tree_utils import tree_add_scale as tree_add_scale
from kiln.frontend.optim.tree_utils import tree_allclose as tree_allclose
from kiln.frontend.optim.tree_utils import tree_batch_shape as tree_batch_shape
from kiln.frontend.optim.tree_utils import tree_bias_correction as tree_bias_correction
from kiln.frontend.optim.tree_utils import tree_cast as tree_cast
from kiln.frontend.optim.tree_utils import tree_cast_like as tree_cast_like
from kiln.frontend.optim.tree_utils import tree_clip as tree_clip
from kiln.frontend.optim.tree_utils import tree_conj as tree_conj
from kiln.frontend.optim.tree_utils import tree_div as tree_div
from kiln.frontend.optim.tree_utils import tree_dtype as tree_dtype
from kiln.frontend.optim.tree_utils import tree_full_like as tree_full_like
from kiln.frontend.optim.tree_utils import tree_get as tree_get
from kiln.frontend.optim.tree_utils import tree_get_all_with_path as tree_get_all_with_path
from kiln.frontend.optim.tree_utils import tree_l1_norm as tree_l1_norm
from kiln.frontend.optim.tree_utils import tree_l2_norm as tree_l2_norm
from kiln.frontend.optim.tree_utils import tree_linf_norm as tree_linf_norm
from kiln.frontend.optim.tree_utils import tree_map_params as tree_map_params
from kiln.frontend.optim.tree_utils import tree_max as tree_max
from kiln.frontend.optim.tree_utils import tree_min as tree_min
from kiln.frontend.optim.tree_utils import tree_mul as tree_mul
from kiln.frontend.optim.tree_utils import tree_norm as tree_norm
from kiln.frontend.optim.tree_utils import tree_ones_like as tree_ones_like
from kiln.frontend.optim.tree_utils import tree_random_like as tree_random_like
from kiln.frontend.optim.tree_utils import tree_real as tree_real
from kiln.frontend.optim.tree_utils import tree_scalar_mul as tree_scalar_mul
from kiln.frontend.optim.tree_utils import tree_scale as tree_scale
from kiln.frontend.optim.tree_utils import tree_set as tree_set
from kiln.frontend.optim.tree_utils import tree_size as tree_size
from kiln.frontend.optim.tree_utils import tree_split_key_like as tree_split_key_like
from kiln.frontend.optim.tree_utils import tree_sub as tree_sub
from kiln.frontend.optim.tree_utils import tree_sum as tree_sum
from kiln.frontend.optim.tree_utils import tree_unwrap_random_key_data as tree_unwrap_random_key_data
from kiln.frontend.optim.tree_utils import tree_update_infinity_moment as tree_update_infinity_moment
from kiln.frontend.optim.tree_utils import tree_update_moment as tree_update_moment
from kiln.frontend.optim.tree_utils import tree_update_moment_per_elem_norm as tree_update_moment_per_elem_norm
from kiln.frontend.optim.tree_utils import tree_vdot as tree_vdot
from kiln.frontend.optim.tree_utils import tree_where as tree_where
from kiln.frontend.optim.tree_utils import tree_zeros_like as tree_zeros_like

__all__ = [
    "NamedTupleKey", "tree_add", "tree_add_scalar_mul", "tree_add_scale", "tree_allclose", "tree_batch_shape",
    "tree_bias_correction", "tree_cast", "tree_cast_like", "tree_clip", "tree_conj", "tree_div", "tree_dtype",
    "tree_full_like", "tree_get", "tree_get_all_with_path", "tree_l1_norm", "tree_l2_norm", "tree_linf_norm",
    "tree_map_params", "tree_max", "tree_min", "tree_mul", "tree_norm", "tree_ones_like", "tree_random_like",
    "tree_real", "tree_scalar_mul", "tree_scale", "tree_set", "tree_size", "tree_split_key_like", "tree_sub",
    "tree_sum", "tree_unwrap_random_key_data", "tree_update_infinity_moment", "tree_update_moment",
    "tree_update_moment_per_elem_norm", "tree_vdot", "tree_where", "tree_zeros_like",
]
