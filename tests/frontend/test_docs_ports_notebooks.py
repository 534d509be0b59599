"""JAX's "Writing custom Jaxpr interpreters" notebook, ported by changing imports: its interpreters walk
kiln's IR through JAX's names (eqns, invars, outvars, primitive, params, Literal.val) and compose with
jit/vmap/grad; an equation prints as JAX prints a JaxprEqn."""
import numpy as np

import kiln as jax
import kiln.numpy as jnp
from kiln import lax
from kiln.extend import core


def _eval_jaxpr(jaxpr, consts, *args):
    """The notebook's ``eval_jaxpr``."""
    env = {}

    def read(var):
        return var.val if type(var) is core.Literal else env[var]

    for v, x in [*zip(jaxpr.invars, args), *zip(jaxpr.constvars, consts)]:
        env[v] = x
    for eqn in jaxpr.eqns:
        outvals = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
        env.update(zip(eqn.outvars, outvals if eqn.primitive.multiple_results else [outvals]))
    return [read(v) for v in jaxpr.outvars]


_INVERSES = {lax.exp_p: jnp.log, lax.tanh_p: jnp.arctanh}


def _inverse(fun):
    """The notebook's ``inverse``: the IR walked backward, each unary primitive inverted."""
    def wrapped(x):
        closed = jax.make_jaxpr(fun)(x)
        env = {closed.jaxpr.outvars[0]: x}
        for eqn in closed.jaxpr.eqns[::-1]:
            env[eqn.invars[0]] = _INVERSES[eqn.primitive](env[eqn.outvars[0]])
        return env[closed.jaxpr.invars[0]]
    return wrapped


def _f(x):
    return jnp.exp(jnp.tanh(x))


def test_eval_jaxpr_walks_kilns_ir_with_literals_and_multiple_results():
    def g(x):
        return lax.scan(lambda c, y: (c + y, c * 2.0), 0.0, jnp.sin(x) + 1.0)[1]

    x = np.linspace(0.0, 1.0, 5, dtype=np.float32)
    closed = jax.make_jaxpr(g)(x)
    assert any(type(v) is core.Literal for e in closed.jaxpr.eqns for v in e.invars)
    out, = _eval_jaxpr(closed.jaxpr, closed.literals, x)
    expected = 2.0 * np.concatenate([[0.0], np.cumsum(np.sin(x) + 1.0)[:-1]])
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_inverse_interpreter_composes_with_jit_vmap_grad():
    x = (np.arange(5, dtype=np.float32) + 1.0) / 5.0
    np.testing.assert_allclose(_inverse(_f)(_f(x)), x, rtol=1e-5)
    text = str(jax.make_jaxpr(_inverse(_f))(_f(1.0)))
    assert "log" in text and "atanh" in text
    # d/dy arctanh(log y) = 1 / (y (1 - log(y)^2))
    expected = 1.0 / (x * (1.0 - np.log(x) ** 2))
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(_inverse(_f))))(x), expected, rtol=1e-5)


def test_an_equation_prints_as_jax_prints_a_jaxpr_eqn():
    eqns = jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(1.0).jaxpr.eqns
    assert [str(e) for e in eqns] == ["a:f32[] = sin b", "a:f32[] = mul b 2.0:f32[]"]
