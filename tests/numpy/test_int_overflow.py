"""A Python int too large for the dtype it would get raises kiln.IntegerOverflowError, an OverflowError
(as JAX), saying what, the value, and how to fix it, at every entry point."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax

BIG = 2**70


def _entry_points():
    return {
        "asarray": lambda v: knp.asarray(v),
        "array": lambda v: knp.array(v),
        "array of a list": lambda v: knp.array([1, v]),
        "full": lambda v: knp.full(3, v),
        "add to an int32 array": lambda v: knp.add(np.ones(3, np.int32), v),
        "operator * on a float array": lambda v: knp.ones(3) * v,
        "jit argument": lambda v: kiln.jit(lambda x: x + 1)(v),
        "lax.add": lambda v: lax.add(knp.ones(3, np.int32), v),
    }


@pytest.mark.parametrize("name", list(_entry_points()))
@pytest.mark.parametrize("value", [BIG, -BIG])
def test_too_large_for_any_dtype(name, value):
    with pytest.raises(kiln.IntegerOverflowError) as info:
        _entry_points()[name](value)
    msg = str(info.value)
    assert isinstance(info.value, OverflowError)
    assert f"Python int {value} is too large for any integer dtype kiln supports (int64 and uint64 with " \
           "enable_x64, int32 and uint32 otherwise)" in msg
    assert "use a float" in msg and f"{float(value):.6g}" in msg


@pytest.mark.parametrize("name", ["asarray", "array", "array of a list", "full", "jit argument"])
def test_too_large_for_any_dtype_with_x64(name):
    with kiln.config.override("enable_x64", True):
        with pytest.raises(OverflowError, match=r"Python int 1180591620717411303424 is too large for any integer"):
            _entry_points()[name](BIG)


def test_names_the_function():
    with pytest.raises(OverflowError, match=r"^kiln\.numpy\.add: Python int"):
        knp.add(np.ones(3, np.int32), BIG)
    with pytest.raises(OverflowError, match=r"^kiln\.numpy\.array: Python int"):
        knp.asarray(BIG)


def test_fits_int64_suggests_x64():
    with pytest.raises(kiln.IntegerOverflowError,
                       match=r"Python int 1099511627776 is out of range for int32 .*enable_x64.*it fits int64"):
        knp.asarray(2**40)
    with kiln.config.override("enable_x64", True):
        assert knp.asarray(2**40).dtype == np.int64


def test_fits_uint64_suggests_uint64():
    with kiln.config.override("enable_x64", True):
        with pytest.raises(kiln.IntegerOverflowError, match=r"np\.uint64\(9223372036854775808\)"):
            knp.asarray(2**63)
        assert int(knp.asarray(np.uint64(2**63))) == 2**63


def test_int_combined_with_narrow_array_says_cast_the_array():
    with pytest.raises(kiln.IntegerOverflowError, match=r"the dtype it takes from the array it is combined with: "
                                                        r"cast the array to a wider dtype"):
        lax.add(knp.ones(3, np.int8), 1000)


def test_explicit_integer_dtype():
    with pytest.raises(kiln.IntegerOverflowError, match=r"kiln\.numpy\.array: Python int 1099511627776 is out of "
                                                        r"range for int32 \(range \[-2147483648, 2147483647\]\), "
                                                        r"the dtype asked for: ask for a wider dtype, or use a float"):
        knp.asarray(2**40, dtype=np.int32)
    with pytest.raises(kiln.IntegerOverflowError, match=r"Python int 300 is out of range for uint8 .*dtype asked for"):
        knp.array([1, 300], dtype=np.uint8)
    with pytest.raises(kiln.IntegerOverflowError, match=r"kiln\.numpy\.array: Python int 1180591620717411303424 is "
                                                        r"too large for any integer dtype"):
        knp.asarray([1, 2**70], dtype=np.int32)
    np.testing.assert_allclose(np.asarray(knp.asarray([2**70], dtype=np.float32)), [2.0**70])


def test_beyond_float64_too():
    with pytest.raises(kiln.IntegerOverflowError, match="beyond the range of float64"):
        knp.asarray(10**400)


def test_values_that_fit_still_work():
    assert int(knp.asarray(2**31 - 1)) == 2**31 - 1
    assert float(knp.asarray(float(BIG))) == np.float32(float(BIG))
    np.testing.assert_array_equal(np.asarray(knp.add(np.ones(3, np.int32), 2**31 - 2)), [2**31 - 1] * 3)
