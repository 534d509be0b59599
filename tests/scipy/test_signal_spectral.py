"""kiln.scipy.signal's FFT-based functions (fftconvolve, convolve/correlate with method='fft', stft, istft,
csd, welch) against scipy.signal."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.signal as ss
from kiln.frontend.scipy.signal import _window_values

import kiln
import kiln.numpy as knp
from kiln.scipy import signal as ks

rng = np.random.default_rng(14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("shapes", [((7,), (3,)), ((3,), (7,)), ((5, 6), (2, 3)), ((4, 5, 3), (2, 2, 3))])
def test_fftconvolve(shapes, dtype):
    a = rng.standard_normal(shapes[0]).astype(dtype)
    v = rng.standard_normal(shapes[1]).astype(dtype)
    if np.iscomplexobj(a):
        a = a + 1j * rng.standard_normal(a.shape).astype(np.float32)
    modes = ("full", "same", "valid")
    tol = 1e-12 if dtype == np.float64 else 1e-4
    with kiln.config.override("enable_x64", dtype == np.float64):
        outs = kiln.jit(lambda x, y: [ks.fftconvolve(x, y, m) for m in modes])(a, v)
        eager = ks.fftconvolve(a, v, "same")
        fft_conv = [ks.convolve(a, v, m, method="fft") for m in modes]
        fft_corr = [ks.correlate(a, v, m, method="fft") for m in modes]
    np.testing.assert_allclose(np.asarray(eager), ss.fftconvolve(a, v, "same"), rtol=tol, atol=tol)
    for m, out, c, r in zip(modes, outs, fft_conv, fft_corr):
        ref = ss.fftconvolve(a, v, m)
        assert out.shape == ref.shape and out.dtype == dtype, (m, out.dtype)
        np.testing.assert_allclose(np.asarray(out), ref, rtol=tol, atol=tol, err_msg=m)
        np.testing.assert_allclose(np.asarray(c), ss.convolve(a, v, m, method="direct"), rtol=tol, atol=tol)
        if m != "valid" or all(x >= y for x, y in zip(a.shape, v.shape)):
            np.testing.assert_allclose(np.asarray(r), ss.correlate(a, v, m, method="direct"), rtol=tol, atol=tol)


def test_fftconvolve_axes_grad_vmap():
    a, v = rng.standard_normal((3, 8)), rng.standard_normal((3, 4))
    for axes in (1, [-1], (1,)):
        for m in ("full", "same", "valid"):
            np.testing.assert_allclose(np.asarray(ks.fftconvolve(a, v, m, axes=axes)),
                                       ss.fftconvolve(a, v, m, axes=axes), atol=1e-5)
    b, c = rng.standard_normal((5, 1)), rng.standard_normal((1, 3))  # one point on one side: an outer product
    for m in ("full", "same"):
        np.testing.assert_allclose(np.asarray(ks.fftconvolve(b, c, m)), ss.fftconvolve(b, c, m), atol=1e-5)
    with kiln.config.override("enable_x64", True):
        x0, k = rng.standard_normal(6), rng.standard_normal(3)
        w = rng.standard_normal(6)
        f = lambda x: knp.sum(ks.fftconvolve(x, k, "same") * w)  # noqa: E731
        g = np.asarray(kiln.grad(f)(x0))
        eps = 1e-6
        fd = [(float(f(x0 + eps * e)) - float(f(x0 - eps * e))) / (2 * eps) for e in np.eye(6)]
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    batched = kiln.vmap(lambda x: ks.fftconvolve(x, knp.asarray([1.0, -2.0, 0.5]), "valid"))(
        a.astype(np.float32))
    np.testing.assert_allclose(np.asarray(batched), np.stack([ss.fftconvolve(r, [1.0, -2.0, 0.5], "valid")
                                                              for r in a]), atol=1e-5)


def test_windows_match_get_window():
    for w in ("hann", "hamming", "blackman", "bartlett", "boxcar", "triang", "cosine", ("tukey", 0.3),
              ("kaiser", 2.0)):
        for M in (1, 2, 5, 8):
            np.testing.assert_allclose(_window_values("stft", w, M), ss.get_window(w, M), atol=1e-12,
                                       err_msg=str((w, M)))


STFT_CASES = [dict(nperseg=16), dict(nperseg=15, noverlap=5, nfft=20, detrend="linear"),
              dict(nperseg=16, boundary="odd", padded=False), dict(nperseg=16, boundary="even", window="hamming"),
              dict(nperseg=12, boundary="constant", detrend="constant", window=("tukey", 0.25)),
              dict(nperseg=16, boundary=None, return_onesided=False)]


@pytest.mark.parametrize("x64", [False, True])
def test_stft_istft(x64):
    x = rng.standard_normal((2, 60))
    xk = x if x64 else x.astype(np.float32)
    tol = 1e-10 if x64 else 2e-5
    with kiln.config.override("enable_x64", x64):
        outs = kiln.jit(lambda s: [ks.stft(s, fs=2.0, **kw) for kw in STFT_CASES])(xk)
        eager = ks.stft(xk, nperseg=16, axis=-1)
        inv = []
        for kw, (_, _, Z) in zip(STFT_CASES, outs):
            if kw.get("boundary", "zeros") is not None and "padded" not in kw:
                ikw = {k: v for k, v in kw.items() if k in ("nperseg", "noverlap", "nfft", "window")}
                inv.append((kw, ikw, ks.istft(Z, fs=2.0, **ikw)))
        t_col, x_col = ks.istft(knp.swapaxes(eager[2], 0, 2), nperseg=16, time_axis=0, freq_axis=1)
    cdtype = np.complex128 if x64 else np.complex64
    for kw, (f, t, Z) in zip(STFT_CASES, outs):
        f0, t0, Z0 = ss.stft(x, fs=2.0, **kw)
        assert Z.shape == Z0.shape and Z.dtype == cdtype, kw
        np.testing.assert_allclose(np.asarray(f), f0, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(t), t0, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(Z), Z0, atol=tol, err_msg=str(kw))
    np.testing.assert_allclose(np.asarray(eager[2]), ss.stft(x, nperseg=16)[2], atol=tol)
    for kw, ikw, (t, xr) in inv:
        Z0 = ss.stft(x, fs=2.0, **kw)[2]
        t0, xr0 = ss.istft(Z0, fs=2.0, **ikw)
        np.testing.assert_allclose(np.asarray(xr), xr0, atol=10 * tol, err_msg=str(ikw))
        np.testing.assert_allclose(np.asarray(t), t0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(x_col)[:60], x.T, atol=10 * tol)  # stft padded the end
    # a two-sided (complex) round trip
    z = x[0] + 1j * x[1]
    with kiln.config.override("enable_x64", True):
        _, _, Zc = ks.stft(z, nperseg=16, return_onesided=False)
        _, zr = ks.istft(Zc, nperseg=16, input_onesided=False)
    np.testing.assert_allclose(np.asarray(zr)[:60], z, atol=1e-10)


WELCH_CASES = [dict(nperseg=16), dict(nperseg=16, average="median"), dict(nperseg=10, scaling="spectrum",
                                                                           detrend="linear"),
               dict(nperseg=16, return_onesided=False), dict(nperseg=16, nfft=33, window="blackman"),
               dict(nperseg=9, noverlap=2, detrend=False, fs=3.0)]


@pytest.mark.parametrize("x64", [False, True])
def test_welch_csd(x64):
    x, y = rng.standard_normal((3, 50)), rng.standard_normal((3, 50))
    tol = 1e-12 if x64 else 1e-5
    xk, yk = (x, y) if x64 else (x.astype(np.float32), y.astype(np.float32))
    with kiln.config.override("enable_x64", x64):
        outs = kiln.jit(lambda a, b: [(ks.welch(a, **kw), ks.csd(a, b, **kw)) for kw in WELCH_CASES])(xk, yk)
        axis0 = ks.welch(xk.T, nperseg=16, axis=0)
        odd_len = ks.csd(xk, yk[:, :40], nperseg=16, average="median")
    for kw, ((f, P), (fc, Pc)) in zip(WELCH_CASES, outs):
        np.testing.assert_array_equal(np.asarray(fc), np.asarray(f))
        f0, P0 = ss.welch(x, **kw)
        assert P.dtype == (np.float64 if x64 else np.float32)
        np.testing.assert_allclose(np.asarray(f), f0, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(P), P0, rtol=tol, atol=tol, err_msg=str(kw))
        f0, P0 = ss.csd(x, y, **kw)
        assert Pc.dtype == (np.complex128 if x64 else np.complex64)
        np.testing.assert_allclose(np.asarray(Pc), P0, rtol=tol, atol=tol, err_msg=str(kw))
    np.testing.assert_allclose(np.asarray(axis0[1]), ss.welch(x.T, nperseg=16, axis=0)[1], rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(odd_len[1]), ss.csd(x, y[:, :40], nperseg=16, average="median")[1],
                               rtol=tol, atol=tol)
    # a callable detrend sees each segment along the last axis (as SciPy)
    d = lambda s: s - s.mean(axis=-1, keepdims=True)  # noqa: E731
    np.testing.assert_allclose(np.asarray(ks.welch(xk.T, nperseg=16, axis=0, detrend=d)[1]),
                               ss.welch(x.T, nperseg=16, axis=0, detrend=d)[1], rtol=1e-5, atol=1e-5)
    # gradient and vmap
    with kiln.config.override("enable_x64", True):
        g = np.asarray(kiln.grad(lambda s: knp.sum(ks.welch(s, nperseg=8)[1]))(x[0]))
        eps = 1e-6
        fd = [(ss.welch(x[0] + eps * e, nperseg=8)[1].sum() - ss.welch(x[0] - eps * e, nperseg=8)[1].sum())
              / (2 * eps) for e in np.eye(50)]
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-8)
        batched = kiln.vmap(lambda s: ks.welch(s, nperseg=16)[1])(x)
    np.testing.assert_allclose(np.asarray(batched), ss.welch(x, nperseg=16)[1], rtol=1e-12)


def test_spectral_errors():
    x = np.ones(32)
    cases = [
        (ValueError, "fftconvolve: mode must be 'full', 'same' or 'valid'", lambda: ks.fftconvolve(x, x, "wrap")),
        (ValueError, "fftconvolve: in1 and in2 must have the same number of dimensions",
         lambda: ks.fftconvolve(x, np.ones((2, 2)))),
        (ValueError, "must have the same size along the axes not convolved",
         lambda: ks.fftconvolve(np.ones((2, 5)), np.ones((3, 2)), axes=1)),
        (ValueError, "axis 2 is out of bounds", lambda: ks.fftconvolve(np.ones((2, 5)), np.ones((2, 2)), axes=2)),
        (ValueError, "with mode='valid', one input must be at least as large",
         lambda: ks.fftconvolve(np.ones((2, 5)), np.ones((4, 3)), "valid")),
        (ValueError, "fftconvolve: in1 and in2 must not be empty", lambda: ks.fftconvolve(x, np.ones(0))),
        (ValueError, "stft: unknown window 'gauss'", lambda: ks.stft(x, window="gauss", nperseg=8)),
        (ValueError, r"window \('kaiser',\) takes 1 parameter", lambda: ks.stft(x, window=("kaiser",), nperseg=8)),
        (ValueError, "stft: nperseg must be a positive integer", lambda: ks.stft(x, nperseg=0)),
        (TypeError, "stft: nperseg must be an integer", lambda: ks.stft(x, nperseg=8.0)),
        (ValueError, r"noverlap \(8\) must be at least 0 and less than nperseg \(8\)",
         lambda: ks.stft(x, nperseg=8, noverlap=8)),
        (ValueError, r"nfft \(4\) must be at least nperseg \(8\)", lambda: ks.welch(x, nperseg=8, nfft=4)),
        (ValueError, "stft: boundary must be", lambda: ks.stft(x, nperseg=8, boundary="wrap")),
        (ValueError, "csd: scaling must be 'density' or 'spectrum'", lambda: ks.welch(x, nperseg=8, scaling="power")),
        (ValueError, "csd: detrend must be", lambda: ks.welch(x, nperseg=8, detrend="quadratic")),
        (ValueError, "csd: average must be 'mean' or 'median'", lambda: ks.welch(x, nperseg=8, average="max")),
        (ValueError, "csd: x and y must have the same number of dimensions",
         lambda: ks.csd(x, np.ones((2, 32)), nperseg=8)),
        (ValueError, "x and y cannot be broadcast together", lambda: ks.csd(np.ones((2, 32)), np.ones((3, 32)))),
        (ValueError, "nperseg=4 differs from the window's length 8",
         lambda: ks.welch(x, window=np.ones(8), nperseg=4)),
        (ValueError, r"the window \(40 points\) is longer than the input", lambda: ks.welch(x, window=np.ones(40))),
        (ValueError, "stft: window must be one-dimensional", lambda: ks.stft(x, window=np.ones((2, 4)))),
        (TypeError, "stft: nperseg must be a static integer",
         lambda: kiln.jit(lambda n: ks.stft(x, nperseg=n))(8)),
        (ValueError, "istft: Zxx must be at least two-dimensional", lambda: ks.istft(np.ones(4))),
        (ValueError, "istft: time_axis and freq_axis must differ", lambda: ks.istft(np.ones((4, 4)), time_axis=0,
                                                                                     freq_axis=0)),
        (ValueError, r"istft: nfft \(4\) must be at least nperseg \(6\)",
         lambda: ks.istft(np.ones((4, 4)), nperseg=6, nfft=4)),
        (ValueError, "istft: window must be one-dimensional with nperseg=6",
         lambda: ks.istft(np.ones((4, 4)), window=np.ones(5))),
    ]
    for exc, match, fn in cases:
        with pytest.raises(exc, match=match):
            fn()
    with pytest.warns(UserWarning, match="nperseg=64 is greater than the input length 32"):
        ks.welch(x, nperseg=64)
    with pytest.warns(UserWarning, match="input data is complex, switching to return_onesided=False"):
        ks.welch(x + 1j, nperseg=8)
