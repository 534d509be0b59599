"""The narrow dtypes of ml_dtypes (8-, 6- and 4-bit floats, 1-, 2- and 4-bit integers) as kiln dtypes:
scalar types, dtype info, transfer, casts, promotion (JAX's lattice), arithmetic, random, and the
clear errors where jaxlib 0.10.x / XLA's CPU backend cannot compute with a dtype.

The oracle is ml_dtypes (its casts round as XLA's do) and NumPy on ml_dtypes arrays."""
import itertools

import ml_dtypes
import numpy as np
import pytest
from kiln.frontend.core import dtypes
from kiln.frontend.core.errors import KilnTypeError, TypePromotionError
from kiln.runtime.errors import CompileError

import kiln
import kiln.numpy as knp

FLOAT8 = ["float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
          "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"]
FLOAT6 = ["float6_e2m3fn", "float6_e3m2fn"]
FLOATS = FLOAT8 + FLOAT6 + ["float4_e2m1fn"]
SIGNED = ["int1", "int2", "int4"]
UNSIGNED = ["uint1", "uint2", "uint4"]
INTS = SIGNED + UNSIGNED
ALL = FLOATS + INTS
# Dtypes kiln computes with on CPU (jaxlib 0.10.x); int1, uint1 and the float6 types it only describes
# (and holds, for int1/uint1).
COMPUTABLE_FLOATS = FLOAT8 + ["float4_e2m1fn"]
COMPUTABLE_INTS = ["int2", "int4", "uint2", "uint4"]
COMPUTABLE = COMPUTABLE_FLOATS + COMPUTABLE_INTS

MLIR = {"float8_e3m4": "f8E3M4", "float8_e4m3": "f8E4M3", "float8_e4m3b11fnuz": "f8E4M3B11FNUZ",
        "float8_e4m3fn": "f8E4M3FN", "float8_e4m3fnuz": "f8E4M3FNUZ", "float8_e5m2": "f8E5M2",
        "float8_e5m2fnuz": "f8E5M2FNUZ", "float8_e8m0fnu": "f8E8M0FNU", "float4_e2m1fn": "f4E2M1FN",
        "int2": "i2", "int4": "i4", "uint2": "ui2", "uint4": "ui4"}


def _dt(name):
    return np.dtype(getattr(ml_dtypes, name))


def _same(a, b):
    """Equal as float64, NaN equal to NaN, and of one dtype."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_array_equal(a.astype(np.float64), b.astype(np.float64))


def _sample(name):
    """float32 values covering the range of a narrow float (rounding cases, overflow, inf/nan, +-0)."""
    rng = np.random.RandomState(0)
    parts = [rng.randn(200).astype(np.float32) * s for s in (0.01, 1.0, 30.0, 1000.0)]
    info = ml_dtypes.finfo(_dt(name))
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, float(info.max), float(info.max) * 1.06,
               float(info.tiny), float(info.tiny) / 3]
    return np.concatenate(parts + [np.array(special, np.float32)])


def _small_ints(name):
    info = ml_dtypes.iinfo(_dt(name))
    v = np.arange(info.min, info.max + 1).astype(np.float32)
    return np.concatenate([v, v + 0.25, v - 0.25])[: 3 * (info.max - info.min + 1)]


# -- the scalar types and dtype information -------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_scalar_type_is_the_dtype(name):
    t = getattr(knp, name)
    assert np.dtype(t) == _dt(name) and knp.dtype(t) == _dt(name) and knp.dtype(name) == _dt(name)
    assert t == _dt(name).type and repr(t) == f"<class 'kiln.numpy.{name}'>"
    assert getattr(dtypes, name) == _dt(name)


@pytest.mark.parametrize("name", [n for n in ALL if n not in FLOAT6])
def test_scalar_type_call_makes_a_kiln_array(name):
    value = 1.5 if name in FLOATS else 1
    x = getattr(knp, name)(value)
    assert isinstance(x, kiln.Array) and x.dtype == _dt(name) and x.shape == ()
    # (an integer type from an integer: int1's 1 wraps to -1; ml_dtypes 0.7 casts an out-of-range float to 0)
    _same(np.asarray(x), np.array(value, np.float32 if name in FLOATS else np.int64).astype(_dt(name)))


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_and_issubdtype_of_floats(name):
    fi, ref = knp.finfo(name), ml_dtypes.finfo(_dt(name))
    assert (fi.bits, fi.nmant, fi.nexp) == (ref.bits, ref.nmant, ref.nexp)
    assert float(fi.max) == float(ref.max) and float(fi.eps) == float(ref.eps)
    for parent in (knp.floating, knp.inexact, knp.number, knp.generic, getattr(knp, name)):
        assert knp.issubdtype(getattr(knp, name), parent) and knp.issubdtype(name, parent)
    for other in (knp.integer, knp.signedinteger, knp.complexfloating, knp.bool_, knp.float32, knp.bfloat16):
        assert not knp.issubdtype(name, other)
    assert knp.isdtype(name, "real floating") and not knp.isdtype(name, "integral")
    assert dtypes.scalar_type_of(_dt(name)) is float
    with pytest.raises(TypeError, match=f"kiln.iinfo: {name} is not an integer dtype"):
        knp.iinfo(name)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_and_issubdtype_of_ints(name):
    ii, ref = knp.iinfo(name), ml_dtypes.iinfo(_dt(name))
    assert (ii.min, ii.max, ii.bits) == (ref.min, ref.max, ref.bits)
    signed = name in SIGNED
    below = (knp.signedinteger if signed else knp.unsignedinteger, knp.integer, knp.number, knp.generic)
    for parent in below:
        assert knp.issubdtype(getattr(knp, name), parent)
    for other in (knp.unsignedinteger if signed else knp.signedinteger, knp.floating, knp.inexact, knp.int8):
        assert not knp.issubdtype(name, other)
    assert knp.isdtype(name, "signed integer" if signed else "unsigned integer") and knp.isdtype(name, "integral")
    assert dtypes.scalar_type_of(_dt(name)) is int
    with pytest.raises(TypeError, match=f"kiln.finfo: {name} is not a floating-point"):
        knp.finfo(name)


def test_itemsize_bits_and_supports_inf():
    bits = {"float8_e4m3fn": 8, "float6_e2m3fn": 6, "float4_e2m1fn": 4, "int1": 1, "int2": 2, "int4": 4,
            "uint4": 4, "float32": 32}
    for name, b in bits.items():
        assert kiln.dtypes.itemsize_bits(name) == b
    assert dtypes.supports_inf("float8_e5m2") and dtypes.supports_inf("float8_e4m3")
    assert not any(dtypes.supports_inf(n) for n in ("float8_e4m3fn", "float8_e5m2fnuz", "float4_e2m1fn"))


# -- transfer, printing, casts ---------------------------------------------------------------------

@pytest.mark.parametrize("name", [n for n in ALL if n not in FLOAT6])
def test_asarray_and_back_keep_dtype_and_values(name):
    host = np.resize(_sample(name) if name in FLOATS else _small_ints(name), 15).astype(_dt(name)).reshape(5, 3)
    x = knp.asarray(host)
    assert x.dtype == _dt(name) and x.shape == host.shape
    back = np.asarray(x)
    assert back.dtype == _dt(name)
    assert back.tobytes() == host.tobytes()
    assert repr(x).startswith("Array(") and f"dtype={name}" in repr(x)
    assert str(x) == str(host)
    y = knp.array([[1, 0], [1, 1]], dtype=getattr(knp, name))
    _same(y, np.array([[1, 0], [1, 1]], np.float32 if name in FLOATS else np.int64).astype(_dt(name)))


@pytest.mark.parametrize("name", COMPUTABLE_FLOATS)
def test_float_casts_round_as_ml_dtypes(name):
    x = _sample(name)
    ref = x.astype(_dt(name))
    _same(knp.asarray(x).astype(name), ref)  # eager
    down, up = kiln.jit(lambda v, q: (v.astype(name), q.astype(knp.float32)))(x, ref)
    _same(down, ref)
    _same(up, ref.astype(np.float32))
    _same(knp.asarray(x).astype(knp.bfloat16).astype(name), x.astype(ml_dtypes.bfloat16).astype(_dt(name)))


@pytest.mark.parametrize("name", COMPUTABLE_INTS)
def test_int_casts_in_range_match_ml_dtypes(name):
    v = _small_ints(name)
    ref = v.astype(_dt(name))
    _same(knp.asarray(v).astype(name), ref)
    down, up = kiln.jit(lambda a, b: (a.astype(name), b.astype(knp.int32)))(v, ref)
    _same(down, ref)
    _same(up, ref.astype(np.int32))
    # Out-of-range integers wrap (as NumPy's casts); out-of-range floats saturate (XLA's convert, as JAX).
    wide = np.array([100, -100, 7, -9], np.int32)
    _same(knp.asarray(wide).astype(name), wide.astype(_dt(name)))
    info = ml_dtypes.iinfo(_dt(name))
    _same(knp.asarray(np.array([1e3, -1e3], np.float32)).astype(name),
          np.array([info.max, info.min], np.int32).astype(_dt(name)))


@pytest.mark.parametrize("name", COMPUTABLE)
def test_lowered_text_has_the_stablehlo_element_type(name):
    x = knp.zeros((2,), name)
    text = kiln.jit(lambda v: v + v).lower(x).as_text()
    assert f"tensor<2x{MLIR[name]}>" in text


# -- promotion ---------------------------------------------------------------------------------------

OTHERS = ["bool", "int8", "uint8", "int32", "uint32", "float16", "bfloat16", "float32", "complex64"]


def _expected_promotion(a, b):
    """JAX's lattice: only bool and weak ints sit below a narrow int; below a narrow float sit bool, every
    standard integer (they are below the weak float) and weak ints and floats. Nothing else meets them."""
    if a == b:
        return a
    standard_ints = ("bool", "int8", "uint8", "int32", "uint32", "int")
    for x, y in ((a, b), (b, a)):
        if (x in INTS and y in ("bool", "int")) or (x in FLOATS and y in standard_ints + ("float",)):
            return x
    if a in ALL or b in ALL:
        return None
    return str(np.dtype(knp.promote_types(a, b)))


@pytest.mark.parametrize("a", ALL)
def test_promotion_table(a):
    weak = {"int": int, "float": float, "complex": complex}
    for b in ALL + OTHERS + list(weak):
        expected = _expected_promotion(a, b)
        for x, y in ((a, b), (b, a)):
            spec_x, spec_y = weak.get(x, x), weak.get(y, y)
            if expected is None:
                with pytest.raises(TypePromotionError, match="no implicit type promotion"):
                    knp.promote_types(spec_x, spec_y)
            else:
                assert knp.promote_types(spec_x, spec_y) == np.dtype(expected), (x, y)


@pytest.mark.parametrize("name", COMPUTABLE)
def test_promotion_with_values(name):
    x = knp.ones(3, name)
    assert (x + 1).dtype == _dt(name) and (x * True).dtype == _dt(name) and (1 - x).dtype == _dt(name)
    assert not (x + 1).weak_type
    assert knp.result_type(x, 2) == _dt(name) and knp.result_type(x, x, True) == _dt(name)
    if name in FLOATS:
        assert (x * 2.0).dtype == _dt(name)
    else:
        with pytest.raises(TypePromotionError, match="1-bit, 2-bit and 4-bit integers do not promote"):
            x * 2.0
    with pytest.raises(TypePromotionError, match="astype"):
        x + knp.ones(3, knp.float32)


def test_promotion_error_messages():
    with pytest.raises(TypePromotionError, match=r"between float8_e4m3fn and float8_e5m2: to avoid unintended "
                                                 r"promotion, 8-bit floats do not promote implicitly"):
        knp.promote_types("float8_e4m3fn", "float8_e5m2")
    with pytest.raises(TypePromotionError, match=r"4-bit floats do not promote implicitly.*astype\('float32'\)"):
        knp.result_type(knp.float4_e2m1fn, knp.float16)
    with pytest.raises(TypePromotionError, match=r"6-bit floats"):
        knp.promote_types("float6_e2m3fn", "bfloat16")
    with pytest.raises(TypePromotionError, match=r"int4 and a Python float.*astype\('int32'\)"):
        knp.promote_types("int4", float)
    with pytest.raises(ValueError):  # TypePromotionError is a ValueError, as JAX's
        knp.promote_types("uint4", "uint8")


def test_weak_narrow_values_take_the_default_dtype():
    # A weakly typed narrow value joins as a weak value of its kind (as in JAX): with a strong float16 it
    # gives float16; alone, the default dtype of its kind.
    class Weak:
        def __init__(self, dtype):
            self.dtype, self.weak_type = np.dtype(dtype), True

    assert dtypes.result_type(Weak("float8_e4m3fn"), np.dtype("float16")) == np.dtype("float16")
    assert dtypes.result_type(Weak("int4"), np.dtype("int8")) == np.dtype("int8")
    assert dtypes.result_type(Weak("float8_e4m3fn"), Weak("float8_e4m3fn"), return_weak_type_flag=True) == (
        np.dtype("float32"), True)


# -- arithmetic ----------------------------------------------------------------------------------------

def _operands(name):
    """Small values whose sums, products and dot products are exact in ``name``."""
    if name in FLOATS:
        a = np.array([[1.0, 2.0, 0.5], [0.25, 1.0, 2.0]], np.float32)
        b = np.array([[0.5, 1.0, 1.0], [2.0, 0.5, 0.25]], np.float32)
    elif name.startswith("u"):
        a = np.array([[1, 0, 1], [1, 1, 0]], np.float32)
        b = np.array([[0, 1, 1], [1, 0, 0]], np.float32)
    else:
        a = np.array([[1, 0, -1], [1, -1, 0]], np.float32)
        b = np.array([[0, 1, 1], [-1, 0, 0]], np.float32)
    return a.astype(_dt(name)), b.astype(_dt(name))


def _binops(a, b):
    return a + b, a * b, knp.maximum(a, b), knp.minimum(a, b), a < b, a == b, a.max(axis=1), a.min()


@pytest.mark.parametrize("name", COMPUTABLE)
def test_arithmetic_matches_ml_dtypes(name):
    a, b = _operands(name)
    ref = (a + b, a * b, np.maximum(a, b), np.minimum(a, b), a < b, a == b, a.max(axis=1), a.min())
    for got in (_binops(knp.asarray(a), knp.asarray(b)), kiln.jit(_binops)(a, b)):
        for g, r in zip(got, ref, strict=True):
            r = np.asarray(r)  # NumPy computes narrow ints in int8 and gives int8 results
            _same(g, r if r.dtype == np.bool_ else r.astype(_dt(name)))


@pytest.mark.parametrize("name", [n for n in COMPUTABLE if n not in ("int2", "uint2")])
def test_dot_matches_ml_dtypes(name):
    a, b = _operands(name)
    ref = (a.astype(np.float32) @ b.T.astype(np.float32)).astype(_dt(name))
    _same(knp.asarray(a) @ knp.asarray(b).T, ref)
    _same(kiln.jit(lambda x, y: knp.dot(x, y.T))(a, b), ref)


@pytest.mark.parametrize("name", ["int2", "uint2"])
def test_two_bit_ints_concatenate_and_refuse_dot_clearly(name):
    a, b = _operands(name)
    _same(knp.concatenate([knp.asarray(a), knp.asarray(b)]), np.concatenate([a, b]))
    _same(kiln.jit(lambda x, y: knp.stack([x, y]))(a, b), np.stack([a, b]))
    with pytest.raises(CompileError, match=f"narrow dtype {name}.*cast the operands to a wider dtype"):
        knp.asarray(a) @ knp.asarray(b).T


def test_grad_through_float8_casts():
    w = np.array([0.5, 2.0, -1.0], np.float32)

    def f(x):
        return (x.astype("float8_e4m3fn").astype(knp.float32) * w).sum()

    g = kiln.grad(f)(np.array([0.3, 1.7, -4.1], np.float32))
    np.testing.assert_array_equal(np.asarray(g), w)  # the tangent goes through both casts (w is exact)
    h = kiln.grad(lambda x: (x.astype("float8_e5m2") * x.astype("float8_e5m2")).astype(knp.float32).sum())
    x = np.array([1.0, 2.0, 0.5], np.float32)
    np.testing.assert_array_equal(np.asarray(h(x)), 2 * x)


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float4_e2m1fn", "int4"])
def test_vmap_matches_a_loop(name):
    a, b = _operands(name)
    f = lambda r, s: r * s + r  # noqa: E731
    got = kiln.vmap(f)(a, b)
    ref = np.stack([np.asarray(f(knp.asarray(r), knp.asarray(s))) for r, s in zip(a, b)])
    _same(got, ref)
    _same(got, a * b + a)


# -- random --------------------------------------------------------------------------------------------

def test_random_float8_and_int4():
    key = kiln.random.key(0)
    u = kiln.random.uniform(key, (64,), dtype=knp.float8_e4m3fn)
    assert u.dtype == dtypes.float8_e4m3fn
    v = np.asarray(u).astype(np.float32)
    assert v.min() >= 0 and v.max() < 1 and len(np.unique(v)) > 4
    n = kiln.random.normal(key, (64,), dtype="float8_e5m2")
    assert n.dtype == dtypes.float8_e5m2 and np.isfinite(np.asarray(n).astype(np.float32)).all()
    r = kiln.random.randint(key, (64,), -8, 8, dtype="int4")
    assert r.dtype == dtypes.int4 and set(np.asarray(r).astype(int)) <= set(range(-8, 8))
    with pytest.raises(TypeError, match=r"kiln.random.uniform: random floats are drawn for 8-, 16-, 32- or "
                                        r"64-bit dtypes only, got float4_e2m1fn \(4 bits\)"):
        kiln.random.uniform(key, (3,), dtype=knp.float4_e2m1fn)
    with pytest.raises(TypeError, match="kiln.random.normal: .* got float6_e3m2fn"):
        kiln.random.normal(key, (3,), dtype="float6_e3m2fn")


# -- what jaxlib 0.10.x cannot do: clear errors --------------------------------------------------------

@pytest.mark.parametrize("name", ["int1", "uint1"])
def test_one_bit_ints_are_held_but_not_computed(name):
    host = np.array([1, 0, 1], np.float32).astype(_dt(name))
    x = knp.asarray(host)
    assert np.asarray(x).tobytes() == host.tobytes() and np.asarray(x).dtype == _dt(name)
    msg = f"kiln: cannot compute with dtype {name}: StableHLO has no"
    with pytest.raises(KilnTypeError, match=msg):
        x.astype(knp.float32)
    with pytest.raises(KilnTypeError, match=msg):
        kiln.jit(lambda v: v.astype(name))(np.ones(3, np.float32))
    with pytest.raises(KilnTypeError, match=msg):
        knp.zeros(2, name)


@pytest.mark.parametrize("name", FLOAT6)
def test_float6_is_a_dtype_but_not_an_array(name):
    assert knp.finfo(name).bits == 6 and knp.promote_types(name, float) == _dt(name)
    with pytest.raises(TypeError, match=f"runtime.put: jaxlib cannot transfer arrays of dtype {name}"):
        knp.asarray(np.zeros(2, _dt(name)))
    with pytest.raises(KilnTypeError, match=f"cannot compute with dtype {name}: XLA in jaxlib 0.10.x has no "
                                            "6-bit float support"):
        knp.ones(2, knp.float32).astype(name)


def test_all_narrow_dtypes_are_listed():
    assert set(dtypes.NARROW_FLOATS) == {_dt(n) for n in FLOATS}
    assert set(dtypes.NARROW_INTS) == {_dt(n) for n in INTS}
    for a, b in itertools.combinations(ALL, 2):
        assert _dt(a) != _dt(b)
