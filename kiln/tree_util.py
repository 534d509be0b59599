"""kiln.tree_util: pytrees (nested tuples, lists, dicts, namedtuples, registered classes)."""
from kiln.frontend.core.tree_util import DictKey as DictKey
from kiln.frontend.core.tree_util import FlattenedIndexKey as FlattenedIndexKey
from kiln.frontend.core.tree_util import GetAttrKey as GetAttrKey
from kiln.frontend.core.tree_util import KeyEntry as KeyEntry
from kiln.frontend.core.tree_util import KeyPath as KeyPath
from kiln.frontend.core.tree_util import Partial as Partial
from kiln.frontend.core.tree_util import PyTreeDef as PyTreeDef
from kiln.frontend.core.tree_util import SequenceKey as SequenceKey
from kiln.frontend.core.tree_util import default_registry as default_registry
from kiln.frontend.core.tree_util import keystr as keystr
from kiln.frontend.core.tree_util import register_dataclass as register_dataclass
from kiln.frontend.core.tree_util import register_pytree_node as register_pytree_node
from kiln.frontend.core.tree_util import register_pytree_node_class as register_pytree_node_class
from kiln.frontend.core.tree_util import register_pytree_with_keys as register_pytree_with_keys
from kiln.frontend.core.tree_util import register_pytree_with_keys_class as register_pytree_with_keys_class
from kiln.frontend.core.tree_util import register_static as register_static
from kiln.frontend.core.tree_util import tree_unflatten as tree_unflatten
from kiln.frontend.core.tree_util import treedef_children as treedef_children
from kiln.frontend.core.tree_util import treedef_is_leaf as treedef_is_leaf
from kiln.frontend.core.tree_util import treedef_tuple as treedef_tuple
from kiln.frontend.core.user_trees import all_leaves as all_leaves
from kiln.frontend.core.user_trees import flatten_one_level as flatten_one_level
from kiln.frontend.core.user_trees import flatten_one_level_with_keys as flatten_one_level_with_keys
from kiln.frontend.core.user_trees import is_tree_node as is_tree_node
from kiln.frontend.core.user_trees import tree_all as tree_all
from kiln.frontend.core.user_trees import tree_broadcast as tree_broadcast
from kiln.frontend.core.user_trees import tree_flatten as tree_flatten
from kiln.frontend.core.user_trees import tree_flatten_with_path as tree_flatten_with_path
from kiln.frontend.core.user_trees import tree_leaves as tree_leaves
from kiln.frontend.core.user_trees import tree_leaves_with_path as tree_leaves_with_path
from kiln.frontend.core.user_trees import tree_map as tree_map
from kiln.frontend.core.user_trees import tree_map_with_path as tree_map_with_path
from kiln.frontend.core.user_trees import tree_reduce as tree_reduce
from kiln.frontend.core.user_trees import tree_reduce_associative as tree_reduce_associative
from kiln.frontend.core.user_trees import tree_structure as tree_structure
from kiln.frontend.core.user_trees import tree_transpose as tree_transpose

__all__ = [
    "DictKey", "FlattenedIndexKey", "GetAttrKey", "KeyEntry", "KeyPath", "Partial", "PyTreeDef", "SequenceKey",
    "all_leaves", "default_registry", "flatten_one_level", "flatten_one_level_with_keys", "is_tree_node", "keystr",
    "register_dataclass", "register_pytree_node", "register_pytree_node_class", "register_pytree_with_keys",
    "register_pytree_with_keys_class", "register_static", "tree_all", "tree_broadcast", "tree_flatten",
    "tree_flatten_with_path", "tree_leaves", "tree_leaves_with_path", "tree_map", "tree_map_with_path", "tree_reduce",
    "tree_reduce_associative", "tree_structure", "tree_transpose", "tree_unflatten", "treedef_children",
    "treedef_is_leaf", "treedef_tuple"
]
