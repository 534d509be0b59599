"""kiln.tree: the pytree utilities under short names (as ``jax.tree``): ``kiln.tree.map`` is
``kiln.tree_util.tree_map``, and so on."""
from kiln.frontend.core.tree_util import static_field as static
from kiln.frontend.core.tree_util import tree_unflatten as unflatten
from kiln.frontend.core.user_trees import tree_all as all  # noqa: A004  (JAX's name)
from kiln.frontend.core.user_trees import tree_broadcast as broadcast
from kiln.frontend.core.user_trees import tree_flatten as flatten
from kiln.frontend.core.user_trees import tree_flatten_with_path as flatten_with_path
from kiln.frontend.core.user_trees import tree_leaves as leaves
from kiln.frontend.core.user_trees import tree_leaves_with_path as leaves_with_path
from kiln.frontend.core.user_trees import tree_map as map  # noqa: A004
from kiln.frontend.core.user_trees import tree_map_with_path as map_with_path
from kiln.frontend.core.user_trees import tree_reduce as reduce
from kiln.frontend.core.user_trees import tree_reduce_associative as reduce_associative
from kiln.frontend.core.user_trees import tree_structure as structure
from kiln.frontend.core.user_trees import tree_transpose as transpose

__all__ = [
    "all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map", "map_with_path",
    "reduce", "reduce_associative", "static", "structure", "transpose", "unflatten",
]
