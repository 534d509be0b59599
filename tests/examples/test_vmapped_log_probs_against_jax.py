"""JAX's notebook "Autobatching for Bayesian inference" under kiln and under JAX gives the same numbers (the
against_jax session).

The kiln side is tests/examples/jax_ported/vmapped_log_probs.py; the JAX side is the same source with JAX's imports
put back. NumPy/SciPy oracles are in test_vmapped_log_probs.py; this only checks that the two libraries agree: the
same PRNG draws bit for bit, the log-joints, ELBOs, gradients and the optimised parameters to 1e-5.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

jax_lib = pytest.importorskip("jax")
from ported import load  # noqa: E402

import kiln  # noqa: E402

NUM_STEPS = 50


def _run(module, seed, name, *args):
    np.random.seed(seed)  # the cells draw their inputs from NumPy's global generator
    return getattr(module, name)(*args)


@pytest.fixture(scope="module")
def both():
    return load("vmapped_log_probs"), load("vmapped_log_probs", "jax")


@pytest.fixture(scope="module")
def vis(both):
    """Each library's variational-inference section run once, with what it printed."""
    out = []
    for module in both:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            result = module.variational_inference(NUM_STEPS)
        result.printed = printed.getvalue()
        out.append(result)
    return out


def _close(a, b, rtol=1e-5, atol=0.0):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def test_log_joints_match_jax(both):
    k, j = both
    np.testing.assert_array_equal(k.show_y(), j.show_y())
    _close(_run(k, 1, "log_joint_example"), _run(j, 1, "log_joint_example"))
    _close(_run(k, 2, "batched_log_joint_example"), _run(j, 2, "batched_log_joint_example"))
    _close(k.vmap_batched_log_joint_example(), j.vmap_batched_log_joint_example())
    beta = np.random.RandomState(3).randn(10).astype(np.float32)
    _close(k.log_joint(beta), j.log_joint(beta))


def test_unbatched_log_joint_raises_valueerror_in_both(both, capsys):
    for module in both:
        _run(module, 4, "unbatched_log_joint_error")
        assert capsys.readouterr().out.startswith("Caught expected exception ")  # a ValueError in both


def test_gradients_match_jax(both, vis):
    (k, j), (kv, jv) = both, vis
    beta = np.random.RandomState(5).randn(10).astype(np.float32)
    _close(k.jax.jit(k.jax.grad(k.log_joint))(beta), j.jax.jit(j.jax.grad(j.log_joint))(beta), atol=1e-6)
    rng = np.random.RandomState(6)
    loc, log_scale = (0.3 * rng.randn(10)).astype(np.float32), (-1 + 0.2 * rng.randn(10)).astype(np.float32)
    eps = rng.randn(16, 10).astype(np.float32)
    kval, kgrads = kv.elbo_val_and_grad(loc, log_scale, eps)
    jval, jgrads = jv.elbo_val_and_grad(loc, log_scale, eps)
    _close(kval, jval)
    for a, b in zip(kgrads, jgrads):
        _close(a, b, atol=1e-5)


def test_prng_draws_match_jax_bit_for_bit(vis):
    kv, jv = vis
    kkey, keps = kv.normal_sample(kiln.random.key(10003), (128, 10))
    jkey, jeps = jv.normal_sample(jax_lib.random.key(10003), (128, 10))
    _close(keps, jeps, rtol=0)
    np.testing.assert_array_equal(kiln.random.key_data(kkey), jax_lib.random.key_data(jkey))
    # the key the loop ends with, after NUM_STEPS splits
    np.testing.assert_array_equal(kiln.random.key_data(kv.key), jax_lib.random.key_data(jv.key))


def test_elbo_optimisation_matches_jax(vis):
    kv, jv = vis
    kp, jp = kv.printed.splitlines(), jv.printed.splitlines()
    assert len(kp) == len(jp) == NUM_STEPS // 10
    for a, b in zip(kp, jp):
        (ka, kb), (ja, jb) = a.split("\t"), b.split("\t")
        assert ka == ja
        np.testing.assert_allclose(float(kb), float(jb), rtol=1e-5)
    _close(kv.beta_loc, jv.beta_loc, atol=1e-5)
    _close(kv.beta_log_scale, jv.beta_log_scale, atol=1e-5)
