"""JAX's docs page docs/new_docs/101/pytrees.md ("Pytrees"), ported to kiln by changing imports (tests/examples/
jax_ported/docs_pytrees_101.py), checked against oracles that do not involve JAX: the page's printed text (leaf
counts, flattened leaves and treedefs, key paths; memory addresses matched by pattern), NumPy's printing of the
float32 arrays, Python comprehensions for the tree maps and the transpose, the gradients in closed form (of the
quadratic loss, of ``x**2 + y``) and by float64 central differences, a float64 NumPy replay of the page's MLP
training (its gradient by backpropagation, ``_np_mlp_loss_and_grads`` of test_docs_basics.py, the older pytrees
page's oracle), Python loops for the in_axes sketches, trace counts for the dataclass's meta fields under jit, and
the page's claims about what is a leaf and what is a node. Where a block raises on the page, the exception's class
is checked, and that its message says what went wrong and where.

The page's sizes are kept: its MLP (widths 1-128-128-1) trains for 100 eager steps once, in a module fixture
(about 2 s). The older pages (docs/pytrees.md, custom_pytrees.md) are checked in test_docs_basics.py.
"""
from __future__ import annotations

import collections
import contextlib
import io
import re

import numpy as np
import pytest
from ported import fd_jacobian, load
from test_docs_basics import _np_mlp_loss_and_grads

import kiln
import kiln.numpy as jnp
from kiln import tree_util


@pytest.fixture(scope="module")
def page():
    return load("docs_pytrees_101")


def _run(fn, *args):
    """(what fn returns, the lines it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue().splitlines()


def _typed(a, dtype, shape, weak=False):
    assert isinstance(a, kiln.Array) and (a.dtype, a.shape, a.weak_type) == (np.dtype(dtype), shape, weak), \
        (type(a), getattr(a, "dtype", None), getattr(a, "shape", None), getattr(a, "weak_type", None))


def _array_repr(a: np.ndarray) -> str:
    """What repr of a kiln array of these float32 values shows: NumPy's, named Array."""
    return repr(a).replace("array(", "Array(")


# ---------------------------------------------- What is a pytree? --------------------------------------------------

def test_leaves_of_example_trees(page):
    none, lines = _run(page.leaves_block)
    assert none is None
    assert re.fullmatch(r"\[1, 'a', <object object at 0x\w+>\]\s+has 3 leaves: \[1, 'a', <object object at 0x\w+>\]",
                        lines[0])
    assert lines[1:] == [
        "(1, (2, 3), ())                               has 3 leaves: [1, 2, 3]",
        "[1, {'k1': 2, 'k2': (3, 4)}, 5]               has 5 leaves: [1, 2, 3, 4, 5]",
        "{'a': 2, 'b': (2, 3)}                         has 3 leaves: [2, 2, 3]",
        "Array([1, 2, 3], dtype=int32)                 has 1 leaves: [Array([1, 2, 3], dtype=int32)]"]
    # the leaves are the objects themselves (an object(), an array), in order: a depth-first walk, dict keys sorted
    first = kiln.tree.leaves(page.example_trees[0])
    assert first[2] is page.example_trees[0][2] and kiln.tree.leaves(page.example_trees[4])[0] is page.example_trees[4]

    def walk(t):  # the oracle: lists, tuples and dicts are containers, anything else a leaf
        if isinstance(t, (list, tuple)):
            return [v for c in t for v in walk(c)]
        if isinstance(t, dict):
            return [v for k in sorted(t) for v in walk(t[k])]
        return [t]
    for tree in page.example_trees[:4]:
        assert kiln.tree.leaves(tree) == walk(tree)


def test_flatten_and_unflatten(page):
    (params, leaves, treedef), lines = _run(page.flatten_block)
    W, b = np.zeros((2, 3), np.float32), np.zeros(3, np.float32)
    want = [f"[{_array_repr(W)}, {_array_repr(b)}]", "PyTreeDef({'W': *, 'b': *})",
            f"{{'W': {_array_repr(W)}, 'b': {_array_repr(b)}}}"]
    assert lines == "\n".join(want).splitlines()
    assert leaves[0] is params["W"] and leaves[1] is params["b"]  # the data, in sorted key order
    assert treedef.num_leaves == 2 and treedef == kiln.tree.structure({"b": 1, "W": 2})
    rebuilt = kiln.tree.unflatten(treedef, leaves)
    assert type(rebuilt) is dict and list(rebuilt) == ["W", "b"] and rebuilt["W"] is params["W"]
    # the structure and any leaves of the same count: "reassembles"
    assert kiln.tree.unflatten(treedef, ["w", "b"]) == {"W": "w", "b": "b"}
    for tree in page.example_trees[1:4]:
        leaves, treedef = kiln.tree.flatten(tree)
        assert kiln.tree.unflatten(treedef, leaves) == tree


# ---------------------------------------------- Common pytree functions --------------------------------------------

def test_tree_map_over_one_and_two_trees(page):
    lol = page.list_of_lists
    assert page.tree_map_block() == [[x * 2 for x in row] for row in lol] == [[2, 4, 6], [2, 4], [2, 4, 6, 8]]
    assert page.tree_map_two_trees_block() == [[x + y for x, y in zip(r, s)] for r, s in zip(lol, lol)]
    assert lol == [[1, 2, 3], [1, 2], [1, 2, 3, 4]]  # a new tree: the input is left alone


@pytest.mark.parametrize("other, where", [
    ([[1, 2, 3], [1, 2], [1, 2, 3]], "[2]"), ([[1, 2, 3], [1, 2]], "root"), ({"k": 1}, "root")],
    ids=["list-length", "outer-length", "type"])
def test_tree_map_needs_matching_structures(page, other, where):
    """The page: "The structures must match exactly: lists with the same lengths, dicts with the same keys"."""
    with pytest.raises(ValueError) as info:
        kiln.tree.map(lambda x, y: x + y, page.list_of_lists, other)
    msg = str(info.value)
    assert "structure" in msg and where in msg  # what, and where in the tree
    with pytest.raises(ValueError, match=r"keys \['a', 'b'\], got \['a', 'c'\]"):
        kiln.tree.map(lambda x, y: x + y, {"a": 1, "b": 2}, {"a": 1, "c": 2})


def test_reduce_and_structure():
    tree = [1, {"k1": 2, "k2": (3, 4)}, 5]
    assert kiln.tree.reduce(lambda a, b: a * 10 + b, tree) == 12345
    assert kiln.tree.structure(tree) == kiln.tree.structure([0, {"k2": (0, 0), "k1": 0}, 0])
    assert str(kiln.tree.structure(tree)) == "PyTreeDef([*, {'k1': *, 'k2': (*, *)}, *])"


# ---------------------------------------------- Pytrees and JAX transformations ------------------------------------

X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def test_grad_with_respect_to_a_dict(page):
    grads = page.grad_of_dict_block()
    assert type(grads) is dict and list(grads) == ["W", "b"]
    _typed(grads["W"], np.float32, (3,))
    _typed(grads["b"], np.float32, (), weak=True)  # `b` was the Python float 0.5
    # closed form: d/dW sum((x W + b)^2) = 2 x^T pred, d/db = 2 sum(pred), pred = x W + b
    pred = X @ np.ones(3) + 0.5
    np.testing.assert_array_equal(grads["W"], 2 * X.T @ pred)
    assert float(grads["b"]) == 2 * pred.sum() == 44.0
    assert (2 * X.T @ pred).tolist() == [137.0, 181.0, 225.0]
    # elsewhere: central differences of the float64 loss
    W, b = np.array([0.3, -1.2, 0.7]), -0.4
    g = kiln.grad(page.loss)({"W": jnp.asarray(W, np.float32), "b": b}, jnp.asarray(X, np.float32))

    def np_loss(w, b=b):
        return np.sum((X @ w + b) ** 2)
    np.testing.assert_allclose(g["W"], fd_jacobian(np_loss, W), rtol=1e-5)
    np.testing.assert_allclose(float(g["b"]), fd_jacobian(lambda c: np_loss(W, c), b), rtol=1e-5)


@pytest.fixture(scope="module")
def mlp(page):
    """The init and training blocks, at the page's sizes, from NumPy's global generator seeded (and restored)."""
    state = np.random.get_state()
    np.random.seed(0)
    try:
        params0 = page.init_block()
        shapes = page.shapes_block(params0)
        (params, x, y), lines = _run(page.training_block, params0)
    finally:
        np.random.set_state(state)
    return params0, shapes, params, x, y, lines


def test_init_params_and_their_shapes(page, mlp):
    params0, shapes, *_ = mlp
    assert shapes == [{"biases": (128,), "weights": (1, 128)}, {"biases": (128,), "weights": (128, 128)},
                      {"biases": (1,), "weights": (128, 1)}]
    assert kiln.tree.structure(shapes) != kiln.tree.structure(params0)  # the shapes' tuples are nodes, not leaves
    for layer in params0:
        assert all(type(v) is np.ndarray and v.dtype == np.float64 for v in layer.values())
        np.testing.assert_array_equal(layer["biases"], 1.0)
    # He initialisation: weights ~ N(0, 2 / n_in) (a loose check of the 128 x 128 layer's 16384 draws)
    w = params0[1]["weights"]
    assert abs(w.mean()) < 0.01 and abs(w.var() * 128 / 2 - 1) < 0.05


def _np_train(params, x, y, steps=100, lr=1e-4):
    P = [{k: np.asarray(v, np.float64) for k, v in layer.items()} for layer in params]
    for _ in range(steps):
        _, grads = _np_mlp_loss_and_grads(P, x, y)
        P = [{k: layer[k] - lr * g[k] for k in layer} for layer, g in zip(P, grads)]
    return P


def test_sgd_training_against_float64_backpropagation(page, mlp):
    params0, _, params, x, y, lines = mlp
    assert page.LEARNING_RATE == 1e-4 and x.shape == y.shape == (128, 1)
    np.testing.assert_array_equal(y, x ** 2)
    want = _np_train(params0, x, y)
    assert tree_util.tree_structure(params) == tree_util.tree_structure(want)
    for got, ref, start in zip(params, want, params0):
        for k in ("weights", "biases"):
            _typed(got[k], np.float32, start[k].shape)
            np.testing.assert_allclose(got[k], ref[k], rtol=1e-5, atol=1e-5)
            # the 100 steps' displacement itself, to 1% (float32 rounding of the parameters is ~1e-7)
            np.testing.assert_allclose(np.linalg.norm(np.asarray(got[k], np.float64) - start[k]),
                                       np.linalg.norm(ref[k] - start[k]), rtol=1e-2)
    want_loss, _ = _np_mlp_loss_and_grads(want, x, y)
    start_loss, _ = _np_mlp_loss_and_grads(params0, x, y)
    assert len(lines) == 1 and re.fullmatch(r"\d+\.\d+", lines[0])  # a float32 scalar's print
    np.testing.assert_allclose(float(lines[0]), want_loss, rtol=1e-5)
    assert want_loss < start_loss


def test_one_update_step_and_its_jit(page, mlp):
    """The page: `grads` has the structure of `params`, and the SGD step is one tree.map; jit(update) (the page's
    "in a real training loop you'd wrap update in jax.jit") gives the same step."""
    params0, *_ = mlp
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 1))
    y = x ** 2
    _, grads = _np_mlp_loss_and_grads(params0, x, y)
    eager, jitted = page.update(params0, x, y), kiln.jit(page.update)(params0, x, y)
    for e, j, p, g in zip(eager, jitted, params0, grads):
        for k in ("weights", "biases"):
            np.testing.assert_allclose(e[k], p[k] - page.LEARNING_RATE * g[k], rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(j[k], e[k], rtol=1e-6, atol=1e-7)


def _f(a, d):
    return a * d["k1"] + d["k2"]


def test_in_axes_pytree_maps_k1_and_broadcasts_k2(page):
    a, k1, k2 = np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.5, 1.5, -1.0, 2.0]), np.array([10.0, 20.0, 30.0])
    mapped = page.in_axes_sketch(kiln.vmap, _f)
    out = mapped(jnp.asarray(a, np.float32), {"k1": jnp.asarray(k1, np.float32), "k2": jnp.asarray(k2, np.float32)})
    _typed(out, np.float32, (4, 3))
    np.testing.assert_allclose(out, np.stack([_f(a[i], {"k1": k1[i], "k2": k2}) for i in range(4)]), rtol=1e-6)


def test_in_axes_prefixes_apply_to_whole_subtrees(page):
    a, k1 = np.array([1.0, -2.0, 0.5]), np.array([0.5, 1.5, -1.0])
    k2 = np.arange(6.0).reshape(3, 2)
    args = (jnp.asarray(a, np.float32), {"k1": jnp.asarray(k1, np.float32), "k2": jnp.asarray(k2, np.float32)})
    loop = np.stack([_f(a[i], {"k1": k1[i], "k2": k2[i]}) for i in range(3)])
    full = kiln.vmap(_f, in_axes=(0, {"k1": 0, "k2": 0}))(*args)
    np.testing.assert_allclose(full, loop, rtol=1e-6)
    for mapped in page.in_axes_prefix_sketch(kiln.vmap, _f):
        out = mapped(*args)
        _typed(out, np.float32, (3, 2))
        np.testing.assert_array_equal(out, full)  # "equivalent to (0, {"k1": 0, "k2": 0})"


# ---------------------------------------------- Explicit key paths -------------------------------------------------

def test_key_paths(page):
    flattened, lines = _run(page.key_paths_block)
    assert lines == ["Value of tree[0]: 1", "Value of tree[1]['k1']: 2", "Value of tree[1]['k2'][0]: 3",
                     "Value of tree[1]['k2'][1]: 4", "Value of tree[2].name: foo"]
    S, D, G = tree_util.SequenceKey, tree_util.DictKey, tree_util.GetAttrKey
    assert [p for p, _ in flattened] == [(S(0),), (S(1), D("k1")), (S(1), D("k2"), S(0)), (S(1), D("k2"), S(1)),
                                         (S(2), G("name"))]
    assert [v for _, v in flattened] == [1, 2, 3, 4, "foo"]
    # tree_map_with_path: tree.map with the key path as an extra first argument
    tree = [1, {"k1": 2, "k2": (3, 4)}, page.ATuple("foo")]
    named = tree_util.tree_map_with_path(lambda p, v: f"{tree_util.keystr(p)}={v}", tree)
    assert named == ["[0]=1", {"k1": "[1]['k1']=2", "k2": ("[1]['k2'][0]=3", "[1]['k2'][1]=4")},
                     page.ATuple("[2].name=foo")]
    assert type(named[2]) is page.ATuple


# ---------------------------------------------- Custom pytree nodes ------------------------------------------------

def test_an_unregistered_class_is_a_leaf(page):
    leaves = page.special_leaves_block()
    assert len(leaves) == 2 and all(type(v) is page.Special for v in leaves)
    assert [(v.x, v.y) for v in leaves] == [(0, 1), (2, 4)]
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Special' and 'int'"):
        page.special_tree_map_block()


def test_a_registered_class_is_a_node(page):
    out = page.registered_tree_map_block()
    assert repr(out) == "[RegisteredSpecial(x=1, y=2), RegisteredSpecial(x=3, y=5)]"
    assert all(type(r) is page.RegisteredSpecial for r in out)
    s = page.RegisteredSpecial(0, 1)
    leaves, treedef = kiln.tree.flatten(s)
    assert leaves == [0, 1] and treedef.num_leaves == 2
    assert str(treedef) == "PyTreeDef(CustomNode(RegisteredSpecial[None], [*, *]))"  # aux_data None in the treedef
    # "JAX compares and hashes" the treedefs: two instances, one structure
    other = kiln.tree.structure(page.RegisteredSpecial(5, 6))
    assert other == treedef and hash(other) == hash(treedef)
    assert kiln.tree.structure(page.Special(0, 1)) != treedef  # the unregistered base class is a leaf


def test_grad_with_respect_to_a_registered_class(page):
    g = page.registered_grad_block()
    assert type(g) is page.RegisteredSpecial and repr(g) == "RegisteredSpecial(x=6.0, y=1.0)"
    _typed(g.x, np.float32, (), weak=True)
    _typed(g.y, np.float32, (), weak=True)
    assert (float(g.x), float(g.y)) == (2 * 3.0, 1.0)  # d/dx x^2 + y, d/dy
    for x, y in ((-1.5, 2.0), (0.25, -3.0)):
        g = kiln.grad(lambda s: s.x ** 2 + s.y)(page.RegisteredSpecial(x, y))
        np.testing.assert_allclose([float(g.x), float(g.y)],
                                   fd_jacobian(lambda v: v[0] ** 2 + v[1], np.array([x, y])), rtol=1e-6)


def test_namedtuple_fields_are_all_children(page):
    leaves = page.namedtuple_leaves_block()
    assert leaves == ["Alice", 1, 2, "Bob", 4, 5]
    # "a problem as soon as a transformation tries to treat them as array data"
    for transform, fn in ((kiln.jit, lambda c: c.a * 2), (kiln.grad, lambda c: c.a * 2.0)):
        with pytest.raises(TypeError) as info:
            transform(fn)(page.MyOtherContainer("Alice", 1.0, 2.0))
        msg = str(info.value)
        assert "str" in msg and "'Alice'" in msg and ".name" in msg  # what, and where: the field's path


def test_dataclass_meta_fields_live_in_the_treedef(page):
    leaves = page.dataclass_leaves_block()
    assert len(leaves) == 4 and leaves[:2] == [5.3, 1.2] and leaves[3] == -1.0
    _typed(leaves[2], np.float32, (4,))
    np.testing.assert_array_equal(leaves[2], np.zeros(4))
    assert "apple" not in leaves and "banana" not in leaves
    C = page.MyDataclassContainer
    apple = kiln.tree.structure(C("apple", 1, 2))
    assert apple == kiln.tree.structure(C("apple", 3, 4)) != kiln.tree.structure(C("kiwi", 1, 2))
    assert "('apple',)" in str(apple)
    out = kiln.tree.map(lambda v: v * 10, C("apple", 1, 2))
    assert type(out) is C and (out.name, out.a, out.b) == ("apple", 10, 20)


def test_meta_fields_are_static_under_jit(page):
    """The page: "with jax.jit, meta fields are automatically treated as static arguments"."""
    traces = []

    @kiln.jit
    def f(c):
        traces.append(c.name)
        return c.a * len(c.name) + c.b

    C = page.MyDataclassContainer
    assert float(f(C("apple", 1.0, 2.0))) == 7.0 and float(f(C("apple", 3.0, 2.0))) == 17.0
    assert traces == ["apple"]  # the same name: one trace, the data fields traced
    assert float(f(C("kiwi", 1.0, 2.0))) == 6.0 and traces == ["apple", "kiwi"]  # a new name retraces


def test_unflattening_must_not_validate(page):
    """The page's caution: transformations build instances with placeholder contents, so __init__ and unflatten
    should not validate or convert. The page's RegisteredSpecial does neither: vmap and jacobian rebuild it."""
    s = page.RegisteredSpecial(jnp.arange(3.0), jnp.ones(3))
    out = kiln.vmap(lambda s: page.RegisteredSpecial(s.x * 2, s.y + s.x))(s)
    assert type(out) is page.RegisteredSpecial
    np.testing.assert_array_equal(out.x, 2 * np.arange(3.0))
    np.testing.assert_array_equal(out.y, 1 + np.arange(3.0))
    J = kiln.jacobian(lambda s: s.x * s.y)(s)
    assert type(J) is page.RegisteredSpecial
    np.testing.assert_array_equal(J.x, np.diag(np.ones(3)))
    np.testing.assert_array_equal(J.y, np.diag(np.arange(3.0)))


# ---------------------------------------------- Common pytree gotchas ----------------------------------------------

def test_shapes_are_nodes_not_leaves(page):
    res = page.nodes_for_leaves_block()
    assert isinstance(res, list) and [type(t) for t in res] == [tuple, tuple]
    assert [[a.shape for a in t] for t in res] == [[(2,), (3,)], [(3,), (4,)]]  # ones(2), ones(3), not ones((2, 3))
    for t in res:
        for a in t:
            _typed(a, np.float32, a.shape)
            np.testing.assert_array_equal(a, np.ones(a.shape))
    # the fix the page names: no intermediate tree.map of the shapes
    fixed = kiln.tree.map(lambda x: jnp.ones(x.shape), [jnp.zeros((2, 3)), jnp.zeros((3, 4))])
    assert [a.shape for a in fixed] == [(2, 3), (3, 4)]


def test_none_is_an_empty_node(page):
    assert page.none_leaves_block() == []
    assert page.none_is_leaf_block() == [None, None, None]
    assert kiln.tree.structure(None).num_leaves == 0 and str(kiln.tree.structure(None)) == "PyTreeDef(None)"
    assert kiln.tree.map(lambda x: x + 1, [1, None, 2]) == [2, None, 3]  # the function never sees None


def test_dict_keys_must_be_sortable(page):
    with pytest.raises(ValueError) as info:
        page.unsortable_keys_block()
    msg = str(info.value)
    assert "[1, 'y']" in msg and "sort" in msg  # what and where: the keys that cannot be ordered
    assert "OrderedDict" in msg  # how: the page's way out
    # sorted key order: the structure depends only on the set of keys
    assert kiln.tree.leaves({"b": 1, "a": 2}) == [2, 1]
    assert kiln.tree.structure({"b": 1, "a": 2}) == kiln.tree.structure({"a": 2, "b": 1})
    # "collections.OrderedDict flattens in insertion order without sorting"
    out = kiln.tree.map(lambda x: x + 1, collections.OrderedDict([(1, 7), ("y", 42)]))
    assert type(out) is collections.OrderedDict and list(out.items()) == [(1, 8), ("y", 43)]
    assert kiln.tree.leaves(collections.OrderedDict([("b", 1), ("a", 2)])) == [1, 2]


# ---------------------------------------------- Common pytree patterns ---------------------------------------------

def test_tree_transpose(page):
    episode_steps = [dict(t=1, obs=3), dict(t=2, obs=4)]
    want = {k: [step[k] for step in episode_steps] for k in episode_steps[0]}
    out = page.tree_transpose_block()
    assert out == want == {"obs": [3, 4], "t": [1, 2]} and list(out) == ["obs", "t"]
    # "jax.tree.transpose lets you specify the inner and outer structure explicitly": the same result
    assert kiln.tree.transpose(kiln.tree.structure([0, 0]), kiln.tree.structure({"t": 0, "obs": 0}),
                               episode_steps) == want
    # three steps with nested observations
    steps = [{"t": i, "obs": (i * 10, [i * 100])} for i in range(3)]
    assert page.tree_transpose(steps) == {"t": [0, 1, 2], "obs": ([0, 10, 20], [[0, 100, 200]])}
