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
