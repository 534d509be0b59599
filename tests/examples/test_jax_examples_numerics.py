"""JAX's numerical example scripts, ported by changing imports (tests/examples/jax_ported/), checked against oracles.

kernel_lsq.py (Gram matrices, momentum on a regularised least-squares objective) and gaussian_process_regression.py
(Cholesky / triangular solves, grad of a marginal likelihood), both as they were before JAX removed them. The oracles
are NumPy / SciPy in float64; the ``*_matches_jax`` tests run the same source with JAX's imports put back (only where
JAX is importable) and compare the numbers.
"""
from __future__ import annotations

import builtins
import contextlib
import functools
import io
import re
import sys
import types

import numpy as np
import pytest
from ported import load

# ---------------------------------------------------------------- kernel_lsq.py

def _np_momentum(grad_f, x, num_steps, step_size, mass):
    """optimizers.momentum as JAX documents it: v <- mass * v + g; x <- x - step_size * v."""
    x, v = np.asarray(x, np.float64), np.zeros(np.shape(x))
    for _ in range(num_steps):
        v = mass * v + grad_f(x)
        x = x - step_size * v
    return x


def _lsq_data():
    rng = np.random.RandomState(0)
    q, _ = np.linalg.qr(rng.randn(5, 5))
    xs = (q[:, :4] * np.array([1.0, 1.1, 1.2, 1.3])).astype(np.float32)  # a well-conditioned Gram matrix
    ys = (xs @ rng.randn(4)).astype(np.float32)
    return xs, ys


def _train_lsq(ex, lib, xs, ys, num_steps=300, step_size=0.2):
    """ex.train with the linear kernel of the script's __main__, minimize() shortened (its default is 10000 steps)."""
    kernel = lambda x, y: ex.jnp.dot(x, y, precision=ex.lax.Precision.HIGH)  # noqa: E731
    ex.minimize = functools.partial(ex.minimize, num_steps=num_steps, step_size=step_size)
    return ex.train(kernel, xs, ys)


def test_kernel_lsq_gram():
    ex = load("kernel_lsq")
    rng = np.random.RandomState(1)
    xs = rng.randn(6, 3).astype(np.float32)
    x64 = xs.astype(np.float64)
    linear = ex.gram(lambda x, y: ex.jnp.dot(x, y, precision=ex.lax.Precision.HIGH), xs)
    np.testing.assert_allclose(np.asarray(linear), x64 @ x64.T, rtol=1e-5, atol=1e-6)
    rbf = ex.gram(lambda x, y: ex.jnp.exp(-ex.jnp.sum((x - y) ** 2)), xs)
    np.testing.assert_allclose(np.asarray(rbf), np.exp(-((x64[:, None] - x64[None]) ** 2).sum(-1)), rtol=1e-5,
                               atol=1e-7)
    jaxpr = str(ex.make_jaxpr(functools.partial(ex.gram, lambda x, y: ex.jnp.dot(x, y)))(xs))  # as __main__ prints it
    assert "dot_general" in jaxpr and "f32[6,6]" in jaxpr


def test_kernel_lsq_minimize_is_momentum():
    """minimize() on a quadratic: the momentum trajectory step for step, then the quadratic's minimiser."""
    ex = load("kernel_lsq")
    a = np.array([[3.0, 1.0], [1.0, 2.0]], np.float32)
    b = np.array([1.0, -1.0], np.float32)
    f = lambda x: 0.5 * x @ (a @ x) - b @ x  # noqa: E731
    np_grad = lambda x: a.astype(np.float64) @ x - b  # noqa: E731
    x0 = np.array([0.5, 0.5], np.float32)
    for steps in (1, 7):
        got = ex.minimize(f, ex.jnp.asarray(x0), num_steps=steps, step_size=0.05, mass=0.9)
        np.testing.assert_allclose(np.asarray(got), _np_momentum(np_grad, x0, steps, 0.05, 0.9), rtol=1e-5)
    got = ex.minimize(f, ex.jnp.asarray(x0), num_steps=300, step_size=0.05, mass=0.9)
    np.testing.assert_allclose(np.asarray(got), np.linalg.solve(a, b), rtol=1e-4, atol=1e-5)


def test_kernel_lsq_train_solves_regularised_least_squares():
    """train(): v minimises .5|K v - y|^2 + reg |v|^2: (K'K + 2 reg I) v = K'y; predict(x) = sum_i v_i k(x, x_i)."""
    ex = load("kernel_lsq")
    xs, ys = _lsq_data()
    predict = _train_lsq(ex, "kiln", xs, ys)
    x64, y64 = xs.astype(np.float64), ys.astype(np.float64)
    k = x64 @ x64.T
    v = np.linalg.solve(k.T @ k + 2 * 0.01 * np.eye(len(k)), k.T @ y64)
    # with reg -> 0 this is least squares: the same v as lstsq up to O(reg)
    np.testing.assert_allclose(v, np.linalg.lstsq(k, y64, rcond=None)[0], atol=0.05)
    x_new = np.random.RandomState(2).randn(3, 4).astype(np.float32)
    np.testing.assert_allclose(np.asarray(predict(xs)), k @ v, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(predict(x_new)), (x_new.astype(np.float64) @ x64.T) @ v, rtol=1e-4,
                               atol=1e-5)


def test_kernel_lsq_matches_jax():
    jax = pytest.importorskip("jax")
    import kiln
    xs, ys = _lsq_data()
    x_new = np.random.RandomState(2).randn(3, 4).astype(np.float32)
    k_pred = _train_lsq(load("kernel_lsq"), "kiln", xs, ys, num_steps=40)
    j_pred = _train_lsq(load("kernel_lsq", "jax"), "jax", xs, ys, num_steps=40)
    for x in (xs, x_new):
        np.testing.assert_allclose(np.asarray(k_pred(x)), np.asarray(j_pred(x)), rtol=1e-5, atol=1e-6)
    k_gram = load("kernel_lsq").gram(lambda x, y: kiln.numpy.exp(-((x - y) ** 2).sum()), xs)
    j_gram = load("kernel_lsq", "jax").gram(lambda x, y: jax.numpy.exp(-((x - y) ** 2).sum()), xs)
    np.testing.assert_allclose(np.asarray(k_gram), np.asarray(j_gram), rtol=1e-6)


# ---------------------------------------------------------------- gaussian_process_regression.py

class _GPRun:
    """main() of the script with absl and matplotlib stubbed, ``range`` shortened, and its gp / training data caught."""

    def __init__(self, lib: str, monkeypatch, steps: int = 11):
        plt = types.ModuleType("matplotlib.pyplot")
        self.plotted = []
        plt.plot = lambda *a, **k: self.plotted.append(("plot", a))
        plt.fill_between = lambda *a, **k: self.plotted.append(("fill_between", a))
        matplotlib = types.ModuleType("matplotlib")
        matplotlib.pyplot = plt
        absl = types.ModuleType("absl")
        absl.app = types.SimpleNamespace(run=None)
        for name, module in (("matplotlib", matplotlib), ("matplotlib.pyplot", plt), ("absl", absl)):
            monkeypatch.setitem(sys.modules, name, module)
        ex = load("gaussian_process_regression", lib)
        self.gp, self.grad_args, self.history = None, None, []

        def catching_partial(f, *args, **kwargs):
            self.gp = f
            return functools.partial(f, *args, **kwargs)

        def catching_jit(f):  # main jits only grad(marginal_likelihood); its params dict is updated in place
            jitted = ex.jax.jit(f)

            def call(*args):
                self.history.append({k: np.asarray(v) for k, v in args[0].items()})
                self.grad_args = args
                return jitted(*args)
            return call

        ex.partial, ex.jit = catching_partial, catching_jit
        ex.range = lambda n: builtins.range(min(n, steps))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            ex.main([])
        self.stdout = out.getvalue()
        self.params, self.x, self.y = self.grad_args
        self.ex = ex


def _np_gp(params, x, y, xtest, numpts=7):
    """The script's gp() in float64 NumPy, with inverses instead of Cholesky factors."""
    softplus = lambda v: np.logaddexp(float(np.asarray(v).item()), 0.0)  # noqa: E731
    noise, amp, ls = (softplus(params[k]) for k in ("noise", "amplitude", "lengthscale"))
    x, y, xtest = (np.asarray(a, np.float64) for a in (x, y, xtest))
    ymean = y.mean()
    y = y - ymean
    sq = lambda a, b: ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)  # noqa: E731
    k = amp * np.exp(-sq(x / ls, x / ls)) + np.eye(numpts) * (noise + 1e-6)
    ks = amp * np.exp(-sq(x / ls, xtest / ls))
    kss = amp * np.exp(-sq(xtest / ls, xtest / ls))
    mu = ks.T @ np.linalg.solve(k, y) + ymean
    var = kss - ks.T @ np.linalg.solve(k, ks)
    log2pi = np.log(2.0 * 3.1415)
    ml = (-0.5 * (y.T @ np.linalg.solve(k, y)).item() - 0.5 * np.linalg.slogdet(k)[1] - numpts / 2.0 * log2pi
          - (-0.5 * np.log(2 * 3.1415) - np.log(amp) - 0.5 * np.log(amp) ** 2))
    return mu, var, -ml


def _gp_params(lib, amplitude, noise, lengthscale):
    return {k: lib.numpy.full((1, 1), v, lib.numpy.float32)
            for k, v in (("amplitude", amplitude), ("noise", noise), ("lengthscale", lengthscale))}


def test_gaussian_process_regression(monkeypatch):
    import kiln
    run = _GPRun("kiln", monkeypatch)
    x, y = np.asarray(run.x), np.asarray(run.y)
    assert x.shape == y.shape == (7, 1) and x.dtype == np.float32 and (1 <= x).all() and (x <= 5).all()
    # the negative marginal likelihood printed after step 0 is NumPy's at those params, and it falls over 11 steps
    ml0 = [float(v) for v in re.findall(r"neg marginal likelihood: (\S+)", run.stdout)]
    assert len(ml0) == 1 and len(run.history) == 11
    assert ml0[0] == pytest.approx(_np_gp(run.history[1], x, y, x)[2], rel=1e-4)
    assert _np_gp({k: np.asarray(v) for k, v in run.params.items()}, x, y, x)[2] < ml0[0]
    # what main() plotted: the posterior mean and mean +- 2 std at its trained params, as NumPy computes them
    xtest = np.linspace(0, 6.0, 200)[:, None]
    mu, var, _ = _np_gp({k: np.asarray(v) for k, v in run.params.items()}, x, y, xtest)
    (_, (px, py, _)), (_, (tx, tmu)), (_, (fx, lo, hi)) = run.plotted
    np.testing.assert_array_equal(np.asarray(px), x)
    np.testing.assert_allclose(np.asarray(tmu), mu, rtol=1e-4, atol=1e-4)
    std = np.sqrt(np.diag(var))
    np.testing.assert_allclose(np.asarray(hi) - np.asarray(lo), 4 * std, rtol=1e-3, atol=1e-3)
    # gp() itself at other hyperparameters (float32 Cholesky of a jittered kernel matrix: 1e-4)
    for amp, noise, ls in ((0.0, -5.0, 0.0), (1.0, -2.0, -0.5)):
        params = _gp_params(kiln, amp, noise, ls)
        np_mu, np_var, np_ml = _np_gp({k: np.asarray(v) for k, v in params.items()}, x, y, xtest[::20])
        k_mu, k_var = run.gp(params, x, y, xtest[::20])
        np.testing.assert_allclose(np.asarray(k_mu), np_mu, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(np.asarray(k_var), np_var, rtol=1e-3, atol=1e-4)
        assert float(run.gp(params, x, y, compute_marginal_likelihood=True)) == pytest.approx(np_ml, rel=1e-4)
        # grad of the marginal likelihood against central differences of the NumPy one
        grads = kiln.jit(kiln.grad(functools.partial(run.gp, compute_marginal_likelihood=True)))(params, x, y)
        for key in params:
            def np_ml_at(h):
                p = {k: np.asarray(v, np.float64) + (h if k == key else 0.0) for k, v in params.items()}
                return _np_gp(p, x, y, xtest[:1])[2]
            fd = (np_ml_at(1e-5) - np_ml_at(-1e-5)) / 2e-5
            assert float(np.asarray(grads[key]).item()) == pytest.approx(fd, rel=2e-3, abs=2e-3), key


def test_gaussian_process_regression_matches_jax(monkeypatch):
    jax = pytest.importorskip("jax")
    import kiln
    k, j = _GPRun("kiln", monkeypatch), _GPRun("jax", monkeypatch)
    np.testing.assert_array_equal(np.asarray(k.x), np.asarray(j.x))  # the same uniform / normal draws
    np.testing.assert_array_equal(np.asarray(k.y), np.asarray(j.y))
    assert k.stdout.splitlines()[0] == j.stdout.splitlines()[0]  # "Step: 0, neg marginal likelihood: ..."
    for key in k.params:
        np.testing.assert_allclose(np.asarray(k.params[key]), np.asarray(j.params[key]), rtol=1e-5)
    for (kn, ka), (jn, ja) in zip(k.plotted, j.plotted):
        assert kn == jn
        for a, b in zip(ka, ja):
            if isinstance(a, str):  # the "k." format
                assert a == b
                continue
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)
    xtest = np.linspace(0, 6.0, 5)[:, None]
    k_out = k.gp(_gp_params(kiln, 1.0, -2.0, -0.5), k.x, k.y, xtest)
    j_out = j.gp(_gp_params(jax, 1.0, -2.0, -0.5), j.x, j.y, xtest)
    for a, b in zip(k_out, j_out):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
