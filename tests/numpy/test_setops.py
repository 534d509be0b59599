"""Set operations (union1d, intersect1d, setdiff1d, setxor1d, isin), partition/argpartition, packbits/
unpackbits, block and trim_zeros against NumPy; eager, jit (with size=), grad, vmap, and their errors."""
from __future__ import annotations

import numpy as np
import pytest
from _fd import check_grad, check_vmap, close

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(9)
A = np.array([5, 1, 3, 3, 7, 1, 9], np.int32)
B = np.array([3, 4, 9, 9, 1, 0], np.int32)
FA = rng.integers(0, 6, size=(3, 4)).astype(np.float32)
FB = np.array([1.0, np.nan, 4.0, 2.0], np.float32)


def _padded(values, size, fill):
    values = np.asarray(values)[:size]
    return np.concatenate([values, np.full(size - len(values), fill, values.dtype)])


@pytest.mark.parametrize("name", ["union1d", "intersect1d", "setdiff1d", "setxor1d"])
def test_set_operations(name):
    kfn, nfn = getattr(knp, name), getattr(np, name)
    for a, b in ((A, B), (FA, FB), (A[:0], B)):
        close(kfn(a, b), nfn(a, b))
    expected = nfn(A, B)
    # One compilation for three sizes: padded with fill_value, truncated, padded with the default fill.
    out = kiln.jit(lambda a, b: (kfn(a, b, size=9, fill_value=-1), kfn(a, b, size=2), kfn(a, b, size=8)))(A, B)
    close(out[0], _padded(expected, 9, -1))
    close(out[1], expected[:2])
    close(out[2], _padded(expected, 8, expected.min()))  # the default fill: the result's smallest value
    if name != "union1d":
        ua, ub = np.unique(A), np.unique(B)
        close(kfn(ua, ub.reshape(1, -1), assume_unique=True), nfn(ua, ub, assume_unique=True))
    check_vmap(lambda a, b: kfn(a, b, size=6), np.stack([A, A[::-1]]), np.stack([B, B + 1]))
    with pytest.raises(TypeError, match=rf"{name}: .*pass size="):
        kiln.jit(kfn)(A, B)


def test_intersect1d_return_indices():
    out = knp.intersect1d(A, B, return_indices=True)
    for o, e in zip(out, np.intersect1d(A, B, return_indices=True)):
        close(o, e)
    out = kiln.jit(lambda a, b: knp.intersect1d(a, b, return_indices=True, size=5, fill_value=0))(A, B)
    for o, e in zip(out, np.intersect1d(A, B, return_indices=True)):
        close(o, _padded(e, 5, 0))


def test_isin():
    for method in ("auto", "compare_all", "binary_search", "sort"):
        for invert in (False, True):
            f = kiln.jit(lambda e, t: knp.isin(e, t, invert=invert, method=method))
            close(f(A.reshape(1, 7), B), np.isin(A.reshape(1, 7), B, invert=invert))
            close(f(FA, FB), np.isin(FA, FB, invert=invert))
    close(knp.isin(FB, FB), np.isin(FB, FB))  # NaN is not in anything
    close(knp.isin(A, B[:0]), np.zeros(7, bool))
    close(knp.isin(3, B), True)
    check_vmap(lambda e: knp.isin(e, B), np.stack([A, A + 1]))
    with pytest.raises(ValueError, match="isin: method must be one of"):
        knp.isin(A, B, method="hash")


def test_partition():
    x = rng.normal(size=(3, 8)).astype(np.float32)
    for kth, axis in ((3, -1), (0, 1), (7, 1), (1, 0), (-2, 1)):
        p = kiln.jit(lambda x: knp.partition(x, kth, axis))(x)
        ip = knp.argpartition(x, kth, axis)
        k = kth % x.shape[axis]
        np.testing.assert_allclose(np.take(np.asarray(p), k, axis), np.take(np.partition(x, kth, axis), k, axis))
        lo, hi = np.take(np.asarray(p), np.arange(k), axis), np.take(np.asarray(p), np.arange(k + 1, x.shape[axis]),
                                                                     axis)
        kv = np.take(np.asarray(p), [k], axis)
        assert (lo <= kv).all() and (hi >= kv).all()
        np.testing.assert_array_equal(np.take_along_axis(x, np.asarray(ip), axis), np.asarray(p))
    check_grad(lambda x: knp.partition(x, 2) ** 2, x[0])
    check_vmap(lambda x: knp.partition(x, 2), x)
    with pytest.raises(TypeError, match="kth must be a static int"):
        knp.partition(x, (1, 2))
    with pytest.raises(ValueError, match="kth 9 is out of bounds"):
        knp.partition(x, 9)


def test_packbits_unpackbits():
    b = rng.random((3, 13)) > 0.5
    for axis in (None, 0, 1, -1):
        for order in ("big", "little"):
            close(knp.packbits(b, axis=axis, bitorder=order), np.packbits(b, axis=axis, bitorder=order))
    close(kiln.jit(lambda x: knp.packbits(x, axis=1))(b.astype(np.int32) * 3), np.packbits(b, axis=1))
    u = rng.integers(0, 256, size=(2, 3)).astype(np.uint8)
    for axis in (None, 0, 1):
        for order in ("big", "little"):
            for count in (None, 5, -3, 30):
                close(knp.unpackbits(u, axis=axis, count=count, bitorder=order),
                      np.unpackbits(u, axis=axis, count=count, bitorder=order))
    close(kiln.jit(lambda u: knp.unpackbits(knp.packbits(u > 0, axis=1), axis=1, count=13))(b), b.astype(np.uint8))
    check_vmap(lambda x: knp.packbits(x), b)
    with pytest.raises(TypeError, match="packbits: needs an integer or boolean array"):
        knp.packbits(FA)
    with pytest.raises(TypeError, match="unpackbits: needs a uint8 array"):
        knp.unpackbits(A)
    with pytest.raises(ValueError, match="bitorder must be 'big' or 'little'"):
        knp.packbits(b, bitorder="middle")


def test_block():
    a, b = np.ones((2, 2), np.float32), np.zeros((2, 1), np.float32)
    c = np.full((1, 3), 7.0, np.float32)
    cases = [[[a, b], [c]], [1, 2, np.array([3, 4])], [[1, 2], [3, 4]], [[[a]], [[a]]], [a, b.T.reshape(2)]]
    for case in cases[:4]:
        close(knp.block(case), np.block(case))
    f = kiln.jit(lambda a, b, c: knp.block([[a, b], [c]]))
    close(f(a, b, c), np.block([[a, b], [c]]))
    check_grad(lambda a: knp.block([[a, np.zeros((2, 1))], [np.ones((1, 3))]]) ** 2, a)
    with pytest.raises(ValueError, match="nested to different depths"):
        knp.block([[a], b])
    with pytest.raises(ValueError, match="is an empty list"):
        knp.block([[], [a]])
    with pytest.raises(TypeError, match="block: arrays is a tuple"):
        knp.block((a, b))


def test_trim_zeros():
    x = np.array([0, 0, 1, 2, 0, 3, 0, 0], np.int32)
    for trim in ("fb", "f", "b", "F", "bf"):
        close(knp.trim_zeros(x, trim), np.trim_zeros(x, trim))
    close(knp.trim_zeros(np.zeros(3)), np.trim_zeros(np.zeros(3)))
    m = np.zeros((4, 5), np.float32)
    m[1, 2], m[2, 1] = 1.0, 2.0
    close(knp.trim_zeros(m), np.trim_zeros(m))
    close(knp.trim_zeros(m, axis=1), np.trim_zeros(m, axis=1))
    with pytest.raises(TypeError, match="trim_zeros: the result's shape depends on the values"):
        kiln.jit(knp.trim_zeros)(x)
    with pytest.raises(ValueError, match="trim must be a combination of 'f' and 'b'"):
        knp.trim_zeros(x, "")
