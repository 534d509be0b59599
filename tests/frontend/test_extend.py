"""New primitives through JAX's extension API (its docs' "How JAX primitives work", with the imports changed):
kiln.extend.core.Primitive with def_impl/def_abstract_eval, and the rules in kiln.interpreters' tables:
ad.primitive_jvps/primitive_transposes, batching.primitive_batchers, mlir.register_lowering/lower_fun. Each rule a
primitive lacks is a NotImplementedError when it is needed, as in JAX."""
import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import core, lax
from kiln.extend import core as ext
from kiln.extend.mlir.dialects import stablehlo as hlo
from kiln.interpreters import ad, batching, mlir


def _multiply_add():
    """The tutorial's multiply_add primitive, with each rule added by the test that needs it."""
    p = ext.Primitive("multiply_add")
    return p, (lambda x, y, z: p.bind(x, y, z))


def _abstract_eval(xs, ys, zs):
    assert xs.shape == ys.shape == zs.shape
    return core.ShapedArray(xs.shape, xs.dtype)


def _lowering(ctx, xc, yc, zc):
    return [hlo.AddOp(hlo.MulOp(xc, yc), zc).result]


def _full(p, prim):
    """All of multiply_add's rules, as the tutorial defines them."""
    p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    p.def_abstract_eval(_abstract_eval)
    mlir.register_lowering(p, _lowering, platform="cpu")

    def jvp(arg_values, arg_tangents):
        x, y, z = arg_values
        xt, yt, zt = arg_tangents

        def make_zero(t):
            return lax.full_like(x, 0) if type(t) is ad.Zero else t
        return prim(x, y, z), prim(make_zero(xt), y, prim(x, make_zero(yt), make_zero(zt)))
    ad.primitive_jvps[p] = jvp

    def transpose(ct, x, y, z):
        if not ad.is_undefined_primal(x):
            assert ad.is_undefined_primal(y)
            ct_y = ad.Zero(y.aval) if type(ct) is ad.Zero else prim(x, ct, lax.full_like(x, 0))
            return None, ct_y, ct
        assert ad.is_undefined_primal(x)
        ct_x = ad.Zero(x.aval) if type(ct) is ad.Zero else prim(ct, y, lax.full_like(y, 0))
        return ct_x, None, ct
    ad.primitive_transposes[p] = transpose

    def batch(args, axes):
        assert axes[0] == axes[1] == axes[2]
        return prim(*args), axes[0]
    batching.primitive_batchers[p] = batch


def test_the_tutorial_step_by_step():
    p, prim = _multiply_add()

    def square_add(a, b):
        return prim(a, a, b)

    with pytest.raises(NotImplementedError, match="Evaluation rule for 'multiply_add' not implemented"):
        square_add(2.0, 10.0)
    p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    assert square_add(2.0, 10.0) == 14.0  # the user's NumPy implementation, eagerly
    with pytest.raises(NotImplementedError, match="Abstract evaluation for 'multiply_add' not implemented"):
        kiln.jit(square_add)(2.0, 10.0)
    p.def_abstract_eval(_abstract_eval)
    with pytest.raises(NotImplementedError, match="MLIR translation rule for primitive 'multiply_add' not found for "
                                                  "platform cpu"):
        kiln.jit(square_add)(2.0, 10.0)
    mlir.register_lowering(p, _lowering, platform="cpu")
    assert float(kiln.jit(square_add)(2.0, 10.0)) == 14.0
    assert float(kiln.jit(square_add, static_argnums=1)(2.0, 10.0)) == 14.0
    text = kiln.jit(square_add).lower(2.0, 10.0).as_text()
    assert "stablehlo.multiply" in text and "stablehlo.add" in text
    assert "multiply_add" in str(kiln.make_jaxpr(square_add)(2.0, 10.0))
    with pytest.raises(NotImplementedError, match=r"differentiation of primitive 'multiply_add' is not implemented: "
                                                  r"give it a JVP rule with kiln.interpreters.ad.primitive_jvps"):
        kiln.jvp(square_add, (2.0, 10.0), (1.0, 1.0))


def test_derivatives_and_batching_through_the_users_rules():
    p, prim = _multiply_add()
    _full(p, prim)

    def square_add(a, b):
        return prim(a, a, b)

    y, t = kiln.jvp(square_add, (2.0, 10.0), (1.0, 1.0))
    assert (float(y), float(t)) == (14.0, 5.0)  # xt*y + x*yt + zt
    y, t = kiln.jit(lambda v, u: kiln.jvp(square_add, v, u))((2.0, 10.0), (1.0, 1.0))
    assert (float(y), float(t)) == (14.0, 5.0)
    assert float(kiln.grad(square_add)(2.0, 10.0)) == 4.0
    assert float(kiln.jit(kiln.grad(square_add))(2.0, 10.0)) == 4.0
    a, b = np.float32([2.0, 3.0]), np.float32([10.0, 20.0])
    np.testing.assert_array_equal(kiln.vmap(square_add)(a, b), a * a + b)
    np.testing.assert_array_equal(kiln.jit(kiln.vmap(square_add))(a, b), a * a + b)
    assert p in batching.primitive_batchers and p in ad.primitive_jvps and p in ad.primitive_transposes


def test_missing_transpose_and_batching_rules_raise_not_implemented():
    p, prim = _multiply_add()
    p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    p.def_abstract_eval(_abstract_eval)
    mlir.register_lowering(p, _lowering)  # every platform
    ad.primitive_jvps[p] = lambda primals, tangents: (prim(*primals), prim(tangents[0], primals[1], tangents[2]))
    with pytest.raises(NotImplementedError, match=r"reverse-mode differentiation of primitive 'multiply_add' .*: give "
                                                  r"it one with kiln.interpreters.ad.primitive_transposes"):
        kiln.grad(lambda a: prim(a, a, a))(2.0)
    with pytest.raises(NotImplementedError, match=r"batching of primitive 'multiply_add' is not implemented: give it a "
                                                  r"rule with kiln.interpreters.batching.primitive_batchers"):
        kiln.vmap(lambda a: prim(a, a, a))(np.ones(2, np.float32))


def test_users_rules_get_tuples_and_impls_get_kilns_dtypes():
    # as JAX: JVP and batching rules take tuples; an eager impl gets NumPy float64 arguments as float32 (x64 off),
    # so vmap of the primitive on float64 host arrays gives float32, as its abstract evaluation says
    p, prim = _multiply_add()
    seen = []

    def impl(x, y, z):
        seen.append(np.asarray(x).dtype)
        return np.add(np.multiply(x, y), z)
    p.def_impl(impl)
    p.def_abstract_eval(_abstract_eval)
    mlir.register_lowering(p, _lowering)

    def jvp(primals, tangents):
        seen.append((type(primals), type(tangents)))
        return prim(*primals), prim(tangents[0], primals[1], tangents[2])

    def batch(args, dims):
        seen.append((type(args), type(dims)))
        assert dims == (0, 0, 0)
        return prim(*args), 0
    ad.primitive_jvps[p] = jvp
    batching.primitive_batchers[p] = batch
    out = p.bind(np.array([2.0, 3.0]), np.array([2.0, 3.0]), np.array([10.0, 20.0]))
    assert seen.pop() == np.float32 and np.asarray(out).dtype == np.float32
    out = kiln.vmap(lambda a, b: prim(a, a, b))(np.array([2.0, 3.0]), np.array([10.0, 20.0]))
    assert seen[0] == (tuple, tuple) and out.dtype == np.float32
    np.testing.assert_array_equal(out, [14.0, 29.0])
    kiln.jvp(lambda a: prim(a, a, a), (2.0,), (1.0,))
    assert (tuple, tuple) in seen[1:]


def test_platforms_lower_fun_multiple_results_and_effects():
    # a rule for another platform only: none for this one
    p = ext.Primitive("only_on_tpu")
    p.def_abstract_eval(lambda x: x)
    mlir.register_lowering(p, _lowering, platform="tpu")
    with pytest.raises(NotImplementedError, match="not found for platform cpu"):
        kiln.jit(lambda x: p.bind(x))(1.0)
    # lower_fun: the rule is a kiln function, traced and emitted in place; a primitive of several results
    q = ext.Primitive("sin_and_cos")
    q.multiple_results = True
    q.def_abstract_eval(lambda x, *, scale: [x, x])
    mlir.register_lowering(q, mlir.lower_fun(lambda x, *, scale: (knp.sin(x) * scale, knp.cos(x) * scale)))
    s, c = kiln.jit(lambda x: q.bind(x, scale=2.0))(np.float32([0.5, 1.0]))
    np.testing.assert_allclose(s, 2 * np.sin([0.5, 1.0]), rtol=1e-6)
    np.testing.assert_allclose(c, 2 * np.cos([0.5, 1.0]), rtol=1e-6)
    # an effectful abstract eval: the equation stays when its result is unused
    r = ext.Primitive("noisy")
    r.def_effectful_abstract_eval(lambda x: (x, {"io"}))
    mlir.register_lowering(r, lambda ctx, x: [x])
    kiln.jit(lambda x: (r.bind(x), x + 1)[1]).lower(1.0)
    assert r.has_effects
    assert "noisy" in [e.prim.name for e in kiln.make_ir(lambda x: (r.bind(x), x + 1)[1])(1.0).ir.eqns]
    # a user's primitive is not one of kiln's: any name, and the registry tests do not ask rules of it
    from kiln.frontend.core.primitive import registry
    assert registry["sin"] is not ext.Primitive("sin") and "only_on_tpu" not in registry
