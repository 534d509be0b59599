"""kiln.lax.reduce_window (+ _sum/_max/_min) and the cumulative reductions against NumPy."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from kiln.frontend.lax import windowed  # the primitives (until kiln.lax exports cumsum_p & co as jax.lax does)

import kiln
import kiln.numpy as knp
from kiln import lax

RNG = np.random.default_rng(1)
_NP_OPS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def reduce_window_ref(x, init, op, window, strides, padding, base_dilation=None, window_dilation=None):
    """A direct NumPy implementation of XLA's ReduceWindow."""
    nd = x.ndim
    bd = base_dilation or (1,) * nd
    wd = window_dilation or (1,) * nd
    dil_shape = [0 if d == 0 else (d - 1) * b + 1 for d, b in zip(x.shape, bd)]
    dil = np.full(dil_shape, init, x.dtype)
    dil[tuple(slice(None, None, b) for b in bd)] = x
    # Padding (negative values crop).
    padded = dil
    for ax, (lo, hi) in enumerate(padding):
        if lo < 0:
            padded = np.take(padded, range(-lo, padded.shape[ax]), axis=ax)
        if hi < 0:
            padded = np.take(padded, range(0, padded.shape[ax] + hi), axis=ax)
        widths = [(0, 0)] * nd
        widths[ax] = (max(lo, 0), max(hi, 0))
        padded = np.pad(padded, widths, constant_values=init)
    spans = [(w - 1) * d + 1 for w, d in zip(window, wd)]
    out_shape = [max(0, (p - s) // st + 1) if p >= s else 0 for p, s, st in zip(padded.shape, spans, strides)]
    out = np.empty(out_shape, x.dtype)
    for idx in itertools.product(*[range(n) for n in out_shape]):
        sl = tuple(slice(i * st, i * st + s, d) for i, st, s, d in zip(idx, strides, spans, wd))
        acc = np.asarray(init, x.dtype)
        for v in padded[sl].ravel():
            acc = _NP_OPS[op](acc, v)
        out[idx] = acc
    return out


X = RNG.standard_normal((5, 6)).astype(np.float32)
XI = RNG.integers(-9, 9, (4, 7)).astype(np.int32)
XB = RNG.random((5, 4)) > 0.5
# (x, init, op, window, strides, padding, base_dilation, window_dilation)
RW_CASES = [
    (X, 0.0, "add", (2, 3), (1, 1), ((0, 0), (0, 0)), None, None),
    (X, -np.inf, "max", (3, 2), (2, 1), ((1, 1), (0, 1)), None, None),
    (X, np.inf, "min", (2, 2), (1, 2), ((0, 0), (0, 0)), (2, 1), (1, 2)),
    (X, 1.0, "mul", (1, 3), (1, 1), ((0, 0), (-1, 2)), None, None),
    (XI, 0, "add", (2, 2), (2, 3), ((1, 0), (2, 2)), (1, 2), None),
    (XI, np.iinfo(np.int32).min, "max", (4, 1), (1, 1), ((0, 0), (0, 0)), None, (1, 1)),
    (XB, False, "max", (2, 2), (1, 1), ((0, 0), (0, 0)), None, None),
    (XB, True, "min", (3, 1), (1, 1), ((1, 1), (0, 0)), None, None),
    (np.zeros((0, 3), np.float32), 0.0, "add", (1, 2), (1, 1), ((0, 0), (0, 0)), None, None),
    (X[0], 0.0, "add", (7,), (1,), ((0, 0),), None, None),  # window larger than the input: empty
]
_LAX_OPS = {"add": lax.add, "mul": lax.mul, "max": lax.max, "min": lax.min}


def _run_rw(args):
    outs = []
    for x, (_, init, op, window, strides, padding, bd, wd) in zip(args, RW_CASES):
        outs.append(lax.reduce_window(x, init, _LAX_OPS[op], window, strides, padding, bd, wd))
    return outs


def _check_rw(outs):
    for out, (x, init, op, window, strides, padding, bd, wd) in zip(outs, RW_CASES):
        want = reduce_window_ref(x, init, op, window, strides, padding, bd, wd)
        assert out.shape == want.shape and out.dtype == want.dtype, (op, out.shape, want.shape)
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-6)


def test_reduce_window_eager():
    _check_rw(_run_rw([knp.asarray(c[0]) for c in RW_CASES]))


def test_reduce_window_jit():
    _check_rw(kiln.jit(_run_rw)([c[0] for c in RW_CASES]))


def test_reduce_window_conveniences_and_string_padding():
    x = RNG.standard_normal((2, 7, 5)).astype(np.float32)

    def f(x):
        return (lax.reduce_window_sum(x, (1, 3, 2), (1, 2, 2), "SAME"),
                lax.reduce_window_max(x, (1, 3, 3), (1, 1, 1), "SAME"),
                lax.reduce_window_min(x, (1, 2, 2)),
                lax.reduce_window(x, 0.0, knp.add, (1, 2, 2), (1, 1, 1), "valid"))
    for fn in (f, kiln.jit(f)):
        s, mx, mn, v = fn(x)
        # SAME: output ceil(n / stride), padding split low/high with the extra high.
        np.testing.assert_allclose(np.asarray(s), reduce_window_ref(x, 0.0, "add", (1, 3, 2), (1, 2, 2),
                                                                    ((0, 0), (1, 1), (0, 1))), rtol=1e-5, atol=1e-6)
        assert s.shape == (2, 4, 3)
        np.testing.assert_array_equal(np.asarray(mx), reduce_window_ref(x, -np.inf, "max", (1, 3, 3), (1, 1, 1),
                                                                        ((0, 0), (1, 1), (1, 1))))
        np.testing.assert_array_equal(np.asarray(mn), reduce_window_ref(x, np.inf, "min", (1, 2, 2), (1, 1, 1),
                                                                        ((0, 0),) * 3))
        np.testing.assert_allclose(np.asarray(v), reduce_window_ref(x, 0.0, "add", (1, 2, 2), (1, 1, 1),
                                                                    ((0, 0),) * 3), rtol=1e-5, atol=1e-6)


def test_reduce_window_lowering():
    text = kiln.jit(lambda x: lax.reduce_window_max(x, (2, 2), (2, 2), "SAME")).lower(X).as_text()
    assert "stablehlo.reduce_window" in text and "stablehlo.maximum" in text


def test_reduce_window_errors():
    x = knp.asarray(X)
    with pytest.raises(TypeError, match=r"kiln.lax.reduce_window: computation .* is not supported"):
        lax.reduce_window(x, 0.0, lambda a, b: a + b, (2, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match=r"kiln.lax.reduce_window: window_dimensions \(2,\) must have one entry"):
        lax.reduce_window(x, 0.0, lax.add, (2,), (1, 1), "VALID")
    with pytest.raises(ValueError, match=r"kiln.lax.reduce_window: unknown padding 'FULL'"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "FULL")
    with pytest.raises(ValueError, match=r"kiln.lax.reduce_window: window_strides must be positive"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (0, 1), "VALID")
    with pytest.raises(TypeError, match=r"kiln.lax.reduce_window: init_value must be a scalar of the operand's dtype"):
        lax.reduce_window(x, np.int32(0), lax.add, (2, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match=r"kiln.lax.reduce_window: computation add does not accept dtype bool"):
        lax.reduce_window(knp.asarray(XB), False, lax.add, (2, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match=r"kiln.lax.reduce_window: padding must be 'SAME', 'VALID' or a sequence"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), 3)
    with pytest.raises(ValueError, match=r"kiln.lax.reduce_window: padding \(\(0, 0\),\) must have one"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), ((0, 0),))
    with pytest.raises(NotImplementedError, match=r"kiln.lax.reduce_window: reducing several operands"):
        lax.reduce_window((x, x), (0.0, 0.0), lax.add, (2, 2), (1, 1), "VALID")


# -- cumulative reductions ---------------------------------------------------------------------------
def _np_cum(name, x, axis, reverse):
    if reverse:
        x = np.flip(x, axis)
    out = {"cumsum": lambda: np.cumsum(x, axis, dtype=x.dtype),
           "cumprod": lambda: np.cumprod(x, axis, dtype=x.dtype),
           "cummax": lambda: np.maximum.accumulate(x, axis),
           "cummin": lambda: np.minimum.accumulate(x, axis),
           "cumlogsumexp": lambda: np.logaddexp.accumulate(x, axis)}[name]()
    return np.flip(out, axis) if reverse else out


XF = RNG.standard_normal((4, 37)).astype(np.float32)
XF_SPECIAL = np.array([1.0, -np.inf, np.nan, 2.0, np.inf, -1.0, 0.5], np.float32)
XP = RNG.uniform(0.5, 1.5, (3, 9)).astype(np.float32)
XN = RNG.integers(-3, 4, (5, 6)).astype(np.int32)
CUM_CASES = [  # (name, x, axis, reverse)
    ("cumsum", XF, 1, False), ("cumsum", XF, 0, True), ("cumsum", XN, 1, True), ("cumsum", XN, 0, False),
    ("cumprod", XP, 1, False), ("cumprod", XN[:, :4], 1, True), ("cummax", XF, 1, False), ("cummax", XN, 0, True),
    ("cummax", XF_SPECIAL, 0, False), ("cummin", XF_SPECIAL, 0, True), ("cummin", XB, 0, False),
    ("cummax", XB, 1, True), ("cumlogsumexp", XF, 1, False), ("cumlogsumexp", XF_SPECIAL, 0, True),
    ("cumsum", np.zeros((0, 3), np.float32), 0, False), ("cumsum", np.ones((2, 1), np.float32), 1, True),
    ("cumsum", np.arange(1000, dtype=np.float32), 0, False),
    ("cumsum", np.array([1 + 2j, 3 - 1j, 0.5j], np.complex64), 0, False),
]


EAGER_CUM = [0, 2, 4, 6, 9, 11, 13, 14]  # eagerly, a subset (each case is one compilation)


def _run_cum(args, cases=CUM_CASES):
    return [getattr(lax, name)(x, axis=axis, reverse=rev) for x, (name, _, axis, rev) in zip(args, cases)]


def _check_cum(outs, cases=CUM_CASES):
    for out, (name, x, axis, rev) in zip(outs, cases):
        want = _np_cum(name, x, axis, rev)
        assert out.dtype == x.dtype and out.shape == x.shape, name
        np.testing.assert_allclose(np.asarray(out), want, rtol=2e-5, atol=1e-4, err_msg=f"{name} {axis} {rev}")


def test_cumulative_eager():
    with np.errstate(invalid="ignore"):
        cases = [CUM_CASES[i] for i in EAGER_CUM]
        _check_cum(_run_cum([knp.asarray(c[1]) for c in cases], cases), cases)


def test_cumulative_jit():
    with np.errstate(invalid="ignore"):
        _check_cum(kiln.jit(_run_cum)([c[1] for c in CUM_CASES]))


CUM_NAMES = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]


def _ref64(name, x, axis, reverse):
    """The float64 reference (NumPy) of a cumulative reduction of float32 ``x``."""
    return _np_cum(name, x.astype(np.float64), axis, reverse)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", CUM_NAMES)
def test_cumulative_float32_against_float64(name, jit):
    # Every axis and direction of a 3-D array (odd and even lengths), against NumPy in float64.
    x = RNG.uniform(0.6, 1.4, (3, 16, 5)).astype(np.float32) if name == "cumprod" else \
        RNG.standard_normal((3, 16, 5)).astype(np.float32)
    fn = getattr(lax, name)
    fn = kiln.jit(fn, static_argnames=("axis", "reverse")) if jit else fn
    for axis, rev in itertools.product((0, 1, 2, -1), (False, True)):
        got = fn(x, axis=axis, reverse=rev)
        assert got.dtype == np.float32 and got.shape == x.shape
        np.testing.assert_allclose(np.asarray(got), _ref64(name, x, axis % 3, rev), rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name} axis={axis} reverse={rev}")


def test_cumulative_integers_and_booleans_are_exact():
    xi = RNG.integers(-3, 4, (4, 9)).astype(np.int32)
    xu = RNG.integers(0, 3, (9,)).astype(np.uint8)
    xb = RNG.random((4, 9)) > 0.6
    for rev in (False, True):
        for name in ("cumsum", "cumprod", "cummax", "cummin"):
            for x, axis in ((xi, 1), (xi, 0), (xu, 0)):
                got = np.asarray(getattr(lax, name)(x, axis=axis, reverse=rev))
                want = _np_cum(name, x, axis, rev)  # wraps around as XLA does
                np.testing.assert_array_equal(got, want, strict=True, err_msg=f"{name} {x.dtype} {axis} {rev}")
        for name in ("cummax", "cummin"):
            got = kiln.jit(lambda v, n=name, r=rev: getattr(lax, n)(v, axis=1, reverse=r))(xb)
            np.testing.assert_array_equal(np.asarray(got), _np_cum(name, xb, 1, rev), strict=True)


def test_cumulative_lengths_zero_and_one():
    one = np.float32([[0.5], [-2.0]])
    cases = [(np.zeros((0, 3), np.float32), 0), (np.zeros((0, 3), np.float32), 1), (np.zeros((2, 0), np.float32), 0),
             (one, 1), (one.T, 0)]
    for name in CUM_NAMES:
        fn = kiln.jit(getattr(lax, name), static_argnames=("axis", "reverse"))
        for (x, axis), rev in itertools.product(cases, (False, True)):
            np.testing.assert_array_equal(np.asarray(fn(x, axis=axis, reverse=rev)), x, strict=True)


def test_cumulative_are_primitives_as_jaxs():
    """One equation each, printed as JAX prints it (also for a length-1 axis, as JAX binds it)."""
    for name in CUM_NAMES:
        text = str(kiln.make_jaxpr(lambda x, n=name: getattr(lax, n)(x, axis=-1, reverse=True))(np.ones((2, 7),
                                                                                                         np.float32)))
        assert f"{name}[axis=1 reverse=True]" in text, text
        ir = kiln.make_ir(lambda x, n=name: getattr(lax, n)(x))(np.ones(1, np.float32))
        assert [e.prim.name for e in ir.ir.eqns] == [name]
    assert windowed.cumsum_p.bind(knp.arange(4.0), axis=0, reverse=False).tolist() == [0.0, 1.0, 3.0, 6.0]
    with pytest.raises(ValueError, match=r"kiln.lax.cumsum: axis -1 is out of bounds for an array of dimension 1"):
        windowed.cumsum_p.bind(knp.arange(4.0), axis=-1, reverse=False)
    with pytest.raises(TypeError, match=r"kiln.lax.cumlogsumexp: does not accept dtype int32"):
        windowed.cumlogsumexp_p.bind(knp.arange(4), axis=0, reverse=False)


def test_cumulative_lower_to_one_reduce_window_over_the_axis():
    # As JAX: a window of the whole axis, n - 1 identities padded in front (behind when reversed), stride 1.
    # XLA rewrites that into a tree, so it is not O(n^2).
    x = np.zeros((8, 1000), np.float32)
    for name, body in (("cumsum", "add"), ("cumprod", "multiply"), ("cummax", "maximum"), ("cummin", "minimum")):
        for rev, pad in ((False, "[0, 0], [999, 0]"), (True, "[0, 0], [0, 999]")):
            text = kiln.jit(lambda v, n=name, r=rev: getattr(lax, n)(v, axis=1, reverse=r)).lower(x).as_text()
            assert text.count("stablehlo.reduce_window") == 1, text
            assert f"padding = dense<[{pad}]>" in text and "window_dimensions = array<i64: 1, 1000>" in text
            assert f"stablehlo.{body} %" in text
    text = kiln.jit(lambda v: lax.cummax(v)).lower(np.zeros(5, np.bool_)).as_text()
    assert "stablehlo.or %" in text and "stablehlo.maximum" not in text
    text = kiln.jit(lambda v: lax.cumlogsumexp(v)).lower(x).as_text()
    assert text.count("stablehlo.reduce_window") == 1 and "0xFF800000" in text  # init -inf
    for op in ("maximum", "subtract", "compare NE", "abs", "negate", "exponential", "log_plus_one", "select"):
        assert f"stablehlo.{op}" in text, op


def test_cumsum_of_a_million_elements():
    # (a reduce_window that XLA ran as written, O(n^2), would not finish)
    x = np.ones(1 << 20, np.float32)
    out = kiln.jit(lambda v: lax.cumsum(v))(x)
    assert float(out[-1]) == float(1 << 20)


@pytest.mark.parametrize("name", CUM_NAMES)
def test_cumulative_vmap_against_a_loop(name):
    x = RNG.uniform(0.6, 1.4, (3, 4, 6)).astype(np.float32)
    for in_axis, axis, rev in ((0, 0, False), (1, 0, True), (2, 1, False), (1, -1, True)):
        f = lambda v, a=axis, r=rev: getattr(lax, name)(v, axis=a, reverse=r)  # noqa: E731
        got = np.asarray(kiln.vmap(f, in_axes=in_axis)(x))
        want = np.stack([np.asarray(f(np.take(x, i, axis=in_axis))) for i in range(x.shape[in_axis])])
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{in_axis} {axis} {rev}")


def test_cumulative_errors():
    x = knp.asarray(XF)
    with pytest.raises(ValueError, match=r"kiln.lax.cumsum: axis 2 is out of bounds for an array of dimension 2"):
        lax.cumsum(x, axis=2)
    with pytest.raises(TypeError, match=r"kiln.lax.cumsum: does not accept dtype bool"):
        lax.cumsum(knp.asarray(XB))
    with pytest.raises(TypeError, match=r"kiln.lax.cumlogsumexp: does not accept dtype int32"):
        lax.cumlogsumexp(knp.asarray(XN))
    with pytest.raises(TypeError, match=r"kiln.lax.cummax: axis must be an int"):
        lax.cummax(x, axis=None)
