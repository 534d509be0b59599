"""vmap of control flow against a Python loop over the batch: cond with a batched predicate (both
branches and a select) and an unbatched one (one conditional), while_loop with a batched predicate
(runs until every element is done, finished ones frozen), scan (one loop), in_axes mixtures, and
vmap composed with grad and jit."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax


def per_element(f, in_axes, *args):
    """The Python-loop reference of vmap(f, in_axes)(*args) (outputs stacked on axis 0)."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = []
    for i in range(size):
        outs.append(f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)]))
    return kiln.tree_util.tree_map(lambda *v: np.stack([np.asarray(x) for x in v]), *outs)


def assert_tree_close(a, b, rtol=1e-5, atol=1e-6):
    la, ta = kiln.tree_util.tree_flatten(a)
    lb, tb = kiln.tree_util.tree_flatten(b)
    assert ta == tb, (ta, tb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


XS = np.array([-1.0, 0.5, 2.0, -3.0], np.float32)


# -- cond --------------------------------------------------------------------------------------------------

def f_cond(x):
    return lax.cond(x > 0, lambda x: (x * 2, knp.sin(x)), lambda x: (-x, x), x)


def test_vmap_cond_batched_predicate_is_a_select():
    expected = per_element(f_cond, (0,), XS)
    assert_tree_close(kiln.vmap(f_cond)(XS), expected)
    jf = kiln.jit(kiln.vmap(f_cond))
    assert_tree_close(jf(XS), expected)
    text = jf.lower(XS).as_text()
    assert "stablehlo.case" not in text and "stablehlo.select" in text  # both branches, then a select


def test_vmap_cond_unbatched_predicate_stays_a_conditional():
    g = lambda p, x: lax.cond(p, lambda x: x * 2, lambda x: -x, x)  # noqa: E731
    jf = kiln.jit(kiln.vmap(g, in_axes=(None, 0)))
    for p in (True, False):
        np.testing.assert_allclose(np.asarray(jf(p, XS)), XS * 2 if p else -XS)
    assert "stablehlo.case" in jf.lower(True, XS).as_text()


def test_vmap_switch_batched_index_and_unbatched_operands():
    branches = [lambda x, w: x + w, lambda x, w: x * w, lambda x, w: x - w]
    f = lambda i, x, w: lax.switch(i, branches, x, w)  # noqa: E731
    idx = np.array([-1, 0, 1, 2, 7], np.int32)
    x = np.arange(5.0, dtype=np.float32)
    w = np.float32(3.0)
    expected = per_element(lambda i, x, w: branches[min(max(int(i), 0), 2)](x, w), (0, 0, None), idx, x, w)
    np.testing.assert_allclose(np.asarray(kiln.vmap(f, in_axes=(0, 0, None))(idx, x, w)), expected)
    np.testing.assert_allclose(np.asarray(kiln.vmap(f, in_axes=(0, None, None))(idx, np.float32(2.0), w)),
                               per_element(lambda i: branches[min(max(int(i), 0), 2)](2.0, 3.0), (0,), idx))


def test_vmap_cond_output_that_no_branch_batches_stays_unbatched():
    # With an unbatched predicate, an output computed from unbatched values only is not batched, so
    # out_axes=None is allowed for it (jacfwd relies on this for the primal outputs).
    f = lambda p, x, c: lax.cond(p, lambda x, c: (x * 2, c + 1), lambda x, c: (-x, c - 1), x, c)  # noqa: E731
    ys, c = kiln.vmap(f, in_axes=(None, 0, None), out_axes=(0, None))(True, XS, np.float32(5.0))
    np.testing.assert_allclose(np.asarray(ys), XS * 2)
    assert float(c) == 6.0


# -- while_loop --------------------------------------------------------------------------------------------

def collatz(n):
    def body(c):
        k, steps = c
        return knp.where(k % 2 == 0, k // 2, 3 * k + 1), steps + 1
    return lax.while_loop(lambda c: c[0] != 1, body, (n, 0))


def test_vmap_while_batched_predicate_freezes_finished_elements():
    ns = np.array([1, 6, 7, 27, 2], np.int32)
    expected = per_element(collatz, (0,), ns)  # each element alone, as a Python loop
    assert_tree_close(kiln.vmap(collatz)(ns), expected)
    assert_tree_close(kiln.jit(kiln.vmap(collatz))(ns), expected)
    np.testing.assert_array_equal(np.asarray(expected[1]), [0, 8, 16, 111, 1])


def test_vmap_while_batched_bound_and_in_axes_mixtures():
    def f(a, b):  # the batched values enter through the predicate's constants or the body's
        return lax.while_loop(lambda c: c[0] < b, lambda c: (c[0] + a, c[1] + 1), (0.0, 0))

    a = np.array([1.0, 2.0, 0.5], np.float32)
    b = np.array([3.0, 0.0, 2.0], np.float32)
    for in_axes, args in (((0, None), (a, np.float32(3.0))), ((None, 0), (np.float32(1.5), b)), ((0, 0), (a, b))):
        assert_tree_close(kiln.vmap(f, in_axes=in_axes)(*args), per_element(f, in_axes, *args))
    n = np.array([3, 0, 7], np.int32)
    np.testing.assert_array_equal(np.asarray(kiln.vmap(lambda n: lax.while_loop(lambda i: i < n, lambda i: i + 1,
                                                                                  0))(n)), n)


def test_vmap_fori_loop_traced_bounds():
    f = lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x + i, 1.0)  # noqa: E731
    x, n = np.array([1.5, 0.5, 2.0], np.float32), np.array([3, 0, 5], np.int32)
    np.testing.assert_allclose(np.asarray(kiln.jit(kiln.vmap(f))(x, n)), per_element(f, (0, 0), x, n), rtol=1e-6)


# -- scan --------------------------------------------------------------------------------------------------

def rnn(h, xs, w):
    return lax.scan(lambda h, x: (knp.tanh(w * h + x), h * 2), h, xs)


RNG = np.random.default_rng(0)
H = RNG.standard_normal((6, 3)).astype(np.float32)
XB = RNG.standard_normal((4, 6, 3)).astype(np.float32)


@pytest.mark.parametrize("in_axes", [(0, 1, None), (None, 1, None), (0, None, None), (1, 2, None), (0, 1, 0)])
def test_vmap_scan_in_axes_mixtures(in_axes):
    h = H if in_axes[0] == 0 else (H.T if in_axes[0] == 1 else H[0])
    xs = XB if in_axes[1] == 1 else (np.moveaxis(XB, 1, 2) if in_axes[1] == 2 else XB[:, 0])
    w = np.float32(0.5) if in_axes[2] is None else np.linspace(0.1, 0.9, 6).astype(np.float32)
    got = kiln.vmap(rnn, in_axes=in_axes)(h, xs, w)
    assert_tree_close(got, per_element(lambda *a: rnn(*a), in_axes, h, xs, w))


def test_vmap_scan_keeps_one_loop():
    f = kiln.jit(kiln.vmap(rnn, in_axes=(0, 1, None)))
    text = f.lower(H, XB, np.float32(0.5)).as_text()
    assert text.count("stablehlo.while") == 1
    assert text.count("stablehlo.tanh") == 1


def test_scan_inside_vmap_inside_jit_and_unbatched_ys():
    f = kiln.jit(kiln.vmap(lambda x: lax.scan(lambda c, y: (c + y, c), 0.0, x)))
    m = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    assert_tree_close(f(m), (m.sum(1), np.cumsum(m, 1) - m))
    # A per-step output that does not depend on the batch stays unbatched (out_axes=None is fine).
    g = lambda w: lax.scan(lambda c, y: (c + y * w, y * 2), 0.0, np.arange(3.0, dtype=np.float32))[1]  # noqa: E731
    np.testing.assert_allclose(np.asarray(kiln.vmap(g, out_axes=None)(np.arange(2.0))), [0.0, 2.0, 4.0])


# -- with grad ---------------------------------------------------------------------------------------------

def loss(w, xs):
    def body(c, x):
        c = lax.cond(x > 0, lambda c: c * w + x, lambda c: knp.sin(c) * w, c)
        return c, c
    c, ys = lax.scan(body, 0.5, xs)
    return c + ys.sum()


def test_vmap_of_grad_and_grad_of_vmap_through_loops():
    xs = np.array([0.3, -1.2, 0.8, 2.0, -0.1, 0.4], np.float32)
    ws = np.array([0.3, 0.7, -0.5], np.float32)
    g = kiln.grad(loss)
    expected = np.array([float(g(w, xs)) for w in ws])
    np.testing.assert_allclose(np.asarray(kiln.vmap(g, in_axes=(0, None))(ws, xs)), expected, rtol=1e-5)
    xb = np.stack([xs, -xs, xs * 2])
    np.testing.assert_allclose(np.asarray(kiln.jit(kiln.vmap(g, in_axes=(None, 0)))(0.7, xb)),
                               [float(g(0.7, x)) for x in xb], rtol=1e-5)
    total = kiln.grad(lambda w: kiln.vmap(loss, in_axes=(None, 0))(w, xb).sum())(0.7)
    np.testing.assert_allclose(float(total), sum(float(g(0.7, x)) for x in xb), rtol=1e-5)
    # fori_loop (static bounds) and while_loop(max_steps) under vmap(grad) / grad(vmap).
    h = lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, 1.0, max_steps=6)  # noqa: E731
    np.testing.assert_allclose(np.asarray(kiln.vmap(kiln.grad(h))(np.array([1.3, 2.0]), np.array([4, 2]))),
                               [4 * 1.3 ** 3, 4.0], rtol=1e-5)
    s = lambda x: kiln.vmap(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x + i, 1.0))(x).sum()  # noqa: E731
    x = np.array([1.3, 2.0], np.float32)
    np.testing.assert_allclose(np.asarray(kiln.grad(s)(x)), 3 * x ** 2 + 1, rtol=1e-5)


def test_jacfwd_through_loops():
    # jacfwd is vmap over jvp: the primal outputs of scan/cond/while must stay unbatched.
    f = lambda w: lax.scan(lambda c, x: (knp.sin(c) * w + x, c * w), 0.1, np.arange(3.0, dtype=np.float32))  # noqa
    jf, jr = kiln.jacfwd(f)(0.7), kiln.jacrev(f)(0.7)
    assert_tree_close(jf, jr)
    c = lambda x: lax.cond(x[0] > 0, lambda x: x * x[1], lambda x: -x, x)  # noqa: E731
    np.testing.assert_allclose(np.asarray(kiln.jacfwd(c)(np.array([1.0, 2.0]))),
                               np.asarray(kiln.jacrev(c)(np.array([1.0, 2.0]))))
    w = lambda x: lax.while_loop(lambda v: v[0] < 3, lambda v: (v[0] + 1, v[1] * x), (0, 1.0))[1]  # noqa: E731
    np.testing.assert_allclose(float(kiln.jacfwd(w)(1.5)), 3 * 1.5 ** 2, rtol=1e-6)
