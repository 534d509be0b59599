"""JAX's docs page docs/new_docs/101/arrays.md ("Arrays and `jax.numpy`"), ported to kiln by changing imports
(tests/examples/jax_ported/docs_arrays_101.py), checked against oracles that do not involve JAX: NumPy's values
and NumPy's printing of them (float32 where the page's arrays are float32), NumPy's in-place updates (``np.add.at``
and friends, with repeated indices) for the ``.at`` family, NumPy's index clipping for the out-of-bounds reads and
writes, NumPy's float64 ``sin``, and the page's claims: what is printed, the dtypes (float32 by default, float64 once
the x64 sketch has run, with a warning for a truncated float64 request: a kiln bug, fixed in frontend/numpy/
creation.py and frontend/core/dtypes.py), that arrays are immutable, that lists are refused, where an array lives,
that ``jax.lax`` does not promote. The errors' classes are checked, and that their messages say what went wrong and
how to fix it.
"""
from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest
from ported import load

import kiln
import kiln.numpy as jnp


@pytest.fixture(scope="module")
def page():
    return load("docs_arrays_101")


def _run(fn, *args):
    """(what fn returns, the lines it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue().splitlines()


def _typed(a, dtype, shape, weak=False):
    assert isinstance(a, kiln.Array) and (a.dtype, a.shape, a.weak_type) == (np.dtype(dtype), shape, weak), \
        (type(a), getattr(a, "dtype", None), getattr(a, "shape", None), getattr(a, "weak_type", None))


def _printed(a: np.ndarray) -> list[str]:
    """NumPy's printing of ``a``: what ``print`` of a kiln array of the same values and dtype shows."""
    return str(a).splitlines()


# ---------------------------------------------- From NumPy to JAX --------------------------------------------------

def test_numpy_like_creation_arithmetic_indexing_and_reductions(page):
    (x, y), lines = _run(page.numpy_like_block)
    xn, yn = np.arange(9.0, dtype=np.float32).reshape(3, 3), np.ones(3, np.float32)
    _typed(x, np.float32, (3, 3))
    _typed(y, np.float32, (3,))
    np.testing.assert_array_equal(x, xn)
    assert lines == _printed(xn @ yn) + _printed(xn.sum(axis=0)) + _printed(xn[1, :2])
    assert lines == ["[ 3. 12. 21.]", "[ 9. 12. 15.]", "[3. 4.]"]


def test_arrays_are_jax_arrays_even_while_traced(page):
    x = jnp.arange(9.0).reshape(3, 3)
    assert page.isinstance_block(x) is True
    assert not isinstance(x, np.ndarray)
    for value in (np.arange(3.0), 1.0, [1.0]):
        assert page.isinstance_block(value) is False
    # "jax.Array is the appropriate annotation for JAX array values": the values a transformation traces too
    seen = []
    kiln.jit(lambda t: seen.append(page.isinstance_block(t)))(x)
    kiln.grad(lambda t: seen.append(page.isinstance_block(t)) or t)(1.0)
    kiln.vmap(lambda t: seen.append(page.isinstance_block(t)) or t)(x)
    assert seen == [True, True, True]


def test_typeof_is_shape_and_dtype(page):
    x = jnp.arange(9.0).reshape(3, 3)
    none, lines = _run(page.typeof_block, x)
    assert none is None and lines == ["float32[3,3]"]
    t = kiln.typeof(x)
    assert (t.shape, t.dtype) == ((3, 3), np.float32)
    for value, text in ((jnp.arange(10), "int32[10]"), (jnp.arange(3) > 1, "bool[3]"),
                        (jnp.zeros((2, 0, 4), jnp.int8), "int8[2,0,4]"), (jnp.ones((), jnp.bfloat16), "bfloat16[]")):
        assert _run(page.typeof_block, value)[1] == [text]


def test_numpy_and_jax_arrays_interoperate():
    """The page: "`jax.numpy` functions accept NumPy arrays, and most NumPy functions accept JAX arrays"."""
    xn = np.arange(6.0).reshape(2, 3)
    got = jnp.sum(xn, axis=1)
    _typed(got, np.float32, (2,))  # (NumPy's float64 becomes float32: x64 is off)
    np.testing.assert_array_equal(got, xn.sum(axis=1))
    x = jnp.asarray(xn)
    np.testing.assert_array_equal(np.asarray(x), xn.astype(np.float32))
    np.testing.assert_allclose(np.linalg.norm(x, axis=0), np.linalg.norm(xn, axis=0), rtol=1e-6)
    np.testing.assert_array_equal(np.concatenate([x, xn]), np.concatenate([xn, xn]))


# ---------------------------------------------- JAX arrays are immutable -------------------------------------------

def test_numpy_mutates_in_place(page):
    x_np, lines = _run(page.numpy_mutation_block)
    want = np.arange(10)
    want[0] = 10
    assert type(x_np) is np.ndarray and lines == _printed(want)
    assert lines == ["[10  1  2  3  4  5  6  7  8  9]"]


def test_item_assignment_raises_and_points_at_at(page):
    with pytest.raises(TypeError) as info:
        page.immutable_block()
    msg = str(info.value)
    assert "immutable" in msg and "item assignment" in msg  # what
    assert "x[0] = " in msg  # where: the assignment, with its index
    assert ".at[0].set(" in msg  # how
    x = jnp.arange(10)
    for index in (slice(1, 3), (Ellipsis,), jnp.array([1, 2])):
        with pytest.raises(TypeError, match="immutable"):
            x[index] = 1
    np.testing.assert_array_equal(x, np.arange(10))


def test_at_set_returns_a_new_array(page):
    x = jnp.arange(10)
    y, lines = _run(page.at_set_block, x)
    want = np.arange(10, dtype=np.int32)
    want[0] = 10
    assert lines == _printed(np.arange(10, dtype=np.int32)) + _printed(want)  # "unchanged", then the update
    _typed(y, np.int32, (10,))
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(x, np.arange(10))
    assert y is not x


def test_the_at_family_against_numpys_in_place_ufuncs(page):
    x = jnp.arange(10)
    none, lines = _run(page.at_family_block, x)
    add, mx = np.arange(10, dtype=np.int32), np.arange(10, dtype=np.int32)
    add[3] += 100
    mx[:3] = np.maximum(mx[:3], 5)
    assert none is None and lines == _printed(add) + _printed(mx)
    np.testing.assert_array_equal(x, np.arange(10))
    # the family (set, add, multiply, min, max) at repeated indices: NumPy's unbuffered ufunc.at applies each
    base = np.array([3.0, -1.0, 4.0, 1.5, -5.0, 9.0], np.float32)
    idx = np.array([1, 4, 1, 0, 4, 4])
    vals = np.array([2.0, 0.5, -3.0, 7.0, 6.0, -2.0], np.float32)
    xa = jnp.asarray(base)
    for name, ufunc in (("add", np.add), ("multiply", np.multiply), ("min", np.minimum), ("max", np.maximum)):
        want = base.copy()
        ufunc.at(want, idx, vals)
        got = getattr(xa.at[jnp.asarray(idx)], name)(jnp.asarray(vals))
        _typed(got, np.float32, (6,))
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
    # set at distinct indices (at repeated ones the order of the writes is unspecified)
    want = base.copy()
    want[[5, 2, 0]] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(xa.at[jnp.array([5, 2, 0])].set(jnp.array([1.0, 2.0, 3.0])), want)
    np.testing.assert_array_equal(xa, base)  # none of them changed xa


def test_at_updates_under_jit_give_the_same_values():
    """The page: inside jit the compiler may update in place; the values are those of the functional update."""
    def step(x):
        x = x.at[0].set(10)
        x = x.at[3].add(100)
        return x.at[:3].max(5)
    want = np.arange(10, dtype=np.int32)
    want[0] = 10
    want[3] += 100
    want[:3] = np.maximum(want[:3], 5)
    x = jnp.arange(10)
    np.testing.assert_array_equal(kiln.jit(step)(x), want)
    np.testing.assert_array_equal(kiln.jit(step, donate_argnums=0)(jnp.arange(10)), want)
    np.testing.assert_array_equal(x, np.arange(10))


# ---------------------------------------------- Default dtypes and precision ---------------------------------------

def test_default_dtypes(page):
    assert kiln.config.enable_x64 is False
    none, lines = _run(page.default_dtypes_block)
    assert none is None and lines == [str(np.array([1.0, 2.0]).dtype), "float32"] == ["float64", "float32"]
    assert page.promotion_block() == np.float32
    assert np.result_type(np.arange(3), 1.5) == np.float64  # NumPy's promotion of the same: 64 bits


@pytest.mark.parametrize("request_float64", [
    lambda: jnp.array([1.0, 2.0], dtype=jnp.float64), lambda: jnp.array([1.0, 2.0], dtype=np.dtype("float64")),
    lambda: jnp.asarray(np.array([1.0, 2.0]), dtype="float64"), lambda: jnp.ones(2).astype(jnp.float64),
    lambda: jnp.float64([1.0, 2.0]), lambda: jnp.zeros(2, dtype=np.float64)],
    ids=["array", "array-np.dtype", "asarray", "astype", "scalar-type", "zeros"])
def test_a_float64_request_gives_float32_with_a_warning(request_float64):
    """The page: "requesting `float64` produces a `float32` array (with a warning)". kiln's array, asarray, astype
    and np.dtype("float64") did not warn (fixed)."""
    with pytest.warns(UserWarning, match="requested dtype float64 is not available, and will be truncated to dtype "
                                         "float32.*jax_enable_x64") as record:
        a = request_float64()
    assert len(record) == 1 and record[0].filename == __file__  # once, at the user's line
    _typed(a, np.float32, (2,))


def test_the_x64_sketch_enables_64_bit_dtypes(page):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Python's float asks for the default type: no warning
        assert jnp.ones(2).astype(float).dtype == np.float32
    page.enable_x64_sketch()  # (tests/conftest.py turns the flag off again after the test)
    assert kiln.config.enable_x64 is True
    _, lines = _run(page.default_dtypes_block)
    assert lines == ["float64", "float64"]  # now as NumPy
    assert page.promotion_block() == np.float64  # and promotion may give 64 bits
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no truncation now
        a = jnp.array([0.1, 1 / 3], dtype=jnp.float64)
    _typed(a, np.float64, (2,))
    np.testing.assert_array_equal(a, np.array([0.1, 1 / 3]))  # float64 values, bit for bit
    np.testing.assert_array_equal(jnp.sin(a), np.sin(np.array([0.1, 1 / 3])))


# ---------------------------------------------- Indexing differences -----------------------------------------------

def test_out_of_bounds_reads_clamp(page):
    value, x = page.clamped_read_block()
    _typed(value, np.int32, ())
    assert int(value) == int(x[9]) == 9  # "clamped to x[9]"
    xn = np.arange(10)
    for i in (10, 11, 100, -11, -100):
        assert int(x[i]) == xn[np.clip(i if i >= 0 else i + 10, 0, 9)], i
        assert int(kiln.jit(lambda i: x[i])(i)) == xn[np.clip(i if i >= 0 else i + 10, 0, 9)], i
    with pytest.raises(IndexError):  # (NumPy raises)
        xn[11]


def test_out_of_bounds_writes_drop(page):
    x = jnp.arange(10)
    out = page.dropped_write_block(x)
    _typed(out, np.int32, (10,))
    np.testing.assert_array_equal(out, np.arange(10))  # "update is dropped"
    np.testing.assert_array_equal(kiln.jit(lambda i: x.at[i].set(99))(11), np.arange(10))
    for i in (10, 11, -11):
        np.testing.assert_array_equal(x.at[i].add(5), np.arange(10), err_msg=str(i))


def test_the_mode_argument_adjusts_both():
    """The page: "Both behaviors can be adjusted with the `mode` argument"."""
    x = jnp.arange(10)
    xn = np.arange(10, dtype=np.int32)
    assert int(x.at[11].get(mode="fill", fill_value=-1)) == -1
    assert int(x.at[3].get(mode="fill", fill_value=-1)) == 3
    np.testing.assert_array_equal(x.at[jnp.array([2, 11, -11])].get(mode="fill", fill_value=-1), [2, -1, -1])
    clipped = xn.copy()
    clipped[np.clip(11, 0, 9)] = 99
    np.testing.assert_array_equal(x.at[11].set(99, mode="clip"), clipped)
    with pytest.raises(ValueError) as info:
        x.at[11].set(99, mode="raise")
    assert "'raise'" in str(info.value) and "'clip'" in str(info.value) and "'fill'" in str(info.value)


def test_lists_are_refused(page):
    with pytest.raises(TypeError) as info:
        page.list_argument_block()
    msg = str(info.value)
    assert "sum" in msg and "list" in msg and "argument 0" in msg  # what and where
    assert "asarray" in msg  # how
    out = page.explicit_array_block()
    _typed(out, np.int32, ())
    assert int(out) == np.sum([1, 2, 3]) == 6
    with pytest.raises(TypeError, match="tuple"):
        jnp.sum((1, 2, 3))
    assert int(jnp.sum(3)) == 3  # "or values of Python's built-in numeric types"


# ---------------------------------------------- Arrays live on devices ---------------------------------------------

def test_an_array_lives_on_the_default_device(page):
    x = jnp.arange(10)
    sharding = page.sharding_block(x)
    device = kiln.devices()[0]
    assert type(sharding).__name__ == "SingleDeviceSharding" and sharding.device_set == {device}
    assert x.devices() == {device}
    assert repr(sharding) == f"SingleDeviceSharding(device={device!r}, memory_kind={sharding.memory_kind})"
    assert sharding.is_fully_addressable and sharding.shard_shape(x.shape) == (10,)
    # "computations follow their data"
    assert (x + 1).sharding.device_set == {device}


# ---------------------------------------------- Under the hood: jax.numpy, jax.lax, and XLA ------------------------

@pytest.mark.parametrize("value", [2, 2.0, [0, 1, 2], "int array", "float array", "bfloat16", 1j, True],
                         ids=str)
def test_the_simplified_sin_is_jnp_sin(page, value):
    value = {"int array": jnp.arange(4), "float array": np.linspace(-3.0, 3.0, 7),
             "bfloat16": jnp.arange(3, dtype=jnp.bfloat16)}.get(value, value) if isinstance(value, str) else value
    if isinstance(value, list):
        value = np.asarray(value)  # (the sketch's asarray takes a list; jnp.sin does not)
    got, want = page.sin(value), jnp.sin(value)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    assert kiln.dtypes.issubdtype(got.dtype, jnp.inexact)  # integers (and bools) promoted to floating point
    np.testing.assert_array_equal(got, want)
    host = np.asarray(value, dtype=np.complex128 if np.iscomplexobj(value) else np.float64)
    np.testing.assert_allclose(np.asarray(got, host.dtype), np.sin(host), rtol=1e-2 if got.dtype == jnp.bfloat16
                               else 1e-6, atol=1e-7)


def test_jnp_add_promotes(page):
    out = page.jnp_add_block()
    _typed(out, np.float32, (), weak=True)  # both Python scalars: a weakly typed float32
    assert float(out) == 2.0


def test_lax_add_requires_explicit_promotion(page):
    with pytest.raises(TypeError) as info:
        page.lax_add_block()
    msg = str(info.value)
    assert "lax.add" in msg and "int32" in msg and "float32" in msg  # what, where
    assert "convert_element_type" in msg or "numpy" in msg  # how
    _typed(page.lax.add(1.0, 1.0), np.float32, (), weak=True)
    out = page.lax.add(page.lax.convert_element_type(1, np.float32), 1.0)
    _typed(out, np.float32, ())
    assert float(out) == 2.0
