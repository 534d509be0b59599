"""JAX's docs/new_docs/301/vjp-objects.md ("First-class VJPs"), ported to kiln by changing imports
(tests/examples/jax_ported/docs_vjp_objects.py), checked against oracles that involve neither JAX nor kiln.

The cells run once, in the page's order (the port's ``run``). Oracles: NumPy in float64 for the two tanh layers'
forward values and cotangents; the printed text, which the page stores no output of, written out here from what
its cells print (reprs of the arrays it builds, `NotSaveable()`, the shapes) and its comments ("3, not 4"); the
prose's claims: fwd and bwd compile once, every VJP object carries its layer's weights (``args_res``) unless
``saveable_args`` leaves them out, ``structured_residuals`` is empty for typical programs, the VJP object's leaves
are all its saved state (copied to the host and back, it still gives the cotangents), and forgetting to restore is
a ValueError that names the arguments. tests/ad/test_vjp_object.py checks the VJP object's semantics beyond the
page (prefix forms of saveable_args, their errors, ``replace``).
"""
from __future__ import annotations

import numpy as np
import pytest
from kiln.frontend.ad.vjp_object import VJP, NotSaveable
from ported import load, run_quietly

import kiln

ONES_3x3 = "Array([[1., 1., 1.],\n       [1., 1., 1.],\n       [1., 1., 1.]], dtype=float32)"
ONES_2x3 = "Array([[1., 1., 1.],\n       [1., 1., 1.]], dtype=float32)"


@pytest.fixture(scope="module")
def nb():
    return load("docs_vjp_objects")


@pytest.fixture(scope="module")
def out(nb):
    """What every cell returns (``run``), and everything they printed under "stdout"."""
    return run_quietly(nb)


def _layer(W, x):
    return np.tanh(np.asarray(x, np.float64) @ np.asarray(W, np.float64))


def _layer_vjp(W, x, ct):
    """float64 NumPy: the cotangents (dW, dx) of tanh(x @ W) for the output cotangent ct."""
    W, x = np.asarray(W, np.float64), np.asarray(x, np.float64)
    d = np.asarray(ct, np.float64) * (1 - np.tanh(x @ W) ** 2)
    return x.T @ d, d @ W.T


W1, W2, X0 = np.ones((3, 3)), 2 * np.ones((3, 3)), np.ones((2, 3))
X1 = _layer(W1, X0)
X2 = _layer(W2, X1)
DW2, DX1 = _layer_vjp(W2, X1, np.ones((2, 3)))
DW1, DX0 = _layer_vjp(W1, X0, DX1)


# The page's layers saturate: tanh'(x) = 1 - tanh(x)^2 at x = 6 tanh(3) (the second layer) is 2.6e-5, and float32's
# rounding of tanh (6e-8) moves it by 2 * 6e-8 / 2.6e-5 = 0.5% relative. Every cotangent downstream of it carries
# that; the first layer alone (x = 3, tanh' = 0.0099) amplifies the rounding to 1.2e-5 only.
SATURATED, FIRST_LAYER, FORWARD = 1e-2, 1e-4, 1e-6


def _close(got, want, rtol):
    got = np.asarray(got)
    assert got.dtype == np.float32 and got.shape == np.shape(want), (got.dtype, got.shape)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=0)


def _pipeline_values(values):
    for name, want in [("x1", X1), ("x2", X2)]:
        _close(values[name], want, FORWARD)
    for name, want in [("dW2", DW2), ("dx1", DX1), ("dW1", DW1), ("dx0", DX0)]:
        _close(values[name], want, SATURATED)


def test_printed_text(out):
    error = str(out["forgot"])
    assert out["stdout"] == (f"True True\n(3, 3) (2, 3)\n[{ONES_3x3}, {ONES_2x3}]\n[NotSaveable(), {ONES_2x3}]\n3\n"
                             f"{error}\n(3, 3) (2, 3)\nTrue True\n{{'bye': (3, 4), 'hi': (4, 5)}}\n")


def test_split_forward_and_backward_passes(out):
    _pipeline_values(out)
    # the callable returned by vjp is a pytree: it came out of the jitted fwd and went into the jitted bwd
    for res, W, x in [(out["res1"], W1, X0), (out["res2"], W2, out["x1"])]:
        assert isinstance(res, VJP)
        # "every VJP object in the pipeline example above carries a full copy of its layer's weights"
        np.testing.assert_array_equal(np.asarray(res.args_res[0]), W)
        np.testing.assert_array_equal(np.asarray(res.args_res[1]), np.asarray(x))
    # "Each of fwd and bwd compiles once"
    assert out["fwd"]._cache_size() == out["bwd"]._cache_size() == 1


def test_same_gradients_as_end_to_end_grad(out):
    assert out["close"] == (True, True) and all(type(c).__name__ == "Array" for c in out["close"])
    _close(out["dW1_ref"], DW1, SATURATED)
    _close(out["dW2_ref"], DW2, SATURATED)


def test_prepackaged_fwd_and_bwd(out):
    fwd, bwd, y, residuals, dW1, dx0 = out["prepackaged"]
    _close(y, X1, FORWARD)
    dW, dx = _layer_vjp(W1, X0, np.ones((2, 3)))
    _close(dW1, dW, FIRST_LAYER)
    _close(dx0, dx, FIRST_LAYER)
    assert isinstance(residuals, VJP)  # the same VJP object as jax.vjp's (JAX's fwd_and_bwd returns its vjp's)
    assert fwd._cache_size() == bwd._cache_size() == 1


def test_what_the_vjp_object_saves(out):
    y, f_vjp = out["args_res"]
    _close(y, X1, FORWARD)
    np.testing.assert_array_equal(np.asarray(f_vjp.args_res[0]), W1)
    np.testing.assert_array_equal(np.asarray(f_vjp.args_res[1]), X0)
    assert f_vjp.structured_residuals == []  # "For typical programs it's empty"
    leaves, tree = kiln.tree_util.tree_flatten(f_vjp)
    assert len(leaves) == 4  # the page's "3, not 4": W1, x0 and two computed residuals
    # "it can be ... serialized, or offloaded like any other data": its leaves, copied to the host and back, are all
    # of its saved state
    host = [np.array(leaf) for leaf in leaves]
    restored = kiln.tree_util.tree_unflatten(tree, [kiln.device_put(h) for h in host])
    ct = np.linspace(0.5, 1.5, 6).reshape(2, 3)
    for got, want in zip(restored(ct.astype(np.float32)), _layer_vjp(W1, X0, ct)):
        _close(got, want, FIRST_LAYER)


def test_saveable_args_and_restoring(out, nb):
    y, f_vjp = out["saveable"]
    assert out["saved_args_res"][0] == NotSaveable()
    np.testing.assert_array_equal(np.asarray(out["saved_args_res"][1]), X0)
    assert out["leaves"] == 3  # "3, not 4: W1 isn't part of the saved state"
    err = out["forgot"]  # "Forgetting is an error that names the arguments still needing restoration"
    assert isinstance(err, ValueError)
    for part in ("VJP function of layer", "before restoring", "saveable_args", "NotSaveable()", "args[0].",
                 "f_vjp.args_res[0] = value", "f_vjp.replace(args_res="):
        assert part in str(err), (part, str(err))
    dW1, dx0 = out["restore"]  # after f_vjp.args_res[0] = W1
    dW, dx = _layer_vjp(W1, X0, np.ones((2, 3)))
    _close(dW1, dW, FIRST_LAYER)
    _close(dx0, dx, FIRST_LAYER)
    # the cell's commented alternative: replace, on a fresh VJP object
    _, g_vjp = kiln.vjp(nb.layer, out["W1"], out["x0"], saveable_args=(False, True))
    for got, want in zip(g_vjp.replace(args_res=[out["W1"], g_vjp.args_res[1]])(np.ones((2, 3), np.float32)),
                         (dW, dx)):
        _close(got, want, FIRST_LAYER)


def test_pipeline_without_the_weights(out):
    light = out["light"]
    assert light["close"] == (True, True)
    _pipeline_values(light)
    for name in ("dW2", "dx1", "dW1", "dx0"):  # the same float32 computation as the pipeline with the weights
        np.testing.assert_allclose(np.asarray(light[name]), np.asarray(out[name]), rtol=1e-6)
    for res in (light["res1"], light["res2"]):
        # the weights left the saved state: x and the two computed residuals remain
        assert res.args_res[0] == NotSaveable() and len(kiln.tree.leaves(res)) == 3
    assert light["fwd_light"]._cache_size() == light["bwd_light"]._cache_size() == 1


def test_fine_print_restores_a_dict_argument(out):
    d, saved, d_grad, shapes = out["fine_print"]
    # the tuple (True, False) lines up with the dict's children in key order: 'bye' kept, 'hi' left out
    (bye, hi), = saved
    np.testing.assert_array_equal(np.asarray(bye), np.ones((3, 4)))
    assert hi == NotSaveable()
    assert shapes == {"bye": (3, 4), "hi": (4, 5)}
    ct = np.ones((3, 5))
    _close(d_grad["bye"], ct @ np.ones((4, 5)).T, 0)  # d(bye @ hi) / d bye = ct @ hi.T: sums of ones, exact
    _close(d_grad["hi"], np.ones((3, 4)).T @ ct, 0)
