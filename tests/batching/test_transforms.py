"""vmap composed with the other transformations: per-example gradients (vmap(grad)) against a loop,
grad(vmap), jacfwd/jacrev/hessian (built on vmap) against finite differences, vmap of custom_jvp /
custom_vjp functions (values and gradients, with rules that differ from the true derivative so that
using them is visible), checkpoint, and the batched custom_vjp_lin."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def close(a, b, tol=1e-4):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = knp.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    return knp.sum((logits - y) ** 2)


PARAMS = ((randn(5, 8), randn(8)), (randn(8, 3), randn(3)))
XS, YS = randn(6, 5), randn(6, 3)


def test_per_example_gradients_match_a_loop():
    per_example = kiln.vmap(kiln.grad(mlp_loss), in_axes=(None, 0, 0))(PARAMS, XS, YS)
    loop = [kiln.grad(mlp_loss)(PARAMS, x, y) for x, y in zip(XS, YS)]
    want = kiln.tree_util.tree_map(lambda *g: np.stack([np.asarray(v) for v in g]), *loop)
    kiln.tree_util.tree_map(close, per_example, want)
    # Summing the per-example gradients gives the gradient of the summed loss: grad(vmap(f)).
    total = kiln.grad(lambda p: knp.sum(kiln.vmap(mlp_loss, in_axes=(None, 0, 0))(p, XS, YS)))(PARAMS)
    kiln.tree_util.tree_map(lambda a, b: close(a, np.asarray(b).sum(0), 1e-3), total, per_example)


def test_per_example_gradients_under_jit_are_one_batched_computation():
    f = kiln.jit(kiln.vmap(kiln.grad(mlp_loss), in_axes=(None, 0, 0)))
    want = kiln.vmap(kiln.grad(mlp_loss), in_axes=(None, 0, 0))(PARAMS, XS, YS)
    kiln.tree_util.tree_map(close, f(PARAMS, XS, YS), want)
    text = f.lower(PARAMS, XS, YS).as_text()
    assert "stablehlo.while" not in text
    assert "batching_dims = [0]" in text  # the weight gradients are batched dot_generals


def test_grad_of_vmap_against_a_loop():
    w = randn(4)
    f = lambda w, x: knp.sin(x @ w) * knp.sum(w ** 2)
    g = kiln.grad(lambda w: knp.sum(kiln.vmap(f, in_axes=(None, 0))(w, XS[:, :4])))(w)
    want = sum(np.asarray(kiln.grad(f)(w, x)) for x in XS[:, :4])
    close(g, want)


def _fd_jacobian(f, x, eps=1e-3):
    x = np.asarray(x, np.float64)
    cols = []
    for i in range(x.size):
        d = np.zeros(x.size)
        d[i] = eps
        d = d.reshape(x.shape)
        cols.append((np.asarray(f((x + d).astype(np.float32)), np.float64)
                     - np.asarray(f((x - d).astype(np.float32)), np.float64)) / (2 * eps))
    return np.moveaxis(np.stack(cols), 0, -1).reshape(np.shape(f(x.astype(np.float32))) + x.shape)


def test_jacobians_and_hessian_against_finite_differences():
    f = lambda x: knp.tanh(x[:, None] * x[None, :]).sum(0) + knp.sin(x) ** 2
    x = randn(4) * 0.5
    want = _fd_jacobian(lambda v: np.asarray(f(v)), x)
    close(kiln.jacfwd(f)(x), want, 2e-3)
    close(kiln.jacrev(f)(x), want, 2e-3)
    s = lambda x: knp.sum(knp.exp(x) * x[::-1]) + knp.prod(x[:2])
    hess_fd = _fd_jacobian(lambda v: np.asarray(kiln.grad(s)(v)), x)
    close(kiln.hessian(s)(x), hess_fd, 5e-3)
    # Pytree inputs and outputs.
    g = lambda p: {"a": p["u"] * p["v"].sum(), "b": knp.cos(p["u"])}
    p = {"u": randn(3), "v": randn(2)}
    jf, jr = kiln.jacfwd(g)(p), kiln.jacrev(g)(p)
    kiln.tree_util.tree_map(lambda a, b: close(a, b, 1e-5), jf, jr)
    assert jf["a"]["v"].shape == (3, 2)
    close(jf["a"]["v"], _fd_jacobian(lambda v: np.asarray(g({"u": p["u"], "v": v})["a"]), p["v"]), 2e-3)


def test_jacobians_are_vectorised_not_looped():
    """The IR of jacfwd/jacrev does not grow with the number of inputs (vmap, not a loop)."""
    f = lambda x: knp.tanh(x) * knp.sum(x ** 2)
    sizes = {n: (len(kiln.make_ir(kiln.jacfwd(f))(np.ones(n, np.float32)).ir.eqns),
                 len(kiln.make_ir(kiln.jacrev(f))(np.ones(n, np.float32)).ir.eqns)) for n in (3, 30)}
    assert sizes[3] == sizes[30]


def test_vmap_of_jacobians():
    f = lambda x: knp.sin(x) * knp.sum(x)
    xs = randn(3, 4)
    close(kiln.vmap(kiln.jacfwd(f))(xs), np.stack([np.asarray(kiln.jacfwd(f)(x)) for x in xs]), 1e-5)
    close(kiln.vmap(kiln.hessian(lambda x: knp.sum(f(x))))(xs),
          np.stack([np.asarray(kiln.hessian(lambda x: knp.sum(f(x)))(x)) for x in xs]), 1e-4)


# -- custom derivatives ---------------------------------------------------------------------------------

@kiln.custom_jvp
def softclip(x):
    return knp.tanh(x)


# Deliberately not tanh's derivative, so that the tests see the rule being used.
softclip.defjvp(lambda p, t: (softclip(p[0]), t[0] * 3.0))


@kiln.custom_vjp
def scaled(x, w):
    return x * w


scaled.defvjp(lambda x, w: (x * w, (x, w)),
              lambda res, g: (g * res[1] * 2.0, knp.sum(g * res[0]) * knp.ones_like(res[1])))


def test_vmap_of_custom_jvp_values_and_gradients():
    xs = randn(5, 3)
    close(kiln.vmap(softclip)(xs), np.tanh(xs), 1e-6)
    close(kiln.vmap(softclip, in_axes=1, out_axes=1)(xs), np.tanh(xs), 1e-6)
    close(kiln.vmap(kiln.grad(lambda x: knp.sum(softclip(x))))(xs), np.full_like(xs, 3.0))
    close(kiln.grad(lambda x: knp.sum(kiln.vmap(softclip)(x)))(xs), np.full_like(xs, 3.0))
    _, t = kiln.jvp(kiln.vmap(softclip), (xs,), (np.ones_like(xs),))
    close(t, np.full_like(xs, 3.0))
    close(kiln.jit(kiln.vmap(kiln.grad(lambda x: knp.sum(softclip(x) ** 2))))(xs), 6.0 * np.tanh(xs))


def test_vmap_of_custom_vjp_values_and_gradients():
    xs, w = randn(5, 3), randn(3)
    close(kiln.vmap(scaled, in_axes=(0, None))(xs, w), xs * w, 1e-6)
    gx, gw = kiln.vmap(kiln.grad(lambda x, w: knp.sum(scaled(x, w)), argnums=(0, 1)), in_axes=(0, None))(xs, w)
    close(gx, np.broadcast_to(2.0 * w, xs.shape))
    close(gw, np.repeat(xs.sum(1, keepdims=True), 3, axis=1))
    gx, gw = kiln.grad(lambda x, w: knp.sum(kiln.vmap(scaled, in_axes=(0, None))(x, w)), argnums=(0, 1))(xs, w)
    close(gx, np.broadcast_to(2.0 * w, xs.shape))
    close(gw, np.full(3, xs.sum()))
    # Both arguments mapped, on other axes, under jit.
    ws = randn(5, 3)
    per = kiln.jit(kiln.vmap(kiln.grad(lambda x, w: knp.sum(scaled(x, w)), argnums=1), in_axes=(1, 1)))(xs.T, ws.T)
    close(per, np.repeat(xs.sum(1, keepdims=True), 3, axis=1))


def test_vmap_of_checkpoint_gradients():
    f = kiln.checkpoint(lambda x: knp.sin(x) * knp.cos(x))
    xs = randn(4, 3)
    close(kiln.vmap(kiln.grad(lambda x: knp.sum(f(x))))(xs), np.cos(2 * xs) * 1.0)
    close(kiln.grad(lambda x: knp.sum(kiln.vmap(f)(x)))(xs), np.cos(2 * xs) * 1.0)


def test_custom_vjp_lin_batches_and_transposes():
    """The linear part of a custom_vjp function's derivative (custom_vjp_lin), batched: evaluating it
    forward fails as unbatched (forward mode of custom_vjp is unsupported); transposing it runs the
    user's bwd per batch element, with unbatched or batched residuals."""
    from kiln.frontend.ad.api import _linearize_flat, _trace_flat
    from kiln.frontend.ad.transpose import UndefinedPrimal, backward_pass
    from kiln.frontend.batching.core import BatchContext, batch_closed
    from kiln.frontend.core.tracing import abstractify

    @kiln.custom_vjp
    def f(x):
        return knp.sin(x)

    f.defvjp(lambda x: (knp.sin(x), knp.cos(x)), lambda c, g: (2.0 * g * c,))
    xs = np.linspace(0.1, 1.0, 12, dtype=np.float32).reshape(4, 3)
    cts = np.arange(12, dtype=np.float32).reshape(4, 3)

    def linear_part(x):
        closed, _ = _trace_flat(f, [x], kiln.tree_util.tree_structure((x,)), "f")
        _, residuals, lin, _, _, _ = _linearize_flat(closed, [x])
        return residuals, lin

    per = [linear_part(knp.asarray(x)) for x in xs]
    lin = per[0][1]
    assert [e.prim.name for e in lin.ir.eqns] == ["custom_vjp_lin"]
    stacked = [knp.stack([p[0][i] for p in per]) for i in range(len(per[0][0]))]
    n_res = len(stacked)
    for res_dims, res, cos in [([None] * n_res, list(per[0][0]), np.cos(xs[0])), ([0] * n_res, stacked, np.cos(xs))]:
        batched, out_dims = batch_closed(lin, res_dims + [0], BatchContext(4))
        assert out_dims == [0] and [e.prim.name for e in batched.ir.eqns] == ["custom_vjp_lin"]
        cts_in = backward_pass(batched.ir, batched.consts, res + [UndefinedPrimal(abstractify(xs))],
                               [knp.asarray(cts)])[n_res:]
        close(cts_in[0], 2.0 * cts * cos, 1e-5)
    with pytest.raises(TypeError, match="forward-mode differentiation .* of the custom_vjp function f is not "):
        kiln.vmap(lambda t: kiln.jvp(f, (xs[0],), (t,))[1])(xs)
