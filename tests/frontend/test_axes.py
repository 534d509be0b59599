"""The one axis normaliser (frontend/core/axes.py) that every function taking an axis goes through."""
import numpy as np
import pytest
from kiln.frontend.core.axes import canonical_axes, canonical_axis, sorted_axes
from kiln.frontend.core.errors import AxisError

import kiln
import kiln.numpy as knp


def test_canonical_axis():
    assert canonical_axis("f", -1, 3) == 2
    assert canonical_axis("f", np.int64(1), 3) == 1
    assert type(canonical_axis("f", np.int64(1), 3)) is int
    with pytest.raises(AxisError, match=r"^kiln.numpy.squeeze: axis 3 is out of bounds for an array of dimension 2$"):
        canonical_axis("kiln.numpy.squeeze", 3, 2)
    with pytest.raises(AxisError, match=r"^f: axis 0 is out of bounds for an array of dimension 0$"):
        canonical_axis("f", 0, 0)
    with pytest.raises(TypeError, match=r"^f: axis must be an int, got bool True$"):
        canonical_axis("f", True, 2)
    with pytest.raises(TypeError, match=r"^f: dimension must be an int, got float 1.5$"):
        canonical_axis("f", 1.5, 2, what="dimension")
    with pytest.raises(AxisError, match=r"^f: axis 2 in axes\[0\] is out of bounds for an array of dimension 2$"):
        canonical_axis("f", 2, 2, within="axes[0]")


def test_canonical_axes_keeps_order_and_rejects_repeats():
    assert canonical_axes("f", (2, -3), 3) == (2, 0)
    assert canonical_axes("f", 1, 3) == (1,)
    assert canonical_axes("f", np.array([1, 0]), 3) == (1, 0)
    assert canonical_axes("f", range(2), 3) == (0, 1)
    assert canonical_axes("f", (0, -3), 3, allow_repeats=True) == (0, 0)
    with pytest.raises(ValueError, match=r"^f: repeated axis in \(0, -3\)$"):
        canonical_axes("f", (0, -3), 3)
    with pytest.raises(ValueError, match=r"^f: repeated axis in axes\[1\] \[0, 0\]$"):
        canonical_axes("f", [0, 0], 3, within="axes[1]")
    with pytest.raises(TypeError, match=r"^f: axis must be an int, got NoneType None$"):
        canonical_axes("f", None, 3)
    with pytest.raises(TypeError, match=r"^f: axis must be an int, got ndarray array\(1\)$"):
        canonical_axes("f", np.array(1), 3)
    with pytest.raises(TypeError, match=r"^f: axis must be an int, got str 'ab'$"):
        canonical_axes("f", "ab", 3)


def test_sorted_axes():
    assert sorted_axes("f", None, 3) == (0, 1, 2)
    assert sorted_axes("f", (2, 0), 3) == (0, 2)
    assert sorted_axes("f", -1, 3) == (2,)
    with pytest.raises(ValueError, match=r"^f: repeated axis in \(1, -2\)$"):
        sorted_axes("f", (1, -2), 3)


@pytest.mark.parametrize("call", [
    lambda x, a: x.min(a), lambda x, a: knp.sum(x, a), lambda x, a: knp.cumsum(x, a), lambda x, a: knp.sort(x, a),
    lambda x, a: knp.concatenate([x, x], a), lambda x, a: knp.take(x, 0, a), lambda x, a: knp.expand_dims(x, a),
    lambda x, a: knp.moveaxis(x, a, 0), lambda x, a: knp.arange(a)],
    ids=["min", "sum", "cumsum", "sort", "concatenate", "take", "expand_dims", "moveaxis", "arange"])
def test_a_traced_axis_is_a_concretization_error(call):
    # As JAX's (ConcretizationTypeError's own docstring example is x.min(axis) under jit): the class a value that
    # must be static raises; still a TypeError, as before
    with pytest.raises(kiln.errors.ConcretizationTypeError, match="must be a static") as info:
        kiln.jit(call)(knp.arange(4.0).reshape(2, 2), 0)
    assert isinstance(info.value, TypeError)
    np.testing.assert_array_equal(kiln.jit(lambda x: x.min(0))(knp.arange(4.0).reshape(2, 2)), [0.0, 1.0])
