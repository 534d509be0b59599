"""Regressions found by running more of JAX's documentation pages under ``import kiln as jax``
(docs/new_docs/501/export.md: an Exported keeps the weak types of its arguments and results; JAX's PyTreeDef
methods compose, walk, from_iterable_tree and from_node_data_and_children, and its node_data)."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import export, lax, tree_util


def test_exported_keeps_weak_types_as_traced():
    exp = export.export(kiln.jit(lax.cos))(1.0)
    assert exp.in_avals[0].weak_type and exp.out_avals[0].weak_type
    for out in (exp.call(1.0), kiln.jit(exp.call)(1.0), exp.call(np.float32(1.0))):
        assert out.dtype == np.float32 and out.weak_type
        np.testing.assert_allclose(np.asarray(out), np.cos(np.float32(1.0)), rtol=1e-6)
    # a weak result takes the other operand's dtype, as a Python scalar would
    assert (exp.call(1.0) * knp.bfloat16(2)).dtype == knp.bfloat16
    # a strongly typed argument exports strong types
    assert not export.export(kiln.jit(lax.cos))(np.float32(1.0)).out_avals[0].weak_type


def test_deserialized_exported_has_strong_types():
    # JAX's serialized format records no weak types
    back = export.deserialize(export.export(kiln.jit(lax.cos))(1.0).serialize())
    assert not back.in_avals[0].weak_type and not back.call(1.0).weak_type


# -- PyTreeDef (docs/new_docs/101/pytrees.md uses jax.tree_util; JAX's PyTreeDef methods) -------------------------
Point = collections.namedtuple("Point", ["x", "y"])
_TREE = {"b": (1, None, [2]), "a": Point(3, 4), "c": collections.OrderedDict(z=5, y=6)}


def test_node_data_as_jax_gives_it():
    datas = [tree_util.tree_structure(t).node_data() for t in
             ({"b": 1, "a": 2}, Point(1, 2), collections.OrderedDict(b=1, a=2), (1, 2), None, 1)]
    assert datas == [(dict, ["a", "b"]), (Point, None), (collections.OrderedDict, ("b", "a")), (tuple, None),
                     (type(None), None), None]


def test_from_node_data_and_children_rebuilds_every_node():
    build = tree_util.PyTreeDef.from_node_data_and_children
    for t in (_TREE, *_TREE.values(), [1, {"k": 2}], collections.defaultdict(list, b=1, a=2)):
        td = tree_util.tree_structure(t)
        assert build(tree_util.default_registry, td.node_data(), td.children()) == td
    with pytest.raises(ValueError, match=r"a dict node with node data \['a'\] has 1 children, but 2 were given"):
        build(tree_util.default_registry, (dict, ["a"]), [tree_util.tree_structure(1)] * 2)
    with pytest.raises(TypeError, match=r"<class 'set'> is not a registered pytree node type"):
        build(tree_util.default_registry, (set, None), [])
    with pytest.raises(TypeError, match=r"registry must be kiln.tree_util.default_registry"):
        build({}, (tuple, None), [])


def test_compose_replaces_each_leaf():
    outer, inner = tree_util.tree_structure([1, (2, 3)]), tree_util.tree_structure({"k": 1, "j": None})
    composed = outer.compose(inner)
    assert composed == tree_util.tree_structure([{"k": 1, "j": None}, ({"k": 1, "j": None}, {"k": 1, "j": None})])
    assert composed.num_leaves == 3 and tree_util.tree_structure(1).compose(inner) == inner


def test_walk_folds_leaves_up_with_jax_node_data():
    td = tree_util.tree_structure(_TREE)
    out = td.walk(lambda ch, nd: ("N", ch, nd), lambda leaf: leaf * 10, range(6))
    assert out == ("N", (("N", (0, 10), Point), ("N", (20, ("N", (), None), ("N", (30,), None)), None),
                         ("N", (40, 50), ("z", "y"))), ["a", "b", "c"])
    assert tree_util.tree_structure(3).walk(None, lambda x: x + 1, [1]) == 2
    with pytest.raises(ValueError, match=r"walk: too few leaves for PyTreeDef\(\[\*, \*\]\)"):
        tree_util.tree_structure([1, 2]).walk(lambda ch, nd: ch, None, [1])
    with pytest.raises(ValueError, match=r"walk: too many leaves for PyTreeDef\(\[\*, \*\]\) \(it has 2\)"):
        tree_util.tree_structure([1, 2]).walk(lambda ch, nd: ch, None, [1, 2, 3])


def test_from_iterable_tree_builds_the_nodes():
    td = tree_util.tree_structure(_TREE)
    got = td.from_iterable_tree([[7, 8], [1, [], [2]], [5, 6]])
    assert got == {"a": Point(7, 8), "b": (1, None, [2]), "c": collections.OrderedDict(z=5, y=6)}
    assert type(got["c"]) is collections.OrderedDict and type(got["b"][2]) is list
    with pytest.raises(ValueError, match=r"from_iterable_tree: a \(\*, \*\) node has 2 children, but its "
                                         r"iterable gave 1"):
        tree_util.tree_structure([1, (2, 3)]).from_iterable_tree([1, [2]])
