"""kiln's derivatives (and some forward numbers) bit for bit against JAX's, where JAX is installed (the bench
session's environment; the ``against_jax`` nox session runs this file). The expected values are checked elsewhere
(finite differences, NumPy); these cases only check that kiln rounds as JAX does, found porting JAX's docs pages
(automatic-differentiation.md, jacobian-vector-products.md, higher-order.md, ...), where every cell now prints JAX's
bits.
In one process, kiln imported first (it leaves the process-wide jit states to JAX when JAX comes first)."""
import ml_dtypes
import numpy as np
import pytest

import kiln  # noqa: I001  (before jax)
import kiln.numpy as knp
import kiln.scipy.special  # noqa: F401
import kiln.scipy.stats  # noqa: F401

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("jax.scipy.special")
pytest.importorskip("jax.scipy.stats")

INPUTS = np.float32([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]])
TARGETS = np.array([True, True, False, True])
W0 = np.float32([-2.4424558, -2.0356805, 0.20553663])


def _both(make):
    """``make(lib, np_)`` for kiln and for JAX, each result as bytes."""
    out = []
    for lib, np_ in ((kiln, knp), (jax, jnp)):
        result = make(lib, np_)
        out.append([np.asarray(r).tobytes() for r in lib.tree_util.tree_leaves(result)])
    return out


def _logistic_loss(np_):
    def predict(W, b, inputs):
        return 0.5 * (np_.tanh((np_.dot(inputs, W) + b) / 2) + 1)

    def loss(W, b):
        preds = predict(W, b, INPUTS)
        label_probs = preds * TARGETS + (1 - preds) * (1 - TARGETS)
        return -np_.sum(np_.log(label_probs))
    return loss, predict


@pytest.mark.parametrize("case", ["grad", "grad_b", "jvp", "vjp_tanh", "linearize", "jacfwd", "jacrev", "hessian",
                                  "jit_jacfwd", "jit_hessian"])
def test_derivatives_round_as_jaxs(case):
    def make(lib, np_):
        loss, predict = _logistic_loss(np_)
        W, b = np_.asarray(W0), np_.float32(0.3)
        f = lambda w: predict(w, b, INPUTS)  # noqa: E731
        tangent = np_.asarray(np.float32([0.3, -1.1, 0.7]))
        if case == "grad":
            return lib.grad(loss)(W, b)
        if case == "grad_b":
            return lib.grad(loss, (0, 1))(W, b)
        if case == "jvp":
            return lib.jvp(f, (W,), (tangent,))
        if case == "vjp_tanh":
            z = np_.asarray(np.float32([0.5, 3.5, -2.7, 0.08]))
            return lib.vjp(np_.tanh, z)[1](np_.asarray(np.float32([0.3, -1.2, 0.7, 2.0])))
        if case == "linearize":
            return lib.linearize(f, W)[1](tangent)
        if case == "jacfwd":
            return lib.jacfwd(f)(W)
        if case == "jacrev":
            return lib.jacrev(f)(W)
        if case == "hessian":
            return lib.hessian(loss)(W, b)
        if case == "jit_jacfwd":
            return lib.jit(lib.jacfwd(lambda w, a: np_.tanh(np_.dot(a, w) / 2)))(W, np_.asarray(INPUTS))
        return lib.jit(lib.jacfwd(lib.jacrev(f)))(W)
    ours, theirs = _both(make)
    assert ours == theirs


def test_nested_eager_derivatives_round_as_jaxs():
    # grad of grad: the known half of a library function's call, differentiated again, keeps its call marked inline
    # (JAX's pjit keeps inline=True): found porting JAX's FAQ and README (its third derivative of tanh)
    def make(lib, np_):
        g = lambda x: 1.0 / (1.0 + x * x)  # noqa: E731
        h = lambda x: 1.0 / (1.0 + np_.exp(x))  # noqa: E731
        t = lambda x: (np_.exp(x) - np_.exp(-x)) / (np_.exp(x) + np_.exp(-x))  # noqa: E731
        out = [lib.grad(lib.grad(g))(float(x)) for x in np.linspace(0.1, 3, 30).astype(np.float32)]
        out += [lib.grad(lib.grad(lib.grad(h)))(1.0), lib.grad(lib.grad(lib.grad(t)))(0.7),
                lib.grad(lib.grad(lib.grad(np_.tanh)))(1.0),
                lib.hessian(lambda x: np_.sum(np_.sin(x) * np_.arctan(x)))(np_.arange(3.0) + 0.5)]
        return out
    ours, theirs = _both(make)
    assert ours == theirs


# -- found porting JAX's docs: forward numbers too (low-precision reductions, sigmoid, stats), and derivatives of
# functions JAX builds from its square and integer_pow primitives

_RS = np.random.RandomState(0)
LOW_X, LOW_W = _RS.randn(256, 48), np.abs(_RS.randn(256, 48))


def _bf16_between(lo, hi):
    """Every bfloat16 value in ``[lo, hi]``."""
    bits = np.arange(2**16, dtype=np.uint16).view(ml_dtypes.bfloat16)
    v = bits.astype(np.float32)
    return bits[np.isfinite(v) & (v >= lo) & (v <= hi)]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", ["softmax", "softmax_axis0", "log_softmax", "logsumexp", "logsumexp_all",
                                  "special_logsumexp", "special_softmax", "norm", "norm_axis", "norm_ord1",
                                  "norm_matrix_inf", "average", "average_axis", "average_returned"])
def test_low_precision_reductions_accumulate_as_jaxs(case, jit, dtype):
    # JAX's jnp.sum accumulates float16/bfloat16 in float32 (and casts back); so do softmax & co and norm. Eagerly
    # JAX runs softmax and logsumexp op by op (they are not jitted), each op rounding to the dtype: so does kiln.
    dt = getattr(ml_dtypes, dtype, None) or np.dtype(dtype)

    def make(lib, np_):
        nn, special = lib.nn, lib.scipy.special
        fns = {
            "softmax": lambda x, w: nn.softmax(x), "softmax_axis0": lambda x, w: nn.softmax(x, axis=0),
            "log_softmax": lambda x, w: nn.log_softmax(x), "logsumexp": lambda x, w: nn.logsumexp(x, axis=-1),
            "logsumexp_all": lambda x, w: nn.logsumexp(x),
            "special_logsumexp": lambda x, w: special.logsumexp(x, axis=0),
            "special_softmax": lambda x, w: special.softmax(x, axis=0),
            "norm": lambda x, w: np_.linalg.norm(x), "norm_axis": lambda x, w: np_.linalg.norm(x, axis=-1),
            "norm_ord1": lambda x, w: np_.linalg.norm(x, ord=1, axis=0),
            "norm_matrix_inf": lambda x, w: np_.linalg.norm(x, ord=np.inf),
            "average": lambda x, w: np_.average(x, weights=w),
            "average_axis": lambda x, w: np_.average(x, axis=1, weights=w[0]),
            "average_returned": lambda x, w: np_.average(x, axis=0, weights=w, returned=True, keepdims=True),
        }
        f = fns[case]
        return (lib.jit(f) if jit else f)(np_.asarray(LOW_X.astype(dt)), np_.asarray(LOW_W.astype(dt)))
    ours, theirs = _both(make)
    assert ours == theirs


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_sigmoid_rounds_as_jaxs(dtype, jit):
    # JAX lowers logistic as 1 / (1 + exp(-x)) (no stablehlo.logistic): bfloat16 5.28125 gives 0.992188, not 0.996094
    if dtype == "bfloat16":
        x = _bf16_between(-40, 40)
    else:
        x = np.concatenate([np.linspace(-120, 120, 200001), [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(dtype)

    def make(lib, np_):
        f = lib.jit(lib.nn.sigmoid) if jit else lib.nn.sigmoid
        return f(np_.asarray(x)), lib.jit(lib.grad(lambda v: np_.sum(lib.nn.sigmoid(v))))(np_.asarray(x[:999]))
    ours, theirs = _both(make)
    assert ours == theirs


@pytest.mark.parametrize("case", ["grad_sum", "grad_eager", "vmap_grad", "complex", "int", "jvp"])
def test_square_rounds_as_jaxs(case):
    # jnp.square is JAX's square primitive: its derivative is g * (2 * x), not the product rule's g*x + g*x
    x = np.linspace(0.1, 3, 1000, dtype=np.float32)

    def make(lib, np_):
        if case == "grad_sum":
            return lib.jit(lib.grad(lambda x: np_.sum(np_.square(x) / 3.0 + np_.sin(x))))(x)
        if case == "grad_eager":
            return lib.grad(lambda x: np_.sum(lib.lax.square(x) / 3.0 + np_.sin(x)))(x)
        if case == "vmap_grad":
            return lib.jit(lib.vmap(lib.grad(lambda v: np_.square(v) * np_.cos(v))))(x)
        if case == "complex":
            z = (x[:-1:2] - 1.3 * x[1::2] * 1j).astype(np.complex64)
            return np_.square(z), lib.jit(np_.square)(z)
        if case == "int":
            return lib.jit(np_.square)(np.arange(-50, 50, dtype=np.int32))
        return lib.jit(lambda x, t: lib.jvp(lambda v: np_.square(np_.sin(v)) + v, (x,), (t,)))(x, x[::-1])
    ours, theirs = _both(make)
    assert ours == theirs


def test_gelu_rounds_as_jaxs():
    # the tanh approximation's cube is x ** 3 (integer_pow), whose derivative is 3 * x**2; eagerly JAX runs gelu op
    # by op (it is not jitted), which rounds some float32 values unlike one compiled program: so does kiln
    x = np.linspace(-3, 3, 1001, dtype=np.float32)
    y = (np.random.RandomState(0).randn(16, 64) * 3).astype(np.float32)
    ours, theirs = _both(lambda lib, np_: (
        lib.jit(lib.vmap(lib.grad(lib.nn.gelu)))(x), lib.jit(lib.grad(lambda v: np_.sum(lib.nn.gelu(v))))(x),
        lib.nn.gelu(y), lib.vmap(lib.grad(lib.nn.gelu))(y.ravel()),
        lib.grad(lambda v: np_.sum(np_.sin(lib.nn.gelu(v))))(y),
        lib.nn.gelu(y, approximate=False), lib.jit(lib.grad(lambda v: np_.sum(lib.nn.gelu(v, approximate=False))))(y)))
    assert ours == theirs


def test_complex_norm_rounds_as_jaxs():
    # sqrt(sum(real(x * conj(x)))), JAX's formula (|x| * |x| rounds differently)
    rs = np.random.RandomState(0)
    z = (rs.randn(64, 48) + 1j * rs.randn(64, 48)).astype(np.complex64)
    ours, theirs = _both(lambda lib, np_: (np_.linalg.norm(z), np_.linalg.norm(z, axis=1),
                                           lib.jit(lambda z: np_.linalg.norm(z, axis=0))(z),
                                           lib.grad(lambda z: np_.linalg.norm(z).real)(z)))
    assert ours == theirs


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_norm_logpdf_rank_promotes_as_jaxs(jit):
    # loc and scale of shape (n,) beside x of shape (m, n) become (1, n), not (m, n): log(2 pi scale**2) is
    # computed once per column, as in JAX (the numbers differ from computing it on the full shape)
    rs = np.random.RandomState(0)
    x = rs.randn(64, 1000).astype(np.float32)
    loc, scale = rs.randn(1000).astype(np.float32), np.exp(rs.randn(1000)).astype(np.float32)

    def make(lib, np_):
        norm = lib.scipy.stats.norm
        f = lib.jit(norm.logpdf) if jit else norm.logpdf
        return f(x, loc, scale), f(x, loc, np.float32(2.0)), f(x[:, :1], loc[None], scale)
    ours, theirs = _both(make)
    assert ours == theirs


@pytest.mark.parametrize("case", ["default", "fast", "stable", "where", "eager", "grad"])
def test_standardize_rounds_as_jaxs(case):
    # JAX 0.10's default variance is the one-pass mean(x**2) - mean(x)**2, clipped at 0 ("fast")
    x = np.random.RandomState(0).randn(8, 64).astype(np.float32) * 3 + 10
    mask = np.random.RandomState(1).rand(8, 64) > 0.3

    def make(lib, np_):
        s = lib.nn.standardize
        if case == "default":
            return lib.jit(s)(x)
        if case == "fast":
            return lib.jit(lambda x: s(x, axis=0, algorithm="fast"))(x)
        if case == "stable":
            return lib.jit(lambda x: s(x, algorithm="stable"))(x)
        if case == "where":  # (the mask an argument: XLA folds a constant one into the program, in JAX only)
            return lib.jit(lambda x, m: s(x, where=m))(x, mask)
        if case == "eager":
            return s(x), s(x, axis=None, algorithm="stable")
        return lib.jit(lib.grad(lambda x: np_.sum(np_.sin(s(x)))))(x)
    ours, theirs = _both(make)
    assert ours == theirs


def test_dot_general_preferred_element_type_grads_as_jaxs():
    # bfloat16 operands accumulated in float32: the float32 cotangent meets the bfloat16 other operand, which is
    # converted to float32 first (JAX's lowering of a mixed dot_general); kiln raised a dtype error here
    rs = np.random.RandomState(0)
    w = rs.randn(64, 32).astype(ml_dtypes.bfloat16)
    x = rs.randn(16, 64).astype(ml_dtypes.bfloat16)

    def make(lib, np_):
        dot = lambda w, x: lib.lax.dot_general(x, w, (((1,), (0,)), ((), ())), preferred_element_type=np.float32)  # noqa: E731
        return lib.jit(lib.grad(lambda w, x: np_.sum(np_.tanh(dot(w, x))), (0, 1)))(w, x)
    ours, theirs = _both(make)
    assert ours == theirs


# -- cumulative reductions: JAX's primitives lower to one reduce_window over the whole axis (kiln's former Hillis-
# Steele composition differed from JAX's cumsum of f32[8, 1000] on 81% of the elements); their derivatives go
# through JAX's associative_scan, op for op

_CUM = np.random.RandomState(7).randn(8, 1000).astype(np.float32)
_CUM_NEAR_ONE = (1 + 0.05 * _CUM).astype(np.float32)  # (cumprod: no overflow to inf or underflow to 0)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
def test_cumulative_reductions_round_as_jaxs(name, jit):
    x = _CUM_NEAR_ONE if name == "cumprod" else _CUM

    def make(lib, np_):
        f = getattr(lib.lax, name)
        run = lib.jit(f, static_argnames=("axis", "reverse")) if jit else f
        return [run(x, axis=1), run(x, axis=1, reverse=True), run(x[:, :37], axis=0), run(x[:, :37], axis=0,
                                                                                       reverse=True)]
    ours, theirs = _both(make)
    assert ours == theirs


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", ["cumprod", "cummax", "cummin", "cumlogsumexp"])
def test_cumulative_reduction_derivatives_round_as_jaxs(name, jit):
    # w is an argument: closed over, kiln hands it to the compiled program as a parameter where JAX embeds it as a
    # constant, and XLA folds part of JAX's program (it then fuses, and contracts into FMAs, differently)
    x = _CUM_NEAR_ONE if name == "cumprod" else _CUM
    w = np.random.RandomState(8).randn(8, 1000).astype(np.float32)

    def make(lib, np_):
        f = getattr(lib.lax, name)
        wrap = lib.jit if jit else (lambda g: g)
        grad = wrap(lib.grad(lambda x, w: np_.sum(f(x, axis=1) * w)))(x, w)
        grad_rev = wrap(lib.grad(lambda x, w: np_.sum(f(x, axis=0, reverse=True) * w)))(x[:, :37], w[:, :37])
        jvp = wrap(lambda x, t: lib.jvp(lambda x: f(x, axis=1, reverse=True), (x,), (t,)))(x[:, :100], w[:, :100])
        return [grad, grad_rev, jvp]
    ours, theirs = _both(make)
    assert ours == theirs


@pytest.mark.parametrize("how", ["jit", "vmap"])
def test_a_users_repeated_expression_rounds_as_jaxs(how):
    # kiln's CSE leaves a user's repeated s * s to XLA, as JAX's undeduplicated program does: merged early, XLA
    # divided by the shared broadcast instead of multiplying by its reciprocal (a quarter of the elements differed)
    rs = np.random.RandomState(0)
    x, s = rs.randn(64, 1000).astype(np.float32), np.exp(rs.randn(1000)).astype(np.float32)

    def make(lib, np_):
        f = lambda x, s: np_.log(s * s) + x / (s * s)  # noqa: E731
        return lib.jit(f)(x, s) if how == "jit" else lib.jit(lib.vmap(f, (0, None)))(x, s)
    ours, theirs = _both(make)
    assert ours == theirs


@pytest.mark.parametrize("jit", [False, True])
def test_abs_derivatives_are_jaxs_bits(jit):
    # JAX's rule operation for operation: Re(t * conj(z) / |z|) for complex z (kiln's Re(conj(z) t) / |z| was an ulp
    # off), and t or -t by the sign of x, 1 at 0
    z = np.array([-0.1554926 + 0.09329557j, 0j, 3 + 4j, 1e-20 - 2j], np.complex64)
    x = np.array([-2.0, 0.0, 0.5, -0.0], np.float32)

    def make(lib, np_):
        wrap = lib.jit if jit else (lambda f: f)
        return [wrap(lib.grad(lambda z: np_.sum(np_.abs(z))))(z), wrap(lib.vmap(lib.grad(np_.abs)))(x)]
    ours, theirs = _both(make)
    assert ours == theirs
