"""``//``, ``%`` and ``divmod`` against NumPy: floats from the exact remainder (``1.0 // 0.1`` is 9.0, not
``floor(1.0 / 0.1)``), and integer division by zero as JAX defines it (NumPy warns and gives 0)."""
import numpy as np
import pytest

import kiln
import kiln.numpy as knp

_TRICKY = [(1.0, 0.1), (-1.0, 0.1), (7.0, -0.7), (-7.0, 0.7), (0.0, -3.0), (-0.0, 3.0), (3.0, -np.inf),
           (-3.0, np.inf), (np.inf, 2.0), (5.0, 0.0), (-5.0, 0.0), (0.0, 0.0), (np.nan, 1.0), (1.0, np.nan),
           (0.3, 0.1), (1e30, 1e-30), (-2.5, 0.5), (9.0, 3.0)]


def _numpy(op, a, b):
    with np.errstate(all="ignore"):
        return op(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_floor_divide_remainder_and_divmod_are_numpys(dtype):
    rng = np.random.default_rng(0)
    a = np.concatenate([[p for p, _ in _TRICKY], rng.uniform(-50, 50, 300)]).astype(dtype)
    b = np.concatenate([[q for _, q in _TRICKY], rng.uniform(-3, 3, 300)]).astype(dtype)
    with kiln.enable_x64(dtype == np.float64):
        x, y = knp.asarray(a), knp.asarray(b)
        got = {"//": x // y, "%": x % y, "divmod": knp.divmod(x, y),
               "jit //": kiln.jit(knp.floor_divide)(x, y)}
        for out in (got["//"], got["%"], got["jit //"], *got["divmod"]):
            assert out.dtype == dtype
    want_div, want_mod = _numpy(np.floor_divide, a, b), _numpy(np.remainder, a, b)
    np.testing.assert_array_equal(np.asarray(got["//"]), want_div)
    np.testing.assert_array_equal(np.asarray(got["jit //"]), want_div)
    np.testing.assert_array_equal(np.asarray(got["divmod"][0]), want_div)
    # The remainder's zeros take the divisor's sign in NumPy and the dividend's in kiln (and JAX): compare values.
    np.testing.assert_allclose(np.asarray(got["%"]), want_mod, rtol=0, atol=0, equal_nan=True)
    np.testing.assert_allclose(np.asarray(got["divmod"][1]), want_mod, rtol=0, atol=0, equal_nan=True)
    assert float(knp.float32(1.0) // 0.1) == 9.0 == 1.0 // 0.1  # a Python scalar divisor, as Python


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint32])
def test_integer_floor_divide_and_remainder(dtype):
    info = np.iinfo(dtype)
    values = np.arange(max(info.min, -20), min(info.max, 20) + 1).astype(dtype)
    a, b = np.meshgrid(values, values[values != 0])
    a, b = a.ravel(), b.ravel()
    x, y = knp.asarray(a), knp.asarray(b)
    np.testing.assert_array_equal(np.asarray(x // y), a // b)
    np.testing.assert_array_equal(np.asarray(x % y), a % b)
    np.testing.assert_array_equal(np.asarray(knp.divmod(x, y)[1]), a % b)


def test_integer_division_by_zero_is_jaxs():
    # XLA divides by zero to -1 (all ones unsigned) and JAX then steps down where the signs differ; % 0 is 0.
    x = knp.array([1, 2, -3, 0], dtype=np.int32)
    np.testing.assert_array_equal(np.asarray(x // 0), [-2, -2, -2, -1])
    np.testing.assert_array_equal(np.asarray(x % 0), [0, 0, 0, 0])
    u = knp.array([1, 7], dtype=np.uint32)
    np.testing.assert_array_equal(np.asarray(u // knp.zeros(2, np.uint32)), [2**32 - 1] * 2)
    np.testing.assert_array_equal(np.asarray(u % knp.zeros(2, np.uint32)), [0, 0])


def test_floor_divide_has_a_zero_gradient():
    g = kiln.grad(lambda x: knp.sum(x // 0.3 + x))(knp.array([1.0, -2.0, 0.7]))
    np.testing.assert_array_equal(np.asarray(g), [1.0, 1.0, 1.0])
