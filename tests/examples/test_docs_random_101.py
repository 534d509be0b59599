"""JAX's docs page docs/new_docs/101/random.md ("Pseudorandom numbers": keys as values, split, fold_in, wide key
trees, no sequential equivalence, vmap over keys), ported to kiln by changing imports (tests/examples/jax_ported/
docs_random_101.py), checked against oracles that do not involve JAX: a NumPy Threefry-2x32 (tests/examples/
threefry_oracle.py) for every key bit for bit and every draw to float32 rounding (the oracle's erfinv is float64);
the legacy (non-partitionable) counter layout, written out here in NumPy, for the same blocks under
``threefry_partitionable(False)``; NumPy's own generator for the page's NumPy blocks; Python loops for vmap; the
page's printed text; its claims (a key is a rank-0 value of type key<fry>[] that sampling leaves alone, one split's
keys are distinct, a chain of n splits is n hashes where a wide split is one, vmap over threefry keys is exactly the
loop and over rbg keys is not, the typed key/PRNGKey note, the impl argument and jax_default_prng_impl).

The older page docs/random-numbers.md has the same key(42)/split/vmap cells: test_docs_basics.py checks those.
"""
from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest
import scipy.special
import threefry_oracle
from ported import load

import kiln
import kiln.numpy as jnp
from kiln import random

SEED = np.array([0, 42], np.uint32)  # random.key(42)'s data: the seed as (hi, lo) words


@pytest.fixture(autouse=True)
def _numpy_global_rng():
    """The page seeds and draws from NumPy's global generator: leave its state as it was for other tests."""
    state = np.random.get_state()
    yield
    np.random.set_state(state)


@pytest.fixture(scope="module")
def page():
    return load("docs_random_101")


def _run(fn, *args):
    """(what fn returns, the lines it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue().splitlines()


def _kd(key):
    return np.asarray(random.key_data(key))


def _floats(text):
    return np.array([float(v) for v in re.findall(r"-?\d+\.\d+(?:e[-+]\d+)?", text)])


def _fold_in(key, data):
    """random.fold_in's key, in both counter layouts: the pair (0, data) hashed under the key."""
    a, b = threefry_oracle.threefry2x32(key, np.zeros(1, np.uint32), np.array([data], np.uint32))
    return np.array([a[0], b[0]], np.uint32)


def _legacy_hash(key, n):
    """JAX's original threefry_2x32 of iota(n): the counters cut into two halves (an odd count padded with a 0),
    hashed pairwise, joined again."""
    count = np.arange(n, dtype=np.uint32)
    if n % 2:
        count = np.concatenate([count, np.zeros(1, np.uint32)])
    a, b = threefry_oracle.threefry2x32(key, *np.split(count, 2))
    return np.concatenate([a, b])[:n]


def _legacy_split(key, n):
    return _legacy_hash(key, 2 * n).reshape(n, 2)


def _legacy_normal(key, n):
    bits = _legacy_hash(key, n)
    lo = np.nextafter(np.float32(-1), np.float32(0))
    u = ((bits >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)
    u = np.maximum(lo, u * (np.float32(1) - lo) + lo).astype(np.float64)
    return np.sqrt(2) * scipy.special.erfinv(u)


def _normal(key):
    return threefry_oracle.normal(key, 1)[0]


# ---------------------------------------------- Why not a global generator? ----------------------------------------

def test_numpy_global_generator(page):
    _, lines = _run(page.numpy_global_block)
    u = np.random.RandomState(0).uniform(size=2)
    assert lines == [str(u[0]), str(u[1])] and u[0] != u[1]  # "different: the hidden state advanced"
    _, lines = _run(page.foo_block)
    assert lines == [str(u[0] + 2 * u[1])]  # bar() before baz(): NumPy's sequencing promise
    assert u[1] + 2 * u[0] != u[0] + 2 * u[1]  # the other order would give another value


# ---------------------------------------------- Keys are values ----------------------------------------------------

def test_a_key_is_a_rank_0_value_of_type_key_fry(page):
    key, lines = _run(page.key_block)
    assert lines == []
    assert isinstance(key, kiln.Array) and key.shape == () and key.ndim == 0
    assert kiln.dtypes.issubdtype(key.dtype, kiln.dtypes.prng_key) and str(key.dtype) == "key<fry>"
    np.testing.assert_array_equal(_kd(key), SEED)
    assert repr(key) == "Array((), dtype=key<fry>) overlaying:\n[ 0 42]"
    assert _run(page.typeof_block, key)[1] == ["key<fry>[]"]
    assert str(kiln.typeof(key)) == "key<fry>[]" and kiln.typeof(key).shape == ()


def test_same_key_same_value(page):
    key = page.key_block()
    _, lines = _run(page.same_key_block, key)
    assert len(lines) == 2 and lines[0] == lines[1]  # "same key, same value — necessarily"
    value = random.normal(key)
    assert (value.dtype, value.shape, value.weak_type) == (np.float32, (), False)
    assert lines[0] == str(np.asarray(value))
    np.testing.assert_allclose(float(lines[0]), _normal(SEED), rtol=1e-6)
    np.testing.assert_array_equal(_kd(key), SEED)  # sampling neither modified nor "used up" the key


# ---------------------------------------------- Deriving new keys --------------------------------------------------

def test_split(page):
    (key, subkey), lines = _run(page.split_block)
    keys = threefry_oracle.split(SEED)
    np.testing.assert_array_equal(_kd(key), keys[0])
    np.testing.assert_array_equal(_kd(subkey), keys[1])
    assert lines == [str(np.asarray(random.normal(subkey)))]
    np.testing.assert_allclose(float(lines[0]), _normal(keys[1]), rtol=1e-6)


def test_split_num(page):
    values = page.split_num_block()
    assert len(values) == 4 and all(type(v) is float for v in values)
    expected = [_normal(k) for k in threefry_oracle.split(SEED, 4)]
    np.testing.assert_allclose(values, expected, rtol=1e-6, atol=1e-7)
    assert len(set(values)) == 4  # each key its own sample
    # float(): the float32 draws, exactly
    assert values == [float(np.float32(v)) for v in values]


def test_fold_in(page):
    _, lines = _run(page.fold_in_block)
    assert [ln.split(":")[0] for ln in lines] == ["step 0", "step 1", "step 2"]
    for step, line in enumerate(lines):
        key = _fold_in(SEED, step)
        np.testing.assert_array_equal(_kd(random.fold_in(random.key(42), step)), key)
        value = random.normal(random.wrap_key_data(key))
        assert line == f"step {step}: {value}"
        np.testing.assert_allclose(float(line.split(": ")[1]), _normal(key), rtol=1e-6, atol=1e-7)
    # with the (default) partitionable counters, fold_in(key, i) is split(key, n)[i]: both hash (0, i)
    np.testing.assert_array_equal(np.stack([_fold_in(SEED, i) for i in range(4)]), threefry_oracle.split(SEED, 4))
    np.testing.assert_allclose(_floats("\n".join(lines)), page.split_num_block()[:3], rtol=0)


def test_keys_of_one_split_or_fold_in_are_distinct():
    """"the keys produced by one split (or by fold_in over distinct integers) are guaranteed distinct": the hash is,
    for a fixed key, a permutation of its counter."""
    n = 1 << 14
    keys = _kd(random.split(random.key(42), n))
    np.testing.assert_array_equal(keys, threefry_oracle.split(SEED, n))
    assert len({tuple(k) for k in keys}) == n
    folded = _kd(kiln.vmap(random.fold_in, in_axes=(None, 0))(random.key(42), jnp.arange(n, dtype=jnp.uint32)))
    assert len({tuple(k) for k in folded}) == n
    # "the default 64-bit key space": two uint32 words
    assert _kd(random.key(42)).shape == (2,) and _kd(random.key(42)).dtype == np.uint32


def test_chained_split_sketch_serializes(page):
    """The sketch to avoid: each key is derived from the last, n hashes one after the other; the wide alternative,
    split(key, num_steps), is one batched operation."""
    key = SEED
    for n in range(1, 6):
        key = threefry_oracle.split(key)[0]
        np.testing.assert_array_equal(_kd(page.chained_split_sketch(random.key(42), n)), key)
    chained = kiln.make_jaxpr(lambda k: page.chained_split_sketch(k, 5))(random.key(42)).jaxpr
    wide = kiln.make_jaxpr(lambda k: random.split(k, 5))(random.key(42)).jaxpr
    # (kiln's jaxprs hold a key's uint32 data and call the split's program, `_split_impl`; JAX's hold typed keys and
    # a `random_split` equation: see test_docs_random_101_against_jax.py)
    chained_splits = [e for e in chained.eqns if _is_split(e)]
    assert len(chained_splits) == 5 and len([e for e in wide.eqns if _is_split(e)]) == 1
    # each split hashes a key that the one before it made (nothing else in between but taking element 0)
    made_by = {v: e for e in chained.eqns for v in e.outvars}
    for prev, nxt in zip(chained_splits, chained_splits[1:]):
        e = nxt
        while e is not prev:
            e = made_by[e.invars[0]]
            assert e is prev or not _is_split(e)
    assert chained_splits[0].invars == chained.invars


def _is_split(eqn):
    return eqn.primitive.name == "random_split" or eqn.params.get("name") == "_split_impl"


# ---------------------------------------------- No sequential equivalence ------------------------------------------

def test_no_sequential_equivalence(page):
    subkeys, lines = _run(page.no_sequential_equivalence_block)
    keys = threefry_oracle.split(SEED, 3)
    np.testing.assert_array_equal(_kd(subkeys), keys)
    assert lines[0].startswith("individually: [") and lines[1].startswith("all at once:  [")
    individually = np.stack([random.normal(k) for k in subkeys])
    all_at_once = random.normal(random.key(42), shape=(3,))
    assert lines == [f"individually: {individually}", f"all at once:  {all_at_once}"]
    np.testing.assert_allclose(individually, [_normal(k) for k in keys], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(all_at_once), threefry_oracle.normal(SEED, 3), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_floats(lines[0]), individually, rtol=1e-6)
    assert not np.allclose(individually, np.asarray(all_at_once))  # JAX makes no such promise


def test_vmap_over_keys_is_exactly_the_loop(page):
    subkeys, _ = _run(page.no_sequential_equivalence_block)
    vectorized = page.vmap_block(subkeys)
    assert (vectorized.dtype, vectorized.shape, vectorized.weak_type) == (np.float32, (3,), False)
    loop = np.stack([np.asarray(random.normal(k)) for k in subkeys])
    np.testing.assert_array_equal(np.asarray(vectorized), loop)  # "exactly equivalent", bit for bit
    # also under jit, and for a larger batch
    keys = random.split(random.key(7), 16)
    np.testing.assert_array_equal(np.asarray(kiln.jit(kiln.vmap(random.normal))(keys)),
                                  np.stack([np.asarray(random.normal(k)) for k in keys]))
    np.testing.assert_allclose(np.asarray(kiln.vmap(random.normal)(keys)),
                               [_normal(k) for k in threefry_oracle.split(np.array([0, 7], np.uint32), 16)],
                               rtol=1e-6, atol=1e-7)


def test_legacy_counters(page):
    """The same blocks with the original (non-partitionable) threefry counters: other keys and draws, each
    the NumPy legacy layout's, and still no sequential equivalence and an exact vmap."""
    with kiln.threefry_partitionable(False):
        subkeys, lines = _run(page.no_sequential_equivalence_block)
        vectorized = page.vmap_block(subkeys)
        loop = np.stack([np.asarray(random.normal(k)) for k in subkeys])
        (key, subkey), _ = _run(page.split_block)
        _, fold_lines = _run(page.fold_in_block)
        chained = page.chained_split_sketch(random.key(42), 3)
    keys = _legacy_split(SEED, 3)
    np.testing.assert_array_equal(_kd(subkeys), keys)
    assert not np.array_equal(keys, threefry_oracle.split(SEED, 3))
    individually = [_legacy_normal(k, 1)[0] for k in keys]
    np.testing.assert_allclose(_floats(lines[0]), individually, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_floats(lines[1]), _legacy_normal(SEED, 3), rtol=1e-6, atol=1e-7)
    assert not np.allclose(_floats(lines[0]), _floats(lines[1]))
    np.testing.assert_allclose(np.asarray(vectorized), individually, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(np.asarray(vectorized), loop)  # exact, in this layout too
    np.testing.assert_array_equal(np.stack([_kd(key), _kd(subkey)]), _legacy_split(SEED, 2))
    for step, line in enumerate(fold_lines):  # fold_in hashes (0, data) in both layouts
        np.testing.assert_allclose(float(line.split(": ")[1]), _legacy_normal(_fold_in(SEED, step), 1)[0],
                                   rtol=1e-6, atol=1e-7)
    key = SEED
    for _ in range(3):
        key = _legacy_split(key, 2)[0]
    np.testing.assert_array_equal(_kd(chained), key)


# ---------------------------------------------- The note: typed keys and PRNGKey ---------------------------------

def test_typed_keys_and_raw_prngkey():
    raw, key = random.PRNGKey(42), random.key(42)
    assert (raw.dtype, raw.shape) == (np.uint32, (2,))  # "a raw uint32 array"
    np.testing.assert_array_equal(np.asarray(raw), SEED)
    np.testing.assert_array_equal(np.asarray(random.key_data(key)), np.asarray(raw))
    assert str(random.key_impl(key)) == "threefry2x32"  # the typed key records its implementation
    np.testing.assert_array_equal(np.asarray(random.normal(raw, (3,))), np.asarray(random.normal(key, (3,))))
    # "nothing stops you from doing arithmetic on it"; a typed key refuses
    assert np.asarray(raw + 1).tolist() == [1, 43]
    with pytest.raises(TypeError):
        key + 1
    # key_data and wrap_key_data convert at the boundaries
    back = random.wrap_key_data(random.key_data(key))
    assert str(back.dtype) == "key<fry>" and back.shape == ()
    np.testing.assert_array_equal(_kd(back), SEED)
    assert float(random.normal(back)) == float(random.normal(key))


# ---------------------------------------------- Design and implementations -----------------------------------------

def test_other_implementations():
    """"selected per-key via the impl argument to jax.random.key, or globally via the jax_default_prng_impl
    config"; they trade off, among others, "exact vmap-over-keys semantics"."""
    rbg = random.key(42, impl="rbg")
    assert str(kiln.typeof(rbg)) == "key<rbg>[]" and str(random.key_impl(rbg)) == "rbg"
    np.testing.assert_array_equal(_kd(rbg), np.tile(SEED, 2))  # threefry's seed, twice
    old = kiln.config.jax_default_prng_impl
    kiln.config.update("jax_default_prng_impl", "rbg")
    try:
        assert str(random.key(42).dtype) == "key<rbg>"
    finally:
        kiln.config.update("jax_default_prng_impl", old)
    assert str(random.key(42).dtype) == "key<fry>"
    keys = random.split(random.key(42), 3)  # threefry: vmap over keys is the loop, bit for bit
    np.testing.assert_array_equal(np.asarray(kiln.vmap(random.normal)(keys)),
                                  np.stack([np.asarray(random.normal(k)) for k in keys]))
    for impl in ("rbg", "unsafe_rbg"):  # not these (as JAX 0.10.2 on CPU): only the first key's draw is the loop's
        keys = random.split(random.key(42, impl=impl), 3)
        vectorized = np.asarray(kiln.vmap(random.normal)(keys))
        loop = np.stack([np.asarray(random.normal(k)) for k in keys])
        assert vectorized[0] == loop[0] and not np.any(vectorized[1:] == loop[1:])


def test_samplers_take_the_key_first():
    """"uniform, normal, categorical, permutations, and many more, all taking a key as their first argument":
    pure functions of it."""
    key = random.key(42)
    u = random.uniform(key, (5,))
    np.testing.assert_array_equal(np.asarray(u), threefry_oracle.uniform(SEED, 5))  # bit for bit
    logits = jnp.log(jnp.array([0.2, 0.3, 0.5]))
    for draw in (lambda k: random.uniform(k, (5,)), lambda k: random.normal(k, (5,)),
                 lambda k: random.categorical(k, logits, shape=(8,)), lambda k: random.permutation(k, 10)):
        np.testing.assert_array_equal(np.asarray(draw(key)), np.asarray(draw(key)))
    perm = np.asarray(random.permutation(key, 10))
    assert sorted(perm.tolist()) == list(range(10))
    cats = np.asarray(random.categorical(key, logits, shape=(8,)))
    assert cats.dtype == np.int32 and set(cats.tolist()) <= {0, 1, 2}
