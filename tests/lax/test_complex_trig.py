"""sin and cos of complex arguments: built from real sin, cos and expm1 as JAX lowers them (XLA's own
complex sine/cosine round differently), so kiln's numbers are JAX's; checked against NumPy in complex128."""
import numpy as np
import pytest

import kiln
from kiln import lax

# Two values where the formulas round correctly and XLA's complex ops did not (a last-place difference in
# sin's real part; cos of a negative zero imaginary part keeps its sign: cos(a) cosh(-0) - i sin(a) sinh(-0)).
_Z = np.array([1.3416407108306885 - 2.012461185455322j, 2.2360680103302 - 0.0j], np.complex64)


@pytest.mark.parametrize("name", ["sin", "cos"])
@pytest.mark.parametrize("jit", [False, True])
def test_complex_sin_cos_round_as_the_formulas(name, jit):
    f = getattr(lax, name)
    got = np.asarray((kiln.jit(f) if jit else f)(_Z))
    want = getattr(np, name)(_Z.astype(np.complex128)).astype(np.complex64)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_complex_sin_cos_values_and_edges(name):
    rng = np.random.default_rng(0)
    z = (rng.standard_normal(64) * 3 + 1j * rng.standard_normal(64) * 3).astype(np.complex64)
    f = getattr(lax, name)
    np.testing.assert_allclose(f(z), getattr(np, name)(z.astype(np.complex128)), rtol=2e-6, atol=1e-6)
    # A zero real part: sin's real part (cos's imaginary part) is exactly zero, not inf * 0 = nan.
    big = np.array([200j, -200j], np.complex64)
    out = np.asarray(f(big))
    assert np.all((out.real if name == "sin" else out.imag) == 0)
    assert np.all(np.isinf(out.imag if name == "sin" else out.real))
