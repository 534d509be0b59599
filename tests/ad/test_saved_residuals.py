"""kiln.ad_checkpoint: print_saved_residuals (what reverse mode saves, as JAX's gradient-checkpointing docs
print it) and checkpoint_name."""
import contextlib
import inspect
import io

import numpy as np
import pytest
from kiln.frontend.ad.residuals import saved_residuals

import kiln
import kiln.numpy as knp
from kiln.ad_checkpoint import checkpoint_name, print_saved_residuals


def _g(W, x):
    y = knp.dot(W, x)
    return knp.sin(y)


def _f(W1, W2, W3, x):
    x = _g(W1, x)
    x = _g(W2, x)
    x = _g(W3, x)
    return x


_ARGS = (np.ones((5, 4), np.float32), np.ones((6, 5), np.float32), np.ones((7, 6), np.float32),
         np.ones(4, np.float32))


def _lines(f, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_saved_residuals(f, *args)
    return out.getvalue().splitlines()


def test_print_saved_residuals_of_a_chain_of_layers():
    # sin's derivative keeps cos(y); the next layer's dot keeps sin(y); the last sin is not needed.
    lines = _lines(_f, *_ARGS)
    head = ["f32[5,4] from the argument W1", "f32[6,5] from the argument W2", "f32[7,6] from the argument W3",
            "f32[4] from the argument x"]
    assert lines[:4] == head
    where = f"{__file__}:{_g.__code__.co_firstlineno + 2}:11 (_g)"
    assert lines[4:] == [f"f32[5] output of sin from {where}", f"f32[5] output of cos from {where}",
                         f"f32[6] output of sin from {where}", f"f32[6] output of cos from {where}",
                         f"f32[7] output of cos from {where}"]


def test_saved_residuals_of_a_checkpointed_chain_are_its_inputs():
    res = saved_residuals(kiln.checkpoint(_f), *_ARGS)
    assert [(a.str_short(), src) for a, src in res] == [
        ("f32[5,4]", "from the argument W1"), ("f32[6,5]", "from the argument W2"),
        ("f32[7,6]", "from the argument W3"), ("f32[4]", "from the argument x")]


def test_saved_residuals_name_pytree_arguments_and_look_into_checkpoints():
    def loss(params, x):
        a = kiln.checkpoint(lambda v: knp.sin(knp.sin(v)))(x + params["w"][0])
        return knp.sum(a * a)

    res = saved_residuals(loss, {"w": [np.float32(2.0)]}, np.ones(3, np.float32))
    # The checkpoint's input (the add), and its output a (for a * a), named by the sin inside it.
    line = loss.__code__.co_firstlineno + 1
    text = inspect.getsource(loss).splitlines()[1]
    where = f"{__file__}:{line}:{{}} ({loss.__qualname__}{{}})"
    assert [(a.str_short(), src) for a, src in res] == [
        ("f32[3]", "output of add from " + where.format(text.index("x +"), "")),
        ("f32[3]", "output of sin from " + where.format(text.index("knp.sin"), ".<locals>.<lambda>"))]
    res = saved_residuals(lambda params, x: knp.sum(x * params["w"][0]), {"w": [np.ones(3, np.float32)]},
                          np.ones(3, np.float32))
    assert [src for _, src in res] == ["from the argument params['w'][0]", "from the argument x"]


def test_checkpoint_name_is_the_identity():
    x = {"a": np.arange(3.0, dtype=np.float32)}
    assert checkpoint_name(x, "a") is x
    f = kiln.checkpoint(lambda v: knp.sin(checkpoint_name(knp.sin(v), "s")),
                        policy=kiln.checkpoint_policies.save_only_these_names("s"))
    np.testing.assert_allclose(kiln.grad(lambda v: knp.sum(f(v)))(x["a"]),
                               np.cos(np.sin(np.arange(3.0))) * np.cos(np.arange(3.0)), rtol=1e-6)
    with pytest.raises(TypeError, match="name must be a string"):
        checkpoint_name(x, 3)


def test_ad_checkpoint_module():
    assert kiln.ad_checkpoint.checkpoint_policies is kiln.checkpoint_policies
