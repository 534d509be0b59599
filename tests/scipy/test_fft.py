"""kiln.scipy.fft (dct, idct, dctn, idctn) against scipy.fft: types 2 and 3, every norm, n/s/axes,
real, integer and complex inputs, eager and under jit, derivatives, vmap, errors."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import scipy.fft as sf

import kiln
import kiln.scipy.fft as kf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "ad"))
from check_grads import check_grads  # noqa: E402

RNG = np.random.default_rng(1)
NORMS = [None, "backward", "ortho", "forward"]


def _close(actual, expected):
    actual = np.asarray(actual)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=0, atol=2e-5 * max(1.0, np.abs(expected).max()))


CALLS = [(name, dict(type=t, norm=norm, **kw))
         for t in (2, 3) for norm in NORMS
         for name, kw in [("dct", {}), ("dct", dict(n=7, axis=0)), ("idct", dict(axis=1)), ("idct", dict(n=3)),
                          ("dctn", {}), ("dctn", dict(s=(3, 5), axes=(0, 2))), ("idctn", dict(axes=(1, 2))),
                          ("idctn", dict(s=(2, 3, 8)))]]


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("dtype,shape", [(np.float32, (3, 4, 5)), (np.int32, (2, 5, 1))])
def test_match_scipy(dtype, shape, jit):
    x = RNG.standard_normal(shape).astype(dtype) if dtype != np.int32 else RNG.integers(-4, 5, shape).astype(dtype)

    # eager dispatches every operation: a subset there, all of them under jit (one compilation)
    calls = CALLS if jit else [c for c in CALLS if c[1]["norm"] in (None, "ortho") and "s" not in c[1]]

    def all_of(x):
        return [getattr(kf, name)(x, **kw) for name, kw in calls]
    outs = (kiln.jit(all_of) if jit else all_of)(x)
    for (name, kw), out in zip(calls, outs):
        assert np.asarray(out).dtype == np.float32, (name, kw)
        _close(out, getattr(sf, name)(x.astype(np.float64), **kw))


def test_complex_and_single_point():
    z = (RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))).astype(np.complex64)
    out = kf.dct(z, norm="ortho")
    assert out.dtype == np.complex64
    _close(out, sf.dct(z, norm="ortho"))
    _close(kf.idctn(z, type=3), sf.idctn(z, type=3))
    for t in (2, 3):
        _close(kf.dct(np.ones(1, np.float32), type=t), sf.dct(np.ones(1), type=t))
        _close(kf.idct(np.full(1, 3.0, np.float32), type=t), sf.idct(np.full(1, 3.0), type=t))


def test_round_trip_and_x64():
    kiln.config.update("enable_x64", True)
    x = RNG.standard_normal((4, 6))
    for t in (2, 3):
        for norm in NORMS:
            back = kf.idctn(kf.dctn(x, type=t, norm=norm), type=t, norm=norm)
            assert back.dtype == np.float64
            np.testing.assert_allclose(np.asarray(back), x, atol=1e-12)


@pytest.mark.parametrize("fn", [lambda x: kf.dct(x, norm="ortho"), lambda x: kf.idct(x, type=3, n=5, axis=0),
                                lambda x: kf.dctn(x, type=3, norm="forward"), lambda x: kf.idctn(x)])
def test_grads(fn):
    check_grads(fn, (RNG.standard_normal((4, 3)),), order=1)


def test_vmap():
    x = RNG.standard_normal((3, 5, 4)).astype(np.float32)
    out = kiln.vmap(lambda v: kf.dct(v, axis=0, norm="ortho"), in_axes=2)(x)
    _close(out, np.stack([sf.dct(x[:, :, i], axis=0, norm="ortho") for i in range(4)]))


@pytest.mark.parametrize("call,exc,match", [
    (lambda: kf.dct(np.ones(4), type=1), NotImplementedError, "DCT type 1 is not implemented; types 2 and 3"),
    (lambda: kf.idctn(np.ones(4), type=4), NotImplementedError, "DCT type 4"),
    (lambda: kf.dct(np.ones(4), norm="bogus"), ValueError, "invalid norm 'bogus'"),
    (lambda: kf.dct(np.ones((2, 4)), axis=(0, 1)), ValueError, "axis must be one int.*dctn"),
    (lambda: kf.dct(np.ones(4), n=0), ValueError, "n must be positive"),
    (lambda: kf.dctn(np.ones(4), s=(2, 2)), ValueError, r"at most x.ndim \(1\)"),
    (lambda: kf.dctn(np.ones((2, 4)), s=(2, 2), axes=(0,)), ValueError, "must have the same length"),
    (lambda: kf.dct([1.0, 2.0]), TypeError, "wrap it with kiln.numpy.asarray"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
