"""examples/entmax.py: the Entmax-α math against NumPy references, and the script end to end (tiny sizes)."""
from __future__ import annotations

import importlib
import pathlib
import sys

import numpy as np
import pytest

import kiln
import kiln.numpy as jnp

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="module")
def em():
    sys.path.insert(0, str(EXAMPLES))
    try:
        yield importlib.import_module("entmax")
    finally:
        sys.path.remove(str(EXAMPLES))


# -- NumPy references (float64) -------------------------------------------------------------------

def np_softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_sparsemax(z):
    """Martins & Astudillo (2016): sort, find the support size k, τ = (Σ_top-k z - 1) / k."""
    zs = -np.sort(-z, axis=-1)
    k = np.arange(1, z.shape[-1] + 1)
    cssv = np.cumsum(zs, axis=-1) - 1
    support = np.sum(zs - cssv / k > 0, axis=-1, keepdims=True)
    tau = np.take_along_axis(cssv, support - 1, axis=-1) / support
    return np.maximum(z - tau, 0)


def np_entmax15(z):
    """The exact sort-based 1.5-entmax (Peters et al. 2019): p = [z/2 - τ]_+^2."""
    x = z / 2
    xs = -np.sort(-x, axis=-1)
    k = np.arange(1, z.shape[-1] + 1)
    mean = np.cumsum(xs, axis=-1) / k
    mean_sq = np.cumsum(xs ** 2, axis=-1) / k
    delta = (1 - k * (mean_sq - mean ** 2)) / k
    tau = mean - np.sqrt(np.maximum(delta, 0))
    support = np.sum(tau <= xs, axis=-1, keepdims=True)
    tau_star = np.take_along_axis(tau, support - 1, axis=-1)
    return np.maximum(x - tau_star, 0) ** 2


def np_entmax_bisect(z, alpha, n_iter=200):
    """Any α > 1: bisection on τ in float64, run to machine precision."""
    x = (alpha - 1) * z
    lo = x.max(-1, keepdims=True) - 1
    hi = x.max(-1, keepdims=True) - (1 / z.shape[-1]) ** (alpha - 1)
    for _ in range(n_iter):
        mid = (lo + hi) / 2
        mass = np.sum(np.maximum(x - mid, 0) ** (1 / (alpha - 1)), axis=-1, keepdims=True)
        lo, hi = np.where(mass >= 1, mid, lo), np.where(mass >= 1, hi, mid)
    p = np.maximum(x - (lo + hi) / 2, 0) ** (1 / (alpha - 1))
    return p / p.sum(-1, keepdims=True)


def np_reference(z, alpha):
    return {1.0: np_softmax, 2.0: np_sparsemax, 1.5: np_entmax15}.get(alpha, lambda z: np_entmax_bisect(z, alpha))(z)


def np_vjp(z, g, alpha):
    """g^T J with the entmax Jacobian J = diag(s) - s s^T / Σ s, s = p^(2-α) on the support (symmetric)."""
    p = np_reference(z, alpha)
    s = np.where(p > 0, p, 0) ** (2 - alpha) * (p > 0)
    return s * g - s * np.sum(s * g, -1, keepdims=True) / np.sum(s, -1, keepdims=True)


def scores(shape, seed=0):
    return (2 * np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)


# -- the math -------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::kiln.errors.RetraceWarning")  # one compile per shape and method, on purpose
@pytest.mark.parametrize("alpha", [1.0, 1.25, 1.5, 2.0])
def test_entmax_forward_matches_numpy(em, alpha):
    """α = 1 is softmax, α = 2 sparsemax, 1.5 the exact sort-based entmax; all three methods, eager and jit."""
    jitted_entmax = kiln.jit(em.entmax, static_argnums=(1, 2, 3))
    for shape in [(7,), (3, 5), (2, 3, 6)]:
        z = scores(shape, seed=len(shape))
        want = np_reference(z.astype(np.float64), alpha)
        for method in em.METHODS:
            eager = np.asarray(em.entmax(jnp.asarray(z), alpha, 30, method))
            jitted = np.asarray(jitted_entmax(z, alpha, 30, method))
            np.testing.assert_allclose(eager, want, atol=2e-6, err_msg=f"{method} {shape}")
            np.testing.assert_allclose(jitted, want, atol=2e-6, err_msg=f"{method} {shape} jit")
            np.testing.assert_allclose(jitted.sum(-1), 1, atol=1e-6)
        if alpha > 1:
            assert np.array_equal(jitted == 0, want == 0), "the same entries are exactly zero"


def test_entmax_is_sparse_and_vmaps_like_a_loop(em):
    z = scores((6, 40), seed=3)
    rows = np.stack([np.asarray(em.entmax(jnp.asarray(row), 1.5)) for row in z])
    batched = np.asarray(kiln.jit(kiln.vmap(lambda row: em.entmax(row, 1.5)))(z))
    np.testing.assert_allclose(batched, rows, atol=1e-7)
    assert np.mean(batched == 0) > 0.5  # most of 40 scores with std 2 fall outside the support
    assert np.all(batched >= 0)


@pytest.mark.parametrize("alpha", [1.0, 1.25, 1.5, 2.0])
def test_entmax_three_gradients_agree_with_the_closed_form(em, alpha):
    """autodiff through the bisection (+ Newton step), custom_vjp and custom_jvp give g^T J of NumPy's J."""
    z, g = scores((4, 9), seed=5), scores((4, 9), seed=6) / 2
    want = np_vjp(z.astype(np.float64), g.astype(np.float64), alpha)
    grads = em.gradient_fns(alpha, 30)
    for method, fn in grads.items():
        np.testing.assert_allclose(np.asarray(fn(z, g)), want, atol=2e-5, err_msg=method)
    # jvp: forward mode through the custom_jvp and autodiff versions (custom_vjp has none, as in JAX)
    dz = scores((9,), seed=7)
    for method in ("autodiff", "jvp"):
        _, tangent = kiln.jvp(lambda row, m=method: em.entmax(row, alpha, 30, m), (jnp.asarray(z[0]),),
                              (jnp.asarray(dz),))
        np.testing.assert_allclose(np.asarray(tangent), np_vjp(z[:1].astype(np.float64), dz[None], alpha)[0],
                                   atol=2e-5, err_msg=method)


def test_entmax_gradient_matches_finite_differences(em):
    z, g = scores((2, 6), seed=8).astype(np.float64), scores((2, 6), seed=9).astype(np.float64)
    with kiln.enable_x64():
        objective = kiln.jit(lambda z: jnp.sum(g * em.entmax(z, 1.5, 60)))
        grad = np.asarray(kiln.grad(lambda z: jnp.sum(g * em.entmax(z, 1.5, 60)))(z))
        assert grad.dtype == np.float64
        eps = 1e-6
        for i, j in [(0, 0), (0, 3), (1, 2), (1, 5)]:
            bump = np.zeros_like(z)
            bump[i, j] = eps
            fd = (float(objective(z + bump)) - float(objective(z - bump))) / (2 * eps)
            assert abs(fd - grad[i, j]) < 1e-6, (i, j, fd, grad[i, j])


@pytest.mark.parametrize("alpha", [1.0, 1.5])
def test_entmax_loss_gradient_is_p_minus_y(em, alpha):
    """The Fenchel-Young loss's gradient is (entmax(z) - onehot(y)) / rows, whichever backward is used."""
    z, y = scores((5, 4), seed=10), np.array([0, 3, 1, 1, 2], np.int32)
    want = (np_reference(z.astype(np.float64), alpha) - np.eye(4)[y]) / 5
    for method in em.METHODS:
        got = np.asarray(kiln.jit(kiln.grad(lambda z, m=method: em.entmax_loss(z, y, alpha, 30, m)))(z))
        np.testing.assert_allclose(got, want, atol=2e-6, err_msg=method)


# -- the script (the digits come from scikit-learn, the kiln[examples] extra) ----------------------







def test_entmax_script_trains_and_resumes(em, runs, tmp_path):
    """A run as a program (as a user does), then 6 steps + resume to 12 in this process: the same parameters."""
    pytest.importorskip("sklearn")
    straight, split = tmp_path / "straight", tmp_path / "split"
    proc = runs.script("entmax.py", "--steps", "12", "--lr", "0.05", "--out", str(straight))
    assert proc.returncode == 0, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    fields = runs.summary(proc, "entmax")
    assert float(fields["grad_diff_vjp"]) < 1e-4 and float(fields["grad_diff_jvp"]) < 1e-4
    assert float(fields["sparsity"]) > 0.5 and float(fields["accuracy"]) >= 0.9
    assert "jitted gradient time: autodiff" in proc.stdout
    assert (straight / "entmax.png").stat().st_size > 0

    first = runs.main(em, "--steps", "6", "--lr", "0.05", "--out", str(split), "--no-plot")
    assert first.returncode == 1 and "FAILED: test accuracy" in first.stderr  # 6 steps: below the floor
    resumed = runs.main(em, "--steps", "12", "--lr", "0.05", "--out", str(split), "--resume", "--no-plot")
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from" in resumed.stdout and "at step 6" in resumed.stdout
    with np.load(straight / "checkpoint.npz") as a, np.load(split / "checkpoint.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for name in a.files:
            if name == "__kiln_checkpoint__":  # the JSON record (step, history)
                continue
            np.testing.assert_allclose(a[name], b[name], rtol=1e-6, atol=1e-7, err_msg=name)


def test_entmax_script_bad_flags(em, runs, tmp_path):
    pytest.importorskip("sklearn")
    for args, message in [(("--steps", "0"), "--steps must be positive, got 0"),
                          (("--device", "99"), "--device 99 is out of range"),
                          (("--alpha", "0.5"), "--alpha must be in [1, 2] (1 is softmax, 2 sparsemax), got 0.5"),
                          (("--alpha", "3"), "--alpha must be in [1, 2] (1 is softmax, 2 sparsemax), got 3.0"),
                          (("--n-iter", "0"), "--n-iter must be positive, got 0"),
                          (("--resume",), "--resume: no checkpoint at")]:
        proc = runs.main(em, *args, "--out", str(tmp_path))
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)


def test_entmax_script_refuses_another_models_checkpoint(em, runs, tmp_path):
    pytest.importorskip("sklearn")
    em.save_checkpoint(tmp_path / "checkpoint.npz", {"w": np.zeros((3, 3), np.float32)}, step=5)
    proc = runs.main(em, "--resume", "--steps", "10", "--out", str(tmp_path))
    assert proc.returncode == 2 and "--resume: " in proc.stderr and "holds 1 arrays but the model has" in proc.stderr, \
        proc.stderr
