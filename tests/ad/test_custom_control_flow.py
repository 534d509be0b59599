"""custom_jvp / custom_vjp functions and rules with Python control flow on the argument values.

Outside jit the primal inputs of a rule are concrete, as in JAX: ``if x > 0`` works in the function,
in a custom_jvp rule, and in a custom_vjp fwd and bwd under grad, jvp, linearize, jacfwd/jacrev and
nested differentiation. Under jit (and vmap, where the values are batched) the same code raises
kiln's TracerBoolConversionError. Expected values are hand derivatives."""
import numpy as np
import pytest

import kiln
import kiln.numpy as knp

rule_calls: list = []


@kiln.custom_jvp
def piece(x):
    """x**2 for x > 0, else -x."""
    if x > 0:
        return x ** 2
    return -x


@piece.defjvp
def _piece_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    rule_calls.append(1)
    y = piece(x)
    return y, (2 * x if x > 0 else -1.0) * t


@kiln.custom_vjp
def cube(x):
    """x**3 for x > 0, else -x."""
    if x > 0:
        return x ** 3
    return -x


def _cube_fwd(x):
    if x > 0:
        return x ** 3, (x, True)
    return -x, (x, False)


def _cube_bwd(res, ct):
    x, positive = res
    if x > 0:  # control flow on a residual's value
        assert positive
        return (3 * x ** 2 * ct,)
    return (-ct,)


cube.defvjp(_cube_fwd, _cube_bwd)


def _piece_grad(x):
    return 2 * x if x > 0 else -1.0


@pytest.mark.parametrize("x", [3.0, -2.0, 0.5])
def test_custom_jvp_grad_runs_the_rule_on_concrete_values(x):
    rule_calls.clear()
    assert float(kiln.grad(piece)(x)) == _piece_grad(x)
    assert rule_calls  # the user's rule gave the derivative
    value, g = kiln.value_and_grad(piece)(x)
    assert float(value) == (x ** 2 if x > 0 else -x) and float(g) == _piece_grad(x)


def test_custom_jvp_same_function_takes_each_branch_per_call():
    grad = kiln.grad(piece)
    assert [float(grad(x)) for x in (3.0, -2.0, 1.5, -1.0)] == [6.0, -1.0, 3.0, -1.0]


def test_custom_jvp_forward_mode_and_linearize():
    y, t = kiln.jvp(piece, (3.0,), (2.0,))
    assert float(y) == 9.0 and float(t) == 12.0
    y, t = kiln.jvp(piece, (-3.0,), (2.0,))
    assert float(y) == 3.0 and float(t) == -2.0
    y, f_jvp = kiln.linearize(piece, 3.0)
    assert float(y) == 9.0 and float(f_jvp(1.0)) == 6.0
    assert float(kiln.jacfwd(piece)(3.0)) == 6.0 and float(kiln.jacrev(piece)(3.0)) == 6.0


def test_custom_jvp_nested_differentiation():
    # second derivative through the rule: d/dx (2x) = 2 for x > 0, d/dx (-1) = 0 otherwise
    assert float(kiln.grad(kiln.grad(piece))(3.0)) == 2.0
    assert float(kiln.grad(kiln.grad(piece))(-3.0)) == 0.0
    assert float(kiln.hessian(piece)(3.0)) == 2.0


def test_custom_jvp_control_flow_on_an_intermediate_value():
    # the value tested by the rule is computed inside the differentiated function
    def f(a):
        return piece(knp.sin(a)) * 2.0

    for a in (1.0, -1.0):
        s, c = np.sin(np.float32(a)), np.cos(np.float32(a))
        expected = 2.0 * (2 * s if s > 0 else -1.0) * c
        np.testing.assert_allclose(float(kiln.grad(f)(a)), expected, rtol=1e-6)


def test_custom_jvp_value_dependent_loop():
    """Newton's square root with a Python while loop on the value; the rule gives t / (2 sqrt(x))."""
    @kiln.custom_jvp
    def newton_sqrt(x):
        y = x
        while abs(float(y * y - x)) > 1e-5:
            y = 0.5 * (y + x / y)
        return y

    @newton_sqrt.defjvp
    def _jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = newton_sqrt(x)
        return y, t / (2 * y)

    np.testing.assert_allclose(float(kiln.grad(newton_sqrt)(4.0)), 0.25, rtol=1e-5)
    np.testing.assert_allclose(float(kiln.grad(newton_sqrt)(9.0)), 1 / 6, rtol=1e-5)


@pytest.mark.parametrize("x", [3.0, -2.0])
def test_custom_vjp_fwd_and_bwd_with_control_flow(x):
    expected = 3 * x ** 2 if x > 0 else -1.0
    assert float(kiln.grad(cube)(x)) == expected
    y, f_vjp = kiln.vjp(cube, x)
    assert float(y) == (x ** 3 if x > 0 else -x) and float(f_vjp(1.0)[0]) == expected
    assert float(kiln.jacrev(cube)(x)) == expected


def test_custom_vjp_nested_grad_differentiates_bwd():
    # grad(grad) differentiates the bwd rule 3 x**2 ct: 6x for x > 0, 0 otherwise (as JAX)
    assert float(kiln.grad(kiln.grad(cube))(3.0)) == 18.0
    assert float(kiln.grad(kiln.grad(cube))(-3.0)) == 0.0


def test_both_kinds_in_one_function():
    # product rule at x = 2: piece = 4, piece' = 4, cube = 8, cube' = 12
    assert float(kiln.grad(lambda x: piece(x) * cube(x))(2.0)) == 4 * 8 + 4 * 12


_UNDER_JIT = (r"bool\(\) needs a concrete value, but got a traced array bool\[\] while tracing {name}\. "
              r"Python control flow \(if/while/and/or\) on traced values is not allowed under jit")


@pytest.mark.parametrize("fun, name", [(piece, "piece"), (cube, "cube")])
def test_under_jit_control_flow_still_raises(fun, name):
    with pytest.raises(kiln.TracerBoolConversionError, match=_UNDER_JIT.format(name=name)):
        kiln.jit(kiln.grad(fun))(3.0)
    with pytest.raises(kiln.TracerBoolConversionError, match=_UNDER_JIT.format(name=name)):
        kiln.jit(fun)(3.0)


def test_grad_inside_jit_with_rule_control_flow_raises():
    """The function itself has no control flow, the custom_jvp rule has: under jit, the rule's primals are
    abstract."""
    @kiln.custom_jvp
    def f(x):
        return x ** 2

    @f.defjvp
    def _jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), (2 * x if x > 0 else -2 * x) * t

    assert float(kiln.grad(f)(3.0)) == 6.0 and float(kiln.grad(f)(-3.0)) == 6.0
    with pytest.raises(kiln.TracerBoolConversionError, match=r"bool\(\) needs a concrete value.*while tracing jvp"):
        kiln.jit(kiln.grad(f))(3.0)


@pytest.mark.parametrize("fun, name", [(piece, "piece"), (cube, "cube")])
def test_under_vmap_values_are_batched(fun, name):
    # as in JAX: under vmap x is a batch of values, so a Python `if` on it cannot be decided
    with pytest.raises(kiln.TracerBoolConversionError, match=rf"bool\(\) needs a concrete value.*while tracing {name}"):
        kiln.vmap(kiln.grad(fun))(knp.array([1.0, 2.0]))
    with pytest.raises(kiln.TracerBoolConversionError, match=rf"bool\(\) needs a concrete value.*while tracing {name}"):
        kiln.vmap(fun)(knp.array([1.0, 2.0]))


def test_ir_printout_names_the_custom_rules():
    """The IR shows a custom rule by its functions' names, not an object address that changes every run."""

    @kiln.custom_vjp
    def double(x):
        return 2 * x

    def double_fwd(x):
        return double(x), None

    def double_bwd(_, g):
        return (2 * g,)
    double.defvjp(double_fwd, double_bwd)
    text = str(kiln.make_ir(lambda x: kiln.nn.relu(x) + double(x))(knp.ones(3)))
    # laid out as JAX prints its custom_jvp_call/custom_vjp_call: name= first, then the others sorted
    assert "= custom_jvp_call[\n      name=_relu\n      body={ lambda" in text
    assert "      rule=_relu_jvp\n    ] a" in text
    assert "= custom_vjp_call[\n      name=double\n      body={ lambda" in text
    assert "      rule=(double_fwd, double_bwd)\n    ] a" in text
    assert " at 0x" not in text
