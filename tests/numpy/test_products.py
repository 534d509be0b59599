"""kiln.numpy products against NumPy: matmul (batch broadcasting, 1-D operands), dot, vdot, vecdot, inner,
outer, tensordot, trace, kron, cross; several dtypes, 0-d and size-0 operands; error messages."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from kiln.frontend.core import dtypes

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(5)


def f32(*shape):
    return rng.normal(size=shape).astype(np.float32)


def i32(*shape):
    return rng.integers(-4, 5, size=shape).astype(np.int32)


def _check(out, expected, where, dtype=None, tol=None):
    tol = tol or dict(rtol=1e-5, atol=1e-5)
    expected = np.asarray(expected)
    assert isinstance(out, kiln.Array), (where, type(out))
    assert out.shape == expected.shape, (where, out.shape, expected.shape)
    want = np.dtype(dtype) if dtype is not None else dtypes.canonicalize_dtype(expected.dtype)
    assert out.dtype == want, (where, out.dtype, want)
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(np.asarray(out), expected, err_msg=str(where))
    else:
        np.testing.assert_allclose(np.asarray(out), expected, err_msg=str(where), **tol)


# (name, function of the module, operands)
CASES = [
    ("matmul 2x2", lambda m, a, b: m.matmul(a, b), (f32(3, 4), f32(4, 5))),
    ("matmul batch", lambda m, a, b: m.matmul(a, b), (f32(2, 3, 4), f32(2, 4, 5))),
    ("matmul broadcast batch", lambda m, a, b: m.matmul(a, b), (f32(2, 1, 3, 4), f32(5, 4, 2))),
    ("matmul vec-mat", lambda m, a, b: m.matmul(a, b), (f32(4), f32(2, 4, 3))),
    ("matmul mat-vec", lambda m, a, b: m.matmul(a, b), (f32(2, 3, 4), f32(4))),
    ("matmul vec-vec", lambda m, a, b: m.matmul(a, b), (f32(4), f32(4))),
    ("matmul empty", lambda m, a, b: m.matmul(a, b), (f32(3, 0), f32(0, 2))),
    ("matmul @", lambda m, a, b: a @ b, (f32(3, 4), f32(4, 2))),
    ("matmul int", lambda m, a, b: m.matmul(a, b), (i32(2, 3, 4), i32(4, 2))),
    ("matmul mixed", lambda m, a, b: m.matmul(a, b), (i32(3, 4), f32(4, 2))),
    ("dot scalar", lambda m, a, b: m.dot(a, b), (np.float32(2.0), f32(3, 2))),
    ("dot 1-1", lambda m, a, b: m.dot(a, b), (f32(5), f32(5))),
    ("dot 2-1", lambda m, a, b: m.dot(a, b), (f32(3, 5), f32(5))),
    ("dot N-D", lambda m, a, b: m.dot(a, b), (f32(2, 3, 4), f32(5, 4, 6))),
    ("dot int", lambda m, a, b: m.dot(a, b), (i32(3, 4), i32(4))),
    ("vdot", lambda m, a, b: m.vdot(a, b), (f32(2, 3), f32(3, 2))),
    ("inner", lambda m, a, b: m.inner(a, b), (f32(2, 3, 4), f32(5, 4))),
    ("inner 0-d", lambda m, a, b: m.inner(a, b), (f32(3), np.float32(3.0))),
    ("outer", lambda m, a, b: m.outer(a, b), (f32(2, 3), f32(4))),
    ("outer empty", lambda m, a, b: m.outer(a, b), (f32(0), f32(4))),
    ("tensordot 2", lambda m, a, b: m.tensordot(a, b), (f32(2, 3, 4), f32(3, 4, 5))),
    ("tensordot 0", lambda m, a, b: m.tensordot(a, b, 0), (f32(2, 3), f32(4))),
    ("tensordot pairs", lambda m, a, b: m.tensordot(a, b, axes=([1, 0], [0, 2])), (f32(3, 4, 5), f32(4, 6, 3))),
    ("tensordot ints", lambda m, a, b: m.tensordot(a, b, axes=(-1, 0)), (f32(3, 4), f32(4, 2))),
    ("kron", lambda m, a, b: m.kron(a, b), (f32(2, 3), f32(3, 2))),
    ("kron ranks", lambda m, a, b: m.kron(a, b), (f32(2, 2, 2), f32(3))),
    ("kron int", lambda m, a, b: m.kron(a, b), (i32(2, 2), i32(2, 3))),
    ("cross 3", lambda m, a, b: m.cross(a, b), (f32(4, 3), f32(4, 3))),
    ("cross broadcast", lambda m, a, b: m.cross(a, b), (f32(2, 1, 3), f32(5, 3))),
    ("cross axes", lambda m, a, b: m.cross(a, b, axisa=0, axisb=1, axisc=0), (f32(3, 4), f32(4, 3))),
    ("cross axis", lambda m, a, b: m.cross(a, b, axis=0), (f32(3, 2), f32(3, 2))),
    ("cross 2-3", lambda m, a, b: m.cross(a, b), (f32(4, 2), f32(4, 3))),
    ("cross 3-2", lambda m, a, b: m.cross(a, b), (f32(3), f32(2))),
    ("cross 2-2", lambda m, a, b: m.cross(a, b), (f32(4, 2), f32(4, 2))),
    ("cross int", lambda m, a, b: m.cross(a, b), (i32(3), i32(3))),
]

TRACE_CASES = [
    ("trace", lambda m, a: m.trace(a), f32(3, 4)),
    ("trace offset", lambda m, a: m.trace(a, 1), f32(3, 4)),
    ("trace axes", lambda m, a: m.trace(a, -1, 2, 0), f32(3, 4, 5)),
    ("trace big offset", lambda m, a: m.trace(a, 7), f32(3, 4)),
    ("trace int8", lambda m, a: m.trace(a), np.arange(9, dtype=np.int8).reshape(3, 3) * 20),
    ("trace dtype", lambda m, a: m.trace(a, dtype=np.float32), i32(3, 3)),
]


def _np(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # NumPy deprecates 2-vectors in cross
        return fn(np, *args)


def test_products_under_jit():
    outs = kiln.jit(lambda ops: [fn(knp, *o) for (_, fn, _), o in zip(CASES, ops)])([c[2] for c in CASES])
    for (name, fn, ops), o in zip(CASES, outs):
        _check(o, _np(fn, *ops), name)
    outs = kiln.jit(lambda ops: [fn(knp, a) for (_, fn, _), a in zip(TRACE_CASES, ops)])([c[2] for c in TRACE_CASES])
    for (name, fn, a), o in zip(TRACE_CASES, outs):
        expected = fn(np, a)
        dt = np.float32 if name == "trace dtype" else dtypes.canonicalize_dtype(
            np.result_type(a.dtype, np.int32) if a.dtype.kind in "iu" else a.dtype)
        _check(o, expected, name, dtype=dt)


def test_products_eager_and_bool():
    a, b = f32(2, 3, 4), f32(4, 2)
    _check(knp.matmul(a, b), a @ b, "eager matmul")
    _check(knp.asarray(a) @ b, a @ b, "eager @")
    _check(a @ knp.asarray(b), a @ b, "eager r@")
    _check(knp.einsum("ij,jk->ik", a[0], b), a[0] @ b, "eager einsum")
    p, q = rng.random((3, 4)) > 0.5, rng.random((4, 2)) > 0.5
    _check(knp.matmul(p, q), np.matmul(p, q), "bool matmul")
    _check(knp.dot(p[0], q[:, 0]), np.dot(p[0], q[:, 0]), "bool dot")
    _check(knp.outer(p[0], q[0]), np.outer(p[0], q[0]), "bool outer")
    _check(knp.kron(p, q), np.kron(p, q), "bool kron")
    _check(knp.matmul(a.astype(np.int8), b.astype(np.int8)), np.matmul(a.astype(np.int8), b.astype(np.int8)),
           "int8 matmul")


def test_products_float64():
    with kiln.config.override("enable_x64", True):
        a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5))
        outs = kiln.jit(lambda a, b: [knp.matmul(a, b), knp.tensordot(a, b, 1), knp.trace(a[0]),
                                      knp.cross(a[:, :, :3], b[0, :3])])(a, b)
        for o, e in zip(outs, [a @ b, np.tensordot(a, b, 1), np.trace(a[0]), np.cross(a[:, :, :3], b[0, :3])]):
            _check(o, e, "x64", tol=dict(rtol=1e-12, atol=1e-12))


def test_product_errors():
    with pytest.raises(TypeError, match=r"kiln.numpy.matmul: shapes \(3, 4\) and \(5, 2\) are not aligned: "
                                         r"4 \(dim 1\) != 5 \(dim 0\)"):
        knp.matmul(f32(3, 4), f32(5, 2))
    with pytest.raises(TypeError, match=r"kiln.numpy.matmul: shapes \(200,\) and \(3,\) are not aligned: "
                                         r"200 \(dim 0\) != 3 \(dim 0\)"):  # 1-D operands: their shapes as given
        knp.matmul(f32(200), f32(3))
    with pytest.raises(TypeError, match=r"kiln.numpy.matmul: shapes \(2, 4\) and \(3,\) are not aligned: "
                                         r"4 \(dim 1\) != 3 \(dim 0\)"):
        knp.asarray(f32(2, 4)) @ knp.asarray(f32(3))
    with pytest.raises(ValueError, match="kiln.numpy.matmul: operands could not be broadcast together"):
        knp.matmul(f32(2, 3, 4), f32(3, 4, 2))
    with pytest.raises(ValueError, match="kiln.numpy.matmul: operands must not be 0-d"):
        knp.matmul(np.float32(1), f32(3))
    with pytest.raises(TypeError, match="kiln.numpy.dot: shapes .* are not aligned"):
        knp.dot(f32(3, 4), f32(3, 4))
    with pytest.raises(TypeError, match="kiln.numpy.inner: shapes .* are not aligned: last dimensions 4 != 3"):
        knp.inner(f32(3, 4), f32(3))
    with pytest.raises(TypeError, match="kiln.numpy.vdot: the arrays must have the same number of elements"):
        knp.vdot(f32(3), f32(4))
    with pytest.raises(ValueError, match="kiln.numpy.tensordot: axes=3 must be between 0 and the smaller rank"):
        knp.tensordot(f32(3, 4), f32(4, 3), 3)
    with pytest.raises(ValueError, match=r"kiln.numpy.tensordot: axis 2 in axes\[0\] is out of bounds"):
        knp.tensordot(f32(3, 4), f32(4, 3), ([2], [0]))
    with pytest.raises(ValueError, match=r"kiln.numpy.tensordot: repeated axis in axes\[1\]"):
        knp.tensordot(f32(3, 3), f32(3, 3), ([0, 1], [0, 0]))
    with pytest.raises(TypeError, match=r"kiln.numpy.tensordot: shapes .* are not aligned: dim 1 of a \(4\) != dim 0 "
                                         r"of b \(3\)"):
        knp.tensordot(f32(3, 4), f32(3, 4), ([1], [0]))
    with pytest.raises(ValueError, match="kiln.numpy.tensordot: axes .* must give the same number of axes"):
        knp.tensordot(f32(3, 4), f32(3, 4), ([1, 0], [0]))
    with pytest.raises(ValueError, match="kiln.numpy.cross: incompatible dimensions for cross product"):
        knp.cross(f32(4), f32(3))
    with pytest.raises(ValueError, match="kiln.numpy.cross: axis 2 is out of bounds"):
        knp.cross(f32(3, 3), f32(3, 3), axisa=2)
    with pytest.raises(ValueError, match="kiln.numpy.cross: operands could not be broadcast together"):
        knp.cross(f32(2, 3), f32(4, 3))
    with pytest.raises(ValueError, match="kiln.numpy.trace: the array must be at least 2-D"):
        knp.trace(f32(3))
    with pytest.raises(TypeError, match="kiln.numpy.matmul: argument 0 is a list"):
        knp.matmul([[1.0]], f32(1, 1))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_vdot_and_vecdot_conjugate_the_first_complex_argument(dtype):
    r = np.random.default_rng(1)
    x = (r.normal(size=(3, 4)) + 1j * r.normal(size=(3, 4))).astype(dtype)
    y = (r.normal(size=(2, 3, 4)) + 1j * r.normal(size=(2, 3, 4))).astype(dtype)
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    with kiln.enable_x64(dtype == np.complex128):
        np.testing.assert_allclose(np.asarray(knp.vecdot(x, y)), np.vecdot(x, y), rtol=tol, atol=tol)
        got = kiln.jit(lambda a, b: knp.vecdot(a, b, axis=0))(x, y[1])
        np.testing.assert_allclose(np.asarray(got), np.vecdot(x, y[1], axis=0), rtol=tol, atol=tol)
        np.testing.assert_allclose(np.asarray(knp.vdot(x, y[0])), np.vdot(x, y[0]), rtol=tol, atol=tol)
        np.testing.assert_allclose(np.asarray(knp.vdot(x, x.real)), np.vdot(x, x.real), rtol=tol, atol=tol)


def test_matmul_broadcasts_batch_dimensions_without_copying_an_operand():
    """x @ w with x of shape (B, T, D) and w (D, H) is one dot_general: w is not broadcast to (B, D, H) first (kiln
    copied it B times: 1 MiB of temporaries and an extra kernel for B=32, D=64, H=128; JAX's none). Every
    combination of 1-D operands, missing, size-1 and shared batch dimensions against NumPy, eagerly and jitted."""
    x, w = np.ones((32, 16, 64), np.float32), np.ones((64, 128), np.float32)
    stats = kiln.jit(lambda x, w: x @ w).lower(x, w).compile().memory_analysis()
    assert stats.temp_size_in_bytes < 64 * 128 * 4, stats.temp_size_in_bytes
    rng = np.random.default_rng(7)
    shapes_a = [(3,), (2, 3), (4, 2, 3), (1, 2, 3), (5, 1, 2, 3), (4, 1, 2, 3)]
    shapes_b = [(3,), (3, 2), (4, 3, 2), (1, 3, 2), (5, 1, 3, 2), (1, 4, 3, 2), (6, 1, 1, 3, 2)]
    checked = 0
    for sa in shapes_a:
        for sb in shapes_b:
            a, b = rng.normal(size=sa).astype(np.float32), rng.normal(size=sb).astype(np.float32)
            try:
                want = np.matmul(a, b)
            except ValueError:
                with pytest.raises(ValueError):
                    knp.matmul(a, b)
                continue
            for got in (knp.matmul(a, b), kiln.jit(knp.matmul)(a, b)):
                assert got.shape == want.shape, (sa, sb)
                np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
            checked += 1
    assert checked == 41
