"""kiln.vjp's pullback as JAX's VJP object: a callable pytree of the residuals, split into the arguments the
backward pass reads as given (args_res, NotNeeded() elsewhere) and the values the forward pass computed
(opaque_residuals); NumPy is the oracle for the cotangents."""
import numpy as np
import pytest
from kiln.frontend.ad.vjp_object import VJP, NotNeeded, NotSaveable

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


# -- with_refs (JAX's refs guide, docs/new_docs/301/refs.md) --------------------------------------------------
def test_with_refs_delivers_values_skips_unwanted_and_accumulates_into_refs():
    ct = np.ones((2, 3), np.float32)
    w_bar, x_bar = _layer_cotangents(W, X, ct)
    _, f_vjp = kiln.vjp(layer, W, X)
    gw, dx = f_vjp.with_refs(kiln.ad.GradValue(), kiln.ad.DontWant())(ct)
    np.testing.assert_allclose(np.asarray(gw), w_bar, rtol=1e-5, atol=1e-6)
    assert dx == kiln.ad.DidntWant() and kiln.tree_util.tree_leaves(dx) == []
    acc = kiln.new_ref(jnp.full((2, 3), 100.0))
    out = f_vjp.with_refs(kiln.ad.DontWant(), acc)(ct)
    assert out == (kiln.ad.DidntWant(), kiln.ad.GradRef())
    f_vjp.with_refs(kiln.ad.DontWant(), acc)(ct)  # added, not set
    np.testing.assert_allclose(np.asarray(acc[...]), 100 + 2 * x_bar, rtol=1e-5)
    assert f_vjp.with_refs()(ct)[0].shape == (3, 3)  # no entries: every cotangent as a value


def test_with_refs_dont_want_skips_that_cotangents_work():
    _, f_vjp = kiln.vjp(lambda w, x: w @ x, W, X[0])
    both = str(kiln.make_jaxpr(lambda: f_vjp(jnp.ones(3)))())
    only_w = str(kiln.make_jaxpr(lambda: f_vjp.with_refs(kiln.ad.GradValue(), kiln.ad.DontWant())(jnp.ones(3)))())
    assert both.count("dot_general") == 2 and only_w.count("dot_general") == 1


def test_with_refs_accumulates_microbatches_in_a_jitted_scan():
    xs = np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4)
    w = (np.arange(12.0, dtype=np.float32) / 10).reshape(3, 4)

    @kiln.jit
    def grads(w, xs):
        acc = kiln.new_ref(jnp.zeros_like(w))

        def body(_, x):
            loss, f_vjp = kiln.vjp(lambda w: jnp.sum(jnp.sin(w @ x)), w)
            f_vjp.with_refs(acc)(jnp.ones_like(loss))
            return None, loss
        _, losses = kiln.lax.scan(body, None, xs)
        return kiln.freeze(acc), losses

    g, _ = grads(w, xs)
    expected = sum(np.outer(np.cos(w @ x), x) for x in xs.astype(np.float64))
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-5, atol=1e-6)


def test_with_refs_errors():
    _, f_vjp = kiln.vjp(layer, W, X)
    with pytest.raises(TypeError, match=r"with_refs takes one entry per primal, in their structure"):
        f_vjp.with_refs(kiln.ad.GradValue())(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match=r"a with_refs entry must be kiln.ad.GradValue\(\), kiln.ad.DontWant\(\) or "
                                        r"a Ref \(kiln.new_ref\), got float"):
        f_vjp.with_refs(kiln.ad.GradValue(), 0.0)(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"the Ref for input leaf 1 holds f32\[3\], but that input's cotangent is "
                                         r"f32\[2,3\]"):
        f_vjp.with_refs(kiln.ad.GradValue(), kiln.new_ref(jnp.zeros(3)))(np.ones((2, 3), np.float32))


# -- saveable_args, replace, structured_residuals (JAX's docs/new_docs/301/vjp-objects.md) ------------------------
def test_saveable_args_leaves_arguments_out_until_restored():
    ct = RNG.standard_normal((2, 3)).astype(np.float32)
    y, f_vjp = kiln.vjp(layer, W, X, saveable_args=(False, True))
    assert f_vjp.args_res[0] == NotSaveable() and repr(f_vjp.args_res[0]) == "NotSaveable()"
    np.testing.assert_array_equal(np.asarray(f_vjp.args_res[1]), X)
    # NotSaveable() is an empty pytree: the weights are no leaf of the saved state
    assert len(kiln.tree.leaves(f_vjp)) == 1 + len(f_vjp.opaque_residuals)
    with pytest.raises(ValueError, match=r"the VJP function of layer was applied before restoring the argument "
                                         r"values that saveable_args kept out of its saved state \(NotSaveable\(\) "
                                         r"in args_res\): args\[0\]\. Assign them first"):
        f_vjp(ct)
    want = _layer_cotangents(W, X, ct)
    restored = f_vjp.replace(args_res=[W, f_vjp.args_res[1]])  # a copy: f_vjp itself still lacks W
    assert f_vjp.args_res[0] == NotSaveable()
    f_vjp.args_res[0] = W
    for vjp_fn in (restored, f_vjp):
        for got, w in zip(vjp_fn(ct), want):
            np.testing.assert_allclose(np.asarray(got), w, rtol=1e-5, atol=1e-6)
    # the values computed from the arguments are saved as usual (no recomputation): the same opaque residuals
    _, full = kiln.vjp(layer, W, X)
    for a, b in zip(f_vjp.opaque_residuals, full.opaque_residuals, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_saveable_args_forms_and_nested_arguments():
    d = {"hi": np.ones((4, 5), np.float32), "bye": 2 * np.ones((3, 4), np.float32), "s": X[0]}

    def g(t):
        return t["bye"] @ t["hi"] + jnp.sin(t["s"][:1]).sum()
    # a tuple matches the dict's children (keys sorted: bye, hi, s); a dict prefix does the same; a bool covers all
    for flags in [((True, False, False),), ({"bye": True, "hi": False, "s": False},)]:
        _, f_vjp = kiln.vjp(g, d, saveable_args=flags)
        bye, hi, s = f_vjp.args_res[0]
        np.testing.assert_array_equal(np.asarray(bye), d["bye"])
        assert hi == NotSaveable() and s == NotNeeded()  # a leaf the backward pass never reads stays NotNeeded()
    _, f_vjp = kiln.vjp(g, d, saveable_args=False)
    assert f_vjp.args_res == [(NotSaveable(), NotSaveable(), NotNeeded())]
    with pytest.raises(ValueError, match=r"restoring .*: args\[0\]\['bye'\], args\[0\]\['hi'\]\. Assign"):
        f_vjp(np.ones((3, 5), np.float32))
    f_vjp.args_res = [d]  # restored with the argument as it was given
    cts = f_vjp(np.ones((3, 5), np.float32))
    np.testing.assert_allclose(np.asarray(cts[0]["hi"]), d["bye"].T @ np.ones((3, 5)), rtol=1e-6)
    # an argument of nested containers gets nested tuples, mirroring them
    _, n_vjp = kiln.vjp(lambda t: t["a"][0] * t["a"][1] * t["b"], {"a": (X, 2 * X), "b": 3 * X})
    (a0, a1), b = n_vjp.args_res[0]
    np.testing.assert_array_equal(np.asarray(a1), 2 * X)
    np.testing.assert_array_equal(np.asarray(b), 3 * X)


@pytest.mark.parametrize("flags,message", [
    ([False, True], r"saveable_args must be a prefix of the primals' structure, but saveable_args is \[False, True\] "
                    r"where the primals have a tuple of 2 children \(a tuple matches any container"),
    ((False,), r"but saveable_args is \(False,\) where the primals have a tuple of 2 children"),
    ((True, (False, True)), r"but saveable_args\[1\] is \(False, True\) where the primals have a leaf"),
    (1, r"saveable_args must be a bool or a tree of bools .*, but saveable_args is 1 of type int"),
    ((True, None), r"but saveable_args\[1\] is None of type NoneType"),
])
def test_saveable_args_errors(flags, message):
    with pytest.raises(ValueError, match=message):
        kiln.vjp(layer, W, X, saveable_args=flags)


def test_saveable_args_dict_prefix_with_other_keys():
    with pytest.raises(ValueError, match=r"saveable_args\[0\] is \{'a': True\} where the primals have a dict of 1 "
                                         r"child with keys \['b'\]"):
        kiln.vjp(lambda t: t["b"] * 2, {"b": X}, saveable_args=({"a": True},))


def test_structured_residuals_replace_and_fwd_and_bwd():
    _, f_vjp = kiln.vjp(layer, W, X)
    assert f_vjp.structured_residuals == []  # no kiln rule saves structured residuals
    ct = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"structured_residuals holds values, but this VJP's backward pass reads "
                                         r"none .*: leave it empty"):
        f_vjp.replace(structured_residuals=[jnp.ones(2)])(ct)
    with pytest.raises(TypeError, match=r"VJP.replace takes args_res, opaque_residuals, structured_residuals, got "
                                        r"fun, in_tree"):
        f_vjp.replace(fun=None, in_tree=None)
    # fwd_and_bwd's residuals are the VJP object, as JAX's
    fwd, bwd = kiln.fwd_and_bwd(layer, argnums=0)
    y, res = fwd(W, X)
    assert isinstance(res, VJP) and res.args_res == [NotNeeded()]  # the weights' cotangent reads x only
    np.testing.assert_allclose(np.asarray(bwd(res, ct)), _layer_cotangents(W, X, ct)[0], rtol=1e-5, atol=1e-6)
