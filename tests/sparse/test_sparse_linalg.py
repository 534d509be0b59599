"""kiln.experimental.sparse.linalg against NumPy and SciPy: ``lobpcg_standard`` (largest eigenpairs, against
``numpy.linalg.eigh``) and ``spsolve`` (against ``scipy.sparse.linalg.spsolve`` / ``numpy.linalg.solve``), eagerly,
under jit and vmap, their derivatives, and the error paths."""
import numpy as np
import pytest
import scipy.sparse as ssp
import scipy.sparse.linalg as ssla

import kiln
import kiln.numpy as jnp
from kiln.experimental.sparse import BCOO
from kiln.experimental.sparse.linalg import lobpcg_standard, spsolve

RNG = np.random.default_rng(0)


# --- lobpcg_standard ---------------------------------------------------------------------------------------

def _symmetric(n, spectrum, seed):
    """A dense symmetric matrix with the given eigenvalues (a random orthogonal basis)."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    return (q * spectrum) @ q.T


def _start(n, k, seed=1, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal((n, k)).astype(dtype)


def _check_eigenpairs(A, theta, U, k, rtol):
    """theta are the k largest eigenvalues of A (descending), U's columns their eigenvectors up to sign."""
    w, V = np.linalg.eigh(np.asarray(A, np.float64))
    w, V = w[::-1][:k], V[:, ::-1][:, :k]
    theta, U = np.asarray(theta, np.float64), np.asarray(U, np.float64)
    scale = np.abs(w).max()
    np.testing.assert_allclose(theta, w, rtol=0, atol=rtol * scale)
    np.testing.assert_allclose(np.abs(np.sum(U * V, axis=0)), np.ones(k), atol=10 * rtol)
    np.testing.assert_allclose(U.T @ U, np.eye(k), atol=10 * rtol)


@pytest.mark.parametrize("n,k,spectrum", [
    (40, 3, lambda n: np.linspace(1.0, 10.0, n) ** 2),    # well separated, positive
    (60, 5, lambda n: np.linspace(-3.0, 8.0, n)),          # indefinite, evenly spaced
    (50, 2, lambda n: 2.0 ** -np.arange(n)[::-1] * 50),    # geometric decay
])
def test_lobpcg_dense_matches_eigh(n, k, spectrum):
    A = _symmetric(n, spectrum(n), seed=n).astype(np.float32)
    theta, U, i = lobpcg_standard(A, _start(n, k))
    assert theta.shape == (k,) and theta.dtype == np.float32
    assert U.shape == (n, k) and U.dtype == np.float32
    assert i.shape == () and i.dtype == np.int32 and 0 < int(i) < 100  # converged before m=100
    _check_eigenpairs(A, theta, U, k, rtol=1e-4)


def test_lobpcg_under_jit_and_with_callable_operator():
    n, k = 48, 3
    d = np.linspace(0.0, 4.0, n).astype(np.float32)
    u = (RNG.standard_normal((n, 2)) / np.sqrt(n)).astype(np.float32)
    dense = np.diag(d) + 6 * u @ u.T  # a diagonal plus a rank-2 update: a matrix-free operator

    def operator(V):
        return d[:, None] * V + 6 * (u @ (u.T @ V))

    X = _start(n, k, seed=3)
    eager = lobpcg_standard(dense, X)
    jitted = kiln.jit(lobpcg_standard, static_argnames="m")(dense, X, m=60)
    op_eager = lobpcg_standard(operator, X)
    op_jitted = kiln.jit(lambda X: lobpcg_standard(operator, X))(X)
    for theta, U, i in (eager, jitted, op_eager, op_jitted):
        _check_eigenpairs(dense, theta, U, k, rtol=1e-4)
        assert 0 < int(i) < 100
    # the dense path compiles the same program eagerly and under jit
    np.testing.assert_allclose(np.asarray(jitted[0]), np.asarray(eager[0]), rtol=1e-6)
    assert int(jitted[2]) == int(eager[2])


def test_lobpcg_sparse_matrix_operator():
    n, k = 60, 3
    M = ssp.random(n, n, density=0.1, random_state=4, dtype=np.float32)
    A = (M + M.T + ssp.diags(np.arange(n, dtype=np.float32))).toarray().astype(np.float32)
    X = _start(n, k)
    theta, U, i = lobpcg_standard(BCOO.fromdense(A), X)
    _check_eigenpairs(A, theta, U, k, rtol=1e-4)
    theta_j, _, i_j = kiln.jit(lobpcg_standard)(BCOO.fromdense(A), X)
    np.testing.assert_allclose(np.asarray(theta_j), np.asarray(theta), rtol=1e-5)
    # Eagerly the sparse products are programs of their own, under jit fused into the loop: their float32
    # sums round differently in the last bits, and the stopping test may pass one iteration apart (27 vs 28
    # on this matrix, with scipy 1.17.1 and NumPy 2.4.6).
    assert abs(int(i_j) - int(i)) <= 1


def test_lobpcg_vmap_with_traced_tol():
    n, k = 40, 2
    As = np.stack([_symmetric(n, np.linspace(1.0, 10.0, n) ** 2, seed=s) for s in (8, 9)]).astype(np.float32)
    Xs = np.stack([_start(n, k, seed=s) for s in (8, 9)])
    theta, U, i = kiln.vmap(lambda A, X, tol: lobpcg_standard(A, X, tol=tol), in_axes=(0, 0, None))(As, Xs, 1e-6)
    assert theta.shape == (2, k) and U.shape == (2, n, k) and i.shape == (2,)
    for b in range(2):  # a Python loop over the batch is the oracle
        theta_b, U_b, _ = lobpcg_standard(As[b], Xs[b], tol=1e-6)
        _check_eigenpairs(As[b], theta[b], U[b], k, rtol=1e-4)
        np.testing.assert_allclose(np.asarray(theta[b]), np.asarray(theta_b), rtol=1e-5)


def test_lobpcg_float64():
    with kiln.config.override("enable_x64", True):
        n, k = 40, 3
        A = _symmetric(n, np.linspace(1.0, 20.0, n), seed=5)
        theta, U, i = lobpcg_standard(A, _start(n, k, dtype=np.float64))
        assert theta.dtype == np.float64 and U.dtype == np.float64
        _check_eigenpairs(A, theta, U, k, rtol=1e-10)


def test_lobpcg_iteration_count_and_tolerance():
    n, k = 40, 2
    A = _symmetric(n, np.linspace(1.0, 2.0, n), seed=6).astype(np.float32)  # slow: clustered spectrum
    X = _start(n, k)
    _, _, i_full = lobpcg_standard(A, X)
    theta, U, i = lobpcg_standard(A, X, m=3)  # stopped by m, not converged
    assert int(i) == 3 < int(i_full)
    assert theta.shape == (k,) and U.shape == (n, k)
    _, _, i_loose = lobpcg_standard(A, X, tol=1e-3)  # a looser tolerance stops sooner
    assert int(i_loose) < int(i_full)
    # m=0: no iteration; U is X orthonormalized and theta its Rayleigh quotients
    theta0, U0, i0 = lobpcg_standard(A, X, m=0)
    assert int(i0) == 0
    U0 = np.asarray(U0, np.float64)
    np.testing.assert_allclose(U0.T @ U0, np.eye(k), atol=1e-5)
    q, _ = np.linalg.qr(X.astype(np.float64))
    np.testing.assert_allclose(q @ (q.T @ U0), U0, atol=1e-5)  # same span as X
    np.testing.assert_allclose(np.asarray(theta0), np.sum(U0 * (A @ U0), axis=0), rtol=1e-5)


def test_lobpcg_agrees_with_jax():
    jax = pytest.importorskip("jax")
    from jax.experimental.sparse import linalg as jax_linalg
    n, k = 50, 4
    A = _symmetric(n, np.linspace(1.0, 10.0, n) ** 2, seed=7).astype(np.float32)
    X = _start(n, k)
    theta, _, i = lobpcg_standard(A, X)
    theta_jax, _, i_jax = jax_linalg.lobpcg_standard(jax.numpy.asarray(A), jax.numpy.asarray(X))
    np.testing.assert_allclose(np.asarray(theta), np.asarray(theta_jax), rtol=1e-4)
    assert abs(int(i) - int(i_jax)) <= 2


@pytest.mark.parametrize("A,X,error,match", [
    (np.eye(30, dtype=np.float32), np.ones(30, np.float32), ValueError, r"X must be a 2-D \(n, k\) block"),
    (np.eye(30, dtype=np.float32), np.ones((30, 0), np.float32), ValueError, "X has no columns"),
    (np.eye(30, dtype=np.float32), np.ones((30, 6), np.float32), ValueError, r"5 \* k < n \(5 \* 6 = 30\)"),
    (np.eye(30, dtype=np.float32), np.ones((30, 2), np.int32), TypeError, "X must be float32 or float64"),
    (np.ones((30, 31), np.float32), np.ones((30, 2), np.float32), ValueError, r"square \(30, 30\) matrix"),
    (np.eye(40, dtype=np.float32), np.ones((30, 2), np.float32), ValueError, r"got shape \(40, 40\)"),
    (np.eye(30, dtype=np.int32), np.ones((30, 2), np.float32), ValueError, "same dtype, got A int32"),
    (lambda V: V[:-1], np.ones((30, 2), np.float32), ValueError, r"A\(X\) must have the shape of X \(30, 2\)"),
    (lambda V: V.astype(jnp.int32), np.ones((30, 2), np.float32), ValueError, r"A\(X\) must have the dtype"),
])
def test_lobpcg_bad_inputs(A, X, error, match):
    with pytest.raises(error, match=match):
        lobpcg_standard(A, X)


def test_lobpcg_bad_m():
    A, X = np.eye(30, dtype=np.float32), _start(30, 2)
    with pytest.raises(ValueError, match="m .* must be non-negative"):
        lobpcg_standard(A, X, m=-1)
    with pytest.raises(TypeError, match="m .* must be a Python int"):
        lobpcg_standard(A, X, m=2.5)


# --- spsolve -----------------------------------------------------------------------------------------------

def _csr_system(n, seed, dtype=np.float32, density=0.2):
    """A random well-conditioned (diagonally dominant) CSR matrix and a right-hand side."""
    rng = np.random.default_rng(seed)
    M = ssp.random(n, n, density=density, random_state=seed, format="csr")
    M = (M + ssp.diags(n * 0.5 + rng.random(n))).tocsr().astype(dtype)
    M.sort_indices()
    return M, rng.standard_normal(n).astype(dtype)


@pytest.mark.parametrize("n,seed", [(8, 0), (30, 1)])
def test_spsolve_matches_scipy(n, seed):
    M, b = _csr_system(n, seed)
    x = spsolve(M.data, M.indices, M.indptr, b)
    assert x.shape == (n,) and x.dtype == np.float32
    expected = ssla.spsolve(M.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(np.asarray(x), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(M.toarray(), b), rtol=1e-5, atol=1e-6)
    jitted = kiln.jit(spsolve, static_argnames=("tol", "reorder"))(M.data, M.indices, M.indptr, b, tol=1e-8,
                                                                  reorder=0)
    np.testing.assert_allclose(np.asarray(jitted), expected, rtol=1e-5, atol=1e-6)


def test_spsolve_float64_duplicates_and_padding():
    with kiln.config.override("enable_x64", True):
        # row 0 stores column 1 twice (summed, as SciPy) and the last two entries lie past indptr[-1] (ignored)
        data = np.array([4.0, 1.0, 0.5, 3.0, 2.0, 5.0, 9.0, 9.0])
        indices = np.array([0, 1, 1, 1, 0, 2, 0, 2], np.int32)
        indptr = np.array([0, 3, 4, 6], np.int32)
        b = np.array([1.0, 2.0, 3.0])
        x = spsolve(data, indices, indptr, b)
        assert x.dtype == np.float64
        A = ssp.csr_matrix((data[:6], indices[:6], indptr), shape=(3, 3))
        np.testing.assert_allclose(np.asarray(x), ssla.spsolve(A, b), rtol=1e-12, atol=1e-14)


def test_spsolve_vmap_over_rhs():
    M, _ = _csr_system(10, 2)
    B = RNG.standard_normal((4, 10)).astype(np.float32)
    out = kiln.vmap(lambda b: spsolve(M.data, M.indices, M.indptr, b))(B)
    expected = np.stack([np.linalg.solve(M.toarray(), b) for b in B])
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-6)


def test_spsolve_grad_wrt_b_and_data():
    with kiln.config.override("enable_x64", True):
        M, b = _csr_system(7, 3, dtype=np.float64, density=0.3)
        c = np.random.default_rng(4).standard_normal(7)

        def loss(data, b):
            return jnp.sum(c * spsolve(data, M.indices, M.indptr, b))

        g_data, g_b = kiln.grad(loss, argnums=(0, 1))(M.data, b)
        # analytic: x = A^-1 b, d(c.x)/db = A^-T c, d(c.x)/dA[r, j] = -(A^-T c)[r] x[j]
        A = M.toarray()
        x, lam = np.linalg.solve(A, b), np.linalg.solve(A.T, c)
        rows = np.repeat(np.arange(7), np.diff(M.indptr))
        np.testing.assert_allclose(np.asarray(g_b), lam, rtol=1e-10)
        np.testing.assert_allclose(np.asarray(g_data), -lam[rows] * x[M.indices], rtol=1e-10)
        # central finite differences on every entry of data and b
        eps = 1e-6
        for arr, grad in ((M.data, g_data), (b, g_b)):
            for j in range(arr.size):
                step = np.zeros_like(arr)
                step[j] = eps
                args_p = (M.data + step, b) if arr is M.data else (M.data, b + step)
                args_m = (M.data - step, b) if arr is M.data else (M.data, b - step)
                fd = (float(loss(*args_p)) - float(loss(*args_m))) / (2 * eps)
                np.testing.assert_allclose(float(grad[j]), fd, rtol=1e-6, atol=1e-8)
        # the same derivatives through jit
        g_jit = kiln.jit(kiln.grad(loss, argnums=(0, 1)))(M.data, b)
        np.testing.assert_allclose(np.asarray(g_jit[0]), np.asarray(g_data), rtol=1e-12)


def test_spsolve_singular_matrix_gives_non_finite():
    # as jnp.linalg.solve (and unlike cuSolver's tol-based check): no error, inf/NaN in the result
    x = spsolve(np.array([1.0, 2.0], np.float32), np.array([0, 0], np.int32), np.array([0, 1, 2], np.int32),
                np.ones(2, np.float32))
    assert not np.all(np.isfinite(np.asarray(x)))


_D, _I, _P, _B = (np.ones(3, np.float32), np.array([0, 1, 1], np.int32), np.array([0, 2, 3], np.int32),
                  np.ones(2, np.float32))


@pytest.mark.parametrize("args,kwargs,error,match", [
    ((_D[:2], _I, _P, _B), {}, ValueError, "data and indices must have one length .* got 2 and 3"),
    ((_D, _I, np.array([0, 1, 2, 3], np.int32), _B), {}, ValueError, "must be square.*indptr must have n \\+ 1 = 3"),
    ((_D, _I, _P, np.ones(3, np.float32)), {}, ValueError, "must be square, n x n with n = b.size = 3"),
    ((_D, _I, _P, np.ones((2, 1), np.float32)), {}, ValueError, "must be 1-D arrays, got shapes .*b \\(2, 1\\)"),
    ((_D, _I.astype(np.float32), _P, _B), {}, ValueError, "indices and indptr must be integers"),
    ((_D.astype(np.int32), _I, _P, _B.astype(np.int32)), {}, TypeError, "must be floating point or complex"),
    ((_D, _I, _P, _B.astype(np.int32)), {}, ValueError, "data and b must have the same dtype"),
    ((_D, _I, _P, _B), {"reorder": 4}, ValueError, "reorder must be 0, 1, 2 or 3"),
    ((_D, _I, _P, _B), {"tol": "small"}, TypeError, "tol must be a float"),
])
def test_spsolve_bad_inputs(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        spsolve(*args, **kwargs)


def test_spsolve_traced_tol_is_refused():
    with pytest.raises(kiln.errors.ConcretizationTypeError, match="tol must be a static Python float"):
        kiln.jit(lambda tol: spsolve(_D, _I, _P, _B, tol=tol))(1e-6)
