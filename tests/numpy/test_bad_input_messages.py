"""Bad input to kiln.numpy and kiln.random gives a clear TypeError/ValueError naming the function and the
argument, not an internal exception: array-valued integer arguments (shapes, window lengths, matrix sizes),
``broadcast_to``'s shape, unhashable dtype arguments, and the parameters of kiln.random's samplers (strings,
None, lists, key arrays, complex values, non-scalar static integers), kiln.lax.full_like's fill_value,
kiln.lax's axis arguments (argmax/argmin, the reductions), einsum's first argument, and misspelt dtypes (the
message names the function the dtype was passed to)."""
import re

import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
from kiln import random
from kiln.dtypes import TypePromotionError


def test_static_int_arguments_reject_arrays_that_are_not_integer_scalars():
    x = jnp.ones((2, 3))
    with pytest.raises(TypeError, match=r"kiln\.numpy\.eye: N must be an integer, got an array of shape \(2, 3\)"):
        jnp.eye(x)
    with pytest.raises(TypeError, match=r"kiln\.numpy\.hamming: M must be an integer, got an array of shape \(2,\) "
                                        r"and dtype bool"):
        jnp.hamming(jnp.array([True, False]))
    with pytest.raises(TypeError, match=r"kiln\.numpy\.identity: n must be an integer, .*dtype float32"):
        jnp.identity(jnp.float32(3.0))
    assert jnp.eye(jnp.array(2)).shape == (2, 2)  # an integer 0-d array is still accepted


def test_broadcast_to_shape_errors():
    x = jnp.ones(3)
    with pytest.raises(TypeError, match=r"kiln\.numpy\.broadcast_to: shape must be a sequence of integers, got None"):
        jnp.broadcast_to(x, None)
    with pytest.raises(TypeError, match=r"kiln\.numpy\.broadcast_to: shape must be a sequence of integers"):
        jnp.broadcast_to(x, jnp.array([1j, 2j]))
    with pytest.raises(TypeError, match=r"kiln\.numpy\.broadcast_to: shape must be a sequence of integers"):
        jnp.broadcast_to(x, random.key(0))
    with pytest.raises(TypeError, match=r"kiln\.numpy\.broadcast_to: each dimension of the shape must be an integer"):
        jnp.broadcast_to(x, (2.5, 3))
    with pytest.raises(ValueError, match=r"kiln\.numpy\.broadcast_to: negative dimensions are not allowed"):
        jnp.broadcast_to(x, (-1, 3))
    np.testing.assert_array_equal(jnp.broadcast_to(x, jnp.array([2, 3])), np.broadcast_to(np.ones(3), (2, 3)))


def test_dtype_arguments_reject_unhashable_values():
    with pytest.raises(TypeError, match=r"kiln\.numpy\.can_cast: expected a dtype or an array, got list"):
        jnp.can_cast(["a"], jnp.float32)
    with pytest.raises(TypeError, match=r"kiln\.numpy\.can_cast: expected a dtype or an array, got KeyArray"):
        jnp.can_cast(jnp.float32, random.key(0))
    with pytest.raises(TypeError, match=r"kiln\.numpy\.isdtype: expected a dtype or an array, got dict"):
        jnp.isdtype({"a": 1}, "bool")


@pytest.mark.parametrize("jit", [False, True])
def test_random_parameters_must_be_numeric_arrays_or_scalars(jit):
    key = random.key(0)

    def call(f, *args):
        return kiln.jit(lambda k: f(k, *args))(key) if jit else f(key, *args)

    with pytest.raises(TypeError, match=r"kiln\.random\.pareto: b of type str \('abc'\) is not an array or a scalar"):
        call(random.pareto, "abc")
    with pytest.raises(TypeError, match=r"kiln\.random\.gamma: a is a list; .*kiln\.numpy\.asarray"):
        call(random.gamma, [1.0, 2.0])
    with pytest.raises(TypeError, match=r"kiln\.random\.uniform: minval of type NoneType"):
        random.uniform(key, minval=None)
    with pytest.raises(TypeError, match=r"kiln\.random\.wald: mean must be a numeric array, got a NumPy array"):
        call(random.wald, np.array(["a"]))
    with pytest.raises(TypeError, match=r"kiln\.random\.binomial: p is a PRNG key array; pass the key as the first"):
        call(random.binomial, 3, random.key(1))
    with pytest.raises(TypeError, match=r"kiln\.random\.triangular: right of type dict"):
        call(random.triangular, 0.0, 0.5, {"a": 1})


def test_random_parameters_must_be_real():
    key = random.key(0)
    with pytest.raises(TypePromotionError, match=r"kiln\.random\.geometric: p must be real, got dtype complex64"):
        random.geometric(key, jnp.array([0.5j]))
    with pytest.raises(TypePromotionError, match=r"kiln\.random\.beta: a must be real"):
        random.beta(key, 1j, 2.0)
    # permutation and choice draw from complex arrays as from any other
    assert random.permutation(key, jnp.array([1j, 2j])).dtype == np.complex64


def test_random_static_integers_must_be_scalars():
    key = random.key(0)
    with pytest.raises(TypeError, match=r"kiln\.random\.ball: d must be an integer, got bool"):
        random.ball(key, jnp.array([True, False]))
    with pytest.raises(TypeError, match=r"kiln\.random\.orthogonal: n must be an integer, got int32"):
        random.orthogonal(key, jnp.array([2, 3]))
    with pytest.raises(TypeError, match=r"kiln\.random\.bits: .*|kiln: invalid dtype 'notadtype'"):
        random.bits(key, dtype="notadtype")


def test_lax_full_like_rejects_array_fill_values():
    x = jnp.ones((2, 3))
    with pytest.raises(TypeError, match=r"kiln\.lax\.full_like: fill_value must be a scalar, got one of shape \(2, 3"):
        kiln.lax.full_like(x, x)
    np.testing.assert_array_equal(kiln.lax.full_like(x, 2.0), np.full((2, 3), 2.0, np.float32))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_lax_argmax_rejects_axes_that_are_not_ints(name):
    # Before: a float or bool axis was truncated by int() and accepted.
    fn, x = getattr(kiln.lax, name), jnp.arange(6.0).reshape(2, 3)
    with pytest.raises(TypeError, match=rf"^kiln\.lax\.{name}: axis must be an int, got float 1\.0; pass axis=1$"):
        fn(x, 1.0, jnp.int32)
    with pytest.raises(TypeError, match=rf"^kiln\.lax\.{name}: axis must be an int, got bool True; an axis is an int "
                                        r"in \[0, 2\) for an operand of shape \(2, 3\)$"):
        fn(x, True, jnp.int32)
    with pytest.raises(TypeError, match=rf"kiln\.lax\.{name}: axis must be an int, got float 1\.5; an axis is an int"):
        fn(x, 1.5, jnp.int32)
    with pytest.raises(ValueError, match=rf"kiln\.lax\.{name}: axis -1 is out of range for an operand of shape "
                                         rf"\(2, 3\); kiln\.lax takes an axis in \[0, 2\) \(kiln\.numpy\.{name} takes"):
        fn(x, -1, jnp.int32)
    with pytest.raises(TypeError, match=rf"kiln\.lax\.{name}: invalid dtype 'int3'\. Did you mean 'int32'"):
        fn(x, 1, "int3")
    assert fn(x, np.int64(1), jnp.int32).shape == (2,)  # NumPy integers are ints


def test_lax_reductions_reject_axes_that_are_not_ints():
    x = jnp.arange(6.0).reshape(2, 3)
    with pytest.raises(TypeError, match=r"^kiln\.lax\.reduce_sum: axes\[0\] must be an int, got float 1\.5; an axis "
                                        r"is an int in \[0, 2\) for an operand of shape \(2, 3\)$"):
        kiln.lax.reduce_sum(x, (1.5,))
    with pytest.raises(TypeError, match=r"^kiln\.lax\.reduce_max: axes\[1\] must be an int, got str '0'; pass "
                                        r"axes=\(1, 0\)$"):
        kiln.lax.reduce_max(x, (1, "0"))
    with pytest.raises(TypeError, match=r"^kiln\.lax\.reduce_min: axes must be a sequence of ints \(a tuple such as "
                                        r"\(0, 1\)\), got str '0'; pass axes=\(0,\)$"):
        kiln.lax.reduce_min(x, "0")
    with pytest.raises(TypeError, match=r"kiln\.lax\.reduce_prod: axes must be a sequence of ints .*got int 1; pass "
                                        r"axes=\(1,\)"):
        kiln.lax.reduce_prod(x, 1)
    with pytest.raises(TypeError, match=r"kiln\.lax\.reduce_or: axes\[0\] must be an int, got bool True"):
        kiln.lax.reduce_or(x > 1, (True,))
    with pytest.raises(TypeError, match=r"kiln\.lax\.reduce_and: axes\[0\] must be an int, got float 1\.0; pass "
                                        r"axes=\(1,\)"):
        kiln.lax.reduce_and(x > 1, [1.0])
    np.testing.assert_array_equal(kiln.lax.reduce_sum(x, (np.int64(1),)), [3.0, 12.0])
    np.testing.assert_array_equal(kiln.lax.reduce_sum(x, np.array([0, 1])), 15.0)


def test_einsum_first_argument_neither_subscripts_nor_interleaved():
    # Before: "sublist labels must be ints in [0, 52) or Ellipsis, got Array(...)".
    x, y = jnp.ones((2, 3)), jnp.ones((3, 4))
    what = (r"^kiln\.numpy\.einsum: the first argument must be a subscripts string such as 'ij,jk->ik', or operands "
            r"interleaved with their axis-label lists \(einsum\(a, \[0, 1\], b, \[1, 2\]\)\); ")
    with pytest.raises(TypeError, match=what + r"got int 3 followed by Array of shape \(2, 3\) and dtype float32, "
                                               r"not by a label list$"):
        jnp.einsum(3, x)
    with pytest.raises(TypeError, match=what + r"got only Array of shape \(2, 3\) and dtype float32, with no "
                                               r"subscripts and no label list$"):
        jnp.einsum(x)
    with pytest.raises(TypeError, match=what + r"got Array of shape \(2, 3\) .* followed by Array of shape"):
        jnp.einsum(x, y)
    with pytest.raises(TypeError, match=what + r"got list \[0, 1\]$"):
        jnp.einsum([0, 1], x)
    with pytest.raises(TypeError, match=what + r"got NoneType None$"):
        jnp.einsum(None, x)
    with pytest.raises(TypeError, match=what + r"got bytes b'ij->ji': decode it to a str$"):
        jnp.einsum(b"ij->ji", x)
    with pytest.raises(TypeError, match=what + r"got Array of shape \(3, 4\) and dtype float32 as the last argument, "
                                               r"with no label list after it$"):
        jnp.einsum(x, [0, 1], y)
    with pytest.raises(TypeError, match=what + r"the output labels \(the last argument\) must be a list too, got str"):
        jnp.einsum(x, [0, 1], "ij")
    with pytest.raises(TypeError, match=r"^kiln\.numpy\.einsum_path: the first argument must be a subscripts string"):
        jnp.einsum_path(3, x)
    # the interleaved form itself still works, with lists, tuples or integer NumPy arrays as label lists
    np.testing.assert_allclose(jnp.einsum(x, [0, 1], y, (1, 2), np.array([0, 2])), np.full((2, 4), 3.0))
    assert jnp.einsum(x, [Ellipsis, 1], [Ellipsis]).shape == (2,)
    np.testing.assert_allclose(jnp.einsum(np.array([1, 2]), [0], []), 3)  # a 1-D integer operand comes first


_DTYPE_ENTRY_POINTS = [
    ("kiln.numpy.zeros", lambda d: jnp.zeros(3, d)),
    ("kiln.numpy.ones", lambda d: jnp.ones(3, dtype=d)),
    ("kiln.numpy.empty", lambda d: jnp.empty(3, dtype=d)),
    ("kiln.numpy.full", lambda d: jnp.full(3, 1.0, dtype=d)),
    ("kiln.numpy.full", lambda d: jnp.full(3, jnp.ones(1), dtype=d)),
    ("kiln.numpy.arange", lambda d: jnp.arange(3, dtype=d)),
    ("kiln.numpy.linspace", lambda d: jnp.linspace(0, 1, 5, dtype=d)),
    ("kiln.numpy.logspace", lambda d: jnp.logspace(0, 1, 5, dtype=d)),
    ("kiln.numpy.geomspace", lambda d: jnp.geomspace(1, 2, 5, dtype=d)),
    ("kiln.numpy.eye", lambda d: jnp.eye(3, dtype=d)),
    ("kiln.numpy.tri", lambda d: jnp.tri(3, dtype=d)),
    ("kiln.numpy.indices", lambda d: jnp.indices((2,), dtype=d)),
    ("kiln.numpy.asarray", lambda d: jnp.asarray([1, 2], dtype=d)),
    ("kiln.numpy.asarray", lambda d: jnp.asarray(jnp.ones(2), dtype=d)),
    ("kiln.numpy.array", lambda d: jnp.array(1.0, dtype=d)),
    ("kiln.numpy.zeros_like", lambda d: jnp.zeros_like(jnp.ones(2), dtype=d)),
    ("kiln.numpy.ones_like", lambda d: jnp.ones_like(jnp.ones(2), dtype=d)),
    ("kiln.numpy.full_like", lambda d: jnp.full_like(jnp.ones(2), 2, dtype=d)),
    ("kiln.numpy.empty_like", lambda d: jnp.empty_like(jnp.ones(2), dtype=d)),
    ("kiln.numpy.astype", lambda d: jnp.astype(jnp.ones(2), d)),
    ("kiln.Array.astype", lambda d: jnp.ones(2).astype(d)),
    ("kiln.Array.astype", lambda d: kiln.jit(lambda a: a.astype(d))(jnp.ones(2))),
    ("kiln.numpy.sum", lambda d: jnp.sum(jnp.ones(2), dtype=d)),
    ("kiln.numpy.sum", lambda d: jnp.ones(2).sum(dtype=d)),
    ("kiln.numpy.prod", lambda d: jnp.prod(jnp.ones(2), dtype=d)),
    ("kiln.numpy.nansum", lambda d: jnp.nansum(jnp.ones(2), dtype=d)),
    ("kiln.numpy.mean", lambda d: jnp.mean(jnp.ones(2), dtype=d)),
    ("kiln.numpy.nanmean", lambda d: jnp.nanmean(jnp.ones(2), dtype=d)),
    ("kiln.numpy.var", lambda d: jnp.var(jnp.ones(2), dtype=d)),
    ("kiln.numpy.std", lambda d: jnp.std(jnp.ones(2), dtype=d)),
    ("kiln.numpy.cumsum", lambda d: jnp.cumsum(jnp.ones(2), dtype=d)),
    ("kiln.numpy.cumprod", lambda d: jnp.cumprod(jnp.ones(2), dtype=d)),
    ("kiln.lax.convert_element_type", lambda d: kiln.lax.convert_element_type(jnp.ones(2), d)),
]


@pytest.mark.parametrize("where, call", _DTYPE_ENTRY_POINTS, ids=[f"{w}-{i}" for i, (w, _) in
                                                                   enumerate(_DTYPE_ENTRY_POINTS)])
def test_a_misspelt_dtype_names_the_function(where, call):
    # Before: "kiln: invalid dtype 'floot32'. ..." whichever function it was passed to.
    name = re.escape(where)
    with pytest.raises(TypeError, match=rf"^{name}: invalid dtype 'floot32'\. Did you mean 'float32'\? Valid dtypes: "
                                        r"bool, uint8, "):
        call("floot32")


def test_an_unsupported_dtype_names_the_function():
    with pytest.raises(TypeError, match=r"^kiln\.Array\.astype: dtype 'str' is not supported; kiln arrays hold numeric "
                                        r"or boolean data only"):
        jnp.ones(2).astype(str)
    with pytest.raises(TypeError, match=r"^kiln\.numpy\.zeros: dtype 'object' is not supported"):
        jnp.zeros(2, dtype=object)
    # canonicalize_dtype itself (no function to name) keeps its message
    with pytest.raises(TypeError, match=r"^kiln: invalid dtype 'floot32'"):
        kiln.dtypes.canonicalize_dtype("floot32")
