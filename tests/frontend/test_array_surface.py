"""The public attributes of JAX's ``jax.Array`` that kiln arrays (and tracers) have, checked against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp

# dir(jax.Array) of JAX 0.10.2, public names.
JAX_ARRAY_NAMES = [
    "T", "addressable_data", "addressable_shards", "all", "any", "argmax", "argmin", "argpartition", "argsort",
    "astype", "at", "block_until_ready", "byteswap", "choose", "clip", "committed", "compress", "conj", "conjugate",
    "copy", "copy_to_host_async", "cumprod", "cumsum", "delete", "device", "devices", "diagonal", "dot", "dtype",
    "flat", "flatten", "format", "global_shards", "imag", "is_deleted", "is_fully_addressable",
    "is_fully_replicated", "item", "itemsize", "mT", "max", "mean", "min", "nbytes", "ndim", "nonzero",
    "on_device_size_in_bytes", "prod", "ptp", "ravel", "real", "repeat", "reshape", "round", "searchsorted", "shape",
    "sharding", "size", "sort", "squeeze", "std", "sum", "swapaxes", "take", "to_device", "tolist", "trace",
    "transpose", "unsafe_buffer_pointer", "var", "view", "weak_type",
]
# Left out: byteswap (kiln arrays have no byte order of their own); format and unsafe_buffer_pointer expose
# PJRT buffer internals (layouts, raw pointers).
NOT_IN_KILN = {"byteswap", "format", "unsafe_buffer_pointer"}


def test_kiln_arrays_have_jax_arrays_attributes():
    x = knp.arange(6.0)
    missing = [n for n in JAX_ARRAY_NAMES if n not in NOT_IN_KILN and not hasattr(type(x), n)]
    assert not missing, f"kiln.Array lacks {missing}"


def test_the_added_methods_against_numpy():
    a = np.array([3.0, -1.0, 0.0, 2.0, 0.0, 5.0], np.float32)
    x = knp.asarray(a)
    assert x.nbytes == a.nbytes and x.itemsize == a.itemsize
    np.testing.assert_array_equal(np.asarray(x.nonzero()[0]), a.nonzero()[0])
    np.testing.assert_array_equal(np.asarray(x.take(np.array([5, 0]))), a.take([5, 0]))
    mask = np.array([1, 0, 1, 1, 0, 0], bool)
    np.testing.assert_array_equal(np.asarray(x.compress(mask)), a.compress(mask))
    z = knp.asarray(a + 2j * a)
    np.testing.assert_array_equal(np.asarray(z.conjugate()), (a + 2j * a).conjugate())
    idx = np.array([2, 0, 1])
    choices = [np.arange(3) * k for k in (1, 10, 100)]
    np.testing.assert_array_equal(np.asarray(knp.asarray(idx).choose(choices)), idx.choose(choices))
    part = np.asarray(x.argpartition(2))
    assert sorted(a[part[:3]]) == sorted(np.sort(a)[:3])
    for dtype in (np.int32, np.uint8, np.int16):
        np.testing.assert_array_equal(np.asarray(x.view(dtype)), a.view(dtype))
    np.testing.assert_array_equal(np.asarray(x.view(np.uint8).view(np.float32)), a)
    np.testing.assert_array_equal(np.asarray(knp.array([True, False]).view(np.uint8)), [1, 0])
    assert x.view() is x and x.global_shards[0].data.shape == (6,) and x.addressable_data(0).shape == (6,)
    out = kiln.jit(lambda v: v.view(np.int32) + v.nbytes)(x)  # tracers too
    np.testing.assert_array_equal(np.asarray(out), a.view(np.int32) + 24)


def test_errors():
    x = knp.arange(6.0)
    with pytest.raises(NotImplementedError, match="do not implement the .flat iterator"):
        _ = x.flat
    with pytest.raises(ValueError, match=r"view\(float32\) of a int16 array needs a last dimension divisible by 2"):
        knp.arange(3, dtype=np.int16).view(np.float32)
    with pytest.raises(ValueError, match=r"of a 0-d float32 array changes the item size"):
        knp.asarray(np.float32(1)).view(np.uint8)


def test_copy_to_host_async_returns_its_argument_and_values_stay_right():
    tree = {"a": knp.arange(3.0), "b": [knp.ones(2), "not an array", 1.5]}
    assert kiln.copy_to_host_async(tree) is tree
    assert tree["a"].copy_to_host_async() is None
    assert float(tree["a"].sum()) == 3.0
    deleted = knp.ones(2)
    deleted.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        deleted.copy_to_host_async()


def test_traced_arrays_have_the_methods_of_arrays():
    # A tracer's own attributes must not shadow an array method: x.var() inside jit failed while the tracer's
    # IR variable was its attribute ``var`` (found porting JAX's "Thinking in JAX" notebook).
    from kiln.frontend.core.array_methods import ArrayMethods
    from kiln.frontend.core.tracing import Tracer
    shadowed = [n for n in vars(ArrayMethods) if not n.startswith("__") and getattr(Tracer, n) is not getattr(
        ArrayMethods, n)]
    assert not shadowed, f"kiln's Tracer shadows the array methods {shadowed}"
    a = np.array([[1.0, 2.0, 4.0], [0.5, -3.0, 8.0]], np.float32)
    got = kiln.jit(lambda x: (x.var(), x.var(axis=0, ddof=1), x.std(axis=1)))(knp.asarray(a))
    for g, want in zip(got, (a.var(), a.var(axis=0, ddof=1), a.std(axis=1))):
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-6)


def test_tobytes_reads_the_elements_back_as_numpy():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = knp.asarray(a)
    assert x.tobytes() == a.tobytes() and x.T.tobytes("F") == a.T.tobytes("F") and x.T.tobytes() == a.T.tobytes()


def test_view_of_and_as_complex_values_is_numpys():
    """A complex element is its real and imaginary parts in a row (XLA bitcasts no complex values)."""
    rng = np.random.default_rng(1)
    z = (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))).astype(np.complex64)
    r = rng.standard_normal((2, 4)).astype(np.float32)
    for a, to in ((z, np.float32), (z, np.uint32), (z, np.uint8), (z, np.int16), (r, np.complex64),
                  (r.view(np.uint8).reshape(2, 16), np.complex64)):
        want = a.view(to)
        for got in (knp.asarray(a).view(to), kiln.jit(lambda v: v.view(to))(a)):
            got = np.asarray(got)
            assert got.shape == want.shape and got.dtype == want.dtype, (a.dtype, to)
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    with pytest.raises(ValueError, match=r"x.view\(float32\) of a 0-d complex64 array changes the item size"):
        knp.asarray(np.complex64(1 + 2j)).view(np.float32)
    with pytest.raises(ValueError, match=r"x.view\(complex64\) of a float32 array of shape \(3,\) does not give whole "
                                         r"complex values"):
        knp.asarray(np.ones(3, np.float32)).view(np.complex64)
