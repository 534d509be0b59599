"""Custom-derivative functions used without their rule, or with keywords: clear errors."""
import pytest

import kiln
import kiln.numpy as knp


def test_custom_jvp_without_rule():
    f = kiln.custom_jvp(lambda x: knp.sin(x))
    with pytest.raises(TypeError, match=r"custom_jvp function <lambda> has no JVP rule: call <lambda>.defjvp"):
        f(1.0)


def test_custom_functions_without_rule_raise_attribute_error_as_jax():
    # JAX raises AttributeError ("No JVP defined for custom_jvp function ... using defjvp."); kiln's error is one too,
    # and a TypeError as before
    for f in (kiln.custom_jvp(lambda x: knp.sin(x)), kiln.custom_vjp(lambda x: knp.sin(x))):
        with pytest.raises(AttributeError, match="has no (JVP|VJP) rule"):
            f(1.0)
        with pytest.raises(AttributeError, match="has no (JVP|VJP) rule"):
            kiln.grad(f)(1.0)


def test_custom_vjp_without_rule_and_keywords():
    f = kiln.custom_vjp(lambda x: knp.sin(x))
    with pytest.raises(TypeError, match=r"has no VJP rule: call <lambda>.defvjp\(fwd, bwd\) first"):
        f(1.0)
    f.defvjp(lambda x: (knp.sin(x), x), lambda x, g: (g * knp.cos(x),))
    assert abs(float(f(x=0.5)) - float(knp.sin(0.5))) < 1e-6  # a keyword is bound to its position, as in JAX
    assert abs(float(kiln.grad(f)(0.0)) - 1.0) < 1e-6
    with pytest.raises(TypeError, match=r"custom_vjp function <lambda>: the arguments do not fit its signature "
                                        r"\(x\): .*missing a required argument: 'x'"):
        f()


def test_custom_derivatives_keyword_only_arguments():
    def scale(x, *, factor=2.0):
        return x * factor

    f = kiln.custom_vjp(scale)
    f.defvjp(lambda x, *, factor=2.0: (x * factor, None), lambda r, g: (g * 2.0,))
    with pytest.raises(TypeError, match=r"custom_vjp function scale: keyword-only argument\(s\) factor cannot be "
                                        r"passed by position to the derivative rules"):
        f(1.0)


def test_custom_derivatives_keywords_and_defaults_reach_the_rules():
    """Defaulted parameters (nondiff_argnums among them) and keywords are bound to positions, as in JAX:
    ``f(x)`` with ``def f(x, a=2.0)`` and ``nondiff_argnums=(1,)`` used to fail with an IndexError."""
    import functools

    @functools.partial(kiln.custom_vjp, nondiff_argnums=(1,))
    def f(x, a=2.0):
        return x * a

    f.defvjp(lambda x, a: (x * a, None), lambda a, _, g: (g * a,))

    @functools.partial(kiln.custom_jvp, nondiff_argnums=(1,))
    def h(x, a=2.0):
        return x * a

    h.defjvp(lambda a, p, t: (p[0] * a, t[0] * a))

    @kiln.custom_vjp
    def k(x, y=3.0):
        return x * y

    k.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1], g * r[0]))
    for fun in (f, h):
        assert float(fun(3.0)) == 6.0 and float(fun(3.0, a=4.0)) == 12.0
        assert float(kiln.grad(fun)(3.0)) == 2.0 and float(kiln.grad(lambda x: fun(x, a=5.0))(3.0)) == 5.0
        assert float(kiln.jit(fun)(3.0)) == 6.0
        assert float(kiln.grad(lambda x: fun(x, 4.0))(1.0)) == 4.0
    assert float(k(2.0)) == 6.0 and float(kiln.grad(k)(2.0)) == 3.0 and float(kiln.grad(k, 1)(2.0, 3.0)) == 2.0


def test_custom_vjp_defvjp_accepts_optimize_remat():
    """JAX's ``defvjp(fwd, bwd, optimize_remat=True)`` (a memory optimisation) runs unchanged."""
    f = kiln.custom_vjp(lambda x: x * 2.0)
    f.defvjp(lambda x: (x * 2.0, None), lambda _, g: (g * 3.0,), optimize_remat=True)
    assert float(f(1.5)) == 3.0 and float(kiln.grad(f)(1.0)) == 3.0


def test_custom_jvp_rule_primal_output_reading_the_tangents():
    """Under differentiation the rule's primal output stands for the function's: it must not read the tangents
    (it used to end in reverse mode's internal error)."""
    f = kiln.custom_jvp(lambda x: knp.sin(x))
    f.defjvp(lambda p, t: (knp.sin(p[0]) + 0 * t[0], knp.cos(p[0]) * t[0]))
    for diff in (kiln.grad(f), lambda x: kiln.jvp(f, (x,), (1.0,))):
        with pytest.raises(kiln.CustomDerivativeError, match=r"rule of <lambda>: its primal output depends on the "
                                                              r"tangents"):
            diff(1.0)


def test_custom_rules_closing_over_a_differentiated_value_raise():
    """A custom_jvp/custom_vjp function defined inside the differentiated function that closes over one of its
    differentiated values: its rule gets no tangent for that value, so a result would silently miss that part of
    the derivative (d/dx x*x would be 2.0 at x=2). It raises, as JAX does (with UnexpectedTracerError)."""
    def with_jvp(x):
        @kiln.custom_jvp
        def g(y):
            return y * x
        g.defjvp(lambda p, t: (g(*p), t[0] * x))
        return g(x)

    def with_vjp(x):
        @kiln.custom_vjp
        def g(y):
            return y * x
        g.defvjp(lambda y: (g(y), None), lambda r, c: (c * x,))
        return g(x)
    for fun, kind in ((with_jvp, "custom_jvp"), (with_vjp, "custom_vjp")):
        with pytest.raises(kiln.CustomDerivativeError, match=rf"kiln.{kind} function g closes over a value that is "
                                                             r"being differentiated \(f32\[\]\).*as an argument"):
            kiln.grad(fun)(2.0)
        assert float(fun(2.0)) == 4.0  # not differentiated: runs


def test_custom_vjp_differentiated_value_in_nondiff_argnums_raises_unexpected_tracer_error():
    """A differentiated value passed in a nondiff_argnums position of a custom_vjp function: JAX's error type,
    UnexpectedTracerError, naming nondiff_argnums (kiln said the function 'closes over' the value)."""
    import functools

    @functools.partial(kiln.custom_vjp, nondiff_argnums=(1,))
    def scale(x, s):
        return x * s
    scale.defvjp(lambda x, s: (x * s, None), lambda s, res, ct: (ct * s,))

    for diff in (kiln.grad(lambda x: scale(x, x)), kiln.grad(lambda x: scale(2.0, 2 * x))):
        with pytest.raises(kiln.errors.UnexpectedTracerError, match=r"kiln.custom_vjp function scale: argument 1 "
                                                                    r"\(in nondiff_argnums\) is a traced value"):
            diff(3.0)
    assert float(kiln.grad(lambda x: scale(x, 4.0))(3.0)) == 4.0  # a constant there is fine
