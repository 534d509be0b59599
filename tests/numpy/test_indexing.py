"""kiln.numpy indexing: x[idx] (basic, advanced, masks), x.at[idx] updates, take/take_along_axis/
put_along_axis, nonzero/argwhere/flatnonzero — NumPy is the oracle (JAX semantics where they differ).

Cases of one test are grouped into one jitted function to keep compilations few.
"""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4, 5)).astype(np.float32)
MASK45 = A[0] > 0

GETITEM_CASES = [
    # basic
    (0,), (-1, 2), (slice(1, None), slice(None, None, -2)), (Ellipsis, None, 1), (),
    # integer arrays and lists
    (np.array([0, 2]),), ([2, 0, 2],), (slice(None), [1, 3]), (Ellipsis, [4, 0]), ([-1, -3],),
    ([[0], [1]], [1, 2]), (np.array([[0, 1], [2, 0]]), slice(None), np.array([3, 4])),
    # advanced indices separated by a slice go first; adjacent ones stay in place
    (0, slice(None), [1, 2]), ([0, 1], slice(None), [1, 2]), (slice(None), [0, 1], [1, 2]),
    ([0, 1], None, [1, 2]), ([0], Ellipsis, [0]), (1, [2, 3], 4), (None, [1, 2], None),
    (slice(None, None, -1), [1, 2], slice(None, None, 2)), (slice(1, 3), [[0, 1], [2, 3]], slice(None, None, -2)),
    # masks and scalar booleans
    (A[:, 0, 0] > 0,), (slice(None), MASK45), (A > 0.5,), (A[:, :, 0] > 0, 1), (True,), (False,), (0, True),
    ([True, False, True],),
    # size 0
    (np.array([], np.int32),), (slice(0, 0), [1]), ([],), (A[:, 0, 0] > 100,),
]


def _np_index(idx):
    return tuple(np.asarray(i) if isinstance(i, kiln.Array) else i for i in idx)


def test_getitem_matches_numpy_jit():
    x = knp.asarray(A)
    outs = kiln.jit(lambda x: [x[i] for i in GETITEM_CASES])(x)
    for idx, out in zip(GETITEM_CASES, outs):
        expected = A[idx]
        assert out.shape == expected.shape, idx
        np.testing.assert_array_equal(np.asarray(out), expected, err_msg=str(idx), strict=True)


def test_getitem_matches_numpy_eager():
    x = knp.asarray(A)
    for idx in GETITEM_CASES[::3] + [(knp.asarray([1, 2]), slice(None), knp.asarray(3)), [0, 2]]:
        expected = A[_np_index(idx) if isinstance(idx, tuple) else idx]
        out = x[idx]
        assert isinstance(out, kiln.Array)
        np.testing.assert_array_equal(np.asarray(out), expected, err_msg=str(idx), strict=True)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.float16, ml_dtypes.bfloat16, np.complex64])
def test_getitem_dtypes(dtype):
    a = (np.arange(24).reshape(4, 6) % 5).astype(dtype)
    idxs = [([3, 0, 3],), (slice(None), np.array([[5, 0]])), (a.astype(bool) if dtype != np.bool_ else a,),
            (1, [2, -1])]
    outs = kiln.jit(lambda x: [x[i] for i in idxs])(a)
    for idx, out in zip(idxs, outs):
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(np.asarray(out), a[idx], err_msg=str(idx), strict=True)


def test_getitem_0d_and_empty_arrays():
    s = knp.asarray(np.float32(3.5))
    for idx in [(), Ellipsis, None, True, False, (None, True)]:
        np.testing.assert_array_equal(np.asarray(s[idx]), np.float32(3.5)[idx], err_msg=str(idx), strict=True)
    e = knp.zeros((0, 3))
    assert e[[]].shape == (0, 3) and e[:, [0, 2]].shape == (0, 2) and e[np.zeros((0, 3), bool)].shape == (0,)
    z = knp.zeros((3, 0))
    assert z[[0, 2]].shape == (2, 0) and z[[1], :].shape == (1, 0)


def test_traced_index_arrays_clamp_and_wrap():
    """Out-of-bounds gathers clamp (JAX); negative indices count from the end."""
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    f = kiln.jit(lambda x, i, j: (x[i], x[i, j], x[:, j], x[i[:, None], j]))
    i = np.array([0, -1, 3, 7, -9], np.int32)
    j = np.array([4, -5, 9, 0, 1], np.int32)
    ci, cj = np.clip(np.where(i < 0, i + 4, i), 0, 3), np.clip(np.where(j < 0, j + 5, j), 0, 4)
    r = f(a, i, j)
    for got, exp in zip(r, (a[ci], a[ci, cj], a[:, cj], a[ci[:, None], cj])):
        np.testing.assert_array_equal(np.asarray(got), exp)
    u = kiln.jit(lambda x, i: x[i])(a, np.array([1, 200], np.uint8))
    np.testing.assert_array_equal(np.asarray(u), a[[1, 3]])


def test_boolean_mask_traced_raises_and_concrete_ok():
    a = np.arange(6.0, dtype=np.float32)
    with pytest.raises(kiln.ConcretizationTypeError, match=r"__getitem__: a boolean mask index needs a concrete value.*"
                                                r"traced bool\[6\].*kiln.numpy.where.*nonzero\(mask, size=...\)"):
        kiln.jit(lambda x, m: x[m])(a, a > 2)
    with pytest.raises(IndexError, match="boolean mask index needs a concrete value"):
        kiln.jit(lambda x: x.at[x > 2].set(0.0))(a)
    # a mask computed from a closed-over constant is concrete under jit
    got = kiln.jit(lambda x: x[a > 2])(a)
    np.testing.assert_array_equal(np.asarray(got), a[a > 2])
    got = knp.asarray(a).at[knp.asarray(a) > 2].set(0.0)
    np.testing.assert_array_equal(np.asarray(got), np.where(a > 2, 0, a))


def test_getitem_errors():
    x = knp.asarray(A)
    with pytest.raises(TypeError, match=r"__getitem__: indices must be integers.*got a float index 1.5"):
        x[1.5]
    with pytest.raises(IndexError, match=r"got a float index"):
        x[np.array([0.0, 1.0])]
    with pytest.raises(IndexError, match=r"got a float index"):
        x[knp.asarray([0.5])]
    with pytest.raises(IndexError, match=r"shape mismatch: indexing arrays could not be broadcast together with "
                                         r"shapes \(2,\) \(3,\)"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match=r"boolean index did not match indexed array along axis 1; size of axis is "
                                         r"4 but size of corresponding boolean axis is 3"):
        x[:, np.array([True, False, True])]
    with pytest.raises(IndexError, match=r"too many indices for array: array is 3-dimensional, but 4 were indexed"):
        x[0, [0], 0, 0]
    with pytest.raises(IndexError, match=r"too many indices.*but 4 were indexed"):
        x[MASK45, 0, 0]
    with pytest.raises(IndexError, match=r"unsupported index 'a' of type str"):
        x["a"]
    with pytest.raises(IndexError, match=r"unsupported index array of dtype"):
        x[np.array(["a"])]
    with pytest.raises(IndexError, match=r"an index list must be rectangular"):
        x[[0, [1, 2]]]
    with pytest.raises(IndexError, match=r"slice bounds must be integers or None, got 2.5"):
        x[0:2.5]
    with pytest.raises(ValueError, match=r"slice step cannot be zero"):
        x[::0]
    with pytest.raises(IndexError, match=r"slice bounds must be static integers, got a traced value"):
        kiln.jit(lambda x, i: x[i:])(A, np.int32(1))
    with pytest.raises(IndexError, match=r"single ellipsis"):
        x[..., [0], ...]
    with pytest.raises(IndexError, match=r"index is out of bounds for axis 0 with size 0"):
        knp.zeros((0, 2))[[0]]


def test_updates_of_an_array_without_elements_change_nothing():
    # Every index is out of bounds and every mode drops it (as JAX's); reading such an index is still an error.
    empty = knp.zeros((0, 3))
    for update in (lambda e: e.at[knp.array([0, 1])].add(1.0, mode="drop"), lambda e: e.at[0].set(1.0),
                   lambda e: e.at[knp.array([0, 1])].add(knp.ones((2, 3)), mode="clip")):
        for fn in (update, kiln.jit(update)):
            out = fn(empty)
            assert out.shape == (0, 3) and out.dtype == np.float32


# -- x.at[...] ------------------------------------------------------------------------------------

def _np_at(a, idx, op, v):
    out = a.copy()
    if op == "set":
        out[idx] = v
    else:
        getattr(np, op).at(out, idx, v)
    return out


AT_INDICES = [(1,), (slice(None), [1, 1, 3]), ([0, 0, 2], [1, 1, 4]), (slice(None, None, 2), slice(1, 4)),
              (Ellipsis,), (None, 1), (slice(None, None, -1), 2), ([],), (-1, -2), (MASK45[:4, :5],)]
AT_OPS = [("set", "set"), ("add", "add"), ("multiply", "multiply"), ("minimum", "min"), ("maximum", "max"),
          ("subtract", "subtract")]


def test_at_updates_match_numpy():
    a = rng.standard_normal((4, 5)).astype(np.float32)
    v = np.float32(1.5)

    def f(x):
        return [getattr(x.at[idx], meth)(v) for idx in AT_INDICES for _, meth in AT_OPS]

    outs = kiln.jit(f)(a)
    k = 0
    for idx in AT_INDICES:
        for op, meth in AT_OPS:
            np.testing.assert_array_equal(np.asarray(outs[k]), _np_at(a, idx, op, v), err_msg=f"{idx} {meth}")
            k += 1
    x = knp.asarray(a)
    for idx in AT_INDICES[:3]:
        np.testing.assert_array_equal(np.asarray(x.at[idx].add(v)), _np_at(a, idx, "add", v), err_msg=str(idx))


def test_at_updates_arrays_dtypes_and_duplicates():
    xi = np.arange(10, dtype=np.int32)
    idx = np.array([1, 1, 3, 12, -1, -12])
    vals = np.array([5, 6, 7, 8, 9, 10], np.int32)
    in_bounds = np.array([1, 1, 3, 9])  # 12 and -12 are dropped; -1 wraps to 9

    def f(x, v):
        return (x.at[idx].add(v), x.at[idx].multiply(v), x.at[idx].min(v), x.at[idx].max(v),
                x.at[idx].set(v, mode="clip"), x.at[idx].add(v, mode="clip"), x.at[2:5].set(v[:3]),
                x.at[idx].add(v, mode="promise_in_bounds"))

    outs = kiln.jit(f)(xi, vals)
    kept = vals[[0, 1, 2, 4]]
    for got, op in zip(outs[:4], ("add", "multiply", "minimum", "maximum")):
        np.testing.assert_array_equal(np.asarray(got), _np_at(xi, in_bounds, op, kept), err_msg=op)
        assert got.dtype == np.int32
    clipped = np.clip(np.where(idx < 0, idx + 10, idx), 0, 9)
    assert np.asarray(outs[4])[clipped[-1]] in vals  # set: one of the colliding updates wins
    np.testing.assert_array_equal(np.asarray(outs[5]), _np_at(xi, clipped, "add", vals))
    np.testing.assert_array_equal(np.asarray(outs[6]), _np_at(xi, slice(2, 5), "set", vals[:3]))
    np.testing.assert_array_equal(np.asarray(outs[7]), np.asarray(outs[0]))
    # bool and float16 operands, int values into a float array
    b = knp.asarray(np.array([True, False, True]))
    np.testing.assert_array_equal(np.asarray(b.at[1].set(True)), [True, True, True])
    np.testing.assert_array_equal(np.asarray(b.at[0].multiply(False)), [False, False, True])
    h = knp.asarray(np.float16([1, 2, 3])).at[[0, 2]].add(np.int8(2))
    assert h.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(h), np.float16([3, 2, 5]))
    w = knp.zeros(3).at[1].set(2)
    assert w.dtype == np.float32 and not w.weak_type


def test_at_0d_and_reversed_slices():
    s = knp.asarray(np.float32(2.0))
    outs = kiln.jit(lambda s: (s.at[()].set(5.0), s.at[...].add(1.0), s.at[None].multiply(3.0),
                               s.at[()].get(mode="fill"), s.at[True].set(1.0), s.at[False].set(1.0)))(s)
    for got, exp in zip(outs, (5.0, 3.0, 6.0, 2.0, 1.0, 2.0)):
        assert got.shape == () and float(got) == exp
    a = np.arange(6, dtype=np.float32)
    x = knp.asarray(a)
    np.testing.assert_array_equal(np.asarray(x.at[::-1].set(x)), a[::-1])
    np.testing.assert_array_equal(np.asarray(x.at[::-2].get(mode="fill")), a[::-2])
    np.testing.assert_array_equal(np.asarray(x.at[4::-3].add(10.0)), _np_at(a, slice(4, None, -3), "add", 10.0))


def test_at_divide_power_apply_get():
    a = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    x = knp.asarray(a)
    np.testing.assert_allclose(np.asarray(x.at[1, [0, 0, 2]].divide(2.0)), _np_at(a, (1, [0, 0, 2]), "divide", 2.0))
    np.testing.assert_allclose(np.asarray(x.at[:, 1].power(2)), _np_at(a, (slice(None), 1), "power", 2))
    xi = knp.arange(4)
    d = xi.at[1].divide(2)
    assert d.dtype == np.float32  # true division, as x / y
    np.testing.assert_allclose(np.asarray(d), [0, 0.5, 2, 3])
    got = x.at[[0, 0, 2], 1].apply(lambda v: v * 10)
    expected = a.copy()
    expected[0, 1] *= 100
    expected[2, 1] *= 10
    np.testing.assert_array_equal(np.asarray(got), expected)
    g = kiln.jit(lambda x: (x.at[[1, 5]].get(), x.at[[1, 5]].get(mode="fill", fill_value=-1.0),
                            x.at[[1, 5]].get(mode="fill"), x.at[5].get(mode="fill", fill_value=7.0),
                            x.at[1, [1, 9]].get(mode="clip"), x.at[[1, 5]].get(fill_value=3.0)))(a)
    np.testing.assert_array_equal(np.asarray(g[0]), a[[1, 2]])
    np.testing.assert_array_equal(np.asarray(g[1]), np.stack([a[1], np.full(4, -1.0, np.float32)]))
    assert np.all(np.isnan(np.asarray(g[2])[1]))
    np.testing.assert_array_equal(np.asarray(g[3]), np.full(4, 7.0, np.float32))
    np.testing.assert_array_equal(np.asarray(g[4]), a[1, [1, 3]])
    np.testing.assert_array_equal(np.asarray(g[5]), a[[1, 2]])  # fill_value without mode='fill' is ignored


def test_at_errors():
    x = knp.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match=r"at\[\].set: shape mismatch: value array of shape \(4,\) could not be "
                                         r"broadcast to indexing result of shape \(2,\)"):
        x.at[0, [0, 1]].set(knp.zeros(4))
    with pytest.raises(ValueError, match=r"at\[\].add: unknown mode 'wrap'"):
        x.at[0].add(1.0, mode="wrap")
    with pytest.raises(ValueError, match=r"at\[\].get: unknown mode 'bogus'"):
        x.at[0].get(mode="bogus")
    with pytest.raises(TypeError, match=r"at\[\].apply: func must be callable"):
        x.at[0].apply(2.0)
    with pytest.raises(TypeError, match=r"at\[\].subtract: not supported for boolean arrays"):
        knp.asarray([True, False]).at[0].subtract(True)
    with pytest.raises(TypeError, match=r"at\[\].set: argument 0 of type str"):
        x.at[0].set("a")
    with pytest.warns(FutureWarning, match=r"at\[\].set: scatter inputs have incompatible types: cannot safely cast "
                                           r"value from dtype=float32 to dtype=int32"):
        out = knp.arange(3).at[1].set(2.7)
    np.testing.assert_array_equal(np.asarray(out), [0, 2, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        knp.arange(3.0).at[1].set(2)  # int into float: safe, no warning
    with pytest.raises(TypeError, match=r"immutable.*x = x\.at\[0\]\.set\(value\)"):
        x[0] = 1.0


# -- take / take_along_axis / put_along_axis -------------------------------------------------------

def test_take():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[0, 3], [-1, 5]], np.int32)
    f = kiln.jit(lambda x, i: (knp.take(x, i, axis=2), knp.take(x, i), knp.take(x, i, axis=1, mode="clip"),
                               knp.take(x, i, axis=-1, mode="wrap"), knp.take(x, i, axis=0, fill_value=-1.0),
                               knp.take(x, np.int32(1), axis=1)))
    t2, tflat, tclip, twrap, tfill, tscalar = f(a, idx)
    inb = np.where(idx < 0, idx + 4, idx)
    expected = np.take(a, np.clip(inb, 0, 3), axis=2)
    expected[..., 1, 1] = np.nan  # 5 is out of bounds for axis 2: filled with NaN
    np.testing.assert_array_equal(np.asarray(t2), expected)
    np.testing.assert_array_equal(np.asarray(tflat), np.take(a, np.where(idx < 0, idx + 24, idx)))
    np.testing.assert_array_equal(np.asarray(tclip), np.take(a, idx, axis=1, mode="clip"))
    np.testing.assert_array_equal(np.asarray(twrap), np.take(a, idx, axis=-1, mode="wrap"))
    exp_fill = np.full((2, 2, 3, 4), -1.0, np.float32)
    exp_fill[0, 0], exp_fill[1, 0] = a[0], a[1]  # 3 and 5 out of bounds for axis 0 (size 2); -1 wraps to 1
    np.testing.assert_array_equal(np.asarray(tfill), exp_fill)
    np.testing.assert_array_equal(np.asarray(tscalar), a[:, 1])
    ti = knp.take(knp.asarray(np.arange(5, dtype=np.int32)), np.array([1, 7]))
    np.testing.assert_array_equal(np.asarray(ti), [1, np.iinfo(np.int32).min])
    assert knp.take(knp.zeros((0, 3)), np.zeros(0, np.int32), axis=0).shape == (0, 3)
    with pytest.raises(IndexError, match=r"take: cannot do a non-empty take from an empty axis"):
        knp.take(knp.zeros((0, 3)), np.array([0]), axis=0)
    with pytest.raises(TypeError, match=r"take: indices must be integers, got an array of dtype float32"):
        knp.take(knp.arange(3), np.array([0.0]))
    with pytest.raises(ValueError, match=r"take: invalid mode 'bogus'"):
        knp.take(knp.arange(3), np.array([0]), mode="bogus")
    with pytest.raises(NotImplementedError, match=r"take: mode='raise' is not supported"):
        knp.take(knp.arange(3), np.array([0]), mode="raise")
    with pytest.raises(ValueError, match=r"take: axis 3 is out of bounds for an array of dimension 3"):
        knp.take(knp.asarray(a), np.array([0]), axis=3)
    with pytest.raises(TypeError, match=r"take: out= is not supported"):
        knp.take(knp.asarray(a), np.array([0]), out=knp.asarray(a))


def test_take_along_axis_and_put_along_axis():
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    i2 = rng.integers(0, 5, (3, 4, 2))
    i1 = rng.integers(0, 4, (1, 6, 5))
    neg = -rng.integers(1, 4, (3, 1, 5))
    f = kiln.jit(lambda x: (knp.take_along_axis(x, i2, axis=2), knp.take_along_axis(x, i1, axis=1),
                            knp.take_along_axis(x, neg, axis=0), knp.take_along_axis(x, i2 + 3, axis=-1),
                            knp.take_along_axis(x, i2 + 3, axis=-1, mode="clip"),
                            knp.take_along_axis(x.reshape(-1), np.array([0, 59, 60]), axis=None),
                            knp.put_along_axis(x, i2, -1.0, axis=2, inplace=False),
                            knp.put_along_axis(x, i1[:, :4], np.arange(20.0).reshape(1, 4, 5), axis=1,
                                               inplace=False)))
    outs = f(a)
    np.testing.assert_array_equal(np.asarray(outs[0]), np.take_along_axis(a, i2, axis=2))
    np.testing.assert_array_equal(np.asarray(outs[1]), np.take_along_axis(a, i1, axis=1))
    np.testing.assert_array_equal(np.asarray(outs[2]), np.take_along_axis(a, neg + 3, axis=0))
    exp = np.take_along_axis(a, np.clip(i2 + 3, 0, 4), axis=-1)
    exp[i2 + 3 > 4] = np.nan  # out of bounds: filled
    np.testing.assert_array_equal(np.asarray(outs[3]), exp)
    np.testing.assert_array_equal(np.asarray(outs[4]), np.take_along_axis(a, np.clip(i2 + 3, 0, 4), axis=-1))
    np.testing.assert_array_equal(np.asarray(outs[5]), [a.reshape(-1)[0], a.reshape(-1)[59], np.nan])
    b = a.copy()
    np.put_along_axis(b, i2, -1.0, axis=2)
    np.testing.assert_array_equal(np.asarray(outs[6]), b)
    b = a.copy()
    np.put_along_axis(b, i1[:, :4], np.arange(20.0).reshape(1, 4, 5), axis=1)
    # repeated indices: NumPy keeps the last update, kiln an unspecified one; compare where unique
    got = np.asarray(outs[7])
    assert got.shape == b.shape
    eager = knp.take_along_axis(knp.asarray(a), knp.asarray(i2), axis=2)
    np.testing.assert_array_equal(np.asarray(eager), np.take_along_axis(a, i2, axis=2))
    assert knp.take_along_axis(knp.zeros((2, 0)), np.zeros((2, 3), np.int32), axis=1).shape == (2, 3)
    with pytest.raises(ValueError, match=r"take_along_axis: indices and arr must have the same number of "
                                         r"dimensions; 1 vs. 3"):
        knp.take_along_axis(knp.asarray(a), np.array([0]), axis=0)
    with pytest.raises(ValueError, match=r"take_along_axis: indices must be 1-D when axis=None"):
        knp.take_along_axis(knp.asarray(a), i2, axis=None)
    with pytest.raises(ValueError, match=r"take_along_axis: indices of shape \(2, 4, 2\) and arr of shape "
                                         r"\(3, 4, 5\) do not broadcast"):
        knp.take_along_axis(knp.asarray(a), i2[:2], axis=2)
    with pytest.raises(ValueError, match=r"take_along_axis: invalid mode 'wrap'"):
        knp.take_along_axis(knp.asarray(a), i2, axis=2, mode="wrap")
    with pytest.raises(ValueError, match=r"put_along_axis: kiln arrays are immutable.*inplace=False"):
        knp.put_along_axis(knp.asarray(a), i2, 0.0, axis=2)
    with pytest.raises(ValueError, match=r"put_along_axis: values of shape \(3,\) must broadcast to the shape of "
                                         r"indices \(3, 4, 2\)"):
        knp.put_along_axis(knp.asarray(a), i2, np.zeros(3, np.float32), axis=2, inplace=False)
    with pytest.raises(ValueError, match=r"put_along_axis: arr and indices must have the same number"):
        knp.put_along_axis(knp.asarray(a), np.array([0]), 0.0, axis=2, inplace=False)


def test_put_along_axis_axis_none():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = knp.put_along_axis(knp.asarray(a), np.array([0, 5]), np.array([9, 8], np.int32), None, inplace=False)
    expected = a.copy()
    np.put_along_axis(expected, np.array([0, 5]), np.array([9, 8]), None)
    np.testing.assert_array_equal(np.asarray(out), expected)


# -- nonzero / argwhere / flatnonzero ---------------------------------------------------------------

@pytest.mark.parametrize("shape,dtype", [((3, 4, 5), np.float32), ((7,), np.int32), ((2, 3), np.bool_),
                                         ((0, 3), np.float32), ((1000,), np.uint8)])
def test_nonzero_eager(shape, dtype):
    a = (rng.integers(0, 3, shape) * rng.integers(0, 2, shape)).astype(dtype)
    for got, exp in zip(knp.nonzero(knp.asarray(a)), np.nonzero(a)):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(np.asarray(got), exp)
    np.testing.assert_array_equal(np.asarray(knp.argwhere(a)), np.argwhere(a))
    np.testing.assert_array_equal(np.asarray(knp.flatnonzero(a)), np.flatnonzero(a))


def test_where_with_condition_alone_is_nonzero():
    # As in JAX and NumPy: where(c) is nonzero(c); size and fill_value go to it (size is needed under jit).
    a = (rng.integers(0, 3, (3, 4)) * rng.integers(0, 2, (3, 4))).astype(np.float32)
    got = knp.where(knp.asarray(a) > 0)
    assert isinstance(got, tuple) and len(got) == 2
    for g, e in zip(got, np.where(a > 0)):
        np.testing.assert_array_equal(np.asarray(g), e)
    count = int(np.count_nonzero(a))
    padded = kiln.jit(lambda x: knp.where(x, size=count + 1, fill_value=-1))(a)
    for g, e in zip(padded, np.nonzero(a)):
        np.testing.assert_array_equal(np.asarray(g), np.concatenate([e, [-1]]))
    with pytest.raises(kiln.ConcretizationTypeError, match="size"):
        kiln.jit(lambda x: knp.where(x))(a)
    x = knp.asarray(a)
    with pytest.raises(ValueError, match=r"kiln\.numpy\.where: pass both x and y .*; got x alone"):
        knp.where(x > 0, x)
    with pytest.raises(ValueError, match=r"kiln\.numpy\.where: size and fill_value apply to the one-argument form"):
        knp.where(x > 0, x, 0.0, size=3)
    np.testing.assert_array_equal(knp.where(x > 0, x, -1.0), np.where(a > 0, a, -1.0))

def test_nonzero_size_under_jit():
    a = (rng.integers(0, 3, (3, 4, 5)) * rng.integers(0, 2, (3, 4, 5))).astype(np.float32)
    count = int(np.count_nonzero(a))
    f = kiln.jit(lambda x: (knp.nonzero(x, size=count + 3, fill_value=-1), knp.nonzero(x, size=4),
                            knp.argwhere(x, size=count + 2, fill_value=(7, 8, 9)), knp.flatnonzero(x, size=2),
                            knp.nonzero(x, size=0)))
    padded, truncated, arg, flat, empty = f(a)
    for got, exp in zip(padded, np.nonzero(a)):
        np.testing.assert_array_equal(np.asarray(got), np.concatenate([exp, [-1, -1, -1]]))
    for got, exp in zip(truncated, np.nonzero(a)):
        np.testing.assert_array_equal(np.asarray(got), exp[:4])
    np.testing.assert_array_equal(np.asarray(arg), np.concatenate([np.argwhere(a), [[7, 8, 9]] * 2]))
    np.testing.assert_array_equal(np.asarray(flat), np.flatnonzero(a)[:2])
    assert all(e.shape == (0,) for e in empty)
    z = knp.nonzero(knp.zeros((2, 2)), size=3, fill_value=5)
    np.testing.assert_array_equal(np.asarray(z[0]), [5, 5, 5])
    assert knp.argwhere(knp.asarray(2.0)).shape == (1, 0) and knp.argwhere(knp.asarray(0.0)).shape == (0, 0)


def test_nonzero_errors():
    with pytest.raises(kiln.ConcretizationTypeError, match=r"nonzero: the number of nonzero elements decides the "
                                                           r"shape.*Pass size="):
        kiln.jit(lambda x: knp.nonzero(x))(np.ones(3, np.float32))
    with pytest.raises(kiln.ConcretizationTypeError, match=r"argwhere: the number of nonzero elements"):
        kiln.jit(lambda x: knp.argwhere(x))(np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"nonzero: calling nonzero on 0-d arrays is not allowed"):
        knp.nonzero(knp.asarray(1.0))
    with pytest.raises(ValueError, match=r"nonzero: size must be non-negative, got -1"):
        knp.nonzero(knp.ones(3), size=-1)
    with pytest.raises(ValueError, match=r"nonzero: fill_value must be a scalar or a tuple of length 2"):
        knp.nonzero(knp.ones((2, 2)), size=5, fill_value=(1, 2, 3))
    with pytest.raises(TypeError, match=r"nonzero: size must be an integer"):
        knp.nonzero(knp.ones(3), size=2.5)
    with pytest.raises(TypeError, match=r"flatnonzero: argument 0 is a list"):
        knp.flatnonzero([1, 0])


def test_non_tuple_sequence_index_is_rejected_as_jax():
    x = knp.arange(12.0).reshape(3, 4)
    for idx in ([0, slice(None)], [slice(None), None], [None, 0], [Ellipsis], [[0, 1], slice(1, 3)]):
        with pytest.raises(TypeError, match=r"kiln.numpy.__getitem__: a list containing slices, None or Ellipsis "
                                            r"cannot be a multi-dimensional index .* use arr\[tuple\(seq\)\]"):
            x[idx]
    # A list of integers or booleans is an index array, as in NumPy and JAX.
    np.testing.assert_array_equal(np.asarray(x[[0, 2]]), np.arange(12.0).reshape(3, 4)[[0, 2]])
    np.testing.assert_array_equal(np.asarray(x[[True, False, True]]), np.arange(12.0).reshape(3, 4)[[0, 2]])
    np.testing.assert_array_equal(np.asarray(x[tuple([0, slice(None)])]), np.arange(4.0))


def test_at_methods_take_jax_keyword_options():
    import inspect
    x = knp.arange(4.0)
    for name in ("get", "set", "add", "subtract", "multiply", "divide", "power", "min", "max", "apply"):
        params = inspect.signature(getattr(x.at[0], name)).parameters
        assert params["out_sharding"].default is None and params["wrap_negative_indices"].default is True, name
    np.testing.assert_array_equal(x.at[-1].set(9.0, wrap_negative_indices=True), [0.0, 1.0, 2.0, 9.0])
    assert float(x.at[-1].get(out_sharding=None)) == 3.0
    with pytest.raises(TypeError, match=r"kiln.numpy.at\[\].add: out_sharding must be a kiln.sharding.NamedSharding"):
        x.at[0].add(1.0, out_sharding="data")


@pytest.mark.parametrize("jitted", [False, True])
def test_at_wrap_negative_indices_false_leaves_negative_indices_out_of_bounds(jitted):
    """JAX's wrap_negative_indices=False: a negative index is out of bounds, so ``mode`` decides (updates dropped by
    default, reads clamped or filled), for index arrays and integers alike; slices still count from the end."""
    xn = np.arange(5.0)
    i = np.array([-1, 2, -6, 7])
    inb = (i >= 0) & (i < 5)

    def run(f, *args):
        return np.asarray(kiln.jit(f)(*args) if jitted else f(*args))

    def dropped(update):  # NumPy: only the in-bounds indices are updated
        want = xn.copy()
        update(want, i[inb])
        return want

    x, ik = knp.asarray(xn), knp.asarray(i)
    np.testing.assert_array_equal(run(lambda x, i: x.at[i].set(9.0, wrap_negative_indices=False), x, ik),
                                  dropped(lambda w, j: w.__setitem__(j, 9.0)))
    np.testing.assert_array_equal(run(lambda x, i: x.at[i].add(9.0, wrap_negative_indices=False), x, ik),
                                  dropped(lambda w, j: np.add.at(w, j, 9.0)))
    np.testing.assert_array_equal(run(lambda x, i: x.at[i].divide(2.0, wrap_negative_indices=False), x, ik),
                                  dropped(lambda w, j: np.divide.at(w, j, 2.0)))
    np.testing.assert_allclose(run(lambda x, i: x.at[i].apply(knp.sin, wrap_negative_indices=False), x, ik),
                               dropped(lambda w, j: np.sin.at(w, j)), rtol=1e-6)
    np.testing.assert_array_equal(run(lambda x: x.at[-1].set(9.0, wrap_negative_indices=False), x), xn)
    # mode='clip' clamps -1 and -6 to 0 (with wrapping, -1 would be the last element)
    np.testing.assert_array_equal(run(lambda x, i: x.at[i].set(9.0, mode="clip", wrap_negative_indices=False), x, ik),
                                  [9.0, 1.0, 9.0, 3.0, 9.0])
    np.testing.assert_array_equal(run(lambda x, i: x.at[i].get(wrap_negative_indices=False), x, ik),
                                  xn[np.clip(i, 0, 4)])
    np.testing.assert_array_equal(
        run(lambda x, i: x.at[i].get(mode="fill", fill_value=-3.0, wrap_negative_indices=False), x, ik),
        np.where(inb, xn[np.clip(i, 0, 4)], -3.0))
    np.testing.assert_array_equal(run(lambda x: x.at[-1].get(wrap_negative_indices=False), x), 0.0)
    assert np.isnan(run(lambda x: x.at[-1].get(mode="fill", wrap_negative_indices=False), x))
    np.testing.assert_array_equal(run(lambda x: x.at[-2:].set(9.0, wrap_negative_indices=False), x),
                                  [0.0, 1.0, 2.0, 9.0, 9.0])
    np.testing.assert_array_equal(
        run(lambda x, i: x.at[-1, i].add(1.0, wrap_negative_indices=False), knp.ones((3, 4)), ik), np.ones((3, 4)))
    # the default counts from the end, once (-6 stays out of bounds)
    np.testing.assert_array_equal(run(lambda x, i: x.at[i].set(9.0), x, ik), [0.0, 1.0, 9.0, 3.0, 9.0])


def test_gradient_of_an_out_of_bounds_read_goes_to_the_clamped_element():
    """x[9] on a length-4 x reads x[3]; its derivative is 1 at x[3] (README: JAX's is 0 there)."""
    g = kiln.grad(lambda x: x[knp.array([1, 9])].sum())(knp.arange(4.0))
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.0, 1.0])
