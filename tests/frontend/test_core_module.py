"""kiln.core: the names of jax.core that kiln has, and eval_jaxpr on make_jaxpr's IR."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.core as kcore
import kiln.numpy as knp


def test_jax_core_names():
    """jax.core's public names in JAX 0.10.2, less Trace (kiln has no trace classes: README)."""
    for name in ("AbstractValue", "Atom", "ParamDict", "ShapedArray", "Tracer", "Value", "ensure_compile_time_eval",
                 "eval_context", "eval_jaxpr", "max_dim", "min_dim"):
        assert hasattr(kcore, name), name
    assert kiln.core is kcore and kcore.__file__.endswith("core.py")  # JAX's hmm_em.py reads jax.core.__file__
    assert isinstance(kiln.typeof(knp.ones(3)), kcore.AbstractValue)
    assert (kcore.max_dim(3, 5), kcore.min_dim(3, 5)) == (5, 3)
    seen = []
    kiln.jit(lambda x: seen.append(isinstance(x, kcore.Tracer)) or x)(1.0)
    assert seen == [True]


def test_eval_jaxpr_runs_make_jaxprs_ir():
    table = np.array([1.5, -2.0, 0.25], np.float32)  # a constant of the IR

    def f(x, y):
        return knp.sin(x) * y + knp.asarray(table) * 2.0, knp.sum(x)

    x, y = np.array([0.5, 1.0, 2.0], np.float32), np.float32(3.0)
    closed = kiln.make_jaxpr(f)(x, y)
    assert closed.jaxpr is closed.ir and closed.eqns == closed.ir.eqns
    want = (np.sin(x) * y + table * 2.0, x.sum())
    for got in (kcore.eval_jaxpr(closed.jaxpr, closed.consts, x, y),
                kiln.jit(lambda a, b: kcore.eval_jaxpr(closed.jaxpr, closed.consts, a, b))(x, y)):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    grad = kiln.grad(lambda a: kcore.eval_jaxpr(closed.jaxpr, closed.consts, a, y)[1])(x)
    np.testing.assert_array_equal(grad, np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"kiln.core.eval_jaxpr: the IR takes 1 constant\(s\) and 2 argument\(s\), "
                                        r"got 1 and 1"):
        kcore.eval_jaxpr(closed.jaxpr, closed.consts, x)
    with pytest.raises(TypeError, match="kiln.core.eval_jaxpr: expected the IR of kiln.make_jaxpr"):
        kcore.eval_jaxpr("not an IR", [], x)
