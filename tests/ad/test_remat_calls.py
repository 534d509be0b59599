"""checkpoint around a jitted call: reverse mode splits the call inside the remat body."""
import numpy as np

import kiln
import kiln.numpy as knp


def test_grad_of_checkpointed_jit_call():
    jitted = kiln.jit(lambda a: knp.sin(a) * a)
    f = kiln.checkpoint(lambda a: jitted(a) + 1)
    x = knp.arange(3.0)
    expected = np.sin(np.arange(3.0)) + np.arange(3.0) * np.cos(np.arange(3.0))
    np.testing.assert_allclose(kiln.grad(lambda v: knp.sum(f(v)))(x), expected, rtol=1e-6)
    np.testing.assert_allclose(kiln.jit(kiln.grad(lambda v: knp.sum(f(v))))(x), expected, rtol=1e-6)


def _chain_grad(x, n):
    """d/dx of sin applied n times, by the chain rule in NumPy."""
    g, v = 1.0, np.float32(x)
    for _ in range(n):
        g, v = g * np.cos(v), np.sin(v)
    return g


def test_grad_of_checkpoint_whose_inner_call_feeds_a_nonlinear_op():
    # The remat body's recomputation holds an equation with known and unknown inputs (a nested
    # checkpoint, a jitted call, a loop) whose primal output feeds sin: transposing it needs the split.
    lax = kiln.lax
    inner = {
        "checkpoint": kiln.checkpoint(knp.sin),
        "jit": kiln.jit(knp.sin),
        "scan": lambda y: lax.scan(lambda c, _: (knp.sin(c), None), y, None, length=1)[0],
        "cond": lambda y: lax.cond(y > 0, knp.sin, knp.cos, y),
    }
    for name, g in inner.items():
        f = kiln.checkpoint(lambda y, g=g: knp.sin(g(y)))
        for h in (kiln.grad(f), kiln.jit(kiln.grad(f))):
            np.testing.assert_allclose(h(3.0), _chain_grad(3.0, 2), rtol=1e-6, err_msg=name)


def test_grad_of_recursive_checkpoint():
    # JAX's gradient-checkpointing doc: checkpoint applied recursively to a chain of sins.
    def recursive_checkpoint(funs):
        if len(funs) == 1:
            return funs[0]
        if len(funs) == 2:
            f1, f2 = funs
            return lambda x: f1(f2(x))
        f1 = recursive_checkpoint(funs[:len(funs) // 2])
        f2 = recursive_checkpoint(funs[len(funs) // 2:])
        return lambda x: f1(kiln.checkpoint(f2)(x))

    f = recursive_checkpoint([knp.sin] * 8)
    np.testing.assert_allclose(kiln.grad(f)(3.0), _chain_grad(3.0, 8), rtol=1e-5)
    _, f_vjp = kiln.vjp(f, 3.0)
    np.testing.assert_allclose(f_vjp(1.0)[0], _chain_grad(3.0, 8), rtol=1e-5)
