"""kiln.experimental.jet: Taylor-mode AD (as jax.experimental.jet).

Oracles: closed-form Taylor coefficients; the derivatives d^k/dt^k f(x(t)) at t = 0 along the path
x(t) = x0 + x1 t + x2 t^2/2! + ... obtained by nesting kiln.jvp k times; central finite differences. Values are
checked in float64 (x64 on for the whole module), where the recurrences agree with nested jvp to ~1e-14.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from kiln.frontend.jet import JetError, JetInputError

import kiln
import kiln.numpy as jnp
from kiln import lax
from kiln.experimental.jet import jet

K = 4  # the order of most checks


@pytest.fixture(autouse=True, scope="module")
def _x64():
    # One jitted program checks every function (a static argument): no warning about its many signatures.
    with kiln.config.override("enable_x64", True), kiln.config.override("retrace_warning_limit", 0):
        yield


def _path(primals, series):
    """t -> the arguments along x(t) = x0 + sum_k x_k t^k / k! (series derivative-scaled, as jet takes them)."""
    def args(t):
        out = []
        for x0, terms in zip(primals, series):
            a = x0
            for k, xk in enumerate(terms, 1):
                a = a + xk * (t ** k / math.factorial(k))
            out.append(a)
        return out
    return args


def nested_jvp_derivatives(f, primals, series, order):
    """[d^k/dt^k f(x(t)) at t = 0 for k = 1..order] by nesting kiln.jvp ``order`` times (f with one array
    output): each level maps t -> [g(t), g'(t), ..., g^(k)(t)] to the list one longer, by one jvp."""
    args = _path(primals, series)

    def g(t):
        return [f(*args(t))]

    def one_more(h):
        def derivatives(t):
            values, tangents = kiln.jvp(h, (t,), (jnp.ones_like(t),))
            return values + [tangents[-1]]
        return derivatives

    for _ in range(order):
        g = one_more(g)
    return g(jnp.zeros((), jnp.float64))[1:]


def random_series(rng, primals, order=K):
    return tuple([rng.standard_normal(np.shape(x)) for _ in range(order)] for x in primals)


def _jet_and_nested_jvp(f, order, primals, series):
    out, terms = jet(f, primals, series)
    return out, terms, f(*primals), nested_jvp_derivatives(f, primals, series, order)


# jet and its oracle in one jitted program: one compilation per check (evaluated eagerly, each new primitive
# compiles on its own, which took most of the file's time).
_jet_and_nested_jvp_jitted = kiln.jit(_jet_and_nested_jvp, static_argnums=(0, 1))


def assert_matches_nested_jvp(f, primals, order=3, seed=0, rtol=1e-11):
    """jet's terms against nested jvp's derivatives along a random path."""
    rng = np.random.default_rng(seed)
    primals = tuple(np.asarray(x, np.float64) for x in primals)
    series = random_series(rng, primals, order)
    out, terms, want_out, expected = _jet_and_nested_jvp_jitted(f, order, primals, series)
    np.testing.assert_allclose(np.asarray(out), np.asarray(want_out), rtol=1e-14)
    assert len(terms) == order
    for k, (got, want) in enumerate(zip(terms, expected), 1):
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=rtol, err_msg=f"order {k}")


X = np.array([0.3, 0.7, 1.2])
HALF = X / 2  # inside (-1, 1) for arcsin, arctanh, erfinv

UNARY = {
    "exp": (jnp.exp, X), "log": (jnp.log, X), "log1p": (jnp.log1p, X), "expm1": (jnp.expm1, X),
    "sin": (jnp.sin, X), "cos": (jnp.cos, X), "tan": (jnp.tan, X), "tanh": (jnp.tanh, X),
    "logistic": (kiln.nn.sigmoid, X), "sqrt": (jnp.sqrt, X), "rsqrt": (lax.rsqrt, X), "cbrt": (jnp.cbrt, X),
    "square": (jnp.square, X), "integer_pow 3": (lambda x: x ** 3, X), "integer_pow -2": (lambda x: x ** -2, X),
    "pow const": (lambda x: x ** 2.5, X),
    "sinh": (jnp.sinh, X), "cosh": (jnp.cosh, X), "arctan": (jnp.arctan, X), "arcsin": (jnp.arcsin, HALF),
    "arccos": (jnp.arccos, HALF), "arcsinh": (jnp.arcsinh, X), "arccosh": (jnp.arccosh, X + 1.5),
    "arctanh": (jnp.arctanh, HALF), "erf": (kiln.scipy.special.erf, X), "erfc": (kiln.scipy.special.erfc, X),
    "erfinv": (kiln.scipy.special.erfinv, HALF), "abs": (lambda x: jnp.abs(x - 0.5), X),
}


# Order 4 for the recurrences that solve for each term in turn (an ODE, a quotient, a square root), 3 elsewhere.
FOURTH_ORDER = {"exp", "tanh", "sqrt", "erfinv", "integer_pow -2"}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_rules_match_nested_jvp(name):
    f, x = UNARY[name]
    assert_matches_nested_jvp(f, (x,), order=K if name in FOURTH_ORDER else 3)


BINARY = {
    "mul": lambda a, b: a * b, "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "atan2": jnp.arctan2,
    "max": jnp.maximum, "min": jnp.minimum, "fmod": jnp.fmod, "dot": jnp.dot,
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_rules_match_nested_jvp(name):
    assert_matches_nested_jvp(BINARY[name], (X, X[::-1] + 0.15), order=K if name in ("mul", "div") else 3)


def test_closed_form_coefficients():
    # exp along x(t) = x0 + t: every derivative is exp(x0).
    _, terms = jet(jnp.exp, (0.4,), ((1.0, 0.0, 0.0, 0.0),))
    np.testing.assert_allclose(terms, [np.exp(0.4)] * 4, rtol=1e-14)
    # sin along x0 + t: cos, -sin, -cos, sin.
    x0 = 0.4
    _, terms = jet(jnp.sin, (x0,), ((1.0, 0.0, 0.0, 0.0),))
    np.testing.assert_allclose(terms, [np.cos(x0), -np.sin(x0), -np.cos(x0), np.sin(x0)], rtol=1e-14)
    # 1 / (1 - x) at 0 along x = t: k-th derivative k!.
    _, terms = jet(lambda x: 1 / (1 - x), (0.0,), ((1.0, 0.0, 0.0, 0.0),))
    np.testing.assert_allclose(terms, [1, 2, 6, 24], rtol=1e-14)
    # JAX's docstring example (Faà di Bruno): sin(h(z)) with h(z) = z^3 at z = 0.5.
    h0, h1, h2 = 0.5 ** 3, 3 * 0.5 ** 2, 6 * 0.5
    f0, (f1, f2) = jet(jnp.sin, (h0,), ((h1, h2),))
    np.testing.assert_allclose([f0, f1, f2], [np.sin(h0), np.cos(h0) * h1, -np.sin(h0) * h1 ** 2 + np.cos(h0) * h2],
                               rtol=1e-14)
    # The product of two paths (Leibniz): (x0 + t)(y0 + 2t) has derivatives x0*2 + y0, 4, 0.
    _, terms = jet(lambda x, y: x * y, (1.5, -0.5), ((1.0, 0.0, 0.0), (2.0, 0.0, 0.0)))
    np.testing.assert_allclose(terms, [1.5 * 2 - 0.5, 4.0, 0.0], rtol=1e-14)


def test_factorial_scaled_false_takes_and_gives_taylor_coefficients():
    # exp(t): coefficients 1/k!.
    _, terms = jet(jnp.exp, (0.0,), ((1.0, 0.0, 0.0, 0.0),), factorial_scaled=False)
    np.testing.assert_allclose(terms, [1, 1 / 2, 1 / 6, 1 / 24], rtol=1e-14)
    # The same path given as coefficients or as derivatives gives the same answer, scaled.
    c = [0.3, -0.2, 0.5]
    _, coeffs = jet(jnp.tanh, (0.2,), (c,), factorial_scaled=False)
    _, derivs = jet(jnp.tanh, (0.2,), ([c[k] * math.factorial(k + 1) for k in range(3)],))
    np.testing.assert_allclose([d / math.factorial(k + 1) for k, d in enumerate(derivs)], coeffs, rtol=1e-13)


def test_finite_differences():
    # Second and third derivatives of a composite along a straight line, by central differences.
    def f(x):
        return jnp.sum(jnp.tanh(x) * jnp.exp(-x * x) / (1 + x * x))

    x0, v = np.array([0.2, -0.4, 0.9]), np.array([0.5, 1.0, -0.3])
    _, (d1, d2, d3) = jet(f, (x0,), ((v, 0 * v, 0 * v),))

    def g(t):
        return float(f(x0 + t * v))

    h = 1e-3
    np.testing.assert_allclose(d1, (g(h) - g(-h)) / (2 * h), rtol=1e-5)
    np.testing.assert_allclose(d2, (g(h) - 2 * g(0) + g(-h)) / h ** 2, rtol=1e-5)
    np.testing.assert_allclose(d3, (g(2 * h) - 2 * g(h) + 2 * g(-h) - g(-2 * h)) / (2 * h ** 3), rtol=1e-4)


# -- composite functions ---------------------------------------------------------------------------------------
def test_mlp_layer():
    rng = np.random.default_rng(1)
    w, b = rng.standard_normal((4, 3)), rng.standard_normal(4)
    assert_matches_nested_jvp(lambda w, x: jnp.tanh(w @ x + b), (w, X))


def test_softmax_and_logsumexp():
    assert_matches_nested_jvp(lambda x: kiln.nn.softmax(x * 1.5), (X,))
    assert_matches_nested_jvp(lambda x: jnp.exp(x) / jnp.sum(jnp.exp(x)), (X,))
    assert_matches_nested_jvp(kiln.scipy.special.logsumexp, (X,))


def test_reductions_and_scans():
    assert_matches_nested_jvp(lambda x: jnp.max(x * x) + jnp.min(jnp.sin(x)), (X,))
    assert_matches_nested_jvp(jnp.cumsum, (X,))
    assert_matches_nested_jvp(jnp.cumprod, (X,))
    assert_matches_nested_jvp(jnp.prod, (X,))
    assert_matches_nested_jvp(lambda x: jnp.var(jnp.exp(x)) + jnp.mean(x) ** 3, (X,))
    assert_matches_nested_jvp(lambda x: lax.cummax(jnp.sin(3 * x), axis=0) + lax.cumlogsumexp(x, axis=0), (X,))
    assert_matches_nested_jvp(lambda x: lax.reduce_window(jnp.exp(x), 0.0, lax.add, (2,), (1,), "VALID"), (X,))


def test_structural_and_indexing():
    assert_matches_nested_jvp(lambda x: x[1] * x[::-1][:2].sum() + x[jnp.array([2, 0])].prod(), (X,))
    assert_matches_nested_jvp(lambda x: jnp.where(x > 0.5, jnp.exp(x), x ** 2), (X,))
    assert_matches_nested_jvp(lambda x: jnp.concatenate([x, jnp.sin(x)]).reshape(2, 3).T @ jnp.ones(2), (X,))
    assert_matches_nested_jvp(lambda x: lax.dynamic_update_slice(x, jnp.exp(x[:2]), (1,)), (X,))
    assert_matches_nested_jvp(lambda x: jnp.clip(x, 0.5, 1.0) ** 3 + jnp.linalg.norm(x), (X,))
    assert_matches_nested_jvp(lambda x: jnp.zeros(5).at[jnp.array([1, 1, 3])].add(jnp.exp(x)), (X,))
    # conv_general_dilated: bilinear, as dot_general.
    assert_matches_nested_jvp(
        lambda x, w: lax.conv_general_dilated(jnp.tanh(x).reshape(1, 1, 3), w.reshape(1, 1, 2), (1,), "VALID"),
        (X, X[:2]))


def test_jit_inside_and_jet_of_jitted_function():
    inner = kiln.jit(lambda y: jnp.exp(y) / (1 + y * y))
    assert_matches_nested_jvp(lambda x: inner(x) * x, (X,))
    g = kiln.jit(lambda x: jnp.tanh(x) * x)
    assert_matches_nested_jvp(g, (X,))
    # The jitted function stays one call, of its Taylor-propagated body.
    jaxpr = kiln.make_jaxpr(lambda x, a, b: jet(g, (x,), ((a, b),)))(X, X, X)
    assert "jit_call" in str(jaxpr)


def test_jet_inside_jit_and_transformations_of_jet():
    def f(x, a, b):
        return jet(jnp.sin, (x,), ((a, b),))

    eager = f(X, X, 2 * X)
    jitted = kiln.jit(f)(X, X, 2 * X)
    np.testing.assert_allclose(jitted[0], eager[0], rtol=1e-14)
    for a, b in zip(jitted[1], eager[1]):
        np.testing.assert_allclose(a, b, rtol=1e-14)
    # The second derivative of sin along x + t, differentiated and vectorised: d/dx (-sin x) = -cos x.
    second = lambda x: jet(jnp.sin, (x,), ((1.0, 0.0),))[1][1]  # noqa: E731
    np.testing.assert_allclose(kiln.grad(second)(0.3), -np.cos(0.3), rtol=1e-14)
    np.testing.assert_allclose(kiln.vmap(second)(X), -np.sin(X), rtol=1e-14)


# -- control flow, custom derivatives, checkpoint ------------------------------------------------------------
def test_control_flow():
    assert_matches_nested_jvp(lambda x: lax.cond(jnp.sum(x) > 0, lambda y: jnp.sin(y) * y, jnp.cos, x), (X,))
    assert_matches_nested_jvp(lambda x: lax.cond(jnp.sum(x) < 0, lambda y: jnp.sin(y) * y, lambda y: x, x), (X,))

    def scanned(x):
        def body(c, xi):
            c = jnp.tanh(c * xi + 0.1)
            return c, c * c
        c, ys = lax.scan(body, x[0], x)
        return c + jnp.sum(ys)

    assert_matches_nested_jvp(scanned, (X,))
    assert_matches_nested_jvp(lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * x, x), (X,))
    assert_matches_nested_jvp(
        lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1]) * x), (0, x))[1], (X,),
        order=3)


def test_custom_derivatives_use_the_function():
    @kiln.custom_jvp
    def f(x):
        return jnp.sin(x) * 2

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), 2 * jnp.cos(primals[0]) * tangents[0]

    assert_matches_nested_jvp(lambda x: f(x) * x, (X,))
    assert_matches_nested_jvp(lambda x: kiln.nn.relu(x - 0.5) ** 2 + kiln.nn.gelu(x), (X,))
    assert_matches_nested_jvp(lambda a, b: jnp.logaddexp(a, b) + kiln.nn.softplus(a), (X, X[::-1] + 0.1))

    @kiln.custom_vjp
    def g(x):
        return jnp.exp(x) * x

    g.defvjp(lambda x: (g(x), x), lambda r, ct: (ct,))
    # d^k/dx^k (x e^x) = (x + k) e^x: along x + t the derivatives are exactly those.
    _, terms = jet(g, (X,), ((np.ones(3), np.zeros(3), np.zeros(3)),))
    for k, t in enumerate(terms, 1):
        np.testing.assert_allclose(t, (X + k) * np.exp(X), rtol=1e-13)
    assert_matches_nested_jvp(kiln.checkpoint(lambda x: jnp.sin(jnp.exp(x))), (X,))


# -- outputs, inputs, conventions ------------------------------------------------------------------------------
def test_outputs_that_do_not_depend_on_the_inputs_have_zero_arrays():
    out, terms = jet(lambda x: (jnp.ones((2, 3)), 3.0, x * 0 + jnp.float32(1)), (X,), ((X, X),))
    ones, three, _ = out
    assert [np.shape(t) for t in terms[0]] == [(2, 3), (2, 3)]
    for t in terms[0] + terms[1]:
        assert isinstance(t, kiln.Array)
        assert not np.any(np.asarray(t))
    assert terms[0][0].dtype == ones.dtype
    assert terms[1][0].dtype == np.asarray(three).dtype


def test_pytree_outputs_and_order_zero():
    out, terms = jet(lambda x: {"a": jnp.sin(x), "b": (x, x * 2)}, (0.5,), ((1.0, 0.0),))
    assert set(out) == {"a", "b"}
    np.testing.assert_allclose(terms["a"], [np.cos(0.5), -np.sin(0.5)], rtol=1e-14)
    np.testing.assert_allclose(terms["b"][0], [1.0, 0.0])
    np.testing.assert_allclose(terms["b"][1], [2.0, 0.0])
    out, terms = jet(jnp.exp, (0.5,), ((),))
    np.testing.assert_allclose(out, np.exp(0.5))
    assert terms == []


def test_python_scalars_float32_and_integer_arguments():
    with kiln.config.override("enable_x64", False):
        out, terms = jet(jnp.sin, (np.float32(0.125),), ((np.float32(0.75), 3.0),))
        assert out.dtype == np.float32 and all(t.dtype == np.float32 for t in terms)
        np.testing.assert_allclose(terms[1], -np.sin(0.125) * 0.75 ** 2 + np.cos(0.125) * 3, rtol=1e-6)
    # An integer argument carries no series (as kiln.jvp gives it no tangent): its terms are taken as zero.
    out, (t1,) = jet(lambda a, n: a * n, (0.5, 3), ((0.5,), (1,)))
    np.testing.assert_allclose(t1, 1.5)
    # Integer results (argmax, a cast to int, a comparison) and piecewise-constant ones (floor) have zero terms.
    _, (t1,) = jet(lambda x: jnp.argmax(x) + (x > 0.5).sum() + x.astype(jnp.int32).sum(), (X,), ((X,),))
    assert t1.dtype == np.int64 and t1 == 0
    _, (t1,) = jet(lambda x: jnp.floor(x) * x, (X,), ((X,),))
    np.testing.assert_allclose(t1, np.floor(X) * X)
    # Complex values: exp along z + t.
    z = np.array([0.3 + 0.2j, -0.1 + 1j])
    _, terms = jet(jnp.exp, (z,), ((np.ones(2, complex), np.zeros(2, complex)),))
    np.testing.assert_allclose(terms, [np.exp(z), np.exp(z)], rtol=1e-14)
    # Python control flow on values without a series works, as under kiln.jvp.
    _, (t1,) = jet(lambda a: jnp.sin(a) if a > 0 else a, (0.5,), ((1.0,),))
    np.testing.assert_allclose(t1, np.cos(0.5))


# -- errors -------------------------------------------------------------------------------------------------------
V = np.ones(3)


@pytest.mark.parametrize("call, error, match", [
    (lambda: jet(3, (V,), ((V,),)), TypeError, "first argument must be a callable"),
    (lambda: jet(jnp.sin, V, ((V,),)), TypeError, "primals must be a tuple or list"),
    (lambda: jet(jnp.sin, (V,), V), TypeError, "series must be a tuple or list"),
    (lambda: jet(lambda a, b: a * b, (V, V), ((V,),)), TypeError, r"got 2 primal\(s\) and 1 series"),
    (lambda: jet(lambda: 1.0, (), ()), ValueError, "primals is empty"),
    (lambda: jet(jnp.sin, (V,), (V,)), TypeError, "series of argument 0 must be a list of terms"),
    (lambda: jet(lambda a, b: a * b, (V, V), ((V,), (V, V))), ValueError,
     r"inconsistent lengths for different arguments: \[1, 2\].*same number of terms"),
    (lambda: jet(jnp.sin, ((V, V),), ((V,),)), ValueError, "primal value at position 0 is not an array"),
    (lambda: jet(jnp.sin, (V,), (([V, V],),)), ValueError, "term 0 for argument 0 is not an array"),
    (lambda: jet(jnp.sin, ("a",), (("b",),)), TypeError, "primal value at position 0 is not an array: str"),
    (lambda: jet(jnp.sin, (V,), ((V, np.ones(2)),)), ValueError,
     r"term 1 \(order 2\) of argument 0 has shape \(2,\), but its primal has shape \(3,\)"),
    (lambda: jet(jnp.sin, (V,), ((np.ones(3, np.float32),),)), TypeError,
     r"term 0 \(order 1\) of argument 0 has dtype float32, but its primal has dtype float64.*astype"),
])
def test_bad_input(call, error, match):
    with pytest.raises(JetInputError, match=match) as info:
        call()
    assert isinstance(info.value, error) and isinstance(info.value, kiln.KilnError)


def test_primitive_without_rule():
    with pytest.raises(JetError, match="no Taylor rule for primitive 'lgamma'.*stop_gradient"):
        jet(kiln.scipy.special.gammaln, (X,), ((X,),))
    with pytest.raises(NotImplementedError, match="no Taylor rule for primitive 'sort'"):
        jet(jnp.sort, (X,), ((X,),))
    with pytest.raises(JetError, match="'abs' of a complex value"):
        jet(jnp.abs, (X + 1j,), ((X + 0j,),))
    with pytest.raises(JetError, match="reduce_window with computation 'max'"):
        jet(lambda x: lax.reduce_window(x, -np.inf, lax.max, (2,), (1,), "VALID"), (X,), ((X,),))
    # Without a series flowing in, any primitive works; its results get zero terms.
    out, (t1,) = jet(lambda x: x + jnp.sort(jnp.asarray([3.0, 1.0]))[0], (0.5,), ((1.0,),))
    np.testing.assert_allclose([out, t1], [1.5, 1.0])
    # stop_gradient cuts the series (as JAX's jet).
    _, (t1,) = jet(lambda x: x * kiln.scipy.special.gammaln(kiln.lax.stop_gradient(x)), (2.5,), ((1.0,),))
    np.testing.assert_allclose(t1, math.lgamma(2.5))


def test_concretizing_a_value_that_carries_a_series_raises():
    with pytest.raises(kiln.ConcretizationTypeError, match="float"):
        jet(lambda a: jnp.sin(float(a)) * a, (0.5,), ((1.0,),))
