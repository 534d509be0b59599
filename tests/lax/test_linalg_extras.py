"""kiln.lax.linalg functions of issue 14: hessenberg, tridiagonal, householder_product, ormqr,
tridiagonal_solve, lu_pivots_to_permutation, symmetric_product, cholesky_update, qdwh, eigh/svd's
subset_by_index; against SciPy's LAPACK wrappers (same packed formats) and NumPy, eager and jit,
batched, with grad and vmap where they apply."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import lapack

import kiln
import kiln.numpy as jnp
from kiln import lax

LA = lax.linalg
RNG = np.random.default_rng(0)


def _rand(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _tol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def _close(a, b, dtype=np.float64):
    np.testing.assert_allclose(np.asarray(a), b, rtol=_tol(dtype), atol=_tol(dtype))


def _lapack(name, dtype):
    prefix = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}[np.dtype(dtype).type]
    return getattr(lapack, prefix + name)


DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.fixture(autouse=True)
def _x64():
    kiln.config.update("enable_x64", True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hessenberg_and_tridiagonal_match_lapack(dtype):
    a = _rand((5, 5), dtype)
    herm = a + a.conj().T
    (packed, taus), *tri = kiln.jit(lambda a, s: (LA.hessenberg(a), LA.tridiagonal(s, lower=True),
                                                  LA.tridiagonal(s, lower=False)))(a, herm)
    ref, ref_taus, _ = _lapack("gehrd", dtype)(a)
    _close(packed, ref, dtype)
    _close(taus, ref_taus, dtype)
    trd = "hetrd" if np.dtype(dtype).kind == "c" else "sytrd"
    for lower, out in zip((True, False), tri):
        c, d, e, t, _ = _lapack(trd, dtype)(herm, lower=int(lower))
        for got, want in zip(out, (c, d, e, t)):
            _close(got, want, dtype)
        assert out[1].dtype == np.real(np.zeros((), dtype)).dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_householder_product_and_ormqr_match_lapack(dtype):
    m = _rand((6, 4), dtype)
    qr, taus, _, _ = _lapack("geqrf", dtype)(m)
    orgqr = "ungqr" if np.dtype(dtype).kind == "c" else "orgqr"
    _close(LA.householder_product(qr, taus), _lapack(orgqr, dtype)(qr, taus)[0], dtype)
    full_q = _lapack(orgqr, dtype)(np.pad(qr, ((0, 0), (0, 2))), np.pad(taus, (0, 2)))[0]
    c = _rand((6, 3), dtype)
    outs = kiln.jit(lambda qr, t, c: (LA.ormqr(qr, t, c), LA.ormqr(qr, t, c, transpose=True),
                                      LA.ormqr(qr, t, c.T, left=False),
                                      LA.ormqr(qr, t, c.T, left=False, transpose=True)))(qr, taus, c)
    for got, want in zip(outs, (full_q @ c, full_q.conj().T @ c, c.T @ full_q, c.T @ full_q.conj().T)):
        _close(got, want, dtype)


def test_reductions_batched_and_vmapped():
    a = _rand((3, 4, 4), np.float64)
    packed, taus = kiln.jit(LA.hessenberg)(a)
    for i in range(3):
        ref, ref_taus, _ = lapack.dgehrd(a[i])
        _close(packed[i], ref)
        _close(taus[i], ref_taus)
    vp, vt = kiln.jit(kiln.vmap(LA.hessenberg))(a)
    _close(vp, np.asarray(packed))
    # Q from the packed reflectors reproduces a = Q H Q^T
    q = np.eye(4)
    q[1:, 1:] = np.asarray(LA.householder_product(np.asarray(packed[0])[1:, :-1], np.asarray(taus[0])))
    h = np.triu(np.asarray(packed[0]), -1)
    _close(q @ h @ q.T, a[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_tridiagonal_solve(dtype):
    m = 6
    dl, d, du = _rand((2, m), dtype), _rand((2, m), dtype) + 4, _rand((2, m), dtype)
    b = _rand((2, m, 3), dtype)
    x = kiln.jit(LA.tridiagonal_solve)(dl, d, du, b)
    for i in range(2):
        t = np.diag(d[i]) + np.diag(dl[i, 1:], -1) + np.diag(du[i, :-1], 1)
        _close(x[i], np.linalg.solve(t, b[i]), dtype)
    _close(kiln.vmap(LA.tridiagonal_solve)(dl, d, du, b), np.asarray(x), dtype)


def test_tridiagonal_solve_grad_and_singular():
    m = 5
    dl, d, du, b = _rand((m,), np.float64), _rand((m,), np.float64) + 4, _rand((m,), np.float64), _rand((m, 1),
                                                                                                        np.float64)
    t = np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)
    g_b, g_d = kiln.grad(lambda b, d: jnp.sum(LA.tridiagonal_solve(dl, d, du, b)), argnums=(0, 1))(b, d)
    w = np.linalg.solve(t.T, np.ones(m))  # d/db sum(T^-1 b) = T^-T 1; d/dd_i = -w_i x_i
    _close(g_b[:, 0], w)
    _close(g_d, -w * np.linalg.solve(t, b)[:, 0])
    z = np.zeros(3)
    out = LA.tridiagonal_solve(z, z, z, np.ones((3, 1)), perturb_singular=True)
    assert np.all(np.isfinite(np.asarray(out)))


def test_pivots_symmetric_product_cholesky_update_qdwh_subsets():
    np.testing.assert_array_equal(LA.lu_pivots_to_permutation(np.array([2, 2, 3, 3], np.int32), 5), [2, 0, 3, 1, 4])
    a = _rand((2, 5, 5), np.float64)
    perms = kiln.jit(lambda a: (lambda lu, piv, perm: (LA.lu_pivots_to_permutation(piv, 5), perm))(*LA.lu(a)))(a)
    np.testing.assert_array_equal(np.asarray(perms[0]), np.asarray(perms[1]))
    x, c = _rand((4, 3), np.float64), _rand((4, 4), np.float64)
    _close(LA.symmetric_product(x, c, alpha=2.0, beta=0.5), 2 * x @ x.T + 0.5 * c)
    sym = np.asarray(LA.symmetric_product(x, c, beta=1.0, symmetrize_output=True))
    _close(sym, np.tril(x @ x.T + c) + np.tril(x @ x.T + c, -1).T)
    r = np.linalg.cholesky(np.cov(RNG.standard_normal((3, 10))) + np.eye(3)).T
    w = RNG.standard_normal(3)
    _close(LA.cholesky_update(r, w), np.linalg.cholesky(r.T @ r + np.outer(w, w)).T)
    g = kiln.jit(kiln.grad(lambda w: jnp.sum(LA.cholesky_update(r, w))))(w)
    assert np.all(np.isfinite(np.asarray(g)))
    u, h, iters, converged = kiln.jit(LA.qdwh)(x)
    _close(np.asarray(u) @ np.asarray(h), x)
    _close(np.asarray(u).T @ np.asarray(u), np.eye(3))
    _close(h, np.asarray(h).T)
    assert int(iters) == 0 and bool(converged)
    s = c + c.T
    v, w_sub = LA.eigh(s, subset_by_index=(1, 3), implementation=LA.EighImplementation.JACOBI)
    _close(w_sub, np.linalg.eigvalsh(s)[1:3])
    _close(s @ np.asarray(v), np.asarray(v) * np.asarray(w_sub))
    u2, s2, vh2 = LA.svd(x, full_matrices=False, subset_by_index=(0, 2), algorithm=LA.SvdAlgorithm.JACOBI)
    _close(s2, np.linalg.svd(x, compute_uv=False)[:2])
    assert u2.shape == (4, 2) and vh2.shape == (2, 3)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: LA.hessenberg(np.ones((2, 3))), np.linalg.LinAlgError, "must be square"),
    (lambda: LA.hessenberg(np.ones((2, 2), np.int32)), TypeError, "must be float32, float64"),
    (lambda: LA.householder_product(np.ones((3, 2)), np.ones(3)), ValueError, "k <= n"),
    (lambda: LA.ormqr(np.ones((3, 2)), np.ones(2), np.ones((4, 2))), ValueError, "c must have 3 rows"),
    (lambda: LA.tridiagonal_solve(np.ones(3), np.ones(3), np.ones(2), np.ones((3, 1))), ValueError,
     "dl, d and du must be"),
    (lambda: LA.lu_pivots_to_permutation(np.ones(4, np.int32), 3), ValueError, "k <= permutation_size"),
    (lambda: LA.symmetric_product(np.ones((3, 2)), np.ones((2, 2))), ValueError, r"c_matrix must be \(3, 3\)"),
    (lambda: LA.cholesky_update(np.eye(3), np.ones(2)), ValueError, r"w_vector must be \(3,\)"),
    (lambda: LA.qdwh(np.ones((2, 3))), np.linalg.LinAlgError, "at least as many rows"),
    (lambda: LA.eigh(np.eye(3), subset_by_index=(2, 5)), ValueError, "0 <= lo <= hi <= 3"),
    (lambda: LA.eigh(np.eye(3), implementation="qr"), TypeError, "EighImplementation"),
    (lambda: LA.svd(np.eye(3), subset_by_index=(0, 1)), ValueError, "needs full_matrices=False"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
