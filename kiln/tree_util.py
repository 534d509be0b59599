"""kiln.tree_util: pytrees (nested tuples, lists, dicts, namedtuples, registered classes)."""
from kiln.frontend.core.tree_util import DictKey as DictKey
from kiln.frontend.core.tree_util import FlattenedIndexKey as FlattenedIndexKey
from kiln.frontend.core.tree_util import GetAttrKey as GetAttrKey
from kiln.frontend.core.tree_util import KeyEntry as KeyEntry
from kiln.frontend.core.tree_util import KeyPath as KeyPath
from kiln.frontend.core.tree_util import PyTreeDef as PyTreeDef
from kiln.frontend.core.tree_util import SequenceKey as SequenceKey
from kiln.frontend.core.tree_util import all_leaves as all_leaves
from kiln.frontend.core.tree_util import keystr as keystr
from kiln.frontend.core.tree_util import register_pytree_node as register_pytree_node
from kiln.frontend.core.tree_util import register_pytree_node_class as register_pytree_node_class
from kiln.frontend.core.tree_util import tree_all as tree_all
from kiln.frontend.core.tree_util import tree_flatten as tree_flatten
from kiln.frontend.core.tree_util import tree_flatten_with_path as tree_flatten_with_path
from kiln.frontend.core.tree_util import tree_leaves as tree_leaves
from kiln.frontend.core.tree_util import tree_leaves_with_path as tree_leaves_with_path
from kiln.frontend.core.tree_util import tree_map as tree_map
from kiln.frontend.core.tree_util import tree_map_with_path as tree_map_with_path
from kiln.frontend.core.tree_util import tree_reduce as tree_reduce
from kiln.frontend.core.tree_util import tree_structure as tree_structure
from kiln.frontend.core.tree_util import tree_transpose as tree_transpose
from kiln.frontend.core.tree_util import tree_unflatten as tree_unflatten
from kiln.frontend.core.tree_util import treedef_is_leaf as treedef_is_leaf

__all__ = [
    "DictKey", "FlattenedIndexKey", "GetAttrKey", "KeyEntry", "KeyPath", "PyTreeDef", "SequenceKey", "all_leaves",
    "keystr", "register_pytree_node", "register_pytree_node_class", "tree_all", "tree_flatten",
    "tree_flatten_with_path", "tree_leaves", "tree_leaves_with_path", "tree_map", "tree_map_with_path", "tree_reduce",
    "tree_structure", "tree_transpose", "tree_unflatten", "treedef_is_leaf",
]
