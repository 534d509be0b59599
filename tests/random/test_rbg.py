"""The rbg and unsafe_rbg PRNG implementations: keys of four uint32 words whose bits come from XLA's
RngBitGenerator. Their operations are checked against independent models built from other kiln pieces
(threefry keys, kiln.lax.rng_bit_generator) and NumPy/SciPy (the uniform and normal transforms of the bits,
moments); the behaviour of vmap (the first key of a batch draws for the whole batch, as in JAX) and the error
paths. Where JAX is installed (``nox -s against_jax``), the bits, keys and samples are compared with JAX's bit
for bit; JAX is never the source of the other tests' expected values."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.special

import kiln
import kiln.extend.random as extend_random
import kiln.numpy as knp
from kiln import lax, random
from kiln.errors import KeyReuseError

IMPLS = ["rbg", "unsafe_rbg"]
TAGS = {"rbg": "rbg", "unsafe_rbg": "urbg"}


def _data(keys):
    return np.asarray(random.key_data(keys))


def _np_seed(seed: int) -> np.ndarray:
    """The four key words of a 32-bit seed: [hi, lo] twice (hi = 0)."""
    return np.array([0, seed, 0, seed], np.uint32)


# -- keys: data, dtype, printing ---------------------------------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_keys_shapes_dtypes_and_printing(impl):
    key = random.key(7, impl=impl)
    assert key.shape == () and key.dtype == random.key_dtype(impl)
    assert key.dtype.name == f"key<{TAGS[impl]}>" and key.dtype.impl == impl and key.itemsize == 16
    assert random.key_impl(key) == impl
    np.testing.assert_array_equal(_data(key), _np_seed(7))
    assert _data(key).dtype == np.uint32
    assert repr(key) == f"Array((), dtype=key<{TAGS[impl]}>) overlaying:\n[0 7 0 7]"
    raw = random.PRNGKey(7, impl=impl)
    assert raw.shape == (4,) and raw.dtype == np.uint32
    np.testing.assert_array_equal(np.asarray(raw), _np_seed(7))
    keys = random.split(key, (2, 3))
    assert keys.shape == (2, 3) and _data(keys).shape == (2, 3, 4) and keys.nbytes == 96
    assert str(kiln.typeof(keys)) == f"key<{TAGS[impl]}>[2,3]"
    wrapped = random.wrap_key_data(_data(keys), impl=impl)
    assert wrapped.dtype == keys.dtype
    np.testing.assert_array_equal(_data(wrapped), _data(keys))
    assert random.wrap_key_data(_data(key), dtype=key.dtype).dtype == key.dtype
    assert kiln.tree.map(lambda k: k.dtype.name, {"k": key}) == {"k": f"key<{TAGS[impl]}>"}


def test_impl_objects_of_kiln_extend_random():
    rbg, urbg, fry = (extend_random.rbg_prng_impl, extend_random.unsafe_rbg_prng_impl,
                      extend_random.threefry_prng_impl)
    assert (rbg.name, rbg.tag, rbg.key_shape) == ("rbg", "rbg", (4,))
    assert (urbg.name, urbg.tag, urbg.key_shape) == ("unsafe_rbg", "urbg", (4,))
    assert (fry.name, fry.tag, fry.key_shape) == ("threefry2x32", "fry", (2,))
    assert str(urbg) == "urbg" and "name='unsafe_rbg'" in repr(urbg)
    assert pickle.loads(pickle.dumps(urbg)) is urbg
    assert random.key(3, impl=urbg).dtype == random.key_dtype("unsafe_rbg") == random.key_dtype(urbg)
    assert random.key(3, dtype=random.key_dtype("rbg")).dtype.name == "key<rbg>"
    np.testing.assert_array_equal(_data(extend_random.seed_with_impl(rbg, 3)), _np_seed(3))
    assert random.key_impl(random.key(0, impl=fry)) == "threefry2x32"


def test_seeds_are_threefrys_seed_twice():
    for seed in (0, 1, 2 ** 31 + 5, -1):
        fry = _data(random.key(seed))
        for impl in IMPLS:
            np.testing.assert_array_equal(_data(random.key(seed, impl=impl)), np.concatenate([fry, fry]))
    with kiln.enable_x64(True):
        fry = _data(random.key(2 ** 40 + 3))
        np.testing.assert_array_equal(_data(random.key(2 ** 40 + 3, impl="rbg")), np.concatenate([fry, fry]))
    seeds = kiln.vmap(lambda s: random.key(s, impl="unsafe_rbg"))(knp.arange(3))
    np.testing.assert_array_equal(_data(seeds), np.stack([_np_seed(i) for i in range(3)]))
    np.testing.assert_array_equal(_data(kiln.jit(lambda s: random.key(s, impl="rbg"))(9)), _np_seed(9))


# -- split and fold_in against models made of other kiln pieces -----------------------------------------------------

def _threefry_split(half: np.ndarray, shape) -> np.ndarray:
    return _data(random.split(random.wrap_key_data(half, impl="threefry2x32"), shape))


@pytest.mark.parametrize("partitionable", [True, False])
def test_rbg_split_and_fold_in_are_threefrys_on_each_half(partitionable):
    with kiln.threefry_partitionable(partitionable):
        key = random.wrap_key_data(np.array([1, 2, 3, 4], np.uint32), impl="rbg")
        for shape in [(3,), (2, 3), (0,)]:
            got = _data(random.split(key, shape))
            want = np.concatenate([_threefry_split(np.array([1, 2], np.uint32), shape),
                                   _threefry_split(np.array([3, 4], np.uint32), shape)], axis=-1)
            np.testing.assert_array_equal(got, want)
        folded = _data(random.fold_in(key, 5))
        for i, half in enumerate(([1, 2], [3, 4])):
            fry = random.wrap_key_data(np.array(half, np.uint32), impl="threefry2x32")
            np.testing.assert_array_equal(folded[2 * i:2 * i + 2], _data(random.fold_in(fry, 5)))


def test_unsafe_rbg_split_and_fold_in_from_the_generator():
    data = np.array([9, 8, 7, 6], np.uint32)
    key = random.wrap_key_data(data, impl="unsafe_rbg")
    drawn = np.asarray(lax.rng_bit_generator(data, (10 * 6, 4))[1])
    np.testing.assert_array_equal(_data(random.split(key, (2, 3))), drawn[::10].reshape(2, 3, 4))
    np.testing.assert_array_equal(_data(random.split(key, 6)), drawn[::10])
    assert _data(random.split(key, 0)).shape == (0, 4)
    msg_keys = np.asarray(lax.rng_bit_generator(_np_seed(11), (10, 4))[1])
    np.testing.assert_array_equal(_data(random.fold_in(key, 11)), data ^ msg_keys[-1])


@pytest.mark.parametrize("impl", IMPLS)
def test_split_and_fold_in_give_distinct_deterministic_keys(impl):
    key = random.key(3, impl=impl)
    children = _data(random.split(key, 8))
    assert len({tuple(c) for c in children}) == 8
    assert not any(np.array_equal(c, _data(key)) for c in children)
    np.testing.assert_array_equal(children, _data(random.split(random.key(3, impl=impl), 8)))
    np.testing.assert_array_equal(_data(random.split(key, (2, 4))).reshape(8, 4), children)
    folds = [_data(random.fold_in(key, i)) for i in (0, 1, 2 ** 32 - 1)]
    assert len({tuple(f) for f in folds}) == 3
    np.testing.assert_array_equal(folds[1], _data(random.fold_in(random.key(3, impl=impl), 1)))
    np.testing.assert_array_equal(_data(kiln.jit(random.fold_in)(key, 1)), folds[1])
    np.testing.assert_array_equal(_data(kiln.jit(lambda k: random.split(k, 8))(key)), children)
    # Typed keys in, typed keys out; raw in, raw out (with the default implementation set to theirs).
    assert random.split(key).dtype == key.dtype
    with kiln.default_prng_impl(impl):
        raw = random.PRNGKey(3)
        np.testing.assert_array_equal(np.asarray(raw), _data(key))
        np.testing.assert_array_equal(np.asarray(random.split(raw, 8)), children)
        assert random.key(3).dtype == key.dtype and random.key_impl(raw) == impl


# -- bits and samplers -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_bits_are_the_generators(impl):
    data = np.array([5, 6, 7, 8], np.uint32)
    key = random.wrap_key_data(data, impl=impl)
    for dtype in (np.uint8, np.uint16, np.uint32):
        got = random.bits(key, (4, 3), dtype)
        assert got.shape == (4, 3) and got.dtype == dtype
        np.testing.assert_array_equal(got, np.asarray(lax.rng_bit_generator(data, (4, 3), dtype)[1]))
    a, b = random.bits(key, (1000,)), random.bits(random.wrap_key_data(data + 1, impl=impl), (1000,))
    assert np.mean(np.asarray(a) == np.asarray(b)) < 0.01  # other keys, other bits
    np.testing.assert_array_equal(kiln.jit(lambda k: random.bits(k, (1000,)))(key), a)
    with kiln.enable_x64(True):
        wide = random.bits(key, (3,), np.uint64)
        assert wide.dtype == np.uint64
        np.testing.assert_array_equal(wide, np.asarray(lax.rng_bit_generator(data, (3,), np.uint64)[1]))


@pytest.mark.parametrize("impl", IMPLS)
def test_uniform_and_normal_transform_the_bits(impl):
    key = random.key(21, impl=impl)
    bits = np.asarray(random.bits(key, (2000,)))
    # uniform: 23 random mantissa bits under 1.0's exponent, minus 1 (NumPy's model of the transform)
    want = ((bits >> 9) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)
    u = np.asarray(random.uniform(key, (2000,)))
    np.testing.assert_array_equal(u, want)
    assert u.min() >= 0 and u.max() < 1
    lo, hi = np.float32(-3), np.float32(5)
    scaled = np.asarray(random.uniform(key, (2000,), minval=lo, maxval=hi))
    assert scaled.min() >= lo and scaled.max() < hi
    np.testing.assert_allclose(scaled, want * (hi - lo) + lo, rtol=1e-6)
    # normal: sqrt(2) erfinv of a uniform draw on (-1, 1) from the same bits
    x = np.asarray(random.normal(key, (2000,)))
    lo1 = np.nextafter(np.float32(-1), np.float32(0))
    v = np.maximum(lo1, want * (np.float32(1) - lo1) + lo1)
    np.testing.assert_allclose(x, np.sqrt(2) * scipy.special.erfinv(v.astype(np.float64)), rtol=2e-5, atol=2e-6)
    for dtype in (np.float16, knp.bfloat16, np.float32):
        assert random.uniform(key, (3,), dtype).dtype == dtype and random.normal(key, (3,), dtype).dtype == dtype


@pytest.mark.parametrize("impl", IMPLS)
def test_moments_of_the_samplers(impl):
    key = random.key(5, impl=impl)
    n = 200_000
    x = np.asarray(random.normal(key, (n,)), np.float64)
    assert abs(x.mean()) < 0.01 and abs(x.var() - 1) < 0.02
    u = np.asarray(random.uniform(random.fold_in(key, 1), (n,)), np.float64)
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    assert abs(np.corrcoef(x, u)[0, 1]) < 0.01  # fold_in's key draws other numbers
    ints = np.asarray(random.randint(random.fold_in(key, 2), (10_000,), 3, 9))
    assert ints.min() == 3 and ints.max() == 8 and set(np.unique(ints)) == set(range(3, 9))
    b = np.asarray(random.bernoulli(random.fold_in(key, 3), 0.3, (10_000,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.02
    g = np.asarray(random.gamma(random.fold_in(key, 4), 2.5, (4000,)), np.float64)
    assert g.min() > 0 and abs(g.mean() - 2.5) < 0.15 and abs(g.var() - 2.5) < 0.4
    c = np.asarray(random.categorical(random.fold_in(key, 5), np.log(np.array([0.2, 0.8], np.float32)), shape=(4000,)))
    assert set(np.unique(c)) == {0, 1} and abs(c.mean() - 0.8) < 0.03
    perm = np.asarray(random.permutation(random.fold_in(key, 6), 50))
    assert sorted(perm) == list(range(50)) and not np.array_equal(perm, np.arange(50))
    for sample in (random.beta(key, 2.0, 3.0, (3,)), random.dirichlet(key, np.ones(3, np.float32)),
                   random.t(key, 3.0, (3,)), random.exponential(key, (3,)), random.choice(key, 10, (3,), False),
                   random.truncated_normal(key, -1.0, 1.0, (3,)), random.binomial(key, 10.0, 0.5, (3,)),
                   random.multinomial(key, 10.0, np.array([0.5, 0.5], np.float32))):
        assert np.all(np.isfinite(np.asarray(sample, np.float64)))


@pytest.mark.parametrize("impl", IMPLS)
def test_samplers_under_jit_and_grad(impl):
    key = random.key(8, impl=impl)
    np.testing.assert_array_equal(kiln.jit(lambda k: random.normal(k, (5,)))(key), random.normal(key, (5,)))
    np.testing.assert_array_equal(kiln.jit(lambda k: random.gamma(k, 2.0, (3,)))(key), random.gamma(key, 2.0, (3,)))
    grad = kiln.grad(lambda s: knp.sum(s * random.normal(key, (4,))))(2.0)
    np.testing.assert_allclose(grad, np.sum(np.asarray(random.normal(key, (4,)))), rtol=1e-6)
    lo_grad = kiln.grad(lambda lo: knp.sum(random.uniform(key, (4,), minval=lo, maxval=3.0)))(1.0)
    np.testing.assert_allclose(lo_grad, np.sum(1 - np.asarray(random.uniform(key, (4,)))), rtol=1e-5)


# -- vmap: the first key of a batch draws for the whole batch (JAX's rule for XLA's generator) ------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_vmap_draws_the_batch_from_its_first_key(impl):
    keys = random.split(random.key(1, impl=impl), 4)
    batched = np.asarray(kiln.vmap(lambda k: random.uniform(k, (3,)))(keys))
    np.testing.assert_array_equal(batched, random.uniform(keys[0], (4, 3)))
    assert len({tuple(row) for row in batched}) == 4
    np.testing.assert_array_equal(kiln.jit(kiln.vmap(lambda k: random.uniform(k, (3,))))(keys), batched)
    nested = kiln.vmap(kiln.vmap(lambda k: random.normal(k, (2,))))(random.split(keys[0], (2, 3)))
    np.testing.assert_array_equal(nested, random.normal(random.split(keys[0], (2, 3))[0, 0], (2, 3, 2)))
    # The same under scan keeps each key's own numbers (one key per step).
    _, scanned = lax.scan(lambda c, k: (c, random.uniform(k, (3,))), 0, keys)
    np.testing.assert_array_equal(scanned, np.stack([random.uniform(k, (3,)) for k in keys]))
    # threefry keys are not affected: each draws its own numbers.
    fry = random.split(random.key(1), 4)
    np.testing.assert_array_equal(kiln.vmap(lambda k: random.uniform(k, (3,)))(fry),
                                  np.stack([random.uniform(k, (3,)) for k in fry]))


def test_vmap_of_split_and_fold_in():
    keys = random.split(random.key(2, impl="rbg"), 3)  # rbg's split and fold_in are threefry's: per key
    np.testing.assert_array_equal(_data(kiln.vmap(random.split)(keys)),
                                  np.stack([_data(random.split(k)) for k in keys]))
    np.testing.assert_array_equal(_data(kiln.vmap(lambda k: random.fold_in(k, 4))(keys)),
                                  np.stack([_data(random.fold_in(k, 4)) for k in keys]))
    ukey = random.key(2, impl="unsafe_rbg")  # unsafe_rbg's use the generator: the batch draws from its first
    folded = _data(kiln.vmap(lambda i: random.fold_in(ukey, i))(knp.arange(3, dtype=np.uint32)))
    np.testing.assert_array_equal(folded[0], _data(random.fold_in(ukey, 0)))
    drawn = np.asarray(lax.rng_bit_generator(_np_seed(0), (3, 10, 4))[1])
    np.testing.assert_array_equal(folded, _data(ukey)[None] ^ drawn[:, -1])


def test_vmap_rule_of_the_bits():
    """JAX's rule for XLA's generator under vmap, applied to rbg keys: the first key draws ``(batch, *shape)``;
    nested, per level. (kiln.lax.rng_bit_generator itself runs one generator per key under vmap.)"""
    data = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], np.uint32)
    for impl in IMPLS:
        keys = random.wrap_key_data(data, impl=impl)
        np.testing.assert_array_equal(kiln.vmap(lambda k: random.bits(k, (5,)))(keys),
                                      np.asarray(lax.rng_bit_generator(data[0], (3, 5))[1]))
        np.testing.assert_array_equal(kiln.vmap(lambda k: random.bits(k, (2,)), out_axes=1)(keys),
                                      np.asarray(lax.rng_bit_generator(data[0], (3, 2))[1]).T)
        nested = kiln.vmap(kiln.vmap(lambda k: random.bits(k, (2,))), in_axes=1)(keys.reshape(1, 3))
        np.testing.assert_array_equal(nested, np.asarray(lax.rng_bit_generator(data[0], (3, 1, 2))[1]))
        assert kiln.vmap(lambda k: random.bits(k, (2,)))(random.split(keys[0], 0)).shape == (0, 2)
    _, per_key = kiln.vmap(lambda k: lax.rng_bit_generator(k, (5,)))(data)
    np.testing.assert_array_equal(per_key[2], np.asarray(lax.rng_bit_generator(data[2], (5,))[1]))


def test_gamma_under_vmap():
    """gamma draws each sample from its own key, one after the other (lax.map, as JAX): under vmap, a batch of rbg
    keys gives what a loop over them gives. unsafe_rbg's keys are split under vmap first (as JAX's), where the
    generator draws for the batch from its first key: the first key's samples are its own, the others not."""
    a = np.array([0.5, 2.0, 7.0], np.float32)
    keys = random.split(random.key(4, impl="rbg"), 3)
    np.testing.assert_array_equal(kiln.vmap(lambda k: random.gamma(k, a))(keys),
                                  np.stack([random.gamma(k, a) for k in keys]))
    g = np.asarray(random.gamma(keys[0], np.full(4, 2.0, np.float32)))
    assert len(set(g.tolist())) == 4  # one key per element
    keys = random.split(random.key(4, impl="unsafe_rbg"), 3)
    batched = np.asarray(kiln.vmap(lambda k: random.gamma(k, a))(keys))
    np.testing.assert_array_equal(batched[0], random.gamma(keys[0], a))
    assert not np.array_equal(batched[1], random.gamma(keys[1], a))
    np.testing.assert_array_equal(kiln.jit(kiln.vmap(lambda k: random.gamma(k, a)))(keys), batched)


# -- keys through the key machinery ------------------------------------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_key_arrays_move_like_threefrys(impl):
    keys = random.split(random.key(6, impl=impl), 6)
    data = _data(keys)
    np.testing.assert_array_equal(_data(keys.reshape(2, 3)[1, 2]), data[5])
    np.testing.assert_array_equal(_data(keys[::2]), data[::2])
    np.testing.assert_array_equal(_data(knp.stack([keys[0], keys[1]])), data[:2])
    np.testing.assert_array_equal(_data(knp.concatenate([keys[:2], keys[4:]])), data[[0, 1, 4, 5]])
    np.testing.assert_array_equal(_data(knp.where(np.array([True, False]), keys[:2], keys[2:4])), data[[0, 3]])
    np.testing.assert_array_equal(_data(keys.at[1].set(keys[0])), data[[0, 0, 2, 3, 4, 5]])
    np.testing.assert_array_equal(_data(knp.take(keys, np.array([4, 1]))), data[[4, 1]])
    np.testing.assert_array_equal(np.asarray(keys == keys[0]), [True] + [False] * 5)
    assert [k.dtype for k in keys[:2]] == [keys.dtype] * 2
    out = kiln.jit(lambda ks: (ks[0], random.split(ks[1])))(keys)
    assert out[0].dtype == keys.dtype and out[1].dtype == keys.dtype


def test_key_reuse_is_checked_for_rbg_keys():
    with kiln.debug_key_reuse(True):
        for impl in IMPLS:
            key = random.key(0, impl=impl)
            random.normal(key)
            with pytest.raises(KeyReuseError, match=r"kiln.random.uniform: previously-consumed key passed"):
                random.uniform(key)
            a, b = random.split(random.key(1, impl=impl))
            random.normal(a), random.normal(b), random.fold_in(random.clone(a), 1)


def test_default_prng_impl_flag():
    assert kiln.config.default_prng_impl == "threefry2x32"
    for impl in IMPLS:
        kiln.config.update("jax_default_prng_impl", impl)
        try:
            assert random.key(0).dtype.name == f"key<{TAGS[impl]}>"
            raw = random.PRNGKey(4)
            np.testing.assert_array_equal(np.asarray(raw), _np_seed(4))
            np.testing.assert_array_equal(random.normal(raw, (3,)), random.normal(random.key(4, impl=impl), (3,)))
            np.testing.assert_array_equal(kiln.jit(lambda k: random.uniform(k, (2,)))(raw),
                                          random.uniform(random.key(4, impl=impl), (2,)))
        finally:
            kiln.config.update("jax_default_prng_impl", "threefry2x32")
    assert random.key(0).dtype.name == "key<fry>"
    with kiln.default_prng_impl("unsafe_rbg"):
        assert kiln.default_prng_impl.value == "unsafe_rbg" and random.key_dtype().name == "key<urbg>"


def test_stateful_generator_with_rbg():
    from kiln.experimental.random import stateful_rng
    rng = stateful_rng(3, impl="rbg")
    a, b = rng.uniform(size=3), rng.uniform(size=3)
    np.testing.assert_array_equal(a, random.uniform(random.fold_in(random.key(3, impl="rbg"), 0), (3,)))
    assert not np.array_equal(a, b)


# -- errors ----------------------------------------------------------------------------------------------------------

def test_unknown_implementation_names_the_valid_ones():
    valid = (r"kiln implements 'threefry2x32', 'threefry4x32', 'rbg', 'unsafe_rbg', 'philox2x32' and "
             r"'philox4x32'")
    for call in (lambda: random.key(0, impl="RBG"), lambda: random.PRNGKey(0, impl="rgb"),
                 lambda: random.key_dtype("urbg"), lambda: random.wrap_key_data(np.zeros(4, np.uint32), impl="x")):
        with pytest.raises(ValueError, match=r"unrecognized PRNG implementation '\w+'; " + valid):
            call()
    with pytest.raises(TypeError, match=r"kiln.random.key: unrecognized type int for a PRNG implementation; give one "
                                        r"of the names 'threefry2x32', 'threefry4x32', 'rbg', 'unsafe_rbg'"):
        random.key(0, impl=2)
    with pytest.raises(ValueError, match=r"unknown PRNG implementation; " + valid):
        kiln.config.update("jax_default_prng_impl", "rgb")
    assert kiln.config.default_prng_impl == "threefry2x32"
    with pytest.raises(ValueError, match="kiln.random.key: give the PRNG implementation as impl= or as dtype="):
        random.key(0, impl="rbg", dtype=random.key_dtype("rbg"))


def test_key_data_of_the_wrong_shape():
    with pytest.raises(TypeError, match=r"kiln.random.wrap_key_data: invalid PRNG key data: expected a shape ending "
                                        r"with \(4,\), got shape \(2,\) \(rbg keys hold 4 uint32 words\)"):
        random.wrap_key_data(np.zeros(2, np.uint32), impl="rbg")
    with pytest.raises(TypeError, match=r"kiln.random.split: invalid PRNG key data: expected a shape ending with "
                                        r"\(2,\), got shape \(4,\) .*kiln.config.default_prng_impl='threefry2x32'"):
        random.split(random.PRNGKey(0, impl="unsafe_rbg"))
    with kiln.default_prng_impl("rbg"), pytest.raises(TypeError, match=r"kiln.random.normal: invalid PRNG key data: "
                                                                       r"expected a shape ending with \(4,\)"):
        random.normal(random.PRNGKey(0, impl="threefry2x32"))
    with pytest.raises(ValueError, match=r"kiln.random.uniform: accepts a single key, but was given a key array of "
                                         r"shape \(2,\) != \(\)"):
        random.uniform(random.split(random.key(0, impl="rbg")))


def test_mixing_implementations():
    fry, rbg, urbg = random.key(0), random.key(0, impl="rbg"), random.key(0, impl="unsafe_rbg")
    with pytest.raises(ValueError, match=r"kiln.numpy.stack: cannot mix key arrays of different PRNG implementations "
                                         r"\(dtypes key<fry>, key<rbg>\)"):
        knp.stack([fry, rbg])
    with pytest.raises(ValueError, match=r"kiln.numpy.concatenate: cannot mix key arrays of different PRNG "
                                         r"implementations \(dtypes key<rbg>, key<urbg>\)"):
        knp.concatenate([random.split(rbg), random.split(urbg)])
    with pytest.raises(ValueError, match=r"kiln.numpy.where: cannot mix key arrays of different PRNG"):
        knp.where(True, rbg, urbg)
    with pytest.raises(TypeError, match=r"kiln.random: cannot compare key arrays of different PRNG implementations "
                                        r"\(dtypes key<rbg> and key<fry>\)"):
        rbg == fry  # noqa: B015
    with pytest.raises(TypeError, match=r"keys.at\[...\].set: cannot set keys of dtype key<fry> into a key array of "
                                        r"dtype key<urbg>"):
        random.split(urbg).at[0].set(fry)
    with pytest.raises(TypeError, match=r"kiln.numpy.asarray: a key array \(dtype key<rbg>\) cannot be converted to "
                                        r"dtype key<fry>"):
        knp.asarray(rbg, dtype=fry.dtype)
    with pytest.raises(TypeError, match=r"PRNG key arrays \(dtype key<urbg>\) have no arithmetic"):
        urbg + 1  # noqa: B018


def test_poisson_needs_threefry_keys_as_in_jax():
    for impl in IMPLS:
        with pytest.raises(NotImplementedError, match=rf"kiln.random.poisson: implemented for threefry2x32 keys only "
                                                      rf"\(as JAX's poisson\), not {impl} keys"):
            random.poisson(random.key(0, impl=impl), 3.0)


# -- bit for bit against JAX (where it is installed) -------------------------------------------------------------------

@pytest.fixture(scope="module")
def jax_random():
    jax = pytest.importorskip("jax")
    return jax


@pytest.mark.parametrize("impl", IMPLS)
def test_against_jax_keys_split_fold_in_bits(jax_random, impl):
    jax, jr = jax_random, jax_random.random
    for seed in (0, 42, 2 ** 31 + 5):
        jk, kk = jr.key(seed, impl=impl), random.key(seed, impl=impl)
        np.testing.assert_array_equal(_data(kk), np.asarray(jr.key_data(jk)))
        np.testing.assert_array_equal(np.asarray(random.PRNGKey(seed, impl=impl)),
                                      np.asarray(jr.PRNGKey(seed, impl=impl)))
        np.testing.assert_array_equal(_data(random.split(kk)), np.asarray(jr.key_data(jr.split(jk))))
        np.testing.assert_array_equal(_data(random.split(kk, (2, 3))), np.asarray(jr.key_data(jr.split(jk, (2, 3)))))
        np.testing.assert_array_equal(_data(random.fold_in(kk, 7)), np.asarray(jr.key_data(jr.fold_in(jk, 7))))
        for dtype in ("uint8", "uint16", "uint32"):
            np.testing.assert_array_equal(random.bits(kk, (5, 3), dtype), np.asarray(jr.bits(jk, (5, 3), dtype)))
    assert str(random.key(1, impl=impl)) == str(jr.key(1, impl=impl))
    jks, kks = jr.split(jr.key(3, impl=impl), 4), random.split(random.key(3, impl=impl), 4)
    np.testing.assert_array_equal(_data(kiln.vmap(random.split)(kks)), np.asarray(jr.key_data(jax.vmap(jr.split)(jks))))
    np.testing.assert_array_equal(_data(kiln.vmap(lambda i: random.fold_in(kks[0], i))(knp.arange(3))),
                                  np.asarray(jr.key_data(jax.vmap(lambda i: jr.fold_in(jks[0], i))(np.arange(3)))))
    np.testing.assert_array_equal(kiln.vmap(lambda k: random.bits(k, (2,)))(kks),
                                  np.asarray(jax.vmap(lambda k: jr.bits(k, (2,)))(jks)))


@pytest.mark.parametrize("impl", IMPLS)
def test_against_jax_uniform_normal(jax_random, impl):
    jax, jr, jnp = jax_random, jax_random.random, jax_random.numpy
    jk, kk = jr.key(42, impl=impl), random.key(42, impl=impl)
    np.testing.assert_array_equal(random.uniform(kk, (4, 3)), np.asarray(jr.uniform(jk, (4, 3))))
    np.testing.assert_array_equal(random.uniform(kk, (4,), knp.bfloat16),
                                  np.asarray(jr.uniform(jk, (4,), jnp.bfloat16)))
    np.testing.assert_array_equal(random.normal(kk, (7,)), np.asarray(jr.normal(jk, (7,))))
    np.testing.assert_array_equal(random.normal(kk, (3,), np.complex64), np.asarray(jr.normal(jk, (3,), jnp.complex64)))
    np.testing.assert_array_equal(kiln.jit(lambda k: random.normal(k, (7,)))(kk),
                                  np.asarray(jax.jit(lambda k: jr.normal(k, (7,)))(jk)))
    jks, kks = jr.split(jk, 4), random.split(kk, 4)
    np.testing.assert_array_equal(kiln.vmap(lambda k: random.uniform(k, (3,)))(kks),
                                  np.asarray(jax.vmap(lambda k: jr.uniform(k, (3,)))(jks)))
    np.testing.assert_array_equal(kiln.vmap(kiln.vmap(lambda k: random.normal(k, (2,))))(random.split(kk, (2, 3))),
                                  np.asarray(jax.vmap(jax.vmap(lambda k: jr.normal(k, (2,))))(jr.split(jk, (2, 3)))))
    with kiln.enable_x64(True), jax.enable_x64(True):
        jk, kk = jr.key(2 ** 40 + 3, impl=impl), random.key(2 ** 40 + 3, impl=impl)
        np.testing.assert_array_equal(_data(kk), np.asarray(jr.key_data(jk)))
        np.testing.assert_array_equal(random.normal(kk, (3,), np.float64), np.asarray(jr.normal(jk, (3,), jnp.float64)))


@pytest.mark.parametrize("impl", IMPLS)
def test_against_jax_other_samplers(jax_random, impl):
    jax, jr, jnp = jax_random, jax_random.random, jax_random.numpy
    jk, kk = jr.key(42, impl=impl), random.key(42, impl=impl)
    a = np.array([0.5, 1.0, 2.0, 3.0], np.float32)
    cases = [
        (lambda k: random.randint(k, (9,), 0, 10), lambda k: jr.randint(k, (9,), 0, 10)),
        (lambda k: random.bernoulli(k, 0.3, (9,)), lambda k: jr.bernoulli(k, 0.3, (9,))),
        (lambda k: random.categorical(k, np.arange(5.0, dtype=np.float32), shape=(6,)),
         lambda k: jr.categorical(k, jnp.arange(5.0), shape=(6,))),
        (lambda k: random.permutation(k, 10), lambda k: jr.permutation(k, 10)),
        (lambda k: random.choice(k, 10, (3,), replace=False), lambda k: jr.choice(k, 10, (3,), replace=False)),
        (lambda k: random.gamma(k, a), lambda k: jr.gamma(k, a)),
        (lambda k: random.beta(k, 2.0, 3.0, (3,)), lambda k: jr.beta(k, 2.0, 3.0, (3,))),
        (lambda k: random.binomial(k, 20.0, 0.3, (5,)), lambda k: jr.binomial(k, 20.0, 0.3, (5,))),
        (lambda k: random.truncated_normal(k, -1.0, 1.0, (4,)), lambda k: jr.truncated_normal(k, -1.0, 1.0, (4,))),
    ]
    for kf, jf in cases:
        np.testing.assert_array_equal(kf(kk), np.asarray(jf(jk)))
    jks, kks = jr.split(jk, 4), random.split(kk, 4)
    np.testing.assert_array_equal(kiln.vmap(lambda k: random.gamma(k, 2.0, (3,)))(kks),
                                  np.asarray(jax.vmap(lambda k: jr.gamma(k, 2.0, (3,)))(jks)))
    np.testing.assert_array_equal(kiln.vmap(lambda k: random.permutation(k, 6))(kks),
                                  np.asarray(jax.vmap(lambda k: jr.permutation(k, 6))(jks)))
