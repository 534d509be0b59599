"""JAX's docs page docs/new_docs/101/transformations.md ("Transformations: `grad` and `vmap`"), ported to kiln by
changing imports (tests/examples/jax_ported/docs_transformations_101.py), checked against oracles that do not
involve JAX: the derivatives in closed form (the polynomial's, tanh's, the logistic regression loss's: its gradient
is the residual `preds - targets` against the inputs), float64 NumPy for the values, float64 central differences,
Python loops of `np.correlate` for the vmapped convolutions, NumPy's pairwise distances, a float64 replay of the
Newton iteration, the page's printed text and its claims about the recorded programs (what the jaxprs contain, that
vmap's program keeps its size as the batch grows while the Python loop's grows with it, what each transformation
does with a data-dependent `if`).

Not ported as it runs in JAX (a strict xfail): the `.val` cell reads a vmap tracer's batch of values, JAX's
internals; kiln's vmap traces abstractly (it records one program for the batch, as jit does), and its tracers have
no `.val`.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from ported import count_primitives, fd_jacobian, load

import kiln
import kiln.numpy as jnp

INPUTS = np.array([[0.52, 1.12, 0.77],
                   [0.88, -1.08, 0.15],
                   [0.52, 0.06, -1.30],
                   [0.74, -2.49, 1.39]])
TARGETS = np.array([1.0, 1.0, 0.0, 1.0])
W = np.array([0.1, 0.4, -0.3])
B = 0.5


@pytest.fixture(scope="module")
def page():
    return load("docs_transformations_101")


def _run(fn, *args):
    """(what fn returns, what it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue()


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _np_loss(w, b, x=INPUTS, t=TARGETS):
    p = _sigmoid(x @ w + b)
    return -np.sum(np.log(p * t + (1 - p) * (1 - t)))


def _np_grads(w=W, b=B, x=INPUTS, t=TARGETS):
    """The loss's gradient in closed form: d(-log label_prob)/dz is pred - target, for z = x @ w + b."""
    r = _sigmoid(x @ w + b) - t
    return x.T @ r, np.sum(r)


def _f32(a, weak=False, shape=None):
    assert isinstance(a, kiln.Array) and (a.dtype, a.weak_type) == (np.float32, weak), (a.dtype, a.weak_type)
    if shape is not None:
        assert a.shape == shape
    return np.asarray(a, np.float64)


# ---------------------------------------------- Automatic differentiation with `jax.grad` ---------------------------

def test_grad_of_tanh(page):
    grad_tanh, out = _run(page.grad_tanh_block)
    value = grad_tanh(2.0)
    np.testing.assert_allclose(_f32(value, weak=True, shape=()), 1 - np.tanh(2.0) ** 2, rtol=1e-6)
    assert out == str(value) + "\n"
    np.testing.assert_allclose(float(out), 1 - np.tanh(2.0) ** 2, rtol=1e-6)
    for x in (-1.5, 0.0, 0.3, 4.0):  # "grad(f)(x) is the gradient value" at any x (1 - tanh² in float32: atol)
        np.testing.assert_allclose(float(grad_tanh(x)), 1 - np.tanh(x) ** 2, rtol=1e-5, atol=1e-6)


def test_higher_order_derivatives(page):
    (f, dfdx, d2fdx, d3fdx), out = _run(page.higher_order_block)
    assert out == "4.0\n10.0\n6.0\n"  # the page's comments: 4, 10, 6
    for x in (-2.0, -0.5, 0.0, 1.5, 3.0):
        np.testing.assert_allclose(float(f(x)), x**3 + 2 * x**2 - 3 * x + 1, rtol=1e-6)
        np.testing.assert_allclose(float(dfdx(x)), 3 * x**2 + 4 * x - 3, rtol=1e-6)
        np.testing.assert_allclose(float(d2fdx(x)), 6 * x + 4, rtol=1e-6)
        assert float(d3fdx(x)) == 6.0
        assert dfdx(x).weak_type and d3fdx(x).dtype == np.float32


# ---------------------------------------------- Differentiating with respect to different arguments ----------------

def test_the_toy_dataset(page):
    np.testing.assert_allclose(_f32(page.inputs, shape=(4, 3)), INPUTS, rtol=1e-7)
    assert page.targets.dtype == np.bool_ and page.targets.tolist() == [True, True, False, True]
    np.testing.assert_allclose(_f32(page.W, shape=(3,)), W, rtol=1e-7)
    assert page.b == 0.5
    np.testing.assert_allclose(_f32(page.loss(page.W, page.b)), _np_loss(W, B), rtol=1e-6)
    # sigmoid via tanh is the logistic function
    z = np.linspace(-6, 6, 13)
    np.testing.assert_allclose(page.sigmoid(jnp.asarray(z, np.float32)), _sigmoid(z), rtol=1e-5, atol=1e-7)


def test_argnums(page):
    (w01, b01), out = _run(page.argnums_block)
    gw, gb = _np_grads()
    np.testing.assert_allclose(_f32(w01, shape=(3,)), gw, rtol=1e-5)
    np.testing.assert_allclose(_f32(b01, weak=True, shape=()), gb, rtol=1e-5)  # b is a Python float: weakly typed
    # and the closed form is the derivative: central differences of the float64 loss
    np.testing.assert_allclose(fd_jacobian(lambda w: _np_loss(w, B), W), gw, rtol=1e-7)
    np.testing.assert_allclose(fd_jacobian(lambda b: _np_loss(W, b), B), gb, rtol=1e-7)
    # argnums=0, the default, 1 and (0, 1) print the same gradients, digit for digit
    assert out.splitlines() == [f"W_grad={w01!r}", f"W_grad={w01!r}", f"b_grad={b01!r}", f"W_grad={w01!r}",
                                f"b_grad={b01!r}"]
    assert out.splitlines()[0].startswith("W_grad=Array([") and out.splitlines()[0].endswith("dtype=float32)")
    assert out.splitlines()[2].endswith("dtype=float32, weak_type=True)")


def test_value_and_grad(page):
    (value, (gw, gb)), out = _run(page.value_and_grad_block)
    np.testing.assert_allclose(_f32(value, shape=()), _np_loss(W, B), rtol=1e-6)
    assert out == str(value) + "\n"
    egw, egb = _np_grads()
    np.testing.assert_allclose(_f32(gw), egw, rtol=1e-5)
    np.testing.assert_allclose(_f32(gb, weak=True), egb, rtol=1e-5)


def test_has_aux(page):
    (gw, preds), out = _run(page.has_aux_block)
    expected = _sigmoid(INPUTS @ W + B)
    np.testing.assert_allclose(_f32(preds, shape=(4,)), expected, rtol=1e-6)
    assert out == f"{np.asarray(preds)}\n"
    np.testing.assert_allclose(_f32(gw, shape=(3,)), _np_grads()[0], rtol=1e-5)  # the aux output is not differentiated


def test_finite_differences(page):
    (numerical, autodiff), out = _run(page.finite_differences_block)
    gb = _np_grads()[1]
    np.testing.assert_allclose(_f32(autodiff, weak=True), gb, rtol=1e-5)
    # a float32 difference quotient with eps=1e-4: loss (~3.5) has ulps of 2.4e-7, so the quotient is good to ~5e-3
    assert abs(_f32(numerical) - gb) < 5e-3
    assert out.splitlines() == ["b_grad_numerical " + str(numerical), "b_grad_autodiff " + str(autodiff)]


def test_check_grads(page):
    assert page.check_grads_block() is None
    # it does check: a function whose derivative rule is wrong fails it, at first and at second order
    @kiln.custom_jvp
    def wrong_sin(x):
        return jnp.sin(x)

    @wrong_sin.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), 1.1 * jnp.cos(x) * t

    with pytest.raises(AssertionError):
        page.check_grads(lambda W, b: jnp.sum(wrong_sin(W)) + b, (page.W, page.b), order=1)
    page.check_grads(lambda W, b: jnp.sum(jnp.sin(W)) + b, (page.W, page.b), order=2)


# ---------------------------------------------- Automatic vectorization with `jax.vmap` -----------------------------

def _np_convolve(x, w):
    """The page's convolve: output[i-1] = dot(x[i-1:i+2], w), i.e. NumPy's correlation, mode 'valid'."""
    return np.correlate(x, w, "valid")


RNG = np.random.default_rng(0)
XS = RNG.normal(size=(4, 7)).astype(np.float32)
WS = RNG.normal(size=(4, 3)).astype(np.float32)


def test_convolve(page):
    np.testing.assert_array_equal(_f32(page.convolve_block(), shape=(3,)), [11.0, 20.0, 29.0])
    assert _np_convolve(np.arange(5.0), np.array([2.0, 3.0, 4.0])).tolist() == [11.0, 20.0, 29.0]
    np.testing.assert_allclose(page.convolve(jnp.asarray(XS[0]), jnp.asarray(WS[0])), _np_convolve(XS[0], WS[0]),
                               rtol=1e-5, atol=1e-6)


def test_batched_convolutions(page):
    expected = np.array([[11.0, 20.0, 29.0]] * 2)
    for block in (page.manually_batched_block, page.auto_batch_block, page.in_axes_none_block):
        np.testing.assert_array_equal(_f32(block(), shape=(2, 3)), expected)
    np.testing.assert_array_equal(_f32(page.in_axes_1_block(), shape=(3, 2)), expected.T)  # out_axes=1
    # the page's batch repeats one example: distinct examples, against a Python loop
    loop = np.stack([_np_convolve(x, w) for x, w in zip(XS, WS)])
    xs, ws = jnp.asarray(XS), jnp.asarray(WS)
    np.testing.assert_allclose(page.manually_batched_convolve(xs, ws), loop, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kiln.vmap(page.convolve)(xs, ws), loop, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kiln.vmap(page.convolve, in_axes=1, out_axes=1)(xs.T, ws.T), loop.T, rtol=1e-5,
                               atol=1e-6)
    shared = np.stack([_np_convolve(x, WS[0]) for x in XS])
    np.testing.assert_allclose(kiln.vmap(page.convolve, in_axes=[0, None])(xs, ws[0]), shared, rtol=1e-5, atol=1e-6)


def test_all_pairs(page):
    d = page.all_pairs_block()
    p = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    expected = np.sqrt(((p[:, None] - p[None]) ** 2).sum(-1))
    np.testing.assert_allclose(_f32(d, shape=(3, 3)), expected, rtol=1e-6)
    assert expected[1, 2] == np.sqrt(5.0)


def test_per_example_grads(page):
    (wg, bg), out = _run(page.per_example_grads_block)
    r = _sigmoid(INPUTS @ W + B) - TARGETS  # one residual per example
    np.testing.assert_allclose(_f32(wg, shape=(4, 3)), r[:, None] * INPUTS, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(_f32(bg, weak=True, shape=(4,)), r, rtol=1e-5)
    # per example, rather than summed over the batch: their sum is the loss's gradient
    gw, gb = _np_grads()
    np.testing.assert_allclose(np.asarray(wg).sum(0), gw, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(bg).sum(), gb, rtol=1e-5)
    assert out == f"{np.asarray(wg)}\n{np.asarray(bg)}\n"
    for i in range(4):  # each row is the example's own gradient: central differences of its float64 loss
        fd = fd_jacobian(lambda w: _np_loss(w, B, INPUTS[i:i + 1], TARGETS[i:i + 1]), W)
        np.testing.assert_allclose(np.asarray(wg[i]), fd, rtol=1e-5, atol=1e-7)


# ---------------------------------------------- How transformations work: tracing ----------------------------------

def test_printing_a_tracer(page):
    (f, result), out = _run(page.print_tracer_block)
    # printed once (vmap traces the function a single time), a tracer standing for a batch of three int32[]
    assert out == "x = VmapTracer(aval=int32[], batched=int32[3])\njax.typeof(x) = int32[]\n"
    assert result.dtype == np.int32 and result.tolist() == [0, 2, 4]
    assert str(kiln.typeof(jnp.arange(3)[0])) == "int32[]"
    # the same function on a batch of seven float32 rows: still one trace, one print of each line
    res, out = _run(kiln.vmap(f), jnp.ones((7, 2)))
    assert out == "x = VmapTracer(aval=float32[2], batched=float32[7,2])\njax.typeof(x) = float32[2]\n"
    np.testing.assert_array_equal(res, np.full((7, 2), 2.0))


def test_the_jaxpr_of_g(page):
    closed = page.g_jaxpr_block()
    assert str(closed) == "{ lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }"
    # "specialized to the JAX types of the inputs": one float32[] input; it computes 2 sin(x) for any x
    for x in (-1.0, 0.25, 3.0):
        (y,) = kiln.core.eval_jaxpr(closed.jaxpr, closed.consts, jnp.float32(x))
        np.testing.assert_allclose(float(y), 2 * np.sin(x), rtol=1e-6)


def _prims(closed):
    return [e.primitive.name for e in closed.jaxpr.eqns]


def _avals(closed):
    return [(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars]


def test_the_jaxpr_of_convolve(page):
    closed = page.convolve_jaxpr_block()
    assert _avals(closed) == [((5,), np.float32), ((3,), np.float32)]
    counts = count_primitives(closed.jaxpr)
    # "Three windows, three dot products, one concatenate"
    assert (counts["slice"], counts["dot_general"], counts["concatenate"]) == (3, 3, 1)
    windows = [e.params["start_indices"] for e in closed.jaxpr.eqns if e.primitive.name == "slice"]
    assert windows == [(0,), (1,), (2,)]
    x, w = RNG.normal(size=5).astype(np.float32), RNG.normal(size=3).astype(np.float32)
    (y,) = kiln.core.eval_jaxpr(closed.jaxpr, closed.consts, jnp.asarray(x), jnp.asarray(w))
    np.testing.assert_allclose(y, _np_convolve(x, w), rtol=1e-5, atol=1e-6)


def test_the_vmapped_jaxpr_is_the_same_program_with_a_batch_axis(page):
    single, batched = page.convolve_jaxpr_block(), page.vmap_convolve_jaxpr_block()
    assert _avals(batched) == [((2, 5), np.float32), ((2, 3), np.float32)]
    # "the same program, operation for operation": the same primitives, each result with a leading batch axis
    assert _prims(batched) == _prims(single)
    for es, eb in zip(single.jaxpr.eqns, batched.jaxpr.eqns):
        assert [v.aval.shape for v in eb.outvars] == [(2, *v.aval.shape) for v in es.outvars]
    # "each dot_general picked up a batch dimension"
    dots = [e.params["dimension_numbers"] for e in batched.jaxpr.eqns if e.primitive.name == "dot_general"]
    assert len(dots) == 3 and all(tuple(map(tuple, dn[1])) == ((0,), (0,)) for dn in dots)
    (y,) = kiln.core.eval_jaxpr(batched.jaxpr, batched.consts, jnp.asarray(XS[:2, :5]), jnp.asarray(WS[:2]))
    np.testing.assert_allclose(y, np.stack([_np_convolve(x, w) for x, w in zip(XS[:2, :5], WS[:2])]), rtol=1e-5,
                               atol=1e-6)


def test_the_python_loop_copies_the_body_per_example(page):
    closed = page.manually_batched_jaxpr_block()
    assert count_primitives(closed.jaxpr)["dot_general"] == 6  # "six dot_generals, not three"
    # "growing linearly with the batch size", where vmap's program stays the same size
    for n in (1, 3, 4):
        xs, ws = jnp.asarray(XS[:n, :5]), jnp.asarray(WS[:n])
        loop = kiln.jit(page.manually_batched_convolve).trace(xs, ws).jaxpr
        vmapped = kiln.jit(kiln.vmap(page.convolve)).trace(xs, ws).jaxpr
        assert count_primitives(loop.jaxpr)["dot_general"] == 3 * n
        assert count_primitives(vmapped.jaxpr)["dot_general"] == 3
        assert len(vmapped.jaxpr.eqns) == len(page.convolve_jaxpr_block().jaxpr.eqns)
    (y,) = kiln.core.eval_jaxpr(closed.jaxpr, closed.consts, jnp.asarray(XS[:2, :5]), jnp.asarray(WS[:2]))
    np.testing.assert_allclose(y, np.stack([_np_convolve(x, w) for x, w in zip(XS[:2, :5], WS[:2])]), rtol=1e-5,
                               atol=1e-6)


# ---------------------------------------------- Consequence 2: traced code can't always specialize ------------------

@pytest.mark.xfail(strict=True, raises=AttributeError,
                   reason="kiln's vmap traces abstractly (one recorded program for the batch): its VmapTracer has "
                          "no `.val` (JAX's internals, which JAX prints as [0. 1. 2.])")
def test_peeking_at_a_vmap_tracers_values(page):
    _, out = _run(page.tracer_val_block)
    assert out == "[0. 1. 2.]\n"


def test_a_python_if_on_a_vmap_tracer_is_an_error(page):
    with pytest.raises(kiln.errors.TracerBoolConversionError) as info:
        page.absolute_if_block()
    assert isinstance(info.value, TypeError)
    assert "where" in str(info.value) and "vmap" in str(info.value)  # "The error message links to the fix"


def test_absolute_with_where(page):
    y = page.absolute_where_block()
    x = np.arange(-2.0, 3.0, dtype=np.float32)
    expected = np.where(x > 0, x, -x)
    np.testing.assert_array_equal(_f32(y, shape=(5,)), np.abs(x))
    np.testing.assert_array_equal(np.signbit(y), np.signbit(expected))  # -x at 0 is -0.0, as NumPy's


# ---------------------------------------------- `grad` works with Python control flow ------------------------------

def test_grad_through_python_if(page):
    f, out = _run(page.grad_control_flow_block)
    assert out == "12.0\n-4.0\n"  # 6x at x=2, and -4
    for x in (-1.0, 0.5, 2.9, 3.0, 3.5, 10.0):  # the derivative of the branch taken
        np.testing.assert_allclose(float(kiln.grad(f)(x)), 6 * x if x < 3 else -4.0, rtol=1e-6)
    # "The constraints return the moment you compose with a transformation that traces abstractly"
    with pytest.raises(kiln.errors.TracerBoolConversionError):
        kiln.jit(kiln.grad(f))(2.0)
    with pytest.raises(kiln.errors.TracerBoolConversionError):
        kiln.vmap(kiln.grad(f))(jnp.array([2.0, 4.0]))


def _np_sqrt_newton(a):
    x = a
    steps = 0
    while abs(x * x - a) > 1e-6:
        x = 0.5 * (x + a / x)
        steps += 1
    return x, steps


def test_grad_through_a_data_dependent_loop(page):
    g, out = _run(page.sqrt_newton_block)
    root, _ = _np_sqrt_newton(2.0)
    assert out.splitlines() == [repr(root), str(g)]  # a Python float, iterated as in float64
    np.testing.assert_allclose(_f32(g, weak=True), 1 / (2 * np.sqrt(2.0)), rtol=1e-6)  # 1/(2√2) ≈ 0.3536
    assert round(float(g), 4) == 0.3536
    steps = set()
    for a in (0.5, 2.0, 9.0, 100.0, 1e4):  # the trip count depends on a; the derivative is 1/(2√a) each time
        steps.add(_np_sqrt_newton(a)[1])
        np.testing.assert_allclose(float(kiln.grad(page.sqrt_newton)(a)), 1 / (2 * np.sqrt(a)), rtol=1e-5)
    assert len(steps) > 1
    with pytest.raises(kiln.errors.TracerBoolConversionError):
        kiln.jit(kiln.grad(page.sqrt_newton))(2.0)


# ---------------------------------------------- Where `jit` fits in ------------------------------------------------

def test_sum_sq(page):
    assert float(_f32(page.sum_sq_block(), shape=())) == 5.0
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_allclose(page.sum_sq(jnp.asarray(x)), np.sum(x.astype(np.float64) ** 2), rtol=1e-5)
    # the decorator made it a jitted function: it traces to the program of sum(x ** 2)
    closed = page.sum_sq.trace(jnp.arange(3.0)).jaxpr
    assert _prims(closed) == ["integer_pow", "reduce_sum"]
