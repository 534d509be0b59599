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


def test_checkpoint_saves_no_input_its_recomputation_does_not_read():
    # JEP 11830's constant example: in a * x the backward pass needs a (recomputed from arange) but not x, so
    # nothing is saved (as JAX's); x*x needs x. The gradients are NumPy's: sum(a) and 2x.
    a = np.sin(np.arange(100, dtype=np.float32))
    f = kiln.checkpoint(lambda x: knp.sin(knp.arange(100.0)) * x)
    assert saved_residuals(f, np.float32(3.0)) == []
    np.testing.assert_allclose(kiln.grad(lambda x: knp.sum(f(x)))(3.0), a.sum(dtype=np.float64), rtol=1e-5)
    sq = kiln.checkpoint(lambda x, w: x * x + 0 * w)
    res = saved_residuals(sq, np.float32(3.0), np.float32(1.0))
    assert [(a.str_short(), src) for a, src in res] == [("f32[]", "from the argument x")]
    np.testing.assert_allclose(kiln.grad(sq)(3.0, 1.0), 6.0)


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


def _residuals(f, *args):
    return [(a.str_short(), src.split(" from ")[0] if " from " in src and "argument" not in src else src)
            for a, src in saved_residuals(f, *args)]


_ARG_LINES = [("f32[5,4]", "from the argument W1"), ("f32[6,5]", "from the argument W2"),
              ("f32[7,6]", "from the argument W3"), ("f32[4]", "from the argument x")]


def test_checkpoint_policies_save_what_they_select_as_jax():
    """JAX's gradient-checkpointing docs: dots_with_no_batch_dims_saveable keeps the three matrix products (the sines
    are recomputed from them), save_only_these_names keeps the named value, nothing_saveable only the inputs."""
    p = kiln.checkpoint_policies
    dots = kiln.checkpoint(_f, policy=p.dots_with_no_batch_dims_saveable)
    assert _residuals(dots, *_ARGS) == _ARG_LINES + [("f32[5]", "output of dot_general"),
                                                    ("f32[6]", "output of dot_general"),
                                                    ("f32[7]", "output of dot_general")]
    assert _residuals(kiln.checkpoint(_f, policy=p.dots_saveable), *_ARGS) == _residuals(dots, *_ARGS)
    assert _residuals(kiln.checkpoint(_f, policy=p.nothing_saveable), *_ARGS) == _ARG_LINES

    def named(W1, W2, W3, x):
        x = checkpoint_name(_g(W1, x), name="a")
        x = checkpoint_name(_g(W2, x), name="b")
        return checkpoint_name(_g(W3, x), name="c")
    assert _residuals(kiln.checkpoint(named, policy=p.save_only_these_names("a")), *_ARGS) == _ARG_LINES + [
        ("f32[5]", "named 'a'")]
    assert _residuals(kiln.checkpoint(named, policy=p.save_any_names_but_these("a")), *_ARGS) == _ARG_LINES + [
        ("f32[6]", "named 'b'")]  # 'c' is an output of the checkpoint, not needed by the backward pass
    # any value, named or not, but 'a' (the sine 'a' names is saved unnamed); it was save_any_names_but_these,
    # which saves named values only and recomputed the cosines
    anything = kiln.checkpoint(named, policy=p.save_anything_except_these_names("a"))
    assert [s for _, s in _residuals(anything, *_ARGS)[4:]] == [
        "output of sin", "output of cos", "output of cos", "named 'b'", "output of cos"]
    both = p.save_from_both_policies(p.save_only_these_names("b"), p.dots_with_no_batch_dims_saveable)
    assert [s for _, s in _residuals(kiln.checkpoint(named, policy=both), *_ARGS)[4:]] == [
        "output of dot_general", "output of dot_general", "named 'b'", "output of dot_general"]
    # a policy of the user's own, on kiln's primitive objects (as JAX's: prim is lax.sin_p)
    sines = kiln.checkpoint(_f, policy=lambda prim, *avals, **params: prim is kiln.lax.sin_p)
    assert _residuals(sines, *_ARGS) == _ARG_LINES + [("f32[5]", "output of sin"), ("f32[6]", "output of sin")]


def test_policies_may_answer_saveable_recompute_or_offloadable():
    """JAX's policy answers besides True/False (jax.ad_checkpoint.Saveable, Recompute, Offloadable(src, dst)):
    read by identity (both are true as objects, as in JAX); an offloadable value is saved in device memory."""
    from kiln.ad_checkpoint import Offloadable, Recompute, Saveable
    assert bool(Recompute) and bool(Saveable) and repr(Recompute) == "Recompute"
    assert Offloadable("device", "pinned_host") == Offloadable(src="device", dst="pinned_host")

    def answer(with_sin, other):
        return lambda prim, *avals, **params: with_sin if prim is kiln.lax.sin_p else other
    sines = [("f32[5]", "output of sin"), ("f32[6]", "output of sin")]
    assert _residuals(kiln.checkpoint(_f, policy=answer(Saveable, Recompute)), *_ARGS) == _ARG_LINES + sines
    offload = answer(Offloadable("device", "pinned_host"), Recompute)
    assert _residuals(kiln.checkpoint(_f, policy=offload), *_ARGS) == _ARG_LINES + sines
    assert _residuals(kiln.checkpoint(_f, policy=answer(Recompute, Recompute)), *_ARGS) == _ARG_LINES


def test_checkpoint_policies_change_the_program_not_the_numbers():
    """The saved products are not recomputed: the gradient program has three dot_generals fewer (3 forward + 6
    backward, against 3 more recomputed with nothing_saveable); the gradients are the same (NumPy's chain rule)."""
    p = kiln.checkpoint_policies
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(a.shape).astype(np.float32) for a in _ARGS]

    def grads(policy):
        loss = kiln.checkpoint(lambda *a: knp.sum(_f(*a)), policy=policy)
        g = kiln.jit(kiln.value_and_grad(loss, argnums=(0, 1, 2, 3)))  # the value keeps the forward pass
        return g(*args)[1], g.lower(*args).as_text().count("stablehlo.dot_general")

    (w1, w2, w3, x) = args
    y1 = w1 @ x
    h1 = np.sin(y1)
    y2 = w2 @ h1
    h2 = np.sin(y2)
    y3 = w3 @ h2
    d3 = np.cos(y3)                        # d sum(sin(y3)) / d y3
    d2 = (w3.T @ d3) * np.cos(y2)
    d1 = (w2.T @ d2) * np.cos(y1)
    want = [np.outer(d1, x), np.outer(d2, h1), np.outer(d3, h2), w1.T @ d1]
    counts = {}
    for name in ("nothing_saveable", "dots_with_no_batch_dims_saveable", "everything_saveable"):
        got, counts[name] = grads(getattr(p, name))
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=1e-5)
    assert counts == {"nothing_saveable": 12, "dots_with_no_batch_dims_saveable": 9, "everything_saveable": 9}


def test_checkpoint_name_through_transformations():
    x = np.arange(4.0, dtype=np.float32)
    f = kiln.jit(lambda v: checkpoint_name(v * 2, "twice") + 1)
    np.testing.assert_array_equal(np.asarray(f(x)), x * 2 + 1)
    assert "twice" not in f.lower(x).as_text()  # the name leaves no trace in the program
    np.testing.assert_array_equal(np.asarray(kiln.vmap(lambda v: checkpoint_name(v, "v") * 3)(x)), x * 3)
    _, tangent = kiln.jvp(lambda v: checkpoint_name(knp.sin(v), "s"), (x,), (np.ones(4, np.float32),))
    np.testing.assert_allclose(np.asarray(tangent), np.cos(x), rtol=1e-6)
    assert "name[name=s]" in str(kiln.make_jaxpr(lambda v: checkpoint_name(v, "s"))(x))


def _dots_in(text: str) -> int:
    return text.count("dot_general")


@pytest.mark.parametrize("where", ["scan", "jit", "jit in scan"])
def test_checkpoint_policies_reach_into_scans_and_calls(where):
    """A policy saves the values it selects inside a scan or a jitted function called in the checkpointed
    function, as JAX's (it judged such an equation as a whole, so dots_saveable saved nothing there and the
    backward pass computed every product again): a scan stacks them, one per step. The numbers do not change."""
    layer = lambda c: knp.sin(knp.dot(c, c))  # noqa: E731
    inner = {"scan": layer, "jit": layer, "jit in scan": kiln.jit(layer)}[where]

    def h(x):
        if where == "jit":
            return knp.sum(kiln.jit(lambda c: inner(inner(c)))(x))
        return knp.sum(kiln.lax.scan(lambda c, _: (inner(c), None), x, None, length=5)[0])

    x = (np.eye(3) * 0.3 + 0.2).astype(np.float32)
    saved = kiln.checkpoint(h, policy=kiln.checkpoint_policies.dots_saveable)
    res = [(a.str_short(), src.split(" from ")[0]) for a, src in saved_residuals(saved, x)]
    stacked = "f32[3,3]" if where == "jit" else "f32[5,3,3]"
    count = 2 if where == "jit" else 1
    producer = "output of jitted function '<lambda>'" if where == "jit" else "output of scan"
    assert res == [("f32[3,3]", "from the argument x")] + [(stacked, producer)] * count
    assert saved_residuals(kiln.checkpoint(h), x) == saved_residuals(kiln.checkpoint(h), x)[:1]  # no policy: x only
    # The backward pass computes no product of the forward pass again: with the policy, value_and_grad's program
    # has the forward products and two per product's transpose; without, also the recomputed ones.
    n_fwd = 2 if where == "jit" else 5
    text = kiln.jit(kiln.value_and_grad(saved)).lower(x).as_text()
    plain = kiln.jit(kiln.value_and_grad(kiln.checkpoint(h))).lower(x).as_text()
    assert (_dots_in(text), _dots_in(plain)) == ((6, 8) if where == "jit" else (3, 4))
    # numbers: as without checkpoint, and as a float64 NumPy backward pass
    c, cs = x.astype(np.float64), []
    for _ in range(n_fwd):
        cs.append(c)
        c = np.sin(c @ c)
    g = np.ones_like(c)
    for c in reversed(cs):
        d = g * np.cos(c @ c)
        g = d @ c.T + c.T @ d
    for f in (saved, h):
        np.testing.assert_allclose(np.asarray(kiln.grad(f)(x)), g, rtol=2e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(kiln.jit(kiln.grad(f))(x)), g, rtol=2e-5, atol=1e-6)


def test_checkpoint_policies_reach_into_cond_branches():
    """In a cond, each branch saves what the policy selects in it, in slots the branches share by type (JAX's
    listing: two f32[3,3] for branches saving one and two products); the numbers are those of a NumPy backward
    pass for either branch, eager and under jit."""
    def h(x, i):
        y = kiln.lax.cond(i > 0, lambda c: knp.sin(knp.dot(c, c)), lambda c: knp.cos(c @ c.T) @ c, x)
        return knp.sum(knp.sin(y))

    x = (np.eye(3) * 0.3 + 0.2).astype(np.float32)
    saved = kiln.checkpoint(h, policy=kiln.checkpoint_policies.dots_saveable)
    c = x.astype(np.float64)
    for i in (1, 0):
        res = [(a.str_short(), src.split(" from ")[0]) for a, src in saved_residuals(saved, x, i)]
        assert res == [("f32[3,3]", "from the argument x"), ("i32[]", "from the argument i")] + [
            ("f32[3,3]", "output of cond")] * 2
        if i:
            p = c @ c
            g = np.cos(np.sin(p)) * np.cos(p)
            expected = g @ c.T + c.T @ g
        else:
            q = c @ c.T
            gy = np.cos(np.cos(q) @ c)
            gq = -np.sin(q) * (gy @ c.T)
            expected = np.cos(q).T @ gy + gq @ c + gq.T @ c
        for f in (kiln.grad(saved), kiln.jit(kiln.grad(saved)), kiln.grad(h)):
            np.testing.assert_allclose(np.asarray(f(x, i)), expected, rtol=2e-5, atol=1e-6)
