"""JAX's docs page docs/new_docs/301/remat.md ("Gradient checkpointing with `jax.checkpoint`"), ported to kiln by
changing imports (tests/examples/jax_ported/docs_remat.py), checked against oracles that do not involve JAX or kiln.

What is saved: every ``print_saved_residuals`` listing of the page, line by line, against what the page says each
one holds (without checkpoint: the sines and cosines of the layers; with ``jax.checkpoint`` on each layer: the
inputs and the two sines only, no cosine; ``save_only_these_names('a')``: the inputs and the value named 'a';
``save_any_names_but_these('layer1_output')``: the inputs and 'layer0_output'; the offloading policy: 'y' kept,
'z' offloaded, 'w' recomputed; the chain of sines: one residual per sine, and under recursive checkpointing a number
that grows by one when the chain doubles), and the forward and backward jaxprs of ``print_fwd_bwd`` (what they
compute and recompute). The values: every gradient the page takes or implies against its closed form in float64
(backpropagation written out in NumPy) and against float64 central differences, the same with and without
checkpointing. The page's ``custom_remat`` cells need ``jax.custom_remat``, which kiln lacks (as JAX 0.10.2, which
has no public ``jax.custom_remat``): strict xfails with the values the page prints.
Differences, tested as such: kiln keeps the offloading policy's 'z' in device memory (the page shows
``f32<host>[4]``; README "kiln.checkpoint policies"); ``jax.config.update('jax_remat3', True)`` is recorded with a
warning (kiln has one implementation, which saves what the page describes).
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from ported import count_primitives, load, run_quietly  # noqa: F401

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(0)
SHAPES = [(5, 4), (6, 5), (7, 6), (4,)]


@pytest.fixture(scope="module")
def page():
    with warnings.catch_warnings():  # (the page's jax.config.update('jax_remat3', True): recorded, with a warning)
        warnings.simplefilter("ignore")
        return load("docs_remat")


def _printed(fn, *args):
    """(what fn returns, its printed lines with the port's path as FILE)."""
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, re.sub(r"from \S+?\.py:", "from FILE:", buf.getvalue()).splitlines()


def _args(lines: list[str]) -> list[str]:
    return [line for line in lines if "from the argument" in line]


def _saved(lines: list[str]) -> list[str]:
    """The residuals that are no argument: 'f32[5] sin', "f32[4] named 'a'"."""
    out = []
    for line in lines:
        m = re.match(r"(\S+) (?:output of (\w+)|named ('\w+')) from FILE:\d+:\d+ \(", line)
        if m:
            out.append(f"{m.group(1)} {m.group(2) or 'named ' + m.group(3)}")
        else:
            assert "from the argument" in line, line
    return out


def test_remat3_flag_is_recorded(page):
    assert kiln.config.jax_remat3 is True


# ------------------------------------------------ Seeing what's saved ----------------------------------------------

ARGS = ["f32[5,4] from the argument W1", "f32[6,5] from the argument W2", "f32[7,6] from the argument W3",
        "f32[4] from the argument x"]


def test_residuals_without_checkpoint(page):
    _, lines = _printed(page.residuals_cell)
    assert _args(lines) == ARGS
    # each layer's sine (the next layer's input) and cosine (sin's derivative); the last sine is the output, not
    # needed by the backward pass
    assert _saved(lines) == ["f32[5] sin", "f32[5] cos", "f32[6] sin", "f32[6] cos", "f32[7] cos"]
    assert all(line.endswith("(g)") for line in lines[4:])


def test_residuals_with_checkpointed_layers(page):
    # "the values of two sin applications are saved ... But no values of cos applications are saved"
    _, lines = _printed(page.f2_residuals_cell)
    assert _args(lines) == ARGS and _saved(lines) == ["f32[5] sin", "f32[6] sin"]


def test_residuals_save_only_these_names(page):
    _, lines = _printed(page.f4_residuals_cell)
    assert _args(lines) == ARGS and _saved(lines) == ["f32[5] named 'a'"]
    assert lines[-1].endswith("(f4)")


def test_the_policies_the_page_names(page):
    # (the page's prose: everything_saveable "as if no policy were given", nothing_saveable "full
    # rematerialization"; its note's callable dots_with_no_batch_dims_saveable saves the matrix-vector products)
    W1, W2, W3, x = (np.ones(s, np.float32) for s in SHAPES)
    policies = kiln.checkpoint_policies
    listings = {}
    for name in ("everything_saveable", "nothing_saveable", "dots_with_no_batch_dims_saveable"):
        _, listings[name] = _printed(page.print_saved_residuals,
                                     kiln.checkpoint(page.f, policy=getattr(policies, name)), W1, W2, W3, x)
        assert _args(listings[name]) == ARGS
    assert listings["everything_saveable"] == _printed(page.residuals_cell)[1]
    assert _saved(listings["nothing_saveable"]) == []
    assert _saved(listings["dots_with_no_batch_dims_saveable"]) == ["f32[5] dot_general", "f32[6] dot_general",
                                                                    "f32[7] dot_general"]


def _layers_vjp(Ws, x, ct):
    """f's value and its vjp with cotangent ct, in float64: backpropagation through the three sin(W @ x) layers."""
    xs, ys = [x], []
    for W in Ws:
        ys.append(W @ xs[-1])
        xs.append(np.sin(ys[-1]))
    grads, g = [], ct
    for W, y, xin in zip(Ws[::-1], ys[::-1], xs[-2::-1]):
        dy = g * np.cos(y)
        grads.append(np.outer(dy, xin))
        g = W.T @ dy
    return xs[-1], grads[::-1] + [g]


def _central_difference(fn, args, i, ct, h=1e-6):
    """d <ct, fn(args)> / d args[i], float64 central differences, entry by entry."""
    out = np.zeros_like(args[i])
    for idx in np.ndindex(args[i].shape):
        plus = [a.copy() for a in args]
        minus = [a.copy() for a in args]
        plus[i][idx] += h
        minus[i][idx] -= h
        out[idx] = (np.dot(ct.ravel(), fn(*plus).ravel()) - np.dot(ct.ravel(), fn(*minus).ravel())) / (2 * h)
    return out


def test_layer_gradients_with_and_without_checkpoint(page):
    args = [rng.normal(size=s) / 2 for s in SHAPES]
    ct = rng.normal(size=7)
    want_y, want = _layers_vjp(args[:3], args[3], ct)
    f64 = lambda W1, W2, W3, x: _layers_vjp([W1, W2, W3], x, ct)[0]  # noqa: E731
    for i in range(4):  # the closed form is the derivative
        np.testing.assert_allclose(want[i], _central_difference(f64, args, i, ct), rtol=1e-6, atol=1e-8)
    a32 = [a.astype(np.float32) for a in args]
    for name in ("f", "f2", "f4"):
        y, vjp = kiln.vjp(getattr(page, name), *a32)
        np.testing.assert_allclose(np.asarray(y), want_y, rtol=1e-5, atol=1e-6)
        for got, w in zip(vjp(ct.astype(np.float32)), want):
            assert got.dtype == np.float32
            np.testing.assert_allclose(np.asarray(got), w, rtol=2e-5, atol=2e-6)


def _work(jaxpr):
    return dict(count_primitives(jaxpr, names={"sin": "sin", "cos": "cos", "dot_general": "dot"}))


def test_print_fwd_bwd(page):
    (plain, named), lines = _printed(page.fwd_bwd_cells)
    assert lines.count("forward computation:") == lines.count("backward computation:") == 2
    # without checkpoint: the forward pass computes everything (the cosines too), the backward pass only the six
    # products of the transposes, from the saved values: the four arguments and five residuals
    fwd, bwd, res = plain
    assert (_work(fwd), _work(bwd)) == ({"dot": 3, "sin": 3, "cos": 3}, {"dot": 6})
    assert [r.shape for r in res] == [(5, 4), (6, 5), (7, 6), (4,), (5,), (5,), (6,), (6,), (7,)]
    # saving only 'a' (the first layer's sine): the forward pass computes no cosine; the backward pass recomputes
    # the three products (the first one for its cosine), the second layer's sine and the three cosines
    fwd, bwd, res = named
    assert (_work(fwd), _work(bwd)) == ({"dot": 3, "sin": 3}, {"dot": 9, "cos": 3, "sin": 1})
    assert [r.shape for r in res] == [(5, 4), (6, 5), (7, 6), (4,), (5,)]
    W1, W2, W3, x = (np.ones(s, np.float32) for s in SHAPES)
    np.testing.assert_allclose(np.asarray(res[4]), np.sin(W1 @ x), rtol=1e-6)  # what 'a' is
    assert str(fwd).startswith("{ lambda ; a:f32[5,4] b:f32[6,5] c:f32[7,6] d:f32[4]. let")


# ------------------------------------------------ `jax.checkpoint` fundamentals ------------------------------------

def test_fundamentals(page):
    g, h = knp.sin, lambda y: knp.sum(knp.tanh(y) ** 2)
    F = page.fundamentals_cells(g, h)
    x = np.array([0.3, -1.2, 2.0], np.float32)
    x64 = x.astype(np.float64)
    t = np.tanh(np.sin(x64))
    want = 2 * t * (1 - t ** 2) * np.cos(x64)  # d/dx sum(tanh(sin x)^2)
    np.testing.assert_allclose(want, _central_difference(lambda v: np.sum(np.tanh(np.sin(v)) ** 2), [x64], 0,
                                                         np.ones(())), rtol=1e-6)
    for name in ("f_grad_bad", "f_grad_bad2"):
        np.testing.assert_allclose(np.asarray(F[name](x)), want, rtol=1e-5)
    for name in ("f_vjp", "f_vjp_checkpoint"):
        z, bwd = F[name](x)
        np.testing.assert_allclose(float(z), np.sum(t ** 2), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(bwd(1.0)), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(kiln.grad(F["f_checkpoint"])(x)), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(kiln.grad(F["f"])(x)), want, rtol=1e-5)
    for name in ("sin_vjp", "sin_vjp2"):
        y, bwd = F[name](x)
        np.testing.assert_allclose(np.asarray(y), np.sin(x64), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(bwd(x)), np.cos(x64) * x64, rtol=1e-6)
    # the page's f_checkpoint_grad calls jax.vjp(h) without primals: Python's TypeError, as JAX's
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'y'"):
        F["f_checkpoint_grad"](x)


# ------------------------------------------------ Policies -----------------------------------------------------------

def _loss64(params, x, y):
    """The page's loss and its gradients (params, x), float64 backpropagation."""
    *Ws, Wlast = params
    xs, ys = [x], []
    for W in Ws:
        ys.append(W @ xs[-1])
        xs.append(np.sin(ys[-1]))
    r = Wlast @ xs[-1] - y
    g = 2 * r
    grads = [np.outer(g, xs[-1])]
    g = Wlast.T @ g
    for W, yv, xin in zip(Ws[::-1], ys[::-1], xs[-2::-1]):
        dy = g * np.cos(yv)
        grads.append(np.outer(dy, xin))
        g = W.T @ dy
    return np.sum(r ** 2), grads[::-1], g


def test_policies(page):
    P, lines = _printed(page.policies_cells)
    args = ["f32[4,4] from the argument params[0]", "f32[4,4] from the argument params[1]",
            "f32[4,4] from the argument params[2]", "f32[4] from the argument x"]
    first, second = lines[:9], lines[9:]
    # without checkpoint: each layer's cosine and named output, and the loss's 2 * residual
    assert _args(first) == args
    assert _saved(first) == ["f32[4] cos", "f32[4] named 'layer0_output'", "f32[4] cos",
                             "f32[4] named 'layer1_output'", "f32[4] mul"]
    # save_any_names_but_these('layer1_output'): of the named values, layer0_output only; the rest recomputed
    assert _args(second) == args + ["f32[4] from the argument y"] and _saved(second) == ["f32[4] named 'layer0_output'"]
    params = [rng.normal(size=(4, 4)) / 2 for _ in range(3)]
    x, y = rng.normal(size=4), rng.normal(size=4)
    want_loss, want_grads, want_x = _loss64(params, x, y)
    fd = _central_difference(lambda v: np.array(_loss64(params, v, y)[0]), [x], 0, np.ones(()))
    np.testing.assert_allclose(want_x, fd, rtol=1e-6, atol=1e-8)
    f32 = lambda a: a.astype(np.float32)  # noqa: E731
    for name in ("loss", "loss_checkpoint"):
        value, (gp, gx) = kiln.value_and_grad(P[name], (0, 1))([f32(p) for p in params], f32(x), f32(y))
        np.testing.assert_allclose(float(value), want_loss, rtol=1e-5)
        for got, w in zip(gp + [gx], want_grads + [want_x]):
            np.testing.assert_allclose(np.asarray(got), w, rtol=1e-4, atol=1e-5)


def _line_of(page, text: str) -> int:
    """The line of the port where ``text`` is."""
    with open(page.__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def test_offloading(page):
    (policy, f_offload), lines = _printed(page.offload_cell)
    x = np.arange(4.0)
    want = np.cos(np.sin(np.sin(x))) * np.cos(np.sin(x)) * np.cos(x)  # d/dx sum(sin(sin(sin(x))))
    np.testing.assert_allclose(
        want, _central_difference(lambda v: np.array(np.sum(np.sin(np.sin(np.sin(v))))), [x], 0, np.ones(())),
        rtol=1e-6, atol=1e-9)
    printed = np.array(lines[0].strip("[]").split(), np.float64)
    np.testing.assert_allclose(printed, want, rtol=1e-6, atol=1e-7)
    # 'y' saved, 'z' offloaded (kiln: kept in device memory, the page shows f32<host>[4]), 'w' recomputed
    assert lines[1:] == ["f32[4] from the argument x"] + [
        f"f32[4] named '{n}' from FILE:{_line_of(page, f'{n} = checkpoint_name(')}:8 (offload_cell.<locals>.f_offload)"
        for n in "yz"]
    np.testing.assert_allclose(np.asarray(kiln.jit(kiln.grad(f_offload))(x.astype(np.float32))), want, rtol=1e-6)


# ------------------------------------------------ custom_remat -----------------------------------------------------

CUSTOM_REMAT = pytest.mark.xfail(strict=True, raises=AttributeError, reason=(
    "JAX (after 0.10.2): jax.custom_remat(f, f_fwd, f_rem, f_bwd) gives f rules of its own under rematerialized "
    "reverse mode (f_fwd receives the ambient policy; jax.checkpoint_policies.SaveOnlyTheseNames is the policy's "
    "class); kiln lacks both, as JAX 0.10.2 exports neither"))


@CUSTOM_REMAT
def test_custom_remat(page):
    _, lines = _printed(page.custom_remat_cell)
    want = np.cos(np.sin(1.0)) * np.cos(1.0)  # the chain rule the page prints for reference
    assert len(lines) == 2
    np.testing.assert_allclose([float(v) for v in lines], [want, want], rtol=1e-6)


@CUSTOM_REMAT
def test_policy_aware_custom_remat(page):
    _, lines = _printed(page.policy_aware_custom_remat_cell)
    want = np.cos(np.sin(3.0)) * np.cos(3.0)
    assert len(lines) == 2
    np.testing.assert_allclose([float(v) for v in lines], [want, want], rtol=1e-6)


# ------------------------------------------------ Recursive checkpointing -------------------------------------------

def _sin_chain_grad(x, depth):
    g, v = 1.0, x
    for _ in range(depth):
        g *= np.cos(v)
        v = np.sin(v)
    return v, g


def test_recursive_checkpoint(page):
    counts = {}
    for cell in ("chain_compose_8_cell", "chain_compose_16_cell", "recursive_checkpoint_8_cell",
                 "recursive_checkpoint_16_cell"):
        f, lines = _printed(getattr(page, cell))
        depth = int(cell.split("_")[-2])
        counts[cell] = len(lines)
        value, grad = kiln.value_and_grad(f)(3.)
        want_value, want_grad = _sin_chain_grad(3.0, depth)
        np.testing.assert_allclose((float(value), float(grad)), (want_value, want_grad), rtol=2e-6, atol=1e-7)
        if cell.startswith("chain"):  # one cosine per sine: linear in the depth
            assert _saved(lines) == ["f32[] cos"] * depth and not _args(lines)
    # recursive: x, and a few sines and cosines, one more when the chain doubles (log2 of the depth)
    assert counts["recursive_checkpoint_8_cell"] == 4 and counts["recursive_checkpoint_16_cell"] == 5
    h = 1e-6
    np.testing.assert_allclose(_sin_chain_grad(3.0, 8)[1],
                               (_sin_chain_grad(3.0 + h, 8)[0] - _sin_chain_grad(3.0 - h, 8)[0]) / (2 * h), rtol=1e-6)


def test_recursive_checkpoint_costs_recomputation(page):
    (fwd, bwd, res), lines = _printed(page.chain_fwd_bwd_cell)
    assert (_work(fwd), _work(bwd)) == ({"sin": 8, "cos": 8}, {}) and len(res) == 8
    (fwd, bwd, res), _ = _printed(page.recursive_fwd_bwd_cell)
    # more sines in all (13 against 8, the recomputation), fewer saved values (x and three)
    assert (_work(fwd), _work(bwd)) == ({"sin": 8, "cos": 2}, {"sin": 5, "cos": 6}) and len(res) == 4
    np.testing.assert_allclose(float(res[0]), 3.0)  # (kiln keeps x = 3. as a leaf of the vjp function)


# ------------------------------------------------ Practical notes ----------------------------------------------------

def _net64(params, x):
    """The page's net and d sum(net)/d (Ws, bs, x) in float64."""
    xs, pres = [x], []
    for W, b in params:
        pres.append(xs[-1] @ W + b)
        xs.append(np.maximum(pres[-1], 0.0))
    g, gW, gb = np.ones_like(xs[-1]), [], []
    for (W, _), pre, xin in zip(params[::-1], pres[::-1], xs[-2::-1]):
        dpre = g * (pre > 0)
        gW.append(np.outer(xin, dpre))
        gb.append(dpre)
        g = W @ dpre
    return xs[-1], np.stack(gW[::-1]), np.stack(gb[::-1]), g


def test_scan_over_layers(page):
    loop_net = page.loop_net_cell()
    params, all_weights, all_biases, layer, net = page.scan_over_layers_cells()
    _, _, _, _, plain_net = page.scan_over_layers_cells(False)
    np.testing.assert_array_equal(np.asarray(all_weights), np.array([[[0.5, 0.5], [1., 1.]]] * 2, np.float32))
    np.testing.assert_array_equal(np.asarray(all_biases), np.full((2, 2), 0.5, np.float32))
    x = np.array([1.0, -0.3], np.float32)
    p64 = [(np.asarray(W, np.float64), np.asarray(b, np.float64)) for W, b in params]
    want_y, want_gW, want_gb, want_gx = _net64(p64, x.astype(np.float64))
    np.testing.assert_allclose(np.asarray(loop_net(params, x)), want_y, rtol=1e-6)
    for fn in (plain_net, net):  # the scan, without and with the checkpointed layer
        np.testing.assert_allclose(np.asarray(fn(all_weights, all_biases, x)), want_y, rtol=1e-6)
        gW, gb, gx = kiln.grad(lambda *a, fn=fn: knp.sum(fn(*a)), (0, 1, 2))(all_weights, all_biases, x)
        for got, w in ((gW, want_gW), (gb, want_gb), (gx, want_gx)):
            np.testing.assert_allclose(np.asarray(got), w, rtol=1e-6, atol=1e-7)
    # the checkpointed layer saves its 'preactivation' per step (stacked by the scan) and its input
    _, lines = _printed(page.print_saved_residuals, net, all_weights, all_biases, x)
    assert _args(lines) == ["f32[2,2,2] from the argument all_weights"] and _saved(lines) == ["f32[2,2] scan"] * 2
    gl = kiln.grad(lambda p, v: knp.sum(loop_net(p, v)), (0, 1))(params, x)
    np.testing.assert_allclose(np.asarray(gl[1]), want_gx, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.stack([np.asarray(W) for W, _ in gl[0]]), want_gW, rtol=1e-6, atol=1e-7)
