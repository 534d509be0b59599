"""Under an eager grad/vjp/jvp/vmap, kiln.numpy's functions keep their call boundary (one jit_call equation each,
marked inline), as JAX's jitted jax.numpy functions (``jit(inline=True)``) do: each one's primal (with its
residuals), its forward-mode tangent and its batched form run as one compiled program, so they round as the jitted
function does (XLA fuses ``1 + x*x`` in arctan's derivative into one rounding), while reverse mode's linear half is
inlined into the linear IR and the backward pass runs its primitives one by one, as JAX's does. Under staging (jit,
make_jaxpr, control-flow bodies) they are inlined."""
import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax

RNG = np.random.default_rng(7)


def _bits(x):
    return np.asarray(x).tobytes()


def _loss(np_):
    """The same loss written with ``np_``'s functions: kiln.numpy's, or each of them wrapped in kiln.jit."""
    return lambda x: np_.sum(np_.add(np_.multiply(np_.arctan(x), np_.tanh(x)), np_.log1p(np_.multiply(x, x))))


class _Jitted:
    """kiln.numpy with every function wrapped in an explicit ``kiln.jit(..., inline=True)``: what JAX's jitted
    jax.numpy functions are."""
    def __getattr__(self, name):
        return kiln.jit(getattr(knp, name), inline=True)


def test_eager_grad_rounds_as_explicitly_jitted_functions(primitive_runs):
    x = knp.asarray(RNG.uniform(-3, 3, 257).astype(np.float32))
    eager = kiln.grad(_loss(knp))(x)
    assert "atan" not in primitive_runs and "tanh" not in primitive_runs and "jit_call" in primitive_runs
    assert _bits(eager) == _bits(kiln.grad(_loss(_Jitted()))(x))
    h = np.asarray(x, np.float64)  # the derivative itself, against float64 NumPy
    expect = np.tanh(h) / (1 + h * h) + np.arctan(h) * (1 - np.tanh(h) ** 2) + 2 * h / (1 + h * h)
    np.testing.assert_allclose(eager, expect, rtol=2e-6, atol=1e-6)
    # one value where op-by-op rounding (the correctly rounded 1 / (1 + x*x)) differs from the fused one
    for v in np.float32([0.95, 0.3, -1.7, 2.2]):
        assert _bits(kiln.grad(knp.arctan)(v)) == _bits(kiln.jit(kiln.grad(knp.arctan))(v))
    # reverse mode's linear half runs primitive by primitive: tanh's tangent (g + g*y) * (1 - y), transposed,
    # is a = ct * (1 - y); a + a * y, each operation rounded on its own (a jitted grad may fuse them)
    z = np.float32([0.5, 3.5, -2.7, 0.08, 1.3])
    ct = np.float32([0.3, -1.2, 0.7, 2.0, -0.4])
    y = np.asarray(kiln.jit(knp.tanh)(z))
    a = ct * (np.float32(1) - y)
    expect = a + a * y
    assert _bits(kiln.vjp(knp.tanh, z)[1](ct)[0]) == _bits(expect)
    np.testing.assert_allclose(kiln.jit(lambda v, c: kiln.vjp(knp.tanh, v)[1](c)[0])(z, ct), expect, rtol=1e-5)
    # lax functions are not jitted library functions (in JAX neither): they still run primitive by primitive
    primitive_runs.clear()
    kiln.grad(lax.atan)(np.float32(0.95))
    assert "atan" in primitive_runs or "mul" in primitive_runs


def test_vjp_jvp_linearize_and_vmap_round_as_jitted():
    x = knp.asarray(RNG.uniform(-2, 2, 33).astype(np.float32))
    t = knp.asarray(RNG.standard_normal(33).astype(np.float32))
    def make(np_):
        return lambda v: np_.divide(np_.multiply(np_.sin(v), np_.arctan(v)), np_.add(1.0, np_.exp(np_.negative(v))))
    f, fj = make(knp), make(_Jitted())
    y, f_vjp = kiln.vjp(f, x)
    jy, fj_vjp = kiln.vjp(fj, x)
    assert _bits(y) == _bits(jy) and _bits(f_vjp(t)[0]) == _bits(fj_vjp(t)[0])
    primal, tangent = kiln.jvp(f, (x,), (t,))
    jp, jt = kiln.jvp(fj, (x,), (t,))
    assert _bits(primal) == _bits(jp) and _bits(tangent) == _bits(jt)
    _, f_lin = kiln.linearize(f, x)  # its linear half runs op by op, as JAX's: close to jvp's, not equal
    assert _bits(f_lin(t)) == _bits(kiln.linearize(fj, x)[1](t))
    np.testing.assert_allclose(f_lin(t), tangent, rtol=1e-5, atol=1e-6)
    m = x.reshape(3, 11)
    assert _bits(kiln.vmap(f)(m)) == _bits(kiln.vmap(fj)(m))
    assert _bits(kiln.vmap(knp.arctan)(m)) == _bits(kiln.jit(kiln.vmap(knp.arctan))(m))
    g = kiln.grad(lambda v: knp.sum(f(v)))
    gj = kiln.grad(lambda v: knp.sum(fj(v)))
    assert _bits(kiln.vmap(g)(m)) == _bits(kiln.vmap(gj)(m))
    # second order: the derivative of the derivative keeps the calls too
    gg = kiln.grad(kiln.grad(knp.arctan))
    for v in np.float32([0.3, 1.7]):
        assert _bits(gg(v)) == _bits(kiln.jit(gg)(v))
        h = np.float64(v)
        np.testing.assert_allclose(gg(v), -2 * h / (1 + h * h) ** 2, rtol=1e-6)


def test_jit_inline_dissolves_into_staging_traces():
    # JAX's jit(inline=True): no jit_call equation under make_jaxpr or jit; an ordinary jit keeps its call
    f = kiln.jit(lambda x: knp.sin(x) * 2, inline=True)
    names = [e.prim.name for e in kiln.make_ir(lambda x: f(x) + 1)(1.0).ir.eqns]
    assert names == ["sin", "mul", "add"]
    g = kiln.jit(lambda x: knp.sin(x) * 2)
    assert "jit_call" in [e.prim.name for e in kiln.make_ir(lambda x: g(x) + 1)(1.0).ir.eqns]
    np.testing.assert_allclose(kiln.jit(lambda x: f(x) + 1)(1.0), 2 * np.sin(1.0) + 1, rtol=1e-6)
    np.testing.assert_allclose(kiln.grad(f)(1.0), 2 * np.cos(1.0), rtol=1e-6)


def test_staging_traces_inline_the_functions():
    # make_jaxpr, jit and control-flow bodies stage the functions' primitives, as JAX inlines jit(inline=True)
    text = str(kiln.make_jaxpr(kiln.grad(knp.arctan))(0.95))
    assert "atan" in text and "jit_call" not in text
    ir = kiln.make_ir(lambda v: kiln.grad(lambda u: knp.sum(knp.tanh(u)))(v))(knp.ones(3))
    assert "jit_call" not in [e.prim.name for e in ir.ir.eqns]
    # a scan body under an eager grad is staged too
    def loss(v):
        carry, _ = lax.scan(lambda c, _: (knp.tanh(c) * 0.5, None), v, None, length=3)
        return knp.sum(carry)
    x = knp.asarray(RNG.standard_normal(5).astype(np.float32))
    np.testing.assert_allclose(kiln.grad(loss)(x), kiln.jit(kiln.grad(loss))(x), rtol=1e-6)


def test_python_control_flow_and_concrete_values_still_work_under_eager_grad():
    def f(x):
        y = knp.arctan(x)
        if y > 0.5:  # the call's output has a concrete value under eager grad (its program runs)
            return knp.sin(y) * float(knp.cos(0.0))
        return y * 2
    np.testing.assert_allclose(kiln.grad(f)(2.0), np.cos(np.arctan(2.0)) / 5.0, rtol=1e-6)
    np.testing.assert_allclose(kiln.grad(f)(0.1), 2.0 / 1.01, rtol=1e-6)
    with pytest.raises(kiln.errors.ConcretizationTypeError, match="depends on the differentiated argument"):
        kiln.grad(lambda x: x * float(knp.sin(x)))(1.0)


def test_errors_inside_the_functions_name_them():
    with pytest.raises(ValueError, match="kiln.numpy"):
        kiln.grad(lambda x: knp.sum(knp.add(x, knp.ones(4))))(knp.ones(3))


def test_weak_types_and_integer_arguments():
    g = kiln.grad(lambda x: knp.arctan(x) * 2)(1.0)
    assert g.dtype == np.float32 and g.weak_type == kiln.jit(kiln.grad(lambda x: knp.arctan(x) * 2))(1.0).weak_type
    # an integer operand of a library function under grad (no derivative through it)
    np.testing.assert_allclose(kiln.grad(lambda x, n: knp.sum(knp.power(x, n)))(knp.full(2, 3.0), knp.asarray(2)),
                               [6.0, 6.0])
