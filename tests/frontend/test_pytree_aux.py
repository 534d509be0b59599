"""Pytree nodes whose auxiliary data is unhashable (a dict, a list, an object with ``__eq__`` only).

Structures compare node data by ``==`` (as JAX does), so such nodes work as jit arguments and
outputs, under grad and vmap, and in the C++ dispatch path, which keeps its own copy of the
registry (kiln.runtime.fastpath)."""
import numpy as np
import pytest
from kiln.frontend.core import tree_util as tu
from kiln.frontend.driver import jit as jit_module

import kiln
import kiln.numpy as knp
from kiln import runtime


@tu.register_pytree_node_class
class Tagged:
    """One array child; ``meta`` (any value, possibly unhashable) is the aux data."""

    def __init__(self, x, meta):
        self.x, self.meta = x, meta

    def tree_flatten(self):
        return (self.x,), self.meta

    @classmethod
    def tree_unflatten(cls, meta, children):
        return cls(children[0], meta)


class EqOnly:
    """Unhashable (defining ``__eq__`` sets ``__hash__`` to None), comparable."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, EqOnly) and self.v == other.v

    def __repr__(self):
        return f"EqOnly({self.v})"


class Meta:
    """A plain object registered with register_pytree_node (not the class decorator)."""

    def __init__(self, w, b, config):
        self.w, self.b, self.config = w, b, config


tu.register_pytree_node(Meta, lambda m: ((m.w, m.b), m.config), lambda cfg, ch: Meta(*ch, cfg))

UNHASHABLE = [
    {"a": 1, "b": [1, 2]},
    [1, {"k": "v"}],
    (1, [2, 3]),  # a tuple holding a list is unhashable too
    EqOnly(3),
    {"nested": {"x": EqOnly(1)}},
    {1, 2},  # a set is unhashable; equal sets hash alike through frozenset
]


def _copy(meta):
    """An equal but not identical copy."""
    if isinstance(meta, dict):
        return {k: _copy(v) for k, v in meta.items()}
    if isinstance(meta, (list, tuple, set)):
        return type(meta)(_copy(v) for v in meta)
    if isinstance(meta, EqOnly):
        return EqOnly(meta.v)
    return meta


@pytest.mark.parametrize("meta", UNHASHABLE, ids=repr)
def test_treedef_hash_and_equality(meta):
    t1 = tu.tree_structure(Tagged(1.0, meta))
    t2 = tu.tree_structure(Tagged(2.0, _copy(meta)))
    assert t1 == t2 and hash(t1) == hash(t2)
    assert t1 != tu.tree_structure(Tagged(1.0, "other"))
    assert {t1: "cached"}[t2] == "cached"  # usable as (part of) a cache key


def test_equal_aux_of_different_mapping_types_hash_alike():
    import collections
    a = tu.tree_structure(Tagged(1.0, {"a": [1], "b": 2}))
    b = tu.tree_structure(Tagged(1.0, collections.OrderedDict([("b", 2), ("a", [1])])))
    assert a == b and hash(a) == hash(b)  # dict == OrderedDict, so their hashes must agree


def test_different_unhashable_aux_are_different_structures():
    t1 = tu.tree_structure(Tagged(1.0, {"a": 1}))
    t2 = tu.tree_structure(Tagged(1.0, {"a": 2}))
    t3 = tu.tree_structure(Tagged(1.0, EqOnly(1)))
    t4 = tu.tree_structure(Tagged(1.0, EqOnly(2)))
    assert t1 != t2 and t3 != t4 and t1 != t3
    assert len({t1, t2, t3, t4}) == 4


@pytest.mark.parametrize("meta", UNHASHABLE, ids=repr)
def test_flatten_unflatten_and_tree_map_round_trip(meta):
    tree = {"p": Tagged(np.float32(2.0), meta), "q": [Tagged(np.float32(3.0), _copy(meta))]}
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == [2.0, 3.0]
    back = tu.tree_unflatten(treedef, leaves)
    assert back["p"].meta == meta and back["q"][0].meta == meta and back["p"].x == 2.0
    doubled = tu.tree_map(lambda a, b: a + b, tree, tu.tree_map(lambda a: a, tree))
    assert doubled["p"].x == 4.0 and doubled["q"][0].x == 6.0 and doubled["q"][0].meta == meta
    assert tu.tree_structure(doubled) == treedef
    ((path, _), _), _ = tu.tree_flatten_with_path(tree)
    assert tu.keystr(path) == "['p'][<flat index 0>]"


def test_tree_map_with_different_unhashable_aux_names_the_node():
    with pytest.raises(ValueError, match=r"at the root, the Tagged node data differs: "
                                         r"expected \{'a': 1\}, got \{'a': 2\}"):
        tu.tree_map(lambda a, b: a, Tagged(1.0, {"a": 1}), Tagged(1.0, {"a": 2}))


@pytest.fixture
def traces():
    return []


def _jitted(traces):
    @kiln.jit
    def f(p):
        traces.append(1)
        return Tagged(p.x * 2.0, p.meta)
    return f


@pytest.mark.parametrize("meta", UNHASHABLE, ids=repr)
def test_jit_input_and_output_no_retrace_for_equal_aux(meta, traces):
    f = _jitted(traces)
    for _ in range(4):  # equal but not identical aux each call
        out = f(Tagged(knp.arange(3.0), _copy(meta)))
        assert isinstance(out, Tagged) and out.meta == meta
        np.testing.assert_array_equal(out.x, [0.0, 2.0, 4.0])
    assert len(traces) == 1


def test_jit_different_aux_retraces(traces):
    f = _jitted(traces)
    f(Tagged(knp.ones(2), {"a": 1})), f(Tagged(knp.ones(2), {"a": 1}))
    out = f(Tagged(knp.ones(2), {"a": 2}))
    assert out.meta == {"a": 2} and len(traces) == 2
    out = f(Tagged(knp.ones(2), {"a": 1}))  # back to the first: cached
    assert out.meta == {"a": 1} and len(traces) == 2
    f(Tagged(knp.ones(2), EqOnly(1))), f(Tagged(knp.ones(2), EqOnly(1)))
    assert len(traces) == 3


def test_jit_aux_is_static_inside_the_trace():
    @kiln.jit
    def f(m):
        return m.w * m.config["scale"] + m.b

    for scale in (2.0, 3.0, 2.0):
        out = f(Meta(knp.ones(2), knp.full(2, 0.5), {"scale": scale}))
        np.testing.assert_allclose(out, np.full(2, scale + 0.5))


@pytest.mark.skipif(not runtime.fastpath.available(), reason="C++ dispatch unavailable here")
def test_cpp_dispatch_with_unhashable_aux(monkeypatch, traces):
    """Repeated calls stay in the C++ path (it compares the aux dicts by equality); a new aux misses."""
    misses = []
    original = jit_module.JittedFunction._cpp_miss

    def counting(self, *args, **kwargs):
        misses.append(1)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(jit_module.JittedFunction, "_cpp_miss", counting)
    f = _jitted(traces)
    x = knp.arange(2.0)
    for _ in range(4):
        out = f(Tagged(x, {"a": [1, 2]}))
        assert out.meta == {"a": [1, 2]}
        np.testing.assert_array_equal(out.x, [0.0, 2.0])
    assert len(misses) == 1 and len(traces) == 1
    for _ in range(3):
        out = f(Tagged(x, {"a": [1, 3]}))
        assert out.meta == {"a": [1, 3]}
    assert len(misses) == 2 and len(traces) == 2
    out = f(Tagged(x, {"a": [1, 2]}))
    assert out.meta == {"a": [1, 2]} and len(traces) == 2


def test_grad_over_unhashable_aux():
    def loss(m):
        return knp.sum(m.w ** 2 * m.config["scale"] + m.b)

    m = Meta(knp.array([1.0, 2.0]), knp.array([0.5, 0.5]), {"scale": 3.0, "tags": ["a"]})
    g = kiln.grad(loss)(m)
    assert isinstance(g, Meta) and g.config == {"scale": 3.0, "tags": ["a"]}
    np.testing.assert_allclose(g.w, 6.0 * np.array([1.0, 2.0]))
    np.testing.assert_allclose(g.b, [1.0, 1.0])
    g2 = kiln.jit(kiln.grad(loss))(m)
    np.testing.assert_allclose(g2.w, g.w)


def test_vmap_over_unhashable_aux():
    def f(p):
        return Tagged(p.x * p.meta["k"], p.meta)

    out = kiln.vmap(f)(Tagged(knp.arange(3.0), {"k": 2.0}))
    assert out.meta == {"k": 2.0}
    np.testing.assert_array_equal(out.x, [0.0, 2.0, 4.0])
    out = kiln.jit(kiln.vmap(f))(Tagged(knp.arange(3.0), {"k": 3.0}))
    np.testing.assert_array_equal(out.x, [0.0, 3.0, 6.0])
