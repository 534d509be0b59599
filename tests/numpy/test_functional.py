"""vectorize, apply_along_axis, apply_over_axes, fromfunction and ufunc/frompyfunc against NumPy; eager,
jit, grad, vmap, and their errors."""
from __future__ import annotations

import numpy as np
import pytest
from _fd import check_grad, check_vmap, close

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(3)
A = rng.normal(size=(2, 3, 4)).astype(np.float32)
X = np.arange(12, dtype=np.int32).reshape(3, 4)


def test_vectorize_scalar_function():
    f = knp.vectorize(lambda x, y: x * 2 + y)
    a, b = np.arange(3.0, dtype=np.float32), np.ones((2, 1), np.float32)
    for fn in (f, kiln.jit(f)):
        close(fn(a, b), a * 2 + b)
    close(f(np.float32(2.0), 1.0), 5.0)
    h = knp.vectorize(lambda x, p: x ** p, excluded={1})
    close(h(a, 2), a ** 2)
    g = knp.vectorize(lambda x, scale=1.0: x * scale, excluded={"scale"})
    close(g(a, scale=3.0), a * 3)
    check_grad(lambda a: f(a, 1.0) ** 2, A[0])
    check_vmap(f, A, A)


def test_vectorize_with_signature():
    dot = knp.vectorize(lambda a, b: knp.dot(a, b), signature="(n),(n)->()")
    npdot = np.vectorize(lambda a, b: np.dot(a, b), signature="(n),(n)->()")
    for fn in (dot, kiln.jit(dot)):
        close(fn(A, A[0, 0]), npdot(A, A[0, 0]), rtol=1e-5)
    two = knp.vectorize(lambda x: (x.sum(), x * 2), signature="(n)->(),(n)")
    s, d = two(A)
    close(s, A.sum(-1), rtol=1e-5)
    close(d, A * 2)
    mm = knp.vectorize(knp.matmul, signature="(m,n),(n,k)->(m,k)")
    close(mm(A, A[0].T), A @ A[0].T, rtol=1e-5)
    check_grad(lambda a: dot(a, a), A[0])
    with pytest.raises(ValueError, match="core dimension 'n' has inconsistent sizes 4 and 3"):
        dot(A, np.ones(3))
    with pytest.raises(ValueError, match="invalid signature"):
        knp.vectorize(lambda x: x, signature="(n->()")(A)
    with pytest.raises(TypeError, match="the function must return a tuple"):
        knp.vectorize(lambda x: x.sum(), signature="(n)->(),()")(A)
    with pytest.raises(ValueError, match="gives it core dimensions"):
        knp.vectorize(lambda x: x, signature="(n)->()")(A)
    with pytest.raises(ValueError, match="do not broadcast together"):
        knp.vectorize(lambda x, y: x + y)(np.ones(2), np.ones(3))
    with pytest.raises(TypeError, match="has 2 inputs"):
        dot(A)


def test_apply_along_axis_and_over_axes():
    f1 = lambda v: knp.stack([v.sum(), v.max()])
    n1 = lambda v: np.stack([v.sum(), v.max()])
    for axis in (0, 1, 2, -1):
        close(knp.apply_along_axis(f1, axis, A), np.apply_along_axis(n1, axis, A), rtol=1e-5)
    close(knp.apply_along_axis(lambda v, k: v[:k].sum(), 1, A, 2), np.apply_along_axis(lambda v, k: v[:k].sum(), 1,
                                                                                        A, 2), rtol=1e-5)
    out = kiln.jit(lambda a: knp.apply_along_axis(lambda v: knp.outer(v, v), 1, a))(A)
    close(out, np.apply_along_axis(lambda v: np.outer(v, v), 1, A), rtol=1e-5)
    close(knp.apply_over_axes(knp.sum, A, [0, 2]), np.apply_over_axes(np.sum, A, [0, 2]), rtol=1e-5)
    close(kiln.jit(lambda a: knp.apply_over_axes(knp.max, a, 1))(A), np.apply_over_axes(np.max, A, 1))
    check_grad(lambda a: knp.apply_along_axis(lambda v: knp.sum(v ** 3), 0, a), A[0])
    check_vmap(lambda a: knp.apply_along_axis(knp.cumsum, 1, a), A)
    with pytest.raises(ValueError, match="apply_over_axes: func must keep the number of dimensions"):
        knp.apply_over_axes(lambda a, ax: knp.sum(a), A, [0])


def test_fromfunction():
    close(knp.fromfunction(lambda i, j: i * 10 + j, (2, 3)), np.fromfunction(lambda i, j: i * 10 + j, (2, 3)),
          dtype=np.float32)
    close(knp.fromfunction(lambda i, j: i == j, (3, 3), dtype=int), np.fromfunction(lambda i, j: i == j, (3, 3)))
    out = kiln.jit(lambda s: knp.fromfunction(lambda i: i * s, (4,), dtype=np.int32))(3)
    close(out, np.arange(4) * 3, dtype=np.int32)
    close(knp.fromfunction(lambda i, k: i + k, (2,), k=5.0), [5.0, 6.0])


def test_ufunc_from_pyfunc():
    add = knp.frompyfunc(lambda a, b: a + b, 2, 1, identity=0)
    assert isinstance(add, knp.ufunc) and add.nin == 2 and add.nout == 1 and add.identity == 0
    assert add == knp.frompyfunc(add._func, 2, 1, identity=0) and hash(add) == hash(add)
    assert repr(add).startswith("<kiln.numpy.ufunc")
    close(add(X, 1), X + 1)
    close(add.reduce(X), np.add.reduce(X))
    close(add.reduce(X, axis=1, keepdims=True), np.add.reduce(X, axis=1, keepdims=True))
    close(add.reduce(X, axis=None), np.add.reduce(X, axis=None))
    close(add.reduce(X, where=X % 2 == 0, initial=0), np.add.reduce(X, where=X % 2 == 0, initial=0))
    close(add.reduce(np.zeros((0, 2), np.int32)), np.zeros(2))
    close(add.accumulate(X, axis=1), np.add.accumulate(X, axis=1))
    close(add.outer(np.arange(3), np.arange(2)), np.add.outer(np.arange(3), np.arange(2)))
    idx = np.array([0, 4, 1, 5, 5])
    close(add.reduceat(np.arange(8), idx), np.add.reduceat(np.arange(8), idx))
    close(add.reduceat(X, np.array([0, 2]), axis=1), np.add.reduceat(X, [0, 2], axis=1))
    expected = np.ones(5, np.int32)
    np.add.at(expected, [0, 0, 3], [10, 20, 30])
    close(add.at(np.ones(5, np.int32), np.array([0, 0, 3]), np.array([10, 20, 30]), inplace=False), expected)
    close(add.at(np.ones(5, np.int32), 2, 7, inplace=False), [1, 1, 8, 1, 1])
    jitted = kiln.jit(lambda x: (add.reduce(x), add.accumulate(x), add.outer(x[0], x[1])))
    for o, e in zip(jitted(X), (np.add.reduce(X), np.add.accumulate(X), np.add.outer(X[0], X[1]))):
        close(o, e)
    mx = knp.frompyfunc(knp.maximum, 2, 1)
    F = A[0, 0]
    close(mx.reduce(F), np.maximum.reduce(F))
    close(mx.accumulate(F), np.maximum.accumulate(F))
    check_grad(lambda x: add.reduce(x * x), A[0])
    check_grad(lambda x: add.accumulate(x * x, axis=1), A[0])
    check_vmap(lambda x: add.accumulate(x), A)
    with pytest.raises(ValueError, match="empty reduction needs initial="):
        mx.reduce(np.zeros(0, np.float32))
    with pytest.raises(ValueError, match="a where= mask needs initial="):
        mx.reduce(F, where=F > 0)
    with pytest.raises(ValueError, match="only for ufuncs of 2 inputs and 1 output"):
        knp.frompyfunc(lambda x: x, 1, 1).reduce(F)
    with pytest.raises(ValueError, match="at: kiln arrays are immutable"):
        add.at(X, np.array([0]), 1)
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        add(X)
