"""kiln.lax gather/scatter and the one-dimension indexing helpers, against NumPy references.

The references below implement XLA's Gather/Scatter semantics with Python loops (gathers clamp
each start index so that its window is in bounds; scatters skip windows that are not).
Cases are grouped into one jitted function per test to keep compilations few.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax

GDN, SDN, Mode = lax.GatherDimensionNumbers, lax.ScatterDimensionNumbers, lax.GatherScatterMode
rng = np.random.default_rng(0)


# -- references ---------------------------------------------------------------------------------

def np_gather(operand, indices, dn, slice_sizes, mode="clamp", fill=None):
    dn = GDN(*dn)
    batch_shape = indices.shape[:-1]
    kept = [d for d in range(operand.ndim)
            if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    rank = len(batch_shape) + len(dn.offset_dims)
    bit, oit = iter(batch_shape), iter(slice_sizes[d] for d in kept)
    out_shape = tuple(next(oit) if i in dn.offset_dims else next(bit) for i in range(rank))
    out = np.zeros(out_shape, operand.dtype)
    batch_pos = [i for i in range(rank) if i not in dn.offset_dims]
    for idx in np.ndindex(*out_shape):
        b = tuple(idx[i] for i in batch_pos)
        start = [0] * operand.ndim
        inb = True
        for k, d in enumerate(dn.start_index_map):
            s = int(indices[b + (k,)])
            hi = operand.shape[d] - slice_sizes[d]
            inb &= 0 <= s <= hi
            start[d] = min(max(s, 0), hi)
        for o, i in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
            start[o] = b[i]
        pos = list(start)
        for d, i in zip(kept, dn.offset_dims):
            pos[d] += idx[i]
        out[idx] = operand[tuple(pos)] if (inb or mode != "fill") else fill
    return out


def np_scatter(operand, indices, updates, dn, combine):
    dn = SDN(*dn)
    out = operand.copy()
    window_dims = [d for d in range(operand.ndim)
                   if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    wsize = [1] * operand.ndim
    for d, u in zip(window_dims, dn.update_window_dims):
        wsize[d] = updates.shape[u]
    scatter_pos = [i for i in range(updates.ndim) if i not in dn.update_window_dims]
    for idx in np.ndindex(*updates.shape):
        b = tuple(idx[i] for i in scatter_pos)
        start = [0] * operand.ndim
        for k, d in enumerate(dn.scatter_dims_to_operand_dims):
            start[d] = int(indices[b + (k,)])
        for o, i in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims):
            start[o] = b[i]
        if any(not 0 <= start[d] <= operand.shape[d] - wsize[d] for d in range(operand.ndim)):
            continue  # the whole window is dropped
        pos = list(start)
        for d, u in zip(window_dims, dn.update_window_dims):
            pos[d] += idx[u]
        out[tuple(pos)] = combine(out[tuple(pos)], updates[idx])
    return out


# -- gather ---------------------------------------------------------------------------------------

X345 = rng.standard_normal((3, 4, 5)).astype(np.float32)
GATHER_CASES = [
    # (operand, indices, dimension numbers, slice sizes)
    (X345, np.array([[0], [2], [1], [2]], np.int32), GDN((1, 2), (0,), (0,)), (1, 4, 5)),
    (X345, np.array([[[0, 1], [2, 3]]], np.int32), GDN((2,), (0, 1), (0, 1)), (1, 1, 5)),
    (X345, np.array([[1, 0], [0, 3], [2, 2]], np.int32), GDN((1, 2), (0,), (0, 2)), (1, 2, 3)),  # windows
    (X345, np.array([[2, 4], [-1, 9]], np.int32), GDN((1,), (0, 2), (0, 2)), (1, 4, 1)),  # clamped
    (X345, np.array([[4], [0], [1]], np.int64), GDN((0, 2), (1,), (1,)), (3, 1, 5)),  # offset dims first
    (X345, np.array([1], np.uint8), GDN((0, 1), (0,), (0,)), (1, 4, 5)),  # 1-d indices, unsigned
    (X345, rng.integers(0, 5, (3, 4, 1)).astype(np.int32),  # batching dims (take_along_axis)
     GDN((), (2,), (2,), (0, 1), (0, 1)), (1, 1, 1)),
    (np.arange(6, dtype=np.int32), np.array([[5], [0]], np.int32), GDN((), (0,), (0,)), (1,)),
    (np.array([True, False, True]), np.array([[1], [2]], np.int32), GDN((), (0,), (0,)), (1,)),
    (np.arange(6, dtype=np.float16), np.zeros((0, 1), np.int32), GDN((), (0,), (0,)), (1,)),  # size 0
]


def _gather_case(i):
    op, idx, dn, ss = GATHER_CASES[i]
    return lambda o, ix: lax.gather(o, ix, dn, ss)


def test_gather_matches_reference_eager_and_jit():
    fns = [_gather_case(i) for i in range(len(GATHER_CASES))]
    outs = kiln.jit(lambda args: [f(*a) for f, a in zip(fns, args)])([(c[0], c[1]) for c in GATHER_CASES])
    for i, (op, idx, dn, ss) in enumerate(GATHER_CASES):
        expected = np_gather(op, idx, dn, ss)
        np.testing.assert_array_equal(np.asarray(outs[i]), expected, err_msg=f"jit case {i}", strict=True)
        if i % 3 == 0:
            got = fns[i](knp.asarray(op), knp.asarray(idx))
            np.testing.assert_array_equal(np.asarray(got), expected, err_msg=f"eager case {i}", strict=True)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, ml_dtypes.bfloat16, np.complex64])
def test_gather_modes_and_default_fill_values(dtype):
    x = (np.arange(10) % 3).astype(dtype)
    idx = np.array([[2], [9], [10], [-1], [-100], [4]], np.int32)
    dn = GDN((), (0,), (0,))

    def f(x, idx):
        return (lax.gather(x, idx, dn, (1,)), lax.gather(x, idx, dn, (1,), mode="clip"),
                lax.gather(x, idx, dn, (1,), mode=Mode.FILL_OR_DROP),
                lax.gather(x, idx, dn, (1,), mode="fill", fill_value=1),
                lax.gather(x, idx, dn, (1,), mode="promise_in_bounds"))

    promise, clip, fill, fill1, promise2 = kiln.jit(f)(x, idx)
    clamped = np_gather(x, idx, dn, (1,))
    np.testing.assert_array_equal(np.asarray(promise), clamped)
    np.testing.assert_array_equal(np.asarray(promise2), clamped)
    np.testing.assert_array_equal(np.asarray(clip), clamped)
    if np.dtype(dtype) == np.bool_:
        default = True
    elif np.dtype(dtype).kind in "fcV":
        default = np.nan
    else:
        info = np.iinfo(dtype)
        default = info.min if np.dtype(dtype).kind == "i" else info.max
    up = (lambda a: np.asarray(a).astype(np.float32)) if np.dtype(dtype) == ml_dtypes.bfloat16 else np.asarray
    np.testing.assert_array_equal(up(fill), up(np_gather(x, idx, dn, (1,), mode="fill", fill=default)))
    np.testing.assert_array_equal(up(fill1), up(np_gather(x, idx, dn, (1,), mode="fill", fill=1)))
    assert fill.dtype == np.dtype(dtype)


def test_gather_fill_drops_whole_window_and_clip_clamps_window():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    idx = np.array([[0, 3], [1, 4], [3, 0]], np.int32)  # window 2x2: (1, 4) and (3, 0)... (1,4) overflows
    dn = GDN((1, 2), (), (0, 1))
    fill = lax.gather(knp.asarray(x), idx, dn, (2, 2), mode="fill", fill_value=-1.0)
    clip = lax.gather(knp.asarray(x), idx, dn, (2, 2), mode="clip")
    np.testing.assert_array_equal(np.asarray(fill), np_gather(x, idx, dn, (2, 2), mode="fill", fill=-1.0))
    np.testing.assert_array_equal(np.asarray(clip), np_gather(x, idx, dn, (2, 2)))
    assert np.all(np.asarray(fill)[1] == -1) and np.all(np.asarray(fill)[2] == -1)


def test_gather_traced_indices_and_x64():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    dn = GDN((1,), (0,), (0,))
    f = kiln.jit(lambda x, i: lax.gather(x, i, dn, (1, 4), mode="clip"))
    np.testing.assert_array_equal(np.asarray(f(x, np.array([[2], [7]], np.int32))), x[[2, 2]])
    kiln.config.update("enable_x64", True)
    out = lax.gather(knp.asarray(x), np.array([[1], [0]], np.int64), dn, (1, 4))
    np.testing.assert_array_equal(np.asarray(out), x[[1, 0]])


# -- scatter --------------------------------------------------------------------------------------

_COMBINE = {"scatter": lambda a, b: b, "scatter_add": np.add, "scatter_mul": np.multiply,
            "scatter_min": np.minimum, "scatter_max": np.maximum}
S_IDX = np.array([[1], [3], [1], [9], [-1], [0]], np.int32)  # a duplicate, two out of bounds
SCATTER_CASES = [
    # (operand, indices, updates, dimension numbers)
    (np.arange(6, dtype=np.float32), S_IDX, np.arange(1, 7, dtype=np.float32), SDN((), (0,), (0,))),
    (np.arange(12, dtype=np.int32).reshape(4, 3), np.array([[0], [2], [0]], np.int32),
     np.arange(9, dtype=np.int32).reshape(3, 3) - 4, SDN((1,), (0,), (0,))),
    (np.ones((3, 4), np.float32), np.array([[0, 1], [2, 3], [1, 2]], np.int32),  # a 2x2 window per index
     rng.standard_normal((3, 2, 2)).astype(np.float32), SDN((1, 2), (), (0, 1))),
    (np.zeros((2, 5), np.uint8), np.array([[[4], [0]], [[1], [1]]], np.int32),  # batching dims
     np.array([[7, 8], [9, 10]], np.uint8), SDN((), (1,), (1,), (0,), (0,))),
]


@pytest.mark.parametrize("name", sorted(_COMBINE))
def test_scatter_family_matches_reference(name):
    fn = getattr(lax, name)
    cases = SCATTER_CASES

    def all_cases(args):
        return [fn(o, i, u, c[3]) for (o, i, u), c in zip(args, cases)]

    outs = kiln.jit(all_cases)([c[:3] for c in cases])
    for k, (op, idx, upd, dn) in enumerate(cases):
        np.testing.assert_array_equal(np.asarray(outs[k]), np_scatter(op, idx, upd, dn, _COMBINE[name]),
                                      err_msg=f"{name} case {k}", strict=True)
    op, idx, upd, dn = cases[0]
    eager = fn(knp.asarray(op), knp.asarray(idx), knp.asarray(upd), dn)
    np.testing.assert_array_equal(np.asarray(eager), np_scatter(op, idx, upd, dn, _COMBINE[name]))


def test_scatter_modes():
    op, idx, upd, dn = SCATTER_CASES[0]
    x, u = knp.asarray(op), knp.asarray(upd)
    dropped = np_scatter(op, idx, upd, dn, np.add)
    for mode in (None, "drop", "fill", Mode.FILL_OR_DROP, "promise_in_bounds"):
        np.testing.assert_array_equal(np.asarray(lax.scatter_add(x, idx, u, dn, mode=mode)), dropped)
    clipped = np_scatter(op, np.clip(idx, 0, 5), upd, dn, np.add)
    np.testing.assert_array_equal(np.asarray(lax.scatter_add(x, idx, u, dn, mode="clip")), clipped)


def test_scatter_bool_and_python_scalar_updates():
    x = np.array([True, False, False, True])
    idx = np.array([[1], [3]], np.int32)
    upd = np.array([True, False])
    dn = SDN((), (0,), (0,))
    for name, comb in (("scatter_add", np.logical_or), ("scatter_mul", np.logical_and),
                       ("scatter_max", np.logical_or), ("scatter_min", np.logical_and)):
        got = getattr(lax, name)(knp.asarray(x), idx, upd, dn)
        np.testing.assert_array_equal(np.asarray(got), np_scatter(x, idx, upd, dn, comb), err_msg=name)
    got = lax.scatter(knp.arange(4.0), np.array([2], np.int32), 9.0, SDN((), (0,), (0,)))
    np.testing.assert_array_equal(np.asarray(got), [0, 1, 9, 3])


def test_scatter_apply():
    x = np.arange(6, dtype=np.float32)
    idx = np.array([[1], [4], [1], [8]], np.int32)
    dn = SDN((), (0,), (0,))
    expected = x.copy()
    expected[1] = x[1] * 3 * 3 + 0  # applied once per occurrence
    expected[4] = x[4] * 3
    got = lax.scatter_apply(knp.asarray(x), idx, lambda v: v * 3, dn, update_shape=(4,))
    np.testing.assert_array_equal(np.asarray(got), expected)
    got = kiln.jit(lambda x: lax.scatter_apply(x, idx, knp.sin, dn, update_shape=(4,)))(x)
    exp2 = x.copy()
    exp2[1] = np.sin(np.sin(x[1]))
    exp2[4] = np.sin(x[4])
    np.testing.assert_allclose(np.asarray(got), exp2, rtol=1e-6)


# -- one-dimension helpers -------------------------------------------------------------------------

def test_dim_helpers():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    kx = knp.asarray(x)
    np.testing.assert_array_equal(np.asarray(lax.index_in_dim(kx, 2)), x[2:3])
    np.testing.assert_array_equal(np.asarray(lax.index_in_dim(kx, -1, axis=1, keepdims=False)), x[:, -1])
    np.testing.assert_array_equal(np.asarray(lax.slice_in_dim(kx, 1, 5, 2, axis=1)), x[:, 1:5:2])
    np.testing.assert_array_equal(np.asarray(lax.slice_in_dim(kx, -3, None)), x[-3:])

    @kiln.jit
    def f(x, i):
        return (lax.dynamic_slice_in_dim(x, i, 2, axis=1), lax.dynamic_index_in_dim(x, i, 0, keepdims=False),
                lax.dynamic_index_in_dim(x, i, 1), lax.dynamic_update_index_in_dim(x, knp.zeros(6), i, 0),
                lax.dynamic_update_slice_in_dim(x, knp.ones((4, 2)), i, axis=1))

    for i in (1, -1, 5):
        j = i % 4 if -4 <= i < 4 else 3
        a, b, c, d, e = f(x, np.int32(i))
        s = min(i % 6 if i < 0 else i, 4)
        np.testing.assert_array_equal(np.asarray(a), x[:, s:s + 2], err_msg=f"{i}")
        np.testing.assert_array_equal(np.asarray(b), x[j])
        k = i % 6 if i < 0 else min(i, 5)
        np.testing.assert_array_equal(np.asarray(c), x[:, k:k + 1])
        expected = x.copy()
        expected[j] = 0
        np.testing.assert_array_equal(np.asarray(d), expected)
        expected = x.copy()
        expected[:, s:s + 2] = 1
        np.testing.assert_array_equal(np.asarray(e), expected)
    got = lax.index_take(kx, (np.array([0, 3, 3]),), (1,))
    np.testing.assert_array_equal(np.asarray(got), np.moveaxis(x[:, [0, 3, 3]], 1, 0))


# -- errors ---------------------------------------------------------------------------------------

def test_gather_scatter_errors():
    x = knp.arange(12.0).reshape(3, 4)
    idx = np.array([[0], [1]], np.int32)
    dn = GDN((1,), (0,), (0,))
    with pytest.raises(TypeError, match=r"gather: indices must have an integer dtype, got f32\[2,1\]"):
        lax.gather(x, idx.astype(np.float32), dn, (1, 4))
    with pytest.raises(ValueError, match=r"gather: slice_sizes \(1, 5\) must fit in the operand shape \(3, 4\)"):
        lax.gather(x, idx, dn, (1, 5))
    with pytest.raises(ValueError, match=r"gather: slice_sizes \(1,\) must have one entry per dimension"):
        lax.gather(x, idx, dn, (1,))
    with pytest.raises(ValueError, match=r"slice_sizes\[0\] is 2 but dimension 0 is in collapsed_slice_dims"):
        lax.gather(x, idx, dn, (2, 4))
    with pytest.raises(ValueError, match=r"start_index_map \(0, 1\) needs one entry per element of the index"):
        lax.gather(x, idx, GDN((1,), (0,), (0, 1)), (1, 4))
    with pytest.raises(ValueError, match=r"offset_dims \(\) must have one entry per slice dimension"):
        lax.gather(x, idx, GDN((), (0,), (0,)), (1, 4))
    with pytest.raises(ValueError, match=r"collapsed_slice_dims \(1, 0\) must be sorted"):
        lax.gather(x, idx, GDN((), (1, 0), (0,)), (1, 1))
    with pytest.raises(ValueError, match=r"gather: indices must have at least one dimension"):
        lax.gather(x, np.int32(1), dn, (1, 4))
    with pytest.raises(ValueError, match=r"batching dimension 0 of the operand \(size 3\) and dimension 0 of the "
                                         r"indices \(size 2\) differ"):
        lax.gather(x, idx, GDN((), (1,), (1,), (0,), (0,)), (1, 1))
    with pytest.raises(TypeError, match=r"gather: dimension_numbers must be a kiln.lax.GatherDimensionNumbers"):
        lax.gather(x, idx, {"offset_dims": (1,)}, (1, 4))
    with pytest.raises(TypeError, match=r"gather: offset_dims must be a sequence of ints"):
        lax.gather(x, idx, GDN((1.0,), (0,), (0,)), (1, 4))
    with pytest.raises(ValueError, match=r"unknown gather/scatter mode 'wrap'"):
        lax.gather(x, idx, dn, (1, 4), mode="wrap")
    with pytest.raises(ValueError, match=r"gather: fill_value must be a scalar"):
        lax.gather(x, idx, dn, (1, 4), mode="fill", fill_value=np.zeros(2))
    sdn = SDN((1,), (0,), (0,))
    with pytest.raises(TypeError, match=r"scatter_add: updates dtype int32 differs from the operand dtype float32"):
        lax.scatter_add(x, idx, np.zeros((2, 4), np.int32), sdn)
    with pytest.raises(ValueError, match=r"scatter: the scatter dimensions of the updates \(3,\)"):
        lax.scatter(x, idx, np.zeros((3, 4), np.float32), sdn)
    with pytest.raises(ValueError, match=r"scatter_mul: updates of shape \(2,\) must have 2 dimensions"):
        lax.scatter_mul(x, idx, np.zeros((2,), np.float32), sdn)
    with pytest.raises(ValueError, match=r"scatter_max: update window dimension 1 \(size 5\) is larger than operand"):
        lax.scatter_max(x, idx, np.zeros((2, 5), np.float32), sdn)
    with pytest.raises(ValueError, match=r"scatter_min: scatter_dims_to_operand_dims \(0, 1\) needs one entry"):
        lax.scatter_min(x, idx, np.zeros((2, 4), np.float32), SDN((1,), (0,), (0, 1)))
    with pytest.raises(TypeError, match=r"scatter_apply: func must be callable"):
        lax.scatter_apply(x, idx, 3, sdn, update_shape=(2, 4))
    with pytest.raises(ValueError, match=r"scatter_apply: func must map a scalar to a scalar"):
        lax.scatter_apply(x, idx, lambda v: knp.stack([v, v]), sdn, update_shape=(2, 4))
    with pytest.raises(IndexError, match=r"index_in_dim: index 3 is out of bounds for axis 0 with size 3"):
        lax.index_in_dim(x, 3)
    with pytest.raises(ValueError, match=r"dynamic_slice_in_dim: axis 2 is out of bounds"):
        lax.dynamic_slice_in_dim(x, 0, 1, axis=2)
    with pytest.raises(ValueError, match=r"dynamic_update_index_in_dim: update of shape \(2, 2, 2\) must have rank"):
        lax.dynamic_update_index_in_dim(x, knp.zeros((2, 2, 2)), 0, 0)
