"""kiln.tree_util's registration helpers (dataclasses, keyed nodes, static classes, Partial), one-level
flattening, tree_broadcast, tree_reduce_associative, the treedef helpers, default_registry, and kiln.tree
(jax.tree's short names)."""
from __future__ import annotations

import dataclasses
import functools
import operator

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import tree
from kiln import tree_util as tu


@tu.register_dataclass
@dataclasses.dataclass
class Params:
    w: object
    b: object
    name: str = tree.static(default="layer")


@functools.partial(tu.register_dataclass, data_fields=["x"], meta_fields=["op"])
class Plain:
    def __init__(self, x, op):
        self.x, self.op = x, op


@tu.register_pytree_with_keys_class
class Named:
    def __init__(self, items):
        self.items = dict(items)

    def tree_flatten_with_keys(self):
        keys = sorted(self.items)
        return [(tu.DictKey(k), self.items[k]) for k in keys], tuple(keys)

    @classmethod
    def tree_unflatten(cls, keys, children):
        return cls(zip(keys, children))


@tu.register_static
class Mode(str):
    pass


def test_register_dataclass_data_and_meta_fields():
    p = Params(np.ones(2), 3.0)
    leaves, treedef = tree.flatten(p)
    assert len(leaves) == 2 and leaves[1] == 3.0
    assert "Params" in repr(treedef) and "'layer'" in repr(treedef)
    back = tree.unflatten(treedef, [1, 2])
    assert isinstance(back, Params) and (back.w, back.b, back.name) == (1, 2, "layer")
    assert [tu.keystr(k) for k, _ in tree.leaves_with_path(p)] == [".w", ".b"]
    # meta fields are static under jit: another name retraces, the numbers are traced
    f = kiln.jit(lambda p: p.w * p.b if p.name == "layer" else -p.w)
    np.testing.assert_allclose(f(p), [3.0, 3.0])
    np.testing.assert_allclose(f(Params(np.ones(2), 3.0, "other")), [-1.0, -1.0])
    q = Plain(np.arange(3.0), "neg")
    assert tree.leaves(q)[0] is q.x and tree.structure(q).node_data()[1] == ("neg",)
    g = kiln.grad(lambda p: (p.w * p.b).sum())(Params(knp.ones(2), knp.float32(2.0)))
    np.testing.assert_allclose(g.w, [2.0, 2.0])
    np.testing.assert_allclose(g.b, 2.0)


def test_register_dataclass_errors():
    @dataclasses.dataclass
    class D:
        a: int
        b: int

    with pytest.raises(ValueError, match=r"register_dataclass\(.*D\): .*missing fields \['b'\]"):
        tu.register_dataclass(D, data_fields=["a"], meta_fields=[])
    with pytest.raises(ValueError, match=r"fields \['a'\] are both data and meta fields"):
        tu.register_dataclass(D, data_fields=["a", "b"], meta_fields=["a"])
    with pytest.raises(TypeError, match=r"data_fields and meta_fields must both be given"):
        tu.register_dataclass(D, data_fields=["a", "b"])
    with pytest.raises(TypeError, match=r"is not a dataclass, so data_fields and meta_fields must be given"):
        tu.register_dataclass(type("NotDC", (), {}))


def test_keyed_nodes_static_classes_and_partial():
    n = Named({"b": 2, "a": 1})
    assert tree.leaves(n) == [1, 2]
    assert [tu.keystr(k) for k, _ in tu.tree_flatten_with_path(n)[0]] == ["['a']", "['b']"]
    tu.register_pytree_with_keys(type("K2", (), {}), lambda x: (((tu.GetAttrKey("v"), x.v),), None),
                                 lambda aux, ch: None)
    with pytest.raises(TypeError, match=r"register_pytree_with_keys_class: .* must define a tree_flatten_with_keys"):
        tu.register_pytree_with_keys_class(type("NoKeys", (), {}))
    assert tree.leaves([Mode("x"), 1]) == [1]  # a static instance has no leaves
    f = kiln.jit(lambda x, m: x + 1 if m == "add" else x - 1)
    assert float(f(1.0, Mode("add"))) == 2.0 and float(f(1.0, Mode("sub"))) == 0.0
    p = tu.Partial(operator.mul, knp.float32(3.0))
    assert tree.leaves(p) == [p.args[0]]
    assert float(kiln.jit(lambda p, x: p(x))(p, 2.0)) == 6.0
    assert float(kiln.grad(lambda s: tu.Partial(operator.mul, s)(2.0))(3.0)) == 2.0
    nested = tu.Partial(functools.partial(operator.add, 1), 2)  # the inner partial's argument stays static
    assert tree.leaves(nested) == [2] and nested() == 3
    assert tree.structure(nested) == tree.structure(tu.Partial(nested.func, 5))


def test_one_level_broadcast_reduce_and_treedef_helpers():
    t = {"a": 1, "b": (2, 3)}
    assert tu.flatten_one_level(t) == ([1, (2, 3)], ("a", "b"))
    assert tu.flatten_one_level_with_keys(t)[0] == [(tu.DictKey("a"), 1), (tu.DictKey("b"), (2, 3))]
    assert tu.flatten_one_level_with_keys(tu.Partial(max, 1))[0][0][0] == tu.FlattenedIndexKey(0)
    with pytest.raises(ValueError, match=r"flatten_one_level: a int is a leaf"):
        tu.flatten_one_level(1)
    assert tu.is_tree_node(tuple) and tu.is_tree_node(type(None)) and tu.is_tree_node(Params)
    assert not tu.is_tree_node(int) and not tu.is_tree_node(np.ndarray)
    with pytest.raises(TypeError, match=r"is_tree_node: expected a class, got int 1; pass type\(x\)"):
        tu.is_tree_node(1)
    assert tree.broadcast([1, 2], [(3, 4), {"x": 5, "y": None}]) == [(1, 1), {"x": 2, "y": None}]
    with pytest.raises(ValueError, match=r"tree_broadcast: .*at the root, expected a list of 2 children"):
        tree.broadcast([1, 2], [1, 2, 3])
    assert tree.reduce_associative(operator.add, [1, 2, 3, 4, 5]) == 15
    # a balanced tree of calls in JAX's order (halves split recursively), so that float sums round as JAX's
    assert tree.reduce_associative(lambda a, b: f"({a}+{b})", list("abcdefg")) == "((a+(b+c))+((d+e)+(f+g)))"
    assert tree.reduce_associative(lambda a, b: f"({a}+{b})", list("abcd")) == "((a+b)+(c+d))"
    assert tree.reduce_associative(operator.add, [], identity=0) == 0
    with pytest.raises(TypeError, match=r"the tree has no leaves; pass identity="):
        tree.reduce_associative(operator.add, [])
    td = tu.treedef_tuple([tree.structure(1), tree.structure((1, 2))])
    assert td == tree.structure((0, (0, 0))) and td.num_leaves == 3
    assert tu.treedef_children(tree.structure(t)) == [tree.structure(1), tree.structure((1, 2))]
    with pytest.raises(TypeError, match=r"treedef_tuple: expected PyTreeDefs, got a int"):
        tu.treedef_tuple([1])


def test_transpose_infers_inner_and_is_leaf_takes_path():
    outer = tree.structure([0, 0])
    assert tree.transpose(outer, None, [(1, 2, 3), (4, 5, 6)]) == ([1, 4], [2, 5], [3, 6])
    with pytest.raises(ValueError, match=r"inner_treedef=None needs an outer structure with at least one leaf"):
        tree.transpose(tree.structure([]), None, [])
    t = {"keep": (1, 2), "deep": (3, 4)}
    pairs, _ = tree.flatten_with_path(t, is_leaf=lambda path, x: tu.keystr(path) == "['keep']",
                                      is_leaf_takes_path=True)
    assert [x for _, x in pairs] == [3, 4, (1, 2)]
    out = tree.map_with_path(lambda p, x: len(p), t, is_leaf=lambda x: x == (1, 2))
    assert out == {"keep": 1, "deep": (2, 2)}


def test_kiln_tree_short_names_and_default_registry():
    t = {"a": [1, 2], "b": 3}
    assert tree.map(lambda x: x * 2, t) == {"a": [2, 4], "b": 6}
    assert tree.all(t) and not tree.all({"a": 0}) and tree.reduce(operator.add, t) == 6
    leaves, td = tree.flatten(t)
    assert tree.unflatten(td, leaves) == t and tree.leaves(t) == [1, 2, 3] and tree.structure(t) == td
    assert tree.map_with_path(lambda p, x: tu.keystr(p), t) == {"a": ["['a'][0]", "['a'][1]"], "b": "['b']"}
    reg = tu.default_registry
    assert reg.flatten(t)[0] == [1, 2, 3] and reg.flatten_one_level(1) is None
    assert reg.is_node(list) and not reg.is_node(int)
    assert reg.flatten_with_path(t)[0][0] == ((tu.DictKey("a"), tu.SequenceKey(0)), 1)
    field = tree.static(default=5)
    assert field.metadata["static"] is True and field.default == 5


def test_typed_keys_are_leaves_to_users_as_in_jax():
    """A typed key array is one leaf to kiln.tree_util and kiln.tree (JAX: a key is a jax.Array), while kiln's
    transformations carry its uint32 data: a state holding a key maps, prints and round-trips as in JAX."""
    key, keys = kiln.random.key(0), kiln.random.split(kiln.random.key(1), 3)
    state = {"rng": key, "w": knp.ones(3), "per_row": keys}
    assert tu.tree_map(lambda x: x.shape, state) == {"rng": (), "w": (3,), "per_row": (3,)}
    assert tree.map(lambda x: x.dtype.name if hasattr(x.dtype, "impl") else "array", state)["rng"] == "key<fry>"
    leaves, treedef = tu.tree_flatten(state)
    assert leaves[0] is keys and leaves[1] is key and len(leaves) == 3  # sorted keys: per_row, rng, w
    assert repr(treedef) == "PyTreeDef({'per_row': *, 'rng': *, 'w': *})" == repr(tree.structure(state))
    assert tu.tree_leaves(key) == [key] and tu.all_leaves([key, keys]) and not tu.is_tree_node(type(key))
    assert tu.tree_leaves_with_path({"k": key}) == [((tu.DictKey("k"),), key)]
    with pytest.raises(ValueError, match="is a leaf, not a pytree node"):
        tu.flatten_one_level(key)
    reg = tu.default_registry
    assert reg.flatten_one_level(key) is None and not reg.is_node(type(key)) and reg.flatten(state)[0][1] is key
    # two trees with keys at the same places; reductions and broadcasts count a key once
    other = tu.tree_map(lambda x: x, state)
    assert tu.tree_map(lambda a, b: b, state, other)["rng"] is key
    assert tu.tree_reduce(lambda n, _: n + 1, state, 0) == 3 == tree.reduce_associative(lambda a, b: a + b,
                                                                                        tree.map(lambda _: 1, state))
    assert tu.tree_broadcast({"rng": 0, "w": 1, "per_row": 2}, state) == {"rng": 0, "w": 1, "per_row": 2}
    # the user's leaves go through kiln's transformations and come back as keys
    step = kiln.jit(lambda *ls: tu.tree_unflatten(treedef, [ls[0], kiln.random.split(ls[1])[0], ls[2] * 2]))
    out = step(*leaves)
    assert isinstance(out["per_row"], kiln.random.KeyArray) and out["per_row"].shape == (3,)
    assert isinstance(out["rng"], kiln.random.KeyArray) and out["rng"].shape == ()
    np.testing.assert_array_equal(np.asarray(kiln.random.key_data(out["rng"])),
                                  np.asarray(kiln.random.key_data(kiln.random.split(key)[0])))
    np.testing.assert_array_equal(np.asarray(out["w"]), [2.0, 2.0, 2.0])
    draws = kiln.vmap(lambda k: kiln.random.normal(k))(keys)
    np.testing.assert_array_equal(np.asarray(draws), [float(kiln.random.normal(k)) for k in keys])
