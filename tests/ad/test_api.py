"""The differentiation API: the seeds' examples (004: vjp, grad with argnums, Jacobians from VJPs,
custom_jvp/custom_vjp, Hessian-vector products; 000: Python control flow under grad), pytrees,
has_aux/argnums/holomorphic/allow_int, stop_gradient, checkpoint, custom rules under other
transformations, jit/grad composition, and the error messages."""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np
import pytest
from kiln.frontend.ad.tangents import float0
from kiln.frontend.driver.array import Array as ConcreteArray  # (kiln.Array is the public type)

import kiln
import kiln.numpy as knp
from kiln import lax


def _fd_jacobian(f, x, eps=1e-6):
    """Central finite differences of f: R^n -> R^m in float64 (NumPy evaluation of a kiln function)."""
    x = np.asarray(x, np.float64)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)


# -- seed 004: reverse mode, vjp, argnums -------------------------------------------------------------
def _seed_f(x1, x2):
    return x1 * x2 + knp.sin(x1 * x2)


def test_seed_vjp_values():
    p, f_vjp = kiln.vjp(_seed_f, 7.0, 2.0)
    np.testing.assert_allclose(p, 14.990607, rtol=1e-6)
    ct = f_vjp(1.0)
    assert isinstance(ct, tuple) and len(ct) == 2
    np.testing.assert_allclose(ct, (2.2734745, 7.9571605), rtol=1e-6)
    assert p.dtype == np.float32


def test_seed_grad_argnums_tuple():
    g = kiln.grad(_seed_f, argnums=(0, 1))(7.0, 2.0)
    np.testing.assert_allclose(g, (2.2734745, 7.9571605), rtol=1e-6)
    np.testing.assert_allclose(kiln.grad(_seed_f, argnums=1)(7.0, 2.0), 7.9571605, rtol=1e-6)
    np.testing.assert_allclose(kiln.grad(_seed_f, argnums=-1)(7.0, 2.0), 7.9571605, rtol=1e-6)


def _seed_f2(x):
    return [x[0] ** 2 + x[1] ** 2 - x[1] * x[2], x[0] ** 2 - x[1] ** 2 + 3 * x[0] * x[2]]


def test_seed_jacobian_rows_from_vjp():
    """Seed 004 rebuilds the Jacobian row by row from VJPs (tuple input, list output)."""
    x = (1.0, 2.0, 3.0)
    p, f_vjp = kiln.vjp(_seed_f2, x)
    np.testing.assert_allclose(p, [-1.0, 6.0])
    rows = [f_vjp([1.0, 0.0])[0], f_vjp([0.0, 1.0])[0]]
    expected = [[2 * x[0], 2 * x[1] - x[2], -x[1]], [2 * x[0] + 3 * x[2], -2 * x[1], 3 * x[0]]]
    np.testing.assert_allclose(np.array(rows), expected)
    jac = kiln.jacrev(lambda v: knp.stack(_seed_f2(v)))(np.array(x, np.float32))
    np.testing.assert_allclose(jac, expected)


def test_seed_custom_jvp_example():
    """Seed 004's custom_jvp of x**2 + 2x + 1, differentiated with vjp."""
    @kiln.custom_jvp
    def my_func(x):
        return x ** 2 + 2 * x + 1

    @my_func.defjvp
    def my_func_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return my_func(x), t * (2 * x + 2)

    x = knp.array([3.0, 4.0, 5.0])
    p, f_vjp = kiln.vjp(my_func, x)
    np.testing.assert_allclose(p, [16.0, 25.0, 36.0])
    np.testing.assert_allclose(f_vjp(knp.array([1.0, 0.0, 2.0]))[0], [8.0, 0.0, 24.0])


def test_hessian_vector_product():
    """Seed 004 (advanced): HVP as forward-over-reverse, against the Hessian."""
    f = lambda x: knp.sum(knp.sin(x) * x ** 2)  # noqa: E731
    x = np.array([0.3, -1.2, 2.0], np.float32)
    v = np.array([1.0, 0.5, -2.0], np.float32)
    hvp = kiln.jvp(kiln.grad(f), (x,), (v,))[1]
    np.testing.assert_allclose(hvp, np.asarray(kiln.hessian(f)(x)) @ v, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(kiln.grad(lambda x: knp.vdot(kiln.grad(f)(x), v))(x), hvp, rtol=1e-5, atol=1e-5)


# -- seed 000: Python control flow under grad, not under jit --------------------------------------------
def _seed_g(x):
    if x < 3:
        return 3.0 * x ** 2
    return -4 * x


def test_seed_python_control_flow():
    assert float(kiln.grad(_seed_g)(2.0)) == 12.0
    assert float(kiln.grad(_seed_g)(4.0)) == -4.0
    with pytest.raises(kiln.TracerBoolConversionError):
        kiln.jit(_seed_g)(2.0)
    # Python loops with a value-dependent trip count, too
    def h(x):
        while x < 10:
            x = x * 2
        return x
    assert float(kiln.grad(h)(3.0)) == 4.0


def test_values_without_a_derivative_convert_under_eager_grad():
    """As in JAX: under eager grad, a value that carries no derivative of the differentiated argument (integer
    indices, a comparison, a stop_gradient, a non-differentiated argument) converts to NumPy or Python; one
    that carries a derivative raises instead of silently becoming a constant (kiln returned float(x) as a
    constant: d/dx x * float(x) came out 2.0 at x = 2, not 4.0). JAX's fluidsim example indexes a NumPy table
    with such integers."""
    table = np.arange(10.0, dtype=np.float32) ** 2

    def lookup(x):
        i = knp.floor(x).astype(int)
        return knp.sum(table[i] * x)  # NumPy indexing: the index array converts

    x = np.array([1.5, 2.5], np.float32)
    np.testing.assert_array_equal(kiln.grad(lookup)(x), table[[1, 2]])
    np.testing.assert_array_equal(
        kiln.grad(lambda v: knp.sum(v * np.asarray(knp.floor(v).astype(int)).sum()))(x), [3.0, 3.0])
    assert float(kiln.grad(lambda v: v * float(lax.stop_gradient(v)))(2.0)) == 2.0
    assert float(kiln.grad(lambda v, w: v * float(w))(2.0, 5.0)) == 5.0  # w is not differentiated
    with pytest.raises(kiln.ConcretizationTypeError, match=r"kiln: float\(\) of the traced value f32\[\] while "
                                                           "tracing <lambda>: it depends on the differentiated "
                                                           "argument.*kiln.lax.stop_gradient"):
        kiln.grad(lambda v: v * float(v))(2.0)
    with pytest.raises(kiln.TracerArrayConversionError, match="a NumPy conversion of the traced value f32\\[2\\]"):
        kiln.grad(lambda v: knp.sum(v * np.asarray(v * 2.0)))(x)
    # int(), bool() and indexing with a differentiated value give its value, as in JAX (piecewise constant: a
    # constant to the derivative is exact there)
    assert float(kiln.grad(lambda v: v * int(v))(2.5)) == 2.0
    assert float(kiln.grad(lambda v: v * 2.0 if v else v)(2.0)) == 2.0
    assert float(kiln.grad(lambda v: v * knp.arange(3.0)[int(v)])(1.5)) == 1.0
    assert float(kiln.grad(lambda v: v * [1.0, 4.0, 9.0][v.astype(int)])(1.5)) == 4.0
    with pytest.raises(TypeError):  # a float is no index (as NumPy's float32 and JAX's float tracers)
        kiln.grad(lambda v: v * [1.0, 4.0, 9.0][v])(1.5)
    # .item() keeps raising: JAX gives the value there, and the derivative is silently wrong (2.5, not 5.0)
    with pytest.raises(kiln.ConcretizationTypeError, match=r"\.item\(\) of the traced value f32\[\] .*derivative "
                                                           r"\(JAX silently drops its derivative here\)"):
        kiln.grad(lambda v: v * v.item())(2.5)
    with pytest.raises(kiln.TracerArrayConversionError, match="cannot convert a traced array"):
        kiln.jit(lambda v: np.asarray(knp.floor(v).astype(int)))(x)  # under jit nothing has a value
    # A vmap inside the grad: values computed inside it stay traced (no silent constant either).
    with pytest.raises(kiln.ConcretizationTypeError, match=r"float\(\) needs a concrete value"):
        kiln.grad(lambda w: knp.sum(kiln.vmap(lambda v, w: v * float(w * 2), in_axes=(0, None))(x, w)))(2.0)


# -- Jacobians and Hessians against finite differences ----------------------------------------------------
def _vec_f(x):
    return knp.stack([knp.sin(x[0]) * x[1], x[2] ** 3 / x[1], knp.exp(x[0] * x[2])])


def test_jacfwd_jacrev_hessian_vs_finite_differences():
    with kiln.config.override("enable_x64", True):
        x = np.array([0.3, 1.5, -0.7])
        expected = _fd_jacobian(_vec_f, x)
        np.testing.assert_allclose(kiln.jacfwd(_vec_f)(x), expected, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(kiln.jacrev(_vec_f)(x), expected, rtol=1e-6, atol=1e-8)
        scalar = lambda x: knp.sum(_vec_f(x) ** 2)  # noqa: E731
        hess = kiln.hessian(scalar)(x)
        np.testing.assert_allclose(hess, _fd_jacobian(kiln.grad(scalar), x, eps=1e-5), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(hess, np.asarray(hess).T, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(kiln.jacfwd(kiln.jacrev(scalar))(x), hess, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(kiln.jacrev(kiln.jacfwd(scalar))(x), hess, rtol=1e-10, atol=1e-10)


def test_higher_order_grad():
    f = lambda x: knp.sin(x) * x  # noqa: E731
    d3 = kiln.grad(kiln.grad(kiln.grad(f)))(0.7)
    np.testing.assert_allclose(d3, -3 * np.sin(0.7) - 0.7 * np.cos(0.7), rtol=1e-5)
    np.testing.assert_allclose(kiln.jit(kiln.grad(kiln.grad(f)))(0.7), 2 * np.cos(0.7) - 0.7 * np.sin(0.7),
                               rtol=1e-5)


def test_linearize_matches_jvp():
    f = lambda x: knp.tanh(x) * knp.sum(x)  # noqa: E731
    x, t = np.array([0.1, -0.5, 2.0], np.float32), np.array([1.0, 2.0, -1.0], np.float32)
    y, f_jvp = kiln.linearize(f, x)
    y2, t2 = kiln.jvp(f, (x,), (t,))
    np.testing.assert_allclose(y, y2)
    np.testing.assert_allclose(f_jvp(t), t2, rtol=1e-6)


def test_jvp_primals_and_tangents_must_be_the_same_kind_of_sequence():
    # As JAX: a tuple of primals with a list of tangents (or the reverse) is a structure mismatch (TypeError)
    for primals, tangents in (((1.0,), [1.0]), ([1.0], (1.0,))):
        with pytest.raises(TypeError, match=r"kiln.jvp: primal and tangent structures differ"):
            kiln.jvp(knp.sin, primals, tangents)
    for primals, tangents in (((1.0,), (1.0,)), ([1.0], [1.0])):
        np.testing.assert_allclose(kiln.jvp(knp.sin, primals, tangents)[1], np.cos(1.0), rtol=1e-6)


def test_vjp_and_linearize_functions_are_pytrees_of_their_residuals():
    # As JAX's: the returned function's leaves are the residuals (sin's cos(x)), so it can be returned
    # from a jitted function and rebuilt from (traced) leaves, as JAX's remat notes' print_fwd_bwd does.
    f = lambda x: knp.sin(x) * 2.0  # noqa: E731
    x = np.array([0.1, -0.5, 2.0], np.float32)
    ct = np.array([1.0, 2.0, -1.0], np.float32)
    for transform in (kiln.vjp, kiln.linearize):
        _, fn = transform(f, x)
        leaves, tree = kiln.tree_util.tree_flatten(fn)
        np.testing.assert_allclose(leaves[0], np.cos(x), rtol=1e-6)
        out, fn2 = kiln.jit(lambda v, t=transform: t(f, v))(x)
        np.testing.assert_allclose(out, 2 * np.sin(x), rtol=1e-6)
        expected = 2 * np.cos(x) * ct
        got = fn2(ct)[0] if transform is kiln.vjp else fn2(ct)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
        rebuilt = kiln.jit(lambda res, c, tree=tree: kiln.tree_util.tree_unflatten(tree, res)(c))(leaves, ct)
        np.testing.assert_allclose(rebuilt[0] if transform is kiln.vjp else rebuilt, expected, rtol=1e-6)


# -- pytrees, has_aux, argnums, holomorphic, allow_int --------------------------------------------------
class Params(NamedTuple):
    w: object
    b: object


def _loss(params, x, y):
    return knp.mean((x @ params.w + params.b - y) ** 2)


_X = np.arange(6.0, dtype=np.float32).reshape(2, 3) / 6
_Y = np.array([1.0, -2.0], np.float32)
_P = Params(np.array([0.5, -1.0, 2.0], np.float32), np.float32(0.25))


def _expected_loss_grad():
    r = _X @ _P.w + _P.b - _Y
    return Params(2 * _X.T @ r / len(r), 2 * r.mean())


def test_pytree_params_namedtuple_and_dict():
    g = kiln.grad(_loss)(_P, _X, _Y)
    assert isinstance(g, Params)
    exp = _expected_loss_grad()
    np.testing.assert_allclose(g.w, exp.w, rtol=1e-6)
    np.testing.assert_allclose(g.b, exp.b, rtol=1e-6)
    gd = kiln.grad(lambda d: d["a"] * d["b"][0] ** 2)({"a": 2.0, "b": [3.0]})
    assert set(gd) == {"a", "b"} and isinstance(gd["b"], list)
    np.testing.assert_allclose([gd["a"], gd["b"][0]], [9.0, 12.0])


def test_jit_of_grad_and_grad_of_jit_agree():
    eager = kiln.grad(_loss)(_P, _X, _Y)
    jit_grad = kiln.jit(kiln.grad(_loss))(_P, _X, _Y)
    grad_jit = kiln.grad(kiln.jit(_loss))(_P, _X, _Y)
    for g in (jit_grad, grad_jit):
        np.testing.assert_allclose(g.w, eager.w, rtol=1e-6)
        np.testing.assert_allclose(g.b, eager.b, rtol=1e-6)
    # grad of a jitted function differentiates its IR: one compiled call forward, one backward
    ir = str(kiln.make_ir(kiln.grad(kiln.jit(_loss)))(_P, _X, _Y))
    assert ir.count("jit_call[") == 2, ir
    # and jit of grad of jit is one program with everything inlined
    text = kiln.jit(kiln.grad(kiln.jit(_loss))).lower(_P, _X, _Y).as_text()
    assert text.count("func.func") == 1


def test_grad_of_jit_executes_compiled_calls(monkeypatch):
    from kiln.runtime import executable
    calls = []
    original = executable.Executable.execute

    def counting(self, args):
        calls.append(self)
        return original(self, args)
    f = kiln.jit(_loss)
    kiln.grad(f)(_P, _X, _Y)  # warm up: compile
    monkeypatch.setattr(executable.Executable, "execute", counting)
    calls.clear()
    kiln.grad(f)(_P, _X, _Y)
    assert len(calls) <= 2, f"grad(jit(f)) ran {len(calls)} executables"
    calls.clear()
    step = kiln.jit(kiln.grad(_loss))
    step(_P, _X, _Y)
    calls.clear()
    step(_P, _X, _Y)
    assert len(calls) <= 1


def test_untraced_auxiliary_outputs_come_back_as_they_were():
    """As JAX: the leaves of has_aux's aux that are not traced (Python numbers, NumPy arrays, strings) come back
    as the function returned them, from every transformation that takes has_aux; traced ones are arrays (kiln
    converted the numbers and the NumPy array to arrays and refused the string)."""
    host = np.ones(2, np.float32)

    def f(x):
        return x ** 2, {"n": 3, "lr": 1.5, "host": host, "tag": "step", "y": knp.sin(x), "none": None}

    def check(aux, x=2.0):
        assert aux["n"] == 3 and type(aux["n"]) is int and aux["lr"] == 1.5 and type(aux["lr"]) is float
        assert aux["host"] is host and aux["tag"] == "step" and aux["none"] is None
        assert isinstance(aux["y"], kiln.Array) and float(aux["y"]) == pytest.approx(np.sin(x))

    check(kiln.grad(f, has_aux=True)(2.0)[1])
    check(kiln.value_and_grad(f, has_aux=True)(2.0)[0][1])
    check(kiln.vjp(f, 2.0, has_aux=True)[2])
    check(kiln.jvp(f, (2.0,), (1.0,), has_aux=True)[2])
    check(kiln.jacrev(f, has_aux=True)(2.0)[1])
    check(kiln.jacfwd(f, has_aux=True)(2.0)[1])
    check(kiln.hessian(f, has_aux=True)(2.0)[1])
    g = kiln.grad(f, has_aux=True)
    check(g(2.0)[1])
    check(g(3.0)[1], 3.0)  # the second call too
    # under jit every output is an array (as in JAX); a str there is refused by jit
    out = kiln.jit(lambda x: kiln.grad(lambda v: (v ** 2, 1.5), has_aux=True)(x))(2.0)
    assert isinstance(out[1], kiln.Array) and float(out[1]) == 1.5


def test_value_and_grad_has_aux():
    def f(x):
        return knp.sum(x ** 2), {"mean": knp.mean(x)}
    x = np.array([1.0, 2.0, 3.0], np.float32)
    (value, aux), g = kiln.value_and_grad(f, has_aux=True)(x)
    np.testing.assert_allclose(value, 14.0)
    np.testing.assert_allclose(aux["mean"], 2.0)
    np.testing.assert_allclose(g, 2 * x)
    g2, aux2 = kiln.grad(f, has_aux=True)(x)
    np.testing.assert_allclose(g2, 2 * x)
    np.testing.assert_allclose(aux2["mean"], 2.0)
    out, f_vjp, aux3 = kiln.vjp(f, x, has_aux=True)
    np.testing.assert_allclose(f_vjp(1.0)[0], 2 * x)
    _, t, aux4 = kiln.jvp(f, (x,), (np.ones(3, np.float32),), has_aux=True)
    np.testing.assert_allclose(t, 12.0)
    jac, aux5 = kiln.jacrev(lambda x: (x * 2, knp.sum(x)), has_aux=True)(x)
    np.testing.assert_allclose(jac, 2 * np.eye(3))
    np.testing.assert_allclose(aux5, 6.0)


def test_holomorphic():
    f = lambda z: knp.sin(z) * z ** 2  # noqa: E731
    z = np.complex64(0.7 - 0.4j)
    expected = np.cos(z) * z ** 2 + 2 * z * np.sin(z)
    np.testing.assert_allclose(kiln.grad(f, holomorphic=True)(z), expected, rtol=1e-5)
    zs = np.array([0.3 + 0.1j, -1.0 + 2.0j], np.complex64)
    jac = kiln.jacfwd(lambda z: knp.exp(z) * 2, holomorphic=True)(zs)
    np.testing.assert_allclose(jac, np.diag(2 * np.exp(zs)), rtol=1e-5)
    np.testing.assert_allclose(kiln.jacrev(lambda z: knp.exp(z) * 2, holomorphic=True)(zs), jac, rtol=1e-5)


def test_real_valued_function_of_complex_input():
    """As in JAX: grad of a real function of z = x + iy is df/dx - i df/dy (the conjugate of 2 df/dz*)."""
    z = np.complex64(3 + 4j)
    np.testing.assert_allclose(kiln.grad(lambda z: knp.abs(z) ** 2)(z), 6 - 8j, rtol=1e-6)
    np.testing.assert_allclose(kiln.grad(lambda z: knp.abs(z))(z), 0.6 - 0.8j, rtol=1e-6)
    np.testing.assert_allclose(kiln.grad(lambda z: knp.real(z * z))(z), 6 + 8j, rtol=1e-6)


def test_allow_int_gives_float0():
    f = lambda x, n: x * n  # noqa: E731
    gx, gn = kiln.grad(f, argnums=(0, 1), allow_int=True)(2.0, 3)
    assert float(gx) == 3.0
    assert gn.dtype == float0 and gn.shape == ()
    g = kiln.grad(lambda x, idx: knp.sum(x[idx]), argnums=(0, 1), allow_int=True)(
        np.ones(4, np.float32), np.array([0, 2, 2]))
    np.testing.assert_allclose(g[0], [1.0, 0.0, 2.0, 0.0])
    assert g[1].dtype == float0 and g[1].shape == (3,)
    # integer outputs get float0 tangents in forward mode
    _, t = kiln.jvp(lambda x: (x * 2, knp.argmax(x)), (np.ones(3, np.float32),), (np.ones(3, np.float32),))
    assert t[1].dtype == float0


def test_stop_gradient():
    f = lambda x: x * lax.stop_gradient(x) + lax.stop_gradient(knp.sin(x))  # noqa: E731
    assert float(kiln.grad(f)(3.0)) == 3.0
    assert float(kiln.jit(kiln.grad(f))(3.0)) == 3.0
    tree = lax.stop_gradient({"a": knp.ones(2), "n": 3})
    assert tree["n"] == 3
    assert float(kiln.grad(lambda x: knp.sum(lax.stop_gradient({"a": x})["a"] * x))(2.0)) == 2.0


def test_per_example_gradients_with_vmap():
    per_example = kiln.vmap(kiln.grad(_loss), in_axes=(None, 0, 0))(_P, _X[:, None, :], _Y[:, None])
    for i in range(2):
        one = kiln.grad(_loss)(_P, _X[i:i + 1], _Y[i:i + 1])
        np.testing.assert_allclose(per_example.w[i], one.w, rtol=1e-6)
        np.testing.assert_allclose(per_example.b[i], one.b, rtol=1e-6)


# -- checkpoint --------------------------------------------------------------------------------------------
def _layer(h, w):
    h = h @ w
    for _ in range(3):
        h = knp.sin(h) * knp.cos(h) + knp.tanh(h)
    return h


def _deep(layer):
    def loss(w, x):
        h = x
        for _ in range(6):
            h = layer(h, w)
        return knp.sum(h)
    return loss


def test_checkpoint_same_gradients_and_visible_in_ir():
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    w = np.linspace(-0.5, 0.5, 36, dtype=np.float32).reshape(6, 6)
    plain, remat = _deep(_layer), _deep(kiln.checkpoint(_layer))
    np.testing.assert_allclose(kiln.grad(remat)(w, x), kiln.grad(plain)(w, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kiln.jit(kiln.grad(remat))(w, x), kiln.grad(plain)(w, x), rtol=1e-5, atol=1e-6)
    assert "remat[" in str(kiln.make_ir(kiln.grad(remat))(w, x))
    assert "remat[" in str(kiln.make_ir(remat)(w, x))
    assert kiln.remat is kiln.checkpoint
    text = kiln.jit(kiln.grad(remat)).lower(w, x).as_text()
    assert "stablehlo.optimization_barrier" in text
    assert "optimization_barrier" not in kiln.jit(kiln.grad(plain)).lower(w, x).as_text()


def test_checkpoint_refuses_the_removed_concrete_option():
    # JAX 0.10 removed `concrete` (JEP 11830) and raises NotImplementedError for any value; kiln says what replaces it
    for value in (True, False):
        for wrap in (kiln.checkpoint, kiln.remat):
            with pytest.raises(NotImplementedError) as e:
                wrap(_layer, concrete=value)
            assert "`concrete` option was removed" in str(e.value) and "static_argnums" in str(e.value)
            assert "kiln.checkpoint(_layer)" in str(e.value) and "ensure_compile_time_eval" in str(e.value)


def test_checkpoint_outside_transformations_computes_on_arrays():
    # as JAX's traced call: the arguments are arrays (weak-typed for Python numbers), so `-x` of a Python float is
    # an array; static arguments stay Python values
    neg = kiln.checkpoint(lambda x: -x)(1.5)
    assert isinstance(neg, kiln.Array) and neg.weak_type and neg.dtype == np.float32 and float(neg) == -1.5
    twice = kiln.checkpoint(lambda x, n: x * n, static_argnums=1)(np.arange(3, dtype=np.float32), 2)
    assert isinstance(twice, kiln.Array) and not twice.weak_type and twice.dtype == np.float32
    np.testing.assert_array_equal(twice, [0.0, 2.0, 4.0])
    x, n = kiln.checkpoint(lambda x, *, n: (x, n), static_argnames="n")(x=3, n=3)
    assert isinstance(x, kiln.Array) and x.weak_type and x.dtype == np.int32 and type(n) is int


def test_checkpoint_reduces_compiled_temp_memory():
    """Per-layer checkpointing of a deep chain: the backward pass keeps only each layer's input instead of
    every intermediate the layer's derivative needs."""
    x = np.full((128, 128), 0.01, np.float32)
    w = np.full((128, 128), 0.01, np.float32)
    sizes = {}
    for name, layer in (("plain", _layer), ("remat", kiln.checkpoint(_layer))):
        stats = kiln.jit(kiln.grad(_deep(layer))).lower(w, x).compile().memory_analysis()
        if stats is None:
            pytest.skip("this backend reports no memory statistics")
        sizes[name] = stats.temp_size_in_bytes
    assert sizes["remat"] <= sizes["plain"], sizes
    if kiln.default_backend() == "cpu":
        assert sizes["remat"] < sizes["plain"], sizes


# -- custom_jvp / custom_vjp --------------------------------------------------------------------------------
@kiln.custom_jvp
def log1pexp(x):
    return knp.log(1.0 + knp.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), (1 - 1 / (1 + knp.exp(x))) * t


def test_custom_jvp_log1pexp_is_numerically_safe():
    naive = lambda x: knp.log(1.0 + knp.exp(x))  # noqa: E731
    assert np.isnan(float(kiln.grad(naive)(100.0)))
    assert float(kiln.grad(log1pexp)(100.0)) == 1.0
    assert float(kiln.jit(kiln.grad(log1pexp))(100.0)) == 1.0
    np.testing.assert_allclose(kiln.grad(log1pexp)(0.0), 0.5)
    np.testing.assert_allclose(kiln.vmap(kiln.grad(log1pexp))(knp.array([0.0, 100.0])), [0.5, 1.0])
    np.testing.assert_allclose(kiln.grad(kiln.grad(log1pexp))(0.0), 0.25, rtol=1e-6)
    np.testing.assert_allclose(kiln.jvp(log1pexp, (3.0,), (2.0,))[1], 2 / (1 + np.exp(-3.0)), rtol=1e-6)
    np.testing.assert_allclose(kiln.jacfwd(log1pexp)(knp.array([0.0, 1.0])), np.diag([0.5, 1 / (1 + np.exp(-1))]),
                               rtol=1e-6)


def test_custom_jvp_defjvps_and_nondiff_argnums():
    @kiln.custom_jvp
    def f(x, y):
        return knp.sin(x) * y
    f.defjvps(lambda x_dot, out, x, y: knp.cos(x) * x_dot * y, lambda y_dot, out, x, y: knp.sin(x) * y_dot)
    np.testing.assert_allclose(kiln.grad(f, argnums=(0, 1))(2.0, 3.0), (np.cos(2.0) * 3, np.sin(2.0)), rtol=1e-6)
    np.testing.assert_allclose(kiln.jit(kiln.grad(f, argnums=1))(2.0, 3.0), np.sin(2.0), rtol=1e-6)

    @partial(kiln.custom_jvp, nondiff_argnums=(0,))
    def apply(fn, x):
        return fn(x)

    @apply.defjvp
    def apply_jvp(fn, primals, tangents):
        (x,), (t,) = primals, tangents
        return apply(fn, x), 10.0 * t  # a deliberately different "derivative" to see it is used
    assert float(kiln.grad(lambda x: apply(knp.sin, x))(1.0)) == 10.0
    assert float(kiln.jit(kiln.grad(lambda x: apply(knp.sin, x)))(1.0)) == 10.0


def test_custom_jvp_differentiated_value_in_nondiff_argnums_is_a_constant():
    """A traced array passed in a nondiff_argnums position of a custom_jvp function is a constant to the
    derivative (JAX stop_gradients it): d/dx scale(x, s=x) is s, not 2x. kiln raised 'closes over a value that
    is being differentiated' instead."""
    @partial(kiln.custom_jvp, nondiff_argnums=(1,))
    def scale(x, s):
        return x * s

    @scale.defjvp
    def scale_jvp(s, primals, tangents):
        (x,), (t,) = primals, tangents
        return scale(x, s), t * s

    square = lambda x: scale(x, x)  # noqa: E731
    for grad in (kiln.grad(square), kiln.jit(kiln.grad(square))):
        assert float(grad(3.0)) == 3.0
    assert float(kiln.grad(lambda x: scale(2.0, x))(3.0)) == 0.0
    assert [float(v) for v in kiln.jvp(square, (3.0,), (1.0,))] == [9.0, 3.0]
    assert float(kiln.grad(kiln.grad(square))(3.0)) == 0.0  # the derivative, s, is constant too
    np.testing.assert_array_equal(np.asarray(kiln.vmap(kiln.grad(square))(knp.array([1.0, 2.0]))), [1.0, 2.0])


@kiln.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def _clip_fwd(lo, hi, x):
    return x, (lo, hi)


def _clip_bwd(res, g):
    lo, hi = res
    return (None, None, knp.clip(g, lo, hi))


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_clip_gradient():
    f = lambda x: clip_gradient(-0.75, 0.75, knp.sin(x))  # noqa: E731
    xs = knp.arange(0.0, 4.0)
    expected = 0.75 * np.cos(np.arange(4.0))  # the incoming cotangent 1.0 is clipped to 0.75, then sin's chain rule
    np.testing.assert_allclose(kiln.vmap(kiln.grad(f))(xs), expected, rtol=1e-6)
    np.testing.assert_allclose([kiln.grad(f)(float(x)) for x in range(4)], expected, rtol=1e-6)
    np.testing.assert_allclose(kiln.jit(kiln.vmap(kiln.grad(f)))(xs), expected, rtol=1e-6)
    np.testing.assert_allclose(f(2.0), np.sin(2.0), rtol=1e-6)
    # the primal still runs normally under jit and vmap
    np.testing.assert_allclose(kiln.jit(kiln.vmap(f))(xs), np.sin(np.arange(4.0)), rtol=1e-6)


def test_custom_vjp_nondiff_argnums_and_nesting():
    @partial(kiln.custom_vjp, nondiff_argnums=(0,))
    def apply(fn, x):
        return fn(x)

    def fwd(fn, x):
        return apply(fn, x), x

    def bwd(fn, x, g):
        return (3.0 * g * x,)
    apply.defvjp(fwd, bwd)
    assert float(kiln.grad(lambda x: apply(knp.sin, x))(2.0)) == 6.0
    assert float(kiln.jit(kiln.grad(lambda x: apply(knp.sin, x)))(2.0)) == 6.0
    # grad of grad: the bwd output 3*g*x is differentiated in turn
    assert float(kiln.grad(kiln.grad(lambda x: apply(knp.sin, x)))(2.0)) == 3.0
    with pytest.raises(TypeError, match="forward-mode.*custom_vjp"):
        kiln.jvp(lambda x: apply(knp.sin, x), (2.0,), (1.0,))


@pytest.mark.parametrize("int_cotangent", ["none", "float0"])
def test_custom_vjp_with_an_integer_array_argument(int_cotangent):
    """An integer array argument (not static) has a float0 tangent that no equation takes: grad, jit of grad and
    vmap of grad work, and bwd may give it None or float0 zeros (as in JAX); found porting odeint."""
    @kiln.custom_vjp
    def f(x, k, y):
        return x * k + y * y

    def fwd(x, k, y):
        return f(x, k, y), (x, k, y)

    def bwd(res, g):
        x, k, y = res
        return g * k, None if int_cotangent == "none" else np.zeros(np.shape(k), float0), 2 * g * y
    f.defvjp(fwd, bwd)
    grad = kiln.grad(f, argnums=(0, 2))
    for g in (grad, kiln.jit(grad)):
        gx, gy = g(1.0, knp.array(2), 3.0)
        assert (float(gx), float(gy)) == (2.0, 6.0)
    gx, gy = kiln.vmap(grad)(knp.arange(3.0), knp.arange(3), knp.ones(3))
    np.testing.assert_array_equal(np.asarray(gx), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(gy), [2.0, 2.0, 2.0])
    gx, _ = kiln.vmap(grad, in_axes=(0, None, 0))(knp.arange(3.0), knp.array(4), knp.ones(3))
    np.testing.assert_array_equal(np.asarray(gx), [4.0, 4.0, 4.0])
    assert float(kiln.grad(lambda x, k: f(x, k, x))(1.0, knp.array(2))) == 4.0


def test_custom_vjp_fwd_takes_the_arguments_in_their_places():
    """As JAX: fwd gets the primal function's arguments in their positions, bwd the non-differentiable ones
    first, then the residuals and the cotangent."""
    seen = {}

    @partial(kiln.custom_vjp, nondiff_argnums=(1,))
    def scale(x, n, y):
        return x * n + y

    def fwd(x, n, y):
        seen["fwd"] = (type(x).__name__, n, type(y).__name__)
        return scale(x, n, y), None

    def bwd(n, res, g):
        seen["bwd"] = (n, res)
        return (g * n, g)
    scale.defvjp(fwd, bwd)
    gx, gy = kiln.grad(lambda x, y: scale(x, 3, y), argnums=(0, 1))(2.0, 5.0)
    assert (float(gx), float(gy)) == (3.0, 1.0)
    assert seen["fwd"][1] == 3 and seen["bwd"] == (3, None)
    # Under vmap the rules run per example, with the same convention.
    g = kiln.vmap(kiln.grad(lambda x: scale(x, 3, 1.0)))(np.arange(3.0, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(g), [3.0, 3.0, 3.0])


# Which user functions run, as in JAX: under differentiation only the rule (custom_jvp's jvp, custom_vjp's fwd
# and bwd), never the primal function; without differentiation only the primal function. The primal function
# is traced again where a trace of its own stands between it and the differentiation (grad of jit).
def _logged_custom_jvp(calls: list, self_calling: bool = False):
    """``self_calling``: the rule computes its primal output by calling f itself (the custom-derivatives
    notebook's pattern)."""
    @kiln.custom_jvp
    def f(x):
        calls.append("f")
        return knp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append("f_jvp")
        (x,), (t,) = primals, tangents
        return (f(x) if self_calling else knp.sin(x)), knp.cos(x) * t
    return f


def _logged_custom_vjp(calls: list, self_calling: bool = False):
    @kiln.custom_vjp
    def g(x):
        calls.append("g")
        return knp.sin(x)

    def g_fwd(x):
        calls.append("g_fwd")
        return (g(x) if self_calling else knp.sin(x)), knp.cos(x)

    def g_bwd(cos_x, ct):
        calls.append("g_bwd")
        return (cos_x * ct,)
    g.defvjp(g_fwd, g_bwd)
    return g


_AT = 0.7
_ATS = np.array([0.1, 0.7, 2.0], np.float32)
_CALL_CASES = {  # name: (how it is called, expected value, custom_jvp's calls, custom_vjp's calls)
    "eager": (lambda f: f(_AT), np.sin(_AT), ["f"], ["g"]),
    "jit": (lambda f: kiln.jit(f)(_AT), np.sin(_AT), ["f"], ["g"]),
    "vmap": (lambda f: kiln.vmap(f)(_ATS), np.sin(_ATS), ["f"], ["g"]),
    "grad": (lambda f: kiln.grad(f)(_AT), np.cos(_AT), ["f_jvp"], ["g_fwd", "g_bwd"]),
    "vjp": (lambda f: kiln.vjp(f, _AT)[1](1.0)[0], np.cos(_AT), ["f_jvp"], ["g_fwd", "g_bwd"]),
    "jacrev": (lambda f: kiln.jacrev(f)(_AT), np.cos(_AT), ["f_jvp"], ["g_fwd", "g_bwd"]),
    "jit(grad)": (lambda f: kiln.jit(kiln.grad(f))(_AT), np.cos(_AT), ["f_jvp"], ["g_fwd", "g_bwd"]),
    "vmap(grad)": (lambda f: kiln.vmap(kiln.grad(f))(_ATS), np.cos(_ATS), ["f_jvp"], ["g_fwd", "g_bwd"]),
    "grad(grad)": (lambda f: kiln.grad(kiln.grad(f))(_AT), -np.sin(_AT), ["f_jvp"], ["g_fwd", "g_bwd"]),
    "grad(jit)": (lambda f: kiln.grad(kiln.jit(f))(_AT), np.cos(_AT), ["f", "f_jvp"], ["g", "g_fwd", "g_bwd"]),
    # inside control flow the branch or body is traced first (f), then differentiated through the rule, once
    "grad(cond)": (lambda f: kiln.grad(lambda x: kiln.lax.cond(x > 0, f, lambda v: v * 2, x))(_AT), np.cos(_AT),
                   ["f", "f_jvp"], ["g", "g_fwd", "g_bwd"]),
    "grad(scan)": (lambda f: kiln.grad(lambda x: kiln.lax.scan(lambda c, _: (f(c), None), x, None, length=2)[0])(_AT),
                   np.cos(np.sin(_AT)) * np.cos(_AT), ["f", "f_jvp"], ["g", "g_fwd", "g_bwd"]),
}


@pytest.mark.parametrize("case", list(_CALL_CASES))
@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
def test_custom_rules_run_instead_of_the_primal_function(kind, case):
    call, expected, jvp_calls, vjp_calls = _CALL_CASES[case]
    want = jvp_calls if kind == "custom_jvp" else vjp_calls
    calls: list = []
    fun = (_logged_custom_jvp if kind == "custom_jvp" else _logged_custom_vjp)(calls)
    np.testing.assert_allclose(np.asarray(call(fun)), expected, rtol=1e-6)
    assert calls == want


_NESTED_CASES = {  # name: (how it is called, expected value, order of differentiation)
    "grad": (lambda f: kiln.grad(f)(_AT), np.cos(_AT), 1),
    "grad(grad)": (lambda f: kiln.grad(kiln.grad(f))(_AT), -np.sin(_AT), 2),
    "grad(grad(grad))": (lambda f: kiln.grad(kiln.grad(kiln.grad(f)))(_AT), -np.cos(_AT), 3),
    "jit(grad(grad))": (lambda f: kiln.jit(kiln.grad(kiln.grad(f)))(_AT), -np.sin(_AT), 2),
    "vmap(grad(grad))": (lambda f: kiln.vmap(kiln.grad(kiln.grad(f)))(_ATS), -np.sin(_ATS), 2),
}


@pytest.mark.parametrize("case", list(_NESTED_CASES))
@pytest.mark.parametrize("kind", ["custom_jvp", "custom_vjp"])
def test_custom_rule_calling_its_function_runs_once_per_derivative_order(kind, case):
    """A rule that calls the custom function itself (f_jvp returning f(x), fwd returning g(x)) runs once per
    order of differentiation, each time on the inputs with one derivative fewer, and the function itself runs
    once, at the innermost level (the notebook's grad(grad(f)) prints 'called f_jvp!' twice, then 'called f!').
    Before, every level's rule traced the function as well: f_jvp, f, f_jvp, f."""
    call, expected, order = _NESTED_CASES[case]
    calls: list = []
    fun = (_logged_custom_jvp if kind == "custom_jvp" else _logged_custom_vjp)(calls, self_calling=True)
    np.testing.assert_allclose(np.asarray(call(fun)), expected, rtol=1e-6)
    if kind == "custom_jvp":
        assert calls == ["f_jvp"] * order + ["f"]
    else:  # the backward function runs once: the enclosing derivatives differentiate what it computed
        assert calls == ["g_fwd"] * order + ["g", "g_bwd"]


def test_custom_jvp_forward_mode_runs_only_the_rule():
    calls: list = []
    f = _logged_custom_jvp(calls)
    y, t = kiln.jvp(f, (_AT,), (2.0,))
    np.testing.assert_allclose([float(y), float(t)], [np.sin(_AT), 2 * np.cos(_AT)], rtol=1e-6)
    assert calls == ["f_jvp"]
    calls.clear()
    y, f_jvp = kiln.linearize(f, _AT)
    np.testing.assert_allclose(float(f_jvp(1.0)), np.cos(_AT), rtol=1e-6)
    assert calls == ["f_jvp"]
    calls.clear()
    np.testing.assert_allclose(np.asarray(kiln.jacfwd(f)(_ATS)), np.diag(np.cos(_ATS)), rtol=1e-6)
    assert calls == ["f_jvp"]


def test_custom_vjp_forward_mode_runs_fwd_then_raises():
    calls: list = []
    g = _logged_custom_vjp(calls)
    with pytest.raises(TypeError, match="forward-mode.*custom_vjp"):
        kiln.jvp(g, (_AT,), (1.0,))
    assert calls == ["g_fwd"]


def test_custom_rules_differentiate_a_primal_function_that_cannot_run():
    """A primal function that raises is never called under differentiation (JAX's notebook: 'primal only via
    the rule'); called plainly, it still raises."""
    def unavailable(*args):
        raise NotImplementedError("primal only via the rule")

    f = kiln.custom_jvp(unavailable)
    f.defjvp(lambda p, t: (knp.sin(p[0]), knp.cos(p[0]) * t[0]))
    g = kiln.custom_vjp(unavailable)
    g.defvjp(lambda x: (knp.sin(x), knp.cos(x)), lambda cos_x, ct: (cos_x * ct,))
    for fun in (f, g):
        np.testing.assert_allclose(float(kiln.grad(fun)(_AT)), np.cos(_AT), rtol=1e-6)
        np.testing.assert_allclose(float(kiln.jit(kiln.grad(fun))(_AT)), np.cos(_AT), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(kiln.vmap(kiln.grad(fun))(_ATS)), np.cos(_ATS), rtol=1e-6)
        np.testing.assert_allclose(float(kiln.grad(lambda x: fun(x) * x)(_AT)), np.cos(_AT) * _AT + np.sin(_AT),
                                   rtol=1e-6)
        for plain in (fun, kiln.jit(fun)):
            with pytest.raises(NotImplementedError, match="primal only via the rule"):
                plain(_AT)
    y, t = kiln.jvp(f, (_AT,), (3.0,))
    np.testing.assert_allclose([float(y), float(t)], [np.sin(_AT), 3 * np.cos(_AT)], rtol=1e-6)
    np.testing.assert_allclose(float(kiln.grad(kiln.grad(f))(_AT)), -np.sin(_AT), rtol=1e-6)
    np.testing.assert_allclose(float(kiln.hessian(f)(_AT)), -np.sin(_AT), rtol=1e-6)


def test_custom_rules_alone_with_pytrees_nondiff_argnums_and_integers():
    """Only the rules run, with pytree arguments and outputs, a non-differentiable argument and an integer
    leaf (whose tangent is a float0 zero)."""
    def unavailable(*args):
        raise NotImplementedError("primal only via the rule")

    seen = {}
    f = kiln.custom_jvp(unavailable, nondiff_argnums=(0,))

    @f.defjvp
    def f_jvp(scale, primals, tangents):
        (d,), (td,) = primals, tangents
        seen["n tangent"] = td["n"].dtype
        out = {"y": scale * d["x"] * d["n"], "z": (d["x"] ** 2,)}
        return out, {"y": scale * td["x"] * d["n"], "z": (2 * d["x"] * td["x"],)}

    def loss_f(x):
        out = f(2.0, {"x": x, "n": knp.int32(3)})
        return out["y"] + out["z"][0]

    g = kiln.custom_vjp(unavailable, nondiff_argnums=(1,))
    g.defvjp(lambda a, scale, b: ((scale * a * b, [a]), (a, b)),
             lambda scale, res, ct: (ct[0] * scale * res[1] + ct[1][0], ct[0] * scale * res[0]))

    def loss_g(a, b):
        y, (a_again,) = g(a, 4.0, b)
        return y + 5.0 * a_again

    for grad in (kiln.grad, lambda fun, **kw: kiln.jit(kiln.grad(fun, **kw))):
        np.testing.assert_allclose(float(grad(loss_f)(_AT)), 2.0 * 3 + 2 * _AT, rtol=1e-6)
        assert seen.pop("n tangent") == float0
        np.testing.assert_allclose([float(v) for v in grad(loss_g, argnums=(0, 1))(1.5, 2.5)],
                                   [4.0 * 2.5 + 5.0, 4.0 * 1.5], rtol=1e-6)


def test_custom_vjp_zero_cotangent_keeps_weak_type():
    """bwd gets a zero cotangent for an unused output with the output's type, weak like the output (a Python
    float argument), as in JAX; the gradient stays weak too."""
    seen = []

    @kiln.custom_vjp
    def f(x):
        return x, x

    def bwd(_, ct):
        seen.append(ct)
        return (ct[0] + ct[1],)
    f.defvjp(lambda x: (f(x), None), bwd)
    g = kiln.grad(lambda x: f(x)[0])(2.0)
    (ct_used, ct_zero), = seen
    assert (float(ct_used), float(ct_zero)) == (1.0, 0.0)
    assert ct_zero.dtype == np.float32 and ct_zero.weak_type and ct_used.weak_type
    assert float(g) == 1.0 and g.dtype == np.float32 and g.weak_type
    seen.clear()
    g = kiln.grad(lambda x: f(x)[0])(np.float32(2.0))  # a strong argument: strong cotangents
    (ct_used, ct_zero), = seen
    assert not ct_zero.weak_type and not g.weak_type and float(g) == 1.0


# -- errors ---------------------------------------------------------------------------------------------------
def test_error_grad_of_non_scalar_output():
    with pytest.raises(TypeError, match=r"must return a scalar.*shape \(3,\).*kiln\.vjp or kiln\.jacrev"):
        kiln.grad(lambda x: x * 2)(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"must return a scalar array, got list.*kiln\.vjp"):
        kiln.grad(lambda x: [x, x])(1.0)


def test_error_grad_of_integer_input():
    with pytest.raises(TypeError, match=r"got int32.*allow_int=True"):
        kiln.grad(lambda x: x * 2.0)(np.int32(3))
    with pytest.raises(TypeError, match=r"holomorphic=True requires complex inputs"):
        kiln.grad(lambda x: x, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match=r"jacfwd: complex inputs need holomorphic=True"):
        kiln.jacfwd(lambda z: knp.real(z))(np.complex64(1j))
    with pytest.raises(TypeError, match=r"real floating-point scalar, got complex64.*holomorphic=True.*"
                                        r"non-holomorphic function with complex outputs, use kiln.vjp directly"):
        kiln.grad(lambda z: z * z)(np.complex64(1j))


def test_error_argnums_out_of_range():
    with pytest.raises(TypeError, match=r"argnums 2 is out of range.*2 positional"):
        kiln.grad(_seed_f, argnums=2)(7.0, 2.0)
    with pytest.raises(TypeError, match=r"argnums \(0, 5\) is out of range"):
        kiln.grad(_seed_f, argnums=(0, 5))(7.0, 2.0)
    with pytest.raises(TypeError, match=r"jacrev: argnums 3 is out of range"):
        kiln.jacrev(_seed_f, argnums=3)(7.0, 2.0)


def _bad_custom_vjp(bwd):
    @kiln.custom_vjp
    def f(x, y):
        return x * y
    f.defvjp(lambda x, y: (x * y, (x, y)), bwd)
    return f


def test_error_custom_vjp_bwd_wrong_structure_or_shape():
    with pytest.raises(kiln.CustomDerivativeError, match=r"bwd of f returned 1 cotangent\(s\).*2 differentiable"):
        kiln.grad(_bad_custom_vjp(lambda res, g: (g,)))(1.0, 2.0)
    with pytest.raises(kiln.CustomDerivativeError, match=r"cotangent 1 has shape \(3,\).*shape \(\)"):
        kiln.grad(_bad_custom_vjp(lambda res, g: (g, knp.ones(3))))(1.0, 2.0)
    with pytest.raises(kiln.CustomDerivativeError, match=r"structure"):
        kiln.grad(_bad_custom_vjp(lambda res, g: ((g, g), g)))(1.0, 2.0)
    with pytest.raises(kiln.CustomDerivativeError, match=r"must return a tuple"):
        kiln.grad(_bad_custom_vjp(lambda res, g: g))(1.0, 2.0)


def test_jacobians_and_checkpoint_pass_keyword_arguments_through():
    # As JAX: keyword arguments reach the function and are not differentiated (checkpoint traces them too).
    def f(x, y=2.0):
        return knp.sin(x) * y
    x = knp.array([0.5, 1.0])
    want = np.diag(np.cos([0.5, 1.0]) * 3.0).astype(np.float32)
    np.testing.assert_allclose(kiln.jacfwd(f)(x, y=3.0), want, rtol=1e-6)
    np.testing.assert_allclose(kiln.jacrev(f)(x, y=3.0), want, rtol=1e-6)
    hess = kiln.hessian(f)(x, y=3.0)
    np.testing.assert_allclose(np.diagonal(np.diagonal(hess)), -np.sin([0.5, 1.0]) * 3.0, rtol=1e-6)
    np.testing.assert_allclose(kiln.checkpoint(f)(x, y=3.0), np.sin([0.5, 1.0]) * 3.0, rtol=1e-6)
    # under grad, where checkpoint traces its body: the keyword is an input of the remat body
    g = kiln.grad(lambda x, y: kiln.checkpoint(f)(x, y=y).sum(), argnums=(0, 1))(x, 3.0)
    np.testing.assert_allclose(g[0], np.cos([0.5, 1.0]) * 3.0, rtol=1e-6)
    np.testing.assert_allclose(g[1], np.sin([0.5, 1.0]).sum(), rtol=1e-6)


def test_jacrev_blocks_take_the_inputs_dtype_and_weak_type():
    # As JAX (its _possible_downcast): each block of jacrev has its input leaf's dtype and weak type, whatever the
    # output's; the blocks of hessian = jacfwd(jacrev) follow. (They used to lose a Python float's weak type.)
    def kinds(tree):
        return [(leaf.dtype, leaf.weak_type) for leaf in kiln.tree_util.tree_leaves(tree)]
    assert kinds(kiln.jacrev(lambda x: x * 2.0)(1.0)) == [(np.float32, True)]
    assert kinds(kiln.jacrev(lambda x: x * knp.float32(2))(1.0)) == [(np.float32, True)]
    assert kinds(kiln.jacrev(lambda x: x * 2.0)(knp.float32(1))) == [(np.float32, False)]
    assert kinds(kiln.hessian(lambda x: x ** 3)(2.0)) == [(np.float32, True)]
    assert kinds(kiln.jacrev(lambda z: knp.real(z * z))(1.0 + 2.0j)) == [(np.complex64, True)]
    assert kinds(kiln.jacrev(lambda p: p["a"] * p["b"])({"a": 2.0, "b": knp.float32(3)})) == [(np.float32, True),
                                                                                            (np.float32, False)]
    assert float(kiln.hessian(lambda x: x ** 3)(2.0)) == 12.0


def test_jacrev_of_integer_inputs_with_allow_int_is_zeros_of_their_dtype():
    # As JAX: the rows of an integer input (allow_int=True) are zeros of its dtype, not float0 (which crashed vmap)
    J = kiln.jacrev(lambda x: x * 2.0, allow_int=True)(knp.arange(2))
    assert J.dtype == np.int32 and J.shape == (2, 2) and not J.weak_type
    np.testing.assert_array_equal(J, np.zeros((2, 2), np.int32))
    J = kiln.jacrev(lambda p: p["a"] * p["b"] * 2.0, allow_int=True)({"a": 2, "b": 1.5})
    assert (J["a"].dtype, J["a"].weak_type, int(J["a"])) == (np.int32, True, 0)
    assert (J["b"].dtype, J["b"].weak_type, float(J["b"])) == (np.float32, True, 4.0)


@pytest.mark.parametrize("jac, fun, x, message", [
    (kiln.jacrev, lambda x: knp.exp(1j * x), np.ones(2, np.float32),
     r"kiln.jacrev requires real floating-point outputs, but the function returned complex64. Pass "
     r"holomorphic=True"),
    (kiln.jacrev, lambda x: (x > 0).astype(int), np.ones(2, np.float32),
     r"kiln.jacrev requires real floating-point outputs, but the function returned int32. Use kiln.vjp"),
    (partial(kiln.jacrev, holomorphic=True), knp.abs, np.ones(2, np.complex64),
     r"kiln.jacrev with holomorphic=True requires complex outputs, but the function returned float32"),
    (partial(kiln.jacfwd, holomorphic=True), knp.abs, np.ones(2, np.complex64),
     r"kiln.jacfwd with holomorphic=True requires complex outputs, but the function returned float32"),
])
def test_error_jacobian_of_outputs_of_the_wrong_kind(jac, fun, x, message):
    # (jacrev of a complex output used to return the Jacobian of its real part, silently)
    with pytest.raises(TypeError, match=message):
        jac(fun)(x)


def test_error_vjp_cotangent_of_another_dtype():
    _, f_vjp = kiln.vjp(knp.sin, knp.array([0.5, 1.0]))
    with pytest.raises(ValueError, match=r"kiln.vjp: the cotangent of output 0 has type i32\[2\], but the output "
                                         r"is f32\[2\]: pass a cotangent of dtype float32"):
        f_vjp(knp.ones(2, knp.int32))
    # a weakly typed cotangent of the output's dtype is fine, as a float0 one for an integer output
    assert f_vjp(knp.ones(2))[0].dtype == np.float32
    _, f_vjp = kiln.vjp(lambda x: (x * 2, x.astype(knp.int32)), knp.array([0.5, 1.0]))
    (ct,) = f_vjp((knp.ones(2), np.zeros(2, float0)))
    np.testing.assert_array_equal(ct, [2.0, 2.0])


def test_vjp_residuals_are_arrays_even_for_python_scalar_inputs():
    # a residual that is the input itself (the 3.0 that checkpoint's body recomputes from) is an Array leaf, as
    # every leaf of JAX's vjp function is
    f = lambda x: knp.sin(kiln.checkpoint(lambda x: knp.sin(knp.sin(x)))(x))  # noqa: E731
    _, f_vjp = kiln.vjp(f, 3.0)
    leaves = kiln.tree_util.tree_leaves(f_vjp)
    assert leaves and all(type(leaf) is ConcreteArray for leaf in leaves)
    assert kiln.tree_util.tree_leaves(kiln.tree_util.tree_map(lambda r: r.shape, f_vjp)) == []  # () per leaf
    np.testing.assert_allclose(f_vjp(1.0)[0], kiln.grad(f)(3.0), rtol=1e-6)


def test_error_vjp_cotangent_mismatch():
    _, f_vjp = kiln.vjp(lambda x: x * 2, np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"cotangent shape \(2,\) does not match output shape \(3,\)"):
        f_vjp(np.ones(2, np.float32))
    with pytest.raises(TypeError, match=r"cotangent has structure"):
        f_vjp((np.ones(3, np.float32),))


def test_abs_derivative_at_zero_is_one_as_jaxs():
    # JAX's rule: t where x >= 0 (so 1 at 0 and at -0.0), -t below; for complex z, Re(t * conj(z) / |z|), 0 at z = 0
    np.testing.assert_array_equal(kiln.vmap(kiln.grad(knp.abs))(knp.asarray([-2.0, 0.0, -0.0, 3.0])),
                                  [-1.0, 1.0, 1.0, 1.0])
    assert kiln.jvp(knp.abs, (0.0,), (2.5,))[1] == 2.5
    np.testing.assert_allclose(kiln.grad(lambda z: knp.sum(knp.abs(z)))(knp.asarray([0j, 3 + 4j])),
                               [0, (3 - 4j) / 5], rtol=1e-6)
