"""Tests for kiln.frontend.core.tree_util (pytrees as in jax.tree_util)."""
import collections
import operator

import numpy as np
import pytest
from kiln.frontend.core import tree_util as tu
from kiln.frontend.core.tree_util import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey

Point = collections.namedtuple("Point", ["x", "y"])


@tu.register_pytree_node_class
class Box:
    """A custom node: children are the contents, aux data is the label."""

    def __init__(self, label, contents):
        self.label, self.contents = label, contents

    def tree_flatten(self):
        return self.contents, self.label

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(aux, list(children))

    def __eq__(self, other):
        return isinstance(other, Box) and (self.label, self.contents) == (other.label, other.contents)

    def __repr__(self):  # test_round_trip's id: the default repr's address differs between pytest-xdist workers
        return f"Box({self.label!r}, {self.contents!r})"


class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


tu.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch),
                        lambda p: (((GetAttrKey("a"), p.a), (GetAttrKey("b"), p.b)), None))

TREES = [
    1,
    None,
    (),
    [],
    {},
    (1, 2),
    [1, (2, 3), {"a": 4, "b": [5, None]}],
    {"z": 1, "a": (2, [3, 4]), "m": {"q": None, "p": 5}},
    Point(1, (2, 3)),
    collections.OrderedDict([("b", 1), ("a", 2)]),
    Box("lbl", [1, (2, 3)]),
    ((((1,),),),),
]


def _same(a, b):
    if isinstance(a, Pair):
        return isinstance(b, Pair) and _same(a.a, b.a) and _same(a.b, b.b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_round_trip(tree):
    leaves, treedef = tu.tree_flatten(tree)
    assert treedef.num_leaves == len(leaves)
    rebuilt = tu.tree_unflatten(treedef, leaves)
    assert _same(rebuilt, tree)
    assert _same(treedef.unflatten(leaves), tree)
    assert tu.tree_structure(rebuilt) == treedef
    # Rebuilding with other leaves keeps the structure.
    again = tu.tree_unflatten(treedef, [object() for _ in leaves])
    assert tu.tree_structure(again) == treedef


def test_leaf_order_and_dict_sorting():
    tree = {"b": 2, "a": 1, "c": {"z": 4, "y": 3}}
    assert tu.tree_leaves(tree) == [1, 2, 3, 4]
    assert repr(tu.tree_structure(tree)) == "PyTreeDef({'a': *, 'b': *, 'c': {'y': *, 'z': *}})"
    # Dicts come back with sorted keys, as in JAX.
    assert list(tu.tree_map(lambda x: x, tree)) == ["a", "b", "c"]
    # Insertion order does not change the structure.
    assert tu.tree_structure({"a": 1, "b": 2}) == tu.tree_structure({"b": 1, "a": 2})
    # OrderedDict keeps insertion order and is a different node type.
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    assert tu.tree_leaves(od) == [1, 2]
    assert tu.tree_structure(od) != tu.tree_structure({"b": 1, "a": 2})


def test_unsortable_dict_keys():
    # A ValueError, as JAX's ("Comparator raised exception while sorting pytree dictionary keys").
    with pytest.raises(ValueError, match="cannot be compared"):
        tu.tree_flatten({1: "a", "x": "b"})


def test_none_is_an_empty_node():
    assert tu.tree_leaves([None, 1]) == [1]
    assert tu.tree_leaves(None) == []
    treedef = tu.tree_structure(None)
    assert treedef.num_leaves == 0 and treedef.num_nodes == 1
    assert tu.treedef_is_leaf(treedef)
    assert tu.tree_unflatten(treedef, []) is None
    assert tu.tree_map(lambda x: x + 1, [None, 1]) == [None, 2]
    assert repr(tu.tree_structure([None, 1])) == "PyTreeDef([None, *])"
    # With is_leaf, None can be made a leaf.
    assert tu.tree_leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]


def test_repr():
    assert repr(tu.tree_structure((1, {"a": 2, "b": [3, 4]}))) == "PyTreeDef((*, {'a': *, 'b': [*, *]}))"
    assert repr(tu.tree_structure((1,))) == "PyTreeDef((*,))"
    assert repr(tu.tree_structure(5)) == "PyTreeDef(*)"
    # namedtuples, OrderedDicts and defaultdicts as JAX prints them (CustomNode, with the node data in brackets)
    assert repr(tu.tree_structure(Point(1, 2))) == "PyTreeDef(CustomNode(namedtuple[Point], [*, *]))"
    # (node data as str() writes it, as JAX's: Box[t], not Box['t'])
    assert repr(tu.tree_structure(Box("t", [1]))) == "PyTreeDef(CustomNode(Box[t], [*]))"
    assert repr(tu.tree_structure(collections.defaultdict(list, a=1))) == \
        "PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('a',))], [*]))"
    assert repr(tu.tree_structure(collections.OrderedDict([("b", 1), ("a", [2])]))) == \
        "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, [*]]))"


def test_namedtuple():
    p = Point(1, Point(2, 3))
    leaves, treedef = tu.tree_flatten(p)
    assert leaves == [1, 2, 3]
    rebuilt = tu.tree_unflatten(treedef, [4, 5, 6])
    assert type(rebuilt) is Point and type(rebuilt.y) is Point and rebuilt == Point(4, Point(5, 6))
    # A namedtuple is not the same structure as a plain tuple with the same arity.
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure((1, 2))
    Other = collections.namedtuple("Other", ["x", "y"])
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure(Other(1, 2))


def test_custom_nodes():
    b = Box("label", [1, {"k": 2}])
    leaves, treedef = tu.tree_flatten(b)
    assert leaves == [1, 2]
    assert tu.tree_unflatten(treedef, [3, 4]) == Box("label", [3, {"k": 4}])
    # The aux data is part of the structure.
    assert treedef != tu.tree_structure(Box("other", [1, {"k": 2}]))
    assert tu.tree_structure(Box("label", [5, {"k": 6}])) == treedef
    assert treedef.node_data() == (Box, "label")
    p = tu.tree_map(lambda x: x * 10, Pair(1, (2, 3)))
    assert isinstance(p, Pair) and p.a == 10 and p.b == (20, 30)


def test_register_twice_raises():
    with pytest.raises(ValueError, match="already registered"):
        tu.register_pytree_node(Pair, lambda p: ((), None), lambda aux, ch: Pair(0, 0))
    with pytest.raises(ValueError, match="already registered"):
        tu.register_pytree_node(dict, lambda p: ((), None), lambda aux, ch: {})


def test_subclasses_of_containers_are_leaves():
    class MyList(list):
        pass

    assert tu.tree_leaves(MyList([1, 2])) == [MyList([1, 2])]


def test_unflatten_leaf_count_error():
    treedef = tu.tree_structure((1, [2, 3]))
    with pytest.raises(ValueError, match=r"PyTreeDef\(\(\*, \[\*, \*\]\)\) has 3 leaves, but 2 leaves were"):
        tu.tree_unflatten(treedef, [1, 2])
    with pytest.raises(ValueError, match="has 3 leaves, but 4 leaves were given"):
        tu.tree_unflatten(treedef, iter([1, 2, 3, 4]))


def test_tree_map_several_trees():
    out = tu.tree_map(lambda a, b, c: a + b + c, (1, [2]), (10, [20]), (100, [200]))
    assert out == (111, [222])
    # The first tree may be a prefix: whole subtrees are passed at its leaves.
    assert tu.tree_map(lambda a, b: (a, b), [1, 2], [(3, 4), {"k": 5}]) == [(1, (3, 4)), (2, {"k": 5})]


def test_tree_map_structure_mismatch_message():
    with pytest.raises(ValueError) as info:
        tu.tree_map(lambda a, b: a, {"a": 1, "b": [2, 3]}, {"a": 1, "b": [2]})
    msg = str(info.value)
    assert "at ['b'], expected a list of 2 children, got one of 1" in msg
    assert "PyTreeDef({'a': *, 'b': [*, *]})" in msg and "PyTreeDef({'a': *, 'b': [*]})" in msg

    with pytest.raises(ValueError, match=r"expected dict keys \['a', 'b'\], got \['a', 'c'\]"):
        tu.tree_map(lambda a, b: a, {"a": 1, "b": 2}, {"a": 1, "c": 2})
    with pytest.raises(ValueError, match=r"at \[1\], expected a tuple, got a list"):
        tu.tree_map(lambda a, b: a, [0, (1, 2)], [0, [1, 2]])
    with pytest.raises(ValueError, match=r"at \[0\], expected None, got a leaf of type int"):
        tu.tree_map(lambda a, b: a, [None], [3])
    with pytest.raises(ValueError, match="at the root, expected a Point, got a tuple"):
        tu.tree_map(lambda a, b: a, Point(1, 2), (1, 2))
    with pytest.raises(ValueError, match=r"node data differs: expected 'x', got 'y'"):
        tu.tree_map(lambda a, b: a, Box("x", [1]), Box("y", [1]))


def test_is_leaf():
    tree = {"a": (1, 2), "b": [(3, 4)]}
    leaves = tu.tree_leaves(tree, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), (3, 4)]
    out = tu.tree_map(lambda t: sum(t), tree, is_leaf=lambda x: isinstance(x, tuple))
    assert out == {"a": 3, "b": [7]}
    treedef = tu.tree_structure(tree, is_leaf=lambda x: isinstance(x, tuple))
    assert repr(treedef) == "PyTreeDef({'a': *, 'b': [*]})"


def test_treedef_equality_and_hash():
    t1 = tu.tree_structure({"a": [1, 2], "b": (3,)})
    t2 = tu.tree_structure({"b": ("x",), "a": [np.ones(2), "y"]})
    assert t1 == t2 and hash(t1) == hash(t2)
    assert {t1: 1}[t2] == 1
    assert t1 != tu.tree_structure({"a": [1, 2], "b": [3]})
    assert t1 != tu.tree_structure({"a": [1, 2, 3], "b": (3,)})
    assert tu.tree_structure([1, None]) != tu.tree_structure([1, 2])
    assert tu.tree_structure(1) == tu.tree_structure("leaf")
    assert t1 != "not a treedef"


def test_treedef_properties():
    treedef = tu.tree_structure((1, {"a": 2, "b": [3, None]}))
    assert treedef.num_leaves == 3
    assert treedef.num_nodes == 7  # tuple, 1, dict, 2, list, 3, None
    children = treedef.children()
    assert [repr(c) for c in children] == ["PyTreeDef(*)", "PyTreeDef({'a': *, 'b': [*, None]})"]
    assert children[1].num_leaves == 2
    assert tu.treedef_is_leaf(tu.tree_structure(1))
    assert not tu.treedef_is_leaf(treedef)
    assert tu.tree_structure(1).children() == []


def test_num_nodes_counts_leaves():
    assert tu.tree_structure((1, 2)).num_nodes == 3
    assert tu.tree_structure(5).num_nodes == 1
    assert tu.tree_structure([]).num_nodes == 1


def test_flatten_up_to():
    treedef = tu.tree_structure([1, 2])
    assert treedef.flatten_up_to([(1, 2), {"a": 3}]) == [(1, 2), {"a": 3}]


def test_flatten_up_to_mismatch_is_a_value_error_naming_the_path():
    treedef = tu.tree_structure({"a": [0, 0], "b": (0,)})
    with pytest.raises(ValueError, match=r"flatten_up_to: at \['b'\], expected a tuple, got a list") as info:
        treedef.flatten_up_to({"a": [1, 2], "b": [3]})
    assert type(info.value) is ValueError  # not a private subclass a user cannot name


@pytest.mark.parametrize("tree", [
    [1, (2, {"a": 3}), None], collections.OrderedDict([("b", 1), ("a", [2])]),
    collections.defaultdict(list, a=1), Point(1, [Point(2, 3)]), Box("t", [1, (2,)]), {}])
def test_structures_pickle(tree):
    import pickle
    treedef = tu.tree_structure(tree)
    back = pickle.loads(pickle.dumps(treedef))
    assert back == treedef and repr(back) == repr(treedef) and hash(back) == hash(treedef)
    assert back.unflatten(tu.tree_leaves(tree)) == tree


def test_unpickling_a_structure_of_an_unregistered_type_says_so():
    import pickle
    blob = pickle.dumps(tu.tree_structure(Box("t", [1])))
    saved = tu._registry.pop(Box)
    try:
        with pytest.raises(ValueError, match=r"Box is not a registered pytree node type"):
            pickle.loads(blob)
    finally:
        tu._registry[Box] = saved


def test_key_paths():
    tree = {"w": [1, Point(2, 3)], "b": Pair(4, Box("l", [5])), "n": None}
    pairs, treedef = tu.tree_flatten_with_path(tree)
    assert treedef == tu.tree_structure(tree)
    assert [leaf for _, leaf in pairs] == tu.tree_leaves(tree)
    assert [tu.keystr(p) for p, _ in pairs] == [
        "['b'].a", "['b'].b[<flat index 0>]", "['w'][0]", "['w'][1].x", "['w'][1].y"]
    assert pairs[2][0] == (DictKey("w"), SequenceKey(0))
    assert pairs[1][0] == (DictKey("b"), GetAttrKey("b"), FlattenedIndexKey(0))
    assert tu.keystr((DictKey("a"), SequenceKey(0))) == "['a'][0]"
    assert tu.keystr((DictKey("a"), SequenceKey(0), GetAttrKey("x")), simple=True, separator="/") == "a/0/x"
    assert tu.keystr(()) == ""
    assert tu.tree_leaves_with_path(7) == [((), 7)]


def test_tree_map_with_path():
    out = tu.tree_map_with_path(lambda p, x, y: f"{tu.keystr(p)}={x + y}", {"a": [1, 2]}, {"a": [10, 20]})
    assert out == {"a": ["['a'][0]=11", "['a'][1]=22"]}


def test_reductions_and_transpose():
    assert tu.tree_all([True, (1, {"a": True})])
    assert not tu.tree_all([True, (0,)])
    assert tu.tree_all([None])  # no leaves
    assert tu.tree_reduce(operator.add, [1, (2, {"a": 3})]) == 6
    assert tu.tree_reduce(operator.add, [], 10) == 10
    outer = tu.tree_structure([0, 0, 0])
    inner = tu.tree_structure((0, 0))
    assert tu.tree_transpose(outer, inner, [(1, 2), (3, 4), (5, 6)]) == ([1, 3, 5], [2, 4, 6])
    with pytest.raises(TypeError, match="tree_transpose"):  # (a TypeError, as JAX's "Mismatch")
        tu.tree_transpose(outer, inner, [(1, 2), (3, 4)])
    assert tu.all_leaves([1, np.ones(2), "s"])
    assert not tu.all_leaves([1, (2,)])
    assert not tu.all_leaves([None])


def test_leaves_are_not_copied():
    arr = np.ones(3)
    leaves = tu.tree_leaves({"x": (arr,)})
    assert leaves[0] is arr
