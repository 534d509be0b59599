"""kiln.example_libraries.stax: output shapes (as JAX documents them), values against NumPy
reimplementations, combinators, errors, and a small MLP trained under jit + grad."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import random
from kiln.example_libraries import optimizers, stax

KEY = random.key(0)


def _np_conv_nhwc(x, w, strides, pad):
    """Cross-correlation, NHWC input, HWIO kernel, explicit ((lo, hi), (lo, hi)) padding."""
    x = np.pad(x, ((0, 0), pad[0], pad[1], (0, 0)))
    n, h, wd, _ = x.shape
    kh, kw, _, o = w.shape
    oh, ow = (h - kh) // strides[0] + 1, (wd - kw) // strides[1] + 1
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw, :]
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def _np_pool(x, window, strides, reducer):
    n, h, w, c = x.shape
    oh, ow = (h - window[0]) // strides[0] + 1, (w - window[1]) // strides[1] + 1
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            out[:, i, j, :] = reducer(x[:, i * strides[0]:i * strides[0] + window[0],
                                        j * strides[1]:j * strides[1] + window[1], :], axis=(1, 2))
    return out


def test_dense_shape_and_values():
    init, apply = stax.Dense(5)
    out_shape, (W, b) = init(KEY, (3, 4))
    assert out_shape == (3, 5) and W.shape == (4, 5) and b.shape == (5,)
    x = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    np.testing.assert_allclose(apply((W, b), x), x @ np.asarray(W) + np.asarray(b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kiln.jit(apply)((W, b), x), x @ np.asarray(W) + np.asarray(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("strides,padding", [((1, 1), "VALID"), ((2, 1), "SAME"), ((1, 2), "VALID")])
def test_conv_shape_and_values(strides, padding):
    init, apply = stax.Conv(3, (2, 3), strides=strides, padding=padding)
    out_shape, (W, b) = init(KEY, (2, 5, 6, 4))
    assert W.shape == (2, 3, 4, 3) and b.shape == (1, 1, 1, 3)
    x = np.random.RandomState(1).randn(2, 5, 6, 4).astype(np.float32)
    if padding == "VALID":
        pad = ((0, 0), (0, 0))
    else:
        pad = []
        for size, k, s in zip((5, 6), (2, 3), strides):
            out = -(-size // s)
            total = max((out - 1) * s + k - size, 0)
            pad.append((total // 2, total - total // 2))
    expected = _np_conv_nhwc(x, np.asarray(W, np.float64), strides, pad) + np.asarray(b)
    got = apply((W, b), x)
    assert out_shape == expected.shape == got.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_conv_transpose_shapes():
    out_shape, (W, b) = stax.ConvTranspose(3, (3, 3), strides=(2, 2), padding="SAME")[0](KEY, (2, 4, 5, 2))
    assert out_shape == (2, 8, 10, 3) and W.shape == (3, 3, 2, 3)
    x = knp.ones((2, 4, 5, 2))
    assert stax.ConvTranspose(3, (3, 3), strides=(2, 2), padding="SAME")[1]((W, b), x).shape == out_shape
    init, apply = stax.Conv1DTranspose(4, (3,), padding="VALID")
    out_shape, params = init(KEY, (2, 5, 3))
    assert out_shape == (2, 7, 4)
    assert apply(params, knp.ones((2, 5, 3))).shape == out_shape


def test_general_conv_nchw():
    init, apply = stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (3, 3), padding="SAME")
    out_shape, (W, b) = init(KEY, (1, 2, 5, 5))
    assert out_shape == (1, 4, 5, 5) and W.shape == (4, 2, 3, 3) and b.shape == (1, 4, 1, 1)
    assert apply((W, b), knp.ones((1, 2, 5, 5))).shape == out_shape


@pytest.mark.parametrize("layer,reducer", [(stax.MaxPool, np.max), (stax.SumPool, np.sum), (stax.AvgPool, np.mean)])
def test_pooling_values(layer, reducer):
    x = np.random.RandomState(2).randn(2, 5, 6, 3).astype(np.float32)
    init, apply = layer((2, 3), strides=(1, 3))
    out_shape, params = init(KEY, x.shape)
    expected = _np_pool(x, (2, 3), (1, 3), reducer)
    assert out_shape == expected.shape == (2, 4, 2, 3)
    np.testing.assert_allclose(apply(params, x), expected, rtol=1e-5, atol=1e-6)


def test_avgpool_same_padding_counts_only_real_cells():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    init, apply = stax.AvgPool((3, 3), padding="SAME")
    out_shape, _ = init(KEY, x.shape)
    assert out_shape == (1, 4, 4, 1)
    padded = np.pad(x[0, :, :, 0], 1, constant_values=np.nan)
    expected = np.array([[np.nanmean(padded[i:i + 3, j:j + 3]) for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(np.asarray(apply((), x))[0, :, :, 0], expected, rtol=1e-6)


def test_any_batch_size_minus_one_through_pooling():
    """stax's init_fun takes -1 for "any batch size"; pooling then gives 0 for it, as JAX's stax does (kiln's
    reduce_window_shape_tuple raised on the negative size: JAX's sentiment_analysis.py example)."""
    key = random.PRNGKey(0)
    assert stax.MaxPool((2,), strides=(2,), spec="NWC")[0](key, (-1, 8, 3))[0] == (0, 4, 3)
    assert stax.AvgPool((2, 2), padding="SAME")[0](key, (-1, 8, 8, 3))[0] == (0, 8, 8, 3)
    net_init, _ = stax.serial(stax.Conv(4, (3, 3)), stax.Relu, stax.MaxPool((2, 2)), stax.Flatten, stax.Dense(10))
    assert net_init(key, (-1, 8, 8, 3))[0] == (0, 10)
    with pytest.raises(ValueError, match=r"kiln.lax.reduce_window: padding \(-9, 0\) of dimension 0 leaves a "
                                         "negative size"):
        kiln.lax.reduce_window(knp.ones(4), 0.0, kiln.lax.add, (1,), (1,), [(-9, 0)])


def test_pooling_spec_nchw():
    x = np.random.RandomState(3).randn(2, 3, 4, 4).astype(np.float32)
    init, apply = stax.AvgPool((2, 2), strides=(2, 2), spec="NCHW")
    out_shape, _ = init(KEY, x.shape)
    assert out_shape == (2, 3, 2, 2)
    expected = x.reshape(2, 3, 2, 2, 2, 2).mean(axis=(3, 5))
    np.testing.assert_allclose(apply((), x), expected, rtol=1e-5)


@pytest.mark.parametrize("center,scale", [(True, True), (True, False), (False, True), (False, False)])
def test_batchnorm(center, scale):
    x = np.random.RandomState(4).randn(3, 2, 2, 4).astype(np.float32)
    init, apply = stax.BatchNorm(center=center, scale=scale)
    out_shape, (beta, gamma) = init(KEY, x.shape)
    assert out_shape == x.shape
    beta = knp.arange(4.0) if center else ()
    gamma = knp.arange(1.0, 5.0) if scale else ()
    z = (x - x.mean((0, 1, 2))) / np.sqrt(x.var((0, 1, 2)) + 1e-5)
    if scale:
        z = z * np.arange(1.0, 5.0)
    if center:
        z = z + np.arange(4.0)
    np.testing.assert_allclose(apply((beta, gamma), x), z, rtol=1e-4, atol=1e-5)


def test_batchnorm_axis_int():
    x = np.random.RandomState(5).randn(6, 3).astype(np.float32)
    out_shape, (beta, gamma) = stax.BatchNorm(axis=0)[0](KEY, x.shape)
    assert beta.shape == gamma.shape == (3,)
    z = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
    np.testing.assert_allclose(stax.BatchNorm(axis=0)[1]((beta, gamma), x), z, rtol=1e-4, atol=1e-5)


def test_elementwise_layers():
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    cases = {
        stax.Tanh: np.tanh(x), stax.Relu: np.maximum(x, 0), stax.Exp: np.exp(x),
        stax.Sigmoid: 1 / (1 + np.exp(-x)), stax.Softplus: np.log1p(np.exp(x)),
        stax.Elu: np.where(x > 0, x, np.expm1(x)), stax.LeakyRelu: np.where(x >= 0, x, 0.01 * x),
        stax.Softmax: np.exp(x) / np.exp(x).sum(-1, keepdims=True),
        stax.LogSoftmax: x - np.log(np.exp(x).sum(-1, keepdims=True)),
        stax.Identity: x,
    }
    for (init, apply), expected in cases.items():
        out_shape, params = init(KEY, x.shape)
        assert out_shape == x.shape and params == ()
        np.testing.assert_allclose(apply(params, x), expected, rtol=1e-5, atol=1e-6)
    alpha, lam = 1.6732632423543772, 1.0507009873554805
    np.testing.assert_allclose(stax.Selu[1]((), x), lam * np.where(x > 0, x, alpha * np.expm1(x)), rtol=1e-5)
    assert stax.Gelu[1]((), x).shape == x.shape
    init, apply = stax.elementwise(stax.leaky_relu, negative_slope=0.5)
    np.testing.assert_allclose(apply((), x), np.where(x >= 0, x, 0.5 * x), rtol=1e-6)


def test_flatten_fan_combinators():
    x = np.random.RandomState(6).randn(2, 3, 4).astype(np.float32)
    assert stax.Flatten[0](KEY, (2, 3, 4)) == ((2, 12), ())
    np.testing.assert_array_equal(stax.Flatten[1]((), x), x.reshape(2, 12))
    init, apply = stax.serial(stax.FanOut(2), stax.parallel(stax.Identity, stax.Exp), stax.FanInSum)
    out_shape, params = init(KEY, (2, 3, 4))
    assert out_shape == (2, 3, 4)
    np.testing.assert_allclose(apply(params, x), x + np.exp(x), rtol=1e-5)
    init, apply = stax.serial(stax.FanOut(3), stax.parallel(stax.Dense(2), stax.Dense(5), stax.Identity),
                              stax.FanInConcat())
    out_shape, params = init(KEY, (2, 3, 4))
    assert out_shape == (2, 3, 11)
    assert apply(params, x).shape == out_shape
    out_shape, _ = stax.FanInConcat(axis=0)[0](KEY, [(2, 3), (5, 3)])
    assert out_shape == (7, 3)


def test_parallel_init_returns_shapes_and_params():
    shapes, params = stax.parallel(stax.Dense(3), stax.Relu)[0](KEY, [(2, 4), (2, 5)])
    assert tuple(shapes) == ((2, 3), (2, 5))
    assert params[0][0].shape == (4, 3) and params[1] == ()


def test_shape_dependent():
    layer = stax.shape_dependent(lambda shape: stax.Dense(shape[-1] * 2))
    out_shape, params = layer[0](KEY, (3, 4))
    assert out_shape == (3, 8)
    assert layer[1](params, knp.ones((3, 4))).shape == (3, 8)


def test_dropout():
    x = knp.ones((50, 40))
    init, apply = stax.Dropout(0.75)
    assert init(KEY, (50, 40)) == ((50, 40), ())
    out = np.asarray(apply((), x, rng=random.key(1)))
    kept = out != 0
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_array_equal(stax.Dropout(0.5, mode="test")[1]((), x, rng=KEY), np.ones((50, 40)))
    with pytest.raises(ValueError, match=r"without a PRNG key.*rng=key"):
        apply((), x)
    # serial splits the key it is given among its layers.
    out = stax.serial(stax.Dense(3), stax.Dropout(0.5))
    _, params = out[0](KEY, (4, 2))
    assert out[1](params, knp.ones((4, 2)), rng=KEY).shape == (4, 3)


def test_initializer_aliases():
    assert stax.glorot is stax.glorot_normal and stax.randn is stax.normal and stax.logsoftmax is stax.log_softmax
    assert stax.zeros(KEY, (2,)).shape == (2,) and float(stax.ones(KEY, (1,))[0]) == 1.0


def test_errors():
    with pytest.raises(TypeError, match=r"stax.serial: layer 1 .*not a layer.*already"):
        stax.serial(stax.Dense(2), stax.Relu[1])
    with pytest.raises(ValueError, match=r"stax.GeneralConv: filter_shape \(3,\) has 1 spatial sizes"):
        stax.Conv(2, (3,))[0](KEY, (1, 4, 4, 1))
    with pytest.raises(ValueError, match=r"stax.MaxPool: strides \(1,\) and window_shape \(2, 2\) differ"):
        stax.MaxPool((2, 2), strides=(1,))
    with pytest.raises(ValueError, match=r"stax.AvgPool: input of shape \(4, 4\) has 2 axes"):
        stax.AvgPool((2, 2))[0](KEY, (4, 4))


def test_experimental_aliases():
    from kiln.experimental import optimizers as eopt
    from kiln.experimental import stax as estax
    assert estax.Dense is stax.Dense and eopt.adam is optimizers.adam
    assert eopt.__all__ == optimizers.__all__ and all(getattr(eopt, n) is getattr(optimizers, n) for n in eopt.__all__)


def test_optimizer_type_names_as_jax_defines_them():
    # For annotations in ported code (opt_state: optimizers.OptimizerState, step: optimizers.Step, ...).
    assert optimizers.Step is int and optimizers.Updates is optimizers.Params
    opt_init, opt_update, get_params = optimizers.sgd(0.1)
    opt = optimizers.Optimizer(opt_init, opt_update, get_params)
    state = opt.init_fn({"w": np.ones(2, np.float32)})
    assert isinstance(state, optimizers.OptimizerState)
    np.testing.assert_allclose(opt.params_fn(opt.update_fn(0, {"w": np.ones(2, np.float32)}, state))["w"], 0.9)


def test_mlp_trains_under_jit_and_grad():
    init, apply = stax.serial(stax.Dense(16), stax.Relu, stax.Dense(3), stax.LogSoftmax)
    _, params = init(KEY, (-1, 4))
    rs = np.random.RandomState(7)
    x = rs.randn(32, 4).astype(np.float32)
    labels = np.eye(3, dtype=np.float32)[(x[:, 0] > 0).astype(int) + (x[:, 1] > 0).astype(int)]

    def loss(p):
        return -knp.mean(knp.sum(apply(p, x) * labels, axis=-1))

    opt_init, opt_update, get_params = optimizers.adam(0.05)

    @kiln.jit
    def step(i, state):
        return opt_update(i, kiln.grad(loss)(get_params(state)), state)

    state = opt_init(params)
    first = float(loss(params))
    for i in range(20):
        state = step(i, state)
    assert float(loss(get_params(state))) < 0.6 * first


def test_grad_through_layers_against_finite_differences():
    # Smooth layers only (no kinks), float64 so that central differences are accurate.
    with kiln.enable_x64():
        init, apply = stax.serial(stax.Conv(2, (2, 2), padding="SAME"), stax.BatchNorm(), stax.Tanh,
                                  stax.AvgPool((2, 2), strides=(2, 2)), stax.Flatten, stax.Dense(3), stax.Softplus)
        _, params = init(KEY, (2, 4, 4, 2))
        params = kiln.tree_util.tree_map(lambda p: knp.asarray(p, knp.float64), params)
        rs = np.random.RandomState(8)
        x = rs.randn(2, 4, 4, 2)

        def f(p, x):
            return knp.sum(apply(p, x) ** 2)

        gp, gx = kiln.jit(kiln.grad(f, argnums=(0, 1)))(params, x)
        v = rs.randn(*x.shape)
        h = 1e-5
        fd = (float(f(params, x + h * v)) - float(f(params, x - h * v))) / (2 * h)
        np.testing.assert_allclose(np.sum(np.asarray(gx) * v), fd, rtol=1e-5)
        W = params[0][0]
        dW = rs.randn(*W.shape)

        def shifted(s):
            return [(W + s * dW, params[0][1])] + params[1:]
        fd = (float(f(shifted(h), x)) - float(f(shifted(-h), x))) / (2 * h)
        np.testing.assert_allclose(np.sum(np.asarray(gp[0][0]) * dW), fd, rtol=1e-5)


def test_vmap_of_apply_against_loop():
    init, apply = stax.serial(stax.Conv(3, (2, 2)), stax.Relu, stax.MaxPool((2, 2)), stax.Flatten, stax.Dense(2))
    _, params = init(KEY, (1, 5, 5, 2))
    xs = np.random.RandomState(9).randn(4, 1, 5, 5, 2).astype(np.float32)
    got = kiln.vmap(apply, in_axes=(None, 0))(params, xs)
    expected = np.stack([np.asarray(apply(params, x)) for x in xs])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_dropout_key_through_jit():
    init, apply = stax.serial(stax.Dense(8), stax.Dropout(0.5))
    _, params = init(KEY, (3, 4))
    x = np.ones((3, 4), np.float32)
    f = kiln.jit(lambda p, x, k: apply(p, x, rng=k))
    np.testing.assert_allclose(f(params, x, random.key(3)), apply(params, x, rng=random.key(3)), rtol=1e-6)
    assert not np.allclose(f(params, x, random.key(3)), f(params, x, random.key(4)))
