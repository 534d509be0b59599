"""Every registered primitive declares how it differentiates: a JVP rule, or membership of
``non_differentiable`` (integer-valued results, comparisons, ...); the linear primitives that JVP rules
emit on tangents have transpose rules (reverse mode needs them)."""
from __future__ import annotations

import numpy as np
from kiln.frontend.ad.jvp import jvp_rules, non_differentiable
from kiln.frontend.ad.tangents import float0
from kiln.frontend.ad.transpose import transpose_rules
from kiln.frontend.core.primitive import registry

import kiln
import kiln.numpy as knp
from kiln import lax


def test_every_primitive_has_a_derivative_rule_or_is_declared_non_differentiable():
    missing = sorted(n for n, p in registry.items() if p not in jvp_rules and p not in non_differentiable)
    assert not missing, f"primitives with neither a JVP rule nor a non_differentiable declaration: {missing}"


def test_no_primitive_is_both():
    both = sorted(n for n, p in registry.items() if p in jvp_rules and p in non_differentiable)
    assert not both, f"primitives with a JVP rule that are also declared non-differentiable: {both}"


# The primitives JVP rules apply to tangents: each must be transposable.
LINEAR = ["add", "sub", "neg", "mul", "div", "select", "convert_element_type", "broadcast_in_dim", "reshape",
          "transpose", "rev", "slice", "pad", "concatenate", "dynamic_slice", "dynamic_update_slice", "reduce_sum",
          "dot_general", "gather", "scatter_add", "scatter", "scatter_mul", "reduce_window", "conv_general_dilated",
          "real", "imag", "complex", "triangular_solve", "jit_call", "remat", "cond", "scan", "psum",
          "all_gather", "psum_scatter", "ppermute", "all_to_all", "custom_vjp_lin"]


def test_linear_primitives_have_transpose_rules():
    missing = sorted(n for n in LINEAR if registry[n] not in transpose_rules)
    assert not missing, f"linear primitives without a transpose rule: {missing}"


def test_non_differentiable_primitives_give_zero_derivatives():
    x = np.array([0.4, -1.3, 2.5], np.float32)
    f = lambda x: knp.sum(lax.sign(x) * 2 + knp.floor(x) + knp.round(x) + (x > 0))  # noqa: E731
    np.testing.assert_array_equal(kiln.grad(f)(x), np.zeros(3))
    _, t = kiln.jvp(lambda x: (knp.argmax(x), lax.population_count(lax.convert_element_type(x, np.int32))),
                    (x,), (np.ones(3, np.float32),))
    assert t[0].dtype == float0 and t[1].dtype == float0
