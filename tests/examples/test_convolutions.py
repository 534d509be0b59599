"""JAX's notebook "Generalized convolutions in JAX" (docs/notebooks/convolutions.md), ported by changing imports
(tests/examples/jax_ported/convolutions.py), checked under kiln against NumPy/SciPy.

The oracles: NumPy's ``np.convolve``/``np.correlate`` and SciPy's ``scipy.signal.convolve``/``convolve2d``/
``correlate``/``correlate2d`` (in float64); for ``lax.conv``, ``lax.conv_with_general_padding`` and
``lax.conv_general_dilated``, ``_conv_nd`` below, a direct float64 NumPy implementation of the general N-d
convolution (dimension numbers, strides, explicit/SAME/VALID padding, input and kernel dilation, feature groups),
written from the definition of the operation and not from JAX's code; for the transposed convolution, the scatter
that defines ``tf.nn.conv2d_transpose`` (each input pixel adds a copy of the kernel at twice its position) and the
adjoint identity with a strided convolution; for gradients, central differences of the float64 oracle. The printed
lines are the ones the notebook's saved outputs show.
"""
from __future__ import annotations

import contextlib
import io
import itertools

import numpy as np
import pytest
import scipy.signal
import scipy.stats
from ported import load

import kiln
import kiln.numpy as jnp
import kiln.scipy as jsp
from kiln import lax

# ================================================ the oracle ================================================


def _same_pads(sizes, kernel_sizes, strides):
    """SAME padding: the output has ceil(size / stride) elements; the extra element of an odd total goes high."""
    pads = []
    for n, k, s in zip(sizes, kernel_sizes, strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def _conv_nd(lhs, rhs, strides, padding, lhs_dilation=None, rhs_dilation=None, specs=None, groups=1):
    """The general N-d convolution (a cross-correlation, as XLA's), in float64, by a loop over the kernel's taps.

    ``specs`` is (lhs, rhs, out) as letter strings ('NHWC', 'HWIO', 'NHWC'); None means NC..., OI..., NC....
    Spatial dimensions pair up by letter, in the order the kernel's spec lists them."""
    lhs, rhs = np.asarray(lhs, np.float64), np.asarray(rhs, np.float64)
    nsp = lhs.ndim - 2
    if specs is None:
        spatial = [str(i) for i in range(nsp)]
        specs = ("NC" + "".join(spatial), "OI" + "".join(spatial), "NC" + "".join(spatial))
    lspec, rspec, ospec = specs
    spatial = [c for c in rspec if c not in "OI"]
    x = lhs.transpose([lspec.index("N"), lspec.index("C")] + [lspec.index(c) for c in spatial])
    w = rhs.transpose([rspec.index("O"), rspec.index("I")] + [rspec.index(c) for c in spatial])
    lhs_dilation = lhs_dilation or (1,) * nsp
    rhs_dilation = rhs_dilation or (1,) * nsp
    # input dilation: d - 1 zeros between neighbours
    xd = np.zeros(x.shape[:2] + tuple((n - 1) * d + 1 for n, d in zip(x.shape[2:], lhs_dilation)))
    xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dilation)] = x
    eff_k = [(k - 1) * r + 1 for k, r in zip(w.shape[2:], rhs_dilation)]
    if isinstance(padding, str):
        padding = _same_pads(xd.shape[2:], eff_k, strides) if padding == "SAME" else [(0, 0)] * nsp
    # padding (a negative pad crops)
    xp = np.pad(xd, [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding])
    xp = xp[(slice(None), slice(None)) + tuple(slice(max(-lo, 0), xp.shape[2 + i] - max(-hi, 0))
                                                for i, (lo, hi) in enumerate(padding))]
    out_sp = [(p - k) // s + 1 for p, k, s in zip(xp.shape[2:], eff_k, strides)]
    n, c = x.shape[:2]
    o = w.shape[0]
    assert c == groups * w.shape[1] and o % groups == 0
    ig, og = c // groups, o // groups
    out = np.zeros((n, o, *out_sp))
    for tap in itertools.product(*(range(k) for k in w.shape[2:])):
        window = tuple(slice(t * r, t * r + s * (m - 1) + 1, s)
                       for t, r, s, m in zip(tap, rhs_dilation, strides, out_sp))
        patch = xp[(slice(None), slice(None)) + window]
        for g in range(groups):
            out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch[:, g * ig:(g + 1) * ig],
                                                     w[(slice(g * og, (g + 1) * og), slice(None)) + tap])
    perm = [ospec.index("N"), ospec.index("C")] + [ospec.index(ch) for ch in spatial]
    return np.moveaxis(out, range(out.ndim), perm)


def _conv2d_transpose(img, kernel):
    """tf.nn.conv2d_transpose(img, kernel, (N, 2H, 2W, C), (1, 2, 2, 1)) with SAME padding, by its definition: pixel
    (i, j) adds kernel[a, b] (contracted over the image's channels) to output pixel (2i + a, 2j + b)."""
    img, kernel = np.asarray(img, np.float64), np.asarray(kernel, np.float64)
    n, h, w, _ = img.shape
    kh, kw = kernel.shape[:2]
    out = np.zeros((n, 2 * h + kh, 2 * w + kw, kernel.shape[3]))
    for a, b in itertools.product(range(kh), range(kw)):
        out[:, a:a + 2 * h:2, b:b + 2 * w:2] += img @ kernel[a, b]
    return out[:, :2 * h, :2 * w]


def _close(actual, expected, rtol=1e-5, atol=1e-5, dtype=np.float32):
    actual = np.asarray(actual)
    assert actual.shape == np.shape(expected) and actual.dtype == dtype
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def test_the_oracle_itself():
    """_conv_nd against SciPy on a case SciPy can state (one channel: a 2-D cross-correlation), and its strides,
    padding and dilations against hand-built equivalents."""
    rng = np.random.RandomState(0)
    x, w = rng.randn(9, 8), rng.randn(3, 2)
    full = _conv_nd(x[None, None], w[None, None], (1, 1), [(2, 2), (1, 1)])[0, 0]
    np.testing.assert_allclose(full, scipy.signal.correlate(x, w, "full"), atol=1e-12)
    np.testing.assert_allclose(_conv_nd(x[None, None], w[None, None], (2, 3), "VALID")[0, 0],
                               scipy.signal.correlate(x, w, "valid")[::2, ::3], atol=1e-12)
    wd = np.zeros((5, 5))
    wd[::2, ::4] = w
    np.testing.assert_allclose(_conv_nd(x[None, None], w[None, None], (1, 1), "VALID", rhs_dilation=(2, 4))[0, 0],
                               scipy.signal.correlate(x, wd, "valid"), atol=1e-12)
    xd = np.zeros((17, 22))
    xd[::2, ::3] = x
    np.testing.assert_allclose(_conv_nd(x[None, None], w[None, None], (1, 1), [(-1, 2), (0, 0)], (2, 3))[0, 0],
                               scipy.signal.correlate(np.pad(xd, [(0, 2), (0, 0)])[1:], w, "valid"), atol=1e-12)
    assert _same_pads([200, 198], [3, 3], [2, 2]) == [(0, 1), (0, 1)] and _same_pads([7], [3], [1]) == [(1, 1)]
    # two groups are two independent convolutions; NHWC/HWIO is NCHW/OIHW transposed
    x4, w4 = rng.randn(2, 4, 5, 6), rng.randn(6, 2, 3, 2)
    both = _conv_nd(x4, w4, (1, 1), "SAME", groups=2)
    np.testing.assert_allclose(both[:, :3], _conv_nd(x4[:, :2], w4[:3], (1, 1), "SAME"), atol=1e-12)
    np.testing.assert_allclose(both[:, 3:], _conv_nd(x4[:, 2:], w4[3:], (1, 1), "SAME"), atol=1e-12)
    nhwc = _conv_nd(x4.transpose(0, 2, 3, 1), w4.transpose(2, 3, 1, 0), (1, 1), "SAME", groups=2,
                    specs=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(nhwc, both.transpose(0, 2, 3, 1), atol=1e-12)


# ========================================== the notebook's cells ==========================================


@pytest.fixture(scope="module")
def page():
    return load("convolutions")


def _run(fn, *args):
    """(what the cell returns, what it printed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(*args)
    return result, out.getvalue()


@pytest.fixture(scope="module")
def cells(page):
    """The 2-D cells run once on the notebook's kernel and image: {name: (result, printed)}."""
    kernel, kernel_printed = _run(page.edge_kernel)
    img, img_printed = _run(page.synthetic_image)
    dn, dn_printed = _run(page.dimension_numbers, img, kernel)
    runs = {"edge_kernel": (kernel, kernel_printed), "synthetic_image": (img, img_printed),
            "dimension_numbers": (dn, dn_printed)}
    for name in ("lax_conv", "lax_conv_with_general_padding"):
        runs[name] = _run(getattr(page, name), img, kernel)
    for name in ("same_padding", "valid_padding", "same_padding_stride_2", "rhs_dilation", "lhs_dilation",
                 "transposed_conv"):
        runs[name] = _run(getattr(page, name), img, kernel, dn)
    return runs


EDGE = np.array([[1, 1, 0], [1, 0, -1], [0, -1, -1]], np.float32)


def test_smoothing_1d(page):
    x, y, y_smooth = page.smoothing_1d()
    _close(x, np.linspace(0, 10, 500), atol=1e-6)
    noise = (np.asarray(y, np.float64) - np.sin(np.asarray(x, np.float64))) / 0.2
    assert y.shape == (500,) and y.dtype == np.float32
    assert abs(noise.mean()) < 0.15 and 0.9 < noise.std() < 1.1  # 500 standard normal draws
    _close(y_smooth, np.convolve(np.asarray(y, np.float64), np.ones(10) / 10, mode="same"), atol=1e-6)


def test_jnp_convolve_and_correlate_match_numpy():
    """jnp.convolve and jnp.correlate (the page's first bullet) in every mode, an even-length kernel (where 'same'
    must pick NumPy's centre), the longer array second (NumPy swaps), and complex inputs (correlate conjugates)."""
    rng = np.random.RandomState(1)
    a, v = rng.randn(13).astype(np.float32), rng.randn(4).astype(np.float32)
    ca = (rng.randn(7) + 1j * rng.randn(7)).astype(np.complex64)
    cv = (rng.randn(3) + 1j * rng.randn(3)).astype(np.complex64)
    modes = ("full", "same", "valid")

    @kiln.jit
    def all_modes(a, v, ca, cv):
        return ([jnp.convolve(a, v, mode=m) for m in modes] + [jnp.convolve(v, a, mode=m) for m in modes]
                + [jnp.correlate(a, v, mode=m) for m in modes] + [jnp.correlate(v, a, mode="full")]
                + [jnp.correlate(ca, cv, mode=m) for m in modes] + [jnp.convolve(ca, cv, mode="same")])

    got = all_modes(a, v, ca, cv)
    a64, v64, ca128, cv128 = (t.astype(np.complex128 if t.dtype.kind == "c" else np.float64) for t in (a, v, ca, cv))
    want = ([np.convolve(a64, v64, m) for m in modes] + [np.convolve(v64, a64, m) for m in modes]
            + [np.correlate(a64, v64, m) for m in modes] + [np.correlate(v64, a64, "full")]
            + [np.correlate(ca128, cv128, m) for m in modes] + [np.convolve(ca128, cv128, "same")])
    for g, w in zip(got, want, strict=True):
        _close(g, w, dtype=np.complex64 if w.dtype.kind == "c" else np.float32)


def test_smoothing_nd(page):
    """The de-noising cell on a small RGB picture (the notebook's is scipy.datasets.face(), 768x1024x3)."""
    face = np.random.RandomState(2).randint(0, 256, (23, 32, 3)).astype(np.uint8)
    image, noisy, window, smooth = page.smoothing_nd(face)
    _close(image, face.mean(-1), atol=1e-4)
    noise = (np.asarray(noisy, np.float64) - np.asarray(image, np.float64)) / 50
    assert abs(noise.mean()) < 0.15 and 0.9 < noise.std() < 1.1  # 736 standard normal draws
    pdf = scipy.stats.norm.pdf(np.linspace(-3, 3, 7))
    _close(window, pdf[None, :] * pdf[:, None], atol=1e-7)
    _close(smooth, scipy.signal.convolve(np.asarray(noisy, np.float64), np.outer(pdf, pdf), mode="same"),
           atol=1e-3)


def test_scipy_signal_functions_match_scipy():
    """jax.scipy.signal's convolve/correlate (N-d) and convolve2d/correlate2d (the page's other bullets) in every
    mode, odd and even kernel sizes, a 3-D case and a complex correlate."""
    rng = np.random.RandomState(3)
    a, k = rng.randn(9, 8).astype(np.float32), rng.randn(4, 3).astype(np.float32)
    a3, k3 = rng.randn(5, 6, 4).astype(np.float32), rng.randn(2, 3, 3).astype(np.float32)
    ca = (rng.randn(6, 5) + 1j * rng.randn(6, 5)).astype(np.complex64)
    ck = (rng.randn(2, 3) + 1j * rng.randn(2, 3)).astype(np.complex64)
    modes = ("full", "same", "valid")
    sig = jsp.signal

    @kiln.jit
    def all_modes(a, k, a3, k3, ca, ck):
        return ([sig.convolve(a, k, mode=m) for m in modes] + [sig.correlate(a, k, mode=m) for m in modes]
                + [sig.convolve2d(a, k, mode=m) for m in modes] + [sig.correlate2d(a, k, mode=m) for m in modes]
                + [sig.convolve(a3, k3, mode=m) for m in modes] + [sig.correlate(ca, ck, mode="full")])

    got = all_modes(a, k, a3, k3, ca, ck)
    a, k, a3, k3 = (t.astype(np.float64) for t in (a, k, a3, k3))
    s = scipy.signal
    want = ([s.convolve(a, k, m) for m in modes] + [s.correlate(a, k, m) for m in modes]
            + [s.convolve2d(a, k, m) for m in modes] + [s.correlate2d(a, k, m) for m in modes]
            + [s.convolve(a3, k3, m) for m in modes] + [s.correlate(ca.astype(np.complex128), ck, "full")])
    for g, w in zip(got, want, strict=True):
        _close(g, w, dtype=np.complex64 if w.dtype.kind == "c" else np.float32)


def test_edge_kernel_and_synthetic_image(cells):
    kernel, printed = cells["edge_kernel"]
    assert printed == "Edge Conv kernel:\n"
    kernel = np.asarray(kernel)
    assert kernel.shape == (3, 3, 3, 3) and kernel.dtype == np.float32
    np.testing.assert_array_equal(kernel, np.broadcast_to(EDGE[:, :, None, None], (3, 3, 3, 3)))
    img, printed = cells["synthetic_image"]
    assert printed == "Original Image:\n"
    want = np.zeros((1, 200, 198, 3), np.float32)
    for k in range(3):  # a 10x10 square in channel k at (30 + 60k, 20 + 60k)
        want[0, 30 + 60 * k:40 + 60 * k, 20 + 60 * k:30 + 60 * k, k] = 1
    _close(img, want, rtol=0, atol=0)


# The lines the notebook's saved outputs show, cell by cell.
PRINTED = {
    "lax_conv": "out shape:  (1, 3, 200, 198)\nFirst output channel:\n",
    "lax_conv_with_general_padding": "out shape:  (1, 3, 202, 200)\nFirst output channel:\n",
    "dimension_numbers": "ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))\n",
    "same_padding": "out shape:  (1, 200, 198, 3)\nFirst output channel:\n",
    "valid_padding": "out shape:  (1, 198, 196, 3) DIFFERENT from above!\nFirst output channel:\n",
    "same_padding_stride_2": "out shape:  (1, 100, 99, 3)  <-- half the size of above\nFirst output channel:\n",
    "rhs_dilation": "out shape:  (1, 176, 174, 3)\nFirst output channel:\n",
    "lhs_dilation": "out shape:  (1, 397, 393, 3) <-- larger than original!\nFirst output channel:\n",
    "transposed_conv": "out shape:  (1, 400, 396, 3) <-- transposed_conv\nFirst output channel:\n",
}


@pytest.mark.parametrize("name", PRINTED)
def test_printed_lines_are_the_notebooks(cells, name):
    assert cells[name][1] == PRINTED[name]


def test_dimension_numbers(cells):
    dn = cells["dimension_numbers"][0]
    assert isinstance(dn, lax.ConvDimensionNumbers) and type(dn).__name__ == "ConvDimensionNumbers"
    assert dn == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert (dn.lhs_spec, dn.rhs_spec, dn.out_spec) == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))


# each cell's (strides, padding, lhs dilation, rhs dilation) for conv_general_dilated with NHWC/HWIO/NHWC
NHWC_CELLS = {
    "same_padding": ((1, 1), "SAME", None, None),
    "valid_padding": ((1, 1), "VALID", None, None),
    "same_padding_stride_2": ((2, 2), "SAME", None, None),
    "rhs_dilation": ((1, 1), "VALID", None, (12, 12)),
    "lhs_dilation": ((1, 1), [(0, 0), (0, 0)], (2, 2), None),
}


@pytest.mark.parametrize("name", NHWC_CELLS)
def test_conv_general_dilated_cells_match_oracle(cells, name):
    img, kernel = cells["synthetic_image"][0], cells["edge_kernel"][0]
    (out, first_channel), _ = cells[name]
    strides, padding, lhs_dil, rhs_dil = NHWC_CELLS[name]
    want = _conv_nd(img, kernel, strides, padding, lhs_dil, rhs_dil, specs=("NHWC", "HWIO", "NHWC"))
    _close(out, want, rtol=0, atol=0)  # small integers: exact
    np.testing.assert_array_equal(first_channel, want[0, :, :, 0])


def test_nchw_cells_match_oracle(cells):
    """lax.conv and lax.conv_with_general_padding: NCHW images, OIHW kernels, a 2-pixel border for the second."""
    img, kernel = cells["synthetic_image"][0], cells["edge_kernel"][0]
    x, w = np.asarray(img).transpose(0, 3, 1, 2), np.asarray(kernel).transpose(3, 2, 0, 1)
    for name, padding in (("lax_conv", "SAME"), ("lax_conv_with_general_padding", [(2, 2), (2, 2)])):
        (out, first_channel), _ = cells[name]
        want = _conv_nd(x, w, (1, 1), padding)
        _close(out, want, rtol=0, atol=0)
        np.testing.assert_array_equal(first_channel, want[0, 0])
    # 'SAME' with a 3x3 kernel is a one-pixel border: the general-padding output without its outer ring
    np.testing.assert_array_equal(cells["lax_conv"][0][1], cells["lax_conv_with_general_padding"][0][1][1:-1, 1:-1])
    # each square's edges respond to the diagonal kernel, its inside and the background do not
    first = cells["lax_conv"][0][1]
    assert first[35, 25] == 0 and first[100, 100] == 0 and first[30, 20] == -3 and first[39, 29] == 3


def test_transposed_conv_is_tensorflows_conv2d_transpose(cells):
    """The notebook says the cell equals tf.nn.conv2d_transpose(img, kernel, (N, 2H, 2W, C), (1, 2, 2, 1))."""
    img, kernel = cells["synthetic_image"][0], cells["edge_kernel"][0]
    (out, first_channel), _ = cells["transposed_conv"]
    want = _conv2d_transpose(img, kernel)
    _close(out, want, rtol=0, atol=0)
    np.testing.assert_array_equal(first_channel, want[0, :, :, 0])
    # and it is the adjoint of the stride-2 SAME convolution with the kernel's I and O swapped
    y = np.random.RandomState(4).randn(1, 400, 396, 3)
    forward = _conv_nd(y, np.asarray(kernel).transpose(0, 1, 3, 2), (2, 2), "SAME", specs=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(np.sum(forward * np.asarray(img)), np.sum(y * np.asarray(out, np.float64)),
                               rtol=1e-10)


def test_conv_1d(page):
    (data, kernel, dn, out), printed = _run(page.conv_1d)
    assert printed == ("in shapes: (1, 200, 2) (3, 2, 2)\n"
                       "ConvDimensionNumbers(lhs_spec=(0, 2, 1), rhs_spec=(2, 1, 0), out_spec=(0, 2, 1))\n"
                       "out shape:  (1, 200, 2)\n")
    assert dn == ((0, 2, 1), (2, 1, 0), (0, 2, 1))
    want_kernel = np.array([[[1, 0, -1], [-1, 0, 1]], [[1, 1, 1], [-1, -1, -1]]], np.float32).transpose(2, 1, 0)
    _close(kernel, want_kernel, rtol=0, atol=0)
    assert type(data) is np.ndarray and data.dtype == np.float32  # np.zeros(..., dtype=jnp.float32)
    assert data.sum() == 4 * 30 and data[0, 30:60, 0].all() and data[0, 65:95, 0].all() and data[0, 125:155, 1].all()
    _close(out, _conv_nd(data, want_kernel, (1,), "SAME", specs=("NWC", "WIO", "NWC")), rtol=0, atol=0)


def test_conv_3d(page):
    ((x, y, z), data, kernel, dn, out), printed = _run(page.conv_3d)
    assert printed == (
        "in shapes: (1, 30, 30, 30, 1) (3, 3, 3, 1, 1)\n"
        "ConvDimensionNumbers(lhs_spec=(0, 4, 1, 2, 3), rhs_spec=(4, 3, 0, 1, 2), out_spec=(0, 4, 1, 2, 3))\n"
        "out shape:  (1, 30, 30, 30, 1)\n")
    assert dn == ((0, 4, 1, 2, 3), (4, 3, 0, 1, 2), (0, 4, 1, 2, 3))
    g = np.linspace(0, 1, 30)
    want = np.sin(2 * np.pi * g)[:, None, None] * np.cos(2 * np.pi * g)[None, :, None] * np.cos(2 * np.pi * g)
    _close(data, want[None, :, :, :, None], atol=1e-6)
    k = np.zeros((3, 3, 3))
    k[1] = -np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    k[0, 1, 1] = k[2, 1, 1] = 1
    _close(kernel, k[..., None, None], rtol=0, atol=0)
    _close(out, _conv_nd(data, kernel, (1, 1, 1), "SAME", specs=("NHWDC", "HWDIO", "NHWDC")), atol=1e-5)


# ==================================== conv_general_dilated on its own ====================================

# (lhs shape, rhs shape, strides, padding, lhs dilation, rhs dilation, specs, feature groups)
GENERAL = {
    "nchw-stride-negative-pad": ((2, 3, 9, 8), (4, 3, 3, 2), (2, 3), [(1, -1), (2, 0)], None, None, None, 1),
    "nhwc-all-dilations": ((1, 7, 6, 2), (2, 3, 2, 3), (1, 2), [(2, 1), (0, 3)], (2, 1), (1, 2),
                           ("NHWC", "HWIO", "NHWC"), 1),
    "groups-same-stride": ((2, 4, 7, 5), (6, 2, 3, 3), (2, 2), "SAME", None, (2, 1), None, 2),
    "depthwise-odd-layouts": ((5, 3, 6, 2), (3, 6, 2, 1), (1, 1), "VALID", None, None, ("HCWN", "WOHI", "CWNH"), 3),
    "1d-lhs-dilation-stride": ((2, 11, 2), (3, 2, 4), (3,), [(3, 2)], (3,), (2,), ("NWC", "WIO", "NCW"), 1),
}


@pytest.mark.parametrize("case", GENERAL)
def test_conv_general_dilated_matches_oracle(case):
    lhs_shape, rhs_shape, strides, padding, lhs_dil, rhs_dil, specs, groups = GENERAL[case]
    rng = np.random.RandomState(sum(map(ord, case)))
    lhs, rhs = rng.randn(*lhs_shape).astype(np.float32), rng.randn(*rhs_shape).astype(np.float32)
    got = lax.conv_general_dilated(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dimension_numbers=specs,
                                   feature_group_count=groups)
    _close(got, _conv_nd(lhs, rhs, strides, padding, lhs_dil, rhs_dil, specs, groups))


def _central_differences(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("conv", [
    # strided, dilated, grouped; and the notebook's transposed convolution (input dilation, custom padding)
    dict(strides=(2, 1), padding="SAME", lhs_dilation=None, rhs_dilation=(1, 2), groups=2),
    dict(strides=(1, 1), padding=[(2, 1), (2, 1)], lhs_dilation=(2, 2), rhs_dilation=None, groups=1),
], ids=["strided-dilated-grouped", "transposed"])
def test_conv_gradients_match_finite_differences(conv):
    rng = np.random.RandomState(5)
    x, w = rng.randn(1, 4, 5, 2), rng.randn(3, 3, 2 // conv["groups"], 4)
    spec = ("NHWC", "HWIO", "NHWC")
    args = (conv["strides"], conv["padding"], conv["lhs_dilation"], conv["rhs_dilation"])
    c = rng.randn(*_conv_nd(x, w, *args, spec, conv["groups"]).shape)

    def loss64(x, w):
        return np.sum(np.sin(_conv_nd(x, w, *args, spec, conv["groups"])) * c)

    def loss(x, w):
        out = lax.conv_general_dilated(x, w, *args, dimension_numbers=spec, feature_group_count=conv["groups"])
        return jnp.sum(jnp.sin(out) * c.astype(np.float32))

    gx, gw = kiln.grad(loss, argnums=(0, 1))(x.astype(np.float32), w.astype(np.float32))
    _close(gx, _central_differences(lambda x: loss64(x, w), x), rtol=1e-4, atol=1e-5)
    _close(gw, _central_differences(lambda w: loss64(x, w), w), rtol=1e-4, atol=1e-5)
