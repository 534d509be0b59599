"""Threefry-2x32 against an independent NumPy implementation and the Random123 known-answer
vectors, and the key operations (split, fold_in, bits) against NumPy models of JAX's two counter
layouts, plus JAX's published values in both modes."""
from __future__ import annotations

import numpy as np
import pytest
from kiln.frontend.random import threefry

import kiln
import kiln.numpy as knp
from kiln import random

# -- an independent reference: Threefry-2x32, 20 rounds, in NumPy uint32 -----------------------------

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def np_threefry2x32(key, counter):
    """Threefry-2x32-20 of the counter words (x0, x1) under the key words (k0, k1) (Salmon et al. 2011)."""
    k = [np.asarray(key[0], np.uint32), np.asarray(key[1], np.uint32)]
    x = [np.array(counter[0], np.uint32), np.array(counter[1], np.uint32)]
    x[0], x[1] = np.broadcast_arrays(x[0], x[1])
    x = [x[0].copy(), x[1].copy()]
    ks = [k[0], k[1], k[0] ^ k[1] ^ np.uint32(0x1BD11BDA)]
    with np.errstate(over="ignore"):
        x[0] = x[0] + ks[0]
        x[1] = x[1] + ks[1]
        for block in range(5):
            for r in ROTATIONS[block % 2]:
                x[0] = x[0] + x[1]
                x[1] = ((x[1] << np.uint32(r)) | (x[1] >> np.uint32(32 - r))).astype(np.uint32)
                x[1] = x[1] ^ x[0]
            x[0] = x[0] + ks[(block + 1) % 3]
            x[1] = x[1] + ks[(block + 2) % 3] + np.uint32(block + 1)
    return x[0].astype(np.uint32), x[1].astype(np.uint32)


# Random123's known-answer vectors for threefry2x32 with 20 rounds: (key, counter, result).
KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6b200159, 0x99ba4efe)),
    ((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
    ((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3), (0xc4923a9c, 0x483df7a0)),
]


def test_numpy_reference_matches_random123_vectors():
    for key, ctr, want in KAT:
        got = np_threefry2x32(key, ([ctr[0]], [ctr[1]]))
        assert (int(got[0][0]), int(got[1][0])) == want


def _kiln_hash(k1, k2, x1, x2):
    u = lambda a: knp.asarray(np.asarray(a, np.uint32))
    return kiln.jit(threefry.threefry2x32)(u(k1), u(k2), u(x1), u(x2))


def test_kiln_threefry_random123_vectors():
    keys = np.array([k for k, _, _ in KAT], np.uint32)
    ctrs = np.array([c for _, c, _ in KAT], np.uint32)
    y1, y2 = _kiln_hash(keys[:, 0], keys[:, 1], ctrs[:, 0], ctrs[:, 1])
    np.testing.assert_array_equal(np.stack([np.asarray(y1), np.asarray(y2)], 1), np.array([w for *_, w in KAT]))


def test_kiln_threefry_matches_numpy_reference_and_broadcasts():
    rng = np.random.default_rng(0)
    k = rng.integers(0, 2 ** 32, (2, 64), dtype=np.uint32)
    x = rng.integers(0, 2 ** 32, (2, 64), dtype=np.uint32)
    x[:, :4] = [[0, 0xFFFFFFFF, 0, 1], [0, 0xFFFFFFFF, 0xFFFFFFFF, 0]]  # edge words
    y1, y2 = _kiln_hash(k[0], k[1], x[0], x[1])
    r1, r2 = np_threefry2x32((k[0], k[1]), (x[0], x[1]))
    np.testing.assert_array_equal(np.asarray(y1), r1)
    np.testing.assert_array_equal(np.asarray(y2), r2)
    # scalar key words broadcast against a (3, 4) counter; eagerly (op by op) too
    y1, y2 = threefry.threefry2x32(*(knp.asarray(np.asarray(a, np.uint32)) for a in (7, 9, x[0, :12].reshape(3, 4),
                                                                                      x[1, :12].reshape(3, 4))))
    r1, r2 = np_threefry2x32((7, 9), (x[0, :12].reshape(3, 4), x[1, :12].reshape(3, 4)))
    np.testing.assert_array_equal(np.asarray(y1), r1)
    np.testing.assert_array_equal(np.asarray(y2), r2)


@pytest.mark.parametrize("rolled", [True, False], ids=["loop", "inline"])
def test_both_emissions_match_numpy_reference(rolled):
    """The loop (small arrays by default) and the inline rounds (large arrays) give the same bits,
    with scalar, per-element and batched (size-1 trailing axes) key words."""
    rng = np.random.default_rng(1)
    k = rng.integers(0, 2 ** 32, (2, 3, 1), dtype=np.uint32)
    x = rng.integers(0, 2 ** 32, (2, 3, 5), dtype=np.uint32)
    u = lambda a: knp.asarray(np.asarray(a, np.uint32))
    f = kiln.jit(lambda *a: threefry.threefry2x32(*a, rolled=rolled))
    for keys in [(k[0], k[1]), (k[0, 0, 0], k[1, 0, 0]), (np.broadcast_to(k[0], (3, 5)), k[1])]:
        y1, y2 = f(u(keys[0]), u(keys[1]), u(x[0]), u(x[1]))
        r1, r2 = np_threefry2x32(keys, (x[0], x[1]))
        np.testing.assert_array_equal(np.asarray(y1), r1)
        np.testing.assert_array_equal(np.asarray(y2), r2)
    text = kiln.jit(lambda *a: threefry.threefry2x32(*a, rolled=rolled)).lower(*(u(a) for a in (k[0], k[1], x[0],
                                                                                                  x[1]))).as_text()
    assert ("stablehlo.while" in text) == rolled


def test_large_arrays_inline_and_small_arrays_loop_agree(mode):
    # partitionable: element i of any output hashes counter i, so a prefix of a large (inline) draw
    # equals a small (loop) draw; legacy: both equal the NumPy model
    n = threefry._ROLL_BELOW
    key = np.array([0x12345678, 0x9ABCDEF0], np.uint32)
    big = np.asarray(kiln.jit(lambda k: random.bits(k, (n,)))(knp.asarray(key)))
    small = np.asarray(kiln.jit(lambda k: random.bits(k, (100,)))(knp.asarray(key)))
    np.testing.assert_array_equal(big, np_bits(key, 32, (n,), mode))
    np.testing.assert_array_equal(small, np_bits(key, 32, (100,), mode))
    if mode:
        np.testing.assert_array_equal(big[:100], small)


def _op_counts(text: str) -> dict[str, int]:
    import collections
    import re
    return collections.Counter(re.findall(r"(?:stablehlo|chlo)\.[a-z_]+", text))


def test_many_random_calls_stay_compact():
    """100 small random draws: each hash is a short loop, not 20 inline rounds (the inline form made
    XLA's compile time 2-5x JAX's for such programs, and each slice of a random array recomputed it)."""
    def f(key):
        acc = knp.zeros((256,), np.float32)
        for i in range(100):
            acc = acc + random.normal(random.fold_in(key, i), (256,))
        return acc

    counts = _op_counts(kiln.jit(f).lower(random.key(0)).as_text())
    assert counts["stablehlo.while"] == 200  # one loop per fold_in and per normal
    # 4 rotations (2 shifts each) per loop body; the inline rounds have 20 per hash (8,000 here)
    assert counts["stablehlo.shift_left"] <= 200 * 4 + 100, counts
    # about 21,000 operations (constants and broadcasts repeated per use reach XLA, whose CSE merges them, as in
    # JAX's programs); the inline rounds made ~33,000
    assert sum(counts.values()) < 25_000, sum(counts.values())


def test_slices_of_a_random_array_share_one_hash():
    def f(key):
        m = random.bernoulli(key, 0.5, (128, 128))
        return [m[i] for i in range(100)]

    counts = _op_counts(kiln.jit(f).lower(random.key(0)).as_text())
    assert counts["stablehlo.while"] == 1 and counts["stablehlo.shift_left"] <= 4 + 2, counts


def test_threefry_rejects_non_uint32():
    with pytest.raises(TypeError, match="threefry2x32: k1 must be uint32, got int32"):
        threefry.threefry2x32(knp.zeros(2, np.int32), *(knp.zeros(2, np.uint32),) * 3)


# -- NumPy models of JAX's counter layouts ---------------------------------------------------------------

def np_hash_flat(key, count):
    """Legacy layout: the flat counter, padded to even length, hashed as two halves, joined again."""
    count = np.asarray(count, np.uint32).ravel()
    n = count.size
    padded = np.concatenate([count, np.zeros(n % 2, np.uint32)])
    half = padded.size // 2
    y1, y2 = np_threefry2x32(key, (padded[:half], padded[half:]))
    return np.concatenate([y1, y2])[:n]


def np_split(key, shape, partitionable):
    n = int(np.prod(shape))
    if partitionable:
        y1, y2 = np_threefry2x32(key, (np.zeros(n, np.uint32), np.arange(n, dtype=np.uint32)))
        return np.stack([y1, y2], -1).reshape(tuple(shape) + (2,))
    return np_hash_flat(key, np.arange(2 * n, dtype=np.uint32)).reshape(tuple(shape) + (2,))


def np_fold_in(key, data):
    y1, y2 = np_threefry2x32(key, (np.zeros(1, np.uint32), np.array([data], np.uint32)))
    return np.array([y1[0], y2[0]], np.uint32)


def np_bits(key, width, shape, partitionable):
    n = int(np.prod(shape))
    dt = np.dtype(f"uint{width}")
    if partitionable:
        y1, y2 = np_threefry2x32(key, (np.zeros(n, np.uint32), np.arange(n, dtype=np.uint32)))
        if width == 64:
            return ((y1.astype(np.uint64) << np.uint64(32)) | y2.astype(np.uint64)).reshape(shape)
        return (y1 ^ y2).astype(dt).reshape(shape)  # the low bits for 8 and 16
    words = -(-width * n // 32)
    bits = np_hash_flat(key, np.arange(words, dtype=np.uint32))
    if width == 64:
        hi, lo = bits[:words // 2], bits[words // 2:]
        return ((hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)).reshape(shape)
    if width == 32:
        return bits.reshape(shape)
    return bits.view(dt)[:n].reshape(shape)  # little-endian: the low part of each word first


@pytest.fixture(params=[True, False], ids=["partitionable", "legacy"])
def mode(request):
    kiln.config.update("threefry_partitionable", request.param)
    return request.param


def test_split_fold_in_bits_match_numpy_models(mode):
    key = np.array([0x12345678, 0x9ABCDEF0], np.uint32)
    raw = knp.asarray(key)
    for shape in [(2,), (3,), (2, 3), (0,), ()]:
        np.testing.assert_array_equal(np.asarray(random.split(raw, shape)), np_split(key, shape, mode))
    for data in [0, 7, 2 ** 32 - 1]:
        np.testing.assert_array_equal(np.asarray(random.fold_in(raw, data)), np_fold_in(key, data))
    for width, shape in [(32, (5,)), (32, ()), (32, (2, 3)), (8, (7,)), (16, (3, 3)), (8, (0,))]:
        got = np.asarray(random.bits(raw, shape, np.dtype(f"uint{width}")))
        assert got.dtype == np.dtype(f"uint{width}") and got.shape == shape
        np.testing.assert_array_equal(got, np_bits(key, width, shape, mode))


def test_64_bit_random_bits_with_x64(mode):
    kiln.config.update("enable_x64", True)
    key = np.array([3, 4], np.uint32)
    got = random.bits(knp.asarray(key), (5,), np.uint64)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(np.asarray(got), np_bits(key, 64, (5,), mode))
    assert random.bits(random.key(0), (2,)).dtype == np.uint64  # the default width follows x64


def test_64_bit_random_bits_without_x64_are_32_bit():
    # as every kiln dtype without x64 (and JAX): uint64 is canonicalized to uint32
    got = random.bits(random.key(42), (3,), np.uint64)
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(np.asarray(got), [2098992034, 2919706841, 2646866425])
    with pytest.raises(TypeError, match="64-bit random bits need kiln.config.update"):
        threefry.random_bits(random.key_data(random.key(0)), 64, (2,))


def test_batched_keys_under_vmap_match_one_by_one(mode):
    keys = random.split(random.key(5), 3)
    got = kiln.vmap(lambda k: random.bits(k, (4,)))(keys)
    want = np.stack([np_bits(np.asarray(random.key_data(k)), 32, (4,), mode) for k in keys])
    np.testing.assert_array_equal(np.asarray(got), want)
    # the internal batched path (one call for a batch of keys) agrees
    data = random.key_data(keys)
    np.testing.assert_array_equal(np.asarray(kiln.jit(lambda d: threefry.random_bits(d, 32, (4,)))(data)), want)
    split2 = np.asarray(kiln.jit(lambda d: threefry.split(d, (2,)))(data))
    np.testing.assert_array_equal(split2, np.stack([np_split(np.asarray(d), (2,), mode) for d in np.asarray(data)]))


# -- JAX's values, bit for bit ------------------------------------------------------------------------

def f32(*values):
    """float32 values given exactly (the Python floats of JAX's float32 results)."""
    return np.array(values, np.float32)


def assert_bits_equal(x, want, printed=None):
    """Bit-for-bit equality with a float32 array, and (optionally) NumPy's printout of it."""
    x = np.asarray(x)
    assert x.dtype == want.dtype and x.shape == want.shape
    np.testing.assert_array_equal(x.view(np.uint32), want.view(np.uint32))
    if printed is not None:
        assert str(x) == printed


def test_known_values_partitionable():
    assert kiln.config.threefry_partitionable is True  # the default
    np.testing.assert_array_equal(np.asarray(random.key_data(random.split(random.key(0)))),
                                  [[1797259609, 2579123966], [928981903, 3453687069]])
    np.testing.assert_array_equal(np.asarray(random.key_data(random.fold_in(random.key(0), 7))),
                                  [2716826189, 292468403])
    np.testing.assert_array_equal(np.asarray(random.bits(random.key(42), (3,))),
                                  [2098992034, 2919706841, 2646866425])
    assert_bits_equal(random.uniform(random.PRNGKey(0)), f32(0.9476670026779175).reshape(()), "0.947667")
    assert_bits_equal(random.normal(random.key(1), (3,)),
                      f32(-0.15443718433380127, 0.08470727503299713, -0.135980486869812),
                      "[-0.15443718  0.08470728 -0.13598049]")
    _, sub = random.split(random.key(0))
    assert_bits_equal(random.normal(sub, (1,)), f32(-2.442455768585205), "[-2.4424558]")


def test_known_values_legacy():
    kiln.config.update("threefry_partitionable", False)
    keys = random.split(random.key(0))
    np.testing.assert_array_equal(np.asarray(random.key_data(keys)),
                                  [[4146024105, 967050713], [2718843009, 1272950319]])
    key, sub = keys
    assert_bits_equal(random.normal(sub, (1,)), f32(-1.251538872718811), "[-1.2515389]")
    assert_bits_equal(random.uniform(random.PRNGKey(0)), f32(0.41845703125).reshape(()), "0.41845703")
    # fold_in is the same in both modes
    np.testing.assert_array_equal(np.asarray(random.key_data(random.fold_in(random.key(0), 7))),
                                  [2716826189, 292468403])
    # the seed document's walk: reusing a key repeats, splitting again gives new numbers
    root = random.key(0)
    assert_bits_equal(random.normal(root, (1,)), f32(-0.2058422565460205), "[-0.20584226]")
    key, sub = random.split(key)
    np.testing.assert_array_equal(np.asarray(random.key_data(key)), [2384771982, 3928867769])
    np.testing.assert_array_equal(np.asarray(random.key_data(sub)), [1278412471, 2182328957])
    assert_bits_equal(random.normal(sub, (1,)), f32(-0.586650550365448), "[-0.58665055]")
    key, *subs = random.split(key, 4)
    assert_bits_equal(np.concatenate([np.asarray(random.normal(s, (1,))) for s in subs]),
                      f32(-0.37533438205718994, 0.9864504337310791, 0.14553196728229523))


def test_mode_is_read_at_trace_time():
    f = kiln.jit(lambda k: random.key_data(random.split(k)))
    k = random.key(0)
    a = np.asarray(f(k))
    kiln.config.update("threefry_partitionable", False)
    b = np.asarray(f(k))
    kiln.config.update("threefry_partitionable", True)
    np.testing.assert_array_equal(a, [[1797259609, 2579123966], [928981903, 3453687069]])
    np.testing.assert_array_equal(b, [[4146024105, 967050713], [2718843009, 1272950319]])
    np.testing.assert_array_equal(np.asarray(f(k)), a)


def test_hash_is_built_from_kiln_primitives():
    text = kiln.jit(lambda k: random.bits(k, (8,))).lower(random.key(0)).as_text()
    assert "rng_bit_generator" not in text
    assert "stablehlo.xor" in text and "stablehlo.shift_left" in text and "stablehlo.shift_right_logical" in text
