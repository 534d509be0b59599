"""``precision=`` is accepted wherever JAX takes it (None, a name, kiln.lax.Precision, a pair), checked,
and leaves the values unchanged; ``kiln.lax.Precision`` has JAX's members and string forms."""
from __future__ import annotations

import numpy as np
import pytest

import kiln.numpy as knp
from kiln import lax

P = lax.Precision
PRECISIONS = [None, "highest", "default", "tensorfloat32", P.HIGHEST, P.HIGH, (P.HIGHEST, P.DEFAULT),
              ("high", "float32")]

rng = np.random.default_rng(0)
A = rng.normal(size=(3, 4)).astype(np.float32)
B = rng.normal(size=(4, 5)).astype(np.float32)
V = rng.normal(size=(4,)).astype(np.float32)


def test_precision_enum():
    assert [m.name for m in P] == ["DEFAULT", "HIGH", "HIGHEST"]
    assert [m.value for m in P] == [0, 1, 2]
    for s, m in [("default", P.DEFAULT), ("fastest", P.DEFAULT), ("bfloat16", P.DEFAULT), ("high", P.HIGH),
                 ("bfloat16_3x", P.HIGH), ("tensorfloat32", P.HIGH), ("highest", P.HIGHEST),
                 ("float32", P.HIGHEST), ("HIGHEST", P.HIGHEST)]:
        assert P(s) is m
    assert str(P.HIGHEST) == "HIGHEST" and repr(P.HIGH) == "Precision.HIGH"
    with pytest.raises(ValueError):
        P("nope")


LAX_CASES = {
    "dot": (lambda p: lax.dot(A, B, precision=p), A @ B),
    "dot matrix-vector": (lambda p: lax.dot(A, V, precision=p), A @ V),
    "dot with dimension_numbers": (lambda p: lax.dot(A, B, dimension_numbers=(((1,), (0,)), ((), ())), precision=p),
                                   A @ B),
    "dot_general": (lambda p: lax.dot_general(A, B, (((1,), (0,)), ((), ())), precision=p), A @ B),
    "batch_matmul": (lambda p: lax.batch_matmul(A[None], B[None], precision=p), (A @ B)[None]),
    "conv": (lambda p: lax.conv(A[None, None], B[None, None, :2, :2], (1, 1), "VALID", precision=p), None),
    "conv_general_dilated": (lambda p: lax.conv_general_dilated(A[None, None], B[None, None, :2, :2], (1, 1),
                                                                "VALID", precision=p), None),
    "conv_with_general_padding": (lambda p: lax.conv_with_general_padding(
        A[None, None], B[None, None, :2, :2], (1, 1), [(0, 0), (0, 0)], None, None, precision=p), None),
}


def _conv_reference():
    k = B[:2, :2]
    out = np.zeros((2, 3), np.float32)
    for i in range(2):
        for j in range(3):
            out[i, j] = (A[i:i + 2, j:j + 2] * k).sum()
    return out[None, None]


@pytest.mark.parametrize("precision", PRECISIONS, ids=repr)
@pytest.mark.parametrize("name", list(LAX_CASES))
def test_lax_functions_accept_precision(name, precision):
    fn, expected = LAX_CASES[name]
    expected = _conv_reference() if expected is None else expected
    np.testing.assert_allclose(np.asarray(fn(precision)), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(LAX_CASES))
@pytest.mark.parametrize("bad", ["nope", (P.HIGH,), (P.HIGH, P.HIGH, P.HIGH), 3])
def test_bad_precision_is_a_value_error(name, bad):
    with pytest.raises(ValueError, match=r"kiln\.lax\.\w+: precision=.*(is not a precision|single precision or a "
                                         r"pair)"):
        LAX_CASES[name][0](bad)


def test_preferred_element_type_of_dot():
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    out = lax.dot(x, x.T, preferred_element_type=np.int32, precision="highest")
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), x.astype(np.int32) @ x.T.astype(np.int32))


def test_lax_dot_shape_errors():
    with pytest.raises(ValueError, match=r"kiln\.lax\.dot: operands must be 1-D or 2-D .* got shapes \(2, 3\) and "
                                         r"\(4, 5\).*dot_general"):
        lax.dot(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
    with pytest.raises(ValueError, match=r"kiln\.lax\.dot: .*\(1, 2, 3\)"):
        lax.dot(np.ones((1, 2, 3), np.float32), np.ones((3,), np.float32))


def test_batch_matmul_errors():
    with pytest.raises(ValueError, match=r"kiln\.lax\.batch_matmul: operands must have the same number of dimensions"):
        lax.batch_matmul(np.ones((3, 4), np.float32), np.ones((2, 4, 5), np.float32))
    with pytest.raises(TypeError, match=r"kiln\.lax\.dot_general: shapes .* do not match"):
        lax.batch_matmul(np.ones((2, 3, 4), np.float32), np.ones((3, 4, 5), np.float32))


def test_numpy_einsum_checks_precision_too():
    np.testing.assert_allclose(np.asarray(knp.einsum("ij,jk->ik", A, B, precision=P.HIGHEST)), A @ B, rtol=1e-5)
    with pytest.raises(ValueError, match=r"kiln\.numpy\.einsum: precision='nope'"):
        knp.einsum("ij,jk->ik", A, B, precision="nope")
