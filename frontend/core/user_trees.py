"""The pytree functions as users call them (``kiln.tree_util``, ``kiln.tree``): kiln's own (tree_util.py) over
the registry users see, in which typed PRNG key arrays are leaves, as in JAX (``jax.tree.map(f, {"k": key})``
calls ``f`` on the key). kiln's transformations flatten through keys to their uint32 data instead
(:func:`~kiln.frontend.core.tree_util.register_internal_node`)."""
from __future__ import annotations

from typing import Any, Callable

from . import tree_util as _tu
from .tree_util import _NO_INITIALIZER, PyTreeDef, _user_registry

__all__ = [
    "all_leaves", "flatten_one_level", "flatten_one_level_with_keys", "is_tree_node", "tree_all", "tree_broadcast",
    "tree_flatten", "tree_flatten_with_path", "tree_leaves", "tree_leaves_with_path", "tree_map",
    "tree_map_with_path", "tree_reduce", "tree_reduce_associative", "tree_structure", "tree_transpose",
]

_USER = _user_registry
_IsLeaf = Callable[[Any], bool] | None


def tree_flatten(tree: Any, is_leaf: _IsLeaf = None) -> tuple[list, PyTreeDef]:
    return _tu.tree_flatten(tree, is_leaf, registry=_USER)


def tree_leaves(tree: Any, is_leaf: _IsLeaf = None) -> list:
    return _tu.tree_leaves(tree, is_leaf, registry=_USER)


def tree_structure(tree: Any, is_leaf: _IsLeaf = None) -> PyTreeDef:
    return _tu.tree_structure(tree, is_leaf, registry=_USER)


def all_leaves(iterable: Any, is_leaf: _IsLeaf = None) -> bool:
    return _tu.all_leaves(iterable, is_leaf, registry=_USER)


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: _IsLeaf = None) -> Any:
    return _tu.tree_map(f, tree, *rest, is_leaf=is_leaf, registry=_USER)


def tree_all(tree: Any, is_leaf: _IsLeaf = None) -> bool:
    return _tu.tree_all(tree, is_leaf, registry=_USER)


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _NO_INITIALIZER,
                is_leaf: _IsLeaf = None) -> Any:
    return _tu.tree_reduce(function, tree, initializer, is_leaf, registry=_USER)


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *, identity: Any = _NO_INITIALIZER,
                            is_leaf: _IsLeaf = None) -> Any:
    return _tu.tree_reduce_associative(operation, tree, identity=identity, is_leaf=is_leaf, registry=_USER)


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any) -> Any:
    return _tu.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose, registry=_USER)


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: _IsLeaf = None) -> Any:
    return _tu.tree_broadcast(prefix_tree, full_tree, is_leaf, registry=_USER)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False
                           ) -> tuple[list, PyTreeDef]:
    return _tu.tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path, registry=_USER)


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list:
    return _tu.tree_leaves_with_path(tree, is_leaf, is_leaf_takes_path, registry=_USER)


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    return _tu.tree_map_with_path(f, tree, *rest, is_leaf=is_leaf, is_leaf_takes_path=is_leaf_takes_path,
                                  registry=_USER)


def is_tree_node(typ: type) -> bool:
    return _tu.is_tree_node(typ, registry=_USER)


def flatten_one_level(tree: Any) -> tuple[list, Any]:
    return _tu.flatten_one_level(tree, registry=_USER)


def flatten_one_level_with_keys(tree: Any) -> tuple[list, Any]:
    return _tu.flatten_one_level_with_keys(tree, registry=_USER)


for _name in __all__:  # the documentation of kiln's own function, which does the work
    globals()[_name].__doc__ = getattr(_tu, _name).__doc__
del _name
