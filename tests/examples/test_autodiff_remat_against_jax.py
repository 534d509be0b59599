"""JAX's docs pages autodiff_remat.md and gradient-checkpointing.md under kiln and under JAX give the same numbers
and save the same residuals (the against_jax session).

The kiln side is tests/examples/jax_ported/autodiff_remat.py; the JAX side is the same source with JAX's imports
put back. The NumPy and finite-difference oracles are in test_autodiff_remat.py; this only checks that the two
libraries agree: every ``print_saved_residuals`` listing of the pages, text for text (dtypes, shapes, where each
residual comes from, function names and line:column, the file's path aside); the leaves of ``print_fwd_bwd``'s
vjp functions and how many sin/cos/dot_general its forward and backward jaxprs evaluate; the values, dtypes, weak
types and containers of the gradients of every function the pages differentiate, with and without checkpoint,
to float32 rounding. Where the two differ by design or by a known bug: JAX reuses a stale trace for the page's
``save_any_names_but_these`` cell (so it runs after ``jax.clear_caches()`` on the JAX side, see
test_autodiff_remat.py); JAX folds the Python scalar argument of the recursive example into its backward jaxpr
(one vjp leaf fewer); the offloading policy's residuals are in host memory under JAX, in device memory under kiln
(README).
"""
from __future__ import annotations

import collections
import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
from ported import load  # noqa: E402
from same_as_jax import assert_same, quiet  # noqa: E402

import kiln  # noqa: E402


@pytest.fixture(scope="module")
def k():
    return load("autodiff_remat")


@pytest.fixture(scope="module")
def j():
    return load("autodiff_remat", "jax")


def _located(text):
    """A listing with every ``from /path/file.py:`` as ``from FILE:`` (kiln reads the port from its path, JAX
    from a copy named jax_autodiff_remat.py; the lines are the same)."""
    return re.sub(r"from \S+?\.py:", "from FILE:", text)


CELLS = ["residuals_cell", "f2_residuals_cell", "f3_residuals_cell", "f4_residuals_cell", "fwd_bwd_cells",
         "loss_residuals_cell", "loss_checkpoint_residuals_cell", "named_predict_cell", "named_loss_residuals_cell",
         "loss_checkpoint2_residuals_cell", "chain_compose_8_cell", "chain_compose_16_cell",
         "recursive_checkpoint_8_cell", "recursive_checkpoint_16_cell", "chain_fwd_bwd_cell",
         "recursive_fwd_bwd_cell", "loop_net_cell", "scan_over_layers_cells"]


@pytest.fixture(scope="module")
def outs(k, j):
    """cell name -> ((kiln's return, printed), (JAX's return, printed)), the cells run in the pages' order."""
    res = {}
    for name in CELLS:
        if name == "loss_checkpoint2_residuals_cell":
            # JAX would reuse `loss`'s trace from before `predict` was named (the page prints that listing: the
            # arguments only); cleared, it traces the named `predict`, as kiln does
            jax.clear_caches()
        res[name] = (quiet(getattr(k, name)), quiet(getattr(j, name)))
    return res


LISTING_CELLS = [c for c in CELLS if c.endswith("residuals_cell") or c.startswith(("chain_compose_", "recursive_ch"))]


@pytest.mark.parametrize("cell", LISTING_CELLS)
def test_saved_residuals_listings(outs, cell):
    (_, kiln_text), (_, jax_text) = outs[cell]
    assert kiln_text.strip()
    assert _located(kiln_text) == _located(jax_text)


def _count(jaxpr, counts=None):
    """How many equations of each primitive, nested jaxprs included (kiln's IR and JAX's jaxprs alike)."""
    counts = collections.Counter() if counts is None else counts
    for eqn in jaxpr.eqns:
        counts[eqn.primitive.name] += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else [value]:
                if hasattr(sub, "eqns"):
                    _count(sub, counts)
                elif hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    _count(sub.jaxpr, counts)
    return counts


def _work(jaxpr):
    c = _count(jaxpr)
    return c["sin"], c["cos"], c["dot_general"]


def _leaves(res):
    return [(tuple(r.shape), r.dtype) for r in res]


def test_print_fwd_bwd(outs):
    ((k_plain, k_dots), k_text), ((j_plain, j_dots), j_text) = outs["fwd_bwd_cells"]
    for kr, jr in ((k_plain, j_plain), (k_dots, j_dots)):
        assert (_work(kr[0]), _work(kr[1])) == (_work(jr[0]), _work(jr[1]))
        assert _leaves(kr[2]) == _leaves(jr[2])
        assert_same(kr[2], jr[2])  # the residuals' values
    assert k_text.count("computation:") == j_text.count("computation:") == 4
    for cell in ("chain_fwd_bwd_cell", "recursive_fwd_bwd_cell"):
        (kr, _), (jr, _) = outs[cell]
        assert (_work(kr[0]), _work(kr[1])) == (_work(jr[0]), _work(jr[1]))
        if cell.startswith("chain"):
            assert _leaves(kr[2]) == _leaves(jr[2])
            assert_same(kr[2], jr[2])
        else:
            # kiln's leaves are the saved residuals (x = 3. first); JAX's jaxpr holds the Python scalar as a literal
            assert _leaves(kr[2]) == [((), np.float32)] + _leaves(jr[2])
            assert_same(kr[2][1:], jr[2])


def test_summary_gradients(k, j):
    rng = np.random.default_rng(1)
    args = [rng.normal(size=s).astype(np.float32) / 2 for s in ((5, 4), (6, 5), (7, 6), (4,))]
    ct = rng.normal(size=7).astype(np.float32)
    for name in ("f", "f2", "f3", "f4"):
        ky, k_vjp = kiln.vjp(getattr(k, name), *map(kiln.numpy.asarray, args))
        jy, j_vjp = jax.vjp(getattr(j, name), *map(jax.numpy.asarray, args))
        assert_same((ky, k_vjp(kiln.numpy.asarray(ct))), (jy, j_vjp(jax.numpy.asarray(ct))))
        tangents = [np.ones_like(a) for a in args]
        assert_same(kiln.jvp(getattr(k, name), tuple(map(kiln.numpy.asarray, args)),
                              tuple(map(kiln.numpy.asarray, tangents))),
                     jax.jvp(getattr(j, name), tuple(map(jax.numpy.asarray, args)),
                             tuple(map(jax.numpy.asarray, tangents))))


def test_fundamentals(k, j):
    kF = k.fundamentals_cells(kiln.numpy.sin, lambda y: kiln.numpy.sum(kiln.numpy.tanh(y) ** 2))
    jF = j.fundamentals_cells(jax.numpy.sin, lambda y: jax.numpy.sum(jax.numpy.tanh(y) ** 2))
    x = np.array([0.3, -1.2, 2.0], np.float32)
    kx, jx = kiln.numpy.asarray(x), jax.numpy.asarray(x)
    for name in ("f_grad_bad1", "f_grad_bad2"):
        assert_same(kF[name](kx), jF[name](jx))
    for name in ("f_vjp", "f_vjp_checkpoint"):
        (kz, kb), (jz, jb) = kF[name](kx), jF[name](jx)
        assert_same((kz, kb(1.0)), (jz, jb(1.0)))
    for name in ("sin_vjp", "sin_vjp2"):
        (ky, kb), (jy, jb) = kF[name](kx), jF[name](jx)
        assert_same((ky, kb(kx)), (jy, jb(jx)))
    assert_same(kiln.grad(kF["f_checkpoint"])(kx), jax.grad(jF["f_checkpoint"])(jx))
    errors = []
    for F, arg in ((kF, kx), (jF, jx)):
        with pytest.raises(Exception) as info:
            F["f_checkpoint_grad"](arg)  # the page's jax.vjp(h)(y)
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]  # TypeError: <lambda>() missing 1 required positional argument: 'y'


def test_loss_gradients(k, j, outs):
    rng = np.random.default_rng(2)
    params = [rng.normal(size=(4, 4)).astype(np.float32) for _ in range(3)]
    x, y = rng.normal(size=4).astype(np.float32), rng.normal(size=4).astype(np.float32)
    for name in ("loss", "loss_checkpoint", "loss_checkpoint2"):
        kr = kiln.value_and_grad(getattr(k, name), (0, 1, 2))([kiln.numpy.asarray(p) for p in params],
                                                              kiln.numpy.asarray(x), kiln.numpy.asarray(y))
        jr = jax.value_and_grad(getattr(j, name), (0, 1, 2))([jax.numpy.asarray(p) for p in params],
                                                             jax.numpy.asarray(x), jax.numpy.asarray(y))
        assert_same(kr, jr, rtol=2e-6, atol=1e-6)


def test_recursive_checkpoint_gradients(outs):
    for depth in (8, 16):
        for cell in (f"chain_compose_{depth}_cell", f"recursive_checkpoint_{depth}_cell"):
            (kf, _), (jf, _) = outs[cell]
            assert_same(kiln.value_and_grad(kf)(3.), jax.value_and_grad(jf)(3.))


def test_scan_over_layers(k, j, outs):
    (k_loop, _), (j_loop, _) = outs["loop_net_cell"]
    (kres, _), (jres, _) = outs["scan_over_layers_cells"]
    assert_same(kres[:3], jres[:3])  # params, all_weights, all_biases
    x = np.array([1.0, -0.3], np.float32)
    kx, jx = kiln.numpy.asarray(x), jax.numpy.asarray(x)
    assert_same(kiln.grad(lambda p, x: kiln.numpy.sum(k_loop(p, x)), (0, 1))(kres[0], kx),
                 jax.grad(lambda p, x: jax.numpy.sum(j_loop(p, x)), (0, 1))(jres[0], jx))
    for kn, jn in ((k.scan_over_layers_cells(False)[4], j.scan_over_layers_cells(False)[4]), (kres[4], jres[4])):
        assert_same(kiln.value_and_grad(lambda *a: kiln.numpy.sum(kn(*a)), (0, 1, 2))(kres[1], kres[2], kx),
                     jax.value_and_grad(lambda *a: jax.numpy.sum(jn(*a)), (0, 1, 2))(jres[1], jres[2], jx))
        assert (_located(quiet(k.print_saved_residuals, kn, kres[1], kres[2], kx)[1])
                == _located(quiet(j.print_saved_residuals, jn, jres[1], jres[2], jx)[1]))


def _avals(text):
    """The residuals' dtypes and shapes, in host memory or not."""
    return [line.split(" ")[0].replace("<host>", "") for line in text.splitlines()]


def test_offload_dot_with_no_batch_dims(k, j):
    kf, jf = k.checkpoint_offload_dot_with_no_batch_dims(None), j.checkpoint_offload_dot_with_no_batch_dims(None)
    X = (np.random.default_rng(3).normal(size=(4, 4)) / 2).astype(np.float32)
    kX, jX = kiln.numpy.asarray(X), jax.numpy.asarray(X)
    assert_same(kiln.value_and_grad(kf)(kX), jax.value_and_grad(jf)(jX), rtol=2e-6, atol=1e-6)
    assert_same(kiln.jit(kiln.grad(kf))(kX), jax.jit(jax.grad(jf))(jX), rtol=2e-6, atol=1e-6)
    # JAX: f32<host>[4,4] output of device_put (host memory); kiln: f32[4,4] output of dot_general (device memory)
    k_text, j_text = quiet(k.print_saved_residuals, kf, kX)[1], quiet(j.print_saved_residuals, jf, jX)[1]
    assert _avals(k_text) == _avals(j_text) == ["f32[4,4]"] * 4
    assert j_text.count("<host>") == 3


@pytest.fixture(scope="module")
def offload_names(k, j):
    return (k.checkpoint_names_saved_offloaded_recomputed(None, mesh_shape=(1,), shape=(4, 3)),
            j.checkpoint_names_saved_offloaded_recomputed(None, mesh_shape=(1,), shape=(4, 3)))


def test_save_and_offload_only_these_names_values(offload_names):
    (kf, kinp), (jf, jinp) = offload_names
    assert_same(kinp, jinp, rtol=0)
    for kx, jx in ((kinp, jinp), (kinp / 10, jinp / 10)):
        assert_same(kiln.value_and_grad(kf)(kx), jax.value_and_grad(jf)(jx))
        assert_same(kiln.jit(kiln.grad(kf))(kx), jax.jit(jax.grad(jf))(jx))


def test_save_and_offload_only_these_names_residuals(k, j, offload_names):
    (kf, kinp), (jf, jinp) = offload_names
    k_text, j_text = quiet(k.print_saved_residuals, kf, kinp)[1], quiet(j.print_saved_residuals, jf, jinp)[1]
    assert _avals(k_text) == _avals(j_text)  # JAX: f32[4,3], f32[4,4,3] and f32<host>[4,4,3]
