"""The emission-rule table covers the primitive registry.

Every registered primitive either has a StableHLO emission rule in ``kiln.lowering.emission_rules``
or declares itself call-like (``inline_param``: lowering emits its body in place).
"""
from __future__ import annotations

import numpy as np
import pytest
from kiln.frontend.core import primitive
from kiln.frontend.core.avals import ShapedArray
from kiln.frontend.core.ir import IR, Eqn, Var
from kiln.runtime import mlir_context

import kiln
import kiln.numpy as knp
from kiln import lowering


def test_every_primitive_has_an_emission_rule():
    missing = sorted(name for name, prim in primitive.registry.items()
                     if name not in lowering.emission_rules and not prim.inline_param)
    assert not missing, f"primitives without a StableHLO emission rule (kiln.lowering.emission_rules): {missing}"


def test_every_emission_rule_belongs_to_a_primitive():
    stale = sorted(set(lowering.emission_rules) - set(primitive.registry))
    assert not stale, f"emission rules for primitives that are not registered: {stale}"


def test_call_like_primitives_name_a_body_parameter():
    for name, prim in primitive.registry.items():
        if prim.inline_param:
            assert isinstance(prim.inline_param, str) and prim.multiple_results, name


def test_registry_is_keyed_by_name_and_primitives_are_unique():
    for name, prim in primitive.registry.items():
        assert prim.name == name and primitive.registry[name] is prim
    with pytest.raises(ValueError, match="primitive 'add' is defined twice"):
        primitive.Primitive("add", lambda x: x)


def test_missing_rule_is_a_clear_lowering_error():
    """A primitive without a rule fails at lowering with its name (not a KeyError deep inside)."""
    name = "test_only_no_rule"
    prim = primitive.Primitive(name, lambda x: x)
    try:
        aval = ShapedArray((2,), np.float32)
        a, b = Var(aval), Var(aval)
        ir = IR([], [a], [Eqn(prim, [a], [b], {})], [b])
        with pytest.raises(lowering.LoweringError, match="primitive 'test_only_no_rule' has no StableHLO emission "
                                                         "rule"):
            lowering.lower(ir, context=mlir_context())
        with pytest.raises(lowering.LoweringError, match="test_only_no_rule"):
            prim.bind(knp.ones(2))  # eagerly: the same error, and nothing is cached
        from kiln.frontend.driver import eager
        assert not any(k[0] is prim for k in eager._cache)
    finally:
        del primitive.registry[name]
    assert name not in primitive.registry


def test_emission_rule_registration_rejects_duplicates():
    from kiln.lowering.registry import register
    with pytest.raises(ValueError, match="emission rule for 'add' registered twice"):
        register("add")(lambda ctx, eqn, *args: None)
    assert kiln.jit(lambda a: a + a)(np.float32(1.5)) == 3.0  # the original rule is intact
