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


def test_interpreter_written_against_jaxprs():
    """JAX's "Writing custom Jaxpr interpreters" notebook, imports changed: JAX's names of the IR's fields
    (``eqn.primitive``/``invars``/``outvars``, ``closed.literals``), ``kiln.extend.core.Literal`` and the
    ``kiln.lax.*_p`` primitive objects."""
    from kiln import lax
    from kiln.extend import core

    def eval_jaxpr(jaxpr, consts, *args):
        env = {}

        def read(var):
            return var.val if type(var) is core.Literal else env[var]

        for var, val in [*zip(jaxpr.invars, args), *zip(jaxpr.constvars, consts)]:
            env[var] = val
        for eqn in jaxpr.eqns:
            outvals = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
            for var, val in zip(eqn.outvars, outvals if eqn.primitive.multiple_results else [outvals]):
                env[var] = val
        return [read(v) for v in jaxpr.outvars]

    table = np.array([1.0, 2.0, 3.0] * 30, np.float32)  # too large to be a literal: a constvar

    def f(x):
        return knp.exp(knp.tanh(x)) * knp.asarray(table) + 1.0

    x = np.linspace(-1, 1, 90, dtype=np.float32)
    closed = kiln.make_jaxpr(f)(x)
    assert closed.literals is closed.consts and len(closed.literals) == 1
    assert [e.primitive for e in closed.jaxpr.eqns][:2] == [lax.tanh_p, lax.exp_p]
    eqn = closed.jaxpr.eqns[-1]
    assert (eqn.primitive, eqn.invars, eqn.outvars) == (lax.add_p, eqn.inputs, eqn.outputs)
    assert [a.val for e in closed.jaxpr.eqns for a in e.invars if type(a) is core.Literal] == [1.0]
    assert isinstance(eqn.outvars[0], core.Var) and isinstance(closed, core.ClosedJaxpr)
    assert isinstance(closed.jaxpr, core.Jaxpr) and isinstance(eqn, core.JaxprEqn)
    want = np.exp(np.tanh(x)) * table + 1.0
    np.testing.assert_allclose(eval_jaxpr(closed.jaxpr, closed.literals, x)[0], want, rtol=1e-6)
    np.testing.assert_allclose(core.jaxpr_as_fun(closed)(x)[0], want, rtol=1e-6)
    jitted = kiln.jit(lambda a: eval_jaxpr(closed.jaxpr, closed.literals, a)[0])
    np.testing.assert_allclose(jitted(x), want, rtol=1e-6)

    def inverse_jaxpr(jaxpr, *outs):  # the notebook's inverse: each primitive's inverse, last equation first
        inverses = {lax.exp_p: knp.log, lax.tanh_p: knp.arctanh}
        env = dict(zip(jaxpr.outvars, outs))
        for eqn in jaxpr.eqns[::-1]:
            env[eqn.invars[0]] = inverses[eqn.primitive](env[eqn.outvars[0]])
        return [env[v] for v in jaxpr.invars]

    def g(x):
        return knp.exp(knp.tanh(x))

    def g_inv(y):
        return inverse_jaxpr(kiln.make_jaxpr(g)(y).jaxpr, y)[0]

    np.testing.assert_allclose(g_inv(g(0.5)), 0.5, rtol=1e-5)
    y = (np.arange(5, dtype=np.float32) + 1.0) / 5.0
    got = kiln.jit(kiln.vmap(kiln.grad(g_inv)))(y)  # d/dy arctanh(log y) = 1 / (y (1 - log(y)^2))
    np.testing.assert_allclose(got, 1 / (y * (1 - np.log(y) ** 2)), rtol=1e-5)
    with pytest.raises(TypeError, match="jaxpr_as_fun: expected the ClosedIR"):
        core.jaxpr_as_fun(closed.jaxpr)


def test_traced_jaxpr():
    """``jit(f).trace(...).jaxpr`` (JAX's ahead-of-time docs print it) is the traced IR."""
    traced = kiln.jit(lambda x, y: 2 * x + y).trace(3, 4)
    assert traced.jaxpr is traced.ir
    assert str(traced.jaxpr) == ("{ lambda ; a:i32[] b:i32[]. let\n    c:i32[] = mul 2:i32[] a\n"
                                 "    d:i32[] = add c b\n  in (d,) }")
