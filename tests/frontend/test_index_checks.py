"""index_checks: out-of-bounds gathers, scatters and dynamic slices raise at run time (a compiled check), with
the index, the axis and its size; JAX's clamping/dropping stays the default."""
import numpy as np
import pytest
from kiln.frontend.lax.indexing import IndexCheckError

import kiln
import kiln.numpy as knp

X = np.arange(5.0, dtype=np.float32)


@pytest.fixture
def checks():
    with kiln.config.override("index_checks", True):
        yield


def test_traced_integer_index_under_jit(checks):
    f = kiln.jit(lambda x, i: x[i])
    assert float(f(X, 2)) == 2.0 and float(f(X, -1)) == 4.0
    with pytest.raises(IndexCheckError) as info:
        f(X, 7)
    msg = str(info.value)
    assert "index 7 is out of bounds for axis 0 of size 5" in msg and "needs an index in 0..4" in msg
    assert f"traced at {__file__}" in msg and "Without index_checks kiln moves the slice back into bounds" in msg
    assert isinstance(info.value, IndexError) and isinstance(info.value, kiln.KilnError)
    with pytest.raises(IndexCheckError, match="index -2 is out of bounds"):  # -7 + 5: counted from the end first
        f(X, -7)


def test_gather_with_an_index_array(checks):
    g = kiln.jit(lambda x, i: x[knp.array([0, 1, 2]) + i])
    np.testing.assert_array_equal(g(X, 2), [2.0, 3.0, 4.0])
    with pytest.raises(IndexCheckError, match=r"gather: index 5 is out of bounds .*\(index vector 2 of 3\)"):
        g(X, 3)
    m = kiln.jit(lambda x, i: x.reshape(1, 5)[:, i])  # a 2-d operand, the second axis
    with pytest.raises(IndexCheckError, match="for axis 1 of size 5"):
        m(X, knp.array([1, 9]))


def test_scatter_default_mode_checked_explicit_modes_not(checks):
    h = kiln.jit(lambda x, i: x.at[i].set(0.0))
    with pytest.raises(IndexCheckError, match="scatter: index 9 .*Without index_checks kiln skips the update"):
        h(X, knp.array([9]))
    np.testing.assert_array_equal(kiln.jit(lambda x, i: x.at[i].set(0.0, mode="drop"))(X, knp.array([9])), X)
    np.testing.assert_array_equal(kiln.jit(lambda x, i: x.at[i].get(mode="clip"))(X, knp.array([9])), [4.0])
    np.testing.assert_array_equal(kiln.jit(lambda x, i: x.at[i].add(1.0))(X, knp.array([1])),
                                  [0.0, 2.0, 2.0, 3.0, 4.0])


def test_dynamic_slices(checks):
    d = kiln.jit(lambda x, i: kiln.lax.dynamic_slice(x, (i,), (2,)))
    np.testing.assert_array_equal(d(X, 3), [3.0, 4.0])
    with pytest.raises(IndexCheckError, match=r"needs a start in 0..3 \(window of 2\)"):
        d(X, 4)
    u = kiln.jit(lambda x, i: kiln.lax.dynamic_update_slice(x, knp.ones(3), (i,)))
    with pytest.raises(IndexCheckError, match="dynamic_update_slice: index 3"):
        u(X, 3)
    with pytest.raises(IndexCheckError, match="index 4"):  # static starts are checked while tracing
        kiln.jit(lambda x: kiln.lax.dynamic_slice(x, (4,), (2,)))(X)


def test_eager_vmap_grad_and_loops(checks):
    with pytest.raises(IndexCheckError, match="index 6"):
        knp.asarray(X)[knp.array(6)]
    x = knp.asarray(X)
    np.testing.assert_array_equal(kiln.vmap(lambda i: x[i])(knp.array([0, 1, 2])), [0.0, 1.0, 2.0])
    with pytest.raises(IndexCheckError, match="index 8"):
        kiln.vmap(lambda i: x[i])(knp.array([0, 1, 8]))
    np.testing.assert_array_equal(kiln.grad(lambda x, i: x[i] * 2)(x, 1), [0.0, 2.0, 0.0, 0.0, 0.0])
    with pytest.raises(IndexCheckError, match="index 5"):
        kiln.grad(lambda x, i: x[i] * 2)(x, 5)
    walk = kiln.jit(lambda x, n: kiln.lax.fori_loop(0, n, lambda k, acc: acc + x[k], 0.0))
    assert float(walk(x, 5)) == 10.0
    with pytest.raises(IndexCheckError, match="index 5"):
        walk(x, 6)


def test_off_by_default_keeps_jax_clamping():
    assert kiln.config.index_checks is False
    f = kiln.jit(lambda x, i: x[i])
    assert float(f(X, 7)) == 4.0
    assert float(f(X, -7)) == 0.0  # as JAX: negative indices count from the end once, then clamp
    assert float(f(X, -12)) == 0.0
    np.testing.assert_array_equal(kiln.jit(lambda x, i: x.at[i].set(0.0))(X, knp.array([9])), X)
    assert "debug_callback" not in str(kiln.make_jaxpr(lambda x, i: x[i])(X, 1))


def test_lax_dynamic_slice_allow_negative_indices():
    f = kiln.jit(lambda x, i: kiln.lax.dynamic_slice(x, (i,), (2,)))
    np.testing.assert_array_equal(f(X, -2), [3.0, 4.0])  # counted from the end (JAX's default)
    g = kiln.jit(lambda x, i: kiln.lax.dynamic_slice(x, (i,), (2,), allow_negative_indices=False))
    np.testing.assert_array_equal(g(X, -2), [0.0, 1.0])  # clamped instead
    with pytest.raises(ValueError, match="allow_negative_indices has 2 entries for an operand of rank 1"):
        kiln.lax.dynamic_slice(X, (0,), (2,), allow_negative_indices=(True, False))
