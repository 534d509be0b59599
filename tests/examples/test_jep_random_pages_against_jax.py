"""JAX's design documents docs/jep/9263-typed-keys.md and docs/jep/28845-stateful-rng.md under kiln and under JAX
give the same results (the against_jax session).

The kiln side is tests/examples/jax_ported/jep_typed_keys.py and jep_stateful_rng.py; the JAX side is the same
source with JAX's imports put back. The oracles are in test_jep_random_pages.py; this checks that the two libraries
agree block by block: keys (their dtypes, key<fry> / key<rbg>, shapes and data) and draws bit for bit, dtypes,
weak types and shapes, the reprs the pages show, the printed text, and the exception classes where a page shows an
error (kiln's may be a subclass; kiln's must be an instance of every builtin exception JAX's derives from).

Differences, tested as such:
- the messages: kiln's say how to fix the error (split, fold_in, key_data; pass the ref mapped, split the
  generator), JAX's do not always (`add does not accept dtypes key<fry>, int32.`); JAX raises a bare Exception for
  a write to an unmapped ref under vmap, kiln a RefError (a ValueError).
- 28845-stateful-rng.md's Limitations: JAX 0.10.2 cannot differentiate through a generator's draw (its addupdate
  under grad raises a TypeError); kiln can, with the draw the generator would make next.
"""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("jax.experimental.random")  # (the stateful page's jax.experimental.random.stateful_rng)
from ported import load  # noqa: E402
from same_as_jax import assert_same, assert_same_exception, quiet  # noqa: E402

import kiln  # noqa: E402
import kiln.experimental.random  # noqa: E402,F401


def _load_both(name):
    return load(name), load(name, "jax")


def _assert_same(kiln_tree, jax_tree):
    """The same results bit for bit (tests/examples/same_as_jax.py), or exceptions of the same class."""
    if isinstance(jax_tree, BaseException):
        assert isinstance(kiln_tree, BaseException), kiln_tree
        assert_same_exception(kiln_tree, jax_tree)
        return
    assert_same(kiln_tree, jax_tree, 0.0, 0.0, allow_empty=True)


# ==================== 9263-typed-keys.md ============================================================================

@pytest.fixture(scope="module")
def typed_keys():
    k, j = _load_both("jep_typed_keys")
    (kout, ktext), (jout, jtext) = quiet(k.run), quiet(j.run)
    assert ktext == jtext == ""
    return kout, jout


TYPED_BLOCKS = ["prngkey", "key", "key_arr", "split_and_draw", "key_arithmetic", "key_data", "detecting",
                "ensure_typed", "impls", "indexing_incorrect", "indexing_correct", "arithmetic_incorrect",
                "arithmetic_correct", "transposing_incorrect", "transposing_correct", "reuse_incorrect",
                "reuse_correct", "prng_key_is_extended", "key_dtype"]


@pytest.mark.parametrize("block", TYPED_BLOCKS)
def test_typed_keys_block(typed_keys, block):
    kout, jout = typed_keys
    _assert_same(kout[block], jout[block])


def test_typed_keys_reprs(typed_keys):
    # the reprs the page's doctests show: keys (key<fry>, key<rbg>), raw keys, dtypes, the draws
    kout, jout = typed_keys
    for block in ("prngkey", "key", "key_arr", "key_data", "impls"):
        kl, jl = kiln.tree_util.tree_leaves(kout[block]), jax.tree_util.tree_leaves(jout[block])
        assert [repr(x) for x in kl] == [repr(y) for y in jl], block
    assert repr(kout["key"][2]) == repr(jout["key"][2]) == "key<fry>"
    assert repr(kout["prngkey"][2]) == repr(jout["prngkey"][2]) == "dtype('uint32')"


def test_typed_keys_ensure_typed_key_array_raises_alike():
    k, j = _load_both("jep_typed_keys")
    errors = []
    for nb, lib in ((k, kiln), (j, jax)):
        with pytest.raises(TypeError) as e:
            nb.ensure_typed_key_array(lib.random.PRNGKey(0))
        errors.append(str(e.value))
    assert errors[0] == errors[1] == "New-style typed JAX PRNG keys required"


def _both(fn):
    """fn(lib) for kiln and JAX: its value, or the exception it raised."""
    out = []
    for lib in (kiln, jax):
        try:
            out.append(fn(lib))
        except Exception as e:  # noqa: BLE001  (compared below)
            out.append(e)
    return out


@pytest.mark.parametrize("name,fn", [
    ("typed key indexing", lambda lib: lib.random.key(999)[1]),
    ("typed key arithmetic", lambda lib: lib.random.key(0) + lib.numpy.arange(10, dtype=lib.numpy.uint32)[:, None]),
    ("typed keys, in_axes=1", lambda lib: lib.vmap(lib.random.uniform, in_axes=1)(lib.random.split(lib.random.key(0)))),
    ("jnp on keys", lambda lib: lib.numpy.add(lib.random.key(0), 1)),
    ("dt.type()", lambda lib: lib.random.key(0).dtype.type()),
])
def test_typed_keys_prose_errors(name, fn):
    k, j = _both(fn)
    assert isinstance(j, Exception), (name, j)
    assert_same_exception(k, j)


@pytest.mark.parametrize("name,fn", [
    ("lax.full", lambda lib: lib.lax.full((2, 3), lib.random.key(4), lib.random.key(4).dtype)),
    ("lax.full of ints", lambda lib: lib.lax.full((2,), 3, lib.random.key(0, impl="rbg").dtype)),
    ("jit", lambda lib: lib.jit(lambda k: (lib.random.split(k, 3), lib.random.uniform(k, (3,))))(lib.random.key(0))),
    ("scan", lambda lib: lib.lax.scan(lambda c, _: tuple(lib.random.split(c)), lib.random.key(0), None, length=3)),
    ("wrap_key_data", lambda lib: lib.random.wrap_key_data(lib.random.key_data(lib.random.split(lib.random.key(1))))),
    ("key_data of a raw key", lambda lib: lib.random.key_data(lib.random.PRNGKey(12))),
    ("transpose", lambda lib: lib.random.split(lib.random.key(0), (2, 3)).T),
    ("issubdtype", lambda lib: (lib.numpy.issubdtype(lib.random.key(0).dtype, lib.dtypes.prng_key),
                                lib.dtypes.issubdtype(lib.random.key(0).dtype, lib.dtypes.extended),
                                issubclass(lib.random.key(0).dtype.type, np.generic))),
])
def test_typed_keys_prose_values(name, fn):
    k, j = _both(fn)
    assert not isinstance(j, Exception), (name, j)
    _assert_same(k, j)


# ==================== 28845-stateful-rng.md =========================================================================

@pytest.fixture(scope="module")
def stateful():
    k, j = _load_both("jep_stateful_rng")
    (kout, ktext), (jout, jtext) = quiet(k.run), quiet(j.run)
    return k, j, kout, jout, ktext, jtext


def test_stateful_printed_text(stateful):
    *_, ktext, jtext = stateful
    assert ktext == jtext == "[0.07174575 1.0163325  2.0435536  3.4391735  4.534091  ]\n"


@pytest.mark.parametrize("block", ["experimental", "numpy", "split_under_vmap", "draw_from_split"])
def test_stateful_block(stateful, block):
    _, _, kout, jout, _, _ = stateful
    _assert_same(kout[block], jout[block])


def test_stateful_reprs(stateful):
    _, _, kout, jout, _, _ = stateful
    assert [repr(x) for x in kout["experimental"]] == [repr(y) for y in jout["experimental"]]
    # the generator: StatefulPRNG(_base_key=Array((), dtype=key<fry>) overlaying: ..., _counter=Ref(2, ...))
    assert repr(kout["rng_after_split"]) == repr(jout["rng_after_split"])


def test_stateful_unmapped_generator_under_vmap(stateful):
    _, _, kout, jout, _, _ = stateful
    (k_rng, k_err), (j_rng, j_err) = kout["unmapped_rng_under_vmap"], jout["unmapped_rng_under_vmap"]
    assert type(j_err) is Exception and "unbatched array reference" in str(j_err)  # the page's error
    assert_same_exception(k_err, j_err)  # (kiln's RefError is a ValueError too, and says how to fix it)
    assert repr(k_rng) == repr(j_rng)  # neither moved the generator's state on


def test_stateful_sketch(stateful):
    k, j, *_ = stateful
    kr, jr = k.sketch_stateful_rng(1701), j.sketch_stateful_rng(1701)
    _assert_same([kr.random((5,)), kr.random((5,)), kr.counter[...]],
                 [jr.random((5,)), jr.random((5,)), jr.counter[...]])
    _assert_same(kiln.jit(lambda r: r.random((2,)))(kr), jax.jit(lambda r: r.random((2,)))(jr))
    _assert_same(kr.counter[...], jr.counter[...])


def test_stateful_under_jit_and_returning_a_generator():
    kr, jr = kiln.experimental.random.stateful_rng(7), jax.experimental.random.stateful_rng(7)
    kd, jd = kiln.jit(lambda: kr.random((3,))), jax.jit(lambda: jr.random((3,)))
    _assert_same([kd(), kd(), kr.key()], [jd(), jd(), jr.key()])
    k, j = _both(lambda lib: lib.jit(lambda x: (x, lib.experimental.random.stateful_rng(0)))(1.0))
    assert isinstance(j, ValueError)
    assert_same_exception(k, j)


def test_stateful_differentiating_a_draw():
    # A difference: JAX 0.10.2 raises a TypeError (its addupdate under grad); kiln gives the generator's next draw,
    # the value JAX draws without grad.
    kr, jr = kiln.experimental.random.stateful_rng(3), jax.experimental.random.stateful_rng(3)
    with pytest.raises(TypeError, match="addupdate"):
        jax.grad(lambda x: x * jr.uniform())(1.0)
    g = kiln.grad(lambda x: x * kr.uniform())(1.0)
    assert float(g) == float(jax.experimental.random.stateful_rng(3).uniform())
