"""JAX's examples/control.py, hmm_em.py, pca_from_scratch.py and physical_optimization.py, and the code cells of its
docs page stateful-computations.md, ported by changing imports.

The ports are in tests/examples/jax_ported/. Per script: its functions at a tiny size checked against NumPy/SciPy
oracles (control.py also with the cases of JAX's examples/control_test.py, restated for pytest), and, where JAX is
importable (the against_jax session), the same source with JAX's imports put back, compared number for number.
"""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import scipy.linalg
import scipy.special
from ported import load

import kiln
import kiln.numpy as jnp
from kiln import lax


def _np(tree):
    return [np.asarray(x) for x in kiln.tree_util.tree_leaves(tree)]


# ================================================ control.py ================================================

@pytest.fixture(scope="module")
def control():
    return load("control")


def _one_step_lqr(control, dim, T):
    Q = jnp.stack(T * (jnp.eye(dim),))
    q = jnp.zeros((T, dim))
    R = jnp.zeros((T, dim, dim))
    r = jnp.zeros((T, dim))
    M = jnp.zeros((T, dim, dim))
    A = jnp.stack(T * (jnp.eye(dim),))
    B = jnp.stack(T * (jnp.eye(dim),))
    return control.LqrSpec(Q, q, R, r, M, A, B)


def _control_from_lqr(control, lqr):
    T, dim, _ = lqr.Q.shape
    dot = jnp.dot

    def cost(t, x, u):
        return (dot(dot(lqr.Q[t], x), x) + dot(lqr.q[t], x) + dot(dot(lqr.R[t], u), u) + dot(lqr.r[t], u)
                + dot(dot(lqr.M[t], u), x))

    def dynamics(t, x, u):
        return dot(lqr.A[t], x) + dot(lqr.B[t], u)

    return control.ControlSpec(cost, dynamics, T, dim, dim)


def _one_step_control(control, dim, T):
    return control.ControlSpec(lambda t, x, u: jnp.dot(x, x), lambda t, x, u: x + u, T, dim, dim)


def _nonlinear(t, x, u):
    return (x ** 2. - u ** 2.) / (t + 1).astype(x.dtype)


def _nonlinear_cost(t, x, u):
    return (x[0] ** 2. + 1e-3 * u[0] ** 2.) / (t + 1).astype(x.dtype)


# --- the cases of JAX's examples/control_test.py (absltest there), same sizes and tolerances ---

def test_control_trajectory_cyclic_integer_counter(control):
    num_states, T = 3, 10

    def dynamics(t, x, u):
        return (x + u) % num_states

    X = control.trajectory(dynamics, jnp.ones((T, 1)), jnp.zeros(1))
    np.testing.assert_allclose(X, np.reshape(np.arange(T + 1) % num_states, (T + 1, 1)))
    X = control.trajectory(dynamics, 2 * jnp.ones((T, 1)), jnp.zeros(1))
    expected = np.concatenate((np.zeros(1), np.cumsum(2 * np.ones(T)) % num_states))
    np.testing.assert_allclose(X, np.reshape(expected, (T + 1, 1)))


def test_control_trajectory_time_varying(control):
    T = 6

    def clip(x, lo, hi):
        return jnp.minimum(hi, jnp.maximum(lo, x))

    def dynamics(t, x, u):  # (x + u) if t > T else 0
        return (x + u) * clip(t - T, 0, 1)

    X = control.trajectory(dynamics, jnp.ones((2 * T, 1)), jnp.zeros(1))
    expected = np.concatenate((np.zeros(T + 1), np.arange(T, dtype=float)))
    np.testing.assert_allclose(X, np.reshape(expected, (2 * T + 1, 1)))


def test_control_trajectory_cyclic_indicator(control):
    num_states, T = 3, 8

    def position(x):  # the index of a standard basis vector, e.g. [0, 1, 0] -> 1
        return jnp.sum(1 - jnp.cumsum(x), dtype=jnp.int32)

    def dynamics(t, x, u):  # moves to the next standard basis vector
        idx = (position(x) + u[0]) % num_states
        return lax.dynamic_slice_in_dim(jnp.eye(num_states, dtype=jnp.int32), idx, 1)[0]

    U = jnp.ones((T, 1), dtype=jnp.int32)
    X = control.trajectory(dynamics, U, jnp.eye(num_states, dtype=jnp.int32)[0])
    np.testing.assert_allclose(X, np.vstack((np.eye(num_states),) * 3))


def test_control_lqr_solve_one_step(control):
    dim, T = 2, 10
    K, k = control.lqr_solve(_one_step_lqr(control, dim, T))
    np.testing.assert_allclose(K, -np.stack(T * (np.eye(dim),)), atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(k, np.zeros((T, dim)))


def test_control_lqr_predict_one_step(control):
    dim, T = 2, 10
    x0 = jnp.array(np.random.default_rng(0).normal(size=dim))
    X, U = control.lqr_predict(_one_step_lqr(control, dim, T), x0)
    np.testing.assert_allclose(X[0], x0)
    np.testing.assert_allclose(U[0], -x0, atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(X[1:], np.zeros((T, 2)), atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(U[1:], np.zeros((T - 1, 2)), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("general", [False, True], ids=["lqr_problem", "specified_generally"])
def test_control_ilqr_with_lqr_problem(control, general):
    dim, T, num_iters = 2, 10, 3
    p = _one_step_control(control, dim, T) if general else _control_from_lqr(control, _one_step_lqr(control, dim, T))
    x0 = jnp.array(np.random.default_rng(1).normal(size=dim))
    X, U = control.ilqr(num_iters, p, x0, jnp.zeros((T, dim)))
    np.testing.assert_allclose(X[0], x0)
    np.testing.assert_allclose(U[0], -x0)
    np.testing.assert_allclose(X[1:], np.zeros((T, 2)), atol=1E-15)
    np.testing.assert_allclose(U[1:], np.zeros((T - 1, 2)), atol=1E-15)


def test_control_ilqr_with_nonlinear_problem(control):
    T, num_iters, d = 10, 7, 1
    p = control.ControlSpec(_nonlinear_cost, _nonlinear, T, d, d)
    x0 = jnp.array([0.2])
    X, U = control.ilqr(num_iters, p, x0, 1e-5 * jnp.ones((T, d)))
    assert_close = partial(np.testing.assert_allclose, atol=1e-2)
    assert_close(X[0], x0)
    assert_close(U[0] ** 2., x0 ** 2.)
    assert_close(X[1:], np.zeros((T, d)))
    assert_close(U[1:], np.zeros((T - 1, d)))
    # and X is the trajectory U drives (a Python loop in float64)
    x, want = 0.2, [0.2]
    for t in range(T):
        x = (x ** 2 - float(U[t, 0]) ** 2) / (t + 1)
        want.append(x)
    np.testing.assert_allclose(np.asarray(X)[:, 0], want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("general", [False, True], ids=["lqr_problem", "specified_generally"])
def test_control_mpc_with_lqr_problem(control, general):
    dim, T, num_iters = 2, 10, 3
    p = _one_step_control(control, dim, T) if general else _control_from_lqr(control, _one_step_lqr(control, dim, T))
    x0 = jnp.array(np.random.default_rng(2).normal(size=dim))
    X, U = control.mpc_predict(partial(control.ilqr, num_iters), p, x0, jnp.zeros((T, dim)))
    np.testing.assert_allclose(X[0], x0)
    np.testing.assert_allclose(U[0], -x0)
    np.testing.assert_allclose(X[1:], np.zeros((T, 2)))
    np.testing.assert_allclose(U[1:], np.zeros((T - 1, 2)))


def test_control_mpc_with_nonlinear_problem(control):
    T, num_iters, d = 10, 7, 1
    p = control.ControlSpec(_nonlinear_cost, _nonlinear, T, d, d)
    x0 = jnp.array([0.2])
    X, U = control.mpc_predict(partial(control.ilqr, num_iters), p, x0, 1e-5 * jnp.ones((T, d)))
    assert_close = partial(np.testing.assert_allclose, atol=1e-2)
    assert_close(X[0], x0)
    assert_close(U[0] ** 2., x0 ** 2.)
    assert_close(X[1:], np.zeros((T, d)))
    assert_close(U[1:], np.zeros((T - 1, d)))


# --- beyond control_test.py: NumPy/SciPy oracles ---

def _random_lqr(T, n, m, seed=0, scale=0.3):
    """A time-varying LqrSpec as float32 NumPy arrays: Q, R symmetric positive definite, Q with T + 1 entries."""
    rng = np.random.default_rng(seed)

    def spd(k, size):
        a = rng.normal(size=(k, size, size))
        return a @ a.transpose(0, 2, 1) / size + np.eye(size)

    spec = dict(Q=spd(T + 1, n), q=rng.normal(size=(T + 1, n)), R=spd(T, m), r=rng.normal(size=(T, m)),
                M=scale * rng.normal(size=(T, n, m)), A=np.eye(n) + scale * rng.normal(size=(T, n, n)),
                B=rng.normal(size=(T, n, m)))
    return {k: v.astype(np.float32) for k, v in spec.items()}


def _np_lqr_solve(s, EPS=1e-7):
    """The backward Riccati recursion of lqr_solve in float64 NumPy. Its terminal P is Q[T + 1], out of range for a
    (T + 1)-long Q: JAX clamps out-of-range indices, so that is Q[T] (q likewise)."""
    s = {k: v.astype(np.float64) for k, v in s.items()}
    T, m, _ = s["R"].shape
    last = min(T + 1, s["Q"].shape[0] - 1)
    P, p = s["Q"][last], s["q"][last]
    K, k = np.zeros((T, m, s["Q"].shape[1])), np.zeros((T, m))
    for t in reversed(range(T)):
        A, B = s["A"][t], s["B"][t]
        G = s["R"][t] + B.T @ P @ B + EPS * np.eye(m)
        H = B.T @ P @ A + s["M"][t].T
        h = s["r"][t] + B.T @ p
        K[t], k[t] = -np.linalg.solve(G, H), -np.linalg.solve(G, h)
        P, p = s["Q"][t] + A.T @ P @ A + K[t].T @ H, s["q"][t] + A.T @ p + K[t].T @ h
    return K, k


def test_control_lqr_solve_time_varying_vs_numpy_riccati(control):
    s = _random_lqr(T=5, n=3, m=2)
    K, k = control.lqr_solve(control.LqrSpec(**{f: jnp.asarray(v) for f, v in s.items()}))
    K_np, k_np = _np_lqr_solve(s)
    np.testing.assert_allclose(K, K_np, rtol=1e-4, atol=1e-5)  # float32 through 5 solves of a 2x2 system
    np.testing.assert_allclose(k, k_np, rtol=1e-4, atol=1e-5)


def test_control_lqr_gain_converges_to_discrete_are(control):
    """Time-invariant, long horizon: K[0] is the infinite-horizon gain -(R + B'PB)^-1 B'PA of the DARE's P."""
    n, m, T = 3, 2, 30
    rng = np.random.default_rng(3)
    # a stable A (spectral radius 0.9): with an unstable one the recursion P_ = Q + A'PA + K'H amplifies float32
    # rounding step by step (NumPy's float32 loop too), and a long horizon drifts away from the DARE
    A = rng.normal(size=(n, n))
    A = (0.9 * A / max(abs(np.linalg.eigvals(A)))).astype(np.float32)
    B = rng.normal(size=(n, m)).astype(np.float32)
    Qm, Rm = np.diag([1.0, 2.0, 0.5]).astype(np.float32), np.diag([0.5, 1.0]).astype(np.float32)
    spec = control.LqrSpec(jnp.asarray(np.stack([Qm] * (T + 1))), jnp.zeros((T + 1, n)),
                           jnp.asarray(np.stack([Rm] * T)), jnp.zeros((T, m)), jnp.zeros((T, n, m)),
                           jnp.asarray(np.stack([A] * T)), jnp.asarray(np.stack([B] * T)))
    K, k = control.lqr_solve(spec)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    P = scipy.linalg.solve_discrete_are(A64, B64, Qm.astype(np.float64), Rm.astype(np.float64))
    K_inf = -np.linalg.solve(Rm + B64.T @ P @ B64, B64.T @ P @ A64)
    # in float64 the recursion is within 1e-8 (its EPS) of K_inf by T = 10; 1e-4 for float32 through 30 steps
    np.testing.assert_allclose(K[0], K_inf, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(k, np.zeros((T, m)))
    # the closed loop it gives is stable, as the DARE's is
    assert max(abs(np.linalg.eigvals(A64 + B64 @ np.asarray(K[0], np.float64)))) < 1


def test_control_lqr_predict_and_trajectory_vs_python_loop(control):
    s = _random_lqr(T=6, n=3, m=2, seed=4)
    spec = control.LqrSpec(**{f: jnp.asarray(v) for f, v in s.items()})
    x0 = np.array([0.5, -1.0, 0.25], np.float32)
    X, U = control.lqr_predict(spec, jnp.asarray(x0))
    K, k = _np_lqr_solve(s)
    xs, us = [x0.astype(np.float64)], []
    for t in range(6):
        us.append(K[t] @ xs[-1] + k[t])
        xs.append(s["A"][t] @ xs[-1] + s["B"][t] @ us[-1])
    np.testing.assert_allclose(U, np.array(us), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(X, np.array(xs), rtol=1e-4, atol=1e-4)

    # trajectory() with a time-varying nonlinear dynamics, against a Python loop
    W = np.random.default_rng(5).normal(size=(3, 3)).astype(np.float32)

    def dynamics(t, x, u):
        return jnp.tanh(jnp.dot(W, x) + u[0]) + 0.1 * t

    Uin = np.random.default_rng(6).normal(size=(6, 1)).astype(np.float32)
    Xt = control.trajectory(dynamics, jnp.asarray(Uin), jnp.asarray(x0))
    want = [x0.astype(np.float64)]
    for t in range(6):
        want.append(np.tanh(W @ want[-1] + Uin[t, 0]) + 0.1 * t)
    np.testing.assert_allclose(Xt, np.array(want), rtol=1e-5, atol=1e-6)


def test_control_lqr_approx_of_a_quadratic_problem_is_exact(control):
    """make_lqr_approx's second-order expansion of the quadratic cost/linear dynamics of an LqrSpec gives it back
    (Q, R doubled and symmetrized: the cost is x'Qx, not x'Qx/2; M, A and B exactly)."""
    T, n = 4, 2
    s = _random_lqr(T=T, n=n, m=n, seed=7)
    spec = control.LqrSpec(**{f: jnp.asarray(v[:T]) for f, v in s.items()})  # every field T long
    p = _control_from_lqr(control, spec)
    rng = np.random.default_rng(8)
    X, U = rng.normal(size=(T + 1, n)).astype(np.float32), rng.normal(size=(T, n)).astype(np.float32)
    # cost(T, ...) indexes past the end: clamped to index T - 1, as for JAX
    Qx = np.concatenate([s["Q"][:T], s["Q"][T - 1:T]])
    approx = control.make_lqr_approx(p)(jnp.asarray(X), jnp.asarray(U))
    np.testing.assert_allclose(approx.Q, Qx + Qx.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(approx.R, s["R"][:T] + s["R"][:T].transpose(0, 2, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(approx.M, s["M"][:T], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(approx.A, s["A"][:T], rtol=1e-6)
    np.testing.assert_allclose(approx.B, s["B"][:T], rtol=1e-6)
    Mx = np.concatenate([s["M"][:T], s["M"][T - 1:T]])
    qx = np.concatenate([s["q"][:T], s["q"][T - 1:T]])
    Upad = np.concatenate([U, np.zeros((1, n), np.float32)])
    want_q = np.einsum("tij,tj->ti", Qx + Qx.transpose(0, 2, 1), X) + qx + np.einsum("tij,tj->ti", Mx, Upad)
    np.testing.assert_allclose(approx.q, want_q, rtol=1e-4, atol=1e-5)


# ================================================ hmm_em.py ================================================

@pytest.fixture(scope="module")
def hmm():
    return load("hmm_em")


def _hmm_params(S=3, V=4, seed=0, normalized=True):
    rng = np.random.default_rng(seed)
    params = [rng.normal(size=(S,)), rng.normal(size=(S, S)), rng.normal(size=(S, V))]
    if normalized:
        params = [p - scipy.special.logsumexp(p, axis=-1, keepdims=True) for p in params]
    return [p.astype(np.float32) for p in params]


def _np_forward(params, seq):
    """log p(seq): z_0 ~ pi, z_t ~ A[z_{t-1}], obs_t ~ B[z_t] for t = 1..len(seq) (the script's model), float64."""
    log_pi, log_A, log_B = (np.asarray(p, np.float64) for p in params)
    alpha = log_pi
    for obs in seq:
        alpha = scipy.special.logsumexp(alpha[:, None] + log_A, axis=0) + log_B[:, obs]
    return scipy.special.logsumexp(alpha)


def _np_baum_welch_step(params, seq):
    """One EM step by forward-backward in probability space, float64: the expected counts, normalized."""
    pi, A, B = (np.exp(np.asarray(p, np.float64)) for p in params)
    T, S = len(seq), len(pi)
    alpha = np.zeros((T + 1, S))
    alpha[0] = pi
    for t in range(1, T + 1):
        alpha[t] = (alpha[t - 1] @ A) * B[:, seq[t - 1]]
    beta = np.ones((T + 1, S))
    for t in range(T - 1, -1, -1):
        beta[t] = A @ (B[:, seq[t]] * beta[t + 1])
    Z = alpha[T].sum()
    gamma = alpha * beta / Z
    xi = sum(alpha[t][:, None] * A * (B[:, seq[t]] * beta[t + 1])[None, :] for t in range(T)) / Z
    emit = np.zeros_like(B)
    for t in range(1, T + 1):
        emit[:, seq[t - 1]] += gamma[t]
    return [np.log(x / x.sum(-1, keepdims=True)) for x in (gamma[0], xi, emit)]


def test_hmm_log_normalizer_vs_numpy_forward(hmm):
    params = _hmm_params(normalized=False)
    seq = np.array([0, 3, 1, 1, 2, 0, 3, 2], np.int32)
    got = hmm.log_normalizer([jnp.asarray(p) for p in params], jnp.asarray(seq))
    assert float(got) == pytest.approx(_np_forward(params, seq), rel=1e-5)
    # normalized parameters: a probability, and all sequences of length 2 sum to one
    params = [jnp.asarray(p) for p in _hmm_params()]  # a NumPy log_B can't be indexed by the scan's traced obs
    total = sum(np.exp(float(hmm.log_normalizer(params, jnp.array([a, b])))) for a in range(4) for b in range(4))
    assert total == pytest.approx(1.0, rel=1e-5)


def test_hmm_em_step_vs_numpy_baum_welch_and_likelihood_never_decreases(hmm):
    params = _hmm_params(seed=1)
    seq = np.random.default_rng(2).integers(0, 4, size=24).astype(np.int32)
    one = hmm.EM(params, jnp.asarray(seq), 1)
    for got, want in zip(one, _np_baum_welch_step(params, seq)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)  # float32 sums of 24 products
    lls = [float(hmm.log_normalizer(hmm.EM(params, jnp.asarray(seq), n), seq)) for n in range(6)]
    assert lls[0] == pytest.approx(_np_forward(params, seq), rel=1e-5)
    assert all(b >= a - 1e-4 for a, b in zip(lls, lls[1:])), lls
    assert lls[-1] > lls[0] + 0.5
    # and the M step keeps the parameters normalized
    for p in hmm.EM(params, jnp.asarray(seq), 5):
        np.testing.assert_allclose(np.exp(np.asarray(p, np.float64)).sum(-1), 1, rtol=1e-5)


def test_hmm_sample(hmm):
    key = kiln.random.key(0)
    params = _hmm_params(seed=3)
    seq = hmm.sample(key, params, 30)
    assert seq.shape == (30,) and seq.dtype == jnp.int32
    assert 0 <= int(seq.min()) and int(seq.max()) < 4
    np.testing.assert_array_equal(seq, hmm.sample(key, params, 30))
    # a deterministic chain: the state cycles 0 -> 1 -> 2 -> 0 and state i emits symbol i
    log_pi = np.log(np.array([1.0, 0.0, 0.0], np.float32))
    log_A = np.log(np.roll(np.eye(3, dtype=np.float32), 1, axis=1))
    log_B = np.log(np.eye(3, 4, dtype=np.float32))
    with np.errstate(divide="ignore"):
        seq = hmm.sample(kiln.random.key(1), [log_pi, log_A, log_B], 7)
    np.testing.assert_array_equal(seq, [0, 1, 2, 0, 1, 2, 0])


def test_hmm_build_dataset(hmm):
    data, decodings = hmm.build_dataset("abracadabra")
    np.testing.assert_array_equal(data, [0, 1, 2, 0, 3, 0, 4, 0, 1, 2, 0])
    assert "".join(decodings[int(i)] for i in data) == "abracadabra"


# ============================================== pca_from_scratch.py ==============================================

@pytest.fixture(scope="module")
def pca():
    return load("pca_from_scratch")


def _pca_data(n=40, f=6, seed=0):
    rng = np.random.default_rng(seed)
    scales = np.array([5.0, 2.0] + [0.5] * (f - 2))
    rotation, _ = np.linalg.qr(rng.normal(size=(f, f)))
    return ((rng.normal(size=(n, f)) * scales) @ rotation + 3.0).astype(np.float32)


def _np_pca(X, k):
    X = X.astype(np.float64)
    Xc = X - X.mean(0)
    _, S, Vt = np.linalg.svd(Xc, full_matrices=False)
    ev = S ** 2 / (X.shape[0] - 1)
    return Xc @ Vt[:k].T, Vt[:k], ev[:k] / ev.sum()


def _assert_pca_close(got, want, rtol=1e-4, atol=1e-4):
    proj, comp, evr = (np.asarray(x, np.float64) for x in got)
    wproj, wcomp, wevr = want
    signs = np.sign(np.sum(comp * wcomp, axis=1))  # a component is defined up to sign
    assert np.all(signs != 0)
    np.testing.assert_allclose(comp * signs[:, None], wcomp, rtol=rtol, atol=atol)
    np.testing.assert_allclose(proj * signs, wproj, rtol=rtol, atol=atol)
    np.testing.assert_allclose(evr, wevr, rtol=1e-5)


def test_pca_vs_numpy_svd(pca):
    X = _pca_data()
    got = pca.pca(X, n_components=3)
    assert [g.shape for g in got] == [(40, 3), (3, 6), (3,)]
    _assert_pca_close(got, _np_pca(X, 3))
    comp = np.asarray(got[1], np.float64)
    np.testing.assert_allclose(comp @ comp.T, np.eye(3), atol=1e-5)  # orthonormal
    # the default n_components, and all components: the explained variance ratios sum to one
    assert pca.pca(X)[1].shape == (2, 6)
    assert float(jnp.sum(pca.pca(X, n_components=6)[2])) == pytest.approx(1.0, rel=1e-5)


def test_pca_batched_vs_numpy_loop(pca):
    Xb = np.stack([_pca_data(seed=s) for s in range(3)])
    got = pca.batched_pca(Xb, 2)
    assert [g.shape for g in got] == [(3, 40, 2), (3, 2, 6), (3, 2)]
    for i in range(3):
        _assert_pca_close([g[i] for g in got], _np_pca(Xb[i], 2))


# =========================================== physical_optimization.py ===========================================

@pytest.fixture(scope="module")
def physical():
    return load("physical_optimization")


def _np_bounce(board, x_0, y_0, v_x0, v_y0, H_step=0.1, H_0=10, g=-9.8, hoop=(10, 8)):
    """The ball's distance from the hoop 0.1 s after it bounces off the board, float64, written independently: the
    first board segment (from the top) whose line the parabola crosses within the segment's height band."""
    board = np.asarray(board, np.float64)
    for i in range(len(board) - 1):
        y_top, y_bot = H_0 - i * H_step, H_0 - (i + 1) * H_step
        # the segment's line through (board[i] + 10, y_top) and (board[i + 1] + 10, y_bot): y = k x + l
        k = (y_bot - y_top) / (board[i + 1] - board[i])
        l = y_bot - (board[i + 1] + 10) * k
        # y_0 + v_y0 t + g t^2 / 2 = k (x_0 + v_x0 t) + l
        roots = np.roots([g / 2, v_y0 - k * v_x0, y_0 - k * x_0 - l])
        for t in sorted(roots, key=lambda r: -np.sign(g) * r):  # the script's sol1 first: (-b - sqrt(d)) / 2a
            if np.iscomplex(t) or t <= 0:
                continue
            y = y_0 + v_y0 * t + g / 2 * t ** 2
            if y_bot < y < y_top:
                x_b = x_0 + v_x0 * t - 0.81 * v_x0 * 0.1
                y_b = y - 0.81 * (v_y0 + g * t) * 0.1 + g / 2 * 0.01
                return float(np.hypot(x_b - hoop[0], y_b - hoop[1]))
    return 0.0


def test_physical_optimization_bounce_and_grad_vs_numpy(physical):
    board = np.random.RandomState(0).rand(physical.N).astype(np.float32)
    shots = [(0, 5, 8.0, 10.0), (0, 5, 8.0, 8.0)]  # a hit and a miss (one more hit: +1 s of compiles)
    hits = 0
    for shot in shots:
        want = _np_bounce(board, *shot)
        got = physical.bounce(kiln.device_put(board), *shot)
        assert float(got) == pytest.approx(want, rel=1e-5, abs=1e-6), shot
        grad = np.asarray(kiln.grad(physical.bounce, 0)(kiln.device_put(board), *shot))
        if want == 0.0:  # the ball misses the board: a constant 0., so a zero gradient
            np.testing.assert_array_equal(grad, 0)
            continue
        hits += 1
        fd = np.zeros(physical.N)
        for j in range(physical.N):  # central differences of the float64 oracle
            e = np.zeros(physical.N)
            e[j] = 1e-6
            fd[j] = (_np_bounce(board + e, *shot) - _np_bounce(board - e, *shot)) / 2e-6
        assert np.count_nonzero(fd) == 2  # only the two ends of the segment hit
        # float32 through a square root of a discriminant and a division by a small x_1 - x_0
        np.testing.assert_allclose(grad, fd, rtol=2e-3, atol=1e-4)
    assert hits == 1


def test_physical_optimization_steps_reduce_the_loss(physical):
    """The script's loop (board += -grad * 0.1), a few steps of one shot: the loss falls, as NumPy says."""
    board = kiln.device_put(np.random.RandomState(1).rand(physical.N).astype(np.float32))
    shot = (0, 5, 8.0, 10.0)
    losses = []
    for _ in range(4):
        losses.append(_np_bounce(np.asarray(board), *shot))
        board += -kiln.grad(physical.bounce, 0)(board, *shot) * 0.1
    losses.append(_np_bounce(np.asarray(board), *shot))
    assert losses[0] > 0 and all(b < a for a, b in zip(losses, losses[1:])), losses


# ============================================ the same source under JAX ============================================

def _assert_same(a, b, rtol=1e-5, atol=1e-7):
    a, b = _np(a), [np.asarray(x) for x in pytest.importorskip("jax").tree_util.tree_leaves(b)]
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


def test_control_matches_jax(control):
    jax = pytest.importorskip("jax")
    j = load("control", "jax")

    def run(lib, ex):
        s = _random_lqr(T=5, n=3, m=2)
        solved = ex.lqr_solve(ex.LqrSpec(**{f: lib.numpy.asarray(v) for f, v in s.items()}))
        p = ex.ControlSpec(_nonlinear_cost, _nonlinear, 10, 1, 1)
        x0 = lib.numpy.array([0.2])
        ilqr = ex.ilqr(7, p, x0, 1e-5 * lib.numpy.ones((10, 1)))
        mpc = ex.mpc_predict(partial(ex.ilqr, 3), p, x0, 1e-5 * lib.numpy.ones((10, 1)))
        return solved, ilqr, mpc

    (ks, ki, km), (js, ji, jm) = run(kiln, control), run(jax, j)
    _assert_same(ks, js, rtol=1e-5, atol=1e-6)
    # iLQR/MPC: 7 (3 per MPC step) Newton-like iterations on a problem whose iterates shrink to ~1e-3, so absolute
    _assert_same(ki, ji, rtol=1e-4, atol=1e-6)
    _assert_same(km, jm, rtol=1e-4, atol=1e-6)


def test_hmm_em_matches_jax(hmm):
    jax = pytest.importorskip("jax")
    j = load("hmm_em", "jax")
    params = _hmm_params(seed=1, normalized=False)
    seq = np.random.default_rng(2).integers(0, 4, size=24).astype(np.int32)
    kp, jp = [jnp.asarray(p) for p in params], [jax.numpy.asarray(p) for p in params]  # NumPy can't be indexed by obs
    assert float(hmm.log_normalizer(kp, seq)) == pytest.approx(float(j.log_normalizer(jp, seq)), rel=1e-6)
    # 5 EM steps compound float32 rounding of exp/log of expected counts
    _assert_same(hmm.EM(params, seq, 5), j.EM(params, seq, 5), rtol=2e-5, atol=1e-5)
    # the same draws, bit for bit
    np.testing.assert_array_equal(hmm.sample(kiln.random.key(3), params, 40),
                                  np.asarray(j.sample(jax.random.key(3), params, 40)))


def test_pca_matches_jax(pca):
    pytest.importorskip("jax")
    j = load("pca_from_scratch", "jax")
    X = _pca_data()
    got, want = pca.pca(X, n_components=3), j.pca(X, n_components=3)
    _assert_pca_close(got, [np.asarray(w, np.float64) for w in want], rtol=1e-5, atol=1e-5)
    Xb = np.stack([_pca_data(seed=s) for s in range(3)])
    got, want = pca.batched_pca(Xb, 2), j.batched_pca(Xb, 2)
    for i in range(3):
        _assert_pca_close([g[i] for g in got], [np.asarray(w[i], np.float64) for w in want], rtol=1e-5, atol=1e-5)


def test_physical_optimization_matches_jax(physical):
    jax = pytest.importorskip("jax")
    j = load("physical_optimization", "jax")
    board = np.random.RandomState(0).rand(physical.N).astype(np.float32)
    for shot in [(0, 5, 8.0, 10.0), (0, 5, 9.5, 9.0), (0, 5, 8.0, 8.0)]:
        kb, jb = kiln.device_put(board), jax.device_put(board)
        assert float(physical.bounce(kb, *shot)) == pytest.approx(float(j.bounce(jb, *shot)), rel=1e-6)
        _assert_same(kiln.grad(physical.bounce, 0)(kb, *shot), jax.grad(j.bounce, 0)(jb, *shot), rtol=1e-5,
                     atol=1e-6)


# -- JAX's docs/stateful-computations.md ----------------------------------------------------------------------

def test_stateful_computations_page(capsys):
    page = load("stateful_computations")
    # Counter; Counter jitted (its side effect ran once, when traced: the page's "Oh no!"); CounterV2, eager and jitted
    assert capsys.readouterr().out.split() == ["1", "2", "3", "1", "1", "1", "1", "2", "3", "1", "2", "3"]
    # the data: y = 2x - 1 + noise, 128 points
    x, y = (np.asarray(v, np.float64)[:, 0] for v in (page.xs, page.ys))
    assert x.shape == (128,) and page.xs.dtype == np.float32
    np.testing.assert_allclose(y - (2 * x - 1), np.asarray(page.noise, np.float64)[:, 0], atol=1e-5)
    # 1000 SGD steps land on the least-squares line (gradient descent on the mean squared error converges to it)
    w, b = np.polyfit(x, y, 1)
    assert isinstance(page.params, page.Params) and page.params.weight.dtype == np.float32
    np.testing.assert_allclose([float(page.params.weight), float(page.params.bias)], [w, b], atol=1e-3)
    # one more step by hand: params - LEARNING_RATE * d(mean squared error)
    r = float(page.params.weight) * x + float(page.params.bias) - y
    expect = [float(page.params.weight) - 0.005 * np.mean(2 * r * x), float(page.params.bias) - 0.005 * np.mean(2 * r)]
    stepped = page.update(page.params, page.xs, page.ys)
    np.testing.assert_allclose([float(stepped.weight), float(stepped.bias)], expect, rtol=1e-5, atol=1e-6)
