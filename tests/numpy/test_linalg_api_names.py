"""matvec, vecmat and the array API's kiln.numpy.linalg names (cross, diagonal, outer, trace, tensorinv,
tensorsolve) against NumPy; eager, jit, grad, vmap, and their errors."""
from __future__ import annotations

import numpy as np
import pytest
from _fd import check_grad, check_vmap, close
from kiln.frontend.core.errors import ShapeError

import kiln
import kiln.numpy as knp

L = knp.linalg
rng = np.random.default_rng(17)
A = rng.normal(size=(2, 3, 4)).astype(np.float32)
V4 = rng.normal(size=4).astype(np.float32)
W = (rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))).astype(np.complex64)


def test_matvec_vecmat():
    f = lambda a, v, w: (knp.matvec(a, v), knp.vecmat(w, a), knp.vecmat(a[0, 0, :3], a),
                         knp.matvec(a[..., :3], a[:, :, 0]))
    expected = (np.matvec(A, V4), np.vecmat(W, A), np.vecmat(A[0, 0, :3], A), np.matvec(A[..., :3], A[:, :, 0]))
    for fn in (f, kiln.jit(f)):
        for o, e in zip(fn(A, V4, W), expected):
            close(o, e, rtol=1e-5, atol=1e-6)
    I = rng.integers(-3, 3, size=(3, 2)).astype(np.int32)
    close(knp.matvec(I, np.array([1, 2], np.int32)), np.matvec(I, np.array([1, 2])), dtype=np.int32)
    check_grad(lambda v: knp.matvec(A.astype(np.float64), v) ** 2, V4)
    check_grad(lambda a: knp.vecmat(np.arange(3.0), a), A[0])
    check_vmap(knp.matvec, A, np.stack([V4, -V4]))
    with pytest.raises(ShapeError, match="matvec: shapes .* are not aligned"):
        knp.matvec(A, np.ones(3))
    with pytest.raises(ShapeError, match="vecmat: shapes .* are not aligned"):
        knp.vecmat(np.ones(4), A)


def test_linalg_array_api_names():
    a, b = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=(4, 3)).astype(np.float32)
    f = lambda a, b, m: (L.cross(a, b), L.cross(a.T, b.T, axis=0), L.diagonal(m), L.diagonal(m, offset=1),
                         L.outer(m[0, 0], m[1, 1]), L.trace(m), L.trace(m, offset=-1, dtype=np.float32))
    expected = (np.linalg.cross(a, b), np.linalg.cross(a.T, b.T, axis=0), np.linalg.diagonal(A),
                np.linalg.diagonal(A, offset=1), np.linalg.outer(A[0, 0], A[1, 1]), np.linalg.trace(A),
                np.linalg.trace(A, offset=-1))
    for fn in (f, kiln.jit(f)):
        for o, e in zip(fn(a, b, A), expected):
            close(o, e, rtol=1e-5, atol=1e-6)
    close(L.trace(np.arange(9, dtype=np.int32).reshape(3, 3)), 12, dtype=np.int32)
    check_grad(lambda m: L.trace(m) + L.diagonal(m, offset=1).sum(), A)
    check_grad(lambda a: L.cross(a, b.astype(np.float64)) ** 2, a)
    check_vmap(lambda m: L.trace(m), A)
    with pytest.raises(ValueError, match="linalg.cross: both arrays must have size 3 along axis -1"):
        L.cross(A, A)
    with pytest.raises(ValueError, match="linalg.outer: x1 must be 1-D"):
        L.outer(A, V4)
    with pytest.raises(ValueError, match="diagonal"):
        L.diagonal(V4)


def test_tensorinv_tensorsolve():
    t = rng.normal(size=(4, 6, 8, 3)).astype(np.float32)
    for fn in (L.tensorinv, kiln.jit(L.tensorinv, static_argnums=1)):
        close(fn(t, 2), np.linalg.tensorinv(t, 2), rtol=2e-3, atol=2e-3)
    t1 = rng.normal(size=(6, 2, 3)).astype(np.float32)
    close(L.tensorinv(t1, 1), np.linalg.tensorinv(t1, 1), rtol=2e-3, atol=2e-3)
    a = rng.normal(size=(2, 3, 6)).astype(np.float32)
    b = rng.normal(size=(2, 3)).astype(np.float32)
    for fn in (L.tensorsolve, kiln.jit(L.tensorsolve)):
        close(fn(a, b), np.linalg.tensorsolve(a, b), rtol=2e-3, atol=2e-3)
    a2 = rng.normal(size=(6, 2, 3)).astype(np.float32)
    close(L.tensorsolve(a2, b, axes=0), np.linalg.tensorsolve(a2, b, axes=(0,)), rtol=2e-3, atol=2e-3)
    check_grad(lambda b: L.tensorsolve(a.astype(np.float64), b), b, rtol=1e-4, atol=1e-5)
    check_grad(lambda t: L.tensorinv(t, 1), t1, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"tensorinv: the product of the first ind=1 dimensions \(4\) must equal"):
        L.tensorinv(t, 1)
    with pytest.raises(ValueError, match="tensorsolve: a's leading dimensions"):
        L.tensorsolve(a, b.T)
    with pytest.raises(ValueError, match="tensorsolve: a must be square when flattened"):
        L.tensorsolve(a[..., :4], b)
