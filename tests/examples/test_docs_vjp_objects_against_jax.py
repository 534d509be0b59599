"""JAX's docs/new_docs/301/vjp-objects.md under kiln and under JAX gives the same results (the against_jax session).

The kiln side is tests/examples/jax_ported/docs_vjp_objects.py; the JAX side is the same source with JAX's imports
put back. The oracles are in test_docs_vjp_objects.py; this checks that the two libraries agree cell by cell:
values (with their dtypes, weak types and shapes), the printed text, and the VJP objects' saved state (``args_res``
and ``opaque_residuals``, leaf for leaf; both libraries save the same two computed residuals for ``layer``).

JAX 0.10.2, installed here, predates the page's second half (``saveable_args``, ``NotSaveable``,
``structured_residuals``): its cells from "Marking arguments not saveable" on raise a TypeError there
(``vjp() got an unexpected keyword argument 'saveable_args'``). Those cells are compared only with a JAX that has
``saveable_args``; with 0.10.2 the test checks that this keyword is JAX's only failure, then skips.
Deliberate difference: the message of a VJP function applied before its arguments are restored (kiln's is its own;
both are ValueErrors).
"""
from __future__ import annotations

import inspect

import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet  # noqa: E402

import kiln  # noqa: E402

JAX_HAS_SAVEABLE_ARGS = "saveable_args" in inspect.signature(jax.vjp).parameters


@pytest.fixture(scope="module")
def k():
    return load("docs_vjp_objects")


@pytest.fixture(scope="module")
def j():
    return load("docs_vjp_objects", "jax")


@pytest.fixture(scope="module")
def split(k, j):
    return quiet(k.run_split), quiet(j.run_split)


def _assert_same_vjp(kv, jv):
    """Two VJP objects with the same saved state."""
    assert type(kv).__name__ == type(jv).__name__ == "VJP"
    assert_same(kv.args_res, jv.args_res, 0, 0, allow_empty=True)
    assert_same(kv.opaque_residuals, jv.opaque_residuals, 1e-6, 1e-7)
    assert len(jax.tree_util.tree_leaves(jv)) == len(kiln.tree_util.tree_leaves(kv)) == \
        len(jax.tree_util.tree_leaves(jv.args_res)) + len(jv.opaque_residuals)


def test_split_cells_print_the_same(split):
    (_, ktext), (_, jtext) = split
    assert ktext == jtext


@pytest.mark.parametrize("key", ["W1", "W2", "x0", "x1", "x2", "dW2", "dx1", "dW1", "dx0", "dW1_ref", "dW2_ref",
                                 "close"])
def test_split_cell_values(split, key):
    (kout, _), (jout, _) = split
    assert_same(kout[key], jout[key], 1e-6, 1e-7)


def test_split_cell_vjp_objects(split):
    (kout, _), (jout, _) = split
    for key in ("res1", "res2"):
        _assert_same_vjp(kout[key], jout[key])
    *_, ky, kres, kdW1, kdx0 = kout["prepackaged"]
    *_, jy, jres, jdW1, jdx0 = jout["prepackaged"]
    assert_same((ky, kdW1, kdx0), (jy, jdW1, jdx0), 1e-6, 1e-7)
    _assert_same_vjp(kres, jres)  # jax.fwd_and_bwd's residuals: the VJP object in both
    (ky, kvjp), (jy, jvjp) = kout["args_res"], jout["args_res"]
    assert_same(ky, jy, 1e-6, 1e-7)
    _assert_same_vjp(kvjp, jvjp)
    assert repr(kvjp.args_res) == repr(jvjp.args_res)


def test_compile_once(split):
    (kout, _), (jout, _) = split
    for out in (kout, jout):
        assert out["fwd"]._cache_size() == out["bwd"]._cache_size() == 1


def test_saveable_args_cells(k, j, split):
    (ksplit, _), (jsplit, _) = split
    (kout, ktext), (jout, jtext) = outcome(k.run_saveable, ksplit), outcome(j.run_saveable, jsplit)
    assert not isinstance(kout, BaseException), kout
    if not JAX_HAS_SAVEABLE_ARGS:
        assert isinstance(jout, TypeError) and "unexpected keyword argument 'saveable_args'" in str(jout), jout
        pytest.skip(f"JAX {jax.__version__} predates vjp's saveable_args (the page's second half)")
    assert_same_exception(kout["forgot"], jout["forgot"])
    kerr, jerr = str(kout["forgot"]), str(jout["forgot"])
    assert ktext.replace(kerr, "<error>") == jtext.replace(jerr, "<error>")
    for key in ("leaves", "restore", "saved_args_res"):
        assert_same(kout[key], jout[key], 1e-6, 1e-7, allow_empty=True)
    for key in ("x1", "x2", "dW2", "dx1", "dW1", "dx0", "close"):
        assert_same(kout["light"][key], jout["light"][key], 1e-6, 1e-7)
    for key in ("res1", "res2"):
        _assert_same_vjp(kout["light"][key], jout["light"][key])
    kd, ksaved, kgrad, kshapes = kout["fine_print"]
    jd, jsaved, jgrad, jshapes = jout["fine_print"]
    assert kshapes == jshapes and repr(ksaved) == repr(jsaved)
    assert_same(kgrad, jgrad, 0, 0)
