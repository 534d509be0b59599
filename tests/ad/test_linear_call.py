"""``linear_call(fun, fun_transpose, residual_args, linear_args)``: a linear function with a user-given transpose.

The functions here mostly pair ``fun`` with a transpose that differs from its true one (twice it, or a constant),
so that a result shows which of the two a transformation used: forward mode and batching must use ``fun``,
reverse mode (grad, vjp, linear_transpose) ``fun_transpose``. Expected values are computed by hand or with NumPy.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from check_grads import check_grads
from kiln.frontend.ad.linear_call import LinearCallError, linear_call

import kiln
import kiln.numpy as knp
from kiln import lax

M = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0
X = np.array([1.0, -2.0, 0.5], np.float32)
C = np.array([3.0, -1.0], np.float32)


def _matvec(m, x):
    return m @ x


def _twice_transpose(m, ct):  # not the transpose of _matvec: twice it, so that its use shows
    return 2.0 * (m.T @ ct)


def mv(m, x):
    return linear_call(_matvec, _twice_transpose, m, x)


# -- the docstring's examples (JAX's) ----------------------------------------------------------------------

def _f(r, x):
    return x / r


def _t(r, t):
    return t / r


def div_add(x, denom):
    return x + linear_call(_f, _t, denom, x)


def transpose(f, x_example):
    def transposed(y):
        (x,) = kiln.linear_transpose(f, x_example)(y)
        return x
    return transposed


def custom_id(x):
    def f(_, x):
        return x

    def t(_, t):
        return 7.0
    return linear_call(f, t, (), x)


def test_docstring_div_add():
    out = div_add(9.0, 3.0)
    assert isinstance(out, kiln.Array) and out.dtype == np.float32 and out.weak_type
    assert float(out) == 12.0
    assert float(transpose(functools.partial(div_add, denom=3.0), 1.0)(18.0)) == 24.0  # custom
    assert float(transpose(lambda x: x + x / 3.0, 1.0)(18.0)) == 24.0  # reference


def test_docstring_custom_id_and_transposes_of_transposes():
    assert float(custom_id(1.0)) == 1.0
    assert float(transpose(custom_id, 1.0)(1.0)) == 7.0
    assert float(transpose(transpose(custom_id, 1.0), 1.0)(1.0)) == 1.0
    assert float(transpose(transpose(transpose(custom_id, 1.0), 1.0), 1.0)(1.0)) == 7.0


# -- evaluation ---------------------------------------------------------------------------------------------

def test_eager_and_jit_evaluate_fun():
    np.testing.assert_allclose(mv(M, X), M @ X, rtol=1e-6)
    np.testing.assert_allclose(kiln.jit(mv)(M, X), M @ X, rtol=1e-6)
    assert float(kiln.jit(div_add)(9.0, 3.0)) == 12.0


def test_one_equation_holding_both_functions():
    ir = kiln.make_ir(div_add)(9.0, 3.0)
    (eqn,) = [e for e in ir.eqns if e.prim.name == "linear_call"]
    assert eqn.params["num_res"] == 1 and eqn.params["num_consts"] == 0
    text = str(ir)
    assert "linear_call[" in text and "transpose=_t" in text and "div" in text


def test_pytrees_of_residuals_inputs_and_outputs():
    def fun(r, x):
        a, b = x
        return {"s": a * r["k"] + b, "d": [a - b]}

    def fun_t(r, ct):  # the true transpose
        s, (d,) = ct["s"], ct["d"]
        return (s * r["k"] + d, s - d)

    def g(a, b):
        return linear_call(fun, fun_t, {"k": 3.0}, (a, b))
    out = g(1.0, 2.0)
    assert float(out["s"]) == 5.0 and float(out["d"][0]) == -1.0
    _, pullback = kiln.vjp(g, 1.0, 2.0)
    ca, cb = pullback({"s": 1.0, "d": [10.0]})
    assert (float(ca), float(cb)) == (13.0, -9.0)
    # a single array and a list are pytrees too; fun may return several outputs
    np.testing.assert_allclose(linear_call(lambda r, x: x[0] * 2.0, lambda r, c: [c * 2.0], None, [X]), X * 2)


def test_fun_without_linear_arguments():
    assert float(linear_call(lambda r, x: r * 2.0, lambda r, c: (), 3.0, ())) == 6.0
    assert float(kiln.grad(lambda x: linear_call(lambda r, _: r * 2.0, lambda r, c: (), 3.0, ()) * x)(2.0)) == 6.0


# -- forward mode: fun on the tangents ----------------------------------------------------------------------

def test_jvp_applies_fun_to_linear_tangents():
    t = np.array([0.5, 1.0, -1.0], np.float32)
    y, ty = kiln.jvp(lambda x: mv(M, x), (X,), (t,))
    np.testing.assert_allclose(y, M @ X, rtol=1e-6)
    np.testing.assert_allclose(ty, M @ t, rtol=1e-6)  # fun, not its (wrong) transpose
    _, ty = kiln.jvp(lambda x: div_add(x, 3.0), (9.0,), (1.0,))
    np.testing.assert_allclose(ty, 1 + 1 / 3, rtol=1e-6)


def test_jvp_and_jacfwd_under_jit():
    t = np.array([0.5, 1.0, -1.0], np.float32)
    _, ty = kiln.jit(lambda x, t: kiln.jvp(lambda x: mv(M, x), (x,), (t,)))(X, t)
    np.testing.assert_allclose(ty, M @ t, rtol=1e-6)
    np.testing.assert_allclose(kiln.jacfwd(lambda x: mv(M, x))(X), M, rtol=1e-6)


@pytest.mark.parametrize("how", ["grad", "jvp", "closure", "residual_only"])
def test_differentiating_a_residual_raises(how):
    """JAX fails an assertion here; kiln says what to do."""
    match = (r"kiln.custom_derivatives.linear_call: residual_args leaf 0 is being differentiated, but linear_call "
             r"is differentiable only with respect to linear_args .*stop_gradient")
    if how == "grad":
        fn = lambda: kiln.grad(div_add, 1)(9.0, 3.0)
    elif how == "jvp":
        fn = lambda: kiln.jvp(div_add, (9.0, 3.0), (1.0, 1.0))
    elif how == "residual_only":
        fn = lambda: kiln.grad(lambda r: linear_call(_f, _t, r, 2.0))(3.0)
    else:
        match = r"a value that fun <lambda> closes over \(f32\[\]\) is being differentiated"

        def h(x, k):
            return linear_call(lambda r, a: a * k, lambda r, c: c * k, (), x)
        fn = lambda: kiln.grad(h, 1)(2.0, 3.0)
    with pytest.raises(LinearCallError, match=match):
        fn()


def test_stopped_residual_is_a_constant():
    g = kiln.grad(lambda x: linear_call(_f, _t, lax.stop_gradient(x), x))(2.0)
    assert float(g) == 0.5


# -- reverse mode: fun_transpose ----------------------------------------------------------------------------

def test_grad_vjp_and_linear_transpose_use_fun_transpose():
    _, pullback = kiln.vjp(lambda x: mv(M, x), X)
    np.testing.assert_allclose(pullback(C)[0], 2 * M.T @ C, rtol=1e-6)
    np.testing.assert_allclose(kiln.grad(lambda x: knp.sum(mv(M, x)))(X), 2 * M.sum(0), rtol=1e-6)
    np.testing.assert_allclose(kiln.linear_transpose(lambda x: mv(M, x), X)(C)[0], 2 * M.T @ C, rtol=1e-6)
    np.testing.assert_allclose(kiln.jacrev(lambda x: mv(M, x))(X), 2 * M, rtol=1e-6)
    assert float(kiln.grad(div_add)(9.0, 3.0)) == pytest.approx(1 + 1 / 3)


def test_linearize():
    y, f_jvp = kiln.linearize(lambda x: linear_call(_f, _t, 2.0, x), 3.0)
    assert float(y) == 1.5 and float(f_jvp(1.0)) == 0.5


def test_transpose_of_transpose_is_fun():
    transposed = kiln.linear_transpose(lambda x: mv(M, x), X)
    twice = kiln.linear_transpose(lambda c: transposed(c)[0], C)
    np.testing.assert_allclose(twice(X)[0], M @ X, rtol=1e-6)


def test_jit_of_grad_and_grad_under_jit():
    assert float(kiln.jit(kiln.grad(div_add))(9.0, 3.0)) == pytest.approx(1 + 1 / 3)
    np.testing.assert_allclose(kiln.jit(lambda x, c: kiln.vjp(lambda x: mv(M, x), x)[1](c)[0])(X, C),
                               2 * M.T @ C, rtol=1e-6)


def test_second_order():
    # d/dx (x * div_add(x, 3)) = 2 x (1 + 1/3): reverse over reverse, forward over reverse
    f = lambda x: div_add(x, 3.0) * x
    assert float(kiln.grad(kiln.grad(f))(2.0)) == pytest.approx(2 * (1 + 1 / 3))
    assert float(kiln.hessian(lambda x: linear_call(_f, _t, 2.0, x) ** 2)(3.0)) == pytest.approx(0.5)
    # The backward pass differentiated in its cotangent c: h(c) = T(c) c with T(c) = 7 the custom transpose.
    # Forward mode applies T to the tangent: 7 c + 7 = 21; reverse mode transposes T back into fun (the
    # identity): T(c) + c = 9 (JAX gives both).
    h = lambda c: kiln.vjp(custom_id, 1.0)[1](c)[0] * c
    assert float(kiln.jvp(h, (2.0,), (1.0,))[1]) == 21.0
    assert float(kiln.grad(h)(2.0)) == 9.0


def test_unused_output_gets_a_zero_cotangent():
    fun = lambda r, x: (x * 2.0, x * 3.0)
    fun_t = lambda r, c: c[0] * 20.0 + c[1] * 30.0
    assert float(kiln.grad(lambda x: linear_call(fun, fun_t, (), x)[0])(1.0)) == 20.0


def test_integer_linear_input():
    assert int(linear_call(lambda r, a: a * 2, lambda r, c: c * 2, (), 3)) == 6
    # a float and an integer linear input: the integer's tangent is a zero of its own type
    fun = lambda r, a: a[0] * 5.0 + a[1].astype(np.float32)
    fun_t = lambda r, c: (c * 50.0, (c * 0).astype(np.int32))
    assert float(kiln.grad(lambda x: linear_call(fun, fun_t, (), (x, 3)))(2.0)) == 50.0
    _, t = kiln.jvp(lambda x: linear_call(fun, fun_t, (), (x, 3)), (2.0,), (1.0,))
    assert float(t) == 5.0


def test_check_grads_with_the_true_transpose():
    """Forward and reverse mode to second order against finite differences (eagerly and under jit), where
    fun_transpose is the true transpose."""
    r = np.array([0.3, -1.2, 2.0])

    def fun(r, v):
        return {"a": r * v[0] + knp.sin(r) * v[1], "b": knp.sum(v[1])}

    def fun_t(r, ct):
        return (r * ct["a"], knp.sin(r) * ct["a"] + ct["b"])

    def g(x, y):
        out = linear_call(fun, fun_t, r, (x, y))
        return knp.tanh(out["a"]) * out["b"]
    rng = np.random.default_rng(0)
    args = (rng.standard_normal(3), rng.standard_normal(3))
    check_grads(g, args, order=2)
    check_grads(g, args, order=1, jit=True)


# -- values the functions close over ------------------------------------------------------------------------

def _scaled(x, k):
    s = knp.cos(k)  # an intermediate value both functions close over
    return linear_call(lambda r, a: a * s, lambda r, c: c * s * 10.0, (), x)


def test_fun_transpose_closing_over_an_intermediate_value():
    """fun_transpose is traced with the call, so a value it closes over is an operand of the equation, alive
    when reverse mode runs (eager grad, jit of grad, vmap of grad)."""
    expected = 10 * np.cos(0.5)
    assert float(kiln.grad(_scaled)(2.0, 0.5)) == pytest.approx(expected, rel=1e-6)
    assert float(kiln.jit(kiln.grad(_scaled))(2.0, 0.5)) == pytest.approx(expected, rel=1e-6)
    ks = np.array([0.1, 0.5, 1.0], np.float32)
    np.testing.assert_allclose(kiln.vmap(kiln.grad(_scaled))(np.ones(3, np.float32), ks), 10 * np.cos(ks),
                               rtol=1e-6)


def test_fun_transpose_closing_over_the_differentiated_input():
    # The output does not depend on fun_transpose's closure: the transpose is evaluated at the primal value.
    assert float(kiln.grad(lambda x: linear_call(_f, lambda r, c: c * x, 2.0, x))(3.0)) == 3.0


# -- batching -----------------------------------------------------------------------------------------------

MS = np.stack([M, M + 1, 2 * M, -M])
XS = np.stack([X, X + 1, -X, 2 * X])
CS = np.stack([C, C - 1, 2 * C, -C])


@pytest.mark.parametrize("in_axes", [(None, 0), (0, 0), (0, None), (2, 1)])
def test_vmap_matches_a_loop(in_axes):
    ms = MS.transpose(1, 2, 0) if in_axes[0] == 2 else MS
    xs = XS.T if in_axes[1] == 1 else XS
    out = kiln.vmap(mv, in_axes=in_axes)(M if in_axes[0] is None else ms, X if in_axes[1] is None else xs)
    expected = np.stack([(M if in_axes[0] is None else MS[i]) @ (X if in_axes[1] is None else XS[i])
                         for i in range(4)])
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_vmap_and_reverse_mode_compose():
    loop = np.stack([2 * MS[i].T @ CS[i] for i in range(4)])
    # vmap of vjp (the transpose batched with the call)
    vjps = kiln.vmap(lambda m, x, c: kiln.vjp(lambda x: mv(m, x), x)[1](c)[0])(MS, XS, CS)
    np.testing.assert_allclose(vjps, loop, rtol=1e-6)
    # vjp of vmap: the batched call's transpose is the batched fun_transpose
    _, pullback = kiln.vjp(lambda xs: kiln.vmap(mv)(MS, xs), XS)
    np.testing.assert_allclose(pullback(CS)[0], loop, rtol=1e-6)
    # an unbatched linear input gets the sum over the batch
    g = kiln.grad(lambda x: knp.sum(kiln.vmap(mv, in_axes=(0, None))(MS, x)))(X)
    np.testing.assert_allclose(g, 2 * MS.sum((0, 1)), rtol=1e-6)
    np.testing.assert_allclose(kiln.jit(kiln.vmap(kiln.grad(lambda x, m: knp.sum(mv(m, x)))))(XS, MS),
                               2 * MS.sum(1), rtol=1e-6)
    # a transpose of a transpose, batched
    tt = kiln.linear_transpose(lambda cs: kiln.linear_transpose(lambda xs: kiln.vmap(mv)(MS, xs), XS)(cs)[0], CS)
    np.testing.assert_allclose(tt(XS)[0], np.einsum("bij,bj->bi", MS, XS), rtol=1e-6)


def test_vmap_of_nested_vmap_and_jacrev():
    out = kiln.vmap(kiln.vmap(mv, in_axes=(None, 0)), in_axes=(0, None))(MS, XS)
    np.testing.assert_allclose(out, np.einsum("aij,bj->abi", MS, XS), rtol=1e-6)
    np.testing.assert_allclose(kiln.jacrev(lambda x: mv(M, x))(X), 2 * M, rtol=1e-6)  # vmap of the vjp


# -- nesting ------------------------------------------------------------------------------------------------

def _inner(r, x):
    return linear_call(lambda r2, a: a * r2, lambda r2, c: c * r2 * 100.0, r, x)


def test_linear_call_inside_fun_and_inside_fun_transpose():
    # fun calls a linear_call: the outer transpose is used, not the inner one
    assert float(kiln.grad(lambda x: linear_call(_inner, lambda r, c: c * 7.0, 2.0, x))(1.0)) == 7.0
    # fun_transpose calls one: it is evaluated (not transposed) by grad; transposing twice gives fun back
    assert float(kiln.grad(lambda x: linear_call(_f, lambda r, c: _inner(r, c), 2.0, x))(1.0)) == 2.0
    f = lambda x: linear_call(_f, lambda r, c: _inner(r, c), 2.0, x)
    assert float(transpose(transpose(f, 1.0), 1.0)(1.0)) == 0.5


def _fwd_op(r, x):  # transposes that call each other back: their traces are deferred to the transposition
    return linear_call(lambda r, a: a * r, lambda r, c: _bwd_op(r, c), r, x)


def _bwd_op(r, c):
    return linear_call(lambda r, a: a * r * 10.0, lambda r, x: _fwd_op(r, x), r, c)


def test_mutually_recursive_transposes():
    assert float(_fwd_op(2.0, 1.0)) == 2.0
    assert float(kiln.grad(lambda x: _fwd_op(2.0, x))(1.0)) == 20.0
    assert float(kiln.grad(lambda x: _bwd_op(2.0, x))(1.0)) == 2.0
    # the inner grad is the transposed call (20 x); its own transpose is fun again (2), as in JAX
    assert float(kiln.jit(kiln.grad(lambda x: kiln.grad(lambda y: _fwd_op(2.0, y) * x)(1.0)))(1.0)) == 2.0
    r = np.array([1.0, 2.0, 3.0], np.float32)
    ones = np.ones(3, np.float32)
    np.testing.assert_allclose(kiln.vmap(_fwd_op)(r, ones), r)
    np.testing.assert_allclose(kiln.grad(lambda x: knp.sum(kiln.vmap(_fwd_op)(r, x)))(ones), 10 * r)
    np.testing.assert_allclose(kiln.grad(lambda x: knp.sum(kiln.vmap(kiln.vmap(_bwd_op))(r[None], x[None])))(ones),
                               r)


# -- errors -------------------------------------------------------------------------------------------------

def _pair(r, x):
    a, b = x
    return a * r + b


def test_transpose_of_the_wrong_structure_raises_when_transposed():
    bad = lambda r, ct: [ct, ct]  # (a list where linear_args is a tuple)

    def g(a, b):
        return linear_call(_pair, bad, 3.0, (a, b))
    # evaluation, forward mode and batching do not need the transpose (as in JAX)
    assert float(g(1.0, 2.0)) == 5.0
    assert float(kiln.jit(g)(1.0, 2.0)) == 5.0
    assert float(kiln.jvp(g, (1.0, 2.0), (1.0, 0.0))[1]) == 3.0
    np.testing.assert_allclose(kiln.vmap(g)(X, X), X * 4)
    match = (r"kiln.custom_derivatives.linear_call: fun_transpose <lambda> must return a value of the structure "
             r"of linear_args, PyTreeDef\(\(\*, \*\)\); it returned one of structure PyTreeDef\(\[\*, \*\]\)")
    with pytest.raises(LinearCallError, match=match):
        kiln.grad(g)(1.0, 2.0)
    with pytest.raises(TypeError, match=match):  # JAX raises a TypeError
        kiln.jit(kiln.grad(g))(1.0, 2.0)
    with pytest.raises(LinearCallError, match=match):
        kiln.grad(lambda x: knp.sum(kiln.vmap(g)(x, x)))(X)


def test_transpose_of_the_wrong_shape_raises():
    bad = lambda r, ct: (knp.ones(3), ct)
    with pytest.raises(ValueError, match=r"fun_transpose <lambda>: output leaf 0 has shape \(3,\), but linear_args "
                                         r"leaf 0 is f32\[\]: the transpose must return one cotangent of the shape"):
        kiln.grad(lambda a: linear_call(_pair, bad, 3.0, (a, 2.0)))(1.0)


def test_transpose_of_the_wrong_dtype_raises_unless_weakly_typed():
    bad = lambda r, ct: ct.astype(np.float16)
    with pytest.raises(LinearCallError, match=r"fun_transpose <lambda>: output leaf 0 is f16\[\], but linear_args "
                                              r"leaf 0 is f32\[\]: return it as float32"):
        kiln.grad(lambda x: linear_call(_f, bad, 2.0, x))(1.0)
    # a Python scalar takes the linear input's dtype
    g = kiln.grad(lambda x: linear_call(_f, lambda r, c: 7.0, 2.0, x))(np.float32(1.0))
    assert float(g) == 7.0 and g.dtype == np.float32


def test_transposing_with_respect_to_a_residual_raises():
    with pytest.raises(LinearCallError, match=r"the call is transposed with respect to a value it takes among "
                                              r"residual_args .*pass that value in linear_args"):
        kiln.linear_transpose(lambda x: linear_call(_f, _t, x, x), 1.0)(1.0)


def test_arguments_that_are_not_functions_or_arrays():
    with pytest.raises(TypeError, match=r"linear_call: fun must be callable, got int \(1\)"):
        linear_call(1, _t, 1.0, 1.0)
    with pytest.raises(TypeError, match=r"linear_call: fun_transpose must be callable, got NoneType \(None\)"):
        linear_call(_f, None, 1.0, 1.0)
    with pytest.raises(TypeError, match=r"linear_call: linear_args leaf 0 is a str \('a'\), not an array; "
                                        r"residual_args, linear_args and the values fun and fun_transpose return"):
        linear_call(_f, _t, 1.0, "a")
    with pytest.raises(TypeError, match=r"linear_call: residual_args leaf 1 is a object"):
        linear_call(_f, _t, (1.0, object()), 1.0)
    with pytest.raises(TypeError, match=r"linear_call: the output of fun <lambda>: leaf 0 is a str \('s'\)"):
        linear_call(lambda r, x: "s", _t, 1.0, 1.0)
    with pytest.raises(TypeError, match=r"linear_call: the output of fun <lambda>: leaf 0 is a str"):
        kiln.jit(lambda x: linear_call(lambda r, x: "s", _t, 1.0, x))(1.0)


@pytest.mark.skipif(not hasattr(kiln.custom_derivatives, "linear_call"), reason="not exported yet")
def test_public_name():
    assert kiln.custom_derivatives.linear_call is linear_call
