"""JAX's docs page docs/automatic-differentiation.md under kiln and under JAX gives the same results and prints the
same lines (the against_jax session).

The kiln side is tests/examples/jax_ported/docs_automatic_differentiation.py; the JAX side is the same source with
JAX's imports put back. The oracles (central differences, the NumPy Threefry, the page's values) are in
test_docs_automatic_differentiation.py; this checks that the two libraries agree block by block: what each block
prints (every line, the arrays' reprs included), the values it returns (dtypes, weak types, shapes), the keys'
data, the derivatives at other points and the exception classes of grad's argument errors. No differences.
"""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, outcome, quiet  # noqa: E402

import kiln  # noqa: E402


@pytest.fixture(scope="module")
def both():
    return load("docs_automatic_differentiation"), load("docs_automatic_differentiation", "jax")


@pytest.fixture(scope="module")
def runs(both):
    """Every block in the page's order (the port's `run`), under each library: (results, printed)."""
    k, j = both
    return quiet(k.run), quiet(j.run)


def test_the_pages_order_prints_the_same_lines(runs):
    (_, kout), (_, jout) = runs
    assert kout == jout and len(kout.splitlines()) == 19


@pytest.mark.parametrize("block", ["higher_order_tanh", "polynomial_derivatives", "argnums", "loss2",
                                   "value_and_grad", "check_grads"])
def test_block_results(runs, block):
    (kres, _), (jres, _) = runs
    assert_same(kres[block], jres[block], allow_empty=True)


def test_draws_and_keys(runs):
    (kres, _), (jres, _) = runs
    (kkey, kW, kb), (jkey, jW, jb) = kres["init"], jres["init"]
    assert_same((kkey, kW, kb), (jkey, jW, jb), rtol=0)
    kkey, *kvals = kres["numerical_differences"]
    jkey, *jvals = jres["numerical_differences"]
    assert_same(kkey, jkey, rtol=0)
    assert_same(kvals, jvals, rtol=1e-6)


def test_grad_functions_at_other_points(both, runs):
    k, j = both
    grad_tanh_k, grad_tanh_j = runs[0][0]["grad_tanh"], runs[1][0]["grad_tanh"]
    for x in (-1.5, 0.0, 0.3, np.float32(2.5)):
        assert_same(grad_tanh_k(x), grad_tanh_j(x))
        assert_same([k.dfdx(x), k.d2fdx(x), k.d3fdx(x), k.d4fdx(x)], [j.dfdx(x), j.d2fdx(x), j.d3fdx(x), j.d4fdx(x)])
    W, b = np.array([0.5, -1.0, 2.0], np.float32), np.float32(-0.25)
    assert_same(kiln.value_and_grad(k.loss, (0, 1))(W, b), jax.value_and_grad(j.loss, (0, 1))(W, b))
    assert_same(kiln.grad(k.loss2)({"W": W, "b": b}), jax.grad(j.loss2)({"W": W, "b": b}))


def test_argnums_errors(both):
    k, j = both
    W, b = np.ones(3, np.float32), np.float32(1.0)
    for args, argnums in (((W, b), 2), ((W, 1), 1)):
        (kerr, _), (jerr, _) = outcome(lambda: kiln.grad(k.loss, argnums)(*args)), outcome(
            lambda: jax.grad(j.loss, argnums)(*args))
        assert isinstance(jerr, TypeError)
        assert_same_exception(kerr, jerr)
