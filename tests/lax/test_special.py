"""kiln.lax elementwise primitives of frontend/lax/special.py and the compositions over them,
eagerly and under jit, against NumPy/SciPy."""
from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.special as sp

import kiln
import kiln.numpy as knp
from kiln import lax

rng = np.random.default_rng(0)
SHAPES = [(), (0,), (3, 4)]


def _sample(domain: str, shape, dtype):
    lo, hi = {"real": (-3, 3), "unit": (-0.99, 0.99), "ge1": (1.0, 5.0), "pos": (0.1, 6.0)}[domain]
    return rng.uniform(lo, hi, shape).astype(dtype)


# name -> (NumPy/SciPy reference, input domain)
UNARY = {
    "asin": (np.arcsin, "unit"), "acos": (np.arccos, "unit"), "atan": (np.arctan, "real"),
    "sinh": (np.sinh, "real"), "cosh": (np.cosh, "real"), "asinh": (np.arcsinh, "real"),
    "acosh": (np.arccosh, "ge1"), "atanh": (np.arctanh, "unit"),
    "erf": (sp.erf, "real"), "erfc": (sp.erfc, "real"), "erf_inv": (sp.erfinv, "unit"),
    "lgamma": (sp.gammaln, "pos"), "digamma": (sp.digamma, "pos"),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float32(name):
    ref, domain = UNARY[name]
    fn = getattr(lax, name)
    xs = [_sample(domain, s, np.float32) for s in SHAPES]
    out = fn(xs[-1])  # eager
    assert out.dtype == np.float32 and out.shape == (3, 4)
    np.testing.assert_allclose(np.asarray(out), ref(xs[-1].astype(np.float64)), rtol=2e-6, atol=2e-6)
    outs = kiln.jit(lambda xs: [fn(x) for x in xs])(xs)
    for o, x in zip(outs, xs):
        assert o.shape == x.shape and o.dtype == np.float32
        np.testing.assert_allclose(np.asarray(o), ref(x.astype(np.float64)), rtol=2e-6, atol=2e-6)


def test_unary_float64():
    """All of them in one jit under x64, against the float64 references."""
    names = sorted(UNARY)
    xs = {n: _sample(UNARY[n][1], (7,), np.float64) for n in names}
    with kiln.config.override("enable_x64", True):
        outs = kiln.jit(lambda xs: {n: getattr(lax, n)(xs[n]) for n in names})(xs)
    for n in names:
        assert outs[n].dtype == np.float64
        np.testing.assert_allclose(np.asarray(outs[n]), UNARY[n][0](xs[n]), rtol=1e-13, atol=1e-14, err_msg=n)


def test_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0], np.float32)
    outs = kiln.jit(lambda x: [lax.erf(x), lax.erfc(x), lax.sinh(x), lax.cosh(x), lax.atan(x), lax.erf_inv(x)])(x)
    with np.errstate(all="ignore"):
        refs = [sp.erf(x), sp.erfc(x), np.sinh(x), np.cosh(x), np.arctan(x), sp.erfinv(x)]
    for o, r in zip(outs, refs):
        np.testing.assert_allclose(np.asarray(o), r, rtol=1e-6)
    # lgamma has poles at the non-positive integers; digamma is defined for negative non-integers.
    y = np.array([1.0, 2.0, 0.5, -0.5, -2.5, 30.0], np.float32)
    np.testing.assert_allclose(np.asarray(lax.lgamma(y)), sp.gammaln(y.astype(np.float64)), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(lax.digamma(y)), sp.digamma(y.astype(np.float64)), rtol=2e-5, atol=1e-6)
    assert np.isinf(np.asarray(lax.lgamma(np.float32(0.0))))


def test_complex_trig_and_hyperbolic():
    z = (rng.uniform(-2, 2, (5,)) + 1j * rng.uniform(-2, 2, (5,))).astype(np.complex64)
    names = ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"]
    outs = kiln.jit(lambda z: [getattr(lax, n)(z) for n in names])(z)
    for n, o in zip(names, outs):
        assert o.dtype == np.complex64
        np.testing.assert_allclose(np.asarray(o), UNARY[n][0](z.astype(np.complex128)), rtol=1e-5, atol=1e-6,
                                   err_msg=n)


def test_special_functions_reject_complex_and_ints():
    with pytest.raises(TypeError, match=r"kiln.lax.erf: does not accept dtype complex64"):
        lax.erf(np.complex64([1j]))
    with pytest.raises(TypeError, match=r"kiln.lax.asin: does not accept dtype int32"):
        lax.asin(np.int32([1]))
    with pytest.raises(TypeError, match=r"kiln.lax.population_count: does not accept dtype float32"):
        lax.population_count(np.float32([1]))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32])
def test_population_count_and_clz(dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, 7, info.max, info.min, 64], dtype)
    bits = 8 * np.dtype(dtype).itemsize
    as_unsigned = x.astype(np.int64) % (1 << bits)
    pop = np.array([bin(int(v)).count("1") for v in as_unsigned], dtype)
    clz = np.array([bits - int(v).bit_length() for v in as_unsigned], dtype)
    p, c = kiln.jit(lambda x: (lax.population_count(x), lax.clz(x)))(x)
    np.testing.assert_array_equal(np.asarray(p), pop, strict=True)
    np.testing.assert_array_equal(np.asarray(c), clz, strict=True)
    np.testing.assert_array_equal(np.asarray(lax.population_count(x)), pop, strict=True)


def test_population_count_int64():
    with kiln.config.override("enable_x64", True):
        x = np.array([-1, 2**40 + 3], np.int64)
        np.testing.assert_array_equal(np.asarray(lax.population_count(x)), np.int64([64, 3]), strict=True)
        np.testing.assert_array_equal(np.asarray(lax.clz(x)), np.int64([0, 23]), strict=True)


def test_nextafter():
    x = np.array([0.0, 1.0, -1.0, 1.0, np.inf, np.nan], np.float32)
    y = np.array([1.0, 2.0, -2.0, 0.0, 0.0, 1.0], np.float32)
    np.testing.assert_array_equal(np.asarray(lax.nextafter(x, y)), np.nextafter(x, y), strict=True)
    np.testing.assert_array_equal(np.asarray(kiln.jit(lax.nextafter)(x, y)), np.nextafter(x, y), strict=True)
    np.testing.assert_array_equal(np.asarray(lax.nextafter(x, 5.0)), np.nextafter(x, np.float32(5)), strict=True)
    with kiln.config.override("enable_x64", True):
        np.testing.assert_array_equal(np.asarray(lax.nextafter(np.float64(1), np.float64(2))),
                                      np.nextafter(1.0, 2.0))
    with pytest.raises(TypeError, match="kiln.lax.nextafter: operands must have the same dtype"):
        lax.nextafter(np.float32([1]), np.float16([1]))


def test_complex_parts():
    z = np.array([1 + 2j, -3.5 - 0.5j, 0j], np.complex64)
    re, im, c, back = kiln.jit(lambda z: (lax.real(z), lax.imag(z), lax.conj(z),
                                          lax.complex(lax.real(z), lax.imag(z))))(z)
    np.testing.assert_array_equal(np.asarray(re), z.real, strict=True)
    np.testing.assert_array_equal(np.asarray(im), z.imag, strict=True)
    np.testing.assert_array_equal(np.asarray(c), z.conj(), strict=True)
    np.testing.assert_array_equal(np.asarray(back), z, strict=True)
    np.testing.assert_array_equal(np.asarray(lax.real(z)), z.real, strict=True)  # eager
    x = np.float32([1.5, -2])
    np.testing.assert_array_equal(np.asarray(lax.conj(x)), x.astype(np.complex64), strict=True)
    np.testing.assert_array_equal(np.asarray(lax.complex(x, 2.0)), x + 2j, strict=True)
    with kiln.config.override("enable_x64", True):
        out = lax.complex(np.float64([1.0]), np.float64([-1.0]))
        assert out.dtype == np.complex128
        assert lax.imag(out).dtype == np.float64


def test_complex_errors():
    with pytest.raises(TypeError, match=r"kiln.lax.real: takes a complex array, got float32"):
        lax.real(np.float32([1]))
    with pytest.raises(TypeError, match=r"kiln.lax.imag: takes a complex array, got int32"):
        lax.imag(np.int32([1]))
    with pytest.raises(TypeError, match=r"kiln.lax.complex: operands must have the same dtype"):
        lax.complex(np.float32([1]), np.float16([1]))
    with pytest.raises(TypeError, match=r"kiln.lax.complex: takes float32 or float64 parts, got float16"):
        lax.complex(np.float16([1]), np.float16([1]))
    with pytest.raises(TypeError, match=r"kiln.lax.conj: does not accept dtype int32"):
        lax.conj(np.int32([1]))


def test_bitcast_convert_type_same_width():
    x = np.array([1.0, -0.0, np.inf, 3.5], np.float32)
    np.testing.assert_array_equal(np.asarray(lax.bitcast_convert_type(x, np.int32)), x.view(np.int32), strict=True)
    np.testing.assert_array_equal(np.asarray(lax.bitcast_convert_type(x, np.uint32)), x.view(np.uint32), strict=True)
    back = kiln.jit(lambda x: lax.bitcast_convert_type(lax.bitcast_convert_type(x, np.int32), np.float32))(x)
    np.testing.assert_array_equal(np.asarray(back), x, strict=True)
    assert lax.bitcast_convert_type(x, np.float32) is x  # no-op
    assert lax.bitcast_convert_type(np.float32(2.0), np.int32).shape == ()


def test_bitcast_convert_type_width_changing():
    x = np.array([1.0, -2.5, 3e8], np.float32)
    narrow = lax.bitcast_convert_type(x, np.uint8)
    assert narrow.shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(narrow), x.view(np.uint8).reshape(3, 4), strict=True)
    halves = lax.bitcast_convert_type(x, np.int16)
    np.testing.assert_array_equal(np.asarray(halves), x.view(np.int16).reshape(3, 2), strict=True)
    wide = kiln.jit(lambda b: lax.bitcast_convert_type(b, np.float32))(np.asarray(narrow))
    np.testing.assert_array_equal(np.asarray(wide), x, strict=True)
    scalar = lax.bitcast_convert_type(np.array([7, 0], np.uint16), np.int32)
    assert scalar.shape == ()
    np.testing.assert_array_equal(np.asarray(scalar), np.array([7, 0], np.uint16).view(np.int32)[0])


def test_bitcast_convert_type_errors():
    with pytest.raises(ValueError, match=r"kiln.lax.bitcast_convert_type: casting uint8 to the wider float32 needs "
                                         r"a last dimension of size 4, got shape \(3, 3\)"):
        lax.bitcast_convert_type(np.zeros((3, 3), np.uint8), np.float32)
    with pytest.raises(TypeError, match="kiln.lax.bitcast_convert_type: bool is not allowed"):
        lax.bitcast_convert_type(np.zeros(3, bool), np.uint8)
    for x, to in ((np.zeros(3, np.complex64), np.float32), (np.zeros((3, 2), np.uint32), np.complex64)):
        with pytest.raises(TypeError, match=rf"kiln.lax.bitcast_convert_type: complex values are not allowed \(from "
                                            rf"{x.dtype.name} to {np.dtype(to).name}\); bitcast kiln.lax.real"):
            kiln.jit(lambda v: lax.bitcast_convert_type(v, to))(x)  # (it failed in XLA's compiler)
    z = np.array([1 + 2j], np.complex64)
    np.testing.assert_array_equal(lax.bitcast_convert_type(z, np.complex64), z)  # the same dtype: x itself


def test_compositions():
    x = _sample("real", (3, 4), np.float32)
    e2, sq, rc, p3, p0, pm2 = kiln.jit(lambda x: (lax.exp2(x), lax.square(x), lax.reciprocal(x),
                                                  lax.integer_pow(x, 3), lax.integer_pow(x, 0),
                                                  lax.integer_pow(x, -2)))(x)
    np.testing.assert_allclose(np.asarray(e2), np.exp2(x), rtol=2e-6)
    np.testing.assert_allclose(np.asarray(sq), x * x, rtol=1e-7)
    np.testing.assert_allclose(np.asarray(rc), 1 / x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(p3), x.astype(np.float64) ** 3, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(p0), np.ones_like(x), strict=True)
    np.testing.assert_allclose(np.asarray(pm2), x.astype(np.float64) ** -2, rtol=1e-6)
    i = np.array([3, -2, 0, 7], np.int32)
    np.testing.assert_array_equal(np.asarray(lax.integer_pow(i, 5)), i ** 5, strict=True)
    np.testing.assert_array_equal(np.asarray(lax.exp2(np.float32([0, 1, 10, -1]))), np.float32([1, 2, 1024, 0.5]))


def test_integer_pow_errors():
    with pytest.raises(ValueError, match=r"kiln.lax.integer_pow: integers to negative powers are not allowed"):
        lax.integer_pow(np.int32([2]), -1)
    with pytest.raises(TypeError, match=r"kiln.lax.integer_pow: the exponent must be a static Python int, got float"):
        lax.integer_pow(np.float32([2]), 2.0)
    with pytest.raises(TypeError, match=r"kiln.lax.exp2: does not accept dtype int32"):
        lax.exp2(np.int32([2]))


def test_chlo_ops_are_emitted_and_compile():
    """CHLO ops go into the module as they are; XLA's compile entry point legalizes them."""
    x = np.float32([0.5])
    lowered = kiln.jit(lambda x: lax.erf_inv(x) + lax.lgamma(x) + lax.asinh(x)).lower(x)
    text = lowered.as_text()
    for op in ("chlo.erf_inv", "chlo.lgamma", "chlo.asinh"):
        assert op in text
    out = kiln.jit(lambda x: lax.erf_inv(x) + lax.lgamma(x) + lax.asinh(x))(x)
    np.testing.assert_allclose(np.asarray(out), sp.erfinv(0.5) + sp.gammaln(0.5) + np.arcsinh(0.5), rtol=1e-6)


def test_square_and_logistic_are_emitted_as_jaxs():
    # square: a primitive emitted as chlo.square (integers: a multiply); logistic: 1 / (1 + exp(-x)), not
    # stablehlo.logistic, whose XLA expansion rounds bfloat16 differently
    x = np.float32([0.5, -2.0])
    text = kiln.jit(lambda x: (lax.square(x), lax.logistic(x))).lower(x).as_text()
    assert "chlo.square" in text and "logistic" not in text
    assert re.search(r"stablehlo.negate .*\n.*stablehlo.exponential", text)
    assert "chlo.square" not in kiln.jit(lax.square).lower(np.int32([3])).as_text()
    assert kiln.make_jaxpr(lax.square)(x).jaxpr.eqns[0].primitive is lax.square_p
    import ml_dtypes
    b = np.asarray(lax.logistic(np.asarray([5.28125, -3.0], ml_dtypes.bfloat16)), np.float32)
    np.testing.assert_array_equal(b, np.float32([0.9921875, 0.04736328125]))  # JAX's bits (the first rounds down)
    z = np.complex64([3 + 4j, 0.5 - 2j])
    np.testing.assert_allclose(np.asarray(lax.square(z)), z.astype(np.complex128) ** 2, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(lax.square(np.int32([3, -4, 2**16]))), np.int32([9, 16, 0]))


def test_bfloat16_and_float16():
    import ml_dtypes
    for dt in (np.float16, ml_dtypes.bfloat16):
        x = np.array([0.25, 0.5, 2.0], dt)
        out = kiln.jit(lambda x: (lax.erf(x), lax.sinh(x), lax.lgamma(x)))(x)
        refs = (sp.erf, np.sinh, sp.gammaln)
        for o, r in zip(out, refs):
            assert o.dtype == dt
            np.testing.assert_allclose(np.asarray(o).astype(np.float32), r(x.astype(np.float64)), rtol=1e-2)


def test_lax_functions_on_tracers_and_knp_arrays():
    x = knp.asarray(np.float32([0.1, 0.2]))
    np.testing.assert_allclose(np.asarray(lax.atanh(x)), np.arctanh(np.float32([0.1, 0.2])), rtol=1e-6)
