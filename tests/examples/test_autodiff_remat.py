"""JAX's docs pages autodiff_remat.md and gradient-checkpointing.md (``jax.checkpoint``/``jax.remat``), ported to
kiln by changing imports (tests/examples/jax_ported/autodiff_remat.py), checked against oracles that do not
involve JAX.

The cells run once, in the pages' order (the redefinition of ``predict`` included). Most of them only print
``print_saved_residuals`` listings or jaxprs: those are checked for what the pages state, line by line (the
residuals' dtypes and shapes, where each comes from: an argument, or the primitive, the function and the source
line that computed it, in the order the page prints them, updated to JAX's current wording: ``from the argument
W1``, ``params[0]``), and for what the text claims: ``jax.checkpoint`` saves only a function's inputs, the
policies save the dots / the named values, recursive checkpointing saves O(log D) residuals for O(log D) times
the ``sin`` evaluations. Every function the pages differentiate, with and without ``jax.checkpoint`` and under
each policy, gives the same primal values and derivatives, and those match NumPy float64 closed forms (hand
written backward passes of the sin-layer chain, the loss, the ReLU scan-over-layers network, the einsum chain of
the offload cell and the 3N nested sines of its scan), which a float64 central-difference check vouches for
first. Where kiln and the page differ: the page's ``save_any_names_but_these('layer1_output')`` listing shows
only the arguments, an artifact of JAX's trace caches (``loss`` was traced before ``predict`` was redefined; JAX
0.10.2 prints what kiln prints after ``jax.clear_caches()``): kiln saves the named ``layer0_output`` that the
policy allows and the backward pass needs. The offloading policies save in device memory (README, "Differences
from JAX"). test_autodiff_remat_against_jax.py compares the same cells with JAX.
"""
from __future__ import annotations

import collections
import contextlib
import io
import linecache
import re

import numpy as np
import pytest
from ported import load

import kiln
import kiln.numpy as jnp

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def nb():
    return load("autodiff_remat")


def _quiet(fn, *args, **kwargs):
    """(what fn returns, what it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args, **kwargs)
    return res, buf.getvalue()


# The cells in the pages' order; named_predict_cell redefines the `predict` that `loss` calls.
CELLS = ["residuals_cell", "f2_residuals_cell", "f3_residuals_cell", "f4_residuals_cell", "fwd_bwd_cells",
         "loss_residuals_cell", "loss_checkpoint_residuals_cell", "named_predict_cell", "named_loss_residuals_cell",
         "loss_checkpoint2_residuals_cell", "chain_compose_8_cell", "chain_compose_16_cell",
         "recursive_checkpoint_8_cell", "recursive_checkpoint_16_cell", "chain_fwd_bwd_cell",
         "recursive_fwd_bwd_cell", "loop_net_cell", "scan_over_layers_cells"]


@pytest.fixture(scope="module")
def out(nb):
    """cell name -> (what it returns, what it printed)."""
    return {name: _quiet(getattr(nb, name)) for name in CELLS}


def _f64(x):
    return np.asarray(x, np.float64)


# ------------------------------------------------ residual listings ------------------------------------------------

_LOCATED = re.compile(r"^(?P<head>.*?) from (?P<file>\S+?):(?P<line>\d+)(?::\d+)? \((?P<fun>\S+)\)$")


def _listing(text):
    """The lines of a print_saved_residuals listing as (head, function, source line): ``('f32[5] output of sin',
    'g', 'return jnp.sin(y)')``; (line, None, None) for an argument."""
    rows = []
    for line in text.splitlines():
        m = _LOCATED.match(line)
        if m is None:
            rows.append((line, None, None))
        else:
            rows.append((m["head"], m["fun"].split(".")[-1], linecache.getline(m["file"], int(m["line"])).strip()))
    return rows


def _args(*pairs):
    return [(f"{aval} from the argument {name}", None, None) for aval, name in pairs]


SUMMARY_ARGS = _args(("f32[5,4]", "W1"), ("f32[6,5]", "W2"), ("f32[7,6]", "W3"), ("f32[4]", "x"))
G_SIN = "return jnp.sin(y)"
G_DOT = "y = jnp.dot(W, x)"
LAYER = "return jnp.sin(jnp.dot(W, x))"
LOSS = "return jnp.sum((predict(params, x) - y)**2)"
NAMED = "x = checkpoint_name(x, name=f'layer{i}_output')"
LOSS_ARGS = _args(("f32[4,4]", "params[0]"), ("f32[4,4]", "params[1]"), ("f32[4,4]", "params[2]"), ("f32[4]", "x"))
Y_ARG = _args(("f32[4]", "y"))

# What the pages print, cell by cell (each printed line: its head, its function, the line that computed it).
EXPECTED = {
    "residuals_cell": SUMMARY_ARGS + [("f32[5] output of sin", "g", G_SIN), ("f32[5] output of cos", "g", G_SIN),
                                      ("f32[6] output of sin", "g", G_SIN), ("f32[6] output of cos", "g", G_SIN),
                                      ("f32[7] output of cos", "g", G_SIN)],
    # "the values of two sin applications are saved ... But no values of cos applications are saved"
    "f2_residuals_cell": SUMMARY_ARGS + [("f32[5] output of sin", "g", G_SIN), ("f32[6] output of sin", "g", G_SIN)],
    "f3_residuals_cell": SUMMARY_ARGS + [(f"f32[{n}] output of dot_general", "g", G_DOT) for n in (5, 6, 7)],
    "f4_residuals_cell": SUMMARY_ARGS + [("f32[5] named 'a'", "f4", "x = checkpoint_name(g(W1, x), name='a')")],
    "loss_residuals_cell": LOSS_ARGS + [(f"f32[4] output of {p}", "layer", LAYER) for p in ("sin", "cos", "sin", "cos")]
    + [("f32[4] output of mul", "loss", LOSS)],
    "loss_checkpoint_residuals_cell": LOSS_ARGS + Y_ARG + [("f32[4] output of dot_general", "layer", LAYER)] * 2 + [
        ("f32[4] output of dot_general", "predict", "x = jnp.dot(Wlast, x)")],
    "named_loss_residuals_cell": LOSS_ARGS + [
        ("f32[4] output of cos", "layer", LAYER), ("f32[4] named 'layer0_output'", "predict", NAMED),
        ("f32[4] output of cos", "layer", LAYER), ("f32[4] named 'layer1_output'", "predict", NAMED),
        ("f32[4] output of mul", "loss", LOSS)],
    # The page prints the arguments only: JAX reused `loss`'s trace from before `predict` was named (its caches;
    # after jax.clear_caches() JAX prints this). layer0_output may be saved, and the backward pass needs it.
    "loss_checkpoint2_residuals_cell": LOSS_ARGS + Y_ARG + [("f32[4] named 'layer0_output'", "predict", NAMED)],
    "chain_compose_8_cell": [("f32[] output of cos", "f", "x = fun(x)")] * 8,
    "chain_compose_16_cell": [("f32[] output of cos", "f", "x = fun(x)")] * 16,
    "recursive_checkpoint_8_cell": [("f32[] from the argument x", None, None)] + [
        (f"f32[] output of {p}", "<lambda>", "return lambda x: f1(f2(x))") for p in ("sin", "cos", "cos")],
    "recursive_checkpoint_16_cell": [("f32[] from the argument x", None, None)] + [
        (f"f32[] output of {p}", "<lambda>", "return lambda x: f1(f2(x))") for p in ("sin", "sin", "cos", "cos")],
}


@pytest.mark.parametrize("cell", list(EXPECTED))
def test_saved_residuals_listing(out, cell):
    assert _listing(out[cell][1]) == EXPECTED[cell]


def test_policies_change_what_is_saved(nb, out):
    # Without checkpoint the sin layers save their cos; jax.checkpoint(g) saves inputs only; the dots policy saves
    # the dot products and recomputes sin/cos; save_only_these_names saves the one named value.
    kinds = {cell: collections.Counter(h.split(" ", 1)[1].split(" from")[0] for h, _, _ in _listing(out[cell][1]))
             for cell in EXPECTED}
    assert kinds["residuals_cell"]["output of cos"] == 3 and kinds["f2_residuals_cell"]["output of cos"] == 0
    assert kinds["f3_residuals_cell"]["output of dot_general"] == 3
    assert kinds["f4_residuals_cell"]["named 'a'"] == 1 and len(kinds["f4_residuals_cell"]) == 5  # 4 arguments
    # the chain of sines saves one cos per sine; recursive checkpointing 1 + log2(D) values
    chains = ("chain_compose_8_cell", "chain_compose_16_cell", "recursive_checkpoint_8_cell",
              "recursive_checkpoint_16_cell")
    assert [sum(kinds[c].values()) for c in chains] == [8, 16, 4, 5]
    for depth, count in ((32, 6), (64, 7)):
        text = _quiet(nb.print_saved_residuals, nb.recursive_checkpoint([jnp.sin] * depth), 3.)[1]
        assert len(text.splitlines()) == count
    # the other policies on the page's loss: nothing_saveable keeps the inputs only, everything_saveable is no
    # checkpoint at all, dots_saveable is the same as dots_with_no_batch_dims_saveable here (no batch dimensions)
    P = kiln.checkpoint_policies
    args = (nb.params, nb.x, nb.y)

    def listing(policy):
        return _listing(_quiet(nb.print_saved_residuals, kiln.checkpoint(nb.loss, policy=policy), *args)[1])
    assert listing(P.nothing_saveable) == LOSS_ARGS + Y_ARG
    assert listing(P.everything_saveable) == EXPECTED["named_loss_residuals_cell"]
    assert listing(P.dots_saveable) == EXPECTED["loss_checkpoint_residuals_cell"]
    assert listing(P.save_only_these_names("layer1_output")) == LOSS_ARGS + Y_ARG + [
        ("f32[4] named 'layer1_output'", "predict", NAMED)]
    # jax.remat is jax.checkpoint; prevent_cse=False saves the same values
    assert kiln.remat is kiln.checkpoint
    no_cse = _quiet(nb.print_saved_residuals, kiln.checkpoint(nb.loss, prevent_cse=False), *args)[1]
    assert listing(None) == _listing(no_cse) == LOSS_ARGS + Y_ARG


# ------------------------------------------------ print_fwd_bwd ------------------------------------------------

def _count(jaxpr, counts=None):
    """How many equations of each primitive, nested jaxprs (remat bodies, their transposes) included."""
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


def test_fwd_bwd_jaxprs(nb, out):
    (plain, dots), printed = out["fwd_bwd_cells"]
    assert printed.count("forward computation:") == printed.count("backward computation:") == 2
    assert str(plain[0]) in printed and str(dots[1]) in printed
    # the forward pass computes and keeps the sin layers' cos; the backward pass only multiplies and dots
    fwd, bwd = _count(plain[0]), _count(plain[1])
    assert (fwd["sin"], fwd["cos"], fwd["dot_general"]) == (3, 3, 3)
    assert (bwd["sin"], bwd["cos"], bwd["dot_general"]) == (0, 0, 6)
    assert [r.shape for r in plain[2]] == [(5, 4), (6, 5), (7, 6), (4,), (5,), (5,), (6,), (6,), (7,)]
    # with the dots policy the forward pass keeps the dots and no cos; the backward pass recomputes sin and cos
    fwd, bwd = _count(dots[0]), _count(dots[1])
    assert (fwd["cos"], fwd["dot_general"]) == (0, 3)
    assert (bwd["sin"], bwd["cos"], bwd["dot_general"]) == (2, 3, 6)
    assert [r.shape for r in dots[2]] == [(5, 4), (6, 5), (7, 6), (4,), (5,), (6,), (7,)]
    assert all(r.dtype == np.float32 for r in plain[2] + dots[2])


def test_recursive_checkpoint_recomputes(out):
    # "The cost here, as usual, is recomputation": 8 sines and 8 cosines without checkpoint; with it the same 8
    # cosines but 13 sines (5 recomputed in the backward pass), and 4 residuals instead of 8 (the same counts
    # as JAX's jaxprs)
    fwd, bwd, res = out["chain_fwd_bwd_cell"][0]
    assert (_count(fwd)["sin"], _count(fwd)["cos"], _count(bwd)["sin"], _count(bwd)["cos"]) == (8, 8, 0, 0)
    assert len(res) == 8
    fwd, bwd, res = out["recursive_fwd_bwd_cell"][0]
    assert (_count(fwd)["sin"], _count(fwd)["cos"], _count(bwd)["sin"], _count(bwd)["cos"]) == (8, 2, 5, 6)
    assert [r.shape for r in res] == [()] * 4  # x (JAX folds the Python scalar 3. into its jaxpr: 3 leaves)


# ------------------------------------------------ NumPy oracles ------------------------------------------------

def _np_chain(Ws, x, ct):
    """f(W1, W2, W3, x) = sin(W3 sin(W2 sin(W1 x))), and its vjp with cotangent ct: (y, (dW1, dW2, dW3, dx))."""
    hs, As = [_f64(x)], []
    for W in Ws:
        As.append(_f64(W) @ hs[-1])
        hs.append(np.sin(As[-1]))
    dWs, d = [], _f64(ct)
    for W, a, h in zip(Ws[::-1], As[::-1], hs[-2::-1]):
        da = d * np.cos(a)
        dWs.append(np.outer(da, h))
        d = _f64(W).T @ da
    return hs[-1], (*dWs[::-1], d)


def _np_loss(params, x, y):
    """loss = sum((Wlast sin(W2 sin(W1 x)) - y)^2), and its gradients (d params, dx, dy)."""
    *Ws, Wlast = [_f64(W) for W in params]
    hs, As = [_f64(x)], []
    for W in Ws:
        As.append(W @ hs[-1])
        hs.append(np.sin(As[-1]))
    r = Wlast @ hs[-1] - _f64(y)
    dout = 2 * r
    dWs, d = [np.outer(dout, hs[-1])], Wlast.T @ dout
    for W, a, h in zip(Ws[::-1], As[::-1], hs[-2::-1]):
        da = d * np.cos(a)
        dWs.append(np.outer(da, h))
        d = W.T @ da
    return np.sum(r ** 2), (dWs[::-1], d, -dout)


def _np_sines(x, n):
    """sin applied n times, and its derivative: the product of cos over the chain."""
    x, d = _f64(x), np.ones_like(_f64(x))
    for _ in range(n):
        d, x = d * np.cos(x), np.sin(x)
    return x, d


def _np_net(Ws, bs, x, ct):
    """The ReLU network x -> relu(x W + b) per layer, and its vjp with cotangent ct: (out, (dWs, dbs, dx))."""
    xs, zs = [_f64(x)], []
    for W, b in zip(Ws, bs):
        zs.append(xs[-1] @ _f64(W) + _f64(b))
        xs.append(np.maximum(zs[-1], 0))
    dWs, dbs, d = [], [], _f64(ct)
    for W, z, xp in zip(Ws[::-1], zs[::-1], xs[-2::-1]):
        dz = d * (z > 0)
        dWs.append(np.outer(xp, dz))
        dbs.append(dz)
        d = _f64(W) @ dz
    return xs[-1], (np.stack(dWs[::-1]), np.stack(dbs[::-1]), d)


def _np_einsum_chain(x):
    """The offload cell's f: x -> sum(sin((sin((sin(x x)) ...)^2)^2)), and its gradient."""
    xs, zs = [_f64(x)], []
    for _ in range(3):
        zs.append(xs[-1] @ xs[-1])
        xs.append(np.sin(zs[-1]))
    d = np.ones_like(xs[-1])
    for z, xp in zip(zs[::-1], xs[-2::-1]):
        dz = d * np.cos(z)
        d = dz @ xp.T + xp.T @ dz
    return np.sum(xs[-1]), d


def _np_fd_grad(fun, x, h=1e-6):
    """Central differences of a scalar NumPy float64 function, entry by entry of x."""
    x = _f64(x)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        grad[i] = (fun(x + e) - fun(x - e)) / (2 * h)
    return grad


def test_numpy_oracles_agree_with_finite_differences():
    # the closed forms are themselves checked once, in float64, before they judge kiln
    Ws = [RNG.normal(size=s) for s in ((5, 4), (6, 5), (7, 6))]
    x, ct = RNG.normal(size=4), RNG.normal(size=7)
    _, grads = _np_chain(Ws, x, ct)
    for i in range(3):
        fd = _np_fd_grad(lambda w: _np_chain(Ws[:i] + [w] + Ws[i + 1:], x, ct)[0] @ ct, Ws[i])
        np.testing.assert_allclose(grads[i], fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grads[3], _np_fd_grad(lambda v: _np_chain(Ws, v, ct)[0] @ ct, x), rtol=1e-6, atol=1e-8)
    params = [RNG.normal(size=(4, 4)) for _ in range(3)]
    x, y = RNG.normal(size=4), RNG.normal(size=4)
    _, (dps, dx, dy) = _np_loss(params, x, y)
    for i in range(3):
        fd = _np_fd_grad(lambda w: _np_loss(params[:i] + [w] + params[i + 1:], x, y)[0], params[i])
        np.testing.assert_allclose(dps[i], fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dx, _np_fd_grad(lambda v: _np_loss(params, v, y)[0], x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dy, _np_fd_grad(lambda v: _np_loss(params, x, v)[0], y), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_np_sines(0.7, 5)[1], _np_fd_grad(lambda v: _np_sines(v, 5)[0], 0.7), rtol=1e-7)
    Ws, bs = RNG.normal(size=(2, 2, 2)), RNG.normal(size=(2, 2)) + 1
    x, ct = RNG.normal(size=2), RNG.normal(size=2)
    _, (dW, db, dx) = _np_net(Ws, bs, x, ct)
    np.testing.assert_allclose(dW, _np_fd_grad(lambda w: _np_net(w, bs, x, ct)[0] @ ct, Ws), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(db, _np_fd_grad(lambda b: _np_net(Ws, b, x, ct)[0] @ ct, bs), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dx, _np_fd_grad(lambda v: _np_net(Ws, bs, v, ct)[0] @ ct, x), rtol=1e-6, atol=1e-8)
    X = RNG.normal(size=(4, 4)) / 2
    np.testing.assert_allclose(_np_einsum_chain(X)[1], _np_fd_grad(lambda v: _np_einsum_chain(v)[0], X), rtol=1e-6,
                               atol=1e-8)


# ------------------------------------------------ gradients ------------------------------------------------

def _assert_agree(got, want, rtol=2e-5, atol=2e-6):
    got_leaves, want_leaves = kiln.tree_util.tree_leaves(got), kiln.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves) > 0
    for a, b in zip(got_leaves, want_leaves):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(_f64(a), _f64(b), rtol=rtol, atol=atol)


@pytest.mark.parametrize("point", ["page", "random"])
def test_summary_gradients(nb, point):
    """f, f2 (checkpointed layers), f3 (dots policy) and f4 (named, save_only_these_names): the same values and
    vjps, which are NumPy's."""
    if point == "page":
        args = (jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones((7, 6)), jnp.ones(4))
    else:
        args = tuple(jnp.asarray(RNG.normal(size=s) / 2, jnp.float32) for s in ((5, 4), (6, 5), (7, 6), (4,)))
    ct = jnp.asarray(RNG.normal(size=7), jnp.float32)
    want_y, want_grads = _np_chain(args[:3], args[3], ct)
    results = {}
    for name in ("f", "f2", "f3", "f4"):
        y, f_vjp = kiln.vjp(getattr(nb, name), *args)
        grads = f_vjp(ct)
        assert y.dtype == np.float32 and [g.dtype for g in grads] == [np.float32] * 4
        _assert_agree(y, want_y)
        _assert_agree(grads, want_grads)
        results[name] = (y, grads)
    for name in ("f2", "f3", "f4"):  # with and without checkpoint: the same numbers to float32 rounding
        _assert_agree(results[name], results["f"], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(np.asarray(nb.f2(*args)), np.asarray(nb.f(*args)))  # not differentiated: f itself
    # "behaves differently under autodiff ... but not jax.jvp": jvp and linearize give f's numbers
    tangents = tuple(jnp.asarray(RNG.normal(size=a.shape), jnp.float32) for a in args)
    want = kiln.jvp(nb.f, args, tangents)
    for name in ("f2", "f3", "f4"):
        _assert_agree(kiln.jvp(getattr(nb, name), args, tangents), want, rtol=1e-6, atol=1e-7)
    y, f_lin = kiln.linearize(nb.f3, *args)
    _assert_agree((y, f_lin(*tangents)), want, rtol=1e-6, atol=1e-7)


def test_static_argnums_and_prevent_cse(nb):
    """Beyond the pages: jax.checkpoint's static_argnums (a Python int choosing how many of the page's g layers
    run) and prevent_cse=False: the same vjp as without checkpoint, NumPy's, saving the inputs only."""
    def apply(Ws, n, x):
        for W in Ws[:n]:
            x = nb.g(W, x)
        return x
    Ws = [jnp.asarray(RNG.normal(size=s) / 2, jnp.float32) for s in ((5, 4), (6, 5), (7, 6))]
    x, ct = jnp.asarray(RNG.normal(size=4), jnp.float32), jnp.asarray(RNG.normal(size=7), jnp.float32)
    want_y, want_grads = _np_chain(Ws, x, ct)
    for fn in (kiln.checkpoint(apply, static_argnums=(1,)), kiln.remat(apply, static_argnums=1, prevent_cse=False)):
        y, f_vjp = kiln.vjp(lambda Ws, x: fn(Ws, 3, x), Ws, x)
        _assert_agree((y, f_vjp(ct)), (want_y, (list(want_grads[:3]), want_grads[3])))
        rows = _listing(_quiet(nb.print_saved_residuals, lambda Ws, x: fn(Ws, 3, x), Ws, x)[1])
        assert rows == _args(("f32[5,4]", "Ws[0]"), ("f32[6,5]", "Ws[1]"), ("f32[7,6]", "Ws[2]"), ("f32[4]", "x"))
    with pytest.raises(TypeError):  # the static argument is hashed as such: a traced one is an error
        kiln.grad(lambda x: kiln.numpy.sum(kiln.checkpoint(apply, static_argnums=(1,))(Ws, x, x)))(x)


def test_fundamentals(nb):
    g = jnp.sin
    h = lambda y: jnp.sum(jnp.tanh(y) ** 2)  # noqa: E731
    F = nb.fundamentals_cells(g, h)
    x = jnp.array([0.3, -1.2, 2.0])
    xs = _f64(x)
    y_bar = jnp.array([0.5, -2.0, 1.5])
    for name in ("sin_vjp", "sin_vjp2"):  # both VJPs of sin: cos(x) * y_bar, computed early or late
        y, bwd = F[name](x)
        _assert_agree((y, bwd(y_bar)), (np.sin(xs), np.cos(xs) * _f64(y_bar)), rtol=1e-6, atol=1e-7)
    # f = h(g(x)) = sum(tanh(sin x)^2): f' = 2 tanh(sin x) sech^2(sin x) cos x
    t = np.tanh(np.sin(xs))
    want = 2 * t * (1 - t ** 2) * np.cos(xs)
    z, f_bwd = F["f_vjp"](x)
    z2, f_bwd2 = F["f_vjp_checkpoint"](x)
    _assert_agree((z, z2), (np.sum(t ** 2), np.sum(t ** 2)))
    grads = {"f_vjp": f_bwd(1.0), "f_vjp_checkpoint": f_bwd2(1.0), "f_grad_bad1": F["f_grad_bad1"](x),
             "f_grad_bad2": F["f_grad_bad2"](x), "grad(f)": kiln.grad(F["f"])(x),
             "grad(f_checkpoint)": kiln.grad(F["f_checkpoint"])(x),
             "grad(checkpoint(f))": kiln.grad(kiln.checkpoint(F["f"]))(x),
             "grad(checkpoint(h) o g)": kiln.grad(lambda x: kiln.checkpoint(h)(g(x)))(x)}
    for name, grad in grads.items():
        assert grad.dtype == np.float32, name
        _assert_agree(grad, want)
        _assert_agree(grad, grads["grad(f)"], rtol=1e-6, atol=1e-7)
    # the page's f_checkpoint_grad calls jax.vjp(h) without a primal (a typo of jax.vjp(h, y)): h's TypeError
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        F["f_checkpoint_grad"](x)
    # What each placement saves, as the text says: checkpoint(g) saves its input instead of g's cos (and h's
    # residuals as before), checkpoint(f) only the input, checkpoint(h) g's residual and h's input.
    def listing(fn):
        return [h_ for h_, _, _ in _listing(_quiet(nb.print_saved_residuals, fn, x)[1])]
    h_res = ["f32[3] output of tanh", "f32[3] output of sub", "f32[3] output of mul"]
    assert listing(F["f"]) == ["f32[3] output of cos"] + h_res
    assert listing(F["f_checkpoint"]) == ["f32[3] from the argument x"] + h_res
    assert listing(kiln.checkpoint(F["f"])) == ["f32[3] from the argument x"]
    assert listing(lambda x: kiln.checkpoint(h)(g(x))) == ["f32[3] output of sin", "f32[3] output of cos"]


@pytest.mark.parametrize("point", ["page", "random"])
def test_loss_gradients(nb, out, point):
    """loss (its `predict` named, as after the page's cells), under the dots policy and under
    save_any_names_but_these: NumPy's gradients with respect to params, x and y."""
    if point == "page":
        args = (nb.params, nb.x, nb.y)
    else:
        args = ([jnp.asarray(RNG.normal(size=(4, 4)), jnp.float32) for _ in range(3)],
                jnp.asarray(RNG.normal(size=4), jnp.float32), jnp.asarray(RNG.normal(size=4), jnp.float32))
    want_value, want_grads = _np_loss(*args)
    results = []
    for fn in (nb.loss, nb.loss_checkpoint, nb.loss_checkpoint2):
        value, grads = kiln.value_and_grad(fn, (0, 1, 2))(*args)
        assert value.dtype == np.float32 and isinstance(grads[0], list)
        _assert_agree(value, want_value)
        _assert_agree(grads, want_grads)
        results.append((value, grads))
    for r in results[1:]:
        _assert_agree(r, results[0], rtol=1e-6, atol=1e-7)


def test_recursive_checkpoint_gradients(nb, out):
    # chain_compose and recursive_checkpoint: sin applied D times, whose derivative is the product of the
    # cosines along the chain, at the page's 3. and at -0.4
    for depth in (8, 16):
        plain, rec = out[f"chain_compose_{depth}_cell"][0], out[f"recursive_checkpoint_{depth}_cell"][0]
        for x0 in (3., -0.4):
            want = _np_sines(x0, depth)
            got = [kiln.value_and_grad(fn)(x0) for fn in (plain, rec)]
            for value, grad in got:
                assert value.dtype == grad.dtype == np.float32 and grad.weak_type
                _assert_agree((value, grad), want)
            _assert_agree(got[1], got[0], rtol=1e-6, atol=1e-7)
    # print_fwd_bwd's vjp functions: cotangent y (as its backward jaxpr)
    for cell in ("chain_fwd_bwd_cell", "recursive_fwd_bwd_cell"):
        fn = nb.chain_compose([jnp.sin] * 8) if cell.startswith("chain") else nb.recursive_checkpoint([jnp.sin] * 8)
        y, f_vjp = kiln.vjp(fn, 3.)
        value, deriv = _np_sines(3., 8)
        _assert_agree((y, f_vjp(y)), (value, (value * deriv,)))


def test_scan_over_layers(nb, out):
    """The loop network, its scan over stacked layers and the scan of the checkpointed layer (dots policy): the
    same outputs and gradients, NumPy's, at the page's params and at random ones."""
    net_loop = out["loop_net_cell"][0]
    params, all_weights, all_biases, layer_cp, net_cp = out["scan_over_layers_cells"][0]
    _, _, _, layer, net = nb.scan_over_layers_cells(checkpoint_layer=False)
    assert all_weights.shape == (2, 2, 2) and all_biases.shape == (2, 2) and all_weights.dtype == np.float32
    x = jnp.array([1.0, -0.3])
    points = [(params, all_weights, all_biases)]
    Ws = jnp.asarray(RNG.normal(size=(2, 2, 2)), jnp.float32)
    bs = jnp.asarray(RNG.normal(size=(2, 2)) + 1.5, jnp.float32)  # every unit active: no kink nearby
    points.append(([(Ws[0], bs[0]), (Ws[1], bs[1])], Ws, bs))
    for ps, W, b in points:
        ct = jnp.asarray(RNG.normal(size=2), jnp.float32)
        want_out, (dW, db, dx) = _np_net(W, b, x, ct)
        y_loop, vjp_loop = kiln.vjp(net_loop, ps, x)
        dps, dx_loop = vjp_loop(ct)
        _assert_agree(y_loop, want_out)
        _assert_agree((jnp.stack([p[0] for p in dps]), jnp.stack([p[1] for p in dps]), dx_loop), (dW, db, dx))
        for fn in (net, net_cp):
            y, f_vjp = kiln.vjp(fn, W, b, x)
            _assert_agree(y, want_out)
            _assert_agree(f_vjp(ct), (dW, db, dx))
            _assert_agree(f_vjp(ct), (jnp.stack([p[0] for p in dps]), jnp.stack([p[1] for p in dps]), dx_loop),
                          rtol=1e-6, atol=1e-7)
    # the checkpointed layer is a function of its own: the same step as the plain one
    np.testing.assert_allclose(np.asarray(layer_cp(x, (all_weights[0], all_biases[0]))[0]),
                               np.asarray(layer(x, (all_weights[0], all_biases[0]))[0]), rtol=1e-6)
    # what the scans save: the plain one all_weights and two stacks of per-layer values; the checkpointed layer
    # its inputs (all_biases too) and the dots
    plain = _listing(_quiet(nb.print_saved_residuals, net, all_weights, all_biases, x)[1])
    cp = _listing(_quiet(nb.print_saved_residuals, net_cp, all_weights, all_biases, x)[1])
    stack = ("f32[2,2] output of scan", "net", "x, _ = jax.lax.scan(layer, x, (all_weights, all_biases))")
    assert plain == _args(("f32[2,2,2]", "all_weights")) + [stack] * 2
    assert cp == _args(("f32[2,2,2]", "all_weights"), ("f32[2,2]", "all_biases")) + [stack] * 2


def test_offload_dot_with_no_batch_dims(nb):
    f = nb.checkpoint_offload_dot_with_no_batch_dims(None)
    X = jnp.asarray(RNG.normal(size=(4, 4)) / 2, jnp.float32)
    want = _np_einsum_chain(X)
    _assert_agree((f(X), kiln.grad(f)(X)), want)
    _assert_agree(kiln.jit(kiln.grad(f))(X), want[1])
    # the policy keeps the three matrix products (JAX moves them to pinned_host memory, kiln keeps them in device
    # memory: README, "Differences from JAX") and recomputes the sines
    rows = _listing(_quiet(nb.print_saved_residuals, f, X)[1])
    einsum = "x = jnp.einsum('ij,jk->ik', x, x, precision=lax.Precision.HIGHEST)"
    assert rows == _args(("f32[4,4]", "x")) + [("f32[4,4] output of dot_general", "f", einsum)] * 3


@pytest.fixture(scope="module")
def offload_names(nb):
    return nb.checkpoint_names_saved_offloaded_recomputed(None, mesh_shape=(1,), shape=(4, 3))


def test_save_and_offload_only_these_names_values(offload_names):
    """f scans y -> (sin(sin(sin(y)))) over the 4 rows of its input (the transposes cancel) and returns the sum
    of the last step: sum(sin^12(x)), whose gradient is the product of the cosines."""
    f, inp = offload_names
    assert isinstance(inp.sharding, kiln.sharding.NamedSharding) and inp.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(inp), np.arange(12, dtype=np.float32).reshape(4, 3))
    for x in (inp, inp / 10):
        value, deriv = _np_sines(x, 12)
        _assert_agree((f(x), kiln.grad(f)(x)), (np.sum(value), deriv))
        _assert_agree(kiln.jit(kiln.grad(f))(x), deriv)


def test_save_and_offload_only_these_names_residuals(nb, offload_names):
    # y is saved, z offloaded (kiln: saved in device memory), w recomputed: JAX saves x, and y and z stacked
    # over the scan's 4 steps
    f, inp = offload_names
    rows = _listing(_quiet(nb.print_saved_residuals, f, inp)[1])
    assert [r[0] for r in rows] == ["f32[4,3] from the argument x", "f32[4,4,3] output of scan",
                                    "f32[4,4,3] output of scan"]
