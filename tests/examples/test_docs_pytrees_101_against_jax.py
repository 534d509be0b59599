"""JAX's docs page docs/new_docs/101/pytrees.md under kiln and under JAX give the same results (the against_jax
session).

The kiln side is tests/examples/jax_ported/docs_pytrees_101.py; the JAX side is the same source with JAX's imports
put back. The oracles and the page's claims are in test_docs_pytrees_101.py; this checks that the two libraries agree
block by block: what the blocks print (memory addresses and the ported module's name masked), the trees they return
(containers, leaf types, dtypes, weak types, shapes; values bit for bit, the trained MLP to float32 rounding), the
treedefs' and key paths' text, the in_axes sketches' results and the exception classes of the blocks that raise.
The MLP is the page's (widths 1-128-128-1, 100 eager steps), from the same seed of NumPy's global generator on both
sides.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet  # noqa: E402

import kiln  # noqa: E402


@pytest.fixture(scope="module")
def both():
    return load("docs_pytrees_101"), load("docs_pytrees_101", "jax")


def _masked(text: str) -> str:
    text = re.sub(r" at 0x[0-9a-f]+", " at 0x?", text)
    return re.sub(r"\bjax(_ported)?_docs_", "docs_", text)


def _both(k, j, name, *args, kargs=None, jargs=None):
    """((kiln's result, its printed text), (JAX's, its text)) of the block ``name``, addresses masked."""
    (kr, kout), (jr, jout) = quiet(getattr(k, name), *(kargs or args)), quiet(getattr(j, name), *(jargs or args))
    return (kr, _masked(kout)), (jr, _masked(jout))


def _same(k_res, j_res, rtol=0.0):
    assert_same(k_res, j_res, rtol, rtol, allow_empty=True)


@pytest.mark.parametrize("name", [
    "leaves_block", "flatten_block", "tree_map_block", "tree_map_two_trees_block", "grad_of_dict_block",
    "key_paths_block", "registered_tree_map_block", "registered_grad_block", "namedtuple_leaves_block",
    "dataclass_leaves_block", "nodes_for_leaves_block", "none_leaves_block", "none_is_leaf_block",
    "tree_transpose_block"])
def test_blocks(both, name):
    k, j = both
    (kr, kout), (jr, jout) = _both(k, j, name)
    assert kout == jout
    assert _masked(repr(kr)) == _masked(repr(jr))
    if name == "flatten_block":
        (kp, kl, kt), (jp, jl, jt) = kr, jr
        _same((kp, kl), (jp, jl))
        assert str(kt) == str(jt) and kt.num_leaves == jt.num_leaves
    elif name == "registered_grad_block":
        assert type(kr).__name__ == type(jr).__name__ == "RegisteredSpecial"
        _same((kr.x, kr.y), (jr.x, jr.y))
    elif name != "registered_tree_map_block":  # (RegisteredSpecial is registered in one library each)
        _same(kr, jr)


def test_treedefs(both):
    k, j = both
    for make in (lambda m: m.RegisteredSpecial(0, 1), lambda m: m.MyDataclassContainer("apple", 1, 2),
                 lambda m: m.MyOtherContainer("Alice", 1, 2), lambda m: m.ATuple("foo"),
                 lambda m: [1, {"k1": 2, "k2": (3, 4)}, None]):
        kt, jt = kiln.tree.structure(make(k)), jax.tree.structure(make(j))
        assert _masked(str(kt)) == _masked(str(jt)) and kt.num_leaves == jt.num_leaves
    assert str(kiln.tree.structure(k.Special(0, 1))) == str(jax.tree.structure(j.Special(0, 1))) == "PyTreeDef(*)"


def test_blocks_that_raise(both):
    k, j = both
    for name in ("special_tree_map_block", "unsortable_keys_block"):
        (kerr, _), (jerr, _) = outcome(getattr(k, name)), outcome(getattr(j, name))
        assert isinstance(jerr, Exception), name
        assert_same_exception(kerr, jerr)
    assert str(outcome(k.special_tree_map_block)[0]) == str(outcome(j.special_tree_map_block)[0])
    # the page's "a problem as soon as a transformation tries to treat them as array data"
    for k_t, j_t in ((kiln.jit, jax.jit), (kiln.grad, jax.grad)):
        (kerr, _) = outcome(k_t(lambda c: c.a * 2.0), k.MyOtherContainer("Alice", 1.0, 2.0))
        (jerr, _) = outcome(j_t(lambda c: c.a * 2.0), j.MyOtherContainer("Alice", 1.0, 2.0))
        assert isinstance(jerr, TypeError)
        assert_same_exception(kerr, jerr)


def test_the_mlp(both):
    k, j = both
    state = np.random.get_state()
    try:
        np.random.seed(0)
        kparams0 = k.init_block()
        np.random.seed(0)
        jparams0 = j.init_block()
        _same(kparams0, jparams0)
        assert k.shapes_block(kparams0) == j.shapes_block(jparams0)
        np.random.seed(1)
        ((kp, kx, ky), kout) = quiet(k.training_block, kparams0)
        np.random.seed(1)
        ((jp, jx, jy), jout) = quiet(j.training_block, jparams0)
    finally:
        np.random.set_state(state)
    _same((kx, ky), (jx, jy))
    _same(kp, jp, rtol=1e-5)
    np.testing.assert_allclose(float(kout), float(jout), rtol=1e-6)
    _same(kiln.jit(k.update)(kparams0, kx, ky), jax.jit(j.update)(jparams0, jx, jy), rtol=1e-6)


def test_in_axes_sketches(both):
    k, j = both

    def f(a, d):
        return a * d["k1"] + d["k2"]
    a, k1 = np.array([1.0, -2.0, 0.5], np.float32), np.array([0.5, 1.5, -1.0], np.float32)
    k2_broadcast, k2_mapped = np.array([10.0, 20.0], np.float32), np.arange(6.0, dtype=np.float32).reshape(3, 2)
    _same(k.in_axes_sketch(kiln.vmap, f)(a, {"k1": k1, "k2": k2_broadcast}),
          j.in_axes_sketch(jax.vmap, f)(a, {"k1": k1, "k2": k2_broadcast}))
    for kf, jf in zip(k.in_axes_prefix_sketch(kiln.vmap, f), j.in_axes_prefix_sketch(jax.vmap, f)):
        _same(kf(a, {"k1": k1, "k2": k2_mapped}), jf(a, {"k1": k1, "k2": k2_mapped}))
    # k2 of the wrong batch size under a prefix spec: both refuse, with the same class of error
    (kerr, _) = outcome(k.in_axes_prefix_sketch(kiln.vmap, f)[1], a, {"k1": k1, "k2": k2_broadcast})
    (jerr, _) = outcome(j.in_axes_prefix_sketch(jax.vmap, f)[1], a, {"k1": k1, "k2": k2_broadcast})
    assert isinstance(jerr, ValueError)
    assert_same_exception(kerr, jerr)


def test_meta_fields_under_jit(both):
    k, j = both
    results = {}
    for lib, m in ((kiln, k), (jax, j)):
        traces = []

        def f(c, traces=traces):
            traces.append(c.name)
            return c.a * len(c.name) + c.b
        g = lib.jit(f)
        C = m.MyDataclassContainer
        results[lib.__name__] = [g(C("apple", 1.0, 2.0)), g(C("apple", 3.0, 2.0)), g(C("kiwi", 1.0, 2.0))], traces
    (kr, kt), (jr, jt) = results["kiln"], results["jax"]
    _same(kr, jr)
    assert kt == jt == ["apple", "kiwi"]
