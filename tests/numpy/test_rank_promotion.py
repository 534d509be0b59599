"""numpy_rank_promotion ('allow', 'warn', 'raise'): kiln.numpy's elementwise functions warn or raise when they
broadcast arrays of different ranks, as JAX's do (JAX's rank_promotion_warning page)."""
import warnings

import numpy as np
import pytest

import kiln
import kiln.numpy as jnp

_RAISES = r"Operands could not be broadcast together for {} on shapes \(3,\) \(2, 3\) and with the config option " \
          r"jax_numpy_rank_promotion='raise'"


@pytest.fixture
def vectors():
    return jnp.arange(3.0), jnp.ones((2, 3))


def test_allow_is_the_default_and_broadcasts(vectors):
    x, y = vectors
    assert kiln.config.numpy_rank_promotion == "allow"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(x + y, np.arange(3.0) + np.ones((2, 3)))


@pytest.mark.parametrize("name, call", [
    ("add", lambda x, y: x + y),
    ("multiply", lambda x, y: jnp.multiply(x, y)),
    ("arctan2", jnp.arctan2),
    ("logaddexp", jnp.logaddexp),
    ("hypot", jnp.hypot),
    ("power", jnp.power),
    ("copysign", jnp.copysign),
    ("isclose", jnp.isclose),
])
def test_raise_names_the_function_and_shapes(vectors, name, call):
    x, y = vectors
    with kiln.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match=_RAISES.format(name)) as info:
            call(x, y)
    assert "broadcast explicitly" in str(info.value) and "numpy_rank_promotion('allow')" in str(info.value)


def test_raise_under_jit_and_after_a_cached_call(vectors):
    x, y = vectors
    mul = kiln.jit(lambda a, b: a * b)
    mul(x, y), x + y  # traced and cached under 'allow'
    kiln.config.update("jax_numpy_rank_promotion", "raise")
    try:
        with pytest.raises(ValueError, match=_RAISES.format("multiply")):
            mul(x, y)
        with pytest.raises(ValueError, match=_RAISES.format("add")):
            x + y  # the eager program cached under 'allow' is not reused
    finally:
        kiln.config.update("jax_numpy_rank_promotion", "allow")
    np.testing.assert_array_equal(mul(x, y), np.arange(3.0) * np.ones((2, 3)))


def test_scalars_and_equal_ranks_are_not_rank_promotion(vectors):
    x, y = vectors
    with kiln.numpy_rank_promotion("raise"):
        np.testing.assert_array_equal(x + 1.0, np.arange(3.0) + 1)
        np.testing.assert_array_equal(jnp.ones(()) + y, 2 * np.ones((2, 3)))
        np.testing.assert_array_equal(jnp.ones((1, 3)) + y, 2 * np.ones((2, 3)))  # size-1 axes broadcast freely
        np.testing.assert_array_equal(x @ jnp.ones((3, 3)), np.arange(3.0) @ np.ones((3, 3)))


def test_warn_points_at_the_users_line(vectors):
    x, y = vectors
    with kiln.numpy_rank_promotion("warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = x + y
    np.testing.assert_array_equal(out, np.arange(3.0) + np.ones((2, 3)))
    [w] = caught
    assert issubclass(w.category, UserWarning) and w.filename == __file__
    assert str(w.message).startswith("Following NumPy automatic rank promotion for add on shapes (3,) (2, 3). Set "
                                     "the jax_numpy_rank_promotion config option to 'allow' to disable this warning")


def test_setting_it_is_no_longer_reported_as_ignored():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kiln.config.update("jax_numpy_rank_promotion", "warn")
        kiln.config.update("jax_numpy_rank_promotion", "allow")
