"""kiln.vjp's pullback as JAX's VJP object: a callable pytree of the residuals, split into the arguments the
backward pass reads as given (args_res, NotNeeded() elsewhere) and the values the forward pass computed
(opaque_residuals); NumPy is the oracle for the cotangents."""
import numpy as np
import pytest
from kiln.frontend.ad.vjp_object import VJP, NotNeeded

import kiln
import kiln.numpy as jnp

RNG = np.random.default_rng(0)
W = RNG.standard_normal((3, 3)).astype(np.float32)
X = RNG.standard_normal((2, 3)).astype(np.float32)


def layer(w, x):
    return jnp.tanh(x @ w)


def _layer_cotangents(w, x, ct):
    """NumPy: the cotangents of tanh(x @ w) for the output cotangent ct."""
    d = ct * (1 - np.tanh(x @ w) ** 2)
    return x.T @ d, d @ w.T


def test_args_res_holds_the_arguments_read_as_given():
    y, f_vjp = kiln.vjp(layer, W, X)
    assert isinstance(f_vjp, VJP)
    # x @ w's backward pass reads both operands as they were given; tanh's derivative is a computed value
    np.testing.assert_array_equal(np.asarray(f_vjp.args_res[0]), W)
    np.testing.assert_array_equal(np.asarray(f_vjp.args_res[1]), X)
    assert len(kiln.tree.leaves(f_vjp)) == 2 + len(f_vjp.opaque_residuals)
    ct = RNG.standard_normal((2, 3)).astype(np.float32)
    for got, want in zip(f_vjp(ct), _layer_cotangents(W, X, ct)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    # sin's derivative (cos x) is computed: the argument itself is not needed
    _, g_vjp = kiln.vjp(lambda x: jnp.sin(x) * 2, X)
    assert g_vjp.args_res == [NotNeeded()] and repr(g_vjp.args_res[0]) == "NotNeeded()"
    assert g_vjp.in_tree == kiln.tree.structure((X,)) and g_vjp.out_tree == kiln.tree.structure(X)


def test_an_argument_with_several_leaves_is_a_tuple_of_entries():
    d = {"hi": np.ones((4, 5), np.float32), "bye": np.ones((3, 4), np.float32), "c": X[0], "u": np.ones(2, np.float32)}
    _, f_vjp = kiln.vjp(lambda t: t["bye"] @ t["hi"] + jnp.sin(t["c"][:1]), d)
    bye, c, hi, u = f_vjp.args_res[0]  # the dict's leaves in key order
    np.testing.assert_array_equal(np.asarray(bye), d["bye"])
    np.testing.assert_array_equal(np.asarray(hi), d["hi"])
    assert c == NotNeeded() and u == NotNeeded()
    assert any(np.allclose(np.asarray(r), np.cos(X[0, :1])) for r in f_vjp.opaque_residuals)
    # a Python scalar argument the backward pass reads is saved as an array
    _, s_vjp = kiln.vjp(lambda s, x: s * x, 2.0, X)
    assert isinstance(s_vjp.args_res[1], kiln.Array)


def test_forward_and_backward_compiled_apart():
    fwd = kiln.jit(lambda w, x: kiln.vjp(layer, w, x))
    bwd = kiln.jit(lambda f_vjp, ct: f_vjp(ct))
    w2 = 2 * W
    x1, res1 = fwd(W, X)
    x2, res2 = fwd(w2, x1)
    assert isinstance(res1, VJP) and isinstance(res1.args_res[0], kiln.Array)
    dw2, dx1 = bwd(res2, jnp.ones_like(x2))
    dw1, dx0 = bwd(res1, dx1)
    want_dw2, want_dx1 = _layer_cotangents(w2, np.asarray(x1), np.ones((2, 3), np.float32))
    want_dw1, want_dx0 = _layer_cotangents(W, X, want_dx1)
    for got, want in [(dw2, want_dw2), (dw1, want_dw1), (dx0, want_dx0)]:
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)


def test_restoring_args_res_and_its_errors():
    y, f_vjp = kiln.vjp(layer, W, X)
    ct = np.ones((2, 3), np.float32)
    f_vjp.args_res[0] = NotNeeded()  # as after leaving the weights out of the saved state
    with pytest.raises(ValueError, match=r"reads leaf 0 of the arguments, but args_res holds NotNeeded\(\) there: "
                                         r"restore the argument's value"):
        f_vjp(ct)
    f_vjp.args_res[0] = W
    for got, want in zip(f_vjp(ct), _layer_cotangents(W, X, ct)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    f_vjp.args_res = [W]
    with pytest.raises(ValueError, match=r"args_res holds 1 leaves, but the function was called with 2"):
        f_vjp(ct)
