"""kiln.example_libraries.optimizers: each update rule against its equations in NumPy over several
steps, schedules, the state as a pytree through jit, l2_norm/clip_grads, pack/unpack, errors."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import tree_util
from kiln.example_libraries import optimizers as opt

RS = np.random.RandomState(0)
X0 = {"w": RS.randn(3, 2).astype(np.float32), "b": RS.randn(2).astype(np.float32)}
GRADS = [{k: RS.randn(*v.shape).astype(np.float32) for k, v in X0.items()} for _ in range(4)]


def _np_rule(name, lr, **hp):
    """(init, update) in NumPy, float64, from the optimizers' equations."""
    z = np.zeros_like
    if name == "sgd":
        return (lambda x: [x]), (lambda i, g, s: [s[0] - lr * g])
    if name in ("momentum", "nesterov"):
        mass = hp["mass"]

        def upd(i, g, s):
            v = mass * s[1] + g
            step = mass * v + g if name == "nesterov" else v
            return [s[0] - lr * step, v]
        return (lambda x: [x, z(x)]), upd
    if name == "adagrad":
        mom = hp.get("momentum", 0.9)

        def upd(i, g, s):
            gsq = s[1] + g * g
            m = (1 - mom) * g / np.sqrt(gsq) + mom * s[2]
            return [s[0] - lr * m, gsq, m]
        return (lambda x: [x, z(x), z(x)]), upd
    if name == "rmsprop":
        gamma, eps = hp.get("gamma", 0.9), hp.get("eps", 1e-8)

        def upd(i, g, s):
            a = gamma * s[1] + (1 - gamma) * g * g
            return [s[0] - lr * g / np.sqrt(a + eps), a]
        return (lambda x: [x, z(x)]), upd
    if name == "rmsprop_momentum":
        gamma, eps, mom = hp.get("gamma", 0.9), hp.get("eps", 1e-8), hp.get("momentum", 0.9)

        def upd(i, g, s):
            a = gamma * s[1] + (1 - gamma) * g * g
            m = mom * s[2] + lr * g / np.sqrt(a + eps)
            return [s[0] - m, a, m]
        return (lambda x: [x, z(x), z(x)]), upd
    if name == "adam":
        b1, b2, eps = hp.get("b1", 0.9), hp.get("b2", 0.999), hp.get("eps", 1e-8)

        def upd(i, g, s):
            m = (1 - b1) * g + b1 * s[1]
            v = (1 - b2) * g * g + b2 * s[2]
            mhat, vhat = m / (1 - b1 ** (i + 1)), v / (1 - b2 ** (i + 1))
            return [s[0] - lr * mhat / (np.sqrt(vhat) + eps), m, v]
        return (lambda x: [x, z(x), z(x)]), upd
    if name == "adamax":
        b1, b2, eps = hp.get("b1", 0.9), hp.get("b2", 0.999), hp.get("eps", 1e-8)

        def upd(i, g, s):
            m = (1 - b1) * g + b1 * s[1]
            u = np.maximum(b2 * s[2], np.abs(g))
            return [s[0] - lr / (1 - b1 ** (i + 1)) * m / (u + eps), m, u]
        return (lambda x: [x, z(x), z(x)]), upd
    if name == "sm3":
        mom = hp.get("momentum", 0.9)

        def init(x):
            x1 = np.atleast_1d(x)
            return [x1, z(x1), [np.zeros(n) for n in x1.shape]]

        def upd(i, g, s):
            x, m, vs = s
            g = np.reshape(g, x.shape)
            acc = np.full(x.shape, np.inf)
            for k, v in enumerate(vs):
                shape = [1] * x.ndim
                shape[k] = -1
                acc = np.minimum(acc, v.reshape(shape))
            acc = acc + g * g
            inv = np.where(acc > 0, 1 / np.sqrt(np.where(acc > 0, acc, 1)), 0)
            m = (1 - mom) * g * inv + mom * m
            vs = [acc.max(axis=tuple(a for a in range(x.ndim) if a != k)) for k in range(x.ndim)]
            return [x - lr * m, m, vs]
        return init, upd
    raise AssertionError(name)


CASES = [
    ("sgd", {}), ("momentum", {"mass": 0.8}), ("nesterov", {"mass": 0.7}), ("adagrad", {}),
    ("adagrad", {"momentum": 0.5}), ("rmsprop", {"gamma": 0.8}), ("rmsprop_momentum", {"momentum": 0.6}),
    ("adam", {}), ("adam", {"b1": 0.5, "b2": 0.9, "eps": 1e-3}), ("adamax", {}), ("sm3", {}),
]


@pytest.mark.parametrize("name,hp", CASES)
def test_update_rules_against_numpy(name, hp):
    lr = 0.1
    opt_init, opt_update, get_params = getattr(opt, name)(lr, **hp)
    np_init, np_update = _np_rule(name, lr, **hp)
    state = opt_init(X0)
    ref = {k: np_init(v.astype(np.float64)) for k, v in X0.items()}
    update = kiln.jit(opt_update)
    for i, g in enumerate(GRADS):
        state = update(i, g, state) if i % 2 else opt_update(i, g, state)  # eager and jit steps alternate
        ref = {k: np_update(i, g[k].astype(np.float64), ref[k]) for k in ref}
        params = get_params(state)
        for k in X0:
            np.testing.assert_allclose(params[k], np.reshape(ref[k][0], X0[k].shape), rtol=2e-5, atol=2e-6)


def test_sm3_scalar_and_3d_params():
    x0 = {"s": np.float32(1.5), "t": RS.randn(2, 3, 2).astype(np.float32)}
    opt_init, opt_update, get_params = opt.sm3(0.05)
    np_init, np_update = _np_rule("sm3", 0.05)
    state, ref = opt_init(x0), {k: np_init(np.asarray(v, np.float64)) for k, v in x0.items()}
    for i in range(3):
        g = {"s": np.float32(0.3 * (i - 1)), "t": RS.randn(2, 3, 2).astype(np.float32)}
        state = opt_update(i, g, state)
        ref = {k: np_update(i, np.asarray(g[k], np.float64), ref[k]) for k in ref}
    p = get_params(state)
    assert p["s"].shape == ()
    for k in x0:
        np.testing.assert_allclose(p[k], np.reshape(ref[k][0], np.shape(x0[k])), rtol=2e-5, atol=2e-6)


def test_schedules():
    steps = np.arange(12)
    np.testing.assert_allclose([opt.constant(0.3)(i) for i in steps], 0.3)
    np.testing.assert_allclose([opt.exponential_decay(0.5, 4, 0.1)(i) for i in steps],
                               0.5 * 0.1 ** (steps / 4), rtol=1e-6)
    np.testing.assert_allclose([opt.inverse_time_decay(0.5, 4, 2.0)(i) for i in steps],
                               0.5 / (1 + 2.0 * steps / 4), rtol=1e-6)
    np.testing.assert_allclose([float(opt.inverse_time_decay(0.5, 4, 2.0, staircase=True)(i)) for i in steps],
                               0.5 / (1 + 2.0 * np.floor(steps / 4)), rtol=1e-6)
    np.testing.assert_allclose([float(opt.polynomial_decay(1.0, 8, 0.1, power=2.0)(i)) for i in steps],
                               (1 - np.minimum(steps, 8) / 8) ** 2 * 0.9 + 0.1, rtol=1e-6)
    pc = opt.piecewise_constant([3, 7], [1.0, 0.5, 0.1])
    np.testing.assert_allclose([float(pc(i)) for i in steps],
                               np.array([1.0, 0.5, 0.1])[np.searchsorted([3, 7], steps, side="left")], rtol=1e-6)
    np.testing.assert_allclose(kiln.jit(pc)(5), 0.5)
    sched = opt.exponential_decay(0.5, 4, 0.1)
    assert opt.make_schedule(sched) is sched
    assert opt.make_schedule(0.2)(9) == 0.2


def test_sgd_with_schedule_under_jit():
    opt_init, opt_update, get_params = opt.sgd(opt.polynomial_decay(1.0, 2, 0.0))
    state = opt_init(np.ones(3, np.float32))
    step = kiln.jit(opt_update)
    for i in range(4):
        state = step(i, np.ones(3, np.float32), state)
    np.testing.assert_allclose(get_params(state), 1 - (1.0 + 0.5), rtol=1e-6)


def test_optimizer_state_is_a_pytree():
    opt_init, opt_update, get_params = opt.momentum(0.1, 0.9)
    state = opt_init(X0)
    assert isinstance(state, opt.OptimizerState)
    leaves = tree_util.tree_leaves(state)
    assert len(leaves) == 4  # two parameters, each (x, velocity)
    out = kiln.jit(lambda s: s)(state)
    assert isinstance(out, opt.OptimizerState) and out.tree_def == state.tree_def
    doubled = tree_util.tree_map(lambda a: 2 * a, state)
    np.testing.assert_allclose(get_params(doubled)["w"], 2 * X0["w"])


def test_l2_norm_and_clip_grads():
    g = {"a": RS.randn(3, 2).astype(np.float32), "b": [RS.randn(4).astype(np.float32)]}
    norm = np.sqrt(sum(np.sum(np.square(v)) for v in (g["a"], g["b"][0])))
    np.testing.assert_allclose(opt.l2_norm(g), norm, rtol=1e-6)
    np.testing.assert_allclose(kiln.jit(opt.l2_norm)(g), norm, rtol=1e-6)
    clipped = opt.clip_grads(g, norm / 2)
    np.testing.assert_allclose(clipped["a"], g["a"] / 2, rtol=1e-5)
    np.testing.assert_allclose(opt.l2_norm(clipped), norm / 2, rtol=1e-5)
    same = kiln.jit(opt.clip_grads)(g, norm * 2)
    np.testing.assert_allclose(same["b"][0], g["b"][0], rtol=1e-6)
    c = np.array([3.0, 4.0], np.float32)
    np.testing.assert_allclose(opt.l2_norm(c), 5.0)
    np.testing.assert_allclose(kiln.grad(lambda x: opt.l2_norm({"x": x}))(c), c / 5.0, rtol=1e-6)


def test_pack_unpack_round_trip():
    opt_init, opt_update, get_params = opt.adam(0.1)
    state = opt_update(0, GRADS[0], opt_init(X0))
    marked = opt.unpack_optimizer_state(state)
    assert isinstance(marked["w"], opt.JoinPoint) and len(marked["w"].subtree) == 3
    again = opt.pack_optimizer_state(marked)
    assert again.tree_def == state.tree_def and again.subtree_defs == state.subtree_defs
    for a, b in zip(tree_util.tree_leaves(again), tree_util.tree_leaves(state)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="not a JoinPoint"):
        opt.pack_optimizer_state({"w": 1.0})


def test_errors():
    opt_init, opt_update, _ = opt.sgd(0.1)
    state = opt_init(X0)
    with pytest.raises(TypeError, match="gradient tree's structure differs"):
        opt_update(0, [knp.ones(2)], state)

    @opt.optimizer
    def bad(step_size):
        return (lambda x: (x, x)), (lambda i, g, s: s[0]), (lambda s: s[0])
    b_init, b_update, _ = bad(0.1)
    with pytest.raises(TypeError, match="returned a state of structure"):
        b_update(0, GRADS[0], b_init(X0))
    with pytest.raises(ValueError, match="one longer than boundaries"):
        opt.piecewise_constant([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="must both be 1-D"):
        opt.piecewise_constant([[1]], [1.0, 2.0])
    with pytest.raises(TypeError, match="step size must be a scalar or a function"):
        opt.make_schedule([0.1, 0.2])


@pytest.mark.parametrize("dtype", [np.float16, knp.bfloat16, np.float32])
def test_state_keeps_parameter_dtype(dtype):
    x0 = {"w": knp.asarray(X0["w"], dtype)}
    g = {"w": knp.asarray(GRADS[0]["w"], dtype)}
    for name, hp in CASES:
        opt_init, opt_update, get_params = getattr(opt, name)(0.1, **hp)
        state = kiln.jit(opt_update)(1, g, opt_update(0, g, opt_init(x0)))
        assert get_params(state)["w"].dtype == dtype, name
        leaves = tree_util.tree_leaves(state.packed_state[0][:-2] if name == "sm3" else state)  # sm3: + shape
        assert all(leaf.dtype == dtype for leaf in leaves), name


def test_vmap_over_optimizer_states():
    opt_init, opt_update, get_params = opt.adam(0.1)
    xs = np.random.RandomState(1).randn(3, 4).astype(np.float32)
    gs = np.random.RandomState(2).randn(3, 4).astype(np.float32)
    states = kiln.vmap(opt_init)(xs)
    states = kiln.vmap(opt_update, in_axes=(None, 0, 0))(0, gs, states)
    got = kiln.vmap(get_params)(states)
    for k in range(3):
        expected = get_params(opt_update(0, gs[k], opt_init(xs[k])))
        np.testing.assert_allclose(got[k], expected, rtol=1e-6)
