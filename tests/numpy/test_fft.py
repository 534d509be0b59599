"""kiln.numpy.fft and kiln.lax.fft against numpy.fft: values (shapes, dtypes, norms, axes, s), eager and
under jit, derivatives (finite differences through tests/ad/check_grads.py), vmap, the GPU lowering of
multi-dimensional IRFFT (exercised on CPU), and the error messages."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from kiln.frontend.driver import dispatch

import kiln
import kiln.numpy as jnp
from kiln import lax, lowering, runtime

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "ad"))
from check_grads import check_grads  # noqa: E402

F = jnp.fft
RNG = np.random.default_rng(0)


def _rand(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "i":
        x = RNG.integers(-5, 6, shape)
    return x.astype(dtype)


def _close(actual, expected, x64=False, what=""):
    actual = np.asarray(actual)
    assert actual.shape == np.shape(expected), f"{what}: shape {actual.shape} != {np.shape(expected)}"
    scale = max(1.0, float(np.abs(expected).max(initial=0)))
    tol = 1e-12 if x64 else 2e-6
    np.testing.assert_allclose(actual, expected, rtol=0, atol=tol * scale * 10, err_msg=what)


# (name, kwargs) for the complex-input and real-input transforms; each is checked against numpy.fft.
COMPLEX_CALLS = [
    ("fft", {}), ("fft", dict(n=7, axis=0, norm="ortho")), ("fft", dict(n=3, norm="forward")),
    ("ifft", {}), ("ifft", dict(n=6, axis=1, norm="ortho")), ("ifft", dict(axis=0, norm="forward")),
    ("irfft", {}), ("irfft", dict(n=7, axis=0)), ("irfft", dict(n=4, norm="ortho")), ("irfft", dict(norm="forward")),
    ("hfft", {}), ("hfft", dict(n=5, axis=1, norm="ortho")), ("hfft", dict(norm="forward")),
    ("fft2", {}), ("fft2", dict(s=(3, 6), norm="ortho")), ("ifft2", dict(axes=(0, 2), norm="forward")),
    ("irfft2", {}), ("irfft2", dict(s=(4, 7), axes=(2, 0))),
    ("fftn", {}), ("fftn", dict(axes=(2, 0), norm="ortho")), ("ifftn", dict(s=(2, 5), axes=(1, 2))),
    ("irfftn", {}), ("irfftn", dict(s=(3, 2, 5), norm="ortho")),
]
REAL_CALLS = [
    ("fft", dict(axis=1)), ("rfft", {}), ("rfft", dict(n=5, axis=0, norm="ortho")), ("rfft", dict(n=8, norm="forward")),
    ("ihfft", {}), ("ihfft", dict(n=3, axis=1, norm="ortho")), ("ihfft", dict(norm="forward")),
    ("rfft2", {}), ("rfft2", dict(s=(5, 3), axes=(0, 1), norm="ortho")),
    ("rfftn", {}), ("rfftn", dict(axes=(0, 2), norm="forward")), ("rfftn", dict(s=(2, 6))),
]


def _numpy(name, x, kw):
    if "s" in kw and "axes" not in kw:  # NumPy 2 deprecates s without axes: spell out the default
        kw = dict(kw, axes=tuple(range(x.ndim - len(kw["s"]), x.ndim)))
    return getattr(np.fft, name)(x, **kw)


def _run_all(calls, x, jit: bool):
    def all_of(x):
        return [getattr(F, name)(x, **kw) for name, kw in calls]
    return (kiln.jit(all_of) if jit else all_of)(x)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("dtype,shape", [(np.complex64, (3, 4, 5)), (np.complex64, (2, 6, 4))])
def test_complex_transforms_match_numpy(dtype, shape, jit):
    x = _rand(shape, dtype)
    for (name, kw), out in zip(COMPLEX_CALLS, _run_all(COMPLEX_CALLS, x, jit)):
        expected = _numpy(name, x, kw)
        assert np.asarray(out).dtype == (np.float32 if name in ("irfft", "hfft", "irfft2", "irfftn") else
                                         np.complex64), name
        _close(out, expected, what=f"{name}({kw})")


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("dtype,shape", [(np.float32, (3, 4, 5)), (np.int32, (4, 3, 6))])
def test_real_transforms_match_numpy(dtype, shape, jit):
    x = _rand(shape, dtype)
    for (name, kw), out in zip(REAL_CALLS, _run_all(REAL_CALLS, x, jit)):
        assert np.asarray(out).dtype == np.complex64, name  # float and int inputs compute in 32 bits (as JAX)
        _close(out, _numpy(name, x, kw), what=f"{name}({kw})")


def test_x64_and_many_axes():
    kiln.config.update("enable_x64", True)
    x = _rand((2, 3, 2, 3, 2), np.float64)
    z = np.fft.rfftn(x)
    outs = kiln.jit(lambda x, z: (F.fftn(x), F.rfftn(x), F.ifftn(z), F.irfftn(z, s=x.shape), F.fft(x),
                                  F.irfft(z[0, 0, 0, 0])))(x, z)
    expected = (np.fft.fftn(x), np.fft.rfftn(x), np.fft.ifftn(z), np.fft.irfftn(z, s=x.shape, axes=range(5)),
                np.fft.fft(x), np.fft.irfft(z[0, 0, 0, 0]))
    for out, e in zip(outs, expected):
        assert np.asarray(out).dtype == e.dtype
        _close(out, e, x64=True)
    assert F.fft(np.arange(4)).dtype == np.complex128  # integers compute in the default float (x64: float64)


def test_empty_axes_and_1d_lax():
    x = _rand((2, 3), np.float32)
    out = F.fftn(x, axes=())
    assert out.dtype == np.complex64 and np.array_equal(np.asarray(out), x.astype(np.complex64))
    _close(lax.fft(x, lax.FftType.RFFT, (2, 3)), np.fft.rfft2(x))
    _close(lax.fft(x.astype(np.complex64), "IFFT", (3,)), np.fft.ifft(x))


def test_freqs_and_shifts():
    for n, d in [(7, 0.3), (8, 1.0), (1, 2.0)]:
        _close(F.fftfreq(n, d), np.fft.fftfreq(n, d))
        _close(F.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    assert F.fftfreq(4).dtype == np.float32 and F.rfftfreq(5, dtype=np.float16).dtype == np.float16
    # a traced spacing
    f, rf = kiln.jit(lambda d: (F.fftfreq(6, d), F.rfftfreq(6, d)))(np.float32(0.5))
    _close(f, np.fft.fftfreq(6, 0.5))
    _close(rf, np.fft.rfftfreq(6, 0.5))
    x = _rand((3, 4, 5), np.float32)
    for axes in (None, 1, (0, 2), [-1]):
        _close(F.fftshift(x, axes), np.fft.fftshift(x, axes))
        _close(F.ifftshift(x, axes), np.fft.ifftshift(x, axes))
    _close(kiln.jit(F.fftshift)(x), np.fft.fftshift(x))


def test_round_trips():
    x = _rand((4, 6), np.float32)
    _close(F.irfft(F.rfft(x), n=6), x)
    _close(F.ifft2(F.fft2(x)).real, x)
    _close(F.ihfft(F.hfft(F.ihfft(x))), F.ihfft(x))


GRAD_CASES = [
    (lambda x: F.rfft(x, norm="ortho"), (4, 6)),
    (lambda x: F.rfft(x, n=5, axis=0), (4, 3)),
    (lambda x: F.irfft(F.rfft(x) * (1 + 0.5j), n=7), (2, 7)),
    (lambda x: F.irfft(x + 1j * x[::-1], n=6, axis=0, norm="forward"), (4, 3)),
    (lambda x: F.irfftn(F.fftn(x)[..., :3] * 1j, s=(3, 5)), (3, 5)),
    (lambda x: F.fft2(x, s=(3, 5), norm="ortho"), (4, 4)),
    (lambda x: F.ifftn(x * (1 - 2j), axes=(0, 2)), (2, 3, 4)),
    (lambda x: F.hfft(x * 1j + 1, n=5), (2, 4)),
    (lambda x: F.ihfft(x, axis=0), (5, 2)),
]


@pytest.mark.parametrize("i", range(len(GRAD_CASES)))
def test_grads_against_finite_differences(i):
    fn, shape = GRAD_CASES[i]
    check_grads(fn, (RNG.standard_normal(shape),), order=1, jit=i % 3 == 0)


def test_grad_of_power_spectrum():
    """The gradients of sums of squared magnitudes of fft and rfft, in closed form."""
    x = _rand((8,), np.float32)
    g = kiln.grad(lambda x: jnp.sum(jnp.abs(F.fft(x)) ** 2))(x)
    _close(g, 2 * 8 * x)
    g = kiln.jit(kiln.grad(lambda x: jnp.sum(jnp.abs(F.rfft(x, norm="ortho")) ** 2)))(x)
    y = np.fft.rfft(x, norm="ortho")
    # d/dx sum_k |y_k|^2 = 2 Re(sum_k conj(y_k) dy_k/dx) with dy/dx the (ortho) DFT rows
    dft = np.exp(-2j * np.pi * np.outer(np.arange(5), np.arange(8)) / 8) / np.sqrt(8)
    _close(g, 2 * np.real(np.conj(y) @ dft))


def test_vmap_matches_loop():
    x = _rand((3, 4, 5), np.float32)
    for fn, in_axes in [(lambda v: F.rfft2(v, norm="ortho"), 1), (lambda v: F.irfft(v, n=6), 2),
                        (lambda v: F.fftn(v, axes=(0,)), 0)]:
        out = kiln.vmap(fn, in_axes=in_axes)(x)
        expected = np.stack([np.asarray(fn(np.take(x, i, axis=in_axes))) for i in range(x.shape[in_axes])])
        _close(out, expected)


def test_gpu_lowering_of_multidimensional_irfft():
    """On GPUs irfftn is split into an IFFT and a 1-D IRFFT (cuFFT assumes Hermitian symmetry in every
    dimension); the split program gives NumPy's values for inputs that are not symmetric."""
    z = _rand((2, 3, 4), np.complex64)

    def fn(z):
        return lax.fft(z, "irfft", (3, 6)), lax.fft(z, "irfft", (2, 3, 6))
    closed = kiln.make_ir(fn)(z)
    lowered = lowering.lower(closed.ir, context=runtime.mlir_context(), platform="cuda", keep_unused=True)
    text = lowered.as_text()
    assert text.count("stablehlo.fft") == 4 and "IFFT" in text
    dev = runtime.local_device("cpu", 0)
    exe = runtime.compile(lowered.module, dev, [(a.shape, a.dtype) for a in lowered.out_avals])
    outs = exe.execute([dispatch.to_buffer(c, dev) for c in closed.consts] + [dispatch.to_buffer(z, dev)])
    a, b = [runtime.to_numpy(o) for o in outs]
    _close(a, np.fft.irfft2(z, s=(3, 6)))
    _close(b, np.fft.irfftn(z, s=(2, 3, 6), axes=(0, 1, 2)))


@pytest.mark.parametrize("call,exc,match", [
    (lambda: F.fft(np.ones(4), norm="bogus"), ValueError, "invalid norm 'bogus'"),
    (lambda: F.fft(np.ones((2, 4)), axis=(0, 1)), ValueError, "axis must be one int.*fftn"),
    (lambda: F.fft2(np.ones((2, 4, 3)), axes=(0,)), ValueError, "needs exactly 2 axes"),
    (lambda: F.fftn(np.ones((2, 4)), s=(2, 3), axes=(0,)), ValueError, "must have the same length"),
    (lambda: F.fftn(np.ones((2, 4)), axes=(0, -2)), ValueError, "repeated axes"),
    (lambda: F.fftn(np.ones((2, 4)), axes=(2,)), np.exceptions.AxisError, "axis 2 is out of bounds"),
    (lambda: F.fft(np.ones(4), n=0), ValueError, "must be positive"),
    (lambda: F.irfft(np.ones(1, np.complex64)), ValueError, "no output points; pass n"),
    (lambda: F.fft([1.0, 2.0]), TypeError, "wrap it with kiln.numpy.asarray"),
    (lambda: F.fftfreq((3, 4)), ValueError, "n must be one int"),
    (lambda: F.fftfreq(4, d=[1.0]), ValueError, "d must be one value"),
    (lambda: lax.fft(np.ones(4, np.complex64), "rfft", (4,)), TypeError, "RFFT takes a real operand"),
    (lambda: lax.fft(np.ones(4, np.float32), "dct", (4,)), ValueError, "unknown fft_type 'dct'"),
    (lambda: lax.fft(np.ones((2, 2, 2, 2), np.float32), "fft", (2, 2, 2, 2)), ValueError, "1 to 3 trailing"),
    (lambda: lax.fft(np.ones((2, 4), np.float32), "fft", (3,)), ValueError, r"trailing dimensions \(4,\)"),
    (lambda: lax.fft(np.ones((2, 4), np.complex64), "irfft", (4,)), ValueError, r"must be \(3,\)"),
    (lambda: lax.fft(np.ones(4, np.float32), "fft", (1, 1, 4)), ValueError, "more entries than the operand"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
