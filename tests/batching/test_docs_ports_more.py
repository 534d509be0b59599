"""Regressions found by running more of JAX's documentation pages under ``import kiln as jax``
(docs/new_docs/101/transformations.md: Python control flow on a batched value under vmap)."""
from __future__ import annotations

import pytest

import kiln
import kiln.numpy as knp


def _absolute(x):
    return x if x > 0 else -x


def _scale(x, n):
    return x * int(n)


@pytest.mark.parametrize("wrap", [lambda f: f, kiln.jit])
def test_if_on_a_batched_value_names_vmap_and_its_fixes(wrap):
    with pytest.raises(kiln.errors.TracerBoolConversionError,
                       match=r"while tracing _absolute\. Under vmap, Python control flow \(if/while/and/or\) cannot "
                             r"branch on a value that differs between batch elements: use kiln\.numpy\.where"):
        wrap(kiln.vmap(_absolute))(knp.arange(-2.0, 3.0))


def test_int_of_a_batched_value_points_to_unmapped_arguments():
    with pytest.raises(kiln.errors.TracerIntegerConversionError,
                       match=r"Under vmap, a value that decides shapes or Python-level behaviour cannot differ between "
                             r"batch elements: pass it unmapped \(in_axes=None\)"):
        kiln.vmap(_scale)(knp.arange(3.0), knp.arange(3))
    # unmapped, it is concrete
    assert kiln.vmap(_scale, in_axes=(0, None))(knp.arange(3.0), knp.array(2)).tolist() == [0.0, 2.0, 4.0]


def test_an_unmapped_value_traced_by_an_enclosing_jit_gets_the_jit_message():
    with pytest.raises(kiln.errors.TracerBoolConversionError, match=r"is not allowed under jit"):
        kiln.jit(kiln.vmap(lambda x, n: x if n > 0 else -x, in_axes=(0, None)))(knp.arange(3.0), 2.0)
