"""kiln.scipy.sparse.linalg (cg, gmres, bicgstab) against NumPy and SciPy: solutions, truncated iterations
(maxiter), tolerances, pytrees, callable operators and preconditioners, jit, vmap (against a Python loop),
derivatives (against the analytic gradient of np.linalg.solve and finite differences); error messages."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.linalg as ssl

import kiln
import kiln.numpy as jnp
from kiln.experimental import sparse as ksparse
from kiln.scipy.sparse import linalg as kl

rng = np.random.default_rng(11)
N = 6
_G = rng.standard_normal((N, N))
SPD = _G @ _G.T + N * np.eye(N)                  # symmetric positive definite (cg)
NONSYM = _G + 4 * np.eye(N)                      # nonsymmetric, well conditioned (gmres, bicgstab)
B = rng.standard_normal(N)
X0 = rng.standard_normal(N)
W = rng.standard_normal(N)                       # weights of the scalar loss w . x in the gradient tests

SOLVERS = {
    "cg": lambda *a, **k: kl.cg(*a, **k),
    "gmres-batched": lambda *a, **k: kl.gmres(*a, solve_method="batched", **k),
    "gmres-incremental": lambda *a, **k: kl.gmres(*a, solve_method="incremental", **k),
    "bicgstab": lambda *a, **k: kl.bicgstab(*a, **k),
}
RESTART = 3  # gmres's restart in the tests that compare iterates with SciPy's


def matrix_for(name: str) -> np.ndarray:
    return SPD if name == "cg" else NONSYM


# Compiling a solver costs far more than running it: the tests share these jitted functions, whose tol, atol,
# maxiter (traced: the solvers accept arrays), x0 and preconditioner M (a matrix) are arguments.
def _general(name):
    extra = {"restart": RESTART} if name.startswith("gmres") else {}
    return kiln.jit(lambda a, b, x0, m, tol, atol, maxiter: SOLVERS[name](
        a, b, x0=x0, M=m, tol=tol, atol=atol, maxiter=maxiter, **extra)[0])


GENERAL = {name: _general(name) for name in SOLVERS}
SIMPLE = {name: kiln.jit(lambda a, b, name=name: SOLVERS[name](a, b)[0]) for name in SOLVERS}
EYE6 = np.eye(N)


def jacobi(a):
    return np.diag(1 / np.diag(a))


@pytest.fixture
def x64():
    with kiln.config.override("enable_x64", True):
        yield


def close(x, y, tol, msg=""):
    np.testing.assert_allclose(np.asarray(x), y, rtol=tol, atol=tol, err_msg=msg)


def _scipy(name, a, b, **kw):
    kw["rtol"] = kw.pop("tol")
    if name == "cg":
        return ssl.cg(a, b, **kw)[0]
    if name == "bicgstab":
        return ssl.bicgstab(a, b, **kw)[0]
    return ssl.gmres(a, b, restart=RESTART, **kw)[0]


# -- solutions ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(SOLVERS))
def test_solution_float32_defaults(name):
    a = matrix_for(name)
    x = SIMPLE[name](a.astype(np.float32), B.astype(np.float32))
    assert x.dtype == np.float32 and x.shape == (N,)
    # The stopping test (tol=1e-5, relative residual), and the error it implies (cond(A) is ~10).
    residual = np.linalg.norm(a @ np.asarray(x, np.float64) - B)
    assert residual <= 2e-5 * np.linalg.norm(B), residual
    close(x, np.linalg.solve(a, B), 1e-4)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_solution_float64_with_x0_and_preconditioner(name, x64):
    a = matrix_for(name)
    for x0, m in ((X0, EYE6), (np.zeros(N), jacobi(a))):
        x = GENERAL[name](a, B, x0, m, 1e-12, 0.0, 100)
        assert x.dtype == np.float64
        close(x, np.linalg.solve(a, B), 1e-10)
    # b = 0 gives 0 (no 0/0 anywhere); an exact x0 comes back unchanged, after no iteration.
    np.testing.assert_array_equal(np.asarray(GENERAL[name](a, 0 * B, 0 * B, EYE6, 1e-5, 0.0, 100)), 0 * B)
    exact = np.linalg.solve(a, B)
    np.testing.assert_array_equal(np.asarray(GENERAL[name](a, B, exact, EYE6, 1e-5, 0.0, 0)), exact)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_truncated_iterations_match_scipy(name, x64):
    """maxiter iterations (restart cycles for gmres) that do not converge give SciPy's iterate, with and
    without a Jacobi preconditioner."""
    a = matrix_for(name)
    for m in (EYE6, jacobi(a)):
        for k in (1, 2, 3):
            x = np.asarray(GENERAL[name](a, B, X0, m, 1e-12, 0.0, k))
            assert np.linalg.norm(a @ x - B) > 1e-6 * np.linalg.norm(B), "the test needs an unconverged iterate"
            expected = _scipy(name, a, B, x0=X0, M=m, maxiter=k, tol=1e-12, atol=0.0)
            close(x, expected, 1e-10, msg=f"{name} maxiter={k}")


def test_one_step_by_hand(x64):
    """One CG iteration from zero, derived by hand: a step along b with alpha = b.b / b.Ab."""
    alpha = B @ B / (B @ SPD @ B)
    close(GENERAL["cg"](SPD, B, 0 * B, EYE6, 1e-12, 0.0, 1), alpha * B, 1e-12)


@pytest.mark.parametrize("name", list(SOLVERS))
def test_stopping_rule_tol_and_atol(name, x64):
    """The iteration stops once norm(r) <= max(tol * norm(b), atol); the first such iterate, as SciPy's
    (gmres 'batched' completes its restart cycle, so only the rule is checked)."""
    a = matrix_for(name)
    bnorm = np.linalg.norm(B)
    for tol, atol in ((0.05, 0.0), (0.0, 0.05 * bnorm), (1e-3, 0.2 * bnorm)):
        x = np.asarray(GENERAL[name](a, B, 0 * B, EYE6, tol, atol, 100))
        assert np.linalg.norm(a @ x - B) <= max(tol * bnorm, atol)
        assert np.linalg.norm(x - np.linalg.solve(a, B)) > 1e-6, "loose tolerances stop early"
        if name != "gmres-batched":
            close(x, _scipy(name, a, B, tol=tol, atol=atol), 1e-10, msg=f"tol={tol} atol={atol}")


def test_half_precision_gmres():
    """bfloat16 operands: the small dense factorisations run in float32 (LAPACK has no half precision)."""
    x, _ = kl.gmres(jnp.asarray(NONSYM, jnp.bfloat16), jnp.asarray(B, jnp.bfloat16), tol=1e-2)
    assert x.dtype == jnp.bfloat16
    close(np.asarray(x, np.float64), np.linalg.solve(NONSYM, B), 3e-2)


def test_integer_operands_give_floats():
    x, _ = kl.cg(np.array([[2, 0], [0, 4]]), np.array([2, 2]))
    assert x.dtype == np.float32
    close(x, [1.0, 0.5], 1e-6)


def test_complex(x64):
    g = rng.standard_normal((N, N)) + 1j * rng.standard_normal((N, N))
    herm = g @ g.conj().T + N * np.eye(N)
    b = rng.standard_normal(N) + 1j * rng.standard_normal(N)
    close(kl.cg(herm, b, tol=1e-12)[0], np.linalg.solve(herm, b), 1e-10)
    nonsym = g + 4 * np.eye(N)
    close(kl.gmres(nonsym, b, tol=1e-12)[0], np.linalg.solve(nonsym, b), 1e-10)
    close(kl.bicgstab(nonsym, b, tol=1e-12)[0], np.linalg.solve(nonsym, b), 1e-10)


def test_matrix_right_hand_sides(x64):
    """An (n, k) b with a matrix A: the operator X -> A X, solved as one vector (as JAX)."""
    rhs = rng.standard_normal((N, 2))
    close(kl.cg(SPD, rhs, tol=1e-12)[0], np.linalg.solve(SPD, rhs), 1e-10)


def test_sparse_matrix_operator():
    """An object with ``@`` and ``shape`` (kiln's BCOO) is applied as a matrix."""
    a = SPD.copy()
    a[np.abs(a) < 1] = 0
    x, _ = kl.cg(ksparse.BCOO.fromdense(a.astype(np.float32)), B.astype(np.float32))
    close(x, np.linalg.solve(a, B), 1e-4)


def test_gmres_info():
    """gmres's second result: 0, or -1 when the solution holds NaN (here a NaN x0, which stops at once)."""
    solve = kiln.jit(lambda x0: kl.gmres(NONSYM.astype(np.float32), B.astype(np.float32), x0=x0))
    x, info = solve(np.zeros(N, np.float32))
    assert info.shape == () and int(info) == 0
    close(x, np.linalg.solve(NONSYM, B), 1e-4)
    _, info = solve(np.full(N, np.nan, np.float32))
    assert int(info) == -1


# -- pytrees and callable operators ------------------------------------------------------------------------

# A linear operator on {"u": (2,), "v": (2, 2)} (6 unknowns): the matrix acting on the flattened vector.
def _flatten(t):
    return np.concatenate([np.ravel(t["u"]), np.ravel(t["v"])])


def _unflatten(v):
    return {"u": v[:2], "v": v[2:].reshape(2, 2)}


def _tree_op(mat):
    def apply(t):
        out = jnp.matmul(mat, jnp.concatenate([t["u"].reshape(-1), t["v"].reshape(-1)]))
        return {"u": out[:2], "v": out[2:].reshape(2, 2)}
    return apply


@pytest.mark.parametrize("name", list(SOLVERS))
def test_pytree_rhs_with_callable_operator_and_preconditioner(name, x64):
    a = matrix_for(name)
    diag = _unflatten(np.diag(a))
    precond = (lambda t: {"u": t["u"] / diag["u"], "v": t["v"] / diag["v"]})
    x, _ = SOLVERS[name](_tree_op(a), _unflatten(B), x0=_unflatten(X0), M=precond, tol=1e-12)
    assert set(x) == {"u", "v"} and x["u"].shape == (2,) and x["v"].shape == (2, 2)
    close(_flatten(x), np.linalg.solve(a, B), 1e-10)


def test_tuple_pytree_of_mixed_shapes():
    b = (B[:1].astype(np.float32), B[1:].astype(np.float32))
    diag = np.diag(SPD)
    x, _ = kl.cg(lambda t: (t[0] * diag[0], t[1] * diag[1:]), b)
    close(x[0], B[:1] / diag[0], 1e-5)
    close(x[1], B[1:] / diag[1:], 1e-5)


# -- vmap ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(SOLVERS))
def test_vmap_matches_a_loop(name):
    """Batched matrices and right-hand sides (each solve converging after a different number of
    iterations): as the solver called on each."""
    a = matrix_for(name).astype(np.float32)
    rhs = rng.standard_normal((3, N)).astype(np.float32)
    mats = np.stack([a, a + 3 * np.eye(N), 2 * a]).astype(np.float32)
    got = kiln.vmap(SIMPLE[name])(mats, rhs)
    close(got, np.stack([np.asarray(SIMPLE[name](m, r)) for m, r in zip(mats, rhs)]), 1e-5)
    close(got, np.stack([np.linalg.solve(m, r) for m, r in zip(mats, rhs)]), 1e-4)


def test_vmap_over_rhs_only():
    a = SPD.astype(np.float32)
    rhs = rng.standard_normal((3, N)).astype(np.float32)
    got = kiln.vmap(SIMPLE["cg"], in_axes=(None, 0))(a, rhs)
    close(got, np.stack([np.asarray(SIMPLE["cg"](a, r)) for r in rhs]), 1e-5)


# -- derivatives --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(SOLVERS))
def test_grad_wrt_b_and_matrix(name, x64):
    """L = w . x with A x = b: dL/db = A^-T w, dL/dA = -(A^-T w) x^T."""
    a = matrix_for(name)
    loss = lambda a, b: jnp.dot(W, SOLVERS[name](a, b, tol=1e-12)[0])  # noqa: E731
    ga, gb = kiln.jit(kiln.grad(loss, argnums=(0, 1)))(a, B)
    lam = np.linalg.solve(a.T, W)
    close(gb, lam, 1e-8)
    close(ga, -np.outer(lam, np.linalg.solve(a, B)), 1e-8)


@pytest.mark.parametrize("name", ["cg", "bicgstab"])
def test_derivatives_through_closure_vs_finite_differences(name, x64):
    """A callable operator closing over a parameter: reverse and forward mode against central differences."""
    a = matrix_for(name)
    perturb = rng.standard_normal((N, N))
    perturb = perturb + perturb.T if name == "cg" else perturb  # keep cg's operator symmetric

    def f(theta):
        mat = a + theta * perturb
        x, _ = SOLVERS[name](lambda v: jnp.matmul(mat, v), B, tol=1e-13)
        return jnp.dot(W, x)

    def exact(theta):
        return W @ np.linalg.solve(a + theta * perturb, B)
    theta, h = 0.3, 1e-5
    fd = (exact(theta + h) - exact(theta - h)) / (2 * h)
    close(kiln.jit(kiln.grad(f))(theta), fd, 1e-6)
    close(kiln.jit(lambda t: kiln.jvp(f, (t,), (1.0,))[1])(theta), fd, 1e-6)


def test_grad_float32_under_vmap():
    a = SPD.astype(np.float32)
    rhs = rng.standard_normal((2, N)).astype(np.float32)
    grads = kiln.vmap(kiln.grad(lambda b: jnp.sum(kl.cg(a, b)[0] ** 2)))(rhs)
    expected = [2 * np.linalg.solve(SPD.T, np.linalg.solve(SPD, r)) for r in rhs]
    close(grads, np.stack(expected), 1e-4)


# -- errors -------------------------------------------------------------------------------------------------

F32 = np.ones(3, np.float32)
EYE = np.eye(3, dtype=np.float32)


@pytest.mark.parametrize("call, error, match", [
    (lambda: kl.cg(np.ones((3, 4), np.float32), F32), kiln.MatrixShapeError,
     r"cg: A must be a square matrix \(n, n\).*got an array of shape \(3, 4\)"),
    (lambda: kl.gmres(np.ones((2, 3, 3), np.float32), F32), ValueError,
     r"gmres: A must be a square matrix.*shape \(2, 3, 3\)"),
    (lambda: kl.bicgstab(EYE, F32, M=np.ones((2, 2), np.float32)), kiln.ShapeError,
     r"bicgstab: M of shape \(2, 2\) does not match b of shape \(3,\).*b must have shape \(2,\) or \(2, k\)"),
    (lambda: kl.cg(EYE, np.ones(4, np.float32)), kiln.ShapeError,
     r"cg: A of shape \(3, 3\) does not match b of shape \(4,\)"),
    (lambda: kl.cg(EYE, {"a": F32}), kiln.ShapeError,
     r"A is a matrix, so b must be one array.*for pytrees pass A as a function"),
    (lambda: kl.gmres(EYE, F32, solve_method="qr"), ValueError,
     r"gmres: solve_method must be 'batched' or 'incremental', got 'qr'"),
    (lambda: kl.gmres(EYE, F32, restart=0), ValueError, r"restart must be a positive integer.*got 0"),
    (lambda: kl.gmres(EYE, F32, restart=2.5), TypeError, r"restart must be a positive integer, got 2.5"),
    (lambda: kl.cg(lambda x: x, {"a": F32}, x0=(F32,)), ValueError,
     r"cg: x0 and b must have the same pytree structure.*x0 shaped like b"),
    (lambda: kl.bicgstab(lambda x: x, {"a": F32}, x0={"a": np.ones(4, np.float32)}), ValueError,
     r"bicgstab: the arrays of x0 and b must have the same shapes, got \[\(4,\)\] for x0 and \[\(3,\)\]"),
    (lambda: kl.cg(lambda x: x[:2], F32), ValueError,
     r"cg: A\(x\) must return a pytree like b \(float32\[3\]\).*returned .*float32\[2\]"),
    (lambda: kl.gmres(lambda x: x.astype(jnp.float16), F32), ValueError,
     r"gmres: A\(x\) must return a pytree like b.*float16\[3\].*cast b to the operator's dtype"),
    (lambda: kl.cg(EYE, F32, M=lambda x: {"z": x}), ValueError, r"cg: M\(x\) must return a pytree like b"),
    (lambda: kl.cg("A", F32), TypeError, r"cg: A must be a square matrix \(an array\) or a function.*got str"),
    (lambda: kl.cg(EYE, F32, maxiter=2.5), TypeError, r"cg: maxiter must be an integer or None, got 2.5"),
    (lambda: kl.cg(lambda x: x, {}), ValueError, r"cg: b has no arrays"),
    (lambda: kl.cg(lambda x: x, ["x"]), TypeError, r"b must be an array or a pytree of arrays, but it holds a str"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
