"""kiln.lax.scan against its Python-level definition (the loop with stacked ys), eagerly and under
jit: pytree carries and xs, ``xs=None`` with ``length``, ``reverse``, ``unroll``; its StableHLO (one
``stablehlo.while`` whose body appears once unless ``unroll`` asks) and its printed IR."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax


def py_scan(f, init, xs, length=None, reverse=False):
    """The Python-level definition: loop, carry the state, stack the ys (NumPy leaves)."""
    leaves, tree = kiln.tree_util.tree_flatten(xs)
    n = length if length is not None else leaves[0].shape[0]
    carry, ys = init, []
    for i in (reversed(range(n)) if reverse else range(n)):
        x = None if xs is None else kiln.tree_util.tree_unflatten(tree, [leaf[i] for leaf in leaves])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys = ys[::-1]
    if ys and ys[0] is None:
        return carry, None
    stacked = kiln.tree_util.tree_map(lambda *v: np.stack([np.asarray(a) for a in v]), *ys) if ys else None
    return carry, stacked


def assert_tree_close(a, b, rtol=1e-5, atol=1e-6):
    la, ta = kiln.tree_util.tree_flatten(a)
    lb, tb = kiln.tree_util.tree_flatten(b)
    assert ta == tb, (ta, tb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def body(carry, x):
    """A pytree carry (a tuple with a dict) and pytree xs and ys."""
    h, acc = carry
    u, v = x["u"], x["v"]
    h = knp.tanh(0.5 * h + u * v)
    acc = {"sum": acc["sum"] + u, "n": acc["n"] + 1}
    return (h, acc), (h * 2, {"uv": u * v})


def np_body(carry, x):
    h, acc = carry
    h = np.tanh(np.float32(0.5) * h + x["u"] * x["v"])
    acc = {"sum": acc["sum"] + x["u"], "n": acc["n"] + 1}
    return (h, acc), (h * 2, {"uv": x["u"] * x["v"]})


RNG = np.random.default_rng(0)
XS = {"u": RNG.standard_normal((7, 3)).astype(np.float32), "v": RNG.standard_normal((7, 3)).astype(np.float32)}
INIT = (np.zeros(3, np.float32), {"sum": np.zeros(3, np.float32), "n": np.int32(0)})


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_matches_python_loop_eager_and_jit(reverse):
    expected = py_scan(np_body, INIT, XS, reverse=reverse)
    assert_tree_close(lax.scan(body, INIT, XS, reverse=reverse), expected)
    assert_tree_close(kiln.jit(lambda i, x: lax.scan(body, i, x, reverse=reverse))(INIT, XS), expected)


def test_unroll_gives_identical_results():
    ref = kiln.jit(lambda i, x: lax.scan(body, i, x))(INIT, XS)
    for unroll in (2, 3, True, 7, 100):
        for reverse in (False, True):
            got = kiln.jit(lambda i, x: lax.scan(body, i, x, unroll=unroll, reverse=reverse))(INIT, XS)
            expected = ref if not reverse else py_scan(np_body, INIT, XS, reverse=True)
            assert_tree_close(got, expected)


def test_xs_none_with_length():
    carry, ys = lax.scan(lambda c, x: (c + 1, c * 2), 0, None, length=4)
    assert int(carry) == 4
    np.testing.assert_array_equal(np.asarray(ys), [0, 2, 4, 6])
    f = kiln.jit(lambda c: lax.scan(lambda c, _: (c * 1.5, c), c, None, length=3, reverse=True))
    carry, ys = f(np.float32(2.0))
    np.testing.assert_allclose(float(carry), 2.0 * 1.5 ** 3)
    np.testing.assert_allclose(np.asarray(ys), [2.0 * 1.5 ** 2, 2.0 * 1.5, 2.0])  # stacked in forward order


def test_no_ys_and_list_return_and_empty_scan():
    carry, ys = lax.scan(lambda c, x: (c * x, None), 1.0, np.arange(1.0, 5.0, dtype=np.float32))
    assert ys is None and float(carry) == 24.0
    carry, ys = lax.scan(lambda c, x: [c + x, x], 0.0, np.arange(3.0, dtype=np.float32))  # a list works too
    assert float(carry) == 3.0
    carry, ys = kiln.jit(lambda x: lax.scan(lambda c, x: (c + x, c * x), knp.full(2, 5.0), x))(
        np.zeros((0, 2), np.float32))
    np.testing.assert_array_equal(np.asarray(carry), [5.0, 5.0])
    assert np.asarray(ys).shape == (0, 2)


def test_scan_with_closure_consts_and_weak_carry():
    w = knp.array([1.0, 2.0])

    def f(c, x):
        return c * w + x, c.sum()

    carry, ys = kiln.jit(lambda xs: lax.scan(f, knp.zeros(2), xs))(np.ones((3, 2), np.float32))
    exp_c, exp_y = py_scan(lambda c, x: (c * np.array([1.0, 2.0], np.float32) + x, np.sum(c)), np.zeros(2, np.float32),
                           np.ones((3, 2), np.float32))
    np.testing.assert_allclose(np.asarray(carry), exp_c)
    np.testing.assert_allclose(np.asarray(ys), exp_y)
    # A weakly typed Python-scalar carry takes the body's type, as JAX.
    carry, _ = lax.scan(lambda c, x: (c + x, None), 0, np.arange(3.0, dtype=np.float32))
    assert carry.dtype == np.float32 and float(carry) == 3.0


def test_cond_inside_scan_and_nested_scans():
    def f(c, x):
        c = lax.cond(x > 0, lambda c: c + x, lambda c: c * 0.5, c)
        return c, c

    xs = np.array([1.0, -1.0, 2.0, -3.0, 0.5], np.float32)
    expected = py_scan(lambda c, x: (c + x if x > 0 else c * np.float32(0.5),) * 2, np.float32(1.0), xs)
    assert_tree_close(lax.scan(f, np.float32(1.0), xs), expected)
    assert_tree_close(kiln.jit(lambda xs: lax.scan(f, np.float32(1.0), xs))(xs), expected)

    def outer(c, row):
        inner, ys = lax.scan(lambda d, y: (d * 0.9 + y, d), c, row)
        return inner, ys.sum()

    m = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    np_outer = lambda c, row: (lambda r: (r[0], np.sum(r[1])))(
        py_scan(lambda d, y: (d * np.float32(0.9) + y, d), c, row))
    assert_tree_close(kiln.jit(lambda m: lax.scan(outer, np.float32(0.0), m))(m), py_scan(np_outer, np.float32(0), m))


# -- lowering ----------------------------------------------------------------------------------------------

def _scan_text(unroll, n=10):
    xs = np.arange(n, dtype=np.float32)
    return kiln.jit(lambda xs: lax.scan(lambda c, x: (knp.sin(c) * 1.2345 + x, c), 0.0, xs,
                                        unroll=unroll)).lower(xs).as_text()


def test_scan_lowers_to_one_while_with_the_body_once():
    text = _scan_text(1)
    assert text.count("stablehlo.while") == 1
    assert text.count("stablehlo.sine") == 1  # a loop, not an unrolled body
    text = _scan_text(1, n=200)
    assert text.count("stablehlo.while") == 1 and text.count("stablehlo.sine") == 1


@pytest.mark.parametrize("unroll,whiles,bodies", [(2, 1, 2), (3, 1, 4), (True, 0, 10), (10, 0, 10)])
def test_scan_unroll_in_stablehlo(unroll, whiles, bodies):
    # unroll=3 over 10 steps: 3 steps per trip of the loop, then 1 remaining step after it.
    text = _scan_text(unroll)
    assert text.count("stablehlo.while") == whiles
    assert text.count("stablehlo.sine") == bodies


def test_scan_ir_prints_body_as_jax_does():
    ir = kiln.make_ir(lambda c, xs: lax.scan(lambda c, x: (knp.sin(c) + x, c * x), c, xs))(0.0, np.ones(3, np.float32))
    # JAX's layout and parameter names (jaxpr=); the weakly typed carry stays weak in the body, as JAX's
    assert str(ir) == ("{ lambda ; a:f32[] b:f32[3]. let\n"
                       "    c:f32[] d:f32[3] = scan[\n"
                       "      jaxpr={ lambda ; e:f32[] f:f32[]. let\n"
                       "          g:f32[] = sin e\n"
                       "          h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] g\n"
                       "          i:f32[] = add h f\n"
                       "          j:f32[] = convert_element_type[new_dtype=float32 weak_type=False] e\n"
                       "          k:f32[] = mul j f\n"
                       "        in (i, k) }\n"
                       "      length=3\n"
                       "      num_carry=1\n"
                       "      num_consts=0\n"
                       "      reverse=False\n"
                       "      unroll=1\n"
                       "    ] a b\n"
                       "  in (c, d) }")


def test_while_ir_prints_jaxs_parameter_names():
    text = str(kiln.make_jaxpr(lambda x: lax.while_loop(lambda v: v < 10, lambda v: v * 2, x))(np.float32(1)))
    assert "body_jaxpr={ lambda" in text and "cond_jaxpr={ lambda" in text and "body_nconsts=0" in text
    assert "iota[dimension=0 dtype=int32 shape=(3,) sharding=None]" in str(kiln.make_jaxpr(lambda: knp.arange(3))())
