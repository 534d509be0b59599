"""kiln.numpy elementwise functions against NumPy: eagerly and under jit, several shapes (0-d and
size 0 included) and dtypes, special values, numerically hard inputs, and error messages.

To keep compilations few, each function runs eagerly on one shape and under one jit for all shapes.
"""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(1)
SHAPES = [(), (0,), (3, 4)]
F32 = dict(rtol=2e-6, atol=1e-6)
F64 = dict(rtol=1e-13, atol=1e-14)
# No subnormals: XLA's CPU code flushes them to zero.
SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, 3e38, -1e-30], np.float32)


def _sample(domain: str, shape, dtype):
    lo, hi = {"real": (-3, 3), "unit": (-0.99, 0.99), "ge1": (1.0, 5.0), "pos": (0.1, 6.0),
              "wide": (-50, 50)}[domain]
    return rng.uniform(lo, hi, shape).astype(dtype)


# kiln.numpy name -> (NumPy reference, input domain)
UNARY = {
    "arcsin": (np.arcsin, "unit"), "arccos": (np.arccos, "unit"), "arctan": (np.arctan, "real"),
    "sinh": (np.sinh, "real"), "cosh": (np.cosh, "real"), "arcsinh": (np.arcsinh, "real"),
    "arccosh": (np.arccosh, "ge1"), "arctanh": (np.arctanh, "unit"),
    "asin": (np.arcsin, "unit"), "acos": (np.arccos, "unit"), "atan": (np.arctan, "real"),
    "asinh": (np.arcsinh, "real"), "acosh": (np.arccosh, "ge1"), "atanh": (np.arctanh, "unit"),
    "exp2": (np.exp2, "wide"), "log2": (np.log2, "pos"), "log10": (np.log10, "pos"),
    "square": (np.square, "real"), "reciprocal": (np.reciprocal, "pos"), "sinc": (np.sinc, "real"),
    "deg2rad": (np.deg2rad, "wide"), "rad2deg": (np.rad2deg, "real"), "degrees": (np.degrees, "real"),
    "radians": (np.radians, "wide"), "fabs": (np.fabs, "real"), "trunc": (np.trunc, "wide"),
    "fix": (np.fix, "wide"), "rint": (np.rint, "wide"), "signbit": (np.signbit, "real"),
    "isnan": (np.isnan, "real"), "isinf": (np.isinf, "real"), "isfinite": (np.isfinite, "real"),
    "isposinf": (np.isposinf, "real"), "isneginf": (np.isneginf, "real"), "nan_to_num": (np.nan_to_num, "real"),
    "angle": (np.angle, "real"), "real": (np.real, "real"), "imag": (np.imag, "real"), "conj": (np.conj, "real"),
}


def _check(out, expected, tol, where=""):
    expected = np.asarray(expected)
    assert isinstance(out, kiln.Array), where
    assert out.shape == expected.shape, (where, out.shape, expected.shape)
    assert out.dtype == expected.dtype, (where, out.dtype, expected.dtype)
    np.testing.assert_allclose(np.asarray(out), expected, err_msg=where, **tol)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float32(name):
    ref, domain = UNARY[name]
    fn = getattr(knp, name)
    xs = [_sample(domain, s, np.float32) for s in SHAPES]
    tol = dict(rtol=1e-5, atol=1e-6) if name in ("exp2", "log10") else F32
    _check(fn(xs[-1]), ref(xs[-1]), tol, "eager")
    outs = kiln.jit(lambda xs: [fn(x) for x in xs])(xs)
    for o, x in zip(outs, xs):
        _check(o, ref(x), tol, f"jit {x.shape}")


def test_unary_float64():
    names = sorted(UNARY)
    xs = {n: _sample(UNARY[n][1], (6,), np.float64) for n in names}
    with kiln.config.override("enable_x64", True):
        outs = kiln.jit(lambda xs: {n: getattr(knp, n)(xs[n]) for n in names})(xs)
    for n in names:
        _check(outs[n], UNARY[n][0](xs[n]), F64, n)


def test_unary_on_special_values():
    names = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "fabs", "trunc", "fix", "rint",
             "square", "sinc", "exp2", "log2", "log10", "arctan", "sinh", "cosh", "arcsinh", "nan_to_num",
             "deg2rad", "angle"]
    outs = kiln.jit(lambda x: {n: getattr(knp, n)(x) for n in names})(SPECIAL)
    with np.errstate(all="ignore"):
        for n in names:
            _check(outs[n], getattr(np, n)(SPECIAL), dict(rtol=1e-6, atol=0), n)
    assert np.asarray(knp.signbit(np.float32(-0.0)))  # eager, 0-d
    assert np.asarray(knp.signbit(np.float32(-np.nan)))


def test_integer_inputs_become_float():
    """Integers promote to the default float (NumPy would give float64; kiln float32, as JAX)."""
    x = np.array([1, 2, 3, 5], np.int32)
    names = ["sinh", "arctan", "exp2", "log2", "log10", "sinc", "deg2rad", "rint", "fabs", "arcsinh", "angle"]
    outs = kiln.jit(lambda x: {n: getattr(knp, n)(x) for n in names})(x)
    for n in names:
        _check(outs[n], getattr(np, n)(x).astype(np.float32), dict(rtol=1e-6, atol=1e-7), n)
    # As JAX (and unlike NumPy's integer reciprocal): 1 / x as a float.
    _check(knp.reciprocal(x), (1 / x).astype(np.float32), dict(rtol=1e-6, atol=0), "reciprocal")
    # Functions that keep integers as integers.
    for n in ("square", "trunc", "fix", "real", "conj"):
        _check(getattr(knp, n)(x), getattr(np, n)(x), F32, n)
    _check(knp.imag(x), np.zeros(4, np.int32), F32, "imag")
    for n in ("isnan", "isinf", "isposinf", "isneginf", "isfinite", "signbit"):
        _check(getattr(knp, n)(x), getattr(np, n)(x), F32, n)
    _check(knp.signbit(np.array([-1, 0, 2], np.int8)), np.array([True, False, False]), F32, "signbit int8")
    _check(knp.signbit(np.array([1, 0], np.uint8)), np.array([False, False]), F32, "signbit uint8")
    _check(knp.square(np.array([True, False])), np.array([1, 0], np.int32), F32, "square bool")
    _check(knp.nan_to_num(x), x, F32, "nan_to_num int")
    _check(knp.sinh(3), np.float32(np.sinh(3)), F32, "python int")


def test_complex64_functions():
    z = (rng.uniform(-2, 2, (5,)) + 1j * rng.uniform(-2, 2, (5,))).astype(np.complex64)
    z[0] = 0
    names = ["real", "imag", "conj", "conjugate", "angle", "abs", "exp", "log", "sqrt", "square", "arcsin",
             "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "exp2", "log2", "log10",
             "isnan", "isinf", "isfinite", "isreal", "iscomplex", "sin", "cos", "tanh", "rint", "reciprocal",
             "negative", "sign"]
    outs = kiln.jit(lambda z: {n: getattr(knp, n)(z) for n in names})(z)
    with np.errstate(all="ignore"):
        for n in names:
            if n == "sign":  # NumPy 2: z / |z|, as kiln (stablehlo.sign)
                expected = np.where(z == 0, 0, z / np.abs(z)).astype(np.complex64)
            else:
                expected = getattr(np, n)(z)
            _check(outs[n], expected, dict(rtol=2e-5, atol=2e-6), n)
    _check(knp.angle(z, deg=True), np.angle(z, deg=True), dict(rtol=2e-6, atol=1e-5), "angle deg")
    _check(knp.real(z), z.real, F32, "eager real")
    _check(knp.imag(z), z.imag, F32, "eager imag")
    _check(knp.conj(z), z.conj(), F32, "eager conj")
    assert knp.iscomplexobj(z) and not knp.isrealobj(z) and knp.isrealobj(np.float32(1))
    nan_z = np.array([complex(np.nan, 1), complex(1, np.inf), complex(np.inf, np.nan), 1 + 1j], np.complex64)
    names = ("isnan", "isinf", "isfinite", "nan_to_num")
    outs = kiln.jit(lambda z: [getattr(knp, n)(z) for n in names])(nan_z)
    with np.errstate(all="ignore"):
        for n, o in zip(names, outs):
            _check(o, getattr(np, n)(nan_z), F32, n)
    # Array properties go through the same functions.
    a = knp.asarray(z)
    _check(a.real, z.real, F32, ".real")
    _check(a.imag, z.imag, F32, ".imag")
    _check(a.conj(), z.conj(), F32, ".conj()")


def test_complex128():
    z = np.array([1 + 2j, -0.5 - 3j], np.complex128)
    with kiln.config.override("enable_x64", True):
        re, im, ang = kiln.jit(lambda z: (knp.real(z), knp.imag(z), knp.angle(z)))(z)
    _check(re, z.real, F64)
    _check(im, z.imag, F64)
    _check(ang, np.angle(z), F64)


BINARY = {
    "hypot": np.hypot, "arctan2": np.arctan2, "atan2": np.arctan2, "copysign": np.copysign,
    "heaviside": np.heaviside, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
    "nextafter": np.nextafter, "float_power": np.float_power,
}
BINARY_SHAPES = [((), ()), ((0,), (0,)), ((3, 4), (4,)), ((2, 1), (1, 3))]


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float32(name):
    ref = BINARY[name]
    fn = getattr(knp, name)
    domain = "pos" if name == "float_power" else "real"
    pairs = [(_sample(domain, a, np.float32), _sample("real", b, np.float32)) for a, b in BINARY_SHAPES]
    if name == "heaviside":
        pairs[2][0][0, :2] = 0.0

    def expected(x, y):
        return ref(x, y).astype(np.float32)  # float_power: NumPy widens to float64; kiln keeps float32 (as JAX)
    x, y = pairs[2]
    _check(fn(x, y), expected(x, y), F32, "eager")
    outs = kiln.jit(lambda pairs: [fn(x, y) for x, y in pairs])(pairs)
    for o, (x, y) in zip(outs, pairs):
        _check(o, expected(x, y), F32, f"jit {x.shape} {y.shape}")


def test_binary_float64_and_ints():
    names = sorted(BINARY)
    x, y = _sample("pos", (5,), np.float64), _sample("real", (5,), np.float64)
    with kiln.config.override("enable_x64", True):
        outs = kiln.jit(lambda x, y: {n: getattr(knp, n)(x, y) for n in names})(x, y)
    for n in names:
        _check(outs[n], BINARY[n](x, y), F64, n)
    i, j = np.array([3, -4, 0, 5], np.int32), np.array([4, 3, 0, -2], np.int32)
    outs = kiln.jit(lambda i, j: {n: getattr(knp, n)(i, j) for n in names if n != "nextafter"})(i, j)
    with np.errstate(all="ignore"):
        for n, o in outs.items():
            _check(o, BINARY[n](i, j).astype(np.float32), dict(rtol=1e-6, atol=1e-7), n)


def test_binary_special_values():
    x = np.array([np.inf, np.inf, -np.inf, np.nan, np.nan, 0.0, -0.0, 1.0, -np.inf], np.float32)
    y = np.array([np.nan, np.inf, -np.inf, 1.0, np.inf, -0.0, 0.0, -np.inf, 1.0], np.float32)
    names = ["hypot", "arctan2", "copysign", "heaviside", "logaddexp", "logaddexp2", "nextafter"]
    outs = kiln.jit(lambda x, y: {n: getattr(knp, n)(x, y) for n in names})(x, y)
    with np.errstate(all="ignore"):
        for n in names:
            _check(outs[n], getattr(np, n)(x, y), dict(rtol=1e-6, atol=0), n)
    # copysign takes the sign bit, also of -0.0 and of NaN.
    assert np.signbit(np.asarray(knp.copysign(np.float32(1.0), np.float32(-0.0))))


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_numerically_hard_inputs():
    big = np.float32([3e30, 1e38, 3e38, 1e-30, 2e-38, 0.0])
    big2 = np.float32([4e30, 1e38, 3e38, 1e-30, 2e-38, 0.0])
    _check(knp.hypot(big, big2), np.hypot(big, big2), dict(rtol=1e-6, atol=0), "hypot no overflow/underflow")
    assert np.isfinite(np.asarray(knp.hypot(np.float32(3e38), np.float32(1e37))))
    _check(knp.logaddexp(np.float32(1000), np.float32(1000)), np.float32(1000 + np.log(2)), F32, "logaddexp big")
    _check(knp.logaddexp(np.float32(-1000), np.float32(-1001)), np.logaddexp(np.float32(-1000), np.float32(-1001)),
           F32, "logaddexp small")
    _check(knp.logaddexp2(np.float32(500), np.float32(500)), np.float32(501), F32, "logaddexp2 big")
    _check(knp.log1p(np.float32([1e-10, -1e-10])), np.float32([1e-10, -1e-10]), dict(rtol=1e-6, atol=0), "log1p")
    _check(knp.expm1(np.float32(1e-10)), np.float32(1e-10), dict(rtol=1e-6, atol=0), "expm1")
    _check(knp.sinc(np.float32([0.0, 1e-20, 1.0])), np.sinc(np.float32([0.0, 1e-20, 1.0])), dict(rtol=1e-6, atol=1e-7),
           "sinc near 0")
    _check(knp.exp2(np.float32([-126, 127, 128])), np.exp2(np.float32([-126, 127, 128])), dict(rtol=1e-6, atol=0),
           "exp2 extremes")


def test_modf():
    x = np.array([2.5, -3.75, 0.0, -0.0, np.inf, -np.inf, 7.0], np.float32)
    frac, whole = kiln.jit(knp.modf)(x)
    ef, ew = np.modf(x)
    _check(frac, ef, dict(rtol=0, atol=0))
    _check(whole, ew, dict(rtol=0, atol=0))
    assert np.array_equal(np.signbit(np.asarray(frac)), np.signbit(ef))
    f2, w2 = knp.modf(np.int32([3, -2]))
    _check(f2, np.float32([0, -0.0]), F32)
    _check(w2, np.float32([3, -2]), F32)


def test_rint_rounds_half_to_even():
    x = np.float32([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999997])
    _check(knp.rint(x), np.rint(x), dict(rtol=0, atol=0))


def test_nan_to_num_options():
    with np.errstate(all="ignore"):
        _check(knp.nan_to_num(SPECIAL, nan=-1.0, posinf=9.0, neginf=-9.0),
               np.nan_to_num(SPECIAL, nan=-1.0, posinf=9.0, neginf=-9.0), F32)
        _check(knp.nan_to_num(SPECIAL, posinf=1e30), np.nan_to_num(SPECIAL, posinf=1e30), F32)
    with kiln.config.override("enable_x64", True):
        x64 = np.array([np.nan, np.inf, -np.inf], np.float64)
        _check(knp.nan_to_num(x64), np.nan_to_num(x64), F64)


def test_clip_signatures():
    x = np.array([-3.0, -1.0, 0.5, 2.0, 7.0], np.float32)
    _check(knp.clip(x, -1, 2), np.clip(x, -1, 2), F32)
    _check(knp.clip(x, min=0), np.clip(x, 0, None), F32)
    _check(knp.clip(x, max=1.5), np.clip(x, None, 1.5), F32)
    _check(knp.clip(x, a_min=-2, a_max=1), np.clip(x, -2, 1), F32)
    _check(knp.clip(a=x, min=-2), np.clip(x, -2, None), F32)
    _check(knp.clip(x, np.float32([0, 0, 0, 0, 0]), 1), np.clip(x, 0, 1), F32)
    _check(knp.clip(x, 3, 1), np.clip(x, 3, 1), F32)  # min > max gives max
    _check(knp.clip(x), x, F32)
    _check(knp.asarray(x).clip(0, 1), np.clip(x, 0, 1), F32)
    _check(knp.clip(np.int32([-5, 5, 50]), 0, 10), np.int32([0, 5, 10]), F32)
    _check(kiln.jit(lambda x: knp.clip(x, min=-1, max=1))(x), np.clip(x, -1, 1), F32)


def test_clip_errors():
    x = np.float32([1.0])
    with pytest.raises(TypeError, match="kiln.numpy.clip: pass min= or a_min=, not both"):
        knp.clip(x, min=0, a_min=0)
    with pytest.raises(TypeError, match="kiln.numpy.clip: pass max= or a_max=, not both"):
        knp.clip(x, max=0, a_max=0)
    with pytest.raises(TypeError, match="kiln.numpy.clip: pass the array once"):
        knp.clip(x, a=x)
    with pytest.raises(TypeError, match="kiln.numpy.clip: complex values have no ordering"):
        knp.clip(np.complex64([1j]), 0, 1)
    with pytest.raises(TypeError, match="kiln.numpy.clip: argument 1 is a list"):
        knp.clip(x, [0.0], 1)


def test_isclose_and_allclose():
    a = np.array([1.0, 1.0 + 1e-6, 1e-9, np.inf, np.inf, np.nan, 0.0, 100.0], np.float32)
    b = np.array([1.0, 1.0, 0.0, np.inf, -np.inf, np.nan, 1e-7, 100.001], np.float32)
    f = kiln.jit(lambda a, b: (knp.isclose(a, b), knp.isclose(a, b, equal_nan=True),
                               knp.isclose(a, b, rtol=0, atol=1e-8), knp.allclose(a, b),
                               knp.allclose(a, a, equal_nan=True)))
    c1, c2, c3, all1, all2 = f(a, b)
    _check(c1, np.isclose(a, b), F32)
    _check(c2, np.isclose(a, b, equal_nan=True), F32)
    _check(c3, np.isclose(a, b, rtol=0, atol=1e-8), F32)
    assert all1.shape == () and not bool(all1)
    assert bool(all2)
    _check(knp.isclose(np.int32([1, 2]), np.int32([1, 3])), np.array([True, False]), F32)
    _check(knp.isclose(a[:3, None], b[None, :3]), np.isclose(a[:3, None], b[None, :3]), F32)
    z = np.array([1 + 1j, 1 + 1.1j], np.complex64)
    _check(knp.isclose(z, np.complex64(1 + 1j)), np.isclose(z, 1 + 1j), F32)
    assert bool(knp.allclose(np.float32([]), np.float32([])))


def test_array_equal_and_equiv():
    x = np.array([[1, 2], [3, 4]], np.int32)
    assert bool(knp.array_equal(x, x)) and not bool(knp.array_equal(x, x + 1))
    assert not bool(knp.array_equal(x, x[0]))  # different shapes
    assert not bool(knp.array_equal(x, x.astype(np.float32) + 0.5))
    n = np.float32([np.nan, 1.0])
    assert not bool(knp.array_equal(n, n)) and bool(knp.array_equal(n, n, equal_nan=True))
    assert bool(knp.array_equiv(x[0], np.array([[1, 2], [1, 2]], np.int32)))
    assert not bool(knp.array_equiv(x, np.int32([1, 2, 3])))
    assert bool(kiln.jit(knp.array_equal)(x, x))
    assert knp.array_equal(x, x[0]).dtype == np.bool_


def test_bitwise_count():
    x = np.array([0, 7, -1, -8, 127], np.int8)
    _check(knp.bitwise_count(x), np.bitwise_count(x), F32)
    u = np.array([0, 255, 1 << 31, 12], np.uint32)
    _check(knp.bitwise_count(u), np.bitwise_count(u), F32)
    with pytest.raises(TypeError, match="kiln.numpy.bitwise_count: needs integer or boolean inputs, got float32"):
        knp.bitwise_count(np.float32([1]))


def test_error_messages():
    f = np.float32([1.0])
    with pytest.raises(TypeError, match="kiln.numpy.bitwise_and: not supported for floating-point inputs"):
        knp.bitwise_and(f, f)
    with pytest.raises(TypeError, match="kiln.numpy.isposinf: not supported for complex inputs"):
        knp.isposinf(np.complex64([1]))
    with pytest.raises(TypeError, match="kiln.numpy.fabs: not supported for complex inputs"):
        knp.fabs(np.complex64([1]))
    with pytest.raises(TypeError, match="kiln.numpy.signbit: not supported for complex inputs"):
        knp.signbit(np.complex64([1]))
    with pytest.raises(TypeError, match="kiln.numpy.hypot: not supported for complex inputs"):
        knp.hypot(np.complex64([1]), 1.0)
    with pytest.raises(TypeError, match="kiln.numpy.logaddexp: not supported for complex inputs"):
        knp.logaddexp(np.complex64([1]), 1.0)
    with pytest.raises(TypeError, match="kiln.numpy.trunc: not supported for complex inputs"):
        knp.trunc(np.complex64([1]))
    with pytest.raises(TypeError, match="kiln.numpy.arcsin: argument 0 is a list"):
        knp.arcsin([0.5])
    with pytest.raises(ValueError, match=r"kiln.numpy.hypot: operands could not be broadcast together with shapes "
                                         r"\(2,\) \(3,\)"):
        knp.hypot(np.float32([1, 2]), np.float32([1, 2, 3]))
    with pytest.raises(TypeError, match="kiln.numpy.nan_to_num: argument 0 of type str"):
        knp.nan_to_num(np.float32([1]), nan="zero")


def test_weak_types_are_kept():
    """A Python scalar operand keeps the array's dtype (JAX's weak types)."""
    x16 = np.float16([1.0, 2.0])
    assert knp.hypot(x16, 3.0).dtype == np.float16
    assert knp.logaddexp(x16, 0.0).dtype == np.float16
    assert knp.arctan2(2.0, x16).dtype == np.float16
    assert knp.sinh(1.0).weak_type


def test_comparisons_of_weakly_typed_values_are_weak_bools():
    """As JAX's: a comparison (or is-test) is weakly typed when all its operands are; promotion treats a weak bool
    as bool."""
    w = kiln.jit(lambda x: x <= 0.0)(0.0)
    assert w.dtype == np.bool_ and w.weak_type and bool(w)
    assert knp.isnan(2.0).weak_type and (knp.asarray(2.0) > 1).weak_type and knp.equal(1, 1).weak_type
    assert (~w).weak_type and not (w & True).weak_type  # a Python bool is strongly typed
    assert not (knp.ones(2) > 1.0).weak_type and not (knp.float32(2.0) > 1).weak_type
    assert (w + 1).dtype == np.int32 and (w + 1).weak_type  # a weak bool promotes as bool
    assert (w * knp.ones(2, knp.int8)).dtype == np.int8 and (w + knp.ones(2, knp.bfloat16)).dtype == knp.bfloat16


def test_binary_functions_of_two_weak_bools_are_strong():
    """JAX's promotion never gives a weak bool: two weak bools joined by a kiln.numpy binary function (``&``,
    ``logical_and``, ``where``) give a strong bool, under jit as eagerly (docs/control-flow.md's
    ``jnp.logical_and(x % 2 == 0, x > 0)`` of a Python int); a unary one (``~``, ``logical_not``) keeps the weak
    type."""
    def both(x):
        a, b = x % 2 == 0, x > 0
        return (a, jnp_and(a, b), a & b, a | b, a ^ b, knp.logical_or(a, b), knp.where(a, a, b), ~a,
                knp.logical_not(a))

    jnp_and = knp.logical_and
    for outs in (kiln.jit(both)(24), both(knp.add(20, 4))):
        assert all(o.dtype == np.bool_ for o in outs)
        assert [o.weak_type for o in outs] == [True] + [False] * 6 + [True, True]
        assert [bool(o) for o in outs] == [True] * 4 + [False, True, True, False, False]


def test_python_scalar_arguments():
    """Python scalars (weakly typed) through functions that call each other."""
    assert float(knp.hypot(3.0, 4)) == 5.0
    assert knp.hypot(3.0, 4).weak_type
    assert bool(knp.isclose(1.0, 1.0 + 1e-9, equal_nan=True)) and not bool(knp.isclose(1.0, np.nan))
    frac, whole = knp.modf(-2.5)
    assert (float(frac), float(whole)) == (-0.5, -2.0)
    assert np.signbit(float(knp.copysign(1.0, -0.0)))
    assert float(knp.heaviside(0.0, 0.5)) == 0.5
    np.testing.assert_allclose(float(knp.logaddexp(1.0, 2)), np.logaddexp(1.0, 2.0), rtol=1e-6)
    assert bool(knp.array_equal(2.0, 2)) and bool(knp.allclose(1, 1.0))
    assert float(knp.nan_to_num(float("inf"))) == np.finfo(np.float32).max
    assert int(knp.clip(5, 0, 3)) == 3
    out = kiln.jit(lambda x: (knp.copysign(2.0, x), knp.isclose(x, 1.0), knp.modf(x)[0]))(np.float32(-1.25))
    np.testing.assert_allclose([float(o) for o in out], [-2.0, 0.0, -0.25])


def test_frexp_and_ldexp():
    x = np.array([0.0, -0.0, 1.0, -3.5, 1e30, 1e-30, np.inf, -np.inf, np.nan, 6e-39, -1e-45, 0.75], np.float32)
    n = np.array([0, 1, -1, 100, -100, 300, -300, 5, 2, 120, -1, 3], np.int32)
    em, ee = np.frexp(x)
    m, e = knp.frexp(x)  # eager
    _check(m, em, dict(rtol=0, atol=0))  # subnormals split exactly, as NumPy
    _check(e, ee, dict(rtol=0, atol=0))
    h = np.float16([1.0, 3.0, 1e-6])
    hn = np.int32([15, 16, -14, -20])

    def f32_and_f16(x, n, h, hn):
        return (knp.frexp(x), knp.frexp(x[:0]), knp.ldexp(x, n), knp.ldexp(np.float32(1e-30), 120),
                knp.ldexp(np.float32(3e38), np.int32(-250)), knp.ldexp(h[:1], hn), knp.frexp(h), knp.ldexp(3, 2))
    (m, e), (m2, e2), ld, big, small, ldh, (fm, fe), twelve = kiln.jit(f32_and_f16)(x, n, h, hn)
    _check(m, em, dict(rtol=0, atol=0))
    _check(e, ee, dict(rtol=0, atol=0))
    assert m2.shape == e2.shape == (0,)
    with np.errstate(all="ignore"):
        expected = np.ldexp(x, n)
        expected[9] = 0.0  # XLA flushes the subnormal input to zero on CPU
        _check(ld, expected, dict(rtol=0, atol=0))
        # A product 2**n that overflows on its own, with a result that does not.
        _check(big, np.ldexp(np.float32(1e-30), 120), dict(rtol=0, atol=0))
        _check(small, np.ldexp(np.float32(3e38), -250), dict(rtol=0, atol=0))
        _check(ldh, np.ldexp(h[:1], hn), dict(rtol=0, atol=0))
    _check(fm, np.frexp(h)[0], dict(rtol=0, atol=0))
    _check(fe, np.frexp(h)[1], dict(rtol=0, atol=0))
    _check(twelve, np.float32(12), dict(rtol=0, atol=0))
    y = np.array([1e300, 1e-300, 3.0, 5e-320])
    with kiln.config.override("enable_x64", True):
        (ym, ye), yl = kiln.jit(lambda y, k: (knp.frexp(y), knp.ldexp(y[:3], k)))(y, np.int64([10, -10, 2000]))
    _check(ym, np.frexp(y)[0], dict(rtol=0, atol=0))
    _check(ye, np.frexp(y)[1], dict(rtol=0, atol=0))
    with np.errstate(all="ignore"):
        _check(yl, np.ldexp(y[:3], [10, -10, 2000]), dict(rtol=0, atol=0))
    with pytest.raises(TypeError, match="kiln.numpy.ldexp: the exponent must be an integer array, got float32"):
        knp.ldexp(np.float32([1]), np.float32([1]))
    with pytest.raises(TypeError, match="kiln.numpy.frexp: not supported for complex inputs"):
        knp.frexp(np.complex64([1]))


def test_signbit_of_subnormals_and_negative_zero():
    x = np.array([-1e-45, -0.0, 1e-45, -np.nan, np.nan], np.float32)
    _check(kiln.jit(knp.signbit)(x), np.signbit(x), dict(rtol=0, atol=0))
    _check(knp.signbit(x), np.signbit(x), dict(rtol=0, atol=0))


def test_spacing_and_numpy2_aliases():
    x = np.array([1.0, -1.0, 1e10, -3.5, np.inf, np.nan], np.float32)
    with np.errstate(all="ignore"):
        _check(kiln.jit(knp.spacing)(x), np.spacing(x), dict(rtol=0, atol=0))
    i = np.array([5, -3], np.int32)
    _check(knp.pow(i, 2), i ** 2, F32)
    _check(knp.bitwise_invert(i), ~i, F32)
    _check(knp.bitwise_left_shift(i, 1), i << 1, F32)
    _check(knp.bitwise_right_shift(i, 1), i >> 1, F32)


def test_logaddexp_derivative_is_jaxs_rule():
    # d/dx1 = exp(x1 - out) with +inf taken as 0 in both (JAX's custom rule, not the derivative of the stable
    # formula): finite at infinities, and the same float32 numbers as JAX's; softplus and logaddexp2 share it.
    g = kiln.grad(knp.logaddexp, argnums=(0, 1))
    f32 = np.float32
    for a, b in [(1.0, 2.0), (0.3, -0.7), (-5.3, 0.0)]:
        out = knp.logaddexp(f32(a), f32(b))
        want = [np.asarray(kiln.lax.exp(f32(v) - out)) for v in (a, b)]
        assert [np.asarray(v) for v in g(f32(a), f32(b))] == want, (a, b)
    assert [float(v) for v in g(f32(np.inf), f32(1.0))] == [1.0, float(kiln.lax.exp(f32(1.0)))]  # (JAX: [1, e])
    assert [float(v) for v in g(f32(np.inf), f32(np.inf))] == [1.0, 1.0]
    assert [float(v) for v in g(f32(-np.inf), f32(1.0))] == [0.0, 1.0]
    x = f32(-5.3)
    assert kiln.grad(kiln.nn.softplus)(x) == kiln.lax.exp(x - kiln.nn.softplus(x))
    assert kiln.grad(lambda a: knp.logaddexp2(a, 1.0))(0.5) == kiln.lax.exp2(f32(0.5) - knp.logaddexp2(0.5, 1.0))


def test_a_concrete_integer_array_exponent_is_exact_multiplication():
    # as jax.numpy.power: a concrete integer scalar exponent of any kind (a NumPy int, a 0-d int32 array, optax's
    # step count) is integer_pow, exact repeated multiplication; traced, it is lax.pow (which rounds otherwise)
    base = np.float32(0.999)
    want = base * base * base
    for e in (np.int32(3), np.asarray(3, np.int64), knp.asarray(3, knp.int32), knp.asarray(np.uint8(3))):
        got = knp.power(base, e)
        assert got.dtype == np.float32 and not got.weak_type
        np.testing.assert_array_equal(got, want)
    assert "integer_pow" in str(kiln.make_ir(lambda x: x ** knp.asarray(3))(knp.ones(2)))
    assert "integer_pow" not in str(kiln.make_ir(lambda x, n: x ** n)(knp.ones(2), knp.asarray(3)))
    np.testing.assert_array_equal(knp.power(knp.asarray([2, 3]), np.int64(2)), [4, 9])
    with pytest.raises(ValueError, match="integers to negative integer powers are not allowed"):
        knp.power(knp.asarray([2, 3]), np.int32(-1))


def test_round_takes_integer_decimals_only():
    h = np.array([1.2345, -2.5, 0.5], np.float32)
    np.testing.assert_allclose(knp.round(knp.asarray(h), np.int32(2)), np.round(h, 2), rtol=1e-6)
    np.testing.assert_array_equal(knp.round(knp.asarray(h)), np.round(h))
    for bad in (1.0, "1", None):  # NumPy and JAX refuse them too (operator.index)
        with pytest.raises(TypeError, match=rf"kiln.numpy.round: decimals must be an integer, got "
                                            rf"{type(bad).__name__} {bad!r}"):
            knp.round(knp.asarray(h), bad)
