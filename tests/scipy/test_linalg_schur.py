"""kiln.scipy.linalg's Schur-based functions (issue 14): schur, rsf2csf, sqrtm, funm, solve_sylvester
(LAPACK gees/geev on the CPU) and hessenberg; against scipy.linalg, float32/float64/complex, batched,
eager and jit; error messages."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import kiln
import kiln.numpy as knp
from kiln.scipy import linalg as kl

pytestmark = pytest.mark.backend("cpu")  # gees/geev: LAPACK on the CPU only, as JAX

RNG = np.random.default_rng(41)


@pytest.fixture(autouse=True)
def x64():
    with kiln.config.override("enable_x64", True):
        yield


def _rand(shape, dtype=np.float64):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _tol(dtype):
    return 1e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-9


def _mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_schur_real_and_complex(dtype):
    a = _rand((5, 5), dtype)
    tol = _tol(dtype)
    for output in ("real", "complex"):
        t, z = kiln.jit(kl.schur, static_argnames="output")(a, output=output)
        t, z = np.asarray(t), np.asarray(z)
        complex_out = output == "complex" or np.dtype(dtype).kind == "c"
        assert (t.dtype.kind == "c") == complex_out
        np.testing.assert_allclose(z @ t @ _mH(z), a, atol=tol)
        np.testing.assert_allclose(_mH(z) @ z, np.eye(5), atol=tol)
        assert np.all(np.tril(t, -1 if complex_out else -2) == 0)
        if np.dtype(dtype) == np.float64 and output == "real":  # same LAPACK routine: same form as SciPy
            ts, _ = sl.schur(a)
            np.testing.assert_allclose(t, ts, atol=1e-10)
    # batches and integers (promoted to the default float)
    ab = _rand((2, 4, 4))
    t, z = kl.schur(ab)
    np.testing.assert_allclose(np.asarray(z) @ np.asarray(t) @ _mH(np.asarray(z)), ab, atol=1e-10)
    t, z = kl.schur(np.array([[1, 2], [3, 4]]))
    assert t.dtype == np.float64
    with pytest.raises(ValueError, match=r"kiln.scipy.linalg.schur: output must be 'real' or 'complex', got 'r'"):
        kl.schur(a, output="r")
    with pytest.raises(kiln.MatrixShapeError, match=r"kiln.scipy.linalg.schur: a must be a square matrix"):
        kl.schur(np.ones((2, 3)))


def test_rsf2csf_against_scipy():
    for a in (_rand((5, 5)), _rand((4, 4)), np.array([[0.0, 3.0, 3.0], [0.0, 1.0, 2.0], [2.0, 0.0, 1.0]])):
        t, z = sl.schur(a)
        tc, zc = kiln.jit(kl.rsf2csf)(t, z)
        tcs, zcs = sl.rsf2csf(t, z)
        np.testing.assert_allclose(np.asarray(tc), tcs, atol=1e-10)
        np.testing.assert_allclose(np.asarray(zc), zcs, atol=1e-10)
    # batched, and float32
    ab = _rand((2, 4, 4), np.float32)
    t, z = kl.schur(ab)
    tc, zc = kl.rsf2csf(t, z)
    tc, zc = np.asarray(tc), np.asarray(zc)
    assert tc.dtype == np.complex64 and np.all(np.tril(tc, -1) == 0)
    np.testing.assert_allclose(zc @ tc @ _mH(zc), ab, atol=1e-4)
    with pytest.raises(kiln.MatrixShapeError, match=r"kiln.scipy.linalg.rsf2csf: T and Z must have the same matrix "
                                                    r"size"):
        kl.rsf2csf(np.eye(3), np.eye(2))
    with pytest.raises(kiln.MatrixShapeError, match=r"kiln.scipy.linalg.rsf2csf: Z must be a square matrix"):
        kl.rsf2csf(np.eye(3), np.ones((3, 2)))


def test_sqrtm():
    # (no eigenvalue on the negative real axis: the principal square root is unique)
    for a in (_rand((4, 4)) + 4 * np.eye(4), _rand((3, 3), np.complex128), np.array([[4.0, 1.0], [0.0, 9.0]])):
        s = np.asarray(kiln.jit(kl.sqrtm)(a))
        assert s.dtype == np.complex128  # always complex, as JAX
        np.testing.assert_allclose(s @ s, a, atol=1e-10)
        np.testing.assert_allclose(s, sl.sqrtm(a), atol=1e-8)
    s = np.asarray(kl.sqrtm(_rand((2, 3, 3), np.float32) + 3 * np.eye(3, dtype=np.float32)))
    assert s.dtype == np.complex64
    # a singular matrix with a zero eigenvalue: the 0/0 entries are 0 (as JAX)
    s = np.asarray(kl.sqrtm(np.zeros((2, 2))))
    np.testing.assert_array_equal(s, 0)
    with pytest.raises(NotImplementedError, match=r"kiln.scipy.linalg.sqrtm: blocksize > 1 .* is not implemented"):
        kl.sqrtm(np.eye(2), blocksize=2)
    with pytest.raises(kiln.MatrixShapeError, match=r"kiln.scipy.linalg.sqrtm: A must be a square matrix"):
        kl.sqrtm(np.ones((2, 3)))
    with pytest.raises(NotImplementedError, match=r"kiln.lax.linalg.schur is not differentiable"):
        kiln.grad(lambda a: knp.real(knp.sum(kl.sqrtm(a))))(np.eye(2))


def test_funm():
    a = _rand((4, 4))
    f = np.asarray(kiln.jit(lambda a: kl.funm(a, knp.exp))(a))
    assert f.dtype == np.complex128
    np.testing.assert_allclose(f, sl.expm(a), atol=1e-10)
    np.testing.assert_allclose(np.asarray(kl.funm(a, lambda x: knp.sin(x) + 2 * knp.cos(x))),
                               sl.funm(a, lambda x: np.sin(x) + 2 * np.cos(x)), atol=1e-10)
    f, err = kl.funm(a, knp.sin, disp=False)
    fs, errs = sl.funm(a, np.sin, disp=False)
    np.testing.assert_allclose(np.asarray(f), fs, atol=1e-10)
    np.testing.assert_allclose(float(err), errs, rtol=1e-6)
    c = _rand((3, 3), np.complex64)
    np.testing.assert_allclose(np.asarray(kl.funm(c, knp.exp)), sl.expm(c.astype(np.complex128)), atol=1e-4)
    with pytest.raises(kiln.MatrixShapeError, match=r"kiln.scipy.linalg.funm: A must be a square matrix, got shape "
                                                    r"\(2, 2, 2\)"):
        kl.funm(np.ones((2, 2, 2)), knp.exp)
    with pytest.raises(TypeError, match=r"kiln.scipy.linalg.funm: func must be a callable"):
        kl.funm(np.eye(2), 3)


@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_solve_sylvester(method):
    a, b, c = _rand((4, 4)), _rand((3, 3)), _rand((4, 3))
    solve = kiln.jit(kl.solve_sylvester, static_argnames="method")
    x = np.asarray(solve(a, b, c, method=method))
    assert x.dtype == np.float64  # real C -> real X
    np.testing.assert_allclose(a @ x + x @ b, c, atol=1e-9)
    np.testing.assert_allclose(x, sl.solve_sylvester(a, b, c), atol=1e-8)
    ac, bc, cc = _rand((3, 3), np.complex128), _rand((2, 2), np.complex128), _rand((3, 2), np.complex128)
    x = np.asarray(solve(ac, bc, cc, method=method))
    np.testing.assert_allclose(ac @ x + x @ bc, cc, atol=1e-9)
    # batch dimensions broadcast
    ab, cb = _rand((2, 3, 3)), _rand((2, 3, 2))
    x = np.asarray(kl.solve_sylvester(ab, b[:2, :2], cb, method=method))
    np.testing.assert_allclose(ab @ x + x @ b[:2, :2], cb, atol=1e-9)
    # no unique solution (eig(A) + eig(B) hits 0): NaN, as JAX
    assert np.isnan(np.asarray(kl.solve_sylvester(np.eye(2), -np.eye(2), np.ones((2, 2)), method=method))).all()


def test_solve_sylvester_errors():
    with pytest.raises(ValueError, match=r"kiln.scipy.linalg.solve_sylvester: method must be 'schur' or 'eigen'"):
        kl.solve_sylvester(np.eye(2), np.eye(2), np.eye(2), method="bartels")
    with pytest.raises(kiln.MatrixShapeError, match=r"solve_sylvester: incompatible shapes: A \(3, 3\) must be"):
        kl.solve_sylvester(np.eye(3), np.eye(2), np.ones((2, 2)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_hessenberg(dtype):
    a = _rand((5, 5), dtype)
    h, q = kiln.jit(kl.hessenberg, static_argnames="calc_q")(a, calc_q=True)
    h, q = np.asarray(h), np.asarray(q)
    hs, qs = sl.hessenberg(a, calc_q=True)
    tol = _tol(dtype)
    np.testing.assert_allclose(h, hs, atol=tol)
    np.testing.assert_allclose(q, qs, atol=tol)
    np.testing.assert_allclose(q @ h @ _mH(q), a, atol=tol)
    np.testing.assert_allclose(np.asarray(kl.hessenberg(a)), hs, atol=tol)
    hb = np.asarray(kl.hessenberg(np.stack([a, 2 * a])))
    np.testing.assert_allclose(hb[1], 2 * hs, atol=2 * tol)
    assert kl.hessenberg(np.ones((0, 0))).shape == (0, 0)
    h1, q1 = kl.hessenberg(np.array([[3.0]]), calc_q=True)
    np.testing.assert_allclose(np.asarray(h1), [[3.0]])
    np.testing.assert_allclose(np.asarray(q1), [[1.0]])
    with pytest.raises(kiln.MatrixShapeError, match=r"kiln.scipy.linalg.hessenberg: a must be a square matrix"):
        kl.hessenberg(np.ones((2, 3)))


def test_hessenberg_is_differentiable():
    """kiln's hessenberg is built from kiln operations, so (unlike JAX's LAPACK call) it differentiates."""
    from tests.numpy._fd import check_grad  # noqa: PLC0415
    check_grad(lambda a: kl.hessenberg(a) ** 2, _rand((4, 4)))


def test_funm_eager_runs_two_compiled_programs_around_func(primitive_runs):
    """As JAX: the Schur form and Parlett's recurrence each run as one compiled program; only the user's
    ``func`` runs between them (kiln.numpy.sin: itself one program)."""
    a = knp.asarray(_rand((5, 5)))
    stats = kiln.runtime.compile_cache.stats
    before = stats()["hits"] + stats()["misses"]
    primitive_runs.clear()
    f, err = kl.funm(a, knp.sin, disp=False)
    assert stats()["hits"] + stats()["misses"] - before <= 3
    assert primitive_runs == []
    fs, errs = sl.funm(np.asarray(a), np.sin, disp=False)
    np.testing.assert_allclose(np.asarray(f), fs, atol=1e-10)
    np.testing.assert_allclose(float(err), errs, rtol=1e-6)
