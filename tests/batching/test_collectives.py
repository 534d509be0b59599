"""Named-axis collectives inside vmap (psum, pmean, pmax, pmin, all_gather, axis_index) against
NumPy, with the operand mapped over different axes or not mapped at all, under jit, with two nested
named axes, and the unbound-name error."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 3)).astype(np.float32)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_reductions_over_the_named_axis(vm):
    with vm.recording_batch_rules() as seen:
        close(kiln.vmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(X), X / X.sum(0))
        close(kiln.vmap(lambda x: x - lax.pmean(x, "i"), axis_name="i")(X), X - X.mean(0))
        close(kiln.vmap(lambda x: lax.pmax(x, "i"), axis_name="i")(X), np.broadcast_to(X.max(0), X.shape))
        close(kiln.vmap(lambda x: lax.pmin(x, "i"), in_axes=1, out_axes=1, axis_name="i")(X),
              np.broadcast_to(X.min(1, keepdims=True), X.shape))
    assert {"psum", "pmax", "pmin"} <= seen


def test_pmean_is_a_true_division_and_psum_sums_booleans_as_int32():
    # as JAX's: pmean of integers or booleans is a float mean; psum of booleans counts them in int32
    ints = np.arange(12, dtype=np.int32).reshape(4, 3)
    out = kiln.vmap(lambda x: lax.pmean(x, "i"), axis_name="i")(ints)
    assert out.dtype == np.float32 and not out.weak_type
    np.testing.assert_array_equal(out, np.broadcast_to(ints.mean(0), ints.shape))
    out = kiln.vmap(lambda x: (lax.psum(x > 4, "i"), lax.pmean(x > 4, "i")), axis_name="i")(ints)
    assert (out[0].dtype, out[1].dtype) == (np.int32, np.float32)
    np.testing.assert_array_equal(out[0], np.broadcast_to((ints > 4).sum(0), ints.shape))
    np.testing.assert_array_equal(out[1], np.broadcast_to((ints > 4).mean(0), ints.shape))
    half = kiln.vmap(lambda x: lax.pmean(x, "i"), axis_name="i")(X.astype(np.float16))
    assert half.dtype == np.float16  # an inexact dtype stays as it is


def test_collectives_of_unmapped_values():
    # A value that is the same for every batch element: psum multiplies by the axis size.
    out = kiln.vmap(lambda x, c: x + lax.psum(c, "i"), in_axes=(0, None), axis_name="i")(X, np.float32(2.0))
    close(out, X + 8.0)
    out = kiln.vmap(lambda x, c: x * lax.pmax(c, "i"), in_axes=(0, None), axis_name="i")(X, np.float32(3.0))
    close(out, X * 3.0)
    close(kiln.vmap(lambda x: lax.psum(1, "i") + 0 * x, axis_name="i")(X), np.full(X.shape, 4.0))


def test_axis_index(vm):
    with vm.recording_batch_rules() as seen:
        out = kiln.vmap(lambda x: x * lax.axis_index("i"), axis_name="i")(X)
    close(out, X * np.arange(4)[:, None])
    assert "axis_index" in seen
    out = kiln.vmap(lambda: lax.axis_index("i"), in_axes=(), axis_size=5, axis_name="i")()
    np.testing.assert_array_equal(np.asarray(out), np.arange(5))


@pytest.mark.parametrize("axis,tiled", [(0, False), (1, False), (-1, False), (0, True)])
def test_all_gather(axis, tiled, vm):
    with vm.recording_batch_rules() as seen:
        out = kiln.vmap(lambda x: lax.all_gather(x, "i", axis=axis, tiled=tiled), axis_name="i")(X)
    per_element = np.concatenate(list(X), axis=0) if tiled else np.stack(list(X), axis=axis % 2)
    close(out, np.broadcast_to(per_element, (4,) + per_element.shape))
    assert "all_gather" in seen


def test_all_gather_of_matrices_tiled():
    xs = rng.standard_normal((3, 2, 4)).astype(np.float32)
    out = kiln.vmap(lambda x: lax.all_gather(x, "i", axis=1, tiled=True), axis_name="i")(xs)
    close(out, np.broadcast_to(np.concatenate(list(xs), axis=1), (3, 2, 12)))


def test_collectives_under_jit_and_with_gradients():
    f = kiln.jit(kiln.vmap(lambda x: (x - lax.pmean(x, "i")) / lax.psum(x * x, "i"), axis_name="i"))
    close(f(X), (X - X.mean(0)) / (X * X).sum(0))
    # psum is linear: the gradient of sum(psum(x)) for each element is the axis size.
    g = kiln.grad(lambda x: knp.sum(kiln.vmap(lambda v: lax.psum(v, "i") * v, axis_name="i")(x)))(X)
    close(g, np.broadcast_to(X.sum(0), X.shape) * 2.0, 1e-4)


def test_nested_vmaps_with_two_names():
    xs = rng.standard_normal((3, 4, 2)).astype(np.float32)
    f = kiln.vmap(kiln.vmap(lambda x: (lax.psum(x, "inner"), lax.psum(x, "outer"), lax.psum(x, ("outer", "inner")),
                                       lax.axis_index("outer") * 10 + lax.axis_index("inner")),
                            axis_name="inner"), axis_name="outer")
    inner, outer, both, idx = f(xs)
    close(inner, np.broadcast_to(xs.sum(1, keepdims=True), xs.shape))
    close(outer, np.broadcast_to(xs.sum(0, keepdims=True), xs.shape))
    close(both, np.broadcast_to(xs.sum((0, 1), keepdims=True), xs.shape))
    np.testing.assert_array_equal(np.asarray(idx), np.arange(3)[:, None] * 10 + np.arange(4)[None, :])
    # The outer name maps axis 0 of the data, the inner one the last axis; outputs placed last.
    g = kiln.vmap(kiln.vmap(lambda x: x / lax.psum(x, "outer") - lax.pmax(x, "inner"), in_axes=1, out_axes=-1,
                            axis_name="inner"), axis_name="outer", out_axes=-1)
    want = xs / xs.sum(0, keepdims=True) - xs.max(2, keepdims=True)
    close(g(xs), want.transpose(1, 2, 0))


def test_unbound_axis_name():
    with pytest.raises(NameError, match=r"kiln.lax.psum: unbound axis name 'j' \(bound axis names: 'i'\)"):
        kiln.vmap(lambda x: lax.psum(x, "j"), axis_name="i")(X)
    with pytest.raises(NameError, match=r"kiln.lax.axis_index: unbound axis name 'i' \(bound axis names: none\)"):
        lax.axis_index("i")
    for fn in (lax.pmean, lax.pmax, lax.pmin, lax.all_gather):
        with pytest.raises(NameError, match=rf"kiln.lax.{fn.__name__}: unbound axis name 'k'"):
            kiln.vmap(lambda x: fn(x, "k"))(X)


def test_axis_names_are_unbound_after_an_error_and_per_thread():
    """The named-axis environment is restored however vmap's trace ends, and each thread has its own:
    while one thread traces inside vmap(axis_name="i"), "i" is not bound in another."""
    import threading

    def boom(x):
        raise RuntimeError("inside")
    with pytest.raises(RuntimeError, match="inside"):
        kiln.vmap(boom, axis_name="i")(X)
    with pytest.raises(NameError, match=r"unbound axis name 'i' \(bound axis names: none\)"):
        lax.axis_index("i")

    inside, release, seen = threading.Event(), threading.Event(), []

    def holder(x):
        inside.set()
        release.wait(10)
        return lax.psum(x, "i")

    t = threading.Thread(target=lambda: seen.append(kiln.vmap(holder, axis_name="i")(X)))
    t.start()
    try:
        assert inside.wait(10)
        with pytest.raises(NameError, match=r"unbound axis name 'i' \(bound axis names: none\)"):
            lax.psum(np.float32(1.0), "i")
    finally:
        release.set()
        t.join(10)
    close(seen[0], np.broadcast_to(X.sum(0), X.shape))
