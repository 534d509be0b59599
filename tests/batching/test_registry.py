"""The batching-rule table covers the primitive registry: every primitive has a rule (vmap of a
function using it works), and every rule belongs to a registered primitive."""
from __future__ import annotations

import numpy as np
import pytest
from kiln.frontend.batching.core import BatchContext, BatchingError, batch_eval, batch_rules
from kiln.frontend.core import primitive
from kiln.frontend.core.ir import IR, Eqn, Var
from kiln.frontend.lax import structural as st

import kiln


def test_every_primitive_has_a_batching_rule():
    missing = sorted(name for name, prim in primitive.registry.items() if prim not in batch_rules)
    assert not missing, f"primitives without a batching rule (kiln.frontend.batching.core.batch_rules): {missing}"


def test_every_batching_rule_belongs_to_a_registered_primitive():
    from kiln.frontend.extend import Primitive as UserPrimitive  # a user's primitives are in no registry
    stale = sorted(p.name for p in batch_rules
                   if primitive.registry.get(p.name) is not p and not isinstance(p, UserPrimitive))
    assert not stale, f"batching rules for primitives that are not registered: {stale}"


def test_iota_rule_leaves_it_unbatched():
    # iota has no operands, so vmap never batches it; its rule (for completeness) says so.
    out, d = batch_rules[st.iota_p](BatchContext(3), [], [], dtype=np.dtype(np.int32), shape=(4,), dimension=0)
    assert d is None
    np.testing.assert_array_equal(np.asarray(out), np.arange(4))


def test_missing_rule_names_the_primitive(monkeypatch):
    prim = primitive.registry["sin"]
    monkeypatch.delitem(batch_rules, prim)
    x = Var(kiln.ShapedArray((2,), np.dtype(np.float32)))
    y = Var(kiln.ShapedArray((2,), np.dtype(np.float32)))
    ir = IR([], [x], [Eqn(prim, [x], [y], {})], [y])
    with pytest.raises(BatchingError, match="batching of primitive 'sin' is not implemented"):
        batch_eval(ir, [], [np.ones((3, 2), np.float32)], [0], BatchContext(3))
