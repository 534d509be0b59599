"""``symbolic_zeros=True`` for custom_jvp and custom_vjp (as JAX): the rules see ``SymbolicZero`` for tangents and
cotangents known to be zero, custom_vjp's fwd sees ``CustomVJPPrimal(value, perturbed)``, under every
transformation. Expected values are hand-derived (NumPy) or finite differences (check_grads)."""
import functools

import numpy as np
import pytest
from check_grads import check_grads
from kiln.frontend.ad.custom import SymbolicZeroMismatchError, SymbolicZerosRematError
from kiln.frontend.ad.symbolic_zeros import (
    CustomVJPPrimal,
    SymbolicZero,
    custom_vjp_primal_tree_values,
    zero_from_primal,
)
from kiln.frontend.ad.tangents import float0

import kiln
import kiln.numpy as knp

X, Y = np.float32(0.7), np.float32(1.3)
XS, YS = np.float32([0.1, 0.5, 0.9]), np.float32([1.1, 1.2, 1.3])


def _kind(t) -> str:
    """How a rule saw a tangent or primal: 'Z' a SymbolicZero, 'P+'/'P-' a perturbed/unperturbed
    CustomVJPPrimal, 'A' an array (or tracer)."""
    if type(t) is SymbolicZero:
        return "Z"
    if type(t) is CustomVJPPrimal:
        return "P+" if t.perturbed else "P-"
    return "A"


# -- the objects -----------------------------------------------------------------------------------
def test_symbolic_zero_reads_its_abstract_value():
    z = SymbolicZero(kiln.ShapedArray((2, 3), np.float32))
    assert repr(z) == "SymbolicZero"
    assert (z.shape, z.dtype, z.ndim, z.size, z.weak_type) == ((2, 3), np.float32, 2, 6, False)
    assert z.aval == kiln.ShapedArray((2, 3), np.float32) and z.str_short() == "f32[2,3]"
    assert SymbolicZero(kiln.ShapeDtypeStruct((4,), np.float32)).aval == kiln.ShapedArray((4,), np.float32)
    assert kiln.tree_util.tree_leaves([z, 1.0])[0] is z  # a leaf, as in JAX
    with pytest.raises(AttributeError, match="SymbolicZero has no attribute nope"):
        z.nope  # noqa: B018


def test_symbolic_zero_from_primal_value():
    assert SymbolicZero.from_primal_value(knp.ones((2,), np.float32)).aval == kiln.ShapedArray((2,), np.float32)
    assert SymbolicZero.from_primal_value(2.0).aval == kiln.ShapedArray((), np.float32, True)
    # an integer value's tangent is float0, as in JAX
    assert SymbolicZero.from_primal_value(np.int32(3)).aval == kiln.ShapedArray((), float0)


def test_symbolic_zero_of_something_else_raises():
    with pytest.raises(TypeError, match=r"SymbolicZero: expected an abstract value \(a kiln.core.ShapedArray or "
                                        r"kiln.ShapeDtypeStruct\), got tuple; SymbolicZero.from_primal_value"):
        SymbolicZero((2, 3))


def test_symbolic_zero_used_as_an_array_raises():
    z = SymbolicZero.from_primal_value(np.float32(1.0))
    with pytest.raises(TypeError, match=r"a SymbolicZero \(a zero tangent of type f32\[\]\) was used as an array.*"
                                        r"test `type\(t\) is SymbolicZero`"):
        np.asarray(z)
    with pytest.raises(TypeError, match=r"a SymbolicZero \(a zero tangent of type f32\[\]\) was used as an array"):
        kiln.lax.add(knp.float32(1.0), z)
    with pytest.raises(TypeError, match=r"kiln.numpy.sin: argument 0 of type SymbolicZero"):
        knp.sin(z)


def test_zero_from_primal():
    tree = {"a": np.float32([1.0, 2.0]), "b": np.int32(3)}
    zeros = zero_from_primal(tree)
    np.testing.assert_array_equal(np.asarray(zeros["a"]), np.zeros(2, np.float32))
    assert zeros["a"].dtype == np.float32 and zeros["b"].dtype == float0 and zeros["b"].shape == ()
    symbolic = zero_from_primal(tree, symbolic_zeros=True)
    assert type(symbolic["a"]) is SymbolicZero and symbolic["a"].aval == kiln.ShapedArray((2,), np.float32)
    assert symbolic["b"].aval == kiln.ShapedArray((), float0)


def test_custom_vjp_primal_and_its_tree_values():
    p = CustomVJPPrimal(1.5, True)
    assert (p.value, p.perturbed) == (1.5, True) and p == CustomVJPPrimal(1.5, True)
    assert custom_vjp_primal_tree_values({"a": p, "b": [CustomVJPPrimal(2, False)]}) == {"a": 1.5, "b": [2]}
    with pytest.raises(TypeError, match=r"custom_vjp_primal_tree_values: expected a tree whose leaves are "
                                        r"CustomVJPPrimal .* got a leaf of type float"):
        custom_vjp_primal_tree_values([1.0])


# -- custom_jvp --------------------------------------------------------------------------------------
def _jvp_function(log: list):
    """``f(x, y, n) = (sin(x) y + n, cos(y))`` with a symbolic-zeros rule that logs what it sees and returns a
    SymbolicZero for the second output's tangent where ``y``'s is one."""
    @kiln.custom_jvp
    def f(x, y, n):
        return knp.sin(x) * y + n, knp.cos(y)

    def f_jvp(primals, tangents):
        x, y, n = primals
        tx, ty, tn = tangents
        log.append((_kind(tx), _kind(ty), _kind(tn)))
        assert type(tn) is SymbolicZero and tn.dtype == float0  # an integer input's tangent
        out = f(x, y, n)
        t0 = knp.zeros_like(out[0])
        if type(tx) is not SymbolicZero:
            t0 = t0 + knp.cos(x) * y * tx
        if type(ty) is not SymbolicZero:
            t0 = t0 + knp.sin(x) * ty
        t1 = SymbolicZero.from_primal_value(out[1]) if type(ty) is SymbolicZero else -knp.sin(y) * ty
        return out, (t0, t1)

    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


def _dx0(x, y):  # d out0 / dx
    return np.cos(x) * y


def _dy0(x, y):  # d out0 / dy
    return np.sin(x)


TRANSFORMS = {
    # name: (run(f) -> value, expected value, what the rule sees for (x, y, n))
    "grad_x": (lambda f: kiln.grad(lambda x, y: f(x, y, 2)[0])(X, Y), _dx0(X, Y), ("A", "Z", "Z")),
    "grad_y": (lambda f: kiln.grad(lambda x, y: f(x, y, 2)[0], 1)(X, Y), _dy0(X, Y), ("Z", "A", "Z")),
    "jit_grad": (lambda f: kiln.jit(kiln.grad(lambda x, y: f(x, y, 2)[0]))(X, Y), _dx0(X, Y), ("A", "Z", "Z")),
    "grad_jit": (lambda f: kiln.grad(kiln.jit(lambda x, y: f(x, y, 2)[0]))(X, Y), _dx0(X, Y), ("A", "Z", "Z")),
    "closed_over": (lambda f: kiln.grad(lambda x: f(x, knp.float32(Y), 2)[0])(X), _dx0(X, Y), ("A", "Z", "Z")),
    "jvp": (lambda f: kiln.jvp(lambda x: f(x, Y, 2)[0], (X,), (np.float32(2.0),))[1], 2 * _dx0(X, Y),
            ("A", "Z", "Z")),
    "jacfwd": (lambda f: kiln.jacfwd(lambda y: f(X, y, 2)[0])(Y), _dy0(X, Y), ("Z", "A", "Z")),
    "linearize": (lambda f: kiln.linearize(lambda x: f(x, Y, 2)[0], X)[1](np.float32(1.0)), _dx0(X, Y),
                  ("A", "Z", "Z")),
    "vmap_grad": (lambda f: kiln.vmap(kiln.grad(lambda x, y: f(x, y, 2)[0]))(XS, YS), _dx0(XS, YS),
                  ("A", "Z", "Z")),
    "grad_vmap": (lambda f: kiln.grad(lambda xs: kiln.vmap(f, (0, None, None))(xs, Y, 2)[0].sum())(XS),
                  _dx0(XS, Y), ("A", "Z", "Z")),
    "grad_vmap_vmap": (lambda f: kiln.grad(lambda a: kiln.vmap(kiln.vmap(f, (0, None, None)), (0, None, None))(
        a, Y, 2)[0].sum())(np.stack([XS, XS])), _dx0(np.stack([XS, XS]), Y), ("A", "Z", "Z")),
    "jacrev": (lambda f: kiln.jacrev(lambda x: f(x, Y, 2)[0])(XS), np.diag(_dx0(XS, Y)), ("A", "Z", "Z")),
    "scan": (lambda f: kiln.grad(lambda x: kiln.lax.scan(lambda c, _: (f(c, Y, 2)[0] * 0.5, None), x, None,
                                                         length=1)[0])(X), 0.5 * _dx0(X, Y), ("A", "Z", "Z")),
    "cond": (lambda f: kiln.grad(lambda x: kiln.lax.cond(x > 0, lambda x: f(x, Y, 2)[0], lambda x: x, x))(X),
             _dx0(X, Y), ("A", "Z", "Z")),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_custom_jvp_rule_sees_symbolic_zeros(name):
    run, expected, seen = TRANSFORMS[name]
    log = []
    np.testing.assert_allclose(np.asarray(run(_jvp_function(log))), expected, rtol=1e-5, atol=1e-6)
    assert log and set(log) == {seen}


def test_custom_jvp_returned_symbolic_zero_is_a_zero_tangent():
    log = []
    f = _jvp_function(log)
    # d cos(y) / dx through the rule: a SymbolicZero, a zero tangent (jvp) and a zero gradient (grad)
    out, t = kiln.jvp(lambda x: f(x, Y, 2), (X,), (np.float32(1.0),))
    np.testing.assert_allclose(np.asarray(t[0]), _dx0(X, Y), rtol=1e-6)
    assert float(t[1]) == 0.0 and t[1].dtype == np.float32
    assert float(kiln.grad(lambda x: f(x, Y, 2)[1] + f(x, Y, 2)[0])(X)) == pytest.approx(_dx0(X, Y), rel=1e-6)
    # both tangents used: every rule input is an array but n's
    g = kiln.grad(lambda x, y: f(x, y, 2)[0] + f(x, y, 2)[1], (0, 1))(X, Y)
    np.testing.assert_allclose([float(v) for v in g], [_dx0(X, Y), _dy0(X, Y) - np.sin(Y)], rtol=1e-6)
    assert set(log[-2:]) == {("A", "A", "Z")}


def test_custom_jvp_symbolic_zeros_second_order():
    log = []
    f = _jvp_function(log)
    # d2/dx2 (sin(x) y) = -sin(x) y
    assert float(kiln.grad(kiln.grad(lambda x, y: f(x, y, 2)[0]))(X, Y)) == pytest.approx(-np.sin(X) * Y, rel=1e-5)
    assert float(kiln.hessian(lambda x: f(x, Y, 2)[0])(X)) == pytest.approx(-np.sin(X) * Y, rel=1e-5)
    assert set(log) == {("A", "Z", "Z")}


def test_custom_jvp_symbolic_zeros_finite_differences():
    f = _jvp_function([])
    check_grads(lambda x, y: f(x, y, 2), (X, Y), order=2)
    check_grads(lambda x: f(x, Y, 2), (XS,), order=1, jit=True)


def test_custom_jvp_symbolic_zeros_eager_and_jit_agree():
    f = _jvp_function([])
    fun = kiln.value_and_grad(lambda x, y: f(x, y, 2)[0] * f(x, y, 2)[1])
    eager, jitted = fun(XS[0], Y), kiln.jit(fun)(XS[0], Y)
    assert [float(v) for v in kiln.tree_util.tree_leaves(eager)] == [
        float(v) for v in kiln.tree_util.tree_leaves(jitted)]
    assert float(f(X, Y, 2)[0]) == float(kiln.jit(f)(X, Y, 2)[0]) == pytest.approx(np.sin(X) * Y + 2, rel=1e-6)


def test_custom_jvp_symbolic_zeros_with_nondiff_argnums_and_pytrees():
    seen = []

    @functools.partial(kiln.custom_jvp, nondiff_argnums=(0,))
    def f(scale, d):
        return scale * d["a"] * d["b"]

    def f_jvp(scale, primals, tangents):
        (d,), (t,) = primals, tangents
        seen.append({k: _kind(v) for k, v in t.items()})
        out = f(scale, d)
        tout = knp.zeros_like(out)
        for k, other in (("a", "b"), ("b", "a")):
            if type(t[k]) is not SymbolicZero:
                tout = tout + scale * d[other] * t[k]
        return out, tout

    f.defjvp(f_jvp, symbolic_zeros=True)
    assert float(kiln.grad(lambda a: f(3.0, {"a": a, "b": Y}))(X)) == pytest.approx(3 * Y, rel=1e-6)
    assert seen == [{"a": "A", "b": "Z"}]


def test_custom_jvp_without_symbolic_zeros_gets_zeros():
    seen = []

    @kiln.custom_jvp
    def f(x, y, n):
        return x * y + n

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y, n = primals
        tx, ty, tn = tangents
        seen.append((_kind(tx), _kind(ty), np.asarray(tn).dtype == float0))
        return f(x, y, n), tx * y + x * ty

    assert float(kiln.grad(f)(X, Y, 2)) == pytest.approx(Y)
    assert seen == [("A", "A", True)]  # a zero array for y, float0 zeros for the integer n
    seen.clear()
    # grad of vmap with an integer argument (its tangents used to be vmapped as float0 arrays, which failed)
    np.testing.assert_allclose(np.asarray(kiln.grad(lambda xs: kiln.vmap(f, (0, None, None))(xs, Y, 2).sum())(XS)),
                               np.full(3, Y), rtol=1e-6)
    assert seen and all(s == ("A", "A", True) for s in seen)


def test_custom_jvp_defjvps_resets_symbolic_zeros():
    f = kiln.custom_jvp(lambda x: knp.sin(x))
    f.defjvp(lambda p, t: (knp.sin(p[0]), knp.cos(p[0]) * t[0]), symbolic_zeros=True)
    assert f.symbolic_zeros
    f.defjvps(lambda t, out, x: knp.cos(x) * t)
    assert not f.symbolic_zeros
    assert float(kiln.grad(f)(X)) == pytest.approx(np.cos(X), rel=1e-6)


def test_custom_jvp_rule_gets_symbolic_zero_after_a_zero_derivative():
    """An input whose tangent is a SymbolicZero that another custom rule returned reaches the rule as a SymbolicZero
    (kiln's trace took it as differentiated: the rule runs again with what JAX gives it)."""
    seen = []
    a = kiln.custom_jvp(lambda x: x * 2)
    a.defjvp(lambda p, t: (a(p[0]), SymbolicZero.from_primal_value(p[0])), symbolic_zeros=True)
    b = kiln.custom_jvp(lambda x, y: x * y)

    def b_jvp(p, t):
        seen.append((_kind(t[0]), _kind(t[1])))
        tout = knp.zeros_like(p[0])
        if type(t[0]) is not SymbolicZero:
            tout = tout + t[0] * p[1]
        if type(t[1]) is not SymbolicZero:
            tout = tout + t[1] * p[0]
        return b(*p), tout

    b.defjvp(b_jvp, symbolic_zeros=True)
    assert float(kiln.grad(lambda x: b(a(x), x))(X)) == pytest.approx(2 * X, rel=1e-6)
    assert seen[-1] == ("Z", "A")


# -- custom_vjp --------------------------------------------------------------------------------------
def _vjp_function(log: list):
    """``g(x, y) = (sin(x) y, cos(y))`` with symbolic-zeros rules that log what they see."""
    @kiln.custom_vjp
    def g(x, y):
        return knp.sin(x) * y, knp.cos(y)

    def g_fwd(x, y):
        log.append(("fwd", _kind(x), _kind(y)))
        x, y = custom_vjp_primal_tree_values((x, y))
        return g(x, y), (x, y)

    def g_bwd(res, ct):
        x, y = res
        log.append(("bwd", _kind(ct[0]), _kind(ct[1])))
        if type(ct[0]) is SymbolicZero:
            return None, -knp.sin(y) * ct[1]
        gy = knp.sin(x) * ct[0]
        if type(ct[1]) is not SymbolicZero:
            gy = gy - knp.sin(y) * ct[1]
        return knp.cos(x) * y * ct[0], gy

    g.defvjp(g_fwd, g_bwd, symbolic_zeros=True)
    return g


VJP_TRANSFORMS = {
    # name: (run(g) -> value, expected value, what fwd and bwd see)
    "grad_x": (lambda g: kiln.grad(lambda x, y: g(x, y)[0])(X, Y), _dx0(X, Y),
               {("fwd", "P+", "P-"), ("bwd", "A", "Z")}),
    "grad_y_second": (lambda g: kiln.grad(lambda x, y: g(x, y)[1], 1)(X, Y), -np.sin(Y),
                      {("fwd", "P-", "P+"), ("bwd", "Z", "A")}),
    "jit_grad": (lambda g: kiln.jit(kiln.grad(lambda x, y: g(x, y)[0]))(X, Y), _dx0(X, Y),
                 {("fwd", "P+", "P-"), ("bwd", "A", "Z")}),
    "grad_jit": (lambda g: kiln.grad(kiln.jit(lambda x, y: g(x, y)[0]))(X, Y), _dx0(X, Y),
                 {("fwd", "P+", "P-"), ("bwd", "A", "Z")}),
    "vjp_with_cotangents": (lambda g: kiln.vjp(g, X, Y)[1]((np.float32(1.0), np.float32(0.0)))[1], _dy0(X, Y),
                            {("fwd", "P+", "P+"), ("bwd", "A", "A")}),
    "vmap_grad": (lambda g: kiln.vmap(kiln.grad(lambda x, y: g(x, y)[0]))(XS, YS), _dx0(XS, YS),
                  {("fwd", "P+", "P-"), ("bwd", "A", "Z")}),
    "grad_vmap": (lambda g: kiln.grad(lambda xs: kiln.vmap(g, (0, None))(xs, Y)[0].sum())(XS), _dx0(XS, Y),
                  {("fwd", "P+", "P-"), ("bwd", "A", "Z")}),
    "grad_vmap_y": (lambda g: kiln.grad(lambda ys: kiln.vmap(g, (None, 0))(X, ys)[1].sum())(YS), -np.sin(YS),
                    {("fwd", "P-", "P+"), ("bwd", "Z", "A")}),
    "jacrev": (lambda g: kiln.jacrev(lambda x: g(x, YS)[0])(XS), np.diag(_dx0(XS, YS)),
               {("fwd", "P+", "P-"), ("bwd", "A", "Z")}),
    "scan": (lambda g: kiln.grad(lambda x: kiln.lax.scan(lambda c, _: (g(c, Y)[0] * 0.5, None), x, None,
                                                         length=1)[0])(X), 0.5 * _dx0(X, Y),
             {("fwd", "P+", "P-"), ("bwd", "A", "Z")}),
    "cond": (lambda g: kiln.grad(lambda x: kiln.lax.cond(x > 0, lambda x: g(x, Y)[0], lambda x: x, x))(X),
             _dx0(X, Y), {("fwd", "P+", "P-"), ("bwd", "A", "Z")}),
}


@pytest.mark.parametrize("name", list(VJP_TRANSFORMS))
def test_custom_vjp_rules_see_perturbed_and_symbolic_zeros(name):
    run, expected, seen = VJP_TRANSFORMS[name]
    log = []
    np.testing.assert_allclose(np.asarray(run(_vjp_function(log))), expected, rtol=1e-5, atol=1e-6)
    assert set(log) == seen


def test_custom_vjp_symbolic_zeros_finite_differences_and_eager_jit():
    g = _vjp_function([])
    check_grads(lambda x, y: g(x, y), (X, Y), order=2, modes=("rev",))
    check_grads(lambda x, y: g(x, y)[0], (XS, YS), order=1, modes=("rev",), jit=True)
    fun = kiln.value_and_grad(lambda x, y: g(x, y)[0] * 3.0, (0, 1))
    eager, jitted = fun(X, Y), kiln.jit(fun)(X, Y)
    assert [float(v) for v in kiln.tree_util.tree_leaves(eager)] == [
        float(v) for v in kiln.tree_util.tree_leaves(jitted)]
    assert float(g(X, Y)[0]) == float(kiln.jit(g)(X, Y)[0])  # not differentiated: the function runs


def test_custom_vjp_bwd_may_return_symbolic_zero():
    f = kiln.custom_vjp(lambda x, y: x * y)
    f.defvjp(lambda x, y: (x.value * y.value, (x.value, y.value)),
             lambda r, g: (g * r[1], SymbolicZero.from_primal_value(r[1])), symbolic_zeros=True)
    gx, gy = kiln.grad(f, (0, 1))(X, Y)
    assert (float(gx), float(gy)) == (pytest.approx(Y), 0.0)
    # without symbolic_zeros too, as in JAX
    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1], SymbolicZero.from_primal_value(r[1])))
    assert float(kiln.grad(f, 1)(X, Y)) == 0.0


def test_custom_vjp_symbolic_zeros_with_integer_nondiff_and_pytree_arguments():
    seen = []

    @functools.partial(kiln.custom_vjp, nondiff_argnums=(0,))
    def f(fn, d, n):
        return fn(d["a"]) * d["b"] + n

    def f_fwd(fn, d, n):
        seen.append((fn, {k: _kind(v) for k, v in d.items()}, _kind(n)))
        d = custom_vjp_primal_tree_values(d)
        return f(fn, d, n.value), (d["a"], d["b"])

    def f_bwd(fn, res, g):
        a, b = res
        return {"a": knp.cos(a) * b * g, "b": None}, None

    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
    assert float(kiln.grad(lambda a: f(knp.sin, {"a": a, "b": Y}, 2))(X)) == pytest.approx(_dx0(X, Y), rel=1e-6)
    assert seen == [(knp.sin, {"a": "P+", "b": "P-"}, "P-")]


def test_custom_vjp_symbolic_zeros_nested_grad():
    """bwd is differentiated by the outer grad: d/dx (cos(x) y) = -sin(x) y."""
    g = _vjp_function([])
    assert float(kiln.grad(kiln.grad(lambda x, y: g(x, y)[0]))(X, Y)) == pytest.approx(-np.sin(X) * Y, rel=1e-5)


# -- errors ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("aval, got", [(kiln.ShapedArray((2,), np.float32), r"f32\[2\]"),
                                       (kiln.ShapedArray((), np.int32), r"i32\[\]")])
def test_custom_jvp_symbolic_zero_of_the_wrong_type_raises(aval, got):
    f = kiln.custom_jvp(lambda x: knp.sin(x))
    f.defjvp(lambda p, t: (knp.sin(p[0]), SymbolicZero(aval)), symbolic_zeros=True)
    for diff in (kiln.grad(f), lambda x: kiln.jvp(f, (x,), (x,)), kiln.grad(kiln.jit(f))):
        with pytest.raises(kiln.CustomDerivativeError, match=rf"custom_jvp rule of <lambda> \(tangent output\): "
                                                              rf"output 0 is a SymbolicZero of type {got}, but the "
                                                              r"tangent of the output f32\[\] is f32\[\]"):
            diff(X)


def test_custom_vjp_symbolic_zero_of_the_wrong_type_raises():
    f = kiln.custom_vjp(lambda x, y: x * y)
    f.defvjp(lambda x, y: (x.value * y.value, (x.value, y.value)),
             lambda r, g: (g * r[1], SymbolicZero(kiln.ShapedArray((3,), np.float32))), symbolic_zeros=True)
    for diff in (kiln.grad(f, (0, 1)), kiln.jit(kiln.grad(f, (0, 1))),
                 lambda x, y: kiln.grad(lambda xs: kiln.vmap(f, (0, None))(xs, y).sum())(XS)):
        with pytest.raises(SymbolicZeroMismatchError, match=r"custom_vjp bwd of <lambda>: cotangent 1 is a "
                                                            r"SymbolicZero of type f32\[3\], but the argument is "
                                                            r"f32\[\] \(its cotangent: f32\[\]\); return None"):
            diff(X, Y)
    assert issubclass(SymbolicZeroMismatchError, ValueError)  # JAX raises ValueError
    assert issubclass(SymbolicZeroMismatchError, kiln.CustomDerivativeError)


def test_custom_vjp_fwd_returning_a_custom_vjp_primal_raises():
    f = kiln.custom_vjp(lambda x: x * 2)
    f.defvjp(lambda x: (x.value * 2, x), lambda r, g: (g * 2,), symbolic_zeros=True)
    with pytest.raises(kiln.CustomDerivativeError, match=r"fwd of <lambda> returned a CustomVJPPrimal as leaf 0 of "
                                                         r"its residuals: .* use its \.value"):
        kiln.grad(f)(X)
    f.defvjp(lambda x: ((x, x.value), None), lambda r, g: (g[0],), symbolic_zeros=True)
    with pytest.raises(kiln.CustomDerivativeError, match=r"returned a CustomVJPPrimal as leaf 0 of its output"):
        kiln.grad(lambda x: f(x)[1])(X)


def test_custom_vjp_symbolic_zeros_with_optimize_remat_raises():
    f = kiln.custom_vjp(lambda x: x * 2)
    with pytest.raises(NotImplementedError, match=r"custom_vjp function <lambda>: defvjp\(\.\.\., "
                                                  r"symbolic_zeros=True, optimize_remat=True\) is not supported"):
        f.defvjp(lambda x: (x.value * 2, None), lambda r, g: (g * 2,), symbolic_zeros=True, optimize_remat=True)
    assert issubclass(SymbolicZerosRematError, kiln.KilnError)


def test_batched_custom_vjp_lin_keeps_zero_cotangents_symbolic():
    """The linear part of a custom_vjp call (custom_vjp_lin), batched and transposed with a zero cotangent for one
    output: bwd sees a SymbolicZero for it, per batch element."""
    from kiln.frontend.ad.api import _linearize_flat, _trace_flat
    from kiln.frontend.ad.transpose import UndefinedPrimal, backward_pass
    from kiln.frontend.batching.core import BatchContext, batch_closed
    from kiln.frontend.core.tracing import abstractify

    log = []
    g = _vjp_function(log)
    args = [knp.asarray(X), knp.asarray(Y)]
    closed, _ = _trace_flat(g, args, kiln.tree_util.tree_structure(tuple(args)), "g")
    _, residuals, lin, _, _, _ = _linearize_flat(closed, args)
    assert [e.prim.name for e in lin.ir.eqns] == ["custom_vjp_lin"]
    batched, out_dims = batch_closed(lin, [None] * len(residuals) + [0, 0], BatchContext(3))
    assert out_dims == [0, 0] and [e.prim.name for e in batched.ir.eqns] == ["custom_vjp_lin"]
    ct = np.float32([1.0, 2.0, 3.0])
    undefined = [UndefinedPrimal(abstractify(XS)), UndefinedPrimal(abstractify(YS))]
    log.clear()
    gx, gy = backward_pass(batched.ir, batched.consts, list(residuals) + undefined, [ct, None])[len(residuals):]
    np.testing.assert_allclose(np.asarray(gx), _dx0(X, Y) * ct, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gy), _dy0(X, Y) * ct, rtol=1e-6)
    assert log == [("bwd", "A", "Z")]
