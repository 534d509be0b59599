"""kiln.scipy.fft (type-2 DCT and its inverse) against scipy.fft."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.fft as sf

import kiln
from kiln.scipy import fft as kf

rng = np.random.default_rng(19)
X = rng.standard_normal((3, 5, 4))


@pytest.mark.parametrize("norm", [None, "backward", "ortho"])
def test_dct_idct(norm):
    with kiln.config.override("enable_x64", True):
        for axis in (-1, 0, 1):
            for n in (None, 3, 7):
                np.testing.assert_allclose(np.asarray(kf.dct(X, n=n, axis=axis, norm=norm)),
                                           sf.dct(X, n=n, axis=axis, norm=norm), atol=1e-12)
                np.testing.assert_allclose(np.asarray(kf.idct(X, n=n, axis=axis, norm=norm)),
                                           sf.idct(X, n=n, axis=axis, norm=norm), atol=1e-12)
        for axes, s in ((None, None), ((0, 2), None), (None, (4, 6)), ((1,), (2,))):
            np.testing.assert_allclose(np.asarray(kf.dctn(X, s=s, axes=axes, norm=norm)),
                                       sf.dctn(X, s=s, axes=axes, norm=norm), atol=1e-12)
            np.testing.assert_allclose(np.asarray(kf.idctn(X, s=s, axes=axes, norm=norm)),
                                       sf.idctn(X, s=s, axes=axes, norm=norm), atol=1e-12)
        xc = X + 1j * X[::-1]
        np.testing.assert_allclose(np.asarray(kf.dct(xc, norm=norm)), sf.dct(xc, norm=norm), atol=1e-12)


def test_float32_jit_grad_vmap():
    x = X.astype(np.float32)
    out = kiln.jit(lambda v: kf.idct(kf.dct(v, norm="ortho"), norm="ortho"))(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), x, atol=1e-5)
    assert kf.dct(np.arange(4)).dtype == np.float32
    g = kiln.grad(lambda v: kf.dct(v, norm="ortho")[0])(np.ones(4, np.float32))
    np.testing.assert_allclose(np.asarray(g), np.full(4, 0.5), rtol=1e-6)
    batched = kiln.vmap(kf.dct)(x[:, 0])
    np.testing.assert_allclose(np.asarray(batched), sf.dct(x[:, 0]), rtol=1e-4, atol=1e-4)


def test_errors():
    with pytest.raises(NotImplementedError, match="dct: only DCT type 2 is implemented"):
        kf.dct(X, type=1)
    with pytest.raises(ValueError, match="idct: norm must be None, 'backward' or 'ortho'"):
        kf.idct(X, norm="forward")
    with pytest.raises(ValueError, match="dctn: s and axes must have the same length"):
        kf.dctn(X, s=(2, 2), axes=(0,))
    with pytest.raises(ValueError, match="the transform length must be positive"):
        kf.dct(X, n=0)
