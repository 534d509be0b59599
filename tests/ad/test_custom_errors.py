"""Custom-derivative functions used without their rule, or with keywords: clear errors."""
import pytest

import kiln
import kiln.numpy as knp


def test_custom_jvp_without_rule():
    f = kiln.custom_jvp(lambda x: knp.sin(x))
    with pytest.raises(TypeError, match=r"custom_jvp function <lambda> has no JVP rule: call <lambda>.defjvp"):
        f(1.0)


def test_custom_vjp_without_rule_and_keywords():
    f = kiln.custom_vjp(lambda x: knp.sin(x))
    with pytest.raises(TypeError, match=r"has no VJP rule: call <lambda>.defvjp\(fwd, bwd\) first"):
        f(1.0)
    f.defvjp(lambda x: (knp.sin(x), x), lambda x, g: (g * knp.cos(x),))
    with pytest.raises(TypeError, match="takes positional arguments only"):
        f(x=1.0)
    assert abs(float(kiln.grad(f)(0.0)) - 1.0) < 1e-6
