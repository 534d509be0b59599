"""PRNG keys: typed key arrays and raw keys, seeds, printing, indexing, errors, and keys passing
through jit, vmap, scan, grad and pytrees."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import random


def data(k):
    return np.asarray(random.key_data(k))


# -- creating keys ------------------------------------------------------------------------------------

def test_key_and_prngkey():
    k = random.key(0)
    assert isinstance(k, random.KeyArray)
    assert k.shape == () and k.ndim == 0 and k.size == 1 and str(k.dtype) == "key<fry>"
    assert k.dtype == random.key_dtype() and k.dtype == "key<fry>" and k.itemsize == 8
    raw = random.PRNGKey(0)
    assert isinstance(raw, kiln.Array) and raw.dtype == np.uint32 and raw.shape == (2,)
    np.testing.assert_array_equal(np.asarray(raw), [0, 0])
    np.testing.assert_array_equal(data(k), [0, 0])
    np.testing.assert_array_equal(data(random.key(42)), [0, 42])
    assert random.key_impl(k) == "threefry2x32" == random.key_impl(raw)


def test_repr_as_the_seed_document_shows():
    assert repr(random.key(0)) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
    assert str(random.key(0)) == repr(random.key(0))
    assert repr(random.split(random.key(0))) == ("Array((2,), dtype=key<fry>) overlaying:\n"
                                                 "[[1797259609 2579123966]\n [ 928981903 3453687069]]")


def test_seeds_as_jax():
    # Without x64, an int seed is cut to its low 32 bits (as JAX): hi = 0.
    for seed, want in [(-1, [0, 4294967295]), (2 ** 32 + 5, [0, 5]), (-2 ** 31, [0, 2147483648]),
                       (2 ** 63 - 1, [0, 4294967295]), (True, [0, 1])]:
        np.testing.assert_array_equal(data(random.key(seed)), want)
        np.testing.assert_array_equal(np.asarray(random.PRNGKey(seed)), want)
    np.testing.assert_array_equal(data(random.key(np.uint32(4000000000))), [0, 4000000000])
    np.testing.assert_array_equal(data(random.key(np.int8(-3))), [0, 4294967293])
    np.testing.assert_array_equal(data(random.key(knp.asarray(7))), [0, 7])


def test_64_bit_seeds_with_x64():
    kiln.config.update("enable_x64", True)
    for seed, want in [(-1, [4294967295, 4294967295]), (2 ** 32 + 5, [1, 5]), (2 ** 63 - 1, [2147483647, 4294967295]),
                       (-2 ** 63, [2147483648, 0]), (3, [0, 3])]:
        np.testing.assert_array_equal(data(random.key(seed)), want)
    np.testing.assert_array_equal(data(random.key(np.uint64(2 ** 40 + 3))), [256, 3])


def test_traced_seeds():
    f = kiln.jit(lambda s: random.key_data(random.key(s)))
    np.testing.assert_array_equal(np.asarray(f(knp.int32(-1))), [0, 4294967295])
    np.testing.assert_array_equal(np.asarray(f(5)), [0, 5])
    np.testing.assert_array_equal(np.asarray(kiln.vmap(f)(knp.arange(3))), [[0, 0], [0, 1], [0, 2]])
    g = kiln.jit(lambda s: random.normal(random.key(s), (2,)))
    np.testing.assert_array_equal(np.asarray(g(1)), np.asarray(random.normal(random.key(1), (2,))))


def test_seed_errors():
    with pytest.raises(TypeError, match=r"kiln.random.key: the seed must be an integer, got float 1.5"):
        random.key(1.5)
    with pytest.raises(TypeError, match=r"kiln.random.PRNGKey: the seed must be an integer, got a float32 value"):
        random.PRNGKey(np.float32(1))
    with pytest.raises(TypeError, match=r"kiln.random.key: the seed must be an integer, got a float32 value"):
        kiln.jit(random.key)(1.0)
    with pytest.raises(TypeError, match=r"kiln.random.key: accepts a scalar seed, but was given an array of "
                                        r"shape \(2,\)"):
        random.key(np.array([1, 2]))
    with pytest.raises(TypeError, match="kiln.random.PRNGKey: accepts a scalar seed, but was given a PRNG key"):
        random.PRNGKey(random.key(0))
    with pytest.raises(OverflowError, match="kiln.random.key: seed 18446744073709551616 does not fit in 64 bits"):
        random.key(2 ** 64)
    with pytest.raises(TypeError, match="kiln.random.key: the seed must be an integer scalar, got str"):
        random.key("0")
    with pytest.raises(ValueError, match="kiln.random.key: unrecognized PRNG implementation 'rgb'; kiln implements "
                                         "'threefry2x32', 'threefry4x32', 'rbg', 'unsafe_rbg', 'philox2x32' and "
                                         "'philox4x32'"):
        random.key(0, impl="rgb")


# -- key data -------------------------------------------------------------------------------------------

def test_key_data_and_wrap_key_data_round_trip():
    keys = random.split(random.key(3), (2, 3))
    raw = random.key_data(keys)
    assert raw.shape == (2, 3, 2) and raw.dtype == np.uint32
    again = random.wrap_key_data(raw)
    assert isinstance(again, random.KeyArray) and again.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(again == keys), np.ones((2, 3), bool))
    np.testing.assert_array_equal(data(random.wrap_key_data(np.array([0, 42], np.uint32))), [0, 42])
    # key_data of a raw key is the raw key itself (as JAX)
    raw_key = random.PRNGKey(1)
    assert random.key_data(raw_key) is raw_key


def test_wrong_kind_of_key_errors():
    with pytest.raises(TypeError, match="kiln.random.wrap_key_data: expected uint32 key data, but was given a key "
                                        "array"):
        random.wrap_key_data(random.key(0))
    with pytest.raises(TypeError, match=r"kiln.random.wrap_key_data: invalid PRNG key data: expected dtype uint32, "
                                        r"got int32"):
        random.wrap_key_data(np.array([0, 1], np.int32))
    with pytest.raises(TypeError, match=r"expected a shape ending with \(2,\), got shape \(3,\)"):
        random.normal(knp.zeros(3, np.uint32))
    with pytest.raises(TypeError, match=r"kiln.random.normal: invalid PRNG key data: expected dtype uint32, got "
                                        r"int32"):
        random.normal(knp.zeros(2, np.int32))
    with pytest.raises(TypeError, match=r"kiln.random.split: invalid PRNG key data: expected an array with at least "
                                        r"one dimension"):
        random.split(knp.uint32(0))
    with pytest.raises(TypeError, match=r"kiln.random.normal: expected a PRNG key \(from kiln.random.key or "
                                        r"kiln.random.PRNGKey\), got list"):
        random.normal([0, 0])
    with pytest.raises(ValueError, match=r"kiln.random.split: accepts a single key, but was given a key array of "
                                         r"shape \(2,\) != \(\). Use kiln.vmap for batching."):
        random.split(random.split(random.key(0)))
    with pytest.raises(ValueError, match=r"kiln.random.uniform: accepts a single key, but was given a key array of "
                                         r"shape \(2, 2\)"):
        random.uniform(random.key_data(random.split(random.key(0))))


def test_split_and_fold_in_keep_the_kind_of_key():
    typed, raw = random.key(0), random.PRNGKey(0)
    assert isinstance(random.split(typed), random.KeyArray)
    r = random.split(raw)
    assert isinstance(r, kiln.Array) and r.shape == (2, 2) and r.dtype == np.uint32
    np.testing.assert_array_equal(np.asarray(r), data(random.split(typed)))
    assert random.split(typed, 5).shape == (5,) and random.split(typed, (2, 3)).shape == (2, 3)
    assert random.split(typed, 0).shape == (0,)
    f = random.fold_in(raw, 7)
    assert isinstance(f, kiln.Array) and f.shape == (2,)
    np.testing.assert_array_equal(np.asarray(f), data(random.fold_in(typed, 7)))
    np.testing.assert_array_equal(data(random.fold_in(typed, np.int32(-1))), data(random.fold_in(typed, 2 ** 32 - 1)))
    # partitionable mode: key i of a split depends on i only (a split into 3 extends a split into 2)
    np.testing.assert_array_equal(data(random.split(typed, 3))[:2], data(random.split(typed, 2)))
    kiln.config.update("threefry_partitionable", False)
    assert not np.array_equal(data(random.split(typed, 3))[:2], data(random.split(typed, 2)))


def test_split_and_fold_in_errors():
    k = random.key(0)
    with pytest.raises(ValueError, match="kiln.random.split: num must be non-negative, got -1"):
        random.split(k, -1)
    with pytest.raises(ValueError, match=r"kiln.random.split: num must not have negative dimensions, got \(2, -3\)"):
        random.split(k, (2, -3))
    with pytest.raises(TypeError, match="kiln.random.split: num must be an int or a tuple of ints, got float 2.0"):
        random.split(k, 2.0)
    with pytest.raises(OverflowError, match="kiln.random.fold_in: data -1 is out of bounds for uint32"):
        random.fold_in(k, -1)
    with pytest.raises(TypeError, match=r"kiln.random.fold_in: accepts a scalar, but was given an array of shape "
                                        r"\(2,\)"):
        random.fold_in(k, np.array([1, 2]))
    with pytest.raises(ValueError, match="kiln.random.bits: dtype must be an unsigned integer dtype, got int32"):
        random.bits(k, (2,), np.int32)


# -- key arrays as arrays -------------------------------------------------------------------------------

def test_indexing_reshaping_iterating():
    keys = random.split(random.key(1), 6)
    raw = data(keys)
    assert len(keys) == 6
    np.testing.assert_array_equal(data(keys[2]), raw[2])
    np.testing.assert_array_equal(data(keys[-1]), raw[5])
    np.testing.assert_array_equal(data(keys[1:4]), raw[1:4])
    np.testing.assert_array_equal(data(keys[...]), raw)
    np.testing.assert_array_equal(data(keys[None]), raw[None])
    grid = keys.reshape(2, 3)
    assert grid.shape == (2, 3) and keys.reshape((3, -1)).shape == (3, 2)
    np.testing.assert_array_equal(data(grid[1, 2]), raw[5])
    np.testing.assert_array_equal(data(grid[:, 1]), raw.reshape(2, 3, 2)[:, 1])
    np.testing.assert_array_equal(data(grid.T), raw.reshape(2, 3, 2).transpose(1, 0, 2))
    np.testing.assert_array_equal(data(grid.swapaxes(0, 1)), raw.reshape(2, 3, 2).transpose(1, 0, 2))
    np.testing.assert_array_equal(data(grid.ravel()), raw)
    np.testing.assert_array_equal(data(keys.reshape(1, 6).squeeze()), raw)
    np.testing.assert_array_equal(data(keys.take(np.array([4, 0]))), raw[[4, 0]])
    a, b, *rest = keys
    np.testing.assert_array_equal(data(b), raw[1])
    assert len(rest) == 4 and all(r.shape == () for r in rest)
    k = random.key(0)
    with pytest.raises(TypeError, match=r"len\(\) of a 0-d key array"):
        len(k)
    with pytest.raises(TypeError, match="iteration over of a 0-d key array"):
        iter(k)
    with pytest.raises(IndexError, match="too many indices for a key array: it has 1 dimension"):
        keys[0, 0]
    with pytest.raises(ValueError, match=r"cannot reshape a key array of shape \(6,\) \(size 6\) into shape \(4,\)"):
        keys.reshape(4)


def test_equality_but_no_arithmetic():
    k1, k2 = random.split(random.key(0))
    assert bool(k1 == k1) and not bool(k1 == k2) and bool(k1 != k2)
    np.testing.assert_array_equal(np.asarray(random.split(k1) == random.split(k1)), [True, True])
    for op in [lambda: k1 + k2, lambda: k1 * 2, lambda: 1 - k1, lambda: -k1, lambda: k1 < k2,
               lambda: k1 ^ k2, lambda: knp.ones(()) + k1]:
        with pytest.raises(TypeError, match="PRNG key arrays .dtype key<fry>. have no arithmetic"):
            op()
    with pytest.raises(TypeError, match=r"unsupported operand for \+: PRNG key arrays"):
        k1 + 1
    # kiln.numpy's functions too (JEP 9263: numerical operations on keys raise), saying how to get keys or data
    for fn in [lambda: knp.add(k1, 1), lambda: knp.sum(random.split(k1)), lambda: knp.sin(k1)]:
        with pytest.raises(TypeError, match=r"kiln.numpy.\w+: argument 0 is a PRNG key array \(dtype key<fry>\), "
                                            r"which has no numeric operations: derive new keys with "
                                            r"kiln.random.split or kiln.random.fold_in, or use "
                                            r"kiln.random.key_data\(keys\)"):
            fn()
    with pytest.raises(TypeError, match="cannot be converted to a NumPy array; use kiln.random.key_data"):
        np.asarray(k1)
    with pytest.raises(TypeError, match="cannot be converted to a Python bool"):
        bool(k1)
    with pytest.raises(TypeError, match="unhashable"):
        hash(k1)
    with pytest.raises(TypeError, match="cannot compare a key array with int"):
        k1 == 0  # noqa: B015


# -- keys through transformations and pytrees ---------------------------------------------------------------

def test_keys_through_jit():
    k = random.key(0)
    split = kiln.jit(lambda k: random.split(k))
    for _ in range(3):  # the first call traces; later ones take the fast dispatch path
        out = split(k)
        assert isinstance(out, random.KeyArray) and out.shape == (2,)
        np.testing.assert_array_equal(data(out), [[1797259609, 2579123966], [928981903, 3453687069]])
    raw = kiln.jit(lambda k: random.split(k, 3))(random.PRNGKey(0))
    assert isinstance(raw, kiln.Array) and raw.shape == (3, 2)
    pair = kiln.jit(lambda k: (k, random.fold_in(k, 7)))(k)
    assert isinstance(pair[0], random.KeyArray)
    np.testing.assert_array_equal(data(pair[1]), [2716826189, 292468403])


def test_keys_through_vmap_scan_and_pytrees():
    keys = random.split(random.key(7), 4)
    got = kiln.vmap(lambda k: random.key_data(random.fold_in(k, 3)))(keys)
    np.testing.assert_array_equal(np.asarray(got), np.stack([data(random.fold_in(k, 3)) for k in keys]))
    out = kiln.vmap(random.split)(keys)
    assert isinstance(out, random.KeyArray) and out.shape == (4, 2)
    np.testing.assert_array_equal(data(out[2]), data(random.split(keys[2])))

    def step(key, _):
        key, sub = random.split(key)
        return key, random.bits(sub)
    final, ys = kiln.lax.scan(step, random.key(0), None, length=3)
    key, want = random.key(0), []
    for _ in range(3):
        key, sub = random.split(key)
        want.append(int(random.bits(sub)))
    assert isinstance(final, random.KeyArray)
    np.testing.assert_array_equal(np.asarray(ys), want)
    np.testing.assert_array_equal(data(final), data(key))
    _, per_key = kiln.lax.scan(lambda c, k: (c, random.bits(k)), 0, keys)
    np.testing.assert_array_equal(np.asarray(per_key), [int(random.bits(k)) for k in keys])

    leaves, tree = kiln.tree_util.tree_flatten({"k": keys, "x": 1.0})
    assert len(leaves) == 2 and leaves[0] is keys  # a key array is one leaf, as in JAX
    back = kiln.tree_util.tree_unflatten(tree, leaves)
    assert isinstance(back["k"], random.KeyArray)
    moved = kiln.device_put({"k": random.key(1)})
    assert isinstance(moved["k"], random.KeyArray)
    # placement, as a kiln array's (that of the key data)
    k = kiln.device_put(random.key(1), kiln.devices()[0])
    assert k.sharding == kiln.sharding.SingleDeviceSharding(kiln.devices()[0]) and k.committed
    assert k.is_fully_addressable and k.is_fully_replicated and k.on_device_size_in_bytes() == 8
    assert not moved["k"].committed and random.key(2).copy_to_host_async() is None  # put without a device


def test_keys_as_non_differentiable_arguments_of_grad():
    k = random.key(0)

    def loss(w, key):
        return knp.sum((w * random.normal(key, (3,))) ** 2)
    eps = np.asarray(random.normal(k, (3,)))
    want = 2 * np.ones(3, np.float32) * eps ** 2
    np.testing.assert_allclose(np.asarray(kiln.grad(loss)(knp.ones(3), k)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(kiln.jit(kiln.grad(loss))(knp.ones(3), k)), want, rtol=1e-6)
    # a reparameterised sample: d/dmu (mu + sigma * eps) = 1, d/dsigma = eps
    g = kiln.grad(lambda p, key: knp.sum(p[0] + p[1] * random.normal(key, (3,))))((1.0, 2.0), k)
    np.testing.assert_allclose([float(g[0]), float(g[1])], [3.0, eps.sum()], rtol=1e-6)


# -- kiln.numpy's element-moving functions on key arrays (as jax.numpy takes them) ---------------------------

def test_numpy_functions_that_move_keys_around():
    ks = random.split(random.key(0), 2)
    k3 = random.split(random.key(1), (2, 3))
    d, d3 = data(ks), data(k3)
    cases = [
        (knp.stack([ks[0], ks[1]]), d),
        (knp.stack([ks, ks], axis=-1), np.stack([d, d], axis=1)),
        (knp.concatenate([ks, ks]), np.concatenate([d, d])),
        (knp.concatenate([k3, ks], axis=None), np.concatenate([d3.reshape(-1, 2), d])),
        (knp.where(knp.array([True, False]), ks, ks[::-1]), d[[0, 0]]),
        (knp.where(True, ks[0], ks[1]), d[0]),
        (knp.broadcast_to(ks[0], (3,)), np.broadcast_to(d[0], (3, 2))),
        (knp.take(ks, knp.array([1])), d[[1]]),
        (knp.take(k3, knp.array([2, 0]), axis=1), d3[:, [2, 0]]),
        (knp.reshape(k3, (3, 2)), d3.reshape(3, 2, 2)),
        (knp.expand_dims(ks, -1), d[:, None]),
        (knp.squeeze(knp.expand_dims(ks, 0)), d),
        (knp.transpose(k3), d3.transpose(1, 0, 2)),
        (knp.flip(k3), d3[::-1, ::-1]),
        (knp.flip(k3, 1), d3[:, ::-1]),
        (knp.asarray(ks), d), (knp.array(ks), d), (knp.copy(ks), d),
        (ks.at[0].set(ks[1]), d[[1, 1]]),
        (k3.at[1, 2].get(), d3[1, 2]),
        (kiln.jit(lambda c, a, b: knp.where(c, a, b))(knp.array([False, True]), ks, ks[::-1]), d[[1, 1]]),
        (kiln.vmap(lambda a: knp.stack([a, a]))(ks), np.stack([d, d], axis=1)),
    ]
    for got, want in cases:
        assert isinstance(got, random.KeyArray) and got.dtype == random.key(0).dtype
        np.testing.assert_array_equal(data(got), want)
    assert knp.asarray(ks) is ks


def test_key_dtypes_are_extended_with_a_scalar_type_that_has_no_instances():
    # JEP 9263: dt.type is a scalar type under numpy.generic (as np.dtype('int32').type is np.int32), and, keys
    # being 0-d arrays, it cannot be instantiated; the error says what to use instead.
    dt = random.key(0).dtype
    assert issubclass(dt.type, np.generic) and dt.type is kiln.dtypes.prng_key
    assert kiln.dtypes.issubdtype(dt, kiln.dtypes.extended) and kiln.dtypes.issubdtype(dt, kiln.dtypes.prng_key)
    for scalar_type in (dt.type, kiln.dtypes.extended):
        with pytest.raises(TypeError, match=rf"cannot create '{scalar_type.__name__}' instances: .* a single PRNG "
                                            r"key is a 0-d key array \(kiln.random.key\(seed\)\)"):
            scalar_type()


def test_lax_full_of_a_key_dtype():
    # JEP 9263: lax.full(shape, fill_value, dtype) with an extended (key) dtype fills the keys' data: a key
    # everywhere, or (as in JAX) keys each of whose words is an integer fill value; also traced.
    k = random.key(7)
    for got, want in [
        (kiln.lax.full((2, 3), k, k.dtype), np.broadcast_to(np.array([0, 7], np.uint32), (2, 3, 2))),
        (kiln.lax.full((2,), k), np.broadcast_to(np.array([0, 7], np.uint32), (2, 2))),
        (kiln.jit(lambda key: kiln.lax.full((1,), key, key.dtype))(k), np.array([[0, 7]], np.uint32)),
        (kiln.lax.full((3,), 5, random.key_dtype("rbg")), np.full((3, 4), 5, np.uint32)),
    ]:
        assert isinstance(got, random.KeyArray)
        assert got.shape == want.shape[:-1] and data(got).dtype == np.uint32
        np.testing.assert_array_equal(data(got), want)
    assert kiln.lax.full((3,), 5, random.key_dtype("rbg")).dtype == random.key_dtype("rbg")
    with pytest.raises(TypeError, match=r"kiln.lax.full: fill_value is a key of dtype key<rbg>, but dtype is "
                                        r"key<fry>; pass dtype=key<rbg> \(or leave it out\)"):
        kiln.lax.full((2,), random.key(1, impl="rbg"), k.dtype)
    with pytest.raises(TypeError, match=r"fill_value must be a scalar, got one of shape \(2,\)"):
        kiln.lax.full((2,), random.split(k), k.dtype)


def test_error_numpy_functions_mixing_keys_and_other_arrays():
    ks = random.split(random.key(0), 2)
    with pytest.raises(TypeError, match=r"kiln.numpy.stack: cannot mix key arrays \(dtype key<fry>\) with arrays of "
                                        r"other dtypes \(got Array\)"):
        knp.stack([ks, knp.ones(2, knp.uint32)])
    with pytest.raises(TypeError, match=r"kiln.numpy.where: cannot mix key arrays"):
        knp.where(True, ks, knp.zeros((2, 2), knp.uint32))
    with pytest.raises(TypeError, match=r"keys.at\[...\].set takes a key array"):
        ks.at[0].set(3)
    with pytest.raises(TypeError, match=r"cannot be converted to dtype float32; use kiln.random.key_data"):
        knp.asarray(ks, dtype=np.float32)


def test_vmap_counts_a_key_arrays_axes_not_its_datas():
    keys = random.split(random.key(7), 3)
    grid = random.split(random.key(1), (2, 3))
    # Negative axes count from the key array's last axis (its data has one more).
    last = kiln.vmap(lambda k: random.key_data(k), in_axes=-1)(grid)
    np.testing.assert_array_equal(np.asarray(last), data(grid).transpose(1, 0, 2))
    split = kiln.vmap(random.split, out_axes=-1)(keys)
    assert isinstance(split, random.KeyArray) and split.shape == (2, 3)
    np.testing.assert_array_equal(data(split[:, 1]), data(random.split(keys[1])))
    # A 0-d key has no axis to map: before, vmap mapped over the two words of its data.
    with pytest.raises(ValueError, match=r"kiln.vmap\(split\): cannot map over axis 0 of argument 0, a 0-d "
                                         r"\(scalar\) value; use in_axes=None for it"):
        kiln.vmap(random.split)(random.key(0))
    with pytest.raises(ValueError, match=r"out_axes=1 is out of range for the output, of rank 1 with the mapped "
                                         r"axis"):
        kiln.vmap(lambda k: k, out_axes=1)(keys)  # before, it moved the batch axis into the data
    # (JEP 9263: a key array has no trailing buffer axis to map over; the message says how to map over the data)
    with pytest.raises(ValueError, match=r"in_axes=1 is out of range for argument 0 of shape \(3,\) \(rank 1\): "
                                         r"use an axis in \[-1, 1\); a key array's key data is not one of its axes "
                                         r"\(map over kiln.random.key_data\(keys\) for that\)"):
        kiln.vmap(lambda k: k, in_axes=1)(keys)
    with pytest.raises(ValueError, match=r"in_axes=2 is out of range for argument 0 of shape \(3,\) \(rank 1\): "
                                         r"use an axis in \[-1, 1\)$"):
        kiln.vmap(lambda k: k, in_axes=2)(knp.ones(3))  # (an array: no word of keys)
    with pytest.raises(ValueError, match=r"argument 0 has shape \(3,\) and axis 0 is to be mapped \(size 3\)\n"
                                         r"  argument 1 has shape \(4,\)"):
        kiln.vmap(lambda k, x: x)(keys, knp.ones(4))


@pytest.mark.parametrize("call", [
    lambda k: random.normal(k, (2,)), lambda k: random.split(k), lambda k: random.fold_in(k, 1),
    lambda k: random.bits(k), lambda k: random.choice(k, 5), lambda k: random.categorical(k, knp.zeros(3)),
    lambda k: kiln.jit(lambda kk: random.uniform(kk))(k)])
def test_legacy_prng_key_warns_or_raises_once_per_call(call):
    message = (r"Legacy uint32 key array passed as key to jax.random function. Please create keys using "
               r"jax.random.key\(\). If use of a raw key array was intended, set jax_legacy_prng_key=\"allow\".")
    raw, typed = random.PRNGKey(0), random.key(0)
    with kiln.legacy_prng_key("warn"):
        with pytest.warns(UserWarning, match=message) as caught:
            call(raw)
        assert len(caught) == 1 and caught[0].filename == __file__
    with kiln.legacy_prng_key("error"):
        with pytest.raises(ValueError, match=message + r" \(kiln.random.\w+: create keys with kiln.random.key"):
            call(raw)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            call(typed)  # typed keys are what the flag asks for
    call(raw)  # 'allow', the default
