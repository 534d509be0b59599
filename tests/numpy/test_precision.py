"""kiln.numpy's products accept ``precision=`` (and ``preferred_element_type=``) as JAX's do."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax

P = lax.Precision
PRECISIONS = [None, "highest", P.HIGHEST, P.DEFAULT, (P.HIGH, P.HIGHEST), ("default", "highest")]

rng = np.random.default_rng(1)
A = rng.normal(size=(3, 4)).astype(np.float32)
B = rng.normal(size=(4, 5)).astype(np.float32)
C = rng.normal(size=(5, 2)).astype(np.float32)
U = rng.normal(size=(4,)).astype(np.float32)
W = rng.normal(size=(4,)).astype(np.float32)

CASES = {
    "dot": (lambda **k: knp.dot(A, B, **k), A @ B),
    "matmul": (lambda **k: knp.matmul(A, B, **k), A @ B),
    "vdot": (lambda **k: knp.vdot(U, W, **k), np.vdot(U, W)),
    "inner": (lambda **k: knp.inner(A, U, **k), np.inner(A, U)),
    "tensordot": (lambda **k: knp.tensordot(A, B, 1, **k), np.tensordot(A, B, 1)),
    "vecdot": (lambda **k: knp.vecdot(A, A, **k), (A * A).sum(-1)),
    "einsum": (lambda **k: knp.einsum("ij,jk->ik", A, B, **k), A @ B),
    "linalg.matmul": (lambda **k: knp.linalg.matmul(A, B, **k), A @ B),
    "linalg.tensordot": (lambda **k: knp.linalg.tensordot(A, B, axes=1, **k), np.tensordot(A, B, 1)),
    "linalg.vecdot": (lambda **k: knp.linalg.vecdot(A, A, axis=0, **k), (A * A).sum(0)),
}


@pytest.mark.parametrize("precision", PRECISIONS, ids=repr)
@pytest.mark.parametrize("name", list(CASES))
def test_products_accept_precision(name, precision):
    fn, expected = CASES[name]
    np.testing.assert_allclose(np.asarray(fn(precision=precision)), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(CASES))
def test_products_accept_preferred_element_type(name):
    fn, expected = CASES[name]
    out = fn(precision="highest", preferred_element_type=np.float32)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(CASES))
def test_bad_precision_names_the_function(name):
    fname = name.removeprefix("linalg.")  # the linalg functions are kiln.numpy's
    with pytest.raises(ValueError, match=rf"kiln\.numpy\.{fname}: precision='fast' is not a "
                                         r"precision; use None, one of \[.*'highest'.*\], a kiln\.lax\.Precision"):
        CASES[name][0](precision="fast")


@pytest.mark.parametrize("precision", PRECISIONS, ids=repr)
def test_multi_dot(precision):
    np.testing.assert_allclose(np.asarray(knp.linalg.multi_dot([A, B, C], precision=precision)),
                               np.linalg.multi_dot([A, B, C]), rtol=1e-5, atol=1e-5)
    x = rng.normal(size=(3,)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(knp.linalg.multi_dot([x, A, B, C[:, 0]])),
                               np.linalg.multi_dot([x, A, B, C[:, 0]]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(knp.linalg.multi_dot([A, B])), A @ B, rtol=1e-5, atol=1e-5)


def test_multi_dot_errors():
    with pytest.raises(ValueError, match=r"kiln\.numpy\.linalg\.multi_dot: needs at least two arrays, got 1"):
        knp.linalg.multi_dot([A])
    with pytest.raises(ValueError, match=r"kiln\.numpy\.linalg\.multi_dot: array 1 must be 2-D, got shape \(4,\)"):
        knp.linalg.multi_dot([A, U, B])
    with pytest.raises(TypeError, match=r"kiln\.numpy\.dot: shapes \(3, 4\) and \(5, 2\) are not aligned"):
        knp.linalg.multi_dot([A, C])
    with pytest.raises(ValueError, match=r"kiln\.numpy\.linalg\.multi_dot: precision='x'"):
        knp.linalg.multi_dot([A, B], precision="x")


@pytest.mark.parametrize("name,fn", [
    ("dot", lambda: knp.dot(A, B)), ("matmul", lambda: knp.asarray(A) @ knp.asarray(B)),
    ("vdot", lambda: knp.vdot(U, U)), ("inner", lambda: knp.inner(U, U)), ("vecdot", lambda: knp.vecdot(U, U)),
    ("tensordot", lambda: knp.tensordot(A, B, 1)), ("einsum", lambda: knp.einsum("ij,jk", A, B))])
def test_products_ask_dot_general_for_their_result_dtype(name, fn):
    # As JAX's jnp.dot and its kin: preferred_element_type is the operands' dtype unless given, which the
    # printed jaxpr shows (the program and the result are the same).
    text = str(kiln.make_jaxpr(fn)())
    assert "preferred_element_type=float32" in text, text


def test_tensordot_bad_axes_is_a_type_error():
    with pytest.raises(TypeError, match=r"kiln\.numpy\.tensordot: axes must be an int or a pair of axis sequences"):
        knp.tensordot(A, B, axes=(1, 2, 3))
