"""Small NumPy arrays a traced function reads (at most ``INLINE_CONSTANT_SIZE`` elements) are written into the
program as ``stablehlo.constant`` literals, as JAX does, instead of becoming arguments of the executable."""
from __future__ import annotations

import re

import numpy as np
from kiln.frontend.core.ir import INLINE_CONSTANT_SIZE

import kiln
import kiln.numpy as knp
from kiln import lax


def _main_params(text: str) -> int:
    signature = re.search(r"func\.func public @main\((.*?)\) ->", text).group(1)
    return len(re.findall(r"%arg\d+:", signature))


def test_small_numpy_constants_are_inline():
    table = np.array([1.5, -2.0, 3.0])  # float64: canonicalized to float32, as an argument would be
    ints = np.arange(6, dtype=np.int32).reshape(2, 3)

    def f(x):
        return x * table + knp.sum(ints, axis=0)

    x = np.array([1.0, 2.0, 4.0], np.float32)
    closed = kiln.make_ir(f)(x)
    assert not closed.ir.constvars and not closed.consts
    assert "[1.5,-2.0,3.0]:f32[3]" in str(closed) and "[[0,1,2],[3,4,5]]:i32[2,3]" in str(closed)
    text = kiln.jit(f).lower(x).as_text()
    assert _main_params(text) == 1
    assert "dense<[1.500000e+00, -2.000000e+00, 3.000000e+00]> : tensor<3xf32>" in text
    want = x * table.astype(np.float32) + ints.sum(axis=0)
    np.testing.assert_array_equal(kiln.jit(f)(x), want)
    table[:] = 0  # baked in at trace time (a copy), as a constvar's value is
    np.testing.assert_array_equal(kiln.jit(f)(x), want)


def test_large_arrays_stay_arguments_and_small_kiln_arrays_are_constants():
    # (a closed-over kiln array is a constvar of the IR, as in JAX's jaxprs, and a constant of the program when
    # small, as JAX writes it into its module)
    big = np.ones(INLINE_CONSTANT_SIZE + 1, np.float32)
    small_device = knp.asarray(np.ones(3, np.float32))
    big_device = knp.asarray(big)
    x = np.ones(INLINE_CONSTANT_SIZE + 1, np.float32)
    assert _main_params(kiln.jit(lambda x: x + big).lower(x).as_text()) == 2
    assert _main_params(kiln.jit(lambda x: x + big_device).lower(x).as_text()) == 2
    assert _main_params(kiln.jit(lambda x: x + small_device).lower(x[:3]).as_text()) == 1
    limit = np.ones(INLINE_CONSTANT_SIZE, np.float32)
    assert _main_params(kiln.jit(lambda x: x + limit).lower(x[:-1]).as_text()) == 1


def test_inline_constants_under_grad_vmap_and_loops():
    w = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    x = np.array([0.5, -1.0], np.float32)
    loss = lambda x: knp.sum(knp.tanh(w @ x))  # noqa: E731
    g = kiln.jit(kiln.grad(loss))(x)
    np.testing.assert_allclose(g, w.T @ (1 - np.tanh(w @ x) ** 2), rtol=1e-5)
    xs = np.array([[0.5, -1.0], [2.0, 0.0], [1.0, 1.0]], np.float32)
    np.testing.assert_allclose(kiln.jit(kiln.vmap(lambda x: w @ x))(xs), xs @ w.T, rtol=1e-6)
    out = kiln.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: c * w[0] + w[1], x))(x)
    want = x
    for _ in range(3):
        want = want * w[0] + w[1]
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_gather_bounds_are_not_arguments():
    """The bounds a filled or clipped gather checks its index vectors against are a (k,) table: inline."""
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    i = np.array([[0, 1], [3, 5], [-1, 0]], np.int32)
    fill = kiln.jit(lambda x, i: x.at[i].get(mode="fill", fill_value=-1))
    clip = kiln.jit(lambda x, i: x.at[i[:, 0], i[:, 1]].get(mode="clip"))
    assert _main_params(fill.lower(x, i).as_text()) == 2
    assert _main_params(clip.lower(x, i).as_text()) == 2
    r = np.where(i < 0, i + 4, i)  # negative indices count from the end, as in NumPy
    want_fill = np.where(((r >= 0) & (r < 4))[..., None], x[np.clip(r, 0, 3)], -1)
    np.testing.assert_array_equal(fill(x, i), want_fill)
    np.testing.assert_array_equal(clip(x, i), x[np.clip(r[:, 0], 0, 3), np.clip(i[:, 1], 0, 2)])
