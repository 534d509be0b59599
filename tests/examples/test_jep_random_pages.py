"""JAX's design documents docs/jep/9263-typed-keys.md (typed PRNG keys) and docs/jep/28845-stateful-rng.md (a
stateful generator over refs), ported to kiln by changing imports (tests/examples/jax_ported/jep_typed_keys.py and
jep_stateful_rng.py), checked against oracles that do not involve JAX or kiln's own results.

Oracles: a NumPy Threefry-2x32 (tests/examples/threefry_oracle.py, with fold_in built here from its hash) for
every threefry key and draw, bit for bit; NumPy for the raw keys' arithmetic and the page's NumPy generator; the
page's printed outputs (the reprs of its doctests, the draws it prints) where it shows them, the only oracle of
the rbg draws (XLA's RngBitGenerator, which has no NumPy model here). Where a block raises on the page, the test
checks the exception's class and that the message says what went wrong and how to fix it. Claims of the prose
next to the blocks (typed keys refuse indexing, arithmetic and mapping over their data; dt.type; lax.full; key
arrays through jit and scan; the stateful generator under jit; refs cannot be returned) are checked too.
The whole file runs each page once.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import threefry_oracle
from ported import load

import kiln
import kiln.numpy as jnp
from kiln.experimental.random import stateful_rng


def _run(fn, *args):
    """(what fn returns, the lines it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = fn(*args)
    return res, buf.getvalue().splitlines()


def _kd(key):
    return np.asarray(kiln.random.key_data(key))


def _seed(seed: int) -> np.ndarray:
    """The threefry key of a 32-bit seed: its high and low words."""
    return np.array([0, seed], np.uint32)


def _fold_in(key, data: int) -> np.ndarray:
    """fold_in: the key hashed with the counter (0, data), as split's key ``data`` is."""
    a, b = threefry_oracle.threefry2x32(key, np.zeros(1, np.uint32), np.array([data], np.uint32))
    return np.array([a[0], b[0]], np.uint32)


def _bits_equal(x, want):
    x = np.asarray(x)
    assert x.dtype == np.asarray(want).dtype and x.shape == np.shape(want), (x.dtype, x.shape)
    np.testing.assert_array_equal(x, want)


def _says(err: BaseException, *parts: str) -> None:
    for part in parts:
        assert part in str(err), (part, str(err))


def test_fold_in_oracle_is_splits_counter_hash():
    # the oracle's fold_in against the page-independent identity fold_in(k, i) == split(k, n)[i] (both hash (0, i))
    np.testing.assert_array_equal(np.stack([_fold_in(_seed(5), i) for i in range(3)]),
                                  threefry_oracle.split(_seed(5), 3))


# ==================== 9263-typed-keys.md ============================================================================

@pytest.fixture(scope="module")
def tk():
    return load("jep_typed_keys").run()


def test_prngkey_is_a_raw_uint32_buffer(tk):
    key, shape, dtype = tk["prngkey"]
    _bits_equal(key, _seed(0))
    assert isinstance(key, kiln.Array) and not isinstance(key, kiln.random.KeyArray)
    assert repr(key) == "Array([0, 0], dtype=uint32)" and shape == (2,) and repr(dtype) == "dtype('uint32')"


def test_key_is_a_scalar_typed_key(tk):
    key, shape, dtype = tk["key"]
    assert repr(key) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"  # the page's doctest output
    assert shape == () and repr(dtype) == "key<fry>" and isinstance(key, kiln.Array)
    _bits_equal(_kd(key), _seed(0))


def test_vmap_of_key_makes_a_key_array(tk):
    key_arr, shape = tk["key_arr"]
    assert repr(key_arr) == ("Array((4,), dtype=key<fry>) overlaying:\n"
                             "[[0 0]\n [0 1]\n [0 2]\n [0 3]]")
    assert shape == (4,) and key_arr.dtype == tk["key"][2]
    _bits_equal(_kd(key_arr), np.stack([_seed(i) for i in range(4)]))


def test_split_and_draw_from_a_typed_key(tk):
    new_key, subkey, data = tk["split_and_draw"]
    keys = threefry_oracle.split(_seed(0))
    _bits_equal(_kd(new_key), keys[0])
    _bits_equal(_kd(subkey), keys[1])
    assert data.shape == (5,) and data.dtype == np.float32 and not data.weak_type
    _bits_equal(data, threefry_oracle.uniform(_seed(0), 5))


def test_key_arithmetic_raises(tk):
    err = tk["key_arithmetic"]
    assert isinstance(err, TypeError)  # the page: "TypeError: add does not accept dtypes key<fry>, int32."
    # kiln's says more than JAX's: what (no arithmetic on key<fry>) and how (split, fold_in, key_data)
    _says(err, "+", "key<fry>", "no arithmetic", "kiln.random.split", "kiln.random.fold_in", "kiln.random.key_data")
    key = tk["key"][0]
    for op in (lambda: key * 2, lambda: -key, lambda: jnp.add(key, 1), lambda: jnp.sum(kiln.random.split(key))):
        with pytest.raises(TypeError) as e:
            op()
        _says(e.value, "key<fry>", "kiln.random.split", "kiln.random.key_data")


def test_key_data_recovers_the_buffer(tk):
    data = tk["key_data"]
    assert repr(data) == "Array([0, 0], dtype=uint32)"
    _bits_equal(data, _seed(0))
    # "For old-style keys, key_data is an identity operation"; wrap_key_data is key_data's inverse
    raw = kiln.random.PRNGKey(12)
    _bits_equal(kiln.random.key_data(raw), _seed(12))
    keys = kiln.random.split(kiln.random.key(3), (2, 3))
    back = kiln.random.wrap_key_data(kiln.random.key_data(keys))
    assert back.shape == (2, 3) and back.dtype == keys.dtype
    _bits_equal(_kd(back), threefry_oracle.split(_seed(3), 6).reshape(2, 3, 2))


def test_detecting_typed_keys(tk):
    assert tk["detecting"] == (True, False)
    # "you can use jax.dtypes.issubdtype or jax.numpy.issubdtype"
    assert jnp.issubdtype(kiln.random.key(0).dtype, kiln.dtypes.prng_key) is True
    assert jnp.issubdtype(kiln.random.PRNGKey(0).dtype, kiln.dtypes.prng_key) is False


def test_ensure_typed_key_array():
    nb = load("jep_typed_keys")
    key = kiln.random.key(1)
    assert nb.ensure_typed_key_array(key) is key
    with pytest.raises(TypeError, match="New-style typed JAX PRNG keys required"):
        nb.ensure_typed_key_array(kiln.random.PRNGKey(1))


def test_impls(tk):
    (fry_key, fry_draw), (rbg_key, rbg_draw) = tk["impls"]
    assert repr(fry_key) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
    assert repr(fry_draw) == "Array([0.947667  , 0.9785799 , 0.33229148], dtype=float32)"  # the page's output
    _bits_equal(fry_draw, threefry_oracle.uniform(_seed(0), 3))
    assert repr(rbg_key) == "Array((), dtype=key<rbg>) overlaying:\n[0 0 0 0]"
    _bits_equal(_kd(rbg_key), np.tile(_seed(0), 2))  # the seed's two words twice
    assert repr(rbg_draw) == "Array([0.39904642, 0.8805201 , 0.73571277], dtype=float32)"  # the page's output
    assert rbg_key.dtype != fry_key.dtype and kiln.random.key_impl(rbg_key) == "rbg"
    assert kiln.random.key_impl(fry_key) == "threefry2x32"


def test_key_buffer_indexing(tk):
    key, new_key = tk["indexing_incorrect"]
    _bits_equal(key, _seed(999))
    _bits_equal(new_key, _seed(999))  # "identical to the original key!"
    key, new_key = tk["indexing_correct"]
    keys = threefry_oracle.split(_seed(999))
    _bits_equal(key, keys[0])
    _bits_equal(new_key, keys[1])
    # "If this key were a new-style typed key made with random.key(999), indexing ... would error instead"
    with pytest.raises(IndexError) as e:
        kiln.random.key(999)[1]
    _says(e.value, "too many indices for a key array", "shape ()")


def test_key_arithmetic(tk):
    batched = tk["arithmetic_incorrect"]
    _bits_equal(batched, _seed(0) + np.arange(10, dtype=np.uint32)[:, None])
    _bits_equal(tk["arithmetic_correct"], threefry_oracle.split(_seed(0), 10))
    # "New-style typed keys created with random.key(0) address this by disallowing arithmetic operations on keys"
    with pytest.raises(TypeError) as e:
        kiln.random.key(0) + jnp.arange(10, dtype=jnp.uint32)[:, None]
    _says(e.value, "no arithmetic", "kiln.random.split")


def test_inadvertent_transposing(tk):
    keys = threefry_oracle.split(_seed(0))
    raw, data = tk["transposing_incorrect"]
    _bits_equal(raw, keys)
    # in_axes=1: key j takes word j of each key of the batch
    _bits_equal(data, np.array([threefry_oracle.uniform(keys[:, j], 1)[0] for j in range(2)]))
    raw, data = tk["transposing_correct"]
    _bits_equal(raw, keys)
    _bits_equal(data, np.array([threefry_oracle.uniform(k, 1)[0] for k in keys]))
    assert not np.array_equal(np.asarray(tk["transposing_incorrect"][1]), np.asarray(data))
    # "Key arrays have no trailing buffer dimension to index, transpose, or map over"
    typed = kiln.random.split(kiln.random.key(0))
    with pytest.raises(ValueError) as e:
        kiln.vmap(kiln.random.uniform, in_axes=1)(typed)
    _says(e.value, "in_axes=1 is out of range", "shape (2,)", "key data is not one of its axes",
          "kiln.random.key_data")
    assert typed.T.shape == (2,)
    _bits_equal(_kd(typed.T), keys)


def test_key_reuse(tk):
    x, y = tk["reuse_incorrect"]
    want = threefry_oracle.uniform(_seed(0), 100)
    _bits_equal(x, want)
    _bits_equal(y, want)  # "Identical values!"
    key1, key2, x, y = tk["reuse_correct"]
    keys = threefry_oracle.split(_seed(0))
    _bits_equal(_kd(key1), keys[0])
    _bits_equal(_kd(key2), keys[1])
    _bits_equal(x, threefry_oracle.uniform(keys[0], 100))
    _bits_equal(y, threefry_oracle.uniform(keys[1], 100))
    assert np.mean(np.asarray(x) == np.asarray(y)) < 0.05


def test_prng_dtypes_are_extended(tk):
    assert tk["prng_key_is_extended"] is True
    assert tk["key_dtype"] == (True, True)
    # dt.type is a scalar type under numpy.generic, with no instances (scalars are 0-d arrays)
    dt = kiln.random.key(0).dtype
    assert issubclass(dt.type, np.generic)
    with pytest.raises(TypeError) as e:
        dt.type()
    _says(e.value, "cannot create 'prng_key' instances", "0-d key array", "kiln.random.key(seed)")
    assert not kiln.dtypes.issubdtype(np.uint32, kiln.dtypes.extended)


def test_lax_full_delegates_to_the_key_dtype():
    # "jax.lax.full(shape, fill_value, dtype) will delegate to dtype._rules.full ... when dtype is extended"
    key = kiln.random.key(4)
    full = kiln.lax.full((2, 3), key, key.dtype)
    assert isinstance(full, kiln.random.KeyArray) and full.shape == (2, 3) and full.dtype == key.dtype
    _bits_equal(_kd(full), np.broadcast_to(_seed(4), (2, 3, 2)))


def test_key_arrays_through_jit_and_scan():
    # "This (scalar-shaped) array behaves the same as any other JAX array"
    key = kiln.random.key(0)
    _bits_equal(kiln.jit(lambda k: kiln.random.uniform(k, (3,)))(key), threefry_oracle.uniform(_seed(0), 3))
    split = kiln.jit(lambda k: kiln.random.split(k, 4))(key)
    assert split.dtype == key.dtype and split.shape == (4,)
    _bits_equal(_kd(split), threefry_oracle.split(_seed(0), 4))

    def step(k, _):
        k, sub = kiln.random.split(k)
        return k, sub
    last, subs = kiln.lax.scan(step, key, None, length=3)
    assert subs.dtype == key.dtype and subs.shape == (3,)
    k, want = _seed(0), []
    for _ in range(3):
        k, sub = threefry_oracle.split(k)
        want.append(sub)
    _bits_equal(_kd(last), k)
    _bits_equal(_kd(subs), np.stack(want))


# ==================== 28845-stateful-rng.md =========================================================================

@pytest.fixture(scope="module")
def sr():
    nb = load("jep_stateful_rng")
    out, lines = _run(nb.run)
    return nb, out, lines


def _stateful_draws(seed: int, n: int, size: int) -> list[np.ndarray]:
    """The first ``n`` draws of ``size`` uniforms of a generator seeded ``seed``: draw i from fold_in(key, i)."""
    return [threefry_oracle.uniform(_fold_in(_seed(seed), i), size) for i in range(n)]


# The page's printed draws of stateful_rng(1701).random((5,)), twice, and of np.random.default_rng(1701)
PAGE_1701 = ([0.09609699, 0.26730824, 0.5619041, 0.24421775, 0.7715055],
             [0.8131045, 0.33873856, 0.88808906, 0.96005905, 0.7616446])
PAGE_NUMPY_1701 = ([0.4020733, 0.30563311, 0.67668051, 0.15821208, 0.79247763],
                   [0.09419469, 0.36753944, 0.06388928, 0.96431608, 0.35200998])


def test_the_sketch_of_the_generator(sr):
    nb, _, _ = sr
    rng = nb.sketch_stateful_rng(1701)
    first, second = rng.random((5,)), rng.random((5,))
    want = _stateful_draws(1701, 2, 5)
    _bits_equal(first, want[0])
    _bits_equal(second, want[1])
    assert int(rng.counter[...]) == 2
    # a pytree (register_dataclass): its leaves are the key and the counter ref
    leaves = kiln.tree_util.tree_leaves(rng)
    assert len(leaves) == 2 and leaves[0] is rng.base_key and leaves[1] is rng.counter
    # the state moves on inside jit too
    third = kiln.jit(lambda r: r.random((2,)))(rng)
    _bits_equal(third, threefry_oracle.uniform(_fold_in(_seed(1701), 2), 2))
    assert int(rng.counter[...]) == 3


def test_the_experimental_generator(sr):
    _, out, _ = sr
    first, second = out["experimental"]
    want = _stateful_draws(1701, 2, 5)
    _bits_equal(first, want[0])
    _bits_equal(second, want[1])
    np.testing.assert_allclose(np.asarray(first), PAGE_1701[0], rtol=1e-7)
    np.testing.assert_allclose(np.asarray(second), PAGE_1701[1], rtol=1e-7)


def test_numpy_cell(sr):
    _, out, _ = sr
    rng = np.random.default_rng(1701)
    first, second = out["numpy"]
    np.testing.assert_array_equal(first, rng.random(5))
    np.testing.assert_array_equal(second, rng.random(5))
    np.testing.assert_allclose(first, PAGE_NUMPY_1701[0], rtol=1e-7)
    np.testing.assert_allclose(second, PAGE_NUMPY_1701[1], rtol=1e-7)


def test_an_unmapped_generator_under_vmap_raises(sr):
    _, out, _ = sr
    rng, err = out["unmapped_rng_under_vmap"]
    # the page: "Exception: performing an addupdate operation with vmapped value on an unbatched array reference
    # ... Move the array reference to be an argument to the vmapped function?"
    assert isinstance(err, Exception) and not isinstance(err, (TypeError, AssertionError))
    _says(err, "kiln.vmap(f)", "writes to a Ref that is not mapped", "Pass the ref as an argument mapped",
          "rng.split(n)")
    assert int(rng._counter[...]) == 0  # the failed call moved no state on


def test_a_split_generator_under_vmap(sr):
    _, out, lines = sr
    result = out["split_under_vmap"]
    children = threefry_oracle.split(_fold_in(_seed(0), 0), 5)  # split draws the generator's first key
    u = np.array([threefry_oracle.uniform(_fold_in(k, 0), 1)[0] for k in children])
    assert result.dtype == np.float32 and result.shape == (5,)
    _bits_equal(result, np.arange(5, dtype=np.float32) + u)
    assert lines == ["[0.07174575 1.0163325  2.0435536  3.4391735  4.534091  ]"]  # the page's comment


def test_drawing_from_a_split_generator_raises(sr):
    _, out, _ = sr
    err = out["draw_from_split"]
    assert isinstance(err, ValueError)  # "we follow the precedent of jax.random ... and raise an informative error"
    _says(err, "this generator was split (rng.split(n))", "draw from it inside kiln.vmap")
    assert int(out["rng_after_split"]._counter[...]) == 2  # split(5), then split(10), each took one key


def test_the_state_updates_under_jit_and_refs_cannot_be_returned():
    # "the random state will correctly update even if the generator is used in transformations like jax.jit"
    rng = stateful_rng(7)
    draw = kiln.jit(lambda: rng.random((3,)))
    want = _stateful_draws(7, 2, 3)
    _bits_equal(draw(), want[0])
    _bits_equal(draw(), want[1])
    # "attempting to return a StatefulPRNG from a transformed function would lead to an explicit error"
    with pytest.raises(ValueError) as e:
        kiln.jit(lambda x: (x, stateful_rng(0)))(1.0)
    _says(e.value, "returned a mutable array reference (a Ref)", "refs cannot be returned", "return its value")


def test_remat_of_a_generator():
    # The page: refs are incompatible with remat in JAX ("an explicit error"; JAX 0.10.2 raises a TypeError from
    # its addupdate under grad of checkpoint). kiln's checkpoint carries the ref's writes out, so the draw works,
    # once per call: the derivative of x * u is u, the generator's next draw.
    rng = stateful_rng(3)
    g = kiln.grad(kiln.checkpoint(lambda x: x * rng.uniform()))(1.0)
    want = _stateful_draws(3, 1, 1)[0][0]
    assert float(g) == float(want)
    assert int(rng._counter[...]) == 1
