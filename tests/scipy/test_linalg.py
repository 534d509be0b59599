"""kiln.scipy.linalg against scipy.linalg: decompositions, solvers, expm, special matrices; float64 and
float32, jit, grad and vmap; error messages."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import kiln
from kiln.scipy import linalg as kl

rng = np.random.default_rng(5)
A = rng.standard_normal((4, 4))
SPD = A @ A.T + 4 * np.eye(4)
b = rng.standard_normal(4)
B = rng.standard_normal((4, 2))
WIDE = rng.standard_normal((3, 5))
TALL = rng.standard_normal((5, 3))
T = np.triu(A) + 4 * np.eye(4)


def close(x, y, tol=1e-9, msg=""):
    np.testing.assert_allclose(np.asarray(x), y, rtol=tol, atol=tol, err_msg=msg)


@pytest.fixture
def x64():
    with kiln.config.override("enable_x64", True):
        yield


def test_cholesky_family(x64):
    close(kl.cholesky(SPD), sl.cholesky(SPD))
    close(kl.cholesky(SPD, lower=True), sl.cholesky(SPD, lower=True))
    for lower in (False, True):
        c = kl.cho_factor(SPD, lower)
        assert c[1] is lower
        close(kl.cho_solve(c, B), sl.cho_solve(sl.cho_factor(SPD, lower), B))
        close(kl.cho_solve(c, b), sl.cho_solve(sl.cho_factor(SPD, lower), b))


def test_cholesky_reads_only_the_requested_triangle(x64):
    """As scipy.linalg: the other triangle of ``a`` is never read (it was averaged in: a wrong factor)."""
    skewed = np.tril(SPD) + np.triu(rng.standard_normal((4, 4)), 1)  # upper triangle: not SPD's
    close(kl.cholesky(skewed, lower=True), sl.cholesky(skewed, lower=True))
    close(kl.cholesky(skewed.T), sl.cholesky(skewed.T))  # upper: reads the upper triangle
    # SciPy's cho_factor leaves the other triangle as it found it: compare the factor's own triangle.
    close(np.tril(np.asarray(kl.cho_factor(skewed, lower=True)[0])), np.tril(sl.cho_factor(skewed, lower=True)[0]))


def test_cholesky_derivative_takes_the_whole_tangent(x64):
    """The JVP of the lower-reading Cholesky is L phi(L^-1 dA L^-H) on the whole of dA (JAX's rule: a symmetric
    dA gives the true derivative, and users compare the rest against JAX): the gradient of sum(L) checked
    entry by entry against that formula evaluated with SciPy, and a symmetric direction against finite
    differences."""
    low = sl.cholesky(SPD, lower=True)

    def formula_jvp(d):
        inner = sl.solve_triangular(low, sl.solve_triangular(low, d.T, lower=True).T, lower=True)
        return low @ (np.tril(inner) - np.diag(np.diag(inner)) / 2)

    def basis(i, j):
        e = np.zeros((4, 4))
        e[i, j] = 1.0
        return e

    want = np.array([[formula_jvp(basis(i, j)).sum() for j in range(4)] for i in range(4)])
    got = kiln.grad(lambda a: kiln.lax.linalg.cholesky(a, symmetrize_input=False).sum())(SPD)
    close(got, want)
    assert np.abs(want - want.T).max() > 1e-3  # not symmetric: the test tells the two conventions apart
    sym = rng.standard_normal((4, 4))
    sym = sym + sym.T
    eps = 1e-6
    fd = (sl.cholesky(SPD + eps * sym, lower=True) - sl.cholesky(SPD - eps * sym, lower=True)) / (2 * eps)
    _, tangent = kiln.jvp(lambda a: kl.cholesky(a, lower=True), (SPD,), (sym,))
    close(tangent, fd, tol=1e-6)


def test_lu_family(x64):
    for M in (A, WIDE, TALL):
        for got, want in zip(kl.lu(M), sl.lu(M)):
            close(got, want)
    for got, want in zip(kl.lu(A, permute_l=True), sl.lu(A, permute_l=True)):
        close(got, want)
    lu, piv = kl.lu_factor(A)
    LU, PIV = sl.lu_factor(A)
    close(lu, LU)
    np.testing.assert_array_equal(np.asarray(piv), PIV)
    for trans in (0, 1, 2):
        close(kl.lu_solve((lu, piv), B, trans=trans), sl.lu_solve((LU, PIV), B, trans=trans))
        close(kl.lu_solve((lu, piv), b, trans=trans), sl.lu_solve((LU, PIV), b, trans=trans))


def test_qr_svd_eigh_inv_det(x64):
    q, r = kl.qr(TALL)
    assert q.shape == (5, 5) and r.shape == (5, 3)
    close(np.asarray(q) @ np.asarray(r), TALL)
    q, r = kl.qr(TALL, mode="economic")
    assert q.shape == (5, 3) and r.shape == (3, 3)
    (r,) = kl.qr(TALL, mode="r")
    close(np.abs(np.asarray(r)), np.abs(sl.qr(TALL, mode="r")[0]))
    c = rng.standard_normal((2, 5))
    cq, r = kl.qr_multiply(TALL, c)
    q, _ = sl.qr(TALL, mode="economic")
    close(np.abs(np.asarray(cq)), np.abs(c @ q))
    w, v = kl.eigh(SPD)
    close(w, sl.eigh(SPD)[0])
    close(np.asarray(v) @ np.diag(np.asarray(w)) @ np.asarray(v).T, SPD)
    close(kl.eigh(SPD, eigvals_only=True), sl.eigh(SPD, eigvals_only=True))
    close(kl.svd(A, compute_uv=False), sl.svd(A, compute_uv=False))
    u, s, vh = kl.svd(WIDE, full_matrices=False)
    close(np.asarray(u) * np.asarray(s) @ np.asarray(vh), WIDE)
    close(kl.inv(A), sl.inv(A))
    close(kl.det(A), sl.det(A))
    d, e = rng.standard_normal(5), rng.standard_normal(4)
    close(kl.eigh_tridiagonal(d, e, eigvals_only=True), sl.eigh_tridiagonal(d, e, eigvals_only=True))
    close(kl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 3)),
          sl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 3)))


def test_solvers(x64):
    for assume_a in ("gen", "sym", "her", "pos"):
        close(kl.solve(SPD, B, assume_a=assume_a), sl.solve(SPD, B, assume_a=assume_a), msg=assume_a)
        close(kl.solve(SPD, b, assume_a=assume_a), sl.solve(SPD, b, assume_a=assume_a), msg=assume_a)
    for trans in (0, 1, 2, "N", "T", "C"):
        for lower in (False, True):
            M = T.T if lower else T
            close(kl.solve_triangular(M, B, trans=trans, lower=lower),
                  sl.solve_triangular(M, B, trans=trans, lower=lower))
    close(kl.solve_triangular(T, b, unit_diagonal=True), sl.solve_triangular(T, b, unit_diagonal=True))


def test_expm(x64):
    for scale in (0.0, 0.001, 0.1, 1.0, 3.0, 10.0, 50.0):
        close(kl.expm(A * scale), sl.expm(A * scale), 1e-10, msg=str(scale))
    E = rng.standard_normal((4, 4))
    e1, L1 = kl.expm_frechet(A, E)
    e2, L2 = sl.expm_frechet(A, E)
    close(e1, e2)
    close(L1, L2)
    close(kl.expm_frechet(A, E, compute_expm=False), L2)
    # Beyond max_squarings the result is NaN rather than wrong.
    assert np.isnan(np.asarray(kl.expm(A * 1e6, max_squarings=4))).all()


def test_expm_float32_batched_jit_grad():
    M = rng.standard_normal((3, 4, 4)).astype(np.float32)
    for s in (0.01, 0.5, 2.0, 8.0):
        out = kiln.jit(kl.expm)(M * np.float32(s))
        assert out.dtype == np.float32
        ref = np.stack([sl.expm(m.astype(np.float64) * s) for m in M])
        np.testing.assert_allclose(np.asarray(out), ref, rtol=2e-5, atol=2e-5 * np.abs(ref).max())
    g = kiln.grad(lambda a: kl.expm(a).sum())(M[0])
    h, a, fd = 1e-4, M[0].astype(np.float64), np.zeros((4, 4))
    for i in range(4):
        for j in range(4):
            d = np.zeros((4, 4))
            d[i, j] = h
            fd[i, j] = (sl.expm(a + d).sum() - sl.expm(a - d).sum()) / (2 * h)
    np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-4, atol=1e-4)


def test_vmap_and_batches():
    M = rng.standard_normal((3, 4, 4)).astype(np.float32) + 4 * np.eye(4, dtype=np.float32)
    rhs = rng.standard_normal((3, 4)).astype(np.float32)
    lu, piv = kl.lu_factor(M)
    x = kiln.vmap(lambda l_, p, r: kl.lu_solve((l_, p), r))(lu, piv, rhs)
    np.testing.assert_allclose(np.einsum("bij,bj->bi", M, np.asarray(x)), rhs, rtol=1e-4, atol=1e-4)
    x = kl.lu_solve((lu, piv), rhs)  # a stack of vectors
    np.testing.assert_allclose(np.einsum("bij,bj->bi", M, np.asarray(x)), rhs, rtol=1e-4, atol=1e-4)
    x = kiln.jit(lambda m, r: kl.solve(m, r, assume_a="pos"))(M @ np.swapaxes(M, 1, 2), rhs)
    np.testing.assert_allclose(np.einsum("bij,bj->bi", M @ np.swapaxes(M, 1, 2), np.asarray(x)), rhs, rtol=1e-3,
                               atol=1e-3)
    g = kiln.grad(lambda m: kl.solve_triangular(m, rhs[0], lower=False).sum())(np.triu(M[0]))
    assert g.shape == (4, 4) and np.isfinite(np.asarray(g)).all()


def test_polar(x64):
    for M, side in ((TALL, "right"), (A, "left"), (A, "right")):
        for got, want in zip(kl.polar(M, side), sl.polar(M, side)):
            close(got, want)


def test_special_matrices(x64):
    close(kl.block_diag(A[:2, :3], b, 3.0), sl.block_diag(A[:2, :3], b, 3.0))
    assert kl.block_diag().shape == (1, 0)
    close(kl.toeplitz(b, B[:3, 0]), sl.toeplitz(b, B[:3, 0]))
    close(kl.toeplitz(b), sl.toeplitz(b))
    close(kl.toeplitz(np.stack([b, 2 * b]))[1], sl.toeplitz(2 * b))  # batched over leading dimensions
    close(kl.hankel(b, B[:3, 0]), sl.hankel(b, B[:3, 0]))
    close(kl.hankel(b), sl.hankel(b))
    close(kl.circulant(b), sl.circulant(b))
    close(kl.companion(b), sl.companion(b))
    close(kl.fiedler(b), sl.fiedler(b))
    for n in range(2, 8):
        a = np.r_[2.0, rng.standard_normal(n - 1)]
        close(kl.fiedler_companion(a), sl.fiedler_companion(a), msg=str(n))
    close(kl.leslie(b, b[:3]), sl.leslie(b, b[:3]))
    for mode in ("full", "same", "valid"):
        for n in (2, 6):
            close(kl.convolution_matrix(b, n, mode), sl.convolution_matrix(b, n, mode), msg=f"{mode} {n}")
    close(kl.hilbert(5), sl.hilbert(5))
    close(kl.invhilbert(5), sl.invhilbert(5), 1e-7)
    for kind in ("symmetric", "lower", "upper"):
        close(kl.pascal(5, kind), sl.pascal(5, kind))
        close(kl.invpascal(5, kind), sl.invpascal(5, kind))
    close(kl.helmert(5), sl.helmert(5))
    close(kl.helmert(5, full=True), sl.helmert(5, full=True))
    close(kl.hadamard(8), sl.hadamard(8))
    close(kl.dft(5), sl.dft(5))
    close(kl.dft(5, "sqrtn"), sl.dft(5, "sqrtn"))


def test_float32_defaults():
    assert kl.hilbert(3).dtype == np.float32
    assert kl.cholesky(SPD.astype(np.float32)).dtype == np.float32
    assert kl.solve(np.eye(2, dtype=np.int32), np.ones(2, np.int32)).dtype == np.float32
    assert kl.dft(4).dtype == np.complex64


def test_errors():
    with pytest.raises(kiln.MatrixShapeError, match="cholesky: a must be a square matrix"):
        kl.cholesky(np.ones((2, 3)))
    with pytest.raises(ValueError, match="solve: b must have 4 rows to match a of shape"):
        kl.solve(SPD, np.ones(3))
    with pytest.raises(ValueError, match="solve: assume_a must be"):
        kl.solve(SPD, b, assume_a="banded")
    with pytest.raises(ValueError, match="solve_triangular: trans must be"):
        kl.solve_triangular(T, b, trans=3)
    with pytest.raises(ValueError, match="lu_solve: trans must be 0, 1 or 2"):
        kl.lu_solve(kl.lu_factor(A), b, trans="T")
    with pytest.raises(ValueError, match="qr: mode must be .*'raw' is not supported"):
        kl.qr(A, mode="raw")
    with pytest.raises(NotImplementedError, match="qr: pivoting=True"):
        kl.qr(A, pivoting=True)
    with pytest.raises(NotImplementedError, match="eigh: the generalized problem"):
        kl.eigh(SPD, SPD)
    with pytest.raises(NotImplementedError, match="eigh_tridiagonal: only eigvals_only=True"):
        kl.eigh_tridiagonal(b, b[:3])
    with pytest.raises(ValueError, match="svd: lapack_driver must be"):
        kl.svd(A, lapack_driver="x")
    with pytest.raises(ValueError, match="expm_frechet: E must have A's shape"):
        kl.expm_frechet(A, np.ones((3, 3)))
    with pytest.raises(ValueError, match="block_diag: arguments \\[1\\] have more than two dimensions"):
        kl.block_diag(A, np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="hadamard: n must be a positive power of 2"):
        kl.hadamard(6)
    with pytest.raises(ValueError, match="pascal: kind must be"):
        kl.pascal(3, "diag")
    with pytest.raises(ValueError, match="convolution_matrix: mode must be"):
        kl.convolution_matrix(b, 3, "circular")
    with pytest.raises(ValueError, match="leslie: s must have 3 entries"):
        kl.leslie(b, b)
    with pytest.raises(ValueError, match="polar: side must be"):
        kl.polar(A, "up")
    with pytest.raises(TypeError, match="hilbert: n must be a static Python int"):
        kiln.jit(kl.hilbert)(3)


def _compiles() -> int:
    stats = kiln.runtime.compile_cache.stats()
    return stats["hits"] + stats["misses"]


def test_eager_calls_run_one_compiled_program(x64, primitive_runs):
    """expm, expm_frechet, cholesky, lu, lu_factor, lu_solve, cho_solve, solve, solve_triangular, qr, svd, eigh,
    polar, hessenberg, schur, eigh_tridiagonal, block_diag and convolution_matrix called eagerly run as one compiled
    program per signature (JAX jits them), with SciPy's values."""
    M = kiln.numpy.asarray(A[:3, :3] * 0.7)
    S = kiln.numpy.asarray(A[:3, :3] @ A[:3, :3].T + 3 * np.eye(3))
    Bk = kiln.numpy.asarray(B[:3])
    v = kiln.numpy.asarray(np.array([1.0, 2.0, -1.0]))
    e = kiln.numpy.asarray(np.array([0.5, -0.25]))
    lu_piv = kl.lu_factor(M)
    m, s_ = np.asarray(M), np.asarray(S)
    cases = [
        (lambda: kl.expm(M), lambda: sl.expm(m)),
        (lambda: kl.expm(M, max_squarings=8), lambda: sl.expm(m)),
        (lambda: kl.expm_frechet(M, S, compute_expm=False), lambda: sl.expm_frechet(m, s_, compute_expm=False)),
        (lambda: kl.cholesky(S, lower=True), lambda: sl.cholesky(s_, lower=True)),
        (lambda: kl.lu(M)[2], lambda: sl.lu(m)[2]),
        (lambda: kl.lu_solve(lu_piv, Bk, trans=1), lambda: sl.lu_solve(sl.lu_factor(m), B[:3], trans=1)),
        (lambda: kl.eigh_tridiagonal(v, e, eigvals_only=True),
         lambda: sl.eigh_tridiagonal(np.asarray(v), np.asarray(e), eigvals_only=True)),
        (lambda: kl.block_diag(M, v), lambda: sl.block_diag(m, np.asarray(v))),
        (lambda: kl.convolution_matrix(v, 4, "same"), lambda: sl.convolution_matrix(np.asarray(v), 4, "same")),
        (lambda: kl.lu_factor(M)[0], lambda: sl.lu_factor(m)[0]),
        (lambda: kl.cho_solve(kl.cho_factor(S, lower=True), Bk), lambda: sl.cho_solve(sl.cho_factor(s_, lower=True),
                                                                                    B[:3])),
        (lambda: kl.solve(M, Bk), lambda: sl.solve(m, B[:3])),
        (lambda: kl.solve(S, v, assume_a="pos"), lambda: sl.solve(s_, np.asarray(v), assume_a="pos")),
        (lambda: kl.solve_triangular(S, Bk, trans="T", lower=True),
         lambda: sl.solve_triangular(s_, B[:3], trans="T", lower=True)),
        (lambda: kl.qr(M, mode="r")[0], lambda: sl.qr(m, mode="r")[0]),
        (lambda: kl.svd(M, compute_uv=False), lambda: sl.svd(m, compute_uv=False)),
        (lambda: kl.eigh(S, eigvals_only=True), lambda: sl.eigh(s_, eigvals_only=True)),
        (lambda: kl.polar(S)[1], lambda: sl.polar(s_)[1]),
        (lambda: kl.hessenberg(M), lambda: sl.hessenberg(m)),
        (lambda: kl.schur(S)[0], lambda: sl.schur(s_)[0]),  # (symmetric: a diagonal T, unique up to order)
    ]
    primitive_runs.clear()
    for i, (ours, theirs) in enumerate(cases):
        before = _compiles()
        got = ours()
        assert _compiles() - before <= 1, i  # (none when an earlier test compiled this signature)
        assert primitive_runs == [], i
        close(got, theirs(), 1e-8, msg=str(i))


def test_inexact_arguments_keep_a_float_array_and_convert_the_rest():
    from kiln.frontend.scipy.linalg import _inexact

    x = kiln.numpy.ones((2, 2), np.float32)
    assert _inexact("f", x)[0] is x  # an eager call on one float array takes it as it is
    weak = kiln.numpy.asarray(2.0)  # a weakly typed array becomes a strong one, as on the general path
    (w,) = _inexact("f", weak)
    assert w.dtype == np.float32 and not w.aval.weak_type
    (i,) = _inexact("f", kiln.numpy.ones(2, np.int32))
    assert i.dtype == np.float32
    (c,) = _inexact("f", kiln.numpy.ones(2, np.complex64))
    assert c.dtype == np.complex64
