"""Constant folding in ``passes.simplify`` (``frontend/core/folding.py``): elementwise primitives on constants
become constants, with exactly the bits XLA computes at run time for the same operation on the same values
(checked by running the unfolded operation through XLA, its operands passed as arguments)."""
from __future__ import annotations

import itertools
import re

import ml_dtypes
import numpy as np
import pytest
from kiln.frontend.core import folding
from kiln.frontend.lax import elementwise as ew
from kiln.frontend.lax.api import literal
from kiln.frontend.lax.special import integer_pow_p

import kiln
import kiln.numpy as knp
from kiln import lax

# _check jits a fresh pair of functions per primitive, on purpose
pytestmark = pytest.mark.filterwarnings("ignore:.*has been traced and compiled for")

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
_HLO = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "rem": "remainder", "neg": "negate",
        "abs": "abs", "max": "maximum", "min": "minimum", "and": "and", "or": "or", "xor": "xor", "not": "not",
        "eq": "compare", "ne": "compare", "lt": "compare", "le": "compare", "gt": "compare", "ge": "compare",
        "convert_element_type": "convert", "exp": "exponential", "pow": "power", "square": "multiply"}


def _prim(name):
    if name == "convert_element_type":
        return ew.convert_p
    if name == "integer_pow":
        return integer_pow_p
    return ew.unary_prims.get(name) or ew.binary_prims[name]


def _float_values(dtype):
    info = ml_dtypes.finfo(dtype)
    vals = [0.0, -0.0, 1.0, -1.5, 3.0, 1 / 3, float(info.max), -float(info.max), np.inf, -np.inf, np.nan,
            float(info.tiny), float(info.tiny) / 4]  # the last one subnormal
    return [np.asarray(v, dtype) for v in vals]


def _int_values(dtype):
    info = np.iinfo(dtype)
    vals = {0, 1, 7, info.max, info.min, info.max // 3}
    if info.min < 0:
        vals |= {-1, -5}
    return [np.asarray(v, dtype) for v in sorted(vals)]


def _check(name, cases, params=None):
    """Each case (a tuple of 0-d operands) through ``name``: where kiln folds it (operands as literals), the
    result equals XLA's at run time (operands as arguments), bit for bit (NaNs: both NaN). Returns the folded
    function's StableHLO."""
    prim, params = _prim(name), params or {}

    def folded(_):
        return [prim.bind(*[literal(v, v.dtype) for v in ops], **params) for ops in cases]

    def unfolded(*flat):
        it = iter(flat)
        return [prim.bind(*[next(it) for _ in ops], **params) for ops in cases]

    dummy = np.zeros((), np.float32)
    text = kiln.jit(folded).lower(dummy).as_text()
    got = kiln.jit(folded)(dummy)
    want = kiln.jit(unfolded)(*[v for ops in cases for v in ops])
    for ops, g, w in zip(cases, got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, (name, ops)
        if folding.fold(name, params, list(ops), g.dtype) is None:
            continue  # left to XLA (whose own constant folding keeps subnormals its run time flushes)
        if g.dtype in (F16, BF16, F32) and np.isnan(w.astype(np.float32)):
            assert np.isnan(g.astype(np.float32)), (name, ops, g, w)
        else:
            assert g.tobytes() == w.tobytes(), (name, ops, g, w)
    return text


def _ops_in(text: str, name: str) -> int:
    return len(re.findall(rf"stablehlo\.{_HLO[name]}\b", text))


@pytest.mark.parametrize("dtype", [F32, F16, BF16], ids=lambda d: d.name)
def test_float_arithmetic_folds_to_xlas_bits(dtype):
    vals = _float_values(dtype)
    sub = folding._subnormal
    tiny = vals.pop()  # a subnormal: XLA's CPU flushes it to zero at run time; never folded
    assert sub(tiny)
    for name in ("add", "sub", "mul", "div", "max", "min", "eq", "ne", "lt", "le", "gt", "ge"):
        # (not with neutral elements: simplify turns x + 0.0 into x before XLA would flush a subnormal x)
        pairs = list(itertools.product(vals, vals)) + [(tiny, vals[4]), (vals[3], tiny)]
        text = _check(name, pairs)
        out_dtype = np.dtype(bool) if name in ew.COMPARISONS else dtype
        kept = [(a, b) for a, b in pairs if folding.fold(name, {}, [a, b], out_dtype) is None]
        assert _ops_in(text, name) == len(kept), name
        for a, b in kept:  # left to XLA: subnormals, and which zero max(-0.0, 0.0) is
            with np.errstate(all="ignore"):
                assert sub(a) or sub(b) or sub(np.asarray(_NUMPY[name](a, b))) or (
                    name in ("max", "min") and float(a) == 0.0 == float(b)), (name, a, b)
    for name in ("neg", "abs"):
        text = _check(name, [(v,) for v in vals + [tiny]])
        assert _ops_in(text, name) == 1


_NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
          "min": np.minimum, "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
          "gt": np.greater, "ge": np.greater_equal}


@pytest.mark.parametrize("dtype", [F32, F16, BF16, np.int32, np.uint8], ids=lambda d: np.dtype(d).name)
def test_integer_pow_folds_to_xlas_bits(dtype):
    # square and multiply, the emitted order of products (then 1/acc for y < 0): XLA's bits, or not folded
    is_float = dtype in (F32, F16, BF16)  # (bfloat16's NumPy kind is 'V')
    values = _float_values(dtype)[:-1] if is_float else _int_values(dtype)
    for y in ((-3, -1, 0, 1, 2, 3, 5, 7) if is_float else (0, 1, 2, 3, 5, 7)):
        _check("integer_pow", [(v,) for v in values], {"y": y})
        folded = [v for v in values if folding.fold("integer_pow", {"y": y}, [v], np.dtype(dtype)) is not None]
        assert len(folded) >= len(values) // 2, (y, folded)  # most are folded (not subnormal products, ...)


@pytest.mark.parametrize("dtype", [F32, F16, BF16, np.int8, np.int32, np.uint8], ids=lambda d: np.dtype(d).name)
def test_square_folds_to_xlas_bits(dtype):
    # chlo.square (floats) and x * x (integers, wrapping around): XLA's bits, or not folded (subnormal squares)
    is_float = dtype in (F32, F16, BF16)
    values = _float_values(dtype) if is_float else _int_values(dtype)
    _check("square", [(v,) for v in values])
    folded = [v for v in values if folding.fold("square", {}, [v], np.dtype(dtype)) is not None]
    assert len(folded) >= len(values) // 2, folded


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint32], ids=lambda d: np.dtype(d).name)
def test_integer_arithmetic_wraps_as_xla_does(dtype):
    vals = _int_values(dtype)
    pairs = list(itertools.product(vals, vals))
    for name in ("add", "sub", "mul", "max", "min", "and", "or", "xor", "eq", "lt", "ge"):
        assert _ops_in(_check(name, pairs), name) == 0, name
    for name in ("neg", "not") + (("abs",) if np.dtype(dtype).kind == "i" else ()):
        assert _ops_in(_check(name, [(v,) for v in vals]), name) == 0, name
    # integer division and remainder are left to XLA (a zero divisor, INT_MIN / -1)
    nonzero = [(a, b) for a, b in pairs if int(b) != 0]
    for name in ("div", "rem"):
        assert _ops_in(_check(name, nonzero), name) == len(nonzero)


def test_bool_logic_and_comparisons_fold():
    vals = [np.asarray(True), np.asarray(False)]
    pairs = list(itertools.product(vals, vals))
    for name in ("and", "or", "xor", "eq", "ne", "max", "min"):
        assert _ops_in(_check(name, pairs), name) == 0, name
    assert _ops_in(_check("not", [(v,) for v in vals]), "not") == 0


def test_conversions_fold_where_numpy_and_xla_agree():
    targets = [np.dtype(d) for d in (np.bool_, np.int8, np.int32, np.uint8, np.uint32)] + [F16, BF16, F32]
    sources = _float_values(F32) + [np.asarray(v, np.float32) for v in (2.5, -2.5, 127.9, -128.9, 300.0, 1e10)]
    sources += _float_values(BF16) + _float_values(F16)
    sources += _int_values(np.int32) + _int_values(np.uint8) + [np.asarray(2**24 + 1, np.int32), np.asarray(True)]
    for dtype in targets:
        cases = [(v,) for v in sources if v.dtype != dtype]
        text = _check("convert_element_type", cases, {"new_dtype": dtype, "weak_type": False})
        expected = sum(folding.fold("convert_element_type", {}, [v], dtype) is None for (v,) in cases)
        assert expected < len(cases)
        # a conversion to bool is a comparison with zero, not a convert
        if dtype != np.bool_:
            assert _ops_in(text, "convert_element_type") == expected, dtype


def test_what_is_not_folded():
    f32 = lambda v: np.asarray(v, np.float32)  # noqa: E731
    assert folding.fold("convert_element_type", {}, [f32(np.nan)], np.dtype(np.int32)) is None
    assert folding.fold("convert_element_type", {}, [f32(3e9)], np.dtype(np.int32)) is None
    assert folding.fold("convert_element_type", {}, [f32(-1.0)], np.dtype(np.uint8)) is None
    assert folding.fold("convert_element_type", {}, [np.asarray(0.1)], BF16) is None  # float64: rounds twice
    assert folding.fold("convert_element_type", {}, [np.asarray(2**24 + 1, np.int32)], BF16) is None
    assert folding.fold("div", {}, [np.asarray(1, np.int32), np.asarray(0, np.int32)], np.dtype(np.int32)) is None
    assert folding.fold("exp", {}, [f32(1.0)], F32) is None
    assert folding.fold("add", {}, [np.asarray(1 + 2j, np.complex64)] * 2, np.dtype(np.complex64)) is None
    assert folding.fold("mul", {}, [f32(1e-30), f32(1e-10)], F32) is None  # a subnormal result
    assert folding.fold("max", {}, [f32(-0.0), f32(0.0)], F32) is None
    text = _check("exp", [(f32(1.0),)])
    assert _ops_in(text, "exp") == 1
    pw = _check("pow", [(f32(2.0), f32(0.5))])
    assert _ops_in(pw, "pow") == 1


def test_fold_keeps_the_result_type():
    def f(x):
        a = lax.add(literal(1.0, F32, True), literal(2.0, F32, True))  # weak + weak: weak
        b = ew.convert_p.bind(literal(3.0, F32, True), new_dtype=F32, weak_type=False)  # strengthened
        c = ew.binary_prims["lt"].bind(literal(1, np.int32), literal(2, np.int32))
        return a, b, c, x * a

    x = np.ones(2, np.float32)
    ir = kiln.make_ir(f)(x).ir
    from kiln.frontend.core import passes
    out = passes.eliminate_dead_code(passes.simplify(ir))
    a, b, c, _ = out.outvars
    assert a.aval.weak_type and float(a.val) == 3.0 and a.dtype == F32
    assert not b.aval.weak_type and float(b.val) == 3.0
    assert c.dtype == np.bool_ and bool(c.val) is True
    assert [e.prim.name for e in out.eqns] == ["broadcast_in_dim", "mul"]  # x * broadcast(3.0)
    ra, rb, rc, rx = kiln.jit(f)(x)
    assert ra.weak_type and not rb.weak_type and rc.dtype == np.bool_ and bool(rc)
    np.testing.assert_array_equal(rx, [3.0, 3.0])


def test_broadcast_constants_and_constant_select_fold():
    def f(x):
        two = lax.broadcast_in_dim(literal(2.0, F32), (3,), ())
        three = lax.broadcast_in_dim(literal(3.0, F32), (3,), ())
        six = lax.mul(two, three)
        picked = lax.select(literal(True, np.dtype(bool)), x, six)
        return lax.add(picked, lax.neg(six))

    x = np.array([1.0, 2.0, 3.0], np.float32)
    text = kiln.jit(f).lower(x).as_text()
    assert "stablehlo.multiply" not in text and "stablehlo.select" not in text and "stablehlo.negate" not in text
    assert "-6.000000e+00" in text
    np.testing.assert_array_equal(kiln.jit(f)(x), x - 6.0)


def test_mean_gradient_is_one_constant():
    """The cotangent of a mean (``neg 1.0``, ``div _ 128.0`` in the transposed program) is one constant."""
    x = np.linspace(-1, 1, 128, dtype=np.float32)
    g = kiln.jit(kiln.grad(lambda x: -knp.mean(x)))
    text = g.lower(x).as_text()
    assert "stablehlo.divide" not in text and "stablehlo.negate" not in text
    assert "-7.812500e-03" in text
    np.testing.assert_array_equal(g(x), np.full(128, -1 / 128, np.float32))
