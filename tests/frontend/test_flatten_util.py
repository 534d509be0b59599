"""kiln.flatten_util.ravel_pytree against NumPy's concatenation."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln.flatten_util import ravel_pytree


def test_ravel_and_unravel_round_trip():
    tree = {"w": np.arange(6.0, dtype=np.float32).reshape(2, 3), "b": (np.arange(2, dtype=np.int32), 2.5)}
    flat, unravel = ravel_pytree(tree)
    np.testing.assert_array_equal(flat, np.concatenate([[0, 1], [2.5], np.arange(6.0)]))  # dict keys sorted
    assert flat.dtype == np.float32
    back = unravel(flat * 2)
    assert back["b"][0].dtype == np.int32 and back["w"].shape == (2, 3)
    np.testing.assert_array_equal(back["w"], 2 * tree["w"])
    np.testing.assert_array_equal(back["b"][0], [0, 2])
    empty, unravel_empty = ravel_pytree([])
    assert empty.shape == (0,) and unravel_empty(empty) == []
    c, unc = ravel_pytree([np.ones(2, np.float32), knp.ones(1, np.complex64)])
    assert c.dtype == np.complex64 and unc(c * 1j)[0].dtype == np.float32  # the real part of a real leaf


def test_transformations():
    tree = {"a": np.ones(2, np.float32), "b": np.float32(3.0)}
    np.testing.assert_array_equal(kiln.jit(lambda t: ravel_pytree(t)[0])(tree), [1, 1, 3])
    g = kiln.grad(lambda t: (ravel_pytree(t)[0] ** 2).sum())(tree)
    np.testing.assert_allclose(g["a"], [2, 2])
    np.testing.assert_allclose(g["b"], 6)
    flat, unravel = ravel_pytree(tree)
    np.testing.assert_allclose(kiln.grad(lambda f: unravel(f)["b"] * 2)(flat), [0, 0, 2])
    batched = kiln.vmap(lambda a: ravel_pytree({"x": a, "y": a * 2})[0])(np.arange(4.0).reshape(2, 2))
    np.testing.assert_array_equal(batched, [[0, 1, 0, 2], [2, 3, 4, 6]])


def test_unravel_errors():
    _, unravel = ravel_pytree([np.ones(2, np.float32)])
    with pytest.raises(ValueError, match=r"expected a 1-D array of length 2, got shape \(3,\)"):
        unravel(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"expected an array of dtype float32 .*got int32"):
        unravel(np.ones(2, np.int32))
