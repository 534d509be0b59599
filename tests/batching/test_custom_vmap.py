"""kiln.custom_batching: custom_vmap (the user's batching rule is used under vmap, the body elsewhere) and
sequential_vmap (a loop over the batch), checked against Python loops."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln.custom_batching import custom_vmap, sequential_vmap


def _make():
    calls = []

    @custom_vmap
    def f(x, y):
        return {"sum": x + y, "x": x}

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        calls.append((axis_size, in_batched))
        out = {"sum": x + y + 100.0, "x": x}  # distinguishable from the body
        return out, {"sum": True, "x": in_batched[0]}
    return f, calls


def test_rule_under_vmap_body_elsewhere():
    f, calls = _make()
    x = np.arange(3.0, dtype=np.float32)
    np.testing.assert_allclose(f(1.0, 2.0)["sum"], 3.0)  # no vmap: the function itself
    np.testing.assert_allclose(kiln.jit(f)(1.0, 2.0)["sum"], 3.0)
    out = kiln.vmap(f, in_axes=(0, None))(x, 2.0)
    np.testing.assert_allclose(out["sum"], x + 102.0)
    assert calls[-1] == (3, [True, False])
    out = kiln.jit(kiln.vmap(f, in_axes=(None, 0)))(1.0, x)
    np.testing.assert_allclose(out["sum"], x + 101.0)
    np.testing.assert_allclose(out["x"], np.full(3, 1.0))  # unbatched output, broadcast by vmap
    assert calls[-1] == (3, [False, True])
    # differentiation uses the body
    assert float(kiln.grad(lambda a: f(a, 2.0)["sum"])(1.0)) == 1.0
    np.testing.assert_allclose(kiln.vmap(kiln.grad(lambda a, b: f(a, b)["sum"]), in_axes=(0, None))(x, 1.0),
                               np.ones(3))


def test_closing_over_a_batched_value_batches_the_body():
    f, calls = _make()
    x = np.arange(3.0, dtype=np.float32)
    n = len(calls)
    out = kiln.vmap(lambda a: f(1.0, 2.0)["sum"] * 0 + custom_vmap_closure(a))(x)
    np.testing.assert_allclose(out, 2 * x)
    assert len(calls) == n  # f's arguments were not batched: its rule was not needed


def custom_vmap_closure(a):
    @custom_vmap
    def g(y):
        return y + a  # a is batched, the rule cannot see it

    @g.def_vmap
    def rule(axis_size, in_batched, y):
        raise AssertionError("not called")
    return g(a)


def test_sequential_vmap_matches_a_loop():
    calls = []

    def body(x, scale):
        calls.append(np.shape(x))
        return {"norm": knp.sqrt((x ** 2).sum()) * scale}
    g = sequential_vmap(body)
    xs = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    out = kiln.vmap(g, in_axes=(0, None))(xs, 2.0)
    np.testing.assert_allclose(out["norm"], np.sqrt((xs ** 2).sum(1)) * 2, rtol=1e-6)
    assert all(s == (3,) for s in calls)  # the body only ever saw one example
    np.testing.assert_allclose(kiln.jit(kiln.vmap(g, in_axes=(0, 0)))(xs, np.arange(4.0))["norm"],
                               np.sqrt((xs ** 2).sum(1)) * np.arange(4.0), rtol=1e-6)
    np.testing.assert_allclose(g(xs[1], 1.0)["norm"], np.sqrt((xs[1] ** 2).sum()), rtol=1e-6)


def test_custom_vmap_errors():
    @custom_vmap
    def no_rule(x):
        return x
    with pytest.raises(TypeError, match=r"kiln.custom_vmap function no_rule has no batching rule: call "
                                        r"no_rule.def_vmap\(rule\) first"):
        kiln.vmap(no_rule)(np.ones(2))

    @custom_vmap
    def bad(x):
        return x

    @bad.def_vmap
    def bad_rule(axis_size, in_batched, x):
        return x[0], True
    with pytest.raises(TypeError, match=r"output 0 of bad's batching rule has shape \(\), expected \(2,\) "
                                        r"\(batched"):
        kiln.vmap(bad)(np.ones(2))

    @bad.def_vmap
    def not_pair(axis_size, in_batched, x):
        return x
    with pytest.raises(TypeError, match=r"the batching rule of bad must return a pair \(out, out_batched\)"):
        kiln.vmap(bad)(np.ones(2))

    @bad.def_vmap
    def wrong_flags(axis_size, in_batched, x):
        return x, [True, False]
    with pytest.raises(TypeError, match=r"must return out_batched as one bool per output leaf"):
        kiln.vmap(bad)(np.ones(2))

    @bad.def_vmap
    def wrong_tree(axis_size, in_batched, x):
        return (x, x), True
    with pytest.raises(TypeError, match=r"returned outputs of structure .* but the function returns"):
        kiln.vmap(bad)(np.ones(2))
