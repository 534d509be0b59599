"""The exchanging collectives inside vmap (ppermute, pshuffle, all_to_all, pswapaxes, psum_scatter,
pbroadcast, axis_size, pcast) against NumPy references that loop over the batch elements as if they
were devices; eager and under jit, with unmapped operands, with two nested named axes (a collective over
the outer name inside the inner vmap), their derivatives (forward and reverse, the transposes running
inside vmap) and their error messages."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import lax

rng = np.random.default_rng(7)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# -- NumPy references: xs[i] is element (device) i's value; each returns the list of results ----------

def ref_ppermute(xs, perm):
    out = [np.zeros_like(x) for x in xs]
    for src, dst in perm:
        out[dst] = xs[src].copy()
    return np.stack(out)


def ref_all_to_all(xs, split, concat, tiled):
    n = len(xs)
    if tiled:
        return np.stack([np.concatenate([np.split(x, n, axis=split)[j] for x in xs], axis=concat)
                         for j in range(n)])
    return np.stack([np.stack([np.take(x, j, axis=split) for x in xs], axis=concat) for j in range(n)])


def ref_psum_scatter(xs, dim, tiled):
    total = np.sum(xs, axis=0)
    n = len(xs)
    return np.stack([np.split(total, n, axis=dim)[j] if tiled else np.take(total, j, axis=dim) for j in range(n)])


def ref_all_gather(xs, axis, tiled):
    one = np.concatenate(list(xs), axis=axis) if tiled else np.stack(list(xs), axis=axis)
    return np.stack([one] * len(xs))


def data(shape, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-5, 6, shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# -- forward values -----------------------------------------------------------------------------------

PERMS = [[(0, 1), (1, 2), (2, 3), (3, 0)],  # a cyclic shift
         [(0, 1), (1, 2), (2, 3)],  # a shift with element 0 left out (zeros)
         [(3, 0), (0, 3)],  # a swap; elements 1 and 2 get zeros
         []]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex64])
@pytest.mark.parametrize("shape", [(4,), (4, 2, 3)])
def test_ppermute(shape, dtype, vm):
    x = data(shape, dtype)
    with vm.recording_batch_rules() as seen:
        for perm in PERMS:
            f = lambda v, p=perm: lax.ppermute(v, "i", p)  # noqa: E731
            want = ref_ppermute(list(x), perm)
            np.testing.assert_array_equal(np.asarray(kiln.vmap(f, axis_name="i")(x)), want)
            np.testing.assert_array_equal(np.asarray(kiln.jit(kiln.vmap(f, axis_name="i"))(x)), want)
    assert "ppermute" in seen
    if len(shape) > 1:  # mapped over a middle axis, result placed last
        f = kiln.vmap(lambda v: lax.ppermute(v, "i", PERMS[1]), in_axes=1, out_axes=-1, axis_name="i")
        xt = np.moveaxis(x, 0, 1)
        np.testing.assert_array_equal(np.asarray(f(xt)), np.moveaxis(ref_ppermute(list(x), PERMS[1]), 0, -1))


def test_pshuffle_and_pbroadcast():
    x = data((4, 3), np.float32)
    f = kiln.jit(kiln.vmap(lambda v: (lax.pshuffle(v, "i", [2, 0, 3, 1]), lax.pbroadcast(v, "i", 2),
                                      lax.pbroadcast(v > 0, "i", 1), lax.pbroadcast(v.astype(np.int32), "i", 3)),
                           axis_name="i"))
    shuffled, bcast, bools, ints = f(x)
    np.testing.assert_array_equal(np.asarray(shuffled), x[[2, 0, 3, 1]])
    np.testing.assert_array_equal(np.asarray(bcast), np.broadcast_to(x[2], x.shape))
    np.testing.assert_array_equal(np.asarray(bools), np.broadcast_to(x[1] > 0, x.shape))
    assert bools.dtype == np.bool_ and ints.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(ints), np.broadcast_to(x[3].astype(np.int32), x.shape))
    # Eagerly, on a pytree.
    out = kiln.vmap(lambda v: lax.pbroadcast({"a": v, "b": 2 * v}, "i", 0), axis_name="i")(x)
    close(out["b"], np.broadcast_to(2 * x[0], x.shape))


# (element shape, split_axis, concat_axis, tiled); the axis size is 3.
A2A = [((3, 2), 0, 1, False), ((3, 2), 0, 0, False), ((2, 3), 1, 0, False), ((2, 3, 4), 1, 2, False),
       ((2, 4, 3), -1, 0, False), ((6, 2), 0, 1, True), ((2, 6), 1, 0, True), ((6, 2), 0, 0, True),
       ((2, 3, 2), 1, -1, True)]


@pytest.mark.parametrize("shape,split,concat,tiled", A2A)
def test_all_to_all(shape, split, concat, tiled, vm):
    x = data((3,) + shape, np.float32)
    nd = len(shape)
    want = ref_all_to_all(list(x), split % nd, concat % nd, tiled)
    f = lambda v: lax.all_to_all(v, "i", split, concat, tiled=tiled)  # noqa: E731
    with vm.recording_batch_rules() as seen:
        close(kiln.vmap(f, axis_name="i")(x), want)
    assert "all_to_all" in seen
    close(kiln.jit(kiln.vmap(f, axis_name="i"))(x), want)
    # Mapped over the last axis of the data.
    close(kiln.vmap(f, in_axes=-1, axis_name="i")(np.moveaxis(x, 0, -1)), want)


def test_all_to_all_integers_and_pswapaxes():
    x = data((4, 2, 4), np.int32)
    f = kiln.jit(kiln.vmap(lambda v: (lax.all_to_all(v, "i", 1, 0), lax.pswapaxes(v, "i", 1)), axis_name="i"))
    a2a, swapped = f(x)
    np.testing.assert_array_equal(np.asarray(a2a), ref_all_to_all(list(x), 1, 0, False))
    np.testing.assert_array_equal(np.asarray(swapped), ref_all_to_all(list(x), 1, 1, False))
    # pswapaxes exchanges the named axis and array axis 1: element j's [:, i] is element i's [:, j].
    np.testing.assert_array_equal(np.asarray(swapped), np.swapaxes(x, 0, 2))


@pytest.mark.parametrize("shape,dim,tiled", [((4,), 0, False), ((4, 3), 0, False), ((3, 4), 1, False),
                                             ((3, 4), -1, False), ((8, 3), 0, True), ((3, 8), 1, True),
                                             ((2, 4, 2), 1, True)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_psum_scatter(shape, dim, tiled, dtype, vm):
    x = data((4,) + shape, dtype)
    want = ref_psum_scatter(list(x), dim % len(shape), tiled)
    f = lambda v: lax.psum_scatter(v, "i", scatter_dimension=dim, tiled=tiled)  # noqa: E731
    with vm.recording_batch_rules() as seen:
        close(kiln.vmap(f, axis_name="i")(x), want)
    assert "psum_scatter" in seen
    close(kiln.jit(kiln.vmap(f, in_axes=1, axis_name="i"))(np.moveaxis(x, 0, 1)), want)


def test_psum_scatter_is_psum_then_own_block():
    # The docstring's example: psum_scatter == psum(x)[axis_index].
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = kiln.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(x)
    close(out, [24, 28, 32, 36])
    out = kiln.vmap(lambda v: lax.psum_scatter(v, "i", tiled=True), axis_name="i")(x)
    close(out, [[24], [28], [32], [36]])


def test_unmapped_operands():
    """An operand the same for every element still goes through the collective."""
    c = data((4, 3), np.float32)
    x = data((4,), np.float32)
    f = kiln.vmap(lambda v, c: (v + lax.ppermute(c, "i", PERMS[1])[0, 0], lax.all_to_all(c, "i", 0, 1),
                                lax.psum_scatter(c, "i"), lax.pbroadcast(c, "i", 1),
                                lax.pshuffle(c, "i", [1, 2, 3, 0])),
                  in_axes=(0, None), axis_name="i")
    shifted, a2a, scattered, bcast, shuffled = f(x, c)
    close(shifted, x + np.array([0.0, c[0, 0], c[0, 0], c[0, 0]]))
    close(a2a, ref_all_to_all([c] * 4, 0, 1, False))
    close(scattered, ref_psum_scatter([c] * 4, 0, False))
    close(bcast, np.broadcast_to(c, (4, 4, 3)))
    close(shuffled, np.broadcast_to(c, (4, 4, 3)))


def test_axis_size_and_pcast():
    x = data((3, 4, 2), np.float32)

    def inner(v):
        sizes = (lax.axis_size("a"), lax.axis_size("b"), lax.axis_size(("a", "b")))
        assert sizes == (3, 4, 12) and all(type(s) is int for s in sizes)
        return lax.pcast(v, "b", to="varying") * sizes[2] + lax.pcast(v, ("a", "b"), to="reduced")
    out = kiln.vmap(kiln.vmap(inner, axis_name="b"), axis_name="a")(x)
    close(out, 13 * x)
    assert kiln.vmap(lambda v: v + lax.axis_size("i"), axis_name="i")(np.zeros(5, np.int32)).tolist() == [5] * 5


# -- two named axes -----------------------------------------------------------------------------------

def test_collectives_over_the_outer_name_inside_the_inner_vmap(vm):
    """vmap over "o" (size 4) of vmap over "n" (size 3); the collectives name "o", so the inner vmap
    re-binds them with its batch dimension kept. in_axes place the inner batch dimension before and after
    the collectives' axes."""
    x = data((4, 3, 4, 2), np.float32)  # (o, n, 4, 2)
    per_o = lambda fn: np.stack([np.stack([fn([x[o, n] for o in range(4)])[o_] for n in range(3)])  # noqa: E731
                                 for o_ in range(4)])

    def body(v):  # v: one (o, n) element, shape (4, 2)
        return (lax.ppermute(v, "o", PERMS[1]), lax.all_to_all(v, "o", 0, 1), lax.all_to_all(v, "o", 0, 1, tiled=True),
                lax.psum_scatter(v, "o"), lax.psum_scatter(v, "o", tiled=True),
                lax.all_gather(v, "o", axis=1), lax.all_gather(v, "o", axis=0, tiled=True), lax.pbroadcast(v, "o", 3),
                lax.psum(v, ("o", "n")))
    wants = [per_o(lambda xs: ref_ppermute(xs, PERMS[1])), per_o(lambda xs: ref_all_to_all(xs, 0, 1, False)),
             per_o(lambda xs: ref_all_to_all(xs, 0, 1, True)), per_o(lambda xs: ref_psum_scatter(xs, 0, False)),
             per_o(lambda xs: ref_psum_scatter(xs, 0, True)), per_o(lambda xs: ref_all_gather(xs, 1, False)),
             per_o(lambda xs: ref_all_gather(xs, 0, True)), np.broadcast_to(x[3:4], x.shape),
             np.broadcast_to(x.sum((0, 1)), x.shape)]
    for inner_in in (0, 1, 2):  # the inner batch dimension before, among and after the element's axes
        xin = np.moveaxis(x, 1, 1 + inner_in)
        f = kiln.vmap(kiln.vmap(body, in_axes=inner_in, axis_name="n"), axis_name="o")
        with vm.recording_batch_rules() as seen:
            outs = f(xin)
        assert {"ppermute", "all_to_all", "psum_scatter", "all_gather"} <= seen
        for got, want in zip(outs, wants):
            close(got, want)
    # Under jit, and with the inner vmap's own name mixed in.
    g = kiln.jit(kiln.vmap(kiln.vmap(lambda v: lax.ppermute(lax.psum_scatter(v, "n", tiled=True), "o", PERMS[0]),
                                     axis_name="n", in_axes=1), axis_name="o"))
    y = data((4, 6, 3), np.float32)  # (o, 6, n)
    sums = y.sum(2)  # (o, 6): per o, psum over n then element n keeps block n (2 values)
    want = np.stack([np.stack([np.split(sums[(o - 1) % 4], 3)[n] for n in range(3)]) for o in range(4)])
    close(g(y), want)


# -- derivatives --------------------------------------------------------------------------------------

def _jacobian(ref, x):
    """The Jacobian of a linear NumPy reference, column by column."""
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size, x.dtype)
        e[k] = 1
        cols.append(np.asarray(ref(e.reshape(x.shape)), np.float64).ravel())
    return np.stack(cols, axis=1)


LINEAR = {
    "ppermute": ((4, 2), lambda v: lax.ppermute(v, "i", PERMS[1]), lambda xs: ref_ppermute(list(xs), PERMS[1])),
    "pshuffle": ((4, 2), lambda v: lax.pshuffle(v, "i", [3, 2, 0, 1]), lambda xs: xs[[3, 2, 0, 1]]),
    "all_to_all": ((3, 3, 2), lambda v: lax.all_to_all(v, "i", 0, 1), lambda xs: ref_all_to_all(list(xs), 0, 1, False)),
    "all_to_all_tiled": ((2, 2, 4), lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True),
                         lambda xs: ref_all_to_all(list(xs), 1, 0, True)),
    "psum_scatter": ((3, 2, 3), lambda v: lax.psum_scatter(v, "i", scatter_dimension=1),
                     lambda xs: ref_psum_scatter(list(xs), 1, False)),
    "psum_scatter_tiled": ((2, 4), lambda v: lax.psum_scatter(v, "i", tiled=True),
                           lambda xs: ref_psum_scatter(list(xs), 0, True)),
    "all_gather": ((3, 2), lambda v: lax.all_gather(v, "i", axis=1), lambda xs: ref_all_gather(list(xs), 1, False)),
    "all_gather_tiled": ((2, 3), lambda v: lax.all_gather(v, "i", tiled=True),
                         lambda xs: ref_all_gather(list(xs), 0, True)),
    "pbroadcast": ((3, 2), lambda v: lax.pbroadcast(v, "i", 1), lambda xs: np.broadcast_to(xs[1], xs.shape)),
}


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_derivatives_of_the_linear_collectives(name):
    shape, fn, ref = LINEAR[name]
    x = data(shape, np.float32)
    jac = _jacobian(ref, x)
    y = np.asarray(ref(x))
    w = data(y.shape, np.float32)
    want = (jac.T @ w.ravel()).reshape(x.shape)
    # Reverse mode through the batched function, and inside vmap: each element differentiates its own
    # share, the transposed collective sending the cotangents back.
    g_outer = kiln.grad(lambda v: knp.sum(w * kiln.vmap(fn, axis_name="i")(v)))(x)
    close(g_outer, want, 1e-4)
    g_inner = kiln.jit(kiln.vmap(kiln.grad(lambda v, wi: knp.sum(wi * fn(v))), axis_name="i"))(x, w)
    close(g_inner, want, 1e-4)
    # Forward mode: the collective of the tangent.
    t = data(shape, np.float32)
    _, tan = kiln.vmap(lambda v, tv: kiln.jvp(fn, (v,), (tv,)), axis_name="i")(x, t)
    close(tan, (jac @ t.ravel()).reshape(y.shape), 1e-4)


def test_second_derivative_through_ppermute():
    # sum(x * ppermute(x)) is quadratic: its Hessian-vector product is (P + P^T) v.
    x = data((4,), np.float32)
    perm = PERMS[0]

    def f(v):
        return knp.sum(v * kiln.vmap(lambda u: lax.ppermute(u, "i", perm), axis_name="i")(v))
    g = kiln.grad(f)(x)
    close(g, np.roll(x, 1) + np.roll(x, -1))
    hvp = kiln.jvp(kiln.grad(f), (x,), (np.ones(4, np.float32),))[1]
    close(hvp, np.full(4, 2.0))


# -- errors -------------------------------------------------------------------------------------------

def _in_vmap(fn, x=None, size=4):
    x = np.zeros((size, 4), np.float32) if x is None else x
    return kiln.vmap(fn, axis_name="i")(x)


@pytest.mark.parametrize("fn", [lambda v: lax.ppermute(v, "j", [(0, 1)]), lambda v: lax.pshuffle(v, "j", [0]),
                                lambda v: lax.all_to_all(v, "j", 0, 0), lambda v: lax.pswapaxes(v, "j", 0),
                                lambda v: lax.psum_scatter(v, "j"), lambda v: lax.pbroadcast(v, "j", 0),
                                lambda v: v + lax.axis_size("j"), lambda v: lax.pcast(v, "j", to="varying")])
def test_unbound_axis_name(fn):
    with pytest.raises(NameError, match=r"kiln.lax.\w+: unbound axis name 'j' \(bound axis names: 'i'\)"):
        _in_vmap(fn)


def test_unbound_outside_any_vmap():
    with pytest.raises(NameError, match=r"kiln.lax.ppermute: unbound axis name 'i' \(bound axis names: none\)"):
        lax.ppermute(np.float32(1.0), "i", [])
    with pytest.raises(NameError, match=r"kiln.lax.axis_size: unbound axis name 'i'"):
        lax.axis_size("i")


@pytest.mark.parametrize("perm,match", [
    ([(0, 4)], r"perm entry \(0, 4\) is out of range for an axis of size 4 \(indices must be in \[0, 4\)\)"),
    ([(-1, 0)], r"perm entry \(-1, 0\) is out of range"),
    ([(0, 1), (0, 2)], r"perm repeats the source index 0"),
    ([(0, 2), (1, 2)], r"perm repeats the destination index 2"),
    ([(0, 1, 2)], r"each entry of perm must be a \(source, destination\) pair, got \(0, 1, 2\)"),
])
def test_bad_ppermute_perm(perm, match):
    with pytest.raises(ValueError, match=f"kiln.lax.ppermute: {match}"):
        _in_vmap(lambda v: lax.ppermute(v, "i", perm))


def test_bad_perm_types_and_pshuffle():
    with pytest.raises(TypeError, match=r"kiln.lax.ppermute: perm must be a sequence of \(source, destination\) "
                                        r"pairs of ints, got \[\(0, 1.5\)\]"):
        _in_vmap(lambda v: lax.ppermute(v, "i", [(0, 1.5)]))
    with pytest.raises(ValueError, match=r"kiln.lax.pshuffle: perm \(0, 0, 1, 2\) is not a permutation of 0..3"):
        _in_vmap(lambda v: lax.pshuffle(v, "i", [0, 0, 1, 2]))
    with pytest.raises(ValueError, match=r"kiln.lax.pshuffle: perm has 5 entries but axis 'i' has size 4"):
        _in_vmap(lambda v: lax.pshuffle(v, "i", [0, 1, 2, 3, 4]))


def test_all_to_all_shape_errors():
    with pytest.raises(ValueError, match=r"kiln.lax.all_to_all: the size 4 of split_axis 0 must equal the size 3 of "
                                         r"axis 'i' \(tiled=False; pass tiled=True"):
        _in_vmap(lambda v: lax.all_to_all(v, "i", 0, 0), size=3)
    with pytest.raises(ValueError, match=r"kiln.lax.all_to_all: the size 4 of split_axis 0 is not divisible by the "
                                         r"size 3 of axis 'i' \(tiled=True\)"):
        _in_vmap(lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True), size=3)
    with pytest.raises(np.exceptions.AxisError,
                       match=r"kiln.lax.all_to_all: concat_axis 2 is out of bounds for an array of dimension 1"):
        _in_vmap(lambda v: lax.all_to_all(v, "i", 0, 2))
    with pytest.raises(ValueError, match=r"kiln.lax.all_to_all: the size 4 of split_axis 0 must equal the size 2"):
        _in_vmap(lambda v: lax.pswapaxes(v, "i", 0), size=2)


def test_psum_scatter_shape_errors():
    with pytest.raises(ValueError, match=r"kiln.lax.psum_scatter: dimension 0 \(size 4\) of the operand must equal the "
                                         r"size 3 of axis 'i' \(tiled=False; pass tiled=True"):
        _in_vmap(lambda v: lax.psum_scatter(v, "i"), size=3)
    with pytest.raises(ValueError, match=r"kiln.lax.psum_scatter: dimension 0 \(size 4\) of the operand is not "
                                         r"divisible by the size 3 of axis 'i' \(tiled=True\)"):
        _in_vmap(lambda v: lax.psum_scatter(v, "i", tiled=True), size=3)
    with pytest.raises(np.exceptions.AxisError, match=r"kiln.lax.psum_scatter: scatter_dimension 1 is out of bounds"):
        _in_vmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=1))


def test_unsupported_arguments():
    groups = [[0, 1], [2, 3]]
    for name, fn in [("all_to_all", lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=groups)),
                     ("psum_scatter", lambda v: lax.psum_scatter(v, "i", axis_index_groups=groups)),
                     ("pswapaxes", lambda v: lax.pswapaxes(v, "i", 0, axis_index_groups=groups))]:
        with pytest.raises(NotImplementedError, match=f"kiln.lax.{name}: axis_index_groups is not supported"):
            _in_vmap(fn)
    with pytest.raises(NotImplementedError, match=r"kiln.lax.ppermute: several axis names \('i', 'j'\) are not "
                                                  "supported; pass one axis name"):
        kiln.vmap(kiln.vmap(lambda v: lax.ppermute(v, ("i", "j"), []), axis_name="j"), axis_name="i")(
            np.zeros((2, 2), np.float32))
    # A one-name tuple is that name.
    out = _in_vmap(lambda v: lax.ppermute(v, ("i",), [(0, 1)]), np.ones((4, 1), np.float32))
    close(out, [[0], [1], [0], [0]])


def test_pbroadcast_and_pcast_errors():
    with pytest.raises(ValueError, match=r"kiln.lax.pbroadcast: source 4 is out of range for axis 'i' of size 4"):
        _in_vmap(lambda v: lax.pbroadcast(v, "i", 4))
    with pytest.raises(TypeError, match=r"kiln.lax.pbroadcast: source must be an int, got 1.0"):
        _in_vmap(lambda v: lax.pbroadcast(v, "i", 1.0))
    with pytest.raises(ValueError, match=r"kiln.lax.pcast: to='invariant' is not one of 'varying', 'reduced', "
                                         "'unreduced'"):
        _in_vmap(lambda v: lax.pcast(v, "i", to="invariant"))
    with pytest.raises(TypeError, match=r"kiln.lax.pcast: axis_name must be a name or a tuple of names"):
        _in_vmap(lambda v: lax.pcast(v, {"i"}, to="varying"))
