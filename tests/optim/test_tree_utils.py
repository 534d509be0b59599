"""kiln.optim.tree_utils / kiln.optim.tree (optax.tree_utils' names) against NumPy, without JAX."""
from typing import NamedTuple

import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
import kiln.random as krandom
from kiln import optim
from kiln.optim import tree
from kiln.optim import tree_utils as tu

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 2)).astype(np.float32)
B = RNG.standard_normal(4).astype(np.float32)
C = RNG.standard_normal((3, 2)).astype(np.float32)
D = RNG.standard_normal(4).astype(np.float32)
Z = (RNG.standard_normal(3) + 1j * RNG.standard_normal(3)).astype(np.complex64)


def _tx():
    return {"a": jnp.asarray(A), "b": (jnp.asarray(B),)}


def _ty():
    return {"a": jnp.asarray(C), "b": (jnp.asarray(D),)}


def _flat(t):
    return np.concatenate([np.ravel(np.asarray(x)) for x in kiln.tree_util.tree_leaves(t)])


def _check_tree(got, want_a, want_b, **kw):
    np.testing.assert_allclose(np.asarray(got["a"]), want_a, **kw)
    np.testing.assert_allclose(np.asarray(got["b"][0]), want_b, **kw)


# ----------------------------------------------------------------------------------------------
# Leafwise arithmetic
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, fn, op", [
    ("tree_sub", tu.tree_sub, np.subtract), ("tree_mul", tu.tree_mul, np.multiply),
    ("tree_div", tu.tree_div, np.divide), ("tree_add", tu.tree_add, np.add),
])
def test_binary_ops(name, fn, op):
    _check_tree(fn(_tx(), _ty()), op(A, C), op(B, D), rtol=1e-6)


def test_tree_add_three_trees_and_none_leaves():
    _check_tree(tu.tree_add(_tx(), _ty(), _tx()), A + C + A, B + D + B, rtol=1e-6)
    out = tu.tree_add({"a": jnp.asarray(A), "n": None}, {"a": jnp.asarray(C), "n": None})
    assert out["n"] is None


def test_scale_and_add_scale():
    _check_tree(tu.tree_scale(2.5, _tx()), 2.5 * A, 2.5 * B, rtol=1e-6)
    _check_tree(tu.tree_add_scale(_tx(), -0.5, _ty()), A - 0.5 * C, B - 0.5 * D, rtol=1e-6)
    # a None leaf of the first tree stays None (optax's rule for partial updates)
    out = tu.tree_add_scale({"a": None, "b": jnp.ones(2)}, 2.0, {"a": None, "b": jnp.ones(2)})
    assert out["a"] is None
    np.testing.assert_array_equal(np.asarray(out["b"]), [3.0, 3.0])


def test_vdot_sum_norms():
    x, y = _flat(_tx()).astype(np.float64), _flat(_ty()).astype(np.float64)
    np.testing.assert_allclose(float(tu.tree_vdot(_tx(), _ty())), x @ y, rtol=1e-5)
    np.testing.assert_allclose(float(tu.tree_sum(_tx())), x.sum(), rtol=1e-5)
    np.testing.assert_allclose(float(tu.tree_sum(_tx(), associative_reduction=True)), x.sum(), rtol=1e-5)
    np.testing.assert_allclose(float(tu.tree_norm(_tx())), np.linalg.norm(x), rtol=1e-6)
    np.testing.assert_allclose(float(tu.tree_norm(_tx(), squared=True)), x @ x, rtol=1e-6)
    np.testing.assert_allclose(float(tu.tree_norm(_tx(), ord=1)), np.abs(x).sum(), rtol=1e-6)
    np.testing.assert_allclose(float(tu.tree_norm(_tx(), ord=1, squared=True)), np.abs(x).sum() ** 2, rtol=1e-6)
    for inf in (np.inf, "inf", "infinity"):
        assert float(tu.tree_norm(_tx(), ord=inf)) == np.abs(x).max()
    np.testing.assert_allclose(float(tu.tree_l2_norm(_tx())), np.linalg.norm(x), rtol=1e-6)
    np.testing.assert_allclose(float(tu.tree_l1_norm(_tx())), np.abs(x).sum(), rtol=1e-6)
    assert float(tu.tree_linf_norm(_tx())) == np.abs(x).max()


def test_complex_vdot_and_norm():
    z = {"z": jnp.asarray(Z), "r": jnp.asarray(B)}
    w = {"z": jnp.asarray(Z[::-1].copy()), "r": jnp.asarray(D)}
    want = np.vdot(Z.astype(np.complex128), Z[::-1]) + B.astype(np.float64) @ D
    np.testing.assert_allclose(complex(tu.tree_vdot(z, w)), want, rtol=1e-5)
    want_norm = np.sqrt(np.sum(np.abs(Z.astype(np.complex128)) ** 2) + np.sum(B.astype(np.float64) ** 2))
    got = tu.tree_norm(z)
    assert got.dtype == np.float32
    np.testing.assert_allclose(float(got), want_norm, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(tu.tree_conj(z)["z"]), np.conj(Z))
    np.testing.assert_array_equal(np.asarray(tu.tree_real(z)["z"]), Z.real)


def test_empty_trees():
    assert float(tu.tree_sum({})) == 0.0
    assert float(tu.tree_vdot({}, {})) == 0.0
    assert float(tu.tree_max({})) == -np.inf and float(tu.tree_min([])) == np.inf
    assert tu.tree_size({}) == 0
    # empty leaves are skipped by max / min
    t = {"e": jnp.zeros((0,)), "x": jnp.asarray(B)}
    assert float(tu.tree_max(t)) == B.max() and float(tu.tree_min(t)) == B.min()


def test_max_min_size_batch_shape():
    x = _flat(_tx())
    assert float(tu.tree_max(_tx())) == x.max() and float(tu.tree_min(_tx())) == x.min()
    assert tu.tree_size(_tx()) == 10
    out = tu.tree_batch_shape(_tx(), (5, 2))
    assert out["a"].shape == (5, 2, 3, 2) and out["b"][0].shape == (5, 2, 4)
    np.testing.assert_array_equal(np.asarray(out["a"][4, 1]), A)


def test_like_constructors():
    t = {"a": jnp.asarray(A), "i": jnp.arange(3)}
    z, o, f = tu.tree_zeros_like(t), tu.tree_ones_like(t, dtype=jnp.float16), tu.tree_full_like(t, 7)
    assert z["a"].dtype == np.float32 and z["i"].dtype == np.int32 and float(jnp.sum(z["a"])) == 0
    assert o["a"].dtype == np.float16 and o["i"].dtype == np.float16 and o["i"].shape == (3,)
    np.testing.assert_array_equal(np.asarray(f["i"]), [7, 7, 7])
    assert tu.tree_full_like(t, 2.5, dtype=jnp.float32)["i"].dtype == np.float32


def test_clip_where_allclose():
    _check_tree(tu.tree_clip(_tx(), -0.2, 0.3), np.clip(A, -0.2, 0.3), np.clip(B, -0.2, 0.3))
    _check_tree(tu.tree_clip(_tx(), max_value=0.1), np.minimum(A, 0.1), np.minimum(B, 0.1))
    _check_tree(tu.tree_where(True, _tx(), _ty()), A, B)
    _check_tree(tu.tree_where(jnp.asarray(False), _tx(), _ty()), C, D)
    assert bool(tu.tree_allclose(_tx(), tu.tree_add_scale(_tx(), 1e-9, _ty())))
    assert not bool(tu.tree_allclose(_tx(), _ty()))
    nan = {"x": jnp.asarray([np.nan, 1.0])}
    assert not bool(tu.tree_allclose(nan, nan)) and bool(tu.tree_allclose(nan, nan, equal_nan=True))


def test_moment_updates():
    m, v = _ty(), _tx()
    _check_tree(tu.tree_update_moment(_tx(), m, 0.9, 2), 0.1 * A ** 2 + 0.9 * C, 0.1 * B ** 2 + 0.9 * D, rtol=1e-6)
    _check_tree(tu.tree_update_infinity_moment(_tx(), v, 0.9, 1e-3),
                np.maximum(np.abs(A) + 1e-3, 0.9 * A), np.maximum(np.abs(B) + 1e-3, 0.9 * B), rtol=1e-6)
    _check_tree(tu.tree_update_moment_per_elem_norm(_tx(), m, 0.9, 2), 0.1 * A ** 2 + 0.9 * C,
                0.1 * B ** 2 + 0.9 * D, rtol=1e-6)
    # complex leaves: the EMA of |g|**order, real
    got = tu.tree_update_moment_per_elem_norm(jnp.asarray(Z), jnp.zeros(3), 0.5, 3)
    np.testing.assert_allclose(np.asarray(got), 0.5 * np.abs(Z) ** 3, rtol=1e-5)
    # None leaves (masked parameters) stay None
    assert tu.tree_update_moment({"n": None}, {"n": None}, 0.9, 1)["n"] is None
    corrected = tu.tree_bias_correction(_tx(), 0.9, jnp.asarray(3))
    _check_tree(corrected, A / (1 - 0.9 ** 3), B / (1 - 0.9 ** 3), rtol=1e-6)


def test_functions_work_under_jit():
    @kiln.jit
    def f(x, y):
        return (tu.tree_add_scale(x, 0.5, y), tu.tree_vdot(x, y), tu.tree_norm(x), tu.tree_max(x),
                tu.tree_where(tu.tree_sum(x) > 0, x, y), tu.tree_bias_correction(x, 0.9, jnp.asarray(2)))
    out = f(_tx(), _ty())
    eager = (tu.tree_add_scale(_tx(), 0.5, _ty()), tu.tree_vdot(_tx(), _ty()), tu.tree_norm(_tx()),
             tu.tree_max(_tx()), tu.tree_where(tu.tree_sum(_tx()) > 0, _tx(), _ty()),
             tu.tree_bias_correction(_tx(), 0.9, jnp.asarray(2)))
    for g, e in zip(kiln.tree_util.tree_leaves(out), kiln.tree_util.tree_leaves(eager)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6)


def test_mismatched_structures_raise():
    with pytest.raises(ValueError, match="does not have the structure of the first tree"):
        tu.tree_add({"a": 1.0}, {"b": 1.0})
    with pytest.raises(ValueError, match="expected a list of 2 children, got one of 1"):
        tu.tree_vdot([1.0, 2.0], [1.0])


def test_bad_norm_ord_raises():
    with pytest.raises(ValueError, match=r"unsupported ord=3.*use None or 2"):
        tu.tree_norm(_tx(), ord=3)


# ----------------------------------------------------------------------------------------------
# Casting
# ----------------------------------------------------------------------------------------------

def test_cast_and_cast_like():
    t = _tx()
    assert tu.tree_cast(t, None) is t
    assert tu.tree_cast(t, jnp.float16)["b"][0].dtype == np.float16
    other = {"a": jnp.zeros((3, 2), jnp.bfloat16), "b": (1.0,)}
    out = tu.tree_cast_like(t, other)
    assert out["a"].dtype == jnp.bfloat16 and out["b"][0].dtype == np.float32  # a Python float has no dtype


def test_tree_dtype():
    assert tu.tree_dtype(_tx()) == np.float32
    assert tu.tree_dtype({}) == np.float32
    mixed = {"h": jnp.ones(2, jnp.float16), "f": jnp.ones(2, jnp.float32), "i": jnp.ones(2, jnp.int32)}
    assert tu.tree_dtype(mixed, "promote") == np.float32
    assert tu.tree_dtype(mixed, "highest") == np.float32
    assert tu.tree_dtype(mixed, "lowest") == np.int32
    with pytest.raises(ValueError, match=r"mixed dtypes .*\['h'\]: float16.*mixed_dtype_handler="):
        tu.tree_dtype(mixed)
    with pytest.raises(ValueError, match="mixed_dtype_handler='bogus' is not one of"):
        tu.tree_dtype(mixed, "bogus")
    with pytest.raises(ValueError, match="cannot be ordered.*use mixed_dtype_handler='promote'"):
        tu.tree_dtype([jnp.ones(1, jnp.bfloat16), jnp.ones(1, jnp.float16)], "highest")


# ----------------------------------------------------------------------------------------------
# Random trees
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make_key", [krandom.key, krandom.PRNGKey])
def test_split_key_like_and_random_like(make_key):
    key = make_key(3)
    keys = tu.tree_split_key_like(key, _tx())
    want = krandom.split(key, 2)
    np.testing.assert_array_equal(np.asarray(krandom.key_data(keys["a"])), np.asarray(krandom.key_data(want[0])))
    np.testing.assert_array_equal(np.asarray(krandom.key_data(keys["b"][0])), np.asarray(krandom.key_data(want[1])))
    draws = tu.tree_random_like(key, _tx())
    np.testing.assert_array_equal(np.asarray(draws["a"]), np.asarray(krandom.normal(want[0], (3, 2))))
    assert draws["b"][0].shape == (4,)
    u = tu.tree_random_like(key, _tx(), sampler=krandom.uniform, dtype=jnp.float16)
    assert u["a"].dtype == np.float16 and 0 <= float(jnp.min(u["a"])) and float(jnp.max(u["a"])) < 1


def test_unwrap_random_key_data():
    t = {"k": krandom.key(0), "x": jnp.asarray(B)}
    out = tu.tree_unwrap_random_key_data(t)
    assert out["k"].dtype == np.uint32 and out["k"].shape == (2,)
    np.testing.assert_array_equal(np.asarray(out["x"]), B)
    raw = tu.tree_unwrap_random_key_data({"k": krandom.PRNGKey(0)})  # raw keys are already data
    np.testing.assert_array_equal(np.asarray(raw["k"]), np.asarray(out["k"]))


# ----------------------------------------------------------------------------------------------
# Getting and setting values in optimizer states
# ----------------------------------------------------------------------------------------------

class Inner(NamedTuple):
    count: object
    lr: object


class Outer(NamedTuple):
    inner: object
    hyper: object


def _state():
    return Outer(Inner(jnp.asarray(0), 0.1), {"lr": 1.0, "other": {"lr": 2.0}})


def test_tree_get_all_with_path():
    found = tu.tree_get_all_with_path(_state(), "lr")
    paths = [kiln.tree_util.keystr(p) for p, _ in found]
    assert [v for _, v in found] == [0.1, 1.0, 2.0]
    # keystr joins the entries' str()s, as JAX's: a NamedTupleKey reads "Tuple.field"
    assert paths == ["Outer.innerInner.lr", "Outer.hyper['lr']", "Outer.hyper['other']['lr']"]
    assert found[0][0][-1] == tu.NamedTupleKey("Inner", "lr") and str(found[0][0][-1]) == "Inner.lr"
    only_inner = tu.tree_get_all_with_path(_state(), "lr", lambda p, v: isinstance(p[-1], tu.NamedTupleKey))
    assert [v for _, v in only_inner] == [0.1]
    # a NamedTuple's class name is a key too
    assert tu.tree_get_all_with_path(_state(), "Inner")[0][1] == _state().inner


def test_tree_get():
    assert int(tu.tree_get(_state(), "count")) == 0
    assert tu.tree_get(_state(), "nothing", default=5) == 5
    assert tu.tree_get(_state(), "lr", filtering=lambda p, v: v == 2.0) == 2.0
    with pytest.raises(KeyError, match=r"found 3 values for 'lr'.*pass filtering="):
        tu.tree_get(_state(), "lr")


def test_tree_set():
    new = tu.tree_set(_state(), count=jnp.asarray(7))
    assert int(new.inner.count) == 7 and new.inner.lr == 0.1 and new.hyper == _state().hyper
    new = tu.tree_set(_state(), lambda p, v: isinstance(p[-1], tu.NamedTupleKey), lr=0.5)
    assert new.inner.lr == 0.5 and new.hyper == {"lr": 1.0, "other": {"lr": 2.0}}
    new = tu.tree_set(_state(), lr=3.0)
    assert new.inner.lr == 3.0 and new.hyper == {"lr": 3.0, "other": {"lr": 3.0}}
    new = tu.tree_set(_state(), Inner="replaced")
    assert new.inner == "replaced"
    with pytest.raises(KeyError, match="found no values at 'missing' in the tree"):
        tu.tree_set(_state(), missing=1)
    with pytest.raises(KeyError, match="found no values at 'lr' that pass the filtering function"):
        tu.tree_set(_state(), lambda p, v: False, lr=1)


def test_tree_set_on_optimizer_state():
    opt = optim.adam(1e-3)
    state = opt.init({"w": jnp.ones(3)})
    new = tu.tree_set(state, count=jnp.asarray(4, jnp.int32))
    assert int(tu.tree_get(new, "count")) == 4
    assert kiln.tree_util.tree_structure(new) == kiln.tree_util.tree_structure(state)


def test_tree_map_params():
    opt = optim.adam(1e-3)
    params = {"w": jnp.ones(3), "b": jnp.zeros(2)}
    state = opt.init(params)
    mapped = tu.tree_map_params(opt, lambda p: p + 1.0, state, transform_non_params=lambda v: "non-param")
    adam_state = mapped[0]
    np.testing.assert_array_equal(np.asarray(adam_state.mu["w"]), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(adam_state.nu["b"]), [1.0, 1.0])
    assert adam_state.count == "non-param"
    # the init function works as well as the optimizer, and extra trees are passed along
    mapped = tu.tree_map_params(opt.init, lambda p, q: p + q, state, {"w": jnp.full(3, 2.0), "b": jnp.ones(2)})
    np.testing.assert_array_equal(np.asarray(mapped[0].mu["w"]), [2.0, 2.0, 2.0])
    with pytest.raises(TypeError, match="initable must be an optimizer"):
        tu.tree_map_params(3, lambda p: p, state)


# ----------------------------------------------------------------------------------------------
# The public modules
# ----------------------------------------------------------------------------------------------

def test_short_names_are_the_same_functions():
    for short in tree.__all__:
        assert getattr(tree, short) is getattr(tu, "tree_" + short), short
    assert tu.tree_scalar_mul(2.0, 3.0) == 6.0 and float(tu.tree_add_scalar_mul(1.0, 2.0, 3.0)) == 7.0


def test_top_level_aliases():
    assert optim.update_moment is tu.tree_update_moment
    assert optim.update_moment_per_elem_norm is tu.tree_update_moment_per_elem_norm
    assert optim.update_infinity_moment is tu.tree_update_infinity_moment
    assert optim.bias_correction is tu.tree_bias_correction
    assert optim.tree_map_params is tu.tree_map_params
