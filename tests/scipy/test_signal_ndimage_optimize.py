"""kiln.scipy.signal, .ndimage, .integrate and .optimize against SciPy."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.integrate as si
import scipy.ndimage as snd
import scipy.optimize as so
import scipy.signal as ss

import kiln
import kiln.numpy as knp
from kiln.scipy import integrate as ki
from kiln.scipy import ndimage as knd
from kiln.scipy import optimize as ko
from kiln.scipy import signal as ks

rng = np.random.default_rng(13)


@pytest.mark.parametrize("shapes", [((7,), (3,)), ((3,), (7,)), ((5, 6), (2, 3)), ((4, 5, 3), (2, 2, 3))])
def test_convolve_correlate(shapes):
    a, v = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    af, vf = a.astype(np.float32), v.astype(np.float32)
    fns = {(f, m): (lambda x, y, f=f, m=m: getattr(ks, f)(x, y, mode=m))
           for f in ("convolve", "correlate") for m in ("full", "same", "valid")}
    outs = kiln.jit(lambda x, y: {k: fn(x, y) for k, fn in fns.items()})(af, vf)
    for (f, m), out in outs.items():
        ref = getattr(ss, f)(a, v, mode=m, method="direct")
        assert out.shape == ref.shape and out.dtype == np.float32, (f, m)
        np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-5, atol=1e-5, err_msg=f"{f} {m}")


def test_2d_integers_and_grad():
    a = rng.standard_normal((5, 6))
    kernels = [rng.standard_normal((2, 3)), rng.standard_normal((3, 4))]
    for v, m in itertools.product(kernels, ("full", "same", "valid")):
        np.testing.assert_allclose(np.asarray(ks.convolve2d(a, v, m)), ss.convolve2d(a, v, m), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(ks.correlate2d(a, v, m)), ss.correlate2d(a, v, m), rtol=1e-5,
                                   atol=1e-5)
    out = ks.convolve(np.arange(4), np.arange(3))
    np.testing.assert_array_equal(np.asarray(out), ss.convolve(np.arange(4), np.arange(3)))
    g = kiln.grad(lambda x: ks.convolve(x, knp.asarray([1.0, 2.0, 3.0])).sum())(np.ones(4, np.float32))
    np.testing.assert_allclose(np.asarray(g), np.full(4, 6.0))
    batched = kiln.vmap(lambda x: ks.correlate(x, knp.asarray([1.0, -1.0]), mode="valid"))(
        a.astype(np.float32))
    np.testing.assert_allclose(np.asarray(batched), np.stack([ss.correlate(r, [1.0, -1.0], "valid") for r in a]),
                               rtol=1e-5, atol=1e-5)


def test_convolutions_compute_as_jax():
    # Found porting JAX's convolutions notebook: integers and bools compute in float32 (JAX's
    # promote_dtypes_inexact); the inputs swap whenever in1 is nowhere larger, so convolve is symmetric bit for bit;
    # correlate2d flips in1 and the result, as JAX's; with in1 the smaller, complex correlate2d 'valid' is SciPy's
    # (it conjugated as correlate does).
    out = ks.convolve(np.arange(4), np.arange(3))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out), ss.convolve(np.arange(4), np.arange(3)))
    assert ks.correlate2d(np.ones((2, 2), bool), np.ones((2, 2), bool)).dtype == np.float32
    small, big = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((20, 17)).astype(np.float32)
    for m in ("full", "valid"):
        np.testing.assert_array_equal(np.asarray(ks.convolve(small, big, m)), np.asarray(ks.convolve(big, small, m)))
    for a, v in ((big, small), (small, big), (small, small[::-1])):
        np.testing.assert_array_equal(np.asarray(ks.correlate2d(a, v, "same")),
                                      np.asarray(knp.flip(ks.convolve2d(knp.flip(a), v, "same"))))
    cs = (small + 1j * rng.standard_normal((4, 5))).astype(np.complex64)
    cb = (big - 1j * rng.standard_normal((20, 17))).astype(np.complex64)
    for m in ("full", "same", "valid"):
        for a, v in ((cb, cs), (cs, cb)):
            np.testing.assert_allclose(np.asarray(ks.correlate2d(a, v, m)), ss.correlate2d(a, v, m), rtol=1e-4,
                                       atol=1e-4, err_msg=m)
            np.testing.assert_allclose(np.asarray(ks.correlate(a, v, m)), ss.correlate(a, v, m), rtol=1e-4,
                                       atol=1e-4, err_msg=m)


def test_detrend():
    x = rng.standard_normal((3, 20))
    np.testing.assert_allclose(np.asarray(ks.detrend(x)), ss.detrend(x), atol=1e-5)
    np.testing.assert_allclose(np.asarray(ks.detrend(x, axis=0, type="constant")), ss.detrend(x, axis=0,
                                                                                              type="constant"),
                               atol=1e-5)
    np.testing.assert_allclose(np.asarray(ks.detrend(x, bp=[5, 12])), ss.detrend(x, bp=[5, 12]), atol=1e-5)


def test_signal_errors():
    with pytest.raises(ValueError, match="convolve: mode must be 'full', 'same' or 'valid'"):
        ks.convolve(np.ones(3), np.ones(2), mode="circular")
    with pytest.raises(ValueError, match="convolve: method must be 'auto', 'direct' or 'fft'"):
        ks.convolve(np.ones(3), np.ones(2), method="fast")
    with pytest.raises(ValueError, match="must have the same number of dimensions"):
        ks.correlate(np.ones(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match="with mode='valid', one input must be at least as large"):
        ks.convolve(np.ones((2, 5)), np.ones((4, 3)), mode="valid")
    with pytest.raises(NotImplementedError, match="only boundary='fill' with fillvalue=0"):
        ks.convolve2d(np.ones((3, 3)), np.ones((2, 2)), boundary="wrap")
    with pytest.raises(ValueError, match="convolve2d: in1 and in2 must be two-dimensional"):
        ks.convolve2d(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="detrend: type must be"):
        ks.detrend(np.ones(4), type="quadratic")


@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates(order):
    x = rng.standard_normal((5, 7))
    coords = [rng.uniform(-3, 8, (4, 3)), rng.uniform(-3, 10, (4, 3))]
    modes = ["constant", "nearest", "wrap", "mirror", "reflect"]
    outs = kiln.jit(lambda x, c: {m: knd.map_coordinates(x, c, order, m, 1.5) for m in modes})(
        x.astype(np.float32), [c.astype(np.float32) for c in coords])
    # kiln's (and JAX's) 'constant' and 'wrap' are SciPy's 'grid-constant' and 'grid-wrap'.
    scipy_mode = {"constant": "grid-constant", "wrap": "grid-wrap"}
    for m in modes:
        ref = snd.map_coordinates(x, np.stack(coords), order=order, mode=scipy_mode.get(m, m), cval=1.5)
        np.testing.assert_allclose(np.asarray(outs[m]), ref, rtol=1e-5, atol=1e-5, err_msg=m)
    xi = np.arange(12).reshape(3, 4)
    ci = [np.array([0.4, 1.7]), np.array([2.2, 0.5])]
    out = knd.map_coordinates(xi, ci, order)
    assert out.dtype == knp.asarray(xi).dtype
    np.testing.assert_array_equal(np.asarray(out), snd.map_coordinates(xi, np.stack(ci), order=order))
    g = kiln.grad(lambda c: knd.map_coordinates(x.astype(np.float32), [c, knp.float32(2.0)], 1).sum())(
        np.float32(1.25))
    np.testing.assert_allclose(float(g), x[2, 2] - x[1, 2], rtol=1e-5)


def test_map_coordinates_eagerly_is_one_program(primitive_runs):
    """Called eagerly, one compiled program per signature (as JAX jits it; op by op it was 24x JAX's time)."""
    x = rng.standard_normal((5, 7)).astype(np.float32)
    coords = [knp.asarray(rng.uniform(-1, 6, 9).astype(np.float32)) for _ in range(2)]
    for mode in ("constant", "reflect"):
        out = knd.map_coordinates(knp.asarray(x), coords, 1, mode, 0.5)
        ref = snd.map_coordinates(x, np.stack([np.asarray(c) for c in coords]), order=1,
                                  mode="grid-constant" if mode == "constant" else mode, cval=0.5)
        np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-5, atol=1e-5, err_msg=mode)
    assert primitive_runs == []


def test_map_coordinates_errors():
    with pytest.raises(ValueError, match="coordinates must be a sequence of length input.ndim, but 1 != 2"):
        knd.map_coordinates(np.ones((2, 2)), [np.zeros(3)], 1)
    with pytest.raises(NotImplementedError, match="order must be 0 or 1"):
        knd.map_coordinates(np.ones((2, 2)), [np.zeros(3)] * 2, 3)
    with pytest.raises(NotImplementedError, match="mode 'grid-wrap' is not supported"):
        knd.map_coordinates(np.ones((2, 2)), [np.zeros(3)] * 2, 1, mode="grid-wrap")


def test_trapezoid():
    y = rng.standard_normal((3, 6))
    x = np.sort(rng.standard_normal(6))
    x2 = np.sort(rng.standard_normal((3, 6)), axis=1)
    np.testing.assert_allclose(np.asarray(ki.trapezoid(y, x)), si.trapezoid(y, x), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ki.trapezoid(y, dx=0.5, axis=0)), si.trapezoid(y, dx=0.5, axis=0),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(kiln.jit(ki.trapezoid)(y, x2)), si.trapezoid(y, x2), rtol=1e-5)
    assert ki.trapezoid(np.arange(5)).dtype == np.float32
    g = kiln.grad(lambda v: ki.trapezoid(v, dx=2.0))(np.ones(4, np.float32))
    np.testing.assert_allclose(np.asarray(g), [1.0, 2.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="x has 5 points but y has 6"):
        ki.trapezoid(y, np.arange(5.0))


def _rosen(x):
    return knp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_minimize_bfgs():
    x0 = np.array([-1.2, 1.0, 0.5, -0.3])
    with kiln.config.override("enable_x64", True):
        r = kiln.jit(lambda x: ko.minimize(_rosen, x, method="BFGS"))(x0)
        assert isinstance(r, ko.OptimizeResults)
        np.testing.assert_allclose(np.asarray(r.x), so.minimize(so.rosen, x0, method="BFGS").x, atol=1e-4)
        assert bool(r.success) and int(r.status) == 0 and float(r.fun) < 1e-10
        assert int(r.nit) > 0 and int(r.nfev) >= int(r.nit) and r.hess_inv.shape == (4, 4)
    # args, float32, and the inverse Hessian of a quadratic.
    w = np.array([1.0, 2.0, 3.0], np.float32)
    r = ko.minimize(lambda x, a: knp.sum((x - a) ** 2 * w), np.zeros(3, np.float32), (w,), method="bfgs")
    np.testing.assert_allclose(np.asarray(r.x), w, atol=1e-4)
    np.testing.assert_allclose(np.asarray(r.hess_inv), np.diag(1 / (2 * w)), atol=1e-3)
    assert r.x.dtype == np.float32
    # The iteration limit.
    r = ko.minimize(_rosen, np.float32(x0), method="BFGS", options=dict(maxiter=2))
    assert int(r.status) == 1 and not bool(r.success) and int(r.nit) == 2
    # vmap over starting points.
    starts = np.stack([x0, x0 + 0.1]).astype(np.float32)
    xs = kiln.vmap(lambda s: ko.minimize(_rosen, s, method="BFGS").x)(starts)
    np.testing.assert_allclose(np.asarray(xs), np.ones((2, 4)), atol=2e-3)


def test_minimize_errors():
    with pytest.raises(ValueError, match="method must be 'BFGS'"):
        ko.minimize(_rosen, np.zeros(2), method="Nelder-Mead")
    with pytest.raises(ValueError, match="x0 must be one-dimensional"):
        ko.minimize(_rosen, np.zeros((2, 2)), method="BFGS")
    with pytest.raises(ValueError, match="unknown options \\['eps'\\]"):
        ko.minimize(_rosen, np.zeros(2), method="BFGS", options=dict(eps=1.0))
    with pytest.raises(TypeError, match="fun must be callable"):
        ko.minimize(3, np.zeros(2), method="BFGS")
