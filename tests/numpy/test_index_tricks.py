"""Index helpers (unravel_index, ravel_multi_index, ix_, mgrid/ogrid/r_/c_, tril/triu/diag/mask indices,
fill_diagonal) and selections (choose, compress, extract, place, put) against NumPy; eager, jit, grad, vmap,
and their errors."""
from __future__ import annotations

import numpy as np
import pytest
from _fd import check_grad, check_vmap, close

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(11)
X = np.arange(12, dtype=np.int32).reshape(3, 4)
F = rng.normal(size=(3, 4)).astype(np.float32)
F64 = F.astype(np.float64)  # closed over by the functions whose gradients are checked (in float64)


def test_unravel_ravel_multi_index():
    flat = np.array([0, 5, 11, 7], np.int32)
    for fn in (knp.unravel_index, kiln.jit(knp.unravel_index, static_argnums=1)):
        for o, e in zip(fn(flat, (3, 4)), np.unravel_index(flat, (3, 4))):
            close(o, e, dtype=np.int32)
    # As JAX: negative indices count from the end, out-of-bounds ones are clipped.
    for o, e in zip(knp.unravel_index(np.array([-1, -12, 12, -13]), (3, 4)), ([2, 0, 2, 0], [3, 0, 3, 0])):
        close(o, np.array(e))
    mi = (np.array([0, 2, 1]), np.array([3, 0, 1]))
    close(knp.ravel_multi_index(mi, (3, 4)), np.ravel_multi_index(mi, (3, 4)))
    close(knp.ravel_multi_index(mi, (3, 4), order="F"), np.ravel_multi_index(mi, (3, 4), order="F"))
    bad = (np.array([5, -1]), np.array([-1, 9]))
    for mode in ("clip", "wrap"):
        out = kiln.jit(lambda a, b: knp.ravel_multi_index((a, b), (3, 4), mode=mode))(*bad)
        close(out, np.ravel_multi_index(bad, (3, 4), mode=mode))
    assert knp.ravel_multi_index(mi, (3, 4), dtype=np.int16).dtype == np.int16
    check_vmap(lambda i: knp.unravel_index(i, (3, 4)), flat[:, None])
    with pytest.raises(ValueError, match="out of bounds.*use mode='wrap' or mode='clip'"):
        knp.ravel_multi_index(bad, (3, 4))
    with pytest.raises(TypeError, match="mode='raise' checks the indices"):  # a ConcretizationTypeError
        kiln.jit(lambda a, b: knp.ravel_multi_index((a, b), (3, 4)))(*mi)
    with pytest.raises(ValueError, match="cannot hold the flat indices"):
        knp.ravel_multi_index(mi, (300, 400), dtype=np.int8)
    with pytest.raises(ValueError, match="mode must be"):
        knp.ravel_multi_index(mi, (3, 4), mode="nope")
    with pytest.raises(TypeError, match="unravel_index: indices must be integers"):
        knp.unravel_index(np.array([1.0]), (3, 4))


def test_ix():
    rows, cols = np.array([0, 2]), np.array([True, False, True, True])
    out = knp.ix_(rows, cols)
    for o, e in zip(out, np.ix_(rows, cols)):
        close(o, e)
    close(knp.asarray(X)[knp.ix_(rows, np.array([3, 1]))], X[np.ix_(rows, [3, 1])])
    with pytest.raises(ValueError, match="ix_: each argument must be 1-D"):
        knp.ix_(X)


def test_grids_and_concatenators():
    close(knp.mgrid[0:3, 0:1:4j], np.mgrid[0:3, 0:1:4j], dtype=np.float32)
    close(knp.mgrid[1:7:2], np.mgrid[1:7:2], dtype=np.int32)
    for o, e in zip(knp.ogrid[0:2, 1:4], np.ogrid[0:2, 1:4]):
        close(o, e)
    close(knp.r_[1:4, 0, np.array([7, 8])], np.r_[1:4, 0, np.array([7, 8])])
    close(knp.r_[0:1:3j, np.array([5.0])], np.r_[0:1:3j, [5.0]])
    close(knp.c_[np.array([1, 2]), np.array([3, 4])], np.c_[np.array([1, 2]), np.array([3, 4])])
    close(knp.r_["0,2,0", [1, 2, 3], [4, 5, 6]], np.r_["0,2,0", [1, 2, 3], [4, 5, 6]])
    close(knp.r_["-1,3,1", np.ones((2, 2))], np.r_["-1,3,1", np.ones((2, 2))])
    close(knp.r_["r", [1, 2, 3]], [[1, 2, 3]])  # NumPy makes a np.matrix here; kiln (as JAX) an array
    close(knp.r_["c", [1, 2, 3]], [[1], [2], [3]])
    close(knp.c_[np.ones((2, 2)), np.zeros((2, 1))], np.c_[np.ones((2, 2)), np.zeros((2, 1))])
    # Arrays in r_ may be traced; slice bounds may not.
    out = kiln.jit(lambda a: knp.r_[a, 0:2])(np.array([7, 8]))
    close(out, np.r_[[7, 8], 0:2])
    with pytest.raises(ValueError, match="could not understand the directive"):
        knp.r_["x", [1]]
    with pytest.raises(ValueError, match="a string directive must come first"):
        knp.r_[[1], "r"]
    with pytest.raises(TypeError, match="the slice stop must be static"):
        kiln.jit(lambda n: knp.mgrid[0:n])(3)
    with pytest.raises(TypeError, match="mgrid: index with slices"):
        knp.mgrid[1, 2]


def test_triangle_and_diagonal_indices():
    for o, e in zip(knp.tril_indices(4, -1, 3), np.tril_indices(4, -1, 3)):
        close(o, e, dtype=np.int32)
    for o, e in zip(knp.triu_indices(3, 1), np.triu_indices(3, 1)):
        close(o, e)
    for o, e in zip(knp.tril_indices_from(np.ones((2, 5)), 1), np.tril_indices_from(np.ones((2, 5)), 1)):
        close(o, e)
    for o, e in zip(knp.triu_indices_from(knp.ones((3, 2))), np.triu_indices_from(np.ones((3, 2)))):
        close(o, e)
    for o, e in zip(knp.diag_indices(3, 3), np.diag_indices(3, 3)):
        close(o, e)
    for o, e in zip(knp.diag_indices_from(np.ones((2, 2, 2))), np.diag_indices_from(np.ones((2, 2, 2)))):
        close(o, e)
    for o, e in zip(knp.mask_indices(4, knp.triu, 1), np.mask_indices(4, np.triu, 1)):
        close(o, e)
    out = kiln.jit(lambda: knp.mask_indices(3, knp.tril, size=8))()
    close(out[0], np.r_[np.mask_indices(3, np.tril)[0], 0, 0])
    with pytest.raises(ValueError, match="tril_indices_from: needs a 2-D array"):
        knp.tril_indices_from(np.ones(3))
    with pytest.raises(ValueError, match="all dimensions must have one size"):
        knp.diag_indices_from(np.ones((2, 3)))


def test_fill_diagonal():
    cases = [(np.zeros((3, 3)), 5.0, False), (np.zeros((5, 3)), np.array([1.0, 2.0]), True),
             (np.zeros((5, 3)), np.array([1.0, 2.0]), False), (np.zeros((2, 4)), 7.0, False),
             (np.zeros((3, 3, 3)), np.array([1.0, 2.0, 3.0]), False)]
    for a, v, wrap in cases:
        expected = a.copy()
        np.fill_diagonal(expected, v, wrap=wrap)
        fn = kiln.jit(lambda a, v: knp.fill_diagonal(a, v, wrap=wrap, inplace=False))
        close(fn(a.astype(np.float32), np.asarray(v, np.float32)), expected)
    check_grad(lambda v: knp.fill_diagonal(F64, v, inplace=False) ** 2, np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="fill_diagonal: kiln arrays are immutable.*inplace=False"):
        knp.fill_diagonal(F, 1.0)
    with pytest.raises(ValueError, match="fill_diagonal: all dimensions must have one size"):
        knp.fill_diagonal(np.zeros((2, 2, 3)), 1.0, inplace=False)


def test_choose():
    a = np.array([[0, 1, 2, 1], [2, 0, 1, 0], [1, 1, 0, 2]], np.int32)
    choices = [F, np.full((4,), -1.0, np.float32), np.float32(2.0)]
    close(knp.choose(a, choices), np.choose(a, choices))
    for mode in ("wrap", "clip"):
        idx = a * 2 - 1
        out = kiln.jit(lambda i, c0: knp.choose(i, [c0, choices[1], choices[2]], mode=mode))(idx, F)
        close(out, np.choose(idx, choices, mode=mode))
    check_grad(lambda c0: knp.choose(a, [c0, -1.0, 2.0], mode="clip") ** 2, F)
    check_vmap(lambda i, c: knp.choose(i, [c, -c], mode="clip"), a, F)
    with pytest.raises(ValueError, match=r"an entry of a is outside \[0, 3\)"):
        knp.choose(a + 1, choices)
    with pytest.raises(TypeError, match="mode='raise' checks the indices"):
        kiln.jit(lambda i: knp.choose(i, choices))(a)


def test_compress_extract():
    cond = np.array([True, False, True])
    close(knp.compress(cond, X, axis=0), np.compress(cond, X, axis=0))
    close(knp.compress(np.array([0, 1, 1, 0, 0, 1]), X), np.compress([0, 1, 1, 0, 0, 1], X))
    close(knp.compress(np.array([True, False, True, False, False]), X, axis=1),
          np.compress([True, False, True, False, False], X, axis=1))
    out = kiln.jit(lambda c, x: knp.compress(c, x, axis=1, size=3, fill_value=-7))(np.array([1, 0, 1, 0]) > 0, X)
    close(out, np.concatenate([np.compress([1, 0, 1, 0], X, axis=1), np.full((3, 1), -7)], axis=1))
    close(knp.extract(X % 3 == 0, X), np.extract(X % 3 == 0, X))
    out = kiln.jit(lambda x: knp.extract(x % 5 == 0, x, size=4, fill_value=-1))(X)
    close(out, [0, 5, 10, -1])
    check_grad(lambda x: knp.compress(np.array([True, False, True]), x, axis=0, size=3) ** 2, F)
    check_vmap(lambda x: knp.extract(x > 0, x, size=5), F)
    with pytest.raises(TypeError, match="compress: the number of nonzero elements.*Pass size="):
        kiln.jit(lambda c, x: knp.compress(c, x))(cond, X[:, 0])
    with pytest.raises(ValueError, match="compress: condition must be 1-D"):
        knp.compress(np.ones((2, 2), bool), X)
    with pytest.raises(ValueError, match="condition has 5 entries for an axis of length 3"):
        knp.compress(np.ones(5, bool), X, axis=0)


def test_place_put():
    expected = X.copy()
    np.place(expected, expected % 2 == 1, [-1, -2])
    close(knp.place(X, X % 2 == 1, np.array([-1, -2]), inplace=False), expected)
    out = kiln.jit(lambda x: knp.place(x, x > 8, np.array([0, 1]), inplace=False))(X)
    expected = X.copy()
    np.place(expected, expected > 8, [0, 1])
    close(out, expected)
    for mode, ind in ((None, np.array([0, 5, -1])), ("clip", np.array([0, 15, -3])), ("wrap", np.array([1, 14, -2]))):
        expected = X.copy()
        np.put(expected, ind, [7, 8], mode=mode or "raise")
        out = kiln.jit(lambda x, i: knp.put(x, i, np.array([7, 8]), mode=mode, inplace=False))(X, ind)
        close(out, expected)
    close(knp.put(X, np.array([0, 99]), 5, inplace=False).ravel()[:2], [5, 1])  # out of bounds: dropped, as JAX
    check_grad(lambda v: knp.put(F64, np.array([1, 6]), v, inplace=False) ** 2, np.array([1.0, -2.0]))
    check_grad(lambda v: knp.place(F64, F64 > 0, v, inplace=False) ** 2, np.array([1.0, -2.0]))
    check_vmap(lambda x: knp.put(x, np.array([0, 2]), x[1], inplace=False), F)
    with pytest.raises(ValueError, match="put: kiln arrays are immutable"):
        knp.put(X, np.array([0]), 1)
    with pytest.raises(ValueError, match="place: kiln arrays are immutable"):
        knp.place(X, X > 0, np.array([1]))
    with pytest.raises(NotImplementedError, match="mode='raise' is not supported"):
        knp.put(X, np.array([0]), 1, mode="raise", inplace=False)
    with pytest.raises(ValueError, match="place: mask must have arr's shape"):
        knp.place(X, np.ones(3, bool), np.array([1]), inplace=False)
