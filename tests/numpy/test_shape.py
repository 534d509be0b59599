"""kiln.numpy shape manipulation against NumPy: reshape/ravel/squeeze/expand_dims/transposes, broadcasting,
joining and splitting, tile/repeat/resize, pad (all modes), flips/roll/rot90, triu/tril, atleast_nd,
append/insert/delete, and their error messages.

Most cases run under one jit per family (few compilations); a few run eagerly.
"""
from __future__ import annotations

import numpy as np
import pytest
from kiln.frontend.core import dtypes

import kiln
import kiln.numpy as knp

rng = np.random.default_rng(3)
A = rng.normal(size=(3, 4)).astype(np.float32)
B = rng.normal(size=(2, 3, 4)).astype(np.float32)
V = rng.normal(size=5).astype(np.float32)
I = rng.integers(-5, 5, size=(3, 4)).astype(np.int32)
M = rng.random((3, 4)) > 0.5
S = np.float32(1.5)
E = np.zeros((0, 3), np.float32)


def _check(out, expected, where="", dtype=None):
    if isinstance(expected, (list, tuple)):
        assert isinstance(out, (list, tuple)) and len(out) == len(expected), (where, out)
        for i, (o, e) in enumerate(zip(out, expected)):
            _check(o, e, f"{where}[{i}]", dtype)
        return
    expected = np.asarray(expected)
    assert isinstance(out, kiln.Array), (where, type(out))
    assert out.shape == expected.shape, (where, out.shape, expected.shape)
    want = np.dtype(dtype) if dtype is not None else dtypes.canonicalize_dtype(expected.dtype)
    assert out.dtype == want, (where, out.dtype, want)
    if expected.dtype.kind == "f":  # only pad's mean mode computes: the rest moves data and is exact
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6, atol=1e-7, err_msg=str(where))
    else:
        np.testing.assert_array_equal(np.asarray(out), expected, err_msg=str(where))


ARRS = {"A": A, "B": B, "V": V, "I": I, "M": M, "S": S, "E": E}


def _run_cases(cases):
    """cases: list of (label, kiln_fn(arrs), numpy_fn(arrs)); kiln runs under one jit."""
    outs = kiln.jit(lambda arrs: [kf(arrs) for _, kf, _ in cases])(ARRS)
    for (label, _, nf), o in zip(cases, outs):
        _check(o, nf(ARRS), label)


def _both(label, fn):
    """A case whose kiln and NumPy code is the same expression over a module ``m``."""
    return (label, lambda a: fn(knp, a), lambda a: fn(np, a))


# ---------------------------------------------------------------------------------------------
# Reshaping and axes
# ---------------------------------------------------------------------------------------------

def test_reshape_and_axes():
    cases = [
        _both("reshape -1", lambda m, a: m.reshape(a["B"], (4, -1))),
        _both("reshape F", lambda m, a: m.reshape(a["A"], (2, 6), order="F")),
        _both("reshape 0-d", lambda m, a: m.reshape(a["S"], (1, 1))),
        _both("reshape empty", lambda m, a: m.reshape(a["E"], (3, 0, 1))),
        _both("ravel", lambda m, a: m.ravel(a["B"])),
        _both("ravel F", lambda m, a: m.ravel(a["A"], order="F")),
        _both("squeeze", lambda m, a: m.squeeze(m.reshape(a["A"], (1, 3, 1, 4)))),
        _both("squeeze axis", lambda m, a: m.squeeze(m.reshape(a["A"], (1, 3, 1, 4)), axis=(0, -2))),
        _both("expand_dims", lambda m, a: m.expand_dims(a["A"], (0, -1))),
        _both("expand_dims 0-d", lambda m, a: m.expand_dims(a["S"], 0)),
        _both("transpose", lambda m, a: m.transpose(a["B"])),
        _both("transpose axes", lambda m, a: m.transpose(a["B"], (1, -1, 0))),
        _both("swapaxes", lambda m, a: m.swapaxes(a["B"], 0, -1)),
        _both("moveaxis", lambda m, a: m.moveaxis(a["B"], 0, -1)),
        _both("moveaxis multi", lambda m, a: m.moveaxis(a["B"], (0, 1), (2, 0))),
        _both("rollaxis", lambda m, a: m.rollaxis(a["B"], 2, 0)),
        _both("rollaxis start", lambda m, a: m.rollaxis(a["B"], 0, 3)),
        _both("matrix_transpose", lambda m, a: m.matrix_transpose(a["B"])),
        _both("broadcast_to", lambda m, a: m.broadcast_to(a["V"], (2, 3, 5))),
        _both("broadcast_to 0-d", lambda m, a: m.broadcast_to(a["S"], (2, 0))),
        _both("broadcast_arrays", lambda m, a: m.broadcast_arrays(a["A"][:, :1], a["V"][:4], a["S"])),
        _both("atleast_1d", lambda m, a: m.atleast_1d(a["S"])),
        _both("atleast_2d", lambda m, a: m.atleast_2d(a["V"], a["S"])),
        _both("atleast_3d", lambda m, a: [m.atleast_3d(a[n]) for n in "SVAB"]),
    ]
    _run_cases(cases)
    assert knp.shape(A) == (3, 4) and knp.ndim(B) == 3 and knp.size(B) == 24 and knp.size(B, -1) == 4
    assert knp.shape([[1, 2]]) == (1, 2) and knp.ndim(3.0) == 0
    assert knp.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
    _check(knp.reshape(I, 12), I.reshape(12))
    _check(knp.transpose(M), M.T)
    _check(knp.unstack(A, axis=1), list(np.moveaxis(A, 1, 0)))


def test_reshape_and_axes_errors():
    with pytest.raises(ValueError, match=r"kiln.numpy.reshape: cannot reshape array of size 12 \(shape \(3, 4\)\) "
                                         r"into shape \(5, 3\)"):
        knp.reshape(A, (5, 3))
    with pytest.raises(ValueError, match="kiln.numpy.reshape: can only specify one unknown dimension"):
        knp.reshape(A, (-1, -1))
    with pytest.raises(ValueError, match="kiln.numpy.squeeze: cannot select an axis to squeeze out"):
        knp.squeeze(A, 0)
    with pytest.raises(ValueError, match="kiln.numpy.expand_dims: repeated axis"):
        knp.expand_dims(A, (1, 1))
    with pytest.raises(ValueError, match="kiln.numpy.swapaxes: axis 2 is out of bounds for an array of dimension 2"):
        knp.swapaxes(A, 0, 2)
    with pytest.raises(ValueError, match="kiln.numpy.moveaxis: repeated axis"):
        knp.moveaxis(B, (0, 0), (1, 2))
    with pytest.raises(ValueError, match="kiln.numpy.moveaxis: source .* and destination .* need the same number"):
        knp.moveaxis(B, (0, 1), 2)
    with pytest.raises(TypeError, match=r"kiln.numpy.transpose: axes \(0, 0\) are not a permutation"):
        knp.transpose(A, (0, 0))
    with pytest.raises(ValueError, match=r"kiln.numpy.broadcast_to: cannot broadcast an array of shape \(3, 4\) to "
                                         r"shape \(4, 4\)"):
        knp.broadcast_to(A, (4, 4))
    with pytest.raises(ValueError, match="kiln.numpy.broadcast_arrays: operands could not be broadcast together"):
        knp.broadcast_arrays(A, V)
    with pytest.raises(TypeError, match="kiln.numpy.reshape: each dimension of the new shape must be a static"):
        kiln.jit(lambda x, n: knp.reshape(x, (n, -1)))(A, 3)
    with pytest.raises(TypeError, match="kiln.numpy.reshape: argument 0 is a list"):
        knp.reshape([1, 2], (2,))


# ---------------------------------------------------------------------------------------------
# Joining and splitting
# ---------------------------------------------------------------------------------------------

def test_join():
    cases = [
        _both("concatenate", lambda m, a: m.concatenate([a["A"], a["I"], a["A"]], axis=-1)),
        _both("concatenate None", lambda m, a: m.concatenate([a["A"], a["V"]], axis=None)),
        _both("concatenate empty", lambda m, a: m.concatenate([a["E"], a["A"][:, :3]])),
        _both("stack", lambda m, a: m.stack([a["A"], a["A"] * 2], axis=1)),
        _both("stack -1", lambda m, a: m.stack([a["V"], a["V"]], axis=-1)),
        _both("stack 0-d", lambda m, a: m.stack([a["S"], a["S"]])),
        _both("hstack 1-d", lambda m, a: m.hstack([a["V"], a["V"][:2]])),
        _both("hstack 2-d", lambda m, a: m.hstack([a["A"], a["I"]])),
        _both("hstack 0-d", lambda m, a: m.hstack([a["S"], a["V"]])),
        _both("vstack", lambda m, a: m.vstack([a["V"][:4], a["A"]])),
        _both("row_stack", lambda m, a: m.vstack([a["V"], a["V"]])),
        _both("dstack", lambda m, a: m.dstack([a["A"], a["A"]])),
        _both("dstack 1-d", lambda m, a: m.dstack([a["V"], a["V"]])),
        _both("column_stack", lambda m, a: m.column_stack([a["V"][:3], a["A"], a["I"][:, 0]])),
        _both("append", lambda m, a: m.append(a["A"], a["V"])),
        _both("append axis", lambda m, a: m.append(a["A"], a["I"], axis=0)),
        _both("mixed dtypes", lambda m, a: m.concatenate([a["M"], a["I"]])),
    ]
    _run_cases(cases)
    _check(knp.stack([M, M]), np.stack([M, M]))
    _check(knp.vstack(A), np.vstack(A))  # an array is a sequence of its rows
    _check(knp.hstack((I, I), dtype=np.float32), np.hstack((I, I)).astype(np.float32))


def test_split():
    cases = [
        _both("split int", lambda m, a: m.split(a["B"], 2)),
        _both("split axis", lambda m, a: m.split(a["B"], 4, axis=-1)),
        _both("split indices", lambda m, a: m.split(m.arange(10), [3, -2, 20, 1])),
        _both("split empty", lambda m, a: m.split(a["E"], 3, axis=1)),
        _both("array_split", lambda m, a: m.array_split(m.arange(10), 4)),
        _both("array_split more", lambda m, a: m.array_split(a["V"], 7)),
        _both("array_split indices", lambda m, a: m.array_split(a["A"], [1], axis=1)),
        _both("hsplit", lambda m, a: m.hsplit(a["A"], 2)),
        _both("hsplit 1-d", lambda m, a: m.hsplit(a["V"], [2])),
        _both("vsplit", lambda m, a: m.vsplit(a["A"], 3)),
        _both("dsplit", lambda m, a: m.dsplit(a["B"], [1, 3])),
    ]
    _run_cases(cases)
    _check(knp.split(I, np.array([1, 2]), axis=1), np.split(I, [1, 2], axis=1))


def test_join_split_errors():
    with pytest.raises(TypeError, match="kiln.numpy.concatenate: all arrays must have the same number of dimensions"):
        knp.concatenate([A, V])
    with pytest.raises(TypeError, match=r"kiln.numpy.concatenate: array shapes \(3, 4\) and \(2, 3, 4\)|"
                                         "same number of dimensions"):
        knp.concatenate([A, B])
    with pytest.raises(TypeError, match=r"kiln.numpy.concatenate: array shapes \(3, 4\) and \(3, 5\) differ"):
        knp.concatenate([A, np.zeros((3, 5))])
    with pytest.raises(ValueError, match="kiln.numpy.concatenate: zero-dimensional arrays cannot be concatenated"):
        knp.concatenate([S, S])
    with pytest.raises(ValueError, match="kiln.numpy.concatenate: axis 2 is out of bounds"):
        knp.concatenate([A, A], axis=2)
    with pytest.raises(ValueError, match="kiln.numpy.concatenate: need at least one array"):
        knp.concatenate([])
    with pytest.raises(ValueError, match="kiln.numpy.stack: all input arrays must have the same shape"):
        knp.stack([A, A.T])
    with pytest.raises(ValueError, match="kiln.numpy.split: array split does not result in an equal division: an "
                                         "axis of size 4 into 3 sections"):
        knp.split(A, 3, axis=1)
    with pytest.raises(ValueError, match="kiln.numpy.array_split: the number of sections must be larger than 0"):
        knp.array_split(A, 0)
    with pytest.raises(ValueError, match="kiln.numpy.split: axis 2 is out of bounds"):
        knp.split(A, 2, axis=2)
    with pytest.raises(ValueError, match="kiln.numpy.split: cannot split a 0-d array"):
        knp.split(S, 1)
    with pytest.raises(ValueError, match="kiln.numpy.vsplit: only works on arrays of 1 or more dimensions"):
        knp.vsplit(S, 1)
    with pytest.raises(ValueError, match="kiln.numpy.dsplit: only works on arrays of 3 or more dimensions"):
        knp.dsplit(A, 1)
    with pytest.raises(TypeError, match="kiln.numpy.split: indices_or_sections must be static"):
        kiln.jit(lambda x, n: knp.split(x, n))(A, 3)
    with pytest.raises(TypeError, match="kiln.numpy.split: indices_or_sections must be integers"):
        knp.split(A, 1.5)


# ---------------------------------------------------------------------------------------------
# tile / repeat / resize
# ---------------------------------------------------------------------------------------------

def test_tile_repeat_resize():
    cases = [
        _both("tile int", lambda m, a: m.tile(a["V"], 3)),
        _both("tile more dims", lambda m, a: m.tile(a["A"], (2, 1, 2))),
        _both("tile fewer reps", lambda m, a: m.tile(a["B"], 2)),
        _both("tile zero", lambda m, a: m.tile(a["A"], (0, 2))),
        _both("tile 0-d", lambda m, a: m.tile(a["S"], (2, 2))),
        _both("repeat flat", lambda m, a: m.repeat(a["A"], 2)),
        _both("repeat axis", lambda m, a: m.repeat(a["B"], 3, axis=-1)),
        _both("repeat zero", lambda m, a: m.repeat(a["A"], 0, axis=0)),
        _both("repeat seq", lambda m, a: m.repeat(a["A"], [2, 0, 1], axis=0)),
        _both("repeat seq runs", lambda m, a: m.repeat(a["V"], [2, 2, 1, 1, 3])),
        _both("repeat seq one", lambda m, a: m.repeat(a["A"], [2], axis=1)),
        _both("repeat 0-d", lambda m, a: m.repeat(a["S"], 3)),
        _both("repeat bool", lambda m, a: m.repeat(a["M"], [1, 2, 3], axis=0)),
        _both("resize bigger", lambda m, a: m.resize(a["A"], (5, 3))),
        _both("resize smaller", lambda m, a: m.resize(a["V"], 3)),
        _both("resize 0", lambda m, a: m.resize(a["A"], (0, 2))),
        ("repeat total longer", lambda a: knp.repeat(a["V"], [1, 2, 0, 1, 1], total_repeat_length=8),
         lambda a: np.concatenate([np.repeat(a["V"], [1, 2, 0, 1, 1]), np.repeat(a["V"][-1:], 3)])),
        ("repeat total shorter", lambda a: knp.repeat(a["A"], 2, axis=1, total_repeat_length=5),
         lambda a: np.repeat(a["A"], 2, axis=1)[:, :5]),
    ]
    _run_cases(cases)
    _check(knp.resize(E, (2, 2)), np.zeros((2, 2), np.float32))
    _check(knp.repeat(I, np.array([1, 2, 3, 4]), axis=1), np.repeat(I, [1, 2, 3, 4], axis=1))


def test_repeat_traced_repeats():
    @kiln.jit
    def f(x, r, s):
        return (knp.repeat(x, r, axis=0, total_repeat_length=6), knp.repeat(x, r, axis=0, total_repeat_length=2),
                knp.repeat(x, s, axis=1, total_repeat_length=9), knp.repeat(x[:, 0] > 0, r, total_repeat_length=5))

    x = rng.normal(size=(3, 4)).astype(np.float32)
    for r in ([1, 3, 2], [0, 2, 1], [0, 0, 0], [4, 0, 5]):
        r = np.array(r, np.int32)
        o1, o2, o3, o4 = f(x, r, np.int32(2))
        full = np.repeat(x, r, axis=0)
        padded = np.concatenate([full, np.repeat(x[-1:], max(0, 6 - len(full)), axis=0)])[:6]
        _check(o1, padded, r)
        _check(o2, padded[:2], r)
        _check(o3, np.concatenate([np.repeat(x, 2, axis=1), x[:, -1:]], axis=1), r)
        b = np.repeat(x[:, 0] > 0, r)
        _check(o4, np.concatenate([b, np.repeat(x[-1:, 0] > 0, max(0, 5 - len(b)))])[:5], r)


def test_repeat_eager_with_array_repeats():
    # outside jit a kiln array of repeats is concrete, as in JAX (array-api-tests' test_repeat)
    x = rng.normal(size=(3, 2)).astype(np.float32)
    for r in ([1, 3, 2], [0, 2, 1], 2, [0, 0, 0]):
        want = np.repeat(x, r, axis=0)
        _check(knp.repeat(knp.asarray(x), knp.asarray(np.array(r, np.int32)), axis=0), want, r)
        _check(knp.repeat(x, knp.asarray(np.array(r, np.int32)), 0), want, r)  # axis by position
    _check(knp.repeat(knp.arange(3), knp.array(2)), np.repeat(np.arange(3), 2))


def test_tile_repeat_errors():
    with pytest.raises(TypeError, match="kiln.numpy.repeat: repeats is a traced array here .* total_repeat_length"):
        kiln.jit(lambda x, r: knp.repeat(x, r))(V, np.ones(5, np.int32))
    with pytest.raises(TypeError, match="kiln.numpy.repeat: repeats is a traced array"):
        kiln.jit(lambda x, r: knp.repeat(x, r, axis=0))(A, 2)
    with pytest.raises(ValueError, match=r"kiln.numpy.repeat: repeats of shape \(2,\) does not match the 3 elements "
                                         "along axis 0"):
        knp.repeat(A, [1, 2], axis=0)
    with pytest.raises(ValueError, match="kiln.numpy.repeat: repeats must be non-negative"):
        knp.repeat(A, -1)
    with pytest.raises(TypeError, match="kiln.numpy.repeat: repeats must be integers"):
        knp.repeat(A, 1.5)
    with pytest.raises(ValueError, match="kiln.numpy.repeat: axis 2 is out of bounds"):
        knp.repeat(A, 2, axis=2)
    with pytest.raises(TypeError, match="kiln.numpy.repeat: total_repeat_length must be a static"):
        kiln.jit(lambda x, n: knp.repeat(x, 2, total_repeat_length=n))(V, 3)
    with pytest.raises(ValueError, match="kiln.numpy.tile: reps must be non-negative"):
        knp.tile(A, -1)
    with pytest.raises(TypeError, match="kiln.numpy.tile: reps must be static"):
        kiln.jit(lambda x, n: knp.tile(x, n))(A, 2)


# ---------------------------------------------------------------------------------------------
# pad
# ---------------------------------------------------------------------------------------------

PAD_WIDTHS = [1, (2, 3), ((0, 1), (3, 0)), ((5, 2),), ((7, 9), (0, 6))]
PAD_MODES = ["constant", "edge", "reflect", "symmetric", "wrap", "maximum", "minimum", "mean", "empty"]


def test_pad_modes():
    cases = []
    for mode in PAD_MODES:
        widths = PAD_WIDTHS if mode in ("constant", "edge", "reflect", "symmetric", "wrap") else PAD_WIDTHS[1:3]
        for w in widths:
            if mode == "empty":  # kiln's "empty" padding is zeros (NumPy's is uninitialised)
                cases.append((f"{mode} {w}", lambda a, w=w: knp.pad(a["A"], w, mode="empty"),
                              lambda a, w=w: np.pad(a["A"], w, mode="constant")))
                continue
            cases.append(_both(f"{mode} {w}", lambda m, a, w=w, mode=mode: m.pad(a["A"], w, mode=mode)))
        if mode != "empty":
            cases.append(_both(f"{mode} 1-d", lambda m, a, mode=mode: m.pad(a["V"][:2], (3, 4), mode=mode)))
            cases.append(_both(f"{mode} int", lambda m, a, mode=mode: m.pad(a["I"], ((1, 2), (3, 1)), mode=mode)))
    cases += [
        _both("constant values", lambda m, a: m.pad(a["A"], ((2, 1), (1, 3)), constant_values=((1, 2), (3, 4)))),
        _both("constant value", lambda m, a: m.pad(a["I"], 2, constant_values=-7)),
        _both("constant pair", lambda m, a: m.pad(a["A"], 1, constant_values=(5, 6))),
        _both("constant empty axis", lambda m, a: m.pad(a["E"], ((1, 1), (0, 2)))),
        _both("reflect along other axis", lambda m, a: m.pad(a["E"], ((0, 0), (2, 1)), mode="reflect")),
        _both("pad 0-d", lambda m, a: m.pad(np.asarray(a["S"]) if m is np else a["S"], 2)),
        _both("pad bool", lambda m, a: m.pad(a["M"], 1, constant_values=True)),
        _both("edge bool", lambda m, a: m.pad(a["M"], 2, mode="edge")),
        _both("stat_length", lambda m, a: m.pad(a["A"], ((2, 1), (1, 2)), mode="mean", stat_length=((1, 2), (3, 1)))),
        _both("one element reflect", lambda m, a: m.pad(a["V"][:1], 3, mode="reflect")),
        ("traced constant", lambda a: knp.pad(a["A"], 1, constant_values=a["S"]),
         lambda a: np.pad(a["A"], 1, constant_values=a["S"])),
    ]
    _run_cases(cases)


def test_pad_errors():
    with pytest.raises(ValueError, match="kiln.numpy.pad: pad_width must be non-negative"):
        knp.pad(A, -1)
    with pytest.raises(ValueError, match=r"kiln.numpy.pad: pad_width of shape \(3,\) must be an int"):
        knp.pad(A, (1, 2, 3))
    with pytest.raises(NotImplementedError, match="kiln.numpy.pad: mode 'linear_ramp' is not supported"):
        knp.pad(A, 1, mode="linear_ramp")
    with pytest.raises(TypeError, match=r"kiln.numpy.pad: unsupported keyword argument\(s\) \['constant_values'\] "
                                        "for mode 'edge'"):
        knp.pad(A, 1, mode="edge", constant_values=1)
    with pytest.raises(ValueError, match="kiln.numpy.pad: can't extend empty axis 0 using modes other than"):
        knp.pad(E, 1, mode="wrap")
    with pytest.raises(TypeError, match="kiln.numpy.pad: pad_width must be static"):
        kiln.jit(lambda x, p: knp.pad(x, p))(A, 2)
    with pytest.raises(ValueError, match=r"kiln.numpy.pad: constant_values of shape \(3,\)"):
        knp.pad(A, 1, constant_values=(1, 2, 3))


# ---------------------------------------------------------------------------------------------
# flips, roll, rot90, triangles
# ---------------------------------------------------------------------------------------------

def test_flip_roll_rot90_triangles():
    cases = [
        _both("flip all", lambda m, a: m.flip(a["B"])),
        _both("flip axis", lambda m, a: m.flip(a["B"], 1)),
        _both("flip axes", lambda m, a: m.flip(a["B"], (0, -1))),
        _both("flip 0-d", lambda m, a: m.flip(a["S"])),
        _both("fliplr", lambda m, a: m.fliplr(a["A"])),
        _both("flipud", lambda m, a: m.flipud(a["V"])),
        _both("roll flat", lambda m, a: m.roll(a["A"], 5)),
        _both("roll axis", lambda m, a: m.roll(a["A"], -1, axis=1)),
        _both("roll big", lambda m, a: m.roll(a["A"], 13, axis=0)),
        _both("roll tuple", lambda m, a: m.roll(a["B"], (1, -2), axis=(0, 2))),
        _both("roll same axis twice", lambda m, a: m.roll(a["B"], (1, 2), axis=(1, 1))),
        _both("roll broadcast shift", lambda m, a: m.roll(a["B"], 1, axis=(0, 1))),
        _both("roll empty", lambda m, a: m.roll(a["E"], 2, axis=0)),
        _both("tril", lambda m, a: m.tril(a["A"])),
        _both("tril k", lambda m, a: m.tril(a["B"], -1)),
        _both("triu k", lambda m, a: m.triu(a["B"], 2)),
        _both("triu int", lambda m, a: m.triu(a["I"], -1)),
        _both("tril bool", lambda m, a: m.tril(a["M"], 1)),
    ]
    for k in (-3, -1, 0, 1, 2, 3, 5):
        cases.append(_both(f"rot90 {k}", lambda m, a, k=k: m.rot90(a["B"], k)))
        cases.append(_both(f"rot90 {k} axes", lambda m, a, k=k: m.rot90(a["B"], k, axes=(2, 0))))
    _run_cases(cases)


def test_roll_traced_shift():
    @kiln.jit
    def f(x, s, t):
        return knp.roll(x, s, axis=1), knp.roll(x, s), knp.roll(x, t, axis=(0, 1))

    for s, t in ((0, (1, 2)), (3, (-1, 5)), (-7, (4, -9)), (12, (0, 0))):
        o1, o2, o3 = f(A, np.int32(s), np.array(t, np.int32))
        _check(o1, np.roll(A, s, axis=1), s)
        _check(o2, np.roll(A, s), s)
        _check(o3, np.roll(A, t, axis=(0, 1)), t)


def test_flip_roll_errors():
    with pytest.raises(ValueError, match="kiln.numpy.flip: axis 3 is out of bounds for an array of dimension 3"):
        knp.flip(B, 3)
    with pytest.raises(ValueError, match="kiln.numpy.fliplr: the input must be at least 2-D"):
        knp.fliplr(V)
    with pytest.raises(ValueError, match="kiln.numpy.roll: axis -4 is out of bounds"):
        knp.roll(B, 1, axis=-4)
    with pytest.raises(ValueError, match="kiln.numpy.roll: shift .* and axis .* must have the same length"):
        knp.roll(B, (1, 2, 3), axis=(0, 1))
    with pytest.raises(ValueError, match="kiln.numpy.rot90: axes must be different"):
        knp.rot90(A, 1, (1, 1))
    with pytest.raises(ValueError, match="kiln.numpy.rot90: axes must be two axes"):
        knp.rot90(B, 1, (0, 1, 2))
    with pytest.raises(ValueError, match="kiln.numpy.triu: the input must be at least 2-D"):
        knp.triu(V)
    with pytest.raises(TypeError, match="kiln.numpy.tril: k must be a static"):
        kiln.jit(lambda x, k: knp.tril(x, k))(A, 1)


# ---------------------------------------------------------------------------------------------
# insert / delete
# ---------------------------------------------------------------------------------------------

def test_insert_delete():
    cases = [
        _both("delete int", lambda m, a: m.delete(a["A"], 1, axis=1)),
        _both("delete negative", lambda m, a: m.delete(a["A"], -1, axis=0)),
        _both("delete list", lambda m, a: m.delete(a["V"], [0, 3, 0])),
        _both("delete slice", lambda m, a: m.delete(a["B"], slice(None, None, 2), axis=2)),
        _both("delete flat", lambda m, a: m.delete(a["A"], [1, 5, 11])),
        _both("delete mask", lambda m, a: m.delete(a["V"], np.array([True, False, False, True, False]))),
        _both("insert scalar", lambda m, a: m.insert(a["V"], 2, 9.0)),
        _both("insert end", lambda m, a: m.insert(a["V"], 5, a["V"][:2])),
        _both("insert axis", lambda m, a: m.insert(a["A"], 1, a["A"][:, 0], axis=1)),
        _both("insert axis list", lambda m, a: m.insert(a["A"], [1], a["A"][:, :1], axis=1)),
        _both("insert several", lambda m, a: m.insert(a["V"], [1, 4, 1], a["V"][:3])),
        _both("insert slice", lambda m, a: m.insert(a["A"], slice(0, 2), 0.0, axis=0)),
        _both("insert flat", lambda m, a: m.insert(a["I"], -2, 7)),
    ]
    _run_cases(cases)
    with pytest.raises(IndexError, match="kiln.numpy.delete: index 5 is out of bounds for axis 0 with size 5"):
        knp.delete(V, 5)
    with pytest.raises(IndexError, match="kiln.numpy.insert: index 7 is out of bounds for axis 0 with size 5"):
        knp.insert(V, 7, 1.0)
    with pytest.raises(TypeError, match="kiln.numpy.delete: obj must be static"):
        kiln.jit(lambda x, i: knp.delete(x, i))(V, 1)


def test_float64_shapes():
    with kiln.config.override("enable_x64", True):
        x = rng.normal(size=(3, 4))
        outs = kiln.jit(lambda x: [knp.pad(x, 2, mode="reflect"), knp.repeat(x, [1, 2, 0], axis=0),
                                   knp.tile(x, 2), knp.roll(x, 1), knp.rot90(x)])(x)
        for o, e in zip(outs, [np.pad(x, 2, mode="reflect"), np.repeat(x, [1, 2, 0], axis=0), np.tile(x, 2),
                               np.roll(x, 1), np.rot90(x)]):
            _check(o, e)


def test_eager_outside_jit():
    """The same functions run op by op outside jit (each primitive compiled once and cached)."""
    _check(knp.pad(A, ((1, 0), (0, 2)), mode="reflect"), np.pad(A, ((1, 0), (0, 2)), mode="reflect"), "pad")
    _check(knp.pad(I, 1, constant_values=3), np.pad(I, 1, constant_values=3), "pad constant")
    _check(knp.roll(A, 2, axis=1), np.roll(A, 2, axis=1), "roll")
    _check(knp.repeat(V, [1, 0, 2, 1, 1]), np.repeat(V, [1, 0, 2, 1, 1]), "repeat")
    _check(knp.repeat(M, 2, axis=1), np.repeat(M, 2, axis=1), "repeat bool")
    _check(knp.split(B, [1], axis=1), np.split(B, [1], axis=1), "split")
    _check(knp.rot90(A), np.rot90(A), "rot90")
    _check(knp.flip(B, (0, 2)), np.flip(B, (0, 2)), "flip")
    _check(knp.triu(A, 1), np.triu(A, 1), "triu")
    _check(knp.insert(V, 1, 0.0), np.insert(V, 1, 0.0), "insert")
    _check(knp.delete(I, [0, 2], axis=1), np.delete(I, [0, 2], axis=1), "delete")
    _check(knp.hstack([V, V]), np.hstack([V, V]), "hstack")
    # methods forward to the same functions
    x = knp.asarray(B)
    _check(x.reshape(6, 4), B.reshape(6, 4), "method reshape")
    _check(x.transpose(2, 0, 1), B.transpose(2, 0, 1), "method transpose")
    _check(x.T, B.T, "method T")
    _check(x.repeat(2, axis=1), B.repeat(2, axis=1), "method repeat")
    _check(x.diagonal(0, 1, 2), B.diagonal(0, 1, 2), "method diagonal")
    _check(x.trace(axis1=1, axis2=2), B.trace(axis1=1, axis2=2), "method trace")
    _check(x.ptp(axis=0), np.ptp(B, axis=0), "method ptp")


def test_size_along_several_axes():
    x = knp.ones((2, 3, 4))
    assert knp.size(x, (0, 2)) == 8 and knp.size(x, [1]) == 3 and knp.size(x, ()) == 1 and knp.size(x, -1) == 4
    with pytest.raises(Exception, match="size"):
        knp.size(x, (0, 3))
