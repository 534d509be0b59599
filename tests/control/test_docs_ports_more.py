"""Regressions found by running more of JAX's documentation pages under ``import kiln as jax``
(docs/new_docs/201/control-flow.md): loop carries from Python scalars take JAX's types."""
from __future__ import annotations

import numpy as np

import kiln.numpy as knp
from kiln import lax


def test_weak_carry_whose_dtype_the_body_keeps_stays_weak_in_the_body():
    # the body's c is the weak 0.0, so c * bfloat16 is bfloat16; the carry leaves the loop strong (c + x)
    carry, ys = lax.scan(lambda c, x: (c + x, c * knp.bfloat16(2)), 0.0, knp.arange(3.0))
    assert carry.dtype == np.float32 and not carry.weak_type and float(carry) == 3.0
    assert ys.dtype == knp.bfloat16 and ys.tolist() == [0.0, 0.0, 2.0]
    carry, ys = lax.scan(lambda c, x: (c + x, c), 0.0, knp.arange(5.0), reverse=True)
    assert ys.weak_type and not carry.weak_type and ys.tolist() == [10.0, 9.0, 7.0, 4.0, 0.0]


def test_weak_carry_whose_dtype_the_body_changes_becomes_strong():
    # 0 (weak int32) with c + 0.5 (weak float32): the loop runs on a strong float32 carry
    for out in (lax.while_loop(lambda c: c < 5, lambda c: c + 1.0, 0), lax.fori_loop(0, 3, lambda i, c: c + 0.5, 0),
                lax.scan(lambda c, x: (c + 0.5, c), 0, None, length=3)[0]):
        assert out.dtype == np.float32 and not out.weak_type
    carry, ys = lax.scan(lambda c, x: (c + 0.5, c), 0, None, length=3)
    assert float(carry) == 1.5 and ys.tolist() == [0.0, 0.5, 1.0] and not ys.weak_type
    # a weak carry the body keeps weak stays weak
    assert lax.while_loop(lambda c: c < 5, lambda c: c + 1.0, 0.0).weak_type
