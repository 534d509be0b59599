"""Pytrees, as in ``jax.tree_util``, in pure Python.

A pytree is a nested structure of containers ("nodes") whose non-container parts are "leaves".
Nodes: tuple, list, dict (children in sorted key order), namedtuple, None (a node with no
children), OrderedDict, defaultdict, and classes registered with :func:`register_pytree_node` or
:func:`register_pytree_node_class`. Everything else is a leaf.

The functions take a keyword ``registry``: kiln's own code flattens with every registered node type (the
default); users' calls (``kiln.tree_util``, ``kiln.tree``: user_trees.py) pass the registry users see, in which
the types of :func:`register_internal_node` (typed PRNG key arrays) are leaves, as in JAX.

``tree_flatten`` runs on every jit call, so the structure is kept as plain nested tuples
``(node_type, aux_data, children)`` and the flattening loop handles leaf children inline,
without a function call per leaf.
"""
from __future__ import annotations

import collections
import collections.abc
import dataclasses
import functools
import operator
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, NamedTuple

from kiln.runtime import pytree_proto

__all__ = [
    "PyTreeDef", "register_pytree_node", "register_pytree_node_class", "tree_flatten",
    "tree_unflatten", "tree_leaves", "tree_structure", "tree_map", "tree_all", "tree_reduce",
    "tree_transpose", "treedef_is_leaf", "all_leaves", "tree_flatten_with_path",
    "tree_leaves_with_path", "tree_map_with_path", "keystr", "SequenceKey", "DictKey",
    "GetAttrKey", "FlattenedIndexKey", "KeyEntry", "KeyPath", "Partial", "register_dataclass",
    "register_pytree_with_keys", "register_pytree_with_keys_class", "register_static", "tree_broadcast",
    "tree_reduce_associative", "flatten_one_level", "flatten_one_level_with_keys", "is_tree_node",
    "treedef_children", "treedef_tuple", "default_registry", "static_field",
]


# ---------------------------------------------------------------------------------------------
# Key entries (key paths name where a leaf sits: "x['w'][1]")
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SequenceKey:
    """Index of a child of a tuple or list: ``[idx]``."""
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclass(frozen=True, slots=True)
class DictKey:
    """Key of a child of a dict: ``[key]``."""
    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclass(frozen=True, slots=True)
class GetAttrKey:
    """Attribute name of a child (namedtuple fields, custom nodes): ``.name``."""
    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclass(frozen=True, slots=True)
class FlattenedIndexKey:
    """Position of a child among a custom node's flattened children: ``[<flat index i>]``."""
    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyEntry = Any  # SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey, or a custom node's key
KeyPath = tuple[Any, ...]


def _simple_key(k: Any) -> str:
    for attr in ("idx", "key", "name"):
        if hasattr(k, attr):
            return str(getattr(k, attr))
    return str(k)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """Render a key path: ``keystr((DictKey('a'), SequenceKey(0)))`` is ``"['a'][0]"``.

    With ``simple=True`` each key is shown bare (``a``, ``0``) and joined with ``separator``
    (``keystr(path, simple=True, separator='/')`` gives ``"a/0"``).
    """
    if simple:
        return separator.join(_simple_key(k) for k in keys)
    return separator.join(str(k) for k in keys)


# ---------------------------------------------------------------------------------------------
# Node types
# ---------------------------------------------------------------------------------------------

class _NodeType:
    """How one container type flattens and unflattens."""
    __slots__ = ("type", "flatten", "unflatten", "flatten_with_keys", "custom")

    def __init__(self, type_: type, flatten: Callable, unflatten: Callable,
                 flatten_with_keys: Callable | None = None, custom: bool = False):
        self.type = type_
        self.flatten = flatten  # x -> (children, aux_data)
        self.unflatten = unflatten  # (aux_data, children) -> x
        # x -> (((key, child), ...), aux_data); None: keys are FlattenedIndexKey(i)
        self.flatten_with_keys = flatten_with_keys
        self.custom = custom

    def __repr__(self) -> str:
        return f"<pytree node {self.type.__qualname__}>"


def _sorted_keys(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError:  # a ValueError, as JAX's
        raise ValueError(f"kiln pytrees sort dict keys, but the keys {list(d)!r:.200} of this dict "
                        "cannot be compared with each other; use keys of one type (e.g. all str), "
                        "or an OrderedDict, which keeps insertion order.") from None


def _dict_flatten(d: dict) -> tuple[list, tuple]:
    keys = _sorted_keys(d)
    return [d[k] for k in keys], tuple(keys)


def _dict_flatten_with_keys(d: dict) -> tuple[list, tuple]:
    keys = _sorted_keys(d)
    return [(DictKey(k), d[k]) for k in keys], tuple(keys)


def _ordered_flatten(d: collections.OrderedDict) -> tuple[list, tuple]:
    return list(d.values()), tuple(d)


def _defaultdict_flatten(d: collections.defaultdict) -> tuple[list, tuple]:
    children, keys = _dict_flatten(d)
    return children, (d.default_factory, keys)


def _seq_with_keys(x: Any) -> tuple[list, None]:
    return [(SequenceKey(i), c) for i, c in enumerate(x)], None


_TUPLE = _NodeType(tuple, lambda x: (x, None), lambda aux, ch: tuple(ch), _seq_with_keys)
_LIST = _NodeType(list, lambda x: (x, None), lambda aux, ch: list(ch), _seq_with_keys)
_DICT = _NodeType(dict, _dict_flatten, lambda keys, ch: dict(zip(keys, ch, strict=True)),
                  _dict_flatten_with_keys)
_NONE = _NodeType(type(None), lambda x: ((), None), lambda aux, ch: None, lambda x: ((), None))
_ORDERED_DICT = _NodeType(
    collections.OrderedDict, _ordered_flatten,
    lambda keys, ch: collections.OrderedDict(zip(keys, ch, strict=True)),
    lambda d: ([(DictKey(k), v) for k, v in d.items()], tuple(d)))
_DEFAULTDICT = _NodeType(
    collections.defaultdict, _defaultdict_flatten,
    lambda aux, ch: collections.defaultdict(aux[0], zip(aux[1], ch, strict=True)),
    lambda d: ([(DictKey(k), d[k]) for k in _sorted_keys(d)], (d.default_factory, tuple(_sorted_keys(d)))))
# namedtuples are not registered by type (there is one type per namedtuple class); aux is the class.
_NAMEDTUPLE = _NodeType(
    NamedTuple, lambda x: (x, type(x)), lambda cls, ch: cls(*ch),
    lambda x: ([(GetAttrKey(f), c) for f, c in zip(type(x)._fields, x, strict=True)], type(x)))

_registry: dict[type, _NodeType] = {
    tuple: _TUPLE, list: _LIST, dict: _DICT, type(None): _NONE,
    collections.OrderedDict: _ORDERED_DICT, collections.defaultdict: _DEFAULTDICT,
}
# The nodes as users see them (kiln.tree_util, kiln.tree; see user_trees.py): all of the above but the types
# registered with register_internal_node, which are leaves there. kiln's own code flattens with _registry.
_user_registry: dict[type, _NodeType] = dict(_registry)


def register_pytree_node(nodetype: type, flatten_func: Callable[[Any], tuple[Iterable, Any]],
                         unflatten_func: Callable[[Any, Iterable], Any],
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Make instances of ``nodetype`` pytree nodes (exactly that type, not its subclasses).

    Parameters
    ----------
    nodetype : the class.
    flatten_func : ``x -> (children, aux_data)``; ``children`` is an iterable of subtrees,
        ``aux_data`` is static data, compared with ``==`` when checking tree structures (and
        so part of jit's cache key); it need not be hashable (a dict is fine).
    unflatten_func : ``(aux_data, children) -> x``; ``children`` is a tuple.
    flatten_with_keys_func : optional ``x -> (((key, child), ...), aux_data)`` that names the
        children in key paths; without it, children are named ``FlattenedIndexKey(i)``.
    """
    if not isinstance(nodetype, type):
        raise TypeError(f"register_pytree_node: expected a class, got {nodetype!r}")
    if nodetype in _registry:
        raise ValueError(f"register_pytree_node: {nodetype.__qualname__} is already registered "
                         "as a pytree node type")
    _registry[nodetype] = _user_registry[nodetype] = _NodeType(nodetype, flatten_func, unflatten_func,
                                                               flatten_with_keys_func, custom=True)
    # Mirrored into jaxlib's C++ registry, so jit's C++ dispatch flattens it the same way.
    from kiln.runtime import fastpath
    fastpath.register_node(nodetype, flatten_func, unflatten_func)


# Per internal node type: how many trailing axes of each of its children the user does not see (a typed key
# array of shape (3,) carries uint32 data of shape (3, 2): one hidden axis).
_hidden_axes: dict[type, int] = {}


def register_internal_node(nodetype: type, flatten_func: Callable[[Any], tuple[Iterable, Any]],
                           unflatten_func: Callable[[Any, Iterable], Any], hidden_axes: int = 0) -> None:
    """Make ``nodetype`` a node for kiln's own code (its transformations flatten through it to its children)
    and a leaf for users (the functions of ``kiln.tree_util`` and ``kiln.tree``): typed PRNG key arrays, which
    JAX's pytree functions see as leaves, over uint32 data that kiln's transformations carry. ``hidden_axes``:
    the trailing axes of each child that are not axes of the value the user sees (see :func:`hidden_axes`)."""
    register_pytree_node(nodetype, flatten_func, unflatten_func)
    del _user_registry[nodetype]
    _hidden_axes[nodetype] = hidden_axes


def hidden_axes(tree: Any) -> list[int]:
    """For each leaf of ``tree`` (in :func:`tree_flatten`'s order), the number of its trailing axes that belong
    to an internal node above it rather than to the value the user sees: vmap counts a key array's axes, not
    its data's. Zeros for a tree without internal nodes."""
    return [n for n, _ in _user_leaves(tree)]


def user_paths(tree: Any) -> list[KeyPath]:
    """For each leaf of ``tree`` (in :func:`tree_flatten`'s order), the key path of the value the user sees
    holding it: a key array's, not its data's (for messages)."""
    return [path for _, path in _user_leaves(tree)]


def user_leaves_with_path(tree: Any) -> list[tuple[KeyPath, Any]]:
    """The leaves users see in ``tree`` (a typed key array is one), with their key paths."""
    return tree_flatten_with_path(tree, registry=_user_registry)[0]


def _user_leaves(tree: Any) -> list[tuple[int, KeyPath]]:
    """(hidden axes, user key path) per leaf of ``tree`` in kiln's flattening order."""
    out: list[tuple[int, KeyPath]] = []
    for path, leaf in user_leaves_with_path(tree):
        n = _hidden_axes.get(type(leaf))
        out.extend([(0, path)] if n is None else [(n, path)] * len(tree_flatten(leaf)[0]))
    return out


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: register ``cls`` using its ``tree_flatten`` method and its
    ``tree_unflatten(aux_data, children)`` classmethod (and ``tree_flatten_with_keys`` if defined).
    """
    with_keys = operator.methodcaller("tree_flatten_with_keys") \
        if hasattr(cls, "tree_flatten_with_keys") else None
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten, with_keys)
    return cls


def _node_type_of(x: Any, registry: dict = _registry) -> _NodeType | None:
    """The node type of ``x`` in ``registry`` (kiln's own by default), or None when ``x`` is a leaf there."""
    nt = registry.get(type(x))
    if nt is None and isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return _NAMEDTUPLE
    return nt


# ---------------------------------------------------------------------------------------------
# PyTreeDef
# ---------------------------------------------------------------------------------------------

# The structure of a tree: _LEAF, or (node_type, aux_data, tuple_of_child_structures).
_LEAF = None


class PyTreeDef:
    """The structure of a pytree, without its leaves. Hashable; equal when structures are equal
    (node data compared with ``==``; unhashable node data is hashed through a converted form)."""
    __slots__ = ("_node", "num_leaves", "_hash")

    def __init__(self, node: Any, num_leaves: int):
        self._node = node
        self.num_leaves = num_leaves
        self._hash = None

    @property
    def num_nodes(self) -> int:
        """Number of nodes, leaves included (``(1, 2)`` has 3)."""
        def count(n):
            return 1 if n is _LEAF else 1 + sum(count(c) for c in n[2])
        return count(self._node)

    def children(self) -> list[PyTreeDef]:
        """The structures of the root's children (empty for a leaf)."""
        if self._node is _LEAF:
            return []
        return [PyTreeDef(c, _count_leaves(c)) for c in self._node[2]]

    def node_data(self) -> tuple[type, Any] | None:
        """``(node type, aux_data)`` of the root, or None for a leaf (as JAX's: a dict's sorted keys as a list, None
        for a namedtuple)."""
        if self._node is _LEAF:
            return None
        nt, aux, _ = self._node
        if nt is _NAMEDTUPLE:
            return aux, None
        return nt.type, (list(aux) if nt is _DICT else aux)

    @staticmethod
    def from_node_data_and_children(registry: Any, node_data: tuple[type, Any], children: Iterable[PyTreeDef]
                                    ) -> PyTreeDef:
        """The structure whose root has ``node_data`` (``(node type, aux_data)``, as :meth:`node_data` gives it) and
        the structures ``children`` below it. ``registry`` is ``kiln.tree_util.default_registry``."""
        where = "PyTreeDef.from_node_data_and_children"
        if registry is not default_registry:
            raise TypeError(f"{where}: registry must be kiln.tree_util.default_registry, got {registry!r:.80}")
        cls, aux = node_data
        children = list(children)
        nt = _user_registry.get(cls)
        if nt is None and isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields"):
            nt, aux = _NAMEDTUPLE, cls
        if nt is None:
            raise TypeError(f"{where}: {cls!r} is not a registered pytree node type")
        aux = tuple(aux) if nt is _DICT else aux
        arity = _fixed_arity(nt, aux)
        if arity is not None and arity != len(children):
            raise ValueError(f"{where}: a {cls.__name__} node with node data {node_data[1]!r:.80} has {arity} "
                             f"children, but {len(children)} were given")
        return PyTreeDef((nt, aux, tuple(c._node for c in children)), sum(c.num_leaves for c in children))

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """This structure with each of its leaves replaced by the structure ``inner``."""
        def sub(node: Any) -> Any:
            return inner._node if node is _LEAF else (node[0], node[1], tuple(sub(c) for c in node[2]))
        return PyTreeDef(sub(self._node), self.num_leaves * inner.num_leaves)

    def walk(self, f_node: Callable[[tuple, Any], Any], f_leaf: Callable[[Any], Any] | None,
             leaves: Iterable) -> Any:
        """Fold ``leaves`` up this structure: ``f_leaf(leaf)`` at each leaf (None: the leaf itself), then
        ``f_node(children's results as a tuple, node data)`` at each node, children first. The node data is JAX's:
        a dict's sorted keys as a list, a namedtuple's class, the aux_data of other nodes, None for tuples/lists."""
        it = iter(leaves)

        def fold(node: Any) -> Any:
            if node is _LEAF:
                leaf = next(it, _MISSING)
                if leaf is _MISSING:
                    raise ValueError(f"PyTreeDef.walk: too few leaves for {self}")
                return leaf if f_leaf is None else f_leaf(leaf)
            nt, aux, children = node
            return f_node(tuple(fold(c) for c in children), list(aux) if nt is _DICT else aux)
        out = fold(self._node)
        if next(it, _MISSING) is not _MISSING:
            raise ValueError(f"PyTreeDef.walk: too many leaves for {self} (it has {self.num_leaves})")
        return out

    def from_iterable_tree(self, subtrees: Any) -> Any:
        """Build a tree of this structure from ``subtrees``, where each node is an iterable of its children (in
        flattening order) and each leaf the leaf itself: ``[7, (8, 9)]`` for the structure of ``{'a': *, 'b':
        (*, *)}`` gives ``{'a': 7, 'b': (8, 9)}``."""
        def build(node: Any, x: Any) -> Any:
            if node is _LEAF:
                return x
            nt, aux, children = node
            items = list(x)
            if len(items) != len(children):
                raise ValueError(f"PyTreeDef.from_iterable_tree: a {_node_repr(node)} node has {len(children)} "
                                 f"children, but its iterable gave {len(items)}")
            built = [build(c, i) for c, i in zip(children, items)]
            return nt.unflatten(aux, tuple(built) if nt.custom else built)
        return build(self._node, subtrees)

    def unflatten(self, leaves: Iterable) -> Any:
        """Build a tree of this structure from ``leaves`` (in flattening order)."""
        return tree_unflatten(self, leaves)

    def serialize_using_proto(self) -> bytes:
        """This structure as jaxlib's PyTreeDef protocol buffer: JAX's bytes for the same structure (tuples, lists,
        dicts with string keys and None only, as JAX's; ``pickle`` takes the others)."""
        def check(node: Any) -> None:
            if node is _LEAF:
                return
            nt, aux, children = node
            if nt not in (_TUPLE, _LIST, _DICT, _NONE):
                raise ValueError(f"PyTreeDef.serialize_using_proto: {_node_repr(node)} is a user-defined node, which "
                                 "protocol buffers cannot hold (only tuples, lists, dicts and None); convert it to "
                                 "one of those, or use pickle instead")
            if nt is _DICT and not all(type(k) is str for k in aux):
                raise ValueError(f"PyTreeDef.serialize_using_proto: a dict with keys {list(aux)!r:.80}: only string "
                                 "keys are supported in proto pytree serialization; use pickle instead")
            for c in children:
                check(c)
        check(self._node)
        return pytree_proto.serialize(self.unflatten([pytree_proto.Leaf() for _ in range(self.num_leaves)]))

    @staticmethod
    def deserialize_using_proto(registry: Any, data: bytes) -> PyTreeDef:
        """The structure that :meth:`serialize_using_proto` (kiln's or JAX's) wrote as ``data``. ``registry`` is
        ``kiln.tree_util.default_registry``."""
        where = "PyTreeDef.deserialize_using_proto"
        if registry is not default_registry:
            raise TypeError(f"{where}: registry must be kiln.tree_util.default_registry, got {registry!r:.80}")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"{where}: data must be bytes, got {type(data).__name__}")
        try:
            skeleton = pytree_proto.deserialize(data)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        return tree_structure(skeleton)

    def flatten_up_to(self, tree: Any) -> list:
        """Flatten ``tree`` only as deep as this structure: each leaf position of ``self`` takes
        the whole subtree of ``tree`` found there. ``self`` must be a prefix of ``tree``'s
        structure; a mismatch raises ValueError naming the path."""
        try:
            return flatten_prefix(self, tree)
        except _Mismatch as e:  # (a plain ValueError for the user, with the path in its message)
            raise ValueError(f"flatten_up_to: at {keystr(e.path) or 'the root'}, {e.detail} (this structure: "
                             f"{self})") from None

    def __reduce__(self):
        # Node types hold functions that do not pickle: a pickle names each node type by its registered class
        # (a namedtuple node by the namedtuple class it holds), as JAX pickles its structures.
        return _treedef_from_portable, (_portable_node(self._node), self.num_leaves)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return self is other or (self.num_leaves == other.num_leaves and self._node == other._node)

    def __hash__(self) -> int:
        if self._hash is None:
            try:
                self._hash = hash(self._node)
            except TypeError:  # unhashable node data somewhere (e.g. a dict): see _robust_hash
                self._hash = _robust_hash(self._node)
        return self._hash

    def __repr__(self) -> str:
        return f"PyTreeDef({_node_repr(self._node)})"


def _portable_node(node: Any) -> Any:
    if node is _LEAF:
        return node
    nt, aux, children = node
    return (None if nt is _NAMEDTUPLE else nt.type, aux, tuple(_portable_node(c) for c in children))


def _node_from_portable(node: Any) -> Any:
    if node is _LEAF:
        return node
    cls, aux, children = node
    if cls is None:
        nt = _NAMEDTUPLE
    else:
        nt = _registry.get(cls)
        if nt is None:
            raise ValueError(f"unpickling a PyTreeDef: {cls.__qualname__} is not a registered pytree node type "
                             "in this process; register it (kiln.tree_util.register_pytree_node) before "
                             "unpickling")
    return (nt, aux, tuple(_node_from_portable(c) for c in children))


def _treedef_from_portable(node: Any, num_leaves: int) -> PyTreeDef:
    return PyTreeDef(_node_from_portable(node), num_leaves)


def _aux_hash(aux: Any) -> int:
    """A hash of node data that need not be hashable, consistent with ``==`` (structures compare
    node data by equality, as JAX does): hashable data by its hash; mappings, lists and sets by
    their converted contents; anything else unhashable by one constant (equal objects of any type
    must hash alike, and an ``__eq__`` may accept other types), so such structures differ only by
    equality."""
    try:
        return hash(aux)
    except TypeError:
        pass
    if isinstance(aux, collections.abc.Mapping):  # dict == OrderedDict when items are equal
        return hash(("mapping", frozenset((k, _aux_hash(v)) for k, v in aux.items())))
    if isinstance(aux, (list, tuple)):  # a tuple holding an unhashable value
        return hash((isinstance(aux, list), tuple(_aux_hash(v) for v in aux)))
    if isinstance(aux, (set, frozenset)):  # a set subclass that is unhashable
        return hash(frozenset(aux))
    return 0


def _robust_hash(node: Any) -> int:
    if node is _LEAF:
        return hash(None)
    nt, aux, children = node
    return hash((nt, _aux_hash(aux), tuple(_robust_hash(c) for c in children)))


_MISSING = object()


def _fixed_arity(nt: _NodeType, aux: Any) -> int | None:
    """How many children a node of Python's containers with node data ``aux`` has (None: any number)."""
    if nt in (_DICT, _ORDERED_DICT):
        return len(aux)
    if nt is _DEFAULTDICT:
        return len(aux[1])
    if nt is _NAMEDTUPLE:
        return len(aux._fields)
    return 0 if nt is _NONE else None


def _count_leaves(node: Any) -> int:
    return 1 if node is _LEAF else sum(_count_leaves(c) for c in node[2])


# The node types that jaxlib's C++ pytree code, with only Python's containers enabled, flattens as kiln does.
_CONTAINER_NODES = (_TUPLE, _LIST, _DICT, _NONE, _NAMEDTUPLE)


def has_only_containers(treedef: PyTreeDef) -> bool:
    """Whether every node of ``treedef`` is a tuple, list, dict, None or namedtuple flattened by kiln's own rule:
    no OrderedDict, defaultdict or registered class (a namedtuple class registered with a rule of its own is
    not one). For the direct launch of jitted calls, which flattens such trees with jaxlib's C++ code."""
    def walk(node: Any) -> bool:
        return node is _LEAF or node[0] in _CONTAINER_NODES and all(walk(c) for c in node[2])
    return walk(treedef._node)


def _items_repr(keys: Iterable, parts: list[str]) -> str:
    return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(keys, parts, strict=True)) + "}"


def _node_repr(node: Any) -> str:
    if node is _LEAF:
        return "*"
    nt, aux, children = node
    parts = [_node_repr(c) for c in children]
    if nt is _NONE:
        return "None"
    if nt is _TUPLE:
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if nt is _LIST:
        return "[" + ", ".join(parts) + "]"
    if nt is _DICT:
        return _items_repr(aux, parts)
    # The rest as JAX prints them: CustomNode(namedtuple[Point], [*, *]), CustomNode(OrderedDict[('b', 'a')], [*, *])
    head = f"namedtuple[{aux.__name__}]" if nt is _NAMEDTUPLE else f"{nt.type.__name__}[{aux}]"
    return f"CustomNode({head}, [" + ", ".join(parts) + "])"


# ---------------------------------------------------------------------------------------------
# Flatten / unflatten
# ---------------------------------------------------------------------------------------------

def _bad_flatten(nt: _NodeType, res: Any) -> ValueError:
    return ValueError(f"the flatten function registered for pytree node type {nt.type.__qualname__} must return "
                      f"a pair (children, aux_data), got {type(res).__name__}: {res!r:.100}")


def _flatten(x: Any, leaves: list, registry: dict) -> Any:
    """Flatten a node (never a leaf) of ``registry``, appending its leaves; return its structure."""
    nt = registry.get(type(x)) or _NAMEDTUPLE
    res = nt.flatten(x)
    try:  # (free unless it raises: the flatten function of a registered node must return a pair)
        children, aux = res
    except (TypeError, ValueError):
        raise _bad_flatten(nt, res) from None
    structure = []
    append_leaf, append_node = leaves.append, structure.append
    for c in children:
        # Inline leaf test: most children are leaves, and a call per leaf would dominate.
        if type(c) in registry or (isinstance(c, tuple) and hasattr(type(c), "_fields")):
            append_node(_flatten(c, leaves, registry))
        else:
            append_leaf(c)
            append_node(_LEAF)
    return (nt, aux, tuple(structure))


def _flatten_is_leaf(x: Any, leaves: list, is_leaf: Callable[[Any], bool], registry: dict) -> Any:
    """As :func:`_flatten` for any subtree, consulting ``is_leaf`` at every node."""
    nt = None if is_leaf(x) else _node_type_of(x, registry)
    if nt is None:
        leaves.append(x)
        return _LEAF
    res = nt.flatten(x)
    try:  # (free unless it raises: the flatten function of a registered node must return a pair)
        children, aux = res
    except (TypeError, ValueError):
        raise _bad_flatten(nt, res) from None
    return (nt, aux, tuple(_flatten_is_leaf(c, leaves, is_leaf, registry) for c in children))


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None, *,
                 registry: dict = _registry) -> tuple[list, PyTreeDef]:
    """Flatten a pytree into its leaves (left to right, dict children by sorted key) and
    structure.

    Parameters
    ----------
    tree : the pytree.
    is_leaf : optional predicate called on every subtree; where it returns True, the subtree
        is taken as a leaf.

    Returns
    -------
    (list of leaves, PyTreeDef)
    """
    leaves: list = []
    if is_leaf is not None:
        node = _flatten_is_leaf(tree, leaves, is_leaf, registry)
    elif _node_type_of(tree, registry) is None:
        return [tree], _LEAF_TREEDEF
    else:
        node = _flatten(tree, leaves, registry)
    return leaves, PyTreeDef(node, len(leaves))


_LEAF_TREEDEF = PyTreeDef(_LEAF, 1)


def _unflatten(node: Any, it: Any) -> Any:
    if node is _LEAF:
        return next(it)
    nt, aux, children = node
    built = [next(it) if c is _LEAF else _unflatten(c, it) for c in children]
    return nt.unflatten(aux, tuple(built) if nt.custom else built)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable) -> Any:
    """Build the pytree of structure ``treedef`` from ``leaves``.

    Raises
    ------
    ValueError
        When the number of leaves is not ``treedef.num_leaves``.
    """
    if not isinstance(leaves, (list, tuple)):
        leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree_unflatten: the structure {treedef} has {treedef.num_leaves} "
                         f"leaves, but {len(leaves)} leaves were given")
    return _unflatten(treedef._node, iter(leaves))


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None, *, registry: dict = _registry) -> list:
    """The leaves of ``tree`` in flattening order (None is a node with no leaves)."""
    return tree_flatten(tree, is_leaf, registry=registry)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None, *,
                   registry: dict = _registry) -> PyTreeDef:
    """The :class:`PyTreeDef` of ``tree``."""
    return tree_flatten(tree, is_leaf, registry=registry)[1]


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True when ``treedef`` has a single node: a leaf, or a childless node such as None."""
    return treedef._node is _LEAF or not treedef._node[2]


def all_leaves(iterable: Iterable, is_leaf: Callable[[Any], bool] | None = None, *,
               registry: dict = _registry) -> bool:
    """True when every element of ``iterable`` is a leaf (as ``jax.tree_util.all_leaves``)."""
    if is_leaf is None:
        return all(_node_type_of(x, registry) is None for x in iterable)
    return all(is_leaf(x) or _node_type_of(x, registry) is None for x in iterable)


# ---------------------------------------------------------------------------------------------
# Mapping over several trees
# ---------------------------------------------------------------------------------------------

class _Mismatch(ValueError):
    """A structure that does not fit (``PyTreeDef.flatten_up_to``): where (``path``) and how (``detail``)."""

    def __init__(self, path: KeyPath, detail: str):
        super().__init__(detail)
        self.path, self.detail = path, detail


def _describe(x: Any) -> str:
    nt = _node_type_of(x)
    if nt is None:
        return f"a leaf of type {type(x).__name__}"
    if nt is _NAMEDTUPLE:
        return f"a namedtuple {type(x).__name__}"
    return "None" if nt is _NONE else f"a {type(x).__name__}"


def flatten_prefix(treedef: PyTreeDef, tree: Any) -> list:
    """``treedef.flatten_up_to(tree)`` for kiln's own callers, which word the error themselves: a mismatch
    raises ``_Mismatch`` with its ``path`` and ``detail``."""
    out: list = []
    _flatten_up_to(treedef._node, tree, out, ())
    return out


def _flatten_up_to(node: Any, x: Any, out: list, path: KeyPath) -> None:
    if node is _LEAF:
        out.append(x)
        return
    nt, aux, children = node
    expected = aux if nt is _NAMEDTUPLE else nt.type
    if _node_type_of(x) is not nt or type(x) is not expected:
        want = "None" if nt is _NONE else f"a {expected.__name__}"
        raise _Mismatch(path, f"expected {want}, got {_describe(x)}")
    if nt.flatten_with_keys is not None:
        keyed, x_aux = nt.flatten_with_keys(x)
        keys, x_children = [k for k, _ in keyed], [c for _, c in keyed]
    else:
        x_children, x_aux = nt.flatten(x)
        x_children = list(x_children)
        keys = [FlattenedIndexKey(i) for i in range(len(x_children))]
    # Node data first: for dicts it holds the keys, which say more than a count of children.
    if x_aux != aux:
        if nt in (_DICT, _ORDERED_DICT):
            detail = f"expected dict keys {list(aux)!r}, got {list(x_aux)!r}"
        elif nt is _DEFAULTDICT:
            detail = f"expected defaultdict keys {list(aux[1])!r}, got {list(x_aux[1])!r}"
        else:
            detail = f"the {expected.__name__} node data differs: expected {aux!r}, got {x_aux!r}"
        raise _Mismatch(path, detail)
    if len(x_children) != len(children):
        raise _Mismatch(path, f"expected a {expected.__name__} of {len(children)} children, "
                              f"got one of {len(x_children)}")
    for k, c_node, c in zip(keys, children, x_children, strict=True):
        _flatten_up_to(c_node, c, out, path + (k,))


def _structure_for_message(tree: Any) -> str:
    try:
        return repr(tree_structure(tree))
    except Exception:  # e.g. unsortable dict keys: still report the first error
        return f"<unflattenable {type(tree).__name__}>"


def _leaves_of_rest(fn_name: str, treedef: PyTreeDef, rest: tuple) -> list[list]:
    all_leaves_ = []
    for i, r in enumerate(rest):
        try:
            all_leaves_.append(flatten_prefix(treedef, r))
        except _Mismatch as e:
            where = keystr(e.path) or "the root"
            raise ValueError(
                f"{fn_name}: tree {i + 1} of the extra trees does not have the structure of the first "
                f"tree: at {where}, {e.detail}.\n"
                f"  first tree:  {treedef}\n"
                f"  tree {i + 1}:      {_structure_for_message(r)}") from None
    return all_leaves_


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None, registry: dict = _registry) -> Any:
    """Apply ``f`` leafwise: ``f(leaf, *corresponding leaves of rest)``; same structure as ``tree``.

    Each tree in ``rest`` must have ``tree``'s structure, or one with ``tree`` as a prefix (the
    subtree at each leaf position of ``tree`` is passed whole). A mismatch raises ValueError
    that names the path and shows both structures.
    """
    leaves, treedef = tree_flatten(tree, is_leaf, registry=registry)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    others = _leaves_of_rest("tree_map", treedef, rest)
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others, strict=True)])


def tree_all(tree: Any, is_leaf: Callable[[Any], bool] | None = None, *, registry: dict = _registry) -> bool:
    """True when every leaf is truthy."""
    return all(tree_leaves(tree, is_leaf, registry=registry))


_NO_INITIALIZER = object()


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _NO_INITIALIZER,
                is_leaf: Callable[[Any], bool] | None = None, *, registry: dict = _registry) -> Any:
    """``functools.reduce(function, tree_leaves(tree), initializer)``."""
    leaves = tree_leaves(tree, is_leaf, registry=registry)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def _compose(outer: PyTreeDef, inner: PyTreeDef) -> PyTreeDef:
    """The structure of ``outer`` with ``inner`` at each of its leaves."""
    def sub(n):
        return inner._node if n is _LEAF else (n[0], n[1], tuple(sub(c) for c in n[2]))
    return PyTreeDef(sub(outer._node), outer.num_leaves * inner.num_leaves)


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any, *,
                   registry: dict = _registry) -> Any:
    """Turn a tree of structure outer-of-inner into one of inner-of-outer
    (e.g. a list of pairs into a pair of lists). ``inner_treedef=None`` takes the structure of the
    first subtree at a leaf position of ``outer_treedef``."""
    if inner_treedef is None:
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
        if not subtrees:
            raise ValueError("tree_transpose: inner_treedef=None needs an outer structure with at least one "
                             "leaf to infer the inner structure from; pass inner_treedef explicitly")
        inner_treedef = tree_structure(subtrees[0], registry=registry)
    flat, treedef = tree_flatten(pytree_to_transpose, registry=registry)
    expected = _compose(outer_treedef, inner_treedef)
    if treedef != expected:
        raise TypeError(f"tree_transpose: the tree has structure {treedef}, expected {expected}")
    n_in = inner_treedef.num_leaves
    groups = [flat[i::n_in] for i in range(n_in)]
    return inner_treedef.unflatten([outer_treedef.unflatten(g) for g in groups])


# ---------------------------------------------------------------------------------------------
# Key paths
# ---------------------------------------------------------------------------------------------

def _flatten_with_path(x: Any, path: KeyPath, out: list, is_leaf: Callable | None, registry: dict) -> Any:
    """``is_leaf`` here takes ``(path, x)``."""
    nt = None if (is_leaf is not None and is_leaf(path, x)) else _node_type_of(x, registry)
    if nt is None:
        out.append((path, x))
        return _LEAF
    if nt.flatten_with_keys is not None:
        keyed, aux = nt.flatten_with_keys(x)
    else:
        children, aux = nt.flatten(x)
        keyed = [(FlattenedIndexKey(i), c) for i, c in enumerate(children)]
    return (nt, aux, tuple(_flatten_with_path(c, path + (k,), out, is_leaf, registry) for k, c in keyed))


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False,
                           *, registry: dict = _registry) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """As :func:`tree_flatten`, with each leaf paired with its key path:
    ``([((DictKey('a'), SequenceKey(0)), leaf), ...], treedef)``. With ``is_leaf_takes_path=True``,
    ``is_leaf`` is called as ``is_leaf(key_path, subtree)``."""
    out: list = []
    pred = None
    if is_leaf is not None:
        pred = is_leaf if is_leaf_takes_path else (lambda _, x: is_leaf(x))
    node = _flatten_with_path(tree, (), out, pred, registry)
    return out, PyTreeDef(node, len(out))


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False,
                          *, registry: dict = _registry) -> list[tuple[KeyPath, Any]]:
    """The ``(key path, leaf)`` pairs of ``tree``."""
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path, registry=registry)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False, registry: dict = _registry) -> Any:
    """As :func:`tree_map`, calling ``f(key_path, leaf, *rest_leaves)``."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path, registry=registry)
    others = _leaves_of_rest("tree_map_with_path", treedef, rest)
    return treedef.unflatten([f(p, x, *xs) for (p, x), *xs in zip(pairs, *others, strict=True)])


# ---------------------------------------------------------------------------------------------
# Registration helpers: keyed nodes, dataclasses, static classes
# ---------------------------------------------------------------------------------------------

def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable[[Any], tuple[Iterable, Any]],
                              unflatten_func: Callable[[Any, Iterable], Any],
                              flatten_func: Callable[[Any], tuple[Iterable, Any]] | None = None) -> None:
    """Register ``nodetype`` by its keyed flattening ``x -> (((key, child), ...), aux_data)``.

    ``flatten_func`` (``x -> (children, aux_data)``), when given, is the faster flattening used where no
    key paths are needed; by default the children are taken from ``flatten_with_keys``.
    """
    if flatten_func is None:
        def flatten_func(x):
            keyed, aux = flatten_with_keys(x)
            return [c for _, c in keyed], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: register ``cls`` by its ``tree_flatten_with_keys`` method and its
    ``tree_unflatten(aux_data, children)`` classmethod (and ``tree_flatten`` when defined)."""
    if not hasattr(cls, "tree_flatten_with_keys") or not hasattr(cls, "tree_unflatten"):
        raise TypeError(f"register_pytree_with_keys_class: {cls.__qualname__} must define a "
                        "tree_flatten_with_keys method and a tree_unflatten classmethod")
    flatten = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"), cls.tree_unflatten, flatten)
    return cls


def static_field(**kwargs: Any) -> Any:
    """``dataclasses.field(...)`` marked static (``metadata={'static': True}``), for
    :func:`register_dataclass`: the field becomes node data instead of a child (``kiln.tree.static``)."""
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["static"] = True
    return dataclasses.field(metadata=metadata, **kwargs)


def register_dataclass(nodetype: type, data_fields: Iterable[str] | None = None,
                       meta_fields: Iterable[str] | None = None, drop_fields: Iterable[str] = ()) -> type:
    """Register a (data)class whose ``data_fields`` are children and whose ``meta_fields`` are static
    node data (hashable values, part of jit's cache key). For a dataclass both lists may be left out:
    fields marked with ``kiln.tree.static()`` (``metadata={'static': True}``) are meta, the others data.
    Returns ``nodetype``, so it works as a decorator."""
    if (data_fields is None) != (meta_fields is None):
        raise TypeError(f"register_dataclass: data_fields and meta_fields must both be given or both left out "
                        f"(got data_fields={data_fields!r}, meta_fields={meta_fields!r})")
    if data_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(f"register_dataclass: {getattr(nodetype, '__qualname__', nodetype)!r} is not a "
                            "dataclass, so data_fields and meta_fields must be given")
        fields = [f for f in dataclasses.fields(nodetype) if f.name not in set(drop_fields)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        given = set(data_fields) | set(meta_fields)
        if given != init_fields:
            parts = []
            if init_fields - given:
                parts.append(f"missing fields {sorted(init_fields - given)} (list them, or put them in "
                             "drop_fields)")
            if given - init_fields:
                parts.append(f"unexpected fields {sorted(given - init_fields)} (not init fields of the dataclass)")
            raise ValueError(f"register_dataclass({nodetype.__qualname__}): data_fields and meta_fields must name "
                             f"exactly the dataclass's init fields: {'; '.join(parts)}")
    overlap = set(data_fields) & set(meta_fields)
    if overlap:
        raise ValueError(f"register_dataclass({nodetype.__qualname__}): fields {sorted(overlap)} are both data "
                         "and meta fields")

    def flatten(x):
        return [getattr(x, n) for n in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def flatten_with_keys(x):
        return [(GetAttrKey(n), getattr(x, n)) for n in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def unflatten(meta, data):
        return nodetype(**dict(zip(meta_fields, meta, strict=True)), **dict(zip(data_fields, data, strict=True)))

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


def register_static(cls: type) -> type:
    """Register ``cls`` as a pytree with no leaves: its instances are node data (static under ``jit``,
    so they must be hashable). Returns ``cls``, so it works as a decorator."""
    register_pytree_with_keys(cls, lambda x: ((), x), lambda x, _: x, lambda x: ((), x))
    return cls


class Partial(functools.partial):
    """``functools.partial`` that is a pytree: the bound arguments are its children, the function is
    static node data. So a ``Partial`` can be passed to, and returned from, jitted functions."""

    def __new__(cls, func: Callable, *args: Any, **kwargs: Any):
        if isinstance(func, functools.partial):
            # functools.partial would merge func's own arguments into this one's; keep them in func
            # (static), so that only the arguments given here are children.
            func = _PartialShim(func)
        return super().__new__(cls, func, *args, **kwargs)


class _PartialShim:
    """A ``functools.partial`` held as one opaque callable (compared and hashed as the partial)."""
    __slots__ = ("partial", "func", "args", "keywords")

    def __init__(self, partial: functools.partial):
        self.partial, self.func, self.args, self.keywords = partial, partial.func, partial.args, partial.keywords

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.partial(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _PartialShim) and self.partial == other.partial

    def __hash__(self) -> int:
        return hash(self.partial)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, ch: Partial(func, *ch[0], **ch[1]))


# ---------------------------------------------------------------------------------------------
# One level, broadcasting, associative reduction, treedef helpers
# ---------------------------------------------------------------------------------------------

def is_tree_node(typ: type, *, registry: dict = _registry) -> bool:
    """True when instances of the class ``typ`` are pytree nodes (not leaves)."""
    if not isinstance(typ, type):
        raise TypeError(f"is_tree_node: expected a class, got {type(typ).__name__} {typ!r:.60}; "
                        "pass type(x) to ask about a value")
    return typ in registry or (issubclass(typ, tuple) and hasattr(typ, "_fields"))


def flatten_one_level(tree: Any, *, registry: dict = _registry) -> tuple[list, Any]:
    """``(children, aux_data)`` of the root node of ``tree``; a leaf raises ValueError."""
    nt = _node_type_of(tree, registry)
    if nt is None:
        raise ValueError(f"flatten_one_level: a {type(tree).__name__} is a leaf, not a pytree node")
    children, aux = nt.flatten(tree)
    return list(children), aux


def flatten_one_level_with_keys(tree: Any, *, registry: dict = _registry) -> tuple[list, Any]:
    """``([(key, child), ...], aux_data)`` of the root node of ``tree``; a leaf raises ValueError."""
    nt = _node_type_of(tree, registry)
    if nt is None:
        raise ValueError(f"flatten_one_level_with_keys: a {type(tree).__name__} is a leaf, not a pytree node")
    if nt.flatten_with_keys is not None:
        keyed, aux = nt.flatten_with_keys(tree)
        return list(keyed), aux
    children, aux = nt.flatten(tree)
    return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """The structures of the root's children."""
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose children have the structures ``treedefs``."""
    treedefs = list(treedefs)
    for t in treedefs:
        if not isinstance(t, PyTreeDef):
            raise TypeError(f"treedef_tuple: expected PyTreeDefs, got a {type(t).__name__}")
    return PyTreeDef((_TUPLE, None, tuple(t._node for t in treedefs)), sum(t.num_leaves for t in treedefs))


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None, *,
                   registry: dict = _registry) -> Any:
    """Repeat each leaf of ``prefix_tree`` over the subtree of ``full_tree`` at its position: the
    result has ``full_tree``'s structure (``tree_broadcast([1, 2], [(3, 4), 5]) == [(1, 1), 2]``)."""
    leaves, treedef = tree_flatten(prefix_tree, is_leaf, registry=registry)
    subtrees = _leaves_of_rest("tree_broadcast", treedef, (full_tree,))[0]
    return treedef.unflatten([tree_map(lambda _: x, sub, is_leaf=is_leaf, registry=registry)
                              for x, sub in zip(leaves, subtrees)])


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *, identity: Any = _NO_INITIALIZER,
                            is_leaf: Callable[[Any], bool] | None = None, registry: dict = _registry) -> Any:
    """Reduce the leaves with an associative ``operation`` in a balanced tree of calls (depth log2 of the
    number of leaves), in JAX's order: the reductions of the first and the second half of the leaves combined,
    each half split the same way (floating-point sums then round as JAX's). An empty tree needs ``identity``."""
    leaves = tree_leaves(tree, is_leaf, registry=registry)
    if not leaves:
        if identity is _NO_INITIALIZER:
            raise TypeError("tree_reduce_associative: the tree has no leaves; pass identity=... to reduce an "
                            "empty tree")
        return identity
    return _reduce_halves(operation, leaves)


def _reduce_halves(operation: Callable[[Any, Any], Any], leaves: list) -> Any:
    if len(leaves) == 1:
        return leaves[0]
    half = len(leaves) // 2
    return operation(_reduce_halves(operation, leaves[:half]), _reduce_halves(operation, leaves[half:]))


class _DefaultRegistry:
    """kiln's pytree registry as users see it (``kiln.tree_util.default_registry``), with the methods of JAX's:
    typed PRNG key arrays are leaves (see :func:`register_internal_node`)."""

    def flatten(self, tree: Any, leaf_predicate: Callable[[Any], bool] | None = None) -> tuple[list, PyTreeDef]:
        return tree_flatten(tree, leaf_predicate, registry=_user_registry)

    def flatten_one_level(self, tree: Any):
        """``(children, aux_data)``, or None for a leaf."""
        if _node_type_of(tree, _user_registry) is None:
            return None
        return flatten_one_level(tree, registry=_user_registry)

    def flatten_one_level_with_keys(self, tree: Any):
        if _node_type_of(tree, _user_registry) is None:
            return None
        return flatten_one_level_with_keys(tree, registry=_user_registry)

    def flatten_with_path(self, tree: Any, leaf_predicate: Callable[[Any, Any], bool] | None = None):
        return tree_flatten_with_path(tree, leaf_predicate, is_leaf_takes_path=True, registry=_user_registry)

    def is_node(self, typ: type) -> bool:
        return is_tree_node(typ, registry=_user_registry)

    def register_node(self, nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                      flatten_with_keys_func: Callable | None = None) -> None:
        register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)

    def register_dataclass_node(self, nodetype: type, data_fields: list, meta_fields: list) -> None:
        register_dataclass(nodetype, data_fields, meta_fields)

    def __repr__(self) -> str:
        return "<kiln pytree registry>"


default_registry = _DefaultRegistry()
