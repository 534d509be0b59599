"""Bad input to kiln.numpy and kiln.random gives a clear TypeError/ValueError naming the function and the
argument, not an internal exception: array-valued integer arguments (shapes, window lengths, matrix sizes),
``broadcast_to``'s shape, unhashable dtype arguments, and the parameters of kiln.random's samplers (strings,
None, lists, key arrays, complex values, non-scalar static integers), and kiln.lax.full_like's fill_value."""
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
