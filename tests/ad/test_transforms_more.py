"""kiln.jacobian, linear_transpose, closure_convert, custom_gradient, fwd_and_bwd, checkpoint_policies and
kiln.test_util (check_grads / check_jvp / check_vjp), with NumPy and analytic derivatives as oracles."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln.test_util import check_grads, check_jvp, check_vjp

RNG = np.random.RandomState(0)


def test_jacobian_is_jacrev():
    assert kiln.jacobian is kiln.jacrev
    x = np.array([0.5, 1.5], np.float32)
    np.testing.assert_allclose(kiln.jacobian(knp.sin)(x), np.diag(np.cos(x)), rtol=1e-6)


def test_linear_transpose_matches_the_matrix_transpose():
    a = RNG.randn(3, 4).astype(np.float32)

    def f(x, y):
        return {"ax": knp.asarray(a) @ x, "y2": 2.0 * y - y.sum()}
    ft = kiln.linear_transpose(f, kiln.ShapeDtypeStruct((4,), np.float32), np.ones(2, np.float32))
    ct = {"ax": RNG.randn(3).astype(np.float32), "y2": RNG.randn(2).astype(np.float32)}
    gx, gy = ft(ct)
    np.testing.assert_allclose(gx, a.T @ ct["ax"], rtol=1e-5)
    np.testing.assert_allclose(gy, 2 * ct["y2"] - ct["y2"].sum(), rtol=1e-6)
    gx_jit, _ = kiln.jit(ft)(ct)
    np.testing.assert_allclose(gx_jit, gx, rtol=1e-6)
    unused = kiln.linear_transpose(lambda x, y: 3.0 * x, np.ones(2, np.float32), np.ones(3, np.float32))
    np.testing.assert_array_equal(unused(np.ones(2, np.float32))[1], np.zeros(3))  # zero cotangent, materialised
    batched = kiln.vmap(lambda c: kiln.linear_transpose(lambda x: knp.asarray(a) @ x, np.ones(4, np.float32))(c)[0])
    np.testing.assert_allclose(batched(np.eye(3, dtype=np.float32)), a, rtol=1e-6)


def test_linear_transpose_errors():
    with pytest.raises(TypeError, match=r"linear_transpose\(sin\): the function is not linear .* applies 'sin'"):
        kiln.linear_transpose(knp.sin, np.ones(2, np.float32))
    with pytest.raises(TypeError, match=r"arguments must be real or complex floating-point arrays, got i32\[2\]"):
        kiln.linear_transpose(lambda x: x, np.ones(2, np.int32))
    ft = kiln.linear_transpose(lambda x: (x, x), np.ones(2, np.float32))
    with pytest.raises(TypeError, match=r"the cotangent has structure .* but the function's output has structure"):
        ft(np.ones(2, np.float32))
    with pytest.raises(TypeError, match=r"cotangent f32\[3\] does not match the output f32\[2\]"):
        ft((np.ones(3, np.float32), np.ones(2, np.float32)))
    with pytest.raises(NotImplementedError, match=r"reduce_axes is not supported"):
        kiln.linear_transpose(lambda x: x, np.ones(2), reduce_axes=("i",))


def test_closure_convert_hoists_traced_constants():
    def outer(z):
        def inner(x):
            return knp.sin(x) * z
        converted, consts = kiln.closure_convert(inner, knp.ones(2))
        return converted(knp.asarray([0.5, 1.0]), *consts).sum(), len(consts)
    value, n = outer(2.0)
    assert n == 0  # nothing traced to hoist outside a transformation
    np.testing.assert_allclose(value, 2 * (np.sin(0.5) + np.sin(1.0)), rtol=1e-6)
    np.testing.assert_allclose(kiln.grad(lambda z: outer(z)[0])(2.0), np.sin(0.5) + np.sin(1.0), rtol=1e-6)
    hoisted = kiln.jit(lambda z: kiln.closure_convert(lambda x: x * z, 1.0)[1][0] + 0)(3.0)
    assert float(hoisted) == 3.0  # under jit, z is traced: it is the hoisted constant


def test_closure_convert_keeps_no_traced_value_after_the_trace():
    """The converted function outlives the trace it was made in (kept by a jit's cache, say): it must not hold
    the hoisted tracers, nor the closure that holds them (found porting odeint)."""
    kept = []

    def f(z):
        converted, consts = kiln.closure_convert(lambda x: x * z, 1.0)
        kept.append(converted)
        return converted(2.0, *consts)

    with kiln.checking_leaks():
        assert float(kiln.jit(f)(3.0)) == 6.0
    assert float(kept[0](2.0, 5.0)) == 10.0  # still a working function of the (now explicit) constant


def test_custom_gradient():
    @kiln.custom_gradient
    def clipped_sin(x):
        return knp.sin(x), lambda g: (knp.clip(g * knp.cos(x), -0.1, 0.1),)

    x = np.array([0.0, 1.0, 3.0], np.float32)
    np.testing.assert_allclose(clipped_sin(x), np.sin(x), rtol=1e-6)
    expected = np.clip(np.cos(x), -0.1, 0.1)
    np.testing.assert_allclose(kiln.grad(lambda x: clipped_sin(x).sum())(x), expected, rtol=1e-6)
    np.testing.assert_allclose(kiln.jit(kiln.grad(lambda x: clipped_sin(x).sum()))(x), expected, rtol=1e-6)
    np.testing.assert_allclose(kiln.vmap(kiln.grad(lambda x: clipped_sin(x)))(x), expected, rtol=1e-6)

    @kiln.custom_gradient
    def two_args(a, b):
        return a * b, lambda g: (g * 10.0, g * 20.0)
    assert kiln.grad(two_args, argnums=(0, 1))(1.0, 2.0) == (10.0, 20.0)

    @kiln.custom_gradient
    def bad(x):
        return x
    with pytest.raises(TypeError, match=r"custom_gradient: bad must return a pair \(value, vjp_function\)"):
        kiln.grad(bad)(1.0)


def test_fwd_and_bwd():
    a = RNG.randn(3, 3).astype(np.float32)
    w = RNG.randn(3, 2).astype(np.float32)
    fwd, bwd = kiln.fwd_and_bwd(lambda x, w: knp.tanh(x @ w), argnums=(0, 1))
    y, res = fwd(a, w)
    ct = np.ones((3, 2), np.float32)
    gx, gw = bwd(res, ct)
    d = 1 - np.tanh(a @ w) ** 2
    np.testing.assert_allclose(y, np.tanh(a @ w), rtol=1e-5)
    np.testing.assert_allclose(gx, d @ w.T, rtol=1e-5)
    np.testing.assert_allclose(gw, a.T @ d, rtol=1e-5)
    _, res2 = fwd(a * 2, w)
    bwd(res2, ct)
    assert bwd._cache_size() == 1  # the residuals' structure is the same: bwd compiled once
    fwd1, bwd1 = kiln.fwd_and_bwd(lambda x: ((x ** 2).sum(), x[0]), argnums=0, has_aux=True, jitted=False)
    out, res, aux = fwd1(np.arange(3.0, dtype=np.float32))
    assert float(aux) == 0.0 and float(out) == 5.0
    np.testing.assert_allclose(bwd1(res, 1.0), [0, 2, 4])
    with pytest.raises(TypeError, match=r"bwd's first argument must be the residuals returned by fwd"):
        bwd1((1, 2), 1.0)


def test_checkpoint_policies_keep_the_numbers():
    def f(x):
        return knp.sin(knp.sin(x) @ knp.ones((3, 3)))
    x = RNG.randn(2, 3).astype(np.float32)
    expected = np.asarray(kiln.grad(lambda x: f(x).sum())(x))
    p = kiln.checkpoint_policies
    for policy in [None, p.nothing_saveable, p.everything_saveable, p.dots_saveable,
                   p.dots_with_no_batch_dims_saveable, p.save_only_these_names("a"),
                   p.save_from_both_policies(p.dots_saveable, p.nothing_saveable), p.offload_dot_with_no_batch_dims()]:
        got = kiln.grad(lambda x: kiln.checkpoint(f, policy=policy)(x).sum())(x)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    with pytest.raises(TypeError, match=r"kiln.checkpoint: policy must be one of kiln.checkpoint_policies"):
        kiln.checkpoint(f, policy="dots")


def test_check_grads_passes_on_correct_derivatives_and_fails_on_wrong_ones():
    x = (np.float32(0.7), np.linspace(-1, 1, 4).astype(np.float32))
    check_grads(lambda a, b: knp.sin(a) * b ** 2, x, order=2)
    check_grads(lambda a, b: knp.sin(a) * b ** 2, x, order=1, modes=["lin"])
    with kiln.enable_x64():
        check_grads(lambda v: knp.exp(v).sum(), (np.linspace(0, 1, 3),), order=3, modes=["rev"])

    @kiln.custom_jvp
    def wrong(v):
        return knp.sin(v)
    wrong.defjvp(lambda p, t: (knp.sin(p[0]), 2 * t[0]))
    with pytest.raises(AssertionError, match=r"JVP tangent"):
        check_grads(wrong, (np.float32(0.3),), order=1, modes=["fwd"])
    with pytest.raises(AssertionError, match=r"VJP cotangent projection"):
        check_grads(wrong, (np.float32(0.3),), order=1, modes=["rev"])
    check_jvp(knp.cos, lambda p, t: kiln.jvp(knp.cos, p, t), (np.float32(0.2),))
    check_vjp(knp.cos, lambda x: kiln.vjp(knp.cos, x), (np.float32(0.2),), atol=1e-2, rtol=1e-2)
    with pytest.raises(ValueError, match=r"check_grads: unknown mode\(s\) \['back'\]"):
        check_grads(knp.sin, (1.0,), 1, modes=["back"])
    with pytest.raises(ValueError, match=r"check_grads: order must be a positive int, got 0"):
        check_grads(knp.sin, (1.0,), 0)
