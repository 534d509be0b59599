"""kiln.optim.tree: optax.tree's short names for kiln.optim.tree_utils' functions (``tree.add`` is
``tree_utils.tree_add``)."""
from kiln.frontend.optim.tree_utils import tree_add as add
from kiln.frontend.optim.tree_utils import tree_add_scale as add_scale
from kiln.frontend.optim.tree_utils import tree_allclose as allclose
from kiln.frontend.optim.tree_utils import tree_batch_shape as batch_shape
from kiln.frontend.optim.tree_utils import tree_bias_correction as bias_correction
from kiln.frontend.optim.tree_utils import tree_cast as cast
from kiln.frontend.optim.tree_utils import tree_cast_like as cast_like
from kiln.frontend.optim.tree_utils import tree_clip as clip
from kiln.frontend.optim.tree_utils import tree_conj as conj
from kiln.frontend.optim.tree_utils import tree_div as div
from kiln.frontend.optim.tree_utils import tree_dtype as dtype
from kiln.frontend.optim.tree_utils import tree_full_like as full_like
from kiln.frontend.optim.tree_utils import tree_get as get
from kiln.frontend.optim.tree_utils import tree_get_all_with_path as get_all_with_path
from kiln.frontend.optim.tree_utils import tree_map_params as map_params
from kiln.frontend.optim.tree_utils import tree_max as max  # noqa: A004
from kiln.frontend.optim.tree_utils import tree_min as min  # noqa: A004
from kiln.frontend.optim.tree_utils import tree_mul as mul
from kiln.frontend.optim.tree_utils import tree_norm as norm
from kiln.frontend.optim.tree_utils import tree_ones_like as ones_like
from kiln.frontend.optim.tree_utils import tree_random_like as random_like
from kiln.frontend.optim.tree_utils import tree_real as real
from kiln.frontend.optim.tree_utils import tree_scale as scale
from kiln.frontend.optim.tree_utils import tree_set as set  # noqa: A004
from kiln.frontend.optim.tree_utils import tree_size as size
from kiln.frontend.optim.tree_utils import tree_split_key_like as split_key_like
from kiln.frontend.optim.tree_utils import tree_sub as sub
from kiln.frontend.optim.tree_utils import tree_sum as sum  # noqa: A004
from kiln.frontend.optim.tree_utils import tree_unwrap_random_key_data as unwrap_random_key_data
from kiln.frontend.optim.tree_utils import tree_update_infinity_moment as update_infinity_moment
from kiln.frontend.optim.tree_utils import tree_update_moment as update_moment
from kiln.frontend.optim.tree_utils import tree_update_moment_per_elem_norm as update_moment_per_elem_norm
from kiln.frontend.optim.tree_utils import tree_vdot as vdot
from kiln.frontend.optim.tree_utils import tree_where as where
from kiln.frontend.optim.tree_utils import tree_zeros_like as zeros_like

__all__ = [
    "add", "add_scale", "allclose", "batch_shape", "bias_correction", "cast", "cast_like", "clip", "conj", "div",
    "dtype", "full_like", "get", "get_all_with_path", "map_params", "max", "min", "mul", "norm", "ones_like",
    "random_like", "real", "scale", "set", "size", "split_key_like", "sub", "sum", "unwrap_random_key_data",
    "update_infinity_moment", "update_moment", "update_moment_per_elem_norm", "vdot", "where", "zeros_like",
]
