"""kiln's derivatives bit for bit against JAX's, where JAX is installed (the bench session's environment; the
``against_jax`` nox session runs this file). The expected values of kiln's derivatives are checked elsewhere (finite
differences, NumPy); these cases only check that kiln rounds as JAX does, found porting JAX's autodiff docs pages
(automatic-differentiation.md, jacobian-vector-products.md, higher-order.md), where every cell now prints JAX's bits.
In one process, kiln imported first (it leaves the process-wide jit states to JAX when JAX comes first)."""
import numpy as np
import pytest

import kiln  # noqa: I001  (before jax)
import kiln.numpy as knp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

INPUTS = np.float32([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]])
TARGETS = np.array([True, True, False, True])
W0 = np.float32([-2.4424558, -2.0356805, 0.20553663])


def _both(make):
    """``make(lib, np_)`` for kiln and for JAX, each result as bytes."""
    out = []
    for lib, np_ in ((kiln, knp), (jax, jnp)):
        result = make(lib, np_)
        out.append([np.asarray(r).tobytes() for r in lib.tree_util.tree_leaves(result)])
    return out


def _logistic_loss(np_):
    def predict(W, b, inputs):
        return 0.5 * (np_.tanh((np_.dot(inputs, W) + b) / 2) + 1)

    def loss(W, b):
        preds = predict(W, b, INPUTS)
        label_probs = preds * TARGETS + (1 - preds) * (1 - TARGETS)
        return -np_.sum(np_.log(label_probs))
    return loss, predict


@pytest.mark.parametrize("case", ["grad", "grad_b", "jvp", "vjp_tanh", "linearize", "jacfwd", "jacrev", "hessian",
                                  "jit_jacfwd", "jit_hessian"])
def test_derivatives_round_as_jaxs(case):
    def make(lib, np_):
        loss, predict = _logistic_loss(np_)
        W, b = np_.asarray(W0), np_.float32(0.3)
        f = lambda w: predict(w, b, INPUTS)  # noqa: E731
        tangent = np_.asarray(np.float32([0.3, -1.1, 0.7]))
        if case == "grad":
            return lib.grad(loss)(W, b)
        if case == "grad_b":
            return lib.grad(loss, (0, 1))(W, b)
        if case == "jvp":
            return lib.jvp(f, (W,), (tangent,))
        if case == "vjp_tanh":
            z = np_.asarray(np.float32([0.5, 3.5, -2.7, 0.08]))
            return lib.vjp(np_.tanh, z)[1](np_.asarray(np.float32([0.3, -1.2, 0.7, 2.0])))
        if case == "linearize":
            return lib.linearize(f, W)[1](tangent)
        if case == "jacfwd":
            return lib.jacfwd(f)(W)
        if case == "jacrev":
            return lib.jacrev(f)(W)
        if case == "hessian":
            return lib.hessian(loss)(W, b)
        if case == "jit_jacfwd":
            return lib.jit(lib.jacfwd(lambda w, a: np_.tanh(np_.dot(a, w) / 2)))(W, np_.asarray(INPUTS))
        return lib.jit(lib.jacfwd(lib.jacrev(f)))(W)
    ours, theirs = _both(make)
    assert ours == theirs


def test_nested_eager_derivatives_round_as_jaxs():
    # grad of grad: the known half of a library function's call, differentiated again, keeps its call marked inline
    # (JAX's pjit keeps inline=True): found porting JAX's FAQ and README (its third derivative of tanh)
    def make(lib, np_):
        g = lambda x: 1.0 / (1.0 + x * x)  # noqa: E731
        h = lambda x: 1.0 / (1.0 + np_.exp(x))  # noqa: E731
        t = lambda x: (np_.exp(x) - np_.exp(-x)) / (np_.exp(x) + np_.exp(-x))  # noqa: E731
        out = [lib.grad(lib.grad(g))(float(x)) for x in np.linspace(0.1, 3, 30).astype(np.float32)]
        out += [lib.grad(lib.grad(lib.grad(h)))(1.0), lib.grad(lib.grad(lib.grad(t)))(0.7),
                lib.grad(lib.grad(lib.grad(np_.tanh)))(1.0),
                lib.hessian(lambda x: np_.sum(np_.sin(x) * np_.arctan(x)))(np_.arange(3.0) + 0.5)]
        return out
    ours, theirs = _both(make)
    assert ours == theirs
