"""kiln.tree_util: pytrees (nested tuples, lists, dicts, namedtuples, registered classes)."""
from kiln.frontend.tree_util import *  # noqa: F401,F403
from kiln.frontend.tree_util import (  # noqa: F401
    PyTreeDef,
    keystr,
    register_pytree_node,
    register_pytree_node_class,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_map,
    tree_map_with_path,
    tree_structure,
    tree_unflatten,
)
