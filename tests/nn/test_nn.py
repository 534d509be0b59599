"""kiln.nn against NumPy/SciPy formulas (computed in float64): values, dtypes, shapes, numerically
hard inputs, masks, error messages, and the leanness of the lowered logsumexp."""
from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.special as sp

import kiln
import kiln.numpy as knp
from kiln import nn

rng = np.random.default_rng(2)
SHAPES = [(), (0,), (3, 5)]
F32 = dict(rtol=2e-6, atol=2e-6)


def _sigmoid(x):
    return sp.expit(x)


def _softplus(x):
    return np.logaddexp(x, 0)


REFS = {  # float64 references
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.minimum(np.maximum(x, 0), 6),
    "sigmoid": _sigmoid,
    "silu": lambda x: x * _sigmoid(x),
    "swish": lambda x: x * _sigmoid(x),
    "softplus": _softplus,
    "log_sigmoid": lambda x: -_softplus(-x),
    "soft_sign": lambda x: x / (np.abs(x) + 1),
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "selu": lambda x: 1.0507009873554804934193349852946 * np.where(
        x > 0, x, 1.6732632423543772848170429916717 * np.expm1(np.minimum(x, 0))),
    "celu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "hard_sigmoid": lambda x: np.minimum(np.maximum(x + 3, 0), 6) / 6,
    "hard_silu": lambda x: x * np.minimum(np.maximum(x + 3, 0), 6) / 6,
    "hard_swish": lambda x: x * np.minimum(np.maximum(x + 3, 0), 6) / 6,
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "squareplus": lambda x: (x + np.sqrt(x * x + 4)) / 2,
    "softmax": lambda x: sp.softmax(x, axis=-1) if x.size else x,
    "log_softmax": lambda x: sp.log_softmax(x, axis=-1) if x.size else x,
}


@pytest.mark.parametrize("name", sorted(REFS))
def test_activation_float32(name):
    fn, ref = getattr(nn, name), REFS[name]
    shapes = SHAPES[1:] if name in ("softmax", "log_softmax") else SHAPES  # axis=-1 needs a dimension
    xs = [rng.uniform(-8, 8, s).astype(np.float32) for s in shapes]
    out = fn(xs[-1])
    assert out.dtype == np.float32 and out.shape == xs[-1].shape
    np.testing.assert_allclose(np.asarray(out), ref(xs[-1].astype(np.float64)), **F32)
    outs = kiln.jit(lambda xs: [fn(x) for x in xs])(xs)
    for o, x in zip(outs, xs):
        assert o.dtype == np.float32 and o.shape == x.shape
        np.testing.assert_allclose(np.asarray(o), ref(x.astype(np.float64)), **F32)


def test_activations_float64():
    names = sorted(REFS)
    x = rng.uniform(-8, 8, (4, 6))
    with kiln.config.override("enable_x64", True):
        outs = kiln.jit(lambda x: {n: getattr(nn, n)(x) for n in names})(x)
    for n in names:
        assert outs[n].dtype == np.float64, n
        np.testing.assert_allclose(np.asarray(outs[n]), REFS[n](x), rtol=1e-13, atol=1e-14, err_msg=n)


def test_activations_on_integers():
    x = np.array([-3, -1, 0, 2, 9], np.int32)
    assert nn.relu(x).dtype == np.int32 and nn.relu6(x).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(nn.relu(x)), np.maximum(x, 0), strict=True)
    np.testing.assert_array_equal(np.asarray(nn.relu6(x)), np.int32([0, 0, 0, 2, 6]), strict=True)
    out = nn.sigmoid(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), _sigmoid(x.astype(np.float64)), **F32)
    np.testing.assert_allclose(np.asarray(nn.gelu(x)), REFS["gelu"](x.astype(np.float64)), **F32)


def test_activation_parameters():
    x = rng.uniform(-4, 4, (10,)).astype(np.float32)
    x64 = x.astype(np.float64)
    f = kiln.jit(lambda x: (nn.gelu(x, approximate=False), nn.elu(x, alpha=0.5), nn.celu(x, alpha=2.0),
                            nn.leaky_relu(x, negative_slope=0.2), nn.squareplus(x, b=1.0)))
    gelu, elu, celu, leaky, sqp = f(x)
    np.testing.assert_allclose(np.asarray(gelu), x64 * sp.ndtr(x64), **F32)
    np.testing.assert_allclose(np.asarray(elu), np.where(x64 > 0, x64, 0.5 * np.expm1(x64)), **F32)
    np.testing.assert_allclose(np.asarray(celu), np.where(x64 > 0, x64, 2 * np.expm1(x64 / 2)), **F32)
    np.testing.assert_allclose(np.asarray(leaky), np.where(x64 >= 0, x64, 0.2 * x64), **F32)
    np.testing.assert_allclose(np.asarray(sqp), (x64 + np.sqrt(x64 ** 2 + 1)) / 2, **F32)
    # Exact gelu keeps relative accuracy far in the negative tail (erfc, not 1 + erf).
    tail = nn.gelu(np.float32(-12.0), approximate=False)
    np.testing.assert_allclose(float(tail), -12 * sp.ndtr(-12.0), rtol=1e-5)


def test_stable_on_extreme_inputs():
    x = np.array([-1000.0, -100.0, -20.0, 0.0, 20.0, 100.0, 1000.0], np.float32)
    x64 = x.astype(np.float64)
    names = ["softplus", "log_sigmoid", "sigmoid", "silu", "elu", "selu", "celu", "mish", "gelu", "soft_sign"]
    outs = kiln.jit(lambda x: {n: getattr(nn, n)(x) for n in names})(x)
    with np.errstate(all="ignore"):
        for n in names:
            o = np.asarray(outs[n])
            assert np.all(np.isfinite(o)), (n, o)
            np.testing.assert_allclose(o, REFS[n](x64), rtol=2e-6, atol=1e-30, err_msg=n)
    assert float(nn.softplus(np.float32(1000))) == 1000.0
    assert float(nn.log_sigmoid(np.float32(-1000))) == -1000.0
    np.testing.assert_allclose(float(nn.softplus(np.float32(-50))), np.exp(-50.0), rtol=1e-6)


def test_softmax_and_log_softmax_stability():
    x = np.array([[1000.0, 1000.0, 999.0], [-1000.0, -1001.0, -1000.0], [0.0, 0.0, 0.0]], np.float32)
    s, ls = kiln.jit(lambda x: (nn.softmax(x), nn.log_softmax(x)))(x)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(np.asarray(s), sp.softmax(x64, axis=-1), **F32)
    np.testing.assert_allclose(np.asarray(ls), sp.log_softmax(x64, axis=-1), **F32)
    # -inf entries get probability 0 (log-probability -inf).
    y = np.array([[-np.inf, 0.0, 1.0]], np.float32)
    np.testing.assert_allclose(np.asarray(nn.softmax(y)), sp.softmax(y.astype(np.float64), axis=-1), **F32)
    assert np.asarray(nn.log_softmax(y))[0, 0] == -np.inf


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("shape", [(64, 48), (32, 32, 4)])
def test_low_precision_softmax_family_sums_in_float32(shape, jit):
    # float16/bfloat16 sums accumulate in float32 (as kiln.numpy.sum and JAX): summed in bfloat16, a sum of a few
    # thousand terms near 1 is off by its magnitude's spacing (16 at 3072): logsumexp was 1.03 off, softmax 180%.
    import ml_dtypes
    x = (-rng.integers(0, 9, shape) / 64).astype(ml_dtypes.bfloat16)  # x - max(x) is exact in bfloat16
    x64 = x.astype(np.float64)
    fs = (lambda x: nn.softmax(x, axis=None), lambda x: nn.log_softmax(x, axis=None), nn.logsumexp,
          lambda x: nn.logsumexp(x, axis=0))
    got = [np.asarray(f(x) if not jit else kiln.jit(f)(x)).astype(np.float64) for f in fs]
    assert all(g.dtype == np.float64 for g in got)
    # bfloat16 keeps 8 bits: each result is within a few roundings (2**-9 relative) of float64's
    np.testing.assert_allclose(got[0], sp.softmax(x64, axis=None), rtol=2e-2)
    np.testing.assert_allclose(got[1], sp.log_softmax(x64, axis=None), atol=0.07)  # half a spacing at 8 is 0.03
    np.testing.assert_allclose(got[2], sp.logsumexp(x64), atol=0.04)
    np.testing.assert_allclose(got[3], sp.logsumexp(x64, axis=0), atol=0.04)


def test_low_precision_softmax_family_keeps_the_dtype():
    import ml_dtypes
    for dt in (np.float16, ml_dtypes.bfloat16):
        x = rng.standard_normal((4, 8)).astype(dt)
        outs = (nn.softmax(x), nn.log_softmax(x), nn.logsumexp(x, axis=1), kiln.jit(nn.softmax)(x))
        assert [o.dtype for o in outs] == [np.dtype(dt)] * 4


def test_softmax_axes_and_where():
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    x64 = x.astype(np.float64)
    for axis in (0, 1, -1, (0, 2), None):
        ax = tuple(range(3)) if axis is None else axis
        np.testing.assert_allclose(np.asarray(nn.softmax(x, axis=axis)), sp.softmax(x64, axis=ax), **F32)
        np.testing.assert_allclose(np.asarray(nn.log_softmax(x, axis=axis)), sp.log_softmax(x64, axis=ax), **F32)
    mask = rng.uniform(size=(3, 4)) > 0.3
    mask[:, 0] = True
    s = nn.softmax(x, axis=-1, where=mask)
    e = np.where(mask, np.exp(x64 - np.where(mask, x64, -np.inf).max(-1, keepdims=True)), 0)
    np.testing.assert_allclose(np.asarray(s), e / e.sum(-1, keepdims=True), **F32)
    ls = np.asarray(nn.log_softmax(x, axis=-1, where=mask))
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(ls[:, mask], np.log(e / e.sum(-1, keepdims=True))[:, mask], **F32)
    assert np.all(ls[:, ~mask] == -np.inf)


def _logsumexp_ref(a, axis=None, b=None, keepdims=False, where=None):
    a = a.astype(np.float64)
    if where is not None:
        a = np.where(where, a, -np.inf)
    return sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims)


def test_logsumexp_values():
    x = rng.standard_normal((3, 4, 5)).astype(np.float32) * 10
    cases = [dict(), dict(axis=0), dict(axis=-1), dict(axis=(0, 2)), dict(axis=1, keepdims=True),
             dict(axis=None, keepdims=True)]
    outs = kiln.jit(lambda x: [nn.logsumexp(x, **kw) for kw in cases])(x)
    for kw, o in zip(cases, outs):
        e = _logsumexp_ref(x, **kw)
        assert o.shape == np.shape(e), kw
        np.testing.assert_allclose(np.asarray(o), e, rtol=1e-6, atol=1e-6, err_msg=str(kw))
    np.testing.assert_allclose(np.asarray(nn.logsumexp(np.float32(3.0))), 3.0, rtol=1e-6)
    assert float(nn.logsumexp(np.zeros((0,), np.float32))) == -np.inf
    assert float(nn.logsumexp(np.zeros((2, 0), np.float32))) == -np.inf
    np.testing.assert_allclose(np.asarray(nn.logsumexp(np.zeros((2, 0), np.float32), axis=1)),
                               np.float32([-np.inf, -np.inf]))


def test_logsumexp_overflow_and_infinities():
    x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf], [np.inf, 1.0], [-np.inf, 3.0], [np.nan, 1.0],
                  [-1000.0, -1000.0]], np.float32)
    out = np.asarray(kiln.jit(lambda x: nn.logsumexp(x, axis=1))(x))
    np.testing.assert_allclose(out, [1000 + np.log(2), -np.inf, np.inf, 3.0, np.nan, -1000 + np.log(2)], rtol=1e-6)
    assert float(nn.logsumexp(np.float32([-np.inf, -np.inf]))) == -np.inf  # not NaN


def test_logsumexp_b_sign_and_where():
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    out, sign = nn.logsumexp(a, axis=1, b=b, return_sign=True)
    e, es = sp.logsumexp(a.astype(np.float64), axis=1, b=b, return_sign=True)
    np.testing.assert_allclose(np.asarray(out), e, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(sign), es.astype(np.float32))
    neg = nn.logsumexp(np.float32([0.0, 0.0]), b=np.float32([1.0, -2.0]))
    assert np.isnan(float(neg))  # a negative sum without return_sign
    out, sign = nn.logsumexp(np.float32([0.0, 0.0]), b=np.float32([1.0, -2.0]), return_sign=True)
    np.testing.assert_allclose([float(out), float(sign)], [0.0, -1.0], atol=1e-7)
    np.testing.assert_allclose(np.asarray(nn.logsumexp(a, b=2.0)), sp.logsumexp(a, b=2.0), rtol=1e-6)
    mask = np.array([True, False, True, False])
    np.testing.assert_allclose(np.asarray(nn.logsumexp(a, axis=1, where=mask)),
                               _logsumexp_ref(a, axis=1, where=mask), rtol=1e-6)
    out, sign = nn.logsumexp(np.float32([[-np.inf]]), axis=1, return_sign=True, keepdims=True)
    assert out.shape == (1, 1) and sign.shape == (1, 1) and float(out[0, 0]) == -np.inf


def test_logsumexp_lowers_lean():
    """One reduce max, one exp, one reduce sum, one log: nothing redundant around them."""
    x = np.zeros((8, 16), np.float32)
    text = kiln.jit(lambda x: nn.logsumexp(x, axis=-1)).lower(x).as_text()
    assert len(re.findall(r"stablehlo\.reduce\(.*stablehlo\.maximum", text)) == 1, text
    assert len(re.findall(r"stablehlo\.reduce\(.*stablehlo\.add", text)) == 1, text
    assert text.count("stablehlo.exponential") == 1, text
    assert text.count("stablehlo.log ") == 1, text
    assert text.count("stablehlo.subtract") == 1, text
    assert text.count("stablehlo.broadcast_in_dim") <= 2, text
    body = [ln for ln in text.splitlines() if "=" in ln and "stablehlo." in ln]
    assert len(body) <= 14, text


def test_softmax_family_grads_treat_the_max_shift_as_constant():
    """The max subtracted for stability cancels out, so (as in JAX) it is not differentiated: the gradients
    are the analytic ones, ties in the max included, and the backward pass has no compare or count of ties."""
    x = np.float32([[1.0, 3.0, 3.0, -2.0], [0.5, 0.5, 0.5, 0.5], [-1.0, 2.0, 0.0, 1.5]])
    w = np.float32([0.3, -1.0, 2.0, 0.7])
    sm = sp.softmax(x.astype(np.float64), axis=-1)
    cases = [  # fn, analytic gradient of sum(fn(x) * w)
        (nn.softmax, sm * (w - (sm * w).sum(-1, keepdims=True))),
        (nn.log_softmax, w - sm * w.sum()),
        (lambda v: nn.logsumexp(v, axis=-1)[:, None], sm * w.sum()),
    ]
    fns = [kiln.grad(lambda v, f=f: knp.sum(f(v) * w)) for f, _ in cases]
    grads = kiln.jit(lambda v: [g(v) for g in fns])(x)
    for (fn, expected), got in zip(cases, grads):
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-6)
        text = str(kiln.make_jaxpr(kiln.grad(lambda v, f=fn: knp.sum(f(v) * w)))(x))
        assert text.count("reduce_max") == 1 and " eq " not in text, text


def test_one_hot():
    x = np.array([0, 2, 5, -1, 1], np.int32)
    out = nn.one_hot(x, 3)
    assert out.dtype == np.float32 and out.shape == (5, 3)
    np.testing.assert_array_equal(np.asarray(out), (x[:, None] == np.arange(3)).astype(np.float32))
    x2 = np.array([[1, 0], [2, 2]], np.int8)
    o0 = kiln.jit(lambda x: nn.one_hot(x, 4, axis=0, dtype=knp.int32))(x2)
    assert o0.shape == (4, 2, 2) and o0.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(o0), np.moveaxis(x2[..., None] == np.arange(4), -1, 0).astype(np.int32))
    o1 = nn.one_hot(x2, 3, axis=1, dtype=np.bool_)
    np.testing.assert_array_equal(np.asarray(o1), np.moveaxis(x2[..., None] == np.arange(3), -1, 1))
    np.testing.assert_array_equal(np.asarray(nn.one_hot(np.int32(1), 3)), np.float32([0, 1, 0]))
    assert nn.one_hot(np.zeros((0,), np.int32), 3).shape == (0, 3)
    np.testing.assert_array_equal(np.asarray(nn.one_hot(np.float32([1.0, 1.5]), 2)), np.float32([[0, 1], [0, 0]]))
    with kiln.config.override("enable_x64", True):
        assert nn.one_hot(np.int64([1]), 2).dtype == np.float64


def test_one_hot_errors():
    with pytest.raises(TypeError, match=r"kiln.nn.one_hot: num_classes must be a static Python int, got float 3.0"):
        nn.one_hot(np.int32([1]), 3.0)
    with pytest.raises(ValueError, match=r"kiln.nn.one_hot: num_classes must be non-negative, got -2"):
        nn.one_hot(np.int32([1]), -2)
    with pytest.raises(Exception, match=r"kiln.nn.one_hot: num_classes must be a static integer"):
        kiln.jit(lambda x, n: nn.one_hot(x, n))(np.int32([1]), 3)
    with pytest.raises(ValueError, match=r"kiln.nn.one_hot: axis 2 is out of bounds for an array of dimension 2"):
        nn.one_hot(np.int32([1]), 3, axis=2)
    with pytest.raises(TypeError, match=r"kiln.nn.one_hot: argument 0 is a list|kiln.nn.one_hot: argument 0 of type"):
        nn.one_hot([1, 2], 3)


def test_standardize():
    x = rng.standard_normal((4, 6)).astype(np.float32) * 3 + 5
    x64 = x.astype(np.float64)

    def ref(x, axis, eps=1e-5):
        m = x.mean(axis, keepdims=True)
        return (x - m) / np.sqrt(x.var(axis, keepdims=True) + eps)
    a, b, c = kiln.jit(lambda x: (nn.standardize(x), nn.standardize(x, axis=0), nn.standardize(x, axis=None)))(x)
    np.testing.assert_allclose(np.asarray(a), ref(x64, -1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(b), ref(x64, 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(c), ref(x64, None), rtol=1e-5, atol=1e-5)
    d = nn.standardize(x, mean=0.0, variance=1.0, epsilon=0.0)
    np.testing.assert_allclose(np.asarray(d), x, rtol=1e-6)


def test_glu():
    x = rng.standard_normal((3, 6)).astype(np.float32)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(np.asarray(nn.glu(x)), x64[:, :3] * _sigmoid(x64[:, 3:]), **F32)
    np.testing.assert_allclose(np.asarray(nn.glu(x.T, axis=0)), (x64[:, :3] * _sigmoid(x64[:, 3:])).T, **F32)
    with pytest.raises(ValueError, match=r"kiln.nn.glu: the size of axis -1 must be even .* got 5"):
        nn.glu(np.zeros((2, 5), np.float32))


def test_errors():
    with pytest.raises(TypeError, match=r"kiln.nn.relu: argument 0 is a list|kiln.nn.relu: argument 0 of type list"):
        nn.relu([1.0])
    with pytest.raises(TypeError, match=r"kiln.nn.sigmoid: argument 0 of type str"):
        nn.sigmoid("x")
    with pytest.raises(TypeError, match=r"kiln.nn.softplus: not supported for complex inputs"):
        nn.softplus(np.complex64([1j]))
    with pytest.raises(ValueError, match=r"kiln.nn.softmax: axis 2 is out of bounds for an array of dimension 2"):
        nn.softmax(np.zeros((2, 2), np.float32), axis=2)
    with pytest.raises(ValueError, match=r"kiln.nn.logsumexp: repeated axis"):
        nn.logsumexp(np.zeros((2, 2), np.float32), axis=(0, 0))
    with pytest.raises(ValueError, match=r"kiln.nn.softmax: where= of shape \(3,\) does not broadcast"):
        nn.softmax(np.zeros((2, 2), np.float32), where=np.ones(3, bool))
    with pytest.raises(TypeError, match=r"kiln.nn.relu: not supported for boolean inputs"):
        nn.relu(np.array([True]))


def test_python_scalar_arguments():
    np.testing.assert_allclose(float(nn.selu(-1.0)), REFS["selu"](np.float64(-1.0)), rtol=1e-6)
    np.testing.assert_allclose(float(nn.hard_silu(1.0)), REFS["hard_silu"](1.0), rtol=1e-6)
    np.testing.assert_allclose(float(nn.mish(0.5)), REFS["mish"](0.5), rtol=1e-6)
    np.testing.assert_allclose(float(nn.logsumexp(1.0, b=2.0)), 1 + np.log(2), rtol=1e-6)
    assert nn.sigmoid(0.0).weak_type and float(nn.sigmoid(0.0)) == 0.5


def test_fully_masked_rows():
    x = np.ones((2, 3), np.float32)
    mask = np.array([[True, False, True], [False, False, False]])
    s = np.asarray(nn.softmax(x, where=mask))
    np.testing.assert_allclose(s, [[0.5, 0, 0.5], [0, 0, 0]])
    ls = np.asarray(nn.log_softmax(x, where=mask))
    assert np.all(ls[1] == -np.inf)
    assert np.all(np.asarray(nn.logsumexp(x, axis=1, where=mask))[1] == -np.inf)


def test_derivatives_at_nondifferentiable_points_follow_jax():
    """JAX's conventions: relu' (0) = 0, relu6' = 0 at 0 and 6, |x|' (0) = 1 (JAX's abs rule: t where x >= 0),
    max/min split a tie evenly (so clip at a bound gives 1/2), sign/floor/round have derivative 0, where
    differentiates the branch it takes."""
    g = lambda f, x: float(kiln.grad(f)(np.float32(x)))  # noqa: E731
    assert g(nn.relu, 0.0) == 0.0 and g(nn.relu, 1e-3) == 1.0 and g(nn.relu, -1.0) == 0.0
    assert g(nn.relu6, 0.0) == 0.0 and g(nn.relu6, 6.0) == 0.0 and g(nn.relu6, 3.0) == 1.0
    assert g(knp.abs, 0.0) == 1.0 and g(knp.abs, -2.0) == -1.0
    assert g(lambda x: knp.maximum(x, 1.0), 1.0) == 0.5 and g(lambda x: knp.minimum(x, 1.0), 1.0) == 0.5
    assert g(lambda x: knp.clip(x, 0.0, 1.0), 1.0) == 0.5 and g(lambda x: knp.clip(x, 0.0, 1.0), 0.0) == 0.5
    for f in (knp.sign, knp.floor, knp.round, knp.ceil):
        assert g(f, 0.0) == 0.0 and g(f, 1.3) == 0.0
    assert g(lambda x: knp.where(x > 0, x, 0.0), 0.0) == 0.0
    # Batched and jitted, the custom derivative is the same.
    got = kiln.jit(kiln.vmap(kiln.grad(nn.relu)))(np.float32([-1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(got), [0.0, 0.0, 1.0])


def test_logsumexp_leaves_terms_with_zero_weight_out_of_the_shift():
    # as jax.nn.logsumexp: a = 1000 where b = 0 must not swamp the other terms (it gave -inf)
    out = kiln.nn.logsumexp(knp.array([1000.0, 0.0, 1.0]), b=knp.array([0.0, 1.0, 2.0]))
    np.testing.assert_allclose(out, np.log(1.0 + 2.0 * np.e), rtol=1e-6)
    assert np.isneginf(kiln.nn.logsumexp(knp.array([1.0, 2.0]), b=knp.zeros(2)))
    g = kiln.grad(lambda a: kiln.nn.logsumexp(a, b=knp.array([0.0, 1.0, 2.0])))(knp.array([1.0, 2.0, 3.0]))
    w = np.array([0.0, np.e ** 2, 2 * np.e ** 3])
    np.testing.assert_allclose(g, w / w.sum(), rtol=1e-6)
