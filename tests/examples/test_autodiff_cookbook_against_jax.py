"""JAX's docs notebook autodiff_cookbook.md under kiln and under JAX gives the same numbers (the against_jax session).

The kiln side is tests/examples/jax_ported/autodiff_cookbook.py; the JAX side is the same source with JAX's imports
put back. The NumPy and finite-difference oracles are in test_autodiff_cookbook.py; this only checks that the two
libraries agree: the same PRNG draws bit for bit (the notebook's key threaded from cell to cell as it does), the
derivatives to float32 rounding, the same dtypes, weak types and container structure, and the same printed text.
Every cell compiles op by op on both sides (some 15 s each for the whole notebook), so to stay cheap this runs the
cells whose draws or conventions only JAX can vouch for: the draws, value_and_grad, jvp/vjp, the vmapped
matrix-Jacobian products, the vjp through Python control flow, complex jvp/vjp and grad. Left out, because
test_autodiff_cookbook.py checks them against closed forms, finite differences or the notebook's printed values:
the grad(tanh) cells, check_grads, the dense Jacobian/Hessian cells, the vector-valued gradient, the
Hessian-vector products, the Jacobian-matrix products and the complex Cholesky gradient. (Run in full, at the
notebook's sizes, the two sides agreed bit for bit in every output, dtype and weak type when this was written.)
"""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, quiet  # noqa: E402

import kiln  # noqa: E402


@pytest.fixture(scope="module")
def k():
    return load("autodiff_cookbook")


@pytest.fixture(scope="module")
def j():
    return load("autodiff_cookbook", "jax")


def _assert_same_key(kiln_key, jax_key):
    np.testing.assert_array_equal(np.asarray(kiln.random.key_data(kiln_key)), np.asarray(jax.random.key_data(jax_key)))


@pytest.fixture(scope="module")
def model(k, j):
    """The notebook's key, W and b after its setup cell, on each side."""
    kk, kW, kb = k.init_params(k.key)
    jk, jW, jb = j.init_params(j.key)
    return (kk, kW, kb), (jk, jW, jb)


def test_setup_draws_and_gradients(k, j, model):
    (kk, kW, kb), (jk, jW, jb) = model
    _assert_same_key(kk, jk)
    assert_same((kW, kb), (jW, jb), rtol=0)  # the same draws
    assert_same(quiet(k.value_and_grad_cell, kW, kb)[0], quiet(j.value_and_grad_cell, jW, jb)[0])
    (kd, k_out), (jd, j_out) = quiet(k.dict_cell, kW, kb), quiet(j.dict_cell, jW, jb)
    assert_same(kd, jd)
    assert k_out == j_out  # {'W': Array([...], dtype=float32), 'b': Array(..., dtype=float32)}


def test_numerical_differences_cell(k, j, model):
    (kk, kW, kb), (jk, jW, jb) = model
    kr, jr = quiet(k.numerical_differences_cell, kW, kb, kk)[0], quiet(j.numerical_differences_cell, jW, jb, jk)[0]
    _assert_same_key(kr[0], jr[0])
    assert_same(kr[1], jr[1], rtol=0)  # the random direction
    assert_same(kr[3], jr[3])  # autodiff
    assert_same(kr[5], jr[5])
    # float32 differences with a step of 1e-4: one ulp of the loss (~2.4e-7) moves them by 2.4e-3
    np.testing.assert_allclose([float(kr[2]), float(kr[4])], [float(jr[2]), float(jr[4])], atol=5e-3)


def test_jvp_vjp_and_vmapped_products(k, j, model):
    (kk, kW, kb), (jk, jW, jb) = model
    kk, jk = k.numerical_differences_cell(kW, kb, kk)[0], j.numerical_differences_cell(jW, jb, jk)[0]
    kk, *kj = k.jvp_cell(kW, kb, kk)
    jk, *jj = j.jvp_cell(jW, jb, jk)
    assert_same(kj[0], jj[0], rtol=0)  # the tangent's draw
    assert_same(kj[1:], jj[1:])
    kk, *kv = k.vjp_cell(kW, kb, kk)
    jk, *jv = j.vjp_cell(jW, jb, jk)
    _assert_same_key(kk, jk)
    assert_same(kv[0], jv[0], rtol=0)  # the cotangent's draw
    assert_same(kv[1:], jv[1:])
    # matrix-Jacobian products, looped and vmapped, and the notebook's own jacrev/jacfwd (vmapped vjp/jvp)
    kk, kf, *km = quiet(k.mjp_cell, kW, kb, kv[1], 6)[0]
    jk, jf, *jm = quiet(j.mjp_cell, jW, jb, jv[1], 6)[0]
    assert_same(km[0], jm[0], rtol=0)
    assert_same(km[1:], jm[1:])
    assert_same(k.our_jacrev_cell(kf, kW), j.our_jacrev_cell(jf, jW))
    assert_same(k.our_jacfwd_cell(kf, kW), j.our_jacfwd_cell(jf, jW))


def test_vjp_through_python_control_flow(k, j):
    (ky, kg), k_out = quiet(k.python_control_flow_cell)
    (jy, jg), j_out = quiet(j.python_control_flow_cell)
    assert_same((ky, kg), (jy, jg))
    assert k_out == j_out  # (Array(3.1415927, dtype=float32, weak_type=True),)


def test_complex_cells(k, j):
    kc, jc = quiet(k.check_vjp_cell)[0], quiet(j.check_vjp_cell)[0]
    for kr, jr in zip(kc, jc, strict=True):
        assert_same(kr[2], jr[2], rtol=0)  # the uniform draws
        assert_same(kr[:2], jr[:2], rtol=1e-6, atol=1e-6)
    for cell in ("complex_to_real_grad_cell", "holomorphic_grad_cell", "non_holomorphic_grad_cell"):
        kg, jg = getattr(k, cell)(), getattr(j, cell)()
        assert_same(kg, jg)
        assert np.signbit(complex(kg).imag) == np.signbit(complex(jg).imag)  # 1.-0.j
