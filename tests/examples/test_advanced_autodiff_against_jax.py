"""JAX's "Advanced automatic differentiation" pages under kiln and under JAX give the same numbers (the against_jax
session).

The kiln side is tests/examples/jax_ported/advanced_autodiff.py; the JAX side is the same source with JAX's imports
put back. The NumPy, finite-difference and Python-loop oracles are in test_advanced_autodiff.py; this only checks
that the two libraries agree: every cell run once in the pages' order at the small sizes of that file (the draws bit
for bit, the derivatives to float32 rounding, the same dtypes, weak types, shapes and containers, the same printed
text), and a few uses of the pages' functions beyond their cells (per-example gradients of distinct examples, the
straight-through estimator on arrays, Jacobians and Hessians of Python floats, mismatched primal and tangent
containers). (Run at the pages' sizes, 30x40 and 128 rows, the two sides agreed bit for bit in every output, dtype
and weak type, and printed the same text, when this was written.)
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same  # noqa: E402

import kiln  # noqa: E402

SIZES = dict(shape=(3, 4), num_covecs=6, num_vecs=5)
DRAWS = ("W", "b", "X", "V")  # outputs that are draws, compared bit for bit (and the first of "jvp", "vjp", ...)
FUNCTIONS = ("perex_fns", "straight_through")  # outputs holding functions: compared by calling them


@pytest.fixture(scope="module")
def k():
    return load("advanced_autodiff")


@pytest.fixture(scope="module")
def j():
    return load("advanced_autodiff", "jax")


def _run(nb):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = nb.run(**SIZES)
    return res, buf.getvalue()


@pytest.fixture(scope="module")
def outs(k, j):
    return _run(k), _run(j)


def test_same_printed_text(outs):
    (_, k_out), (_, j_out) = outs
    assert k_out.splitlines()[:4] == ["f(x):  3.0", "straight_through_f(x): 3.0", "grad(f)(x): 0.0",
                                      "grad(straight_through_f)(x): 1.0"]
    assert k_out == j_out  # the Jacobians and Hessian as printed, the vmapped products' titles, True, ...


def test_same_draws(outs):
    (kr, _), (jr, _) = outs
    for name in DRAWS:
        assert_same(kr[name], jr[name], rtol=0)
    for name in ("jvp", "vjp", "mjp", "jmp"):  # the tangent, cotangent and the U, S matrices
        assert_same(kr[name][0], jr[name][0], rtol=0)


@pytest.mark.parametrize("name", ["naive_td", "td", "original", "perex", "jacobians", "jacobians_dict", "hessian",
                                  "jvp", "vjp", "vgrad", "hvp", "hvp_timing", "mjp", "jmp", "our_jacrev",
                                  "our_jacfwd", "control_flow"])
def test_same_cell_outputs(outs, name):
    (kr, _), (jr, _) = outs
    assert sorted(kr) == sorted(jr)
    assert_same(kr[name], jr[name], atol=1e-6)


def test_straight_through_functions(outs):
    (kr, _), (jr, _) = outs
    assert_same(kr["straight_through"][2:], jr["straight_through"][2:], rtol=0)  # 3.0, 3.0, 0.0, 1.0, weak
    (kf, kst), (jf, jst) = kr["straight_through"][:2], jr["straight_through"][:2]
    xs = np.array([3.2, -3.2, 0.5, 1.5, 2.5, -0.5, 1e-30, 8388607.5, 1e30], np.float32)
    for fn in (lambda lib, f: f(lib.numpy.asarray(xs)), lambda lib, f: lib.vmap(lib.grad(f))(lib.numpy.asarray(xs)),
               lambda lib, f: lib.jit(lib.grad(f))(2.5), lambda lib, f: lib.hessian(f)(2.5),
               lambda lib, f: lib.jvp(f, (xs,), (xs,))):
        assert_same(fn(kiln, kst), fn(jax, jst), rtol=0)
        assert_same(fn(kiln, kf), fn(jax, jf), rtol=0)


def test_per_example_functions_on_distinct_examples(outs):
    (kr, _), (jr, _) = outs
    rng = np.random.default_rng(0)
    thetas, s0, s1 = (rng.normal(size=(4, 3)).astype(np.float32) for _ in range(3))
    r = rng.normal(size=4).astype(np.float32)
    kfns, jfns = kr["perex_fns"], jr["perex_fns"]
    assert_same(kfns[0](thetas[0], s0[0], r[0], s1[0]), jfns[0](thetas[0], s0[0], r[0], s1[0]))
    assert_same(kfns[1](thetas, s0, r, s1), jfns[1](thetas, s0, r, s1))
    for i in (2, 3):
        assert_same(kfns[i](thetas[0], s0, r, s1), jfns[i](thetas[0], s0, r, s1))
    # Python-float rewards: weakly typed scalars, per example under vmap
    assert_same(kfns[0](thetas[0], s0[0], 1.0, s1[0]), jfns[0](thetas[0], s0[0], 1.0, s1[0]))


def test_jacobians_of_python_floats(k, j):
    # jacrev's blocks take their input's weak type (kiln's used to lose it), so the pages' hessian does too
    for nb_fn in (lambda nb: nb.hessian(lambda x: x ** 3)(2.0), lambda nb: nb.jacrev(lambda x: x * 2.0)(1.0),
                  lambda nb: nb.jacfwd(lambda x: x * 2.0)(1.0), lambda nb: nb.jax.hessian(nb.sigmoid)(0.5),
                  lambda nb: nb.jacrev(nb.predict_dict)({"W": nb.jnp.ones(3), "b": 0.5}, nb.inputs),
                  lambda nb: nb.hessian(lambda p: nb.jnp.sum(nb.predict_dict(p, nb.inputs)))(
                      {"W": nb.jnp.ones(3), "b": 0.5})):
        assert_same(nb_fn(k), nb_fn(j))


def test_mismatched_primal_and_tangent_containers(k, j):
    # the forward-over-reverse hvp takes primals and tangents of one structure: a tuple and a list differ
    f = lambda x: (x ** 3).sum()  # noqa: E731
    x = np.ones(3, np.float32)
    for nb in (k, j):
        with pytest.raises(TypeError):
            nb.hvp(f, (x,), [x])
        with pytest.raises(TypeError):
            nb.hvp_revfwd(f, [x], (x,))
    assert_same(k.hvp(f, [x], [x]), j.hvp(f, [x], [x]))
