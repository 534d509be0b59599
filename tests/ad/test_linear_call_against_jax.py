"""``linear_call`` against JAX's, where JAX is installed: the same programs give the same values (the expected
values themselves are checked by hand in test_linear_call.py), and misuse JAX rejects kiln rejects too, with
JAX's built-in exception type where JAX raises a clear one. Differences by design (kiln batches linear_call, JAX
has no batching rule; kiln checks the transpose's dtype) are in test_linear_call.py.
kiln is imported first (it leaves the process-wide jit states to JAX when JAX comes first)."""
import functools

import numpy as np
import pytest
from kiln.frontend.ad.linear_call import LinearCallError
from kiln.frontend.ad.linear_call import linear_call as kiln_linear_call

import kiln  # noqa: I001  (before jax)
import kiln.numpy as knp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
from jax.custom_derivatives import linear_call as jax_linear_call  # noqa: E402

M = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0
X = np.array([1.0, -2.0, 0.5], np.float32)
C = np.array([3.0, -1.0], np.float32)


def _libs():
    return [(kiln, knp, kiln_linear_call), (jax, jnp, jax_linear_call)]


def _programs(lib, np_, linear_call):
    """name -> thunk, each a program of the docstring's kind run with ``lib``."""
    def transpose(f, x_example):
        def transposed(y):
            (x,) = lib.linear_transpose(f, x_example)(y)
            return x
        return transposed

    def div_add(x, denom):
        return x + linear_call(lambda r, x: x / r, lambda r, t: t / r, denom, x)

    def custom_id(x):
        return linear_call(lambda _, x: x, lambda _, t: 7.0, (), x)

    def mv(m, x):  # a transpose twice the true one
        return linear_call(lambda m, x: m @ x, lambda m, c: 2.0 * (m.T @ c), m, x)

    def tree_fun(a, b):
        return linear_call(lambda r, x: {"s": x[0] * r["k"] + x[1], "d": x[0] - x[1]},
                           lambda r, ct: (ct["s"] * r["k"] + ct["d"], ct["s"] - ct["d"]), {"k": 3.0}, (a, b))

    def fwd_op(r, x):
        return linear_call(lambda r, a: a * r, lambda r, c: bwd_op(r, c), r, x)

    def bwd_op(r, c):
        return linear_call(lambda r, a: a * r * 10.0, lambda r, x: fwd_op(r, x), r, c)

    h = lambda c: lib.vjp(custom_id, 1.0)[1](c)[0] * c
    return {
        "div_add": lambda: div_add(9.0, 3.0),
        "div_add_transpose": lambda: transpose(functools.partial(div_add, denom=3.0), 1.0)(18.0),
        "custom_id_t": lambda: transpose(custom_id, 1.0)(1.0),
        "custom_id_tt": lambda: transpose(transpose(custom_id, 1.0), 1.0)(1.0),
        "custom_id_ttt": lambda: transpose(transpose(transpose(custom_id, 1.0), 1.0), 1.0)(1.0),
        "jit": lambda: lib.jit(div_add)(9.0, 3.0),
        "grad": lambda: lib.grad(div_add)(9.0, 3.0),
        "jit_grad": lambda: lib.jit(lib.grad(div_add))(9.0, 3.0),
        "jvp": lambda: lib.jvp(lambda x: mv(M, x), (X,), (X * 2,)),
        "vjp": lambda: lib.vjp(lambda x: mv(M, x), X)[1](C),
        "linear_transpose": lambda: lib.linear_transpose(lambda x: mv(M, x), X)(C),
        "linearize": lambda: lib.linearize(lambda x: mv(M, x), X)[1](X),
        "pytrees": lambda: lib.vjp(tree_fun, 1.0, 2.0)[1]({"s": 1.0, "d": 10.0}),
        "grad_grad": lambda: lib.grad(lib.grad(lambda x: div_add(x, 3.0) * x))(2.0),
        "backward_pass_jvp": lambda: lib.jvp(h, (2.0,), (1.0,)),
        "backward_pass_grad": lambda: lib.grad(h)(2.0),
        "mutual": lambda: (lib.grad(lambda x: fwd_op(2.0, x))(1.0), lib.grad(lambda x: bwd_op(2.0, x))(1.0),
                           lib.grad(lambda x: lib.grad(lambda y: fwd_op(2.0, y) * x)(1.0))(1.0)),
        "t_closure": lambda: lib.jit(lib.grad(
            lambda x, k: linear_call(lambda r, a: a * np_.cos(k), lambda r, c: c * np_.cos(k) * 10, (), x)))(2.0, 0.5),
    }


NAMES = sorted(_programs(kiln, knp, kiln_linear_call))


@pytest.mark.parametrize("name", NAMES)
def test_same_values_as_jax(name):
    outs = []
    for lib, np_, linear_call in _libs():
        result = _programs(lib, np_, linear_call)[name]()
        outs.append([np.asarray(r) for r in lib.tree_util.tree_leaves(result)])
    assert len(outs[0]) == len(outs[1])
    for k, j in zip(*outs):
        np.testing.assert_allclose(k, j, rtol=1e-6, err_msg=name)


def _pair(r, x):
    return x[0] * r + x[1]


@pytest.mark.parametrize("case,jax_error", [("structure", TypeError), ("shape", ValueError),
                                            ("residual", AssertionError)])
def test_same_misuse_rejected(case, jax_error):
    """JAX's error types: TypeError for a transpose of the wrong structure, ValueError for the wrong shape; a
    differentiated residual fails an assertion in JAX, where kiln raises LinearCallError with a message."""
    def run(lib, np_, linear_call):
        # (both linear inputs differentiated: JAX's rule fails on a symbolic zero tangent of one)
        if case == "structure":
            return lib.grad(lambda a, b: linear_call(_pair, lambda r, ct: [ct, ct], 3.0, (a, b)), (0, 1))(1.0, 2.0)
        if case == "shape":
            return lib.grad(lambda a, b: linear_call(_pair, lambda r, ct: (np_.ones(3), ct), 3.0, (a, b)),
                            (0, 1))(1.0, 2.0)
        return lib.grad(lambda r: linear_call(_pair, lambda r, ct: (ct, ct), r, (1.0, 2.0)))(3.0)
    with pytest.raises(jax_error):
        run(jax, jnp, jax_linear_call)
    with pytest.raises(LinearCallError):
        run(kiln, knp, kiln_linear_call)
    if jax_error is not AssertionError:
        with pytest.raises(jax_error):
            run(kiln, knp, kiln_linear_call)
