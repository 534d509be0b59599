"""kiln.image.resize and scale_and_translate against NumPy oracles: np.interp for linear upsampling, block
means for area downsampling, NumPy indexing for nearest, a direct loop over the triangle filter for
antialiased downsampling, and exact properties (constants stay constant, shifts by whole pixels, the
resize/scale_and_translate agreement); plus grad, vmap and jit."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.numpy as knp
from kiln import image
from kiln.test_util import check_grads

RNG = np.random.RandomState(0)
METHODS = ["linear", "cubic", "lanczos3", "lanczos5", "cubic-pytorch", "area"]


def _interp_axis(x, n, axis):
    m = x.shape[axis]
    pos = (np.arange(n) + 0.5) * m / n - 0.5
    return np.apply_along_axis(lambda v: np.interp(pos, np.arange(m), v), axis, x)


def _triangle_downsample(v, n):
    """Antialiased linear resampling of a 1-D signal, straight from the definition."""
    m = len(v)
    scale = n / m
    out = np.zeros(n)
    for i in range(n):
        center = (i + 0.5) / scale - 0.5
        w = np.maximum(0, 1 - np.abs(np.arange(m) - center) * scale)  # a triangle stretched by 1/scale
        out[i] = (w * v).sum() / w.sum()
    return out


def test_linear_upsampling_is_interpolation():
    x = RNG.randn(4, 5).astype(np.float32)
    expected = _interp_axis(_interp_axis(x, 7, 0), 9, 1)
    for antialias in (True, False):
        np.testing.assert_allclose(image.resize(x, (7, 9), "bilinear", antialias=antialias), expected, rtol=1e-5,
                                   atol=1e-6)
    np.testing.assert_allclose(kiln.jit(lambda x: image.resize(x, (7, 9), image.ResizeMethod.LINEAR))(x), expected,
                               rtol=1e-5, atol=1e-6)


def test_downsampling_area_antialias_and_nearest():
    x = RNG.randn(6, 8).astype(np.float32)
    np.testing.assert_allclose(image.resize(x, (3, 4), "area"), x.reshape(3, 2, 4, 2).mean((1, 3)), rtol=1e-5)
    v = RNG.randn(12)
    np.testing.assert_allclose(image.resize(v.astype(np.float32), (5,), "linear"), _triangle_downsample(v, 5),
                               rtol=1e-5, atol=1e-6)
    no_aa = np.asarray(image.resize(v.astype(np.float32), (6,), "linear", antialias=False))
    np.testing.assert_allclose(no_aa, _interp_axis(v, 6, 0), rtol=1e-5, atol=1e-6)  # plain interpolation
    xi = np.arange(20, dtype=np.int32).reshape(4, 5)
    for shape in [(2, 9), (7, 3)]:
        rows = np.floor((np.arange(shape[0]) + 0.5) * 4 / shape[0]).astype(int)
        cols = np.floor((np.arange(shape[1]) + 0.5) * 5 / shape[1]).astype(int)
        got = image.resize(xi, shape, "nearest")
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, xi[rows][:, cols])


@pytest.mark.parametrize("method", METHODS)
def test_every_method_keeps_constants_and_identities(method):
    c = np.full((3, 4, 2), 2.5, np.float32)
    for shape in [(5, 7, 2), (2, 3, 2)]:
        np.testing.assert_allclose(image.resize(c, shape, method), np.full(shape, 2.5), rtol=1e-5)
    x = RNG.randn(3, 4).astype(np.float32)
    np.testing.assert_allclose(image.resize(x, (3, 4), method), x, rtol=1e-6)
    up = np.asarray(image.resize(np.arange(8, dtype=np.float32), (16,), method))
    assert np.all(np.diff(up[4:-4]) >= 0)  # an increasing ramp stays non-decreasing (area: a box filter)


def test_cubic_reproduces_ramps_inside():
    ramp = np.arange(10, dtype=np.float32) * 0.5
    up = np.asarray(image.resize(ramp, (20,), "cubic"))
    expected = ((np.arange(20) + 0.5) / 2 - 0.5) * 0.5
    np.testing.assert_allclose(up[4:-4], expected[4:-4], rtol=1e-5)


def test_scale_and_translate():
    x = RNG.randn(5, 6).astype(np.float32)
    shifted = image.scale_and_translate(x, (5, 6), (0,), np.array([1.0]), np.array([2.0]), "linear")
    np.testing.assert_allclose(shifted[2:], x[:3], rtol=1e-6)
    np.testing.assert_array_equal(shifted[:2], 0)  # sources outside the input: zeros
    for method in ["linear", "lanczos3", "cubic"]:
        via = image.scale_and_translate(x, (8, 3), (0, 1), np.array([8 / 5, 3 / 6]), np.zeros(2), method)
        np.testing.assert_allclose(via, image.resize(x, (8, 3), method), rtol=1e-5, atol=1e-6)
    assert image.scale_and_translate(x, (5, 6), (), np.zeros(0), np.zeros(0), "linear").shape == (5, 6)


def test_grad_vmap_and_dtypes():
    x = RNG.randn(4, 5).astype(np.float32)
    # resize is linear in the image: its VJP is the transposed resampling
    f = lambda im: image.resize(im, (6, 3), "lanczos3")  # noqa: E731
    jac = np.asarray(kiln.jacrev(f)(x)).reshape(18, 20)
    basis = np.stack([np.asarray(f(e.reshape(4, 5))).ravel() for e in np.eye(20, dtype=np.float32)], axis=1)
    np.testing.assert_allclose(jac, basis, rtol=1e-5, atol=1e-6)
    with kiln.enable_x64():
        check_grads(lambda t: image.scale_and_translate(x.astype(np.float64), (4, 5), (0, 1), np.array([1.2, 0.8]),
                                                        t, "cubic"), (np.array([0.3, -0.2]),), order=1)
    batch = RNG.randn(3, 4, 5).astype(np.float32)
    np.testing.assert_allclose(kiln.vmap(lambda im: image.resize(im, (2, 7), "linear"))(batch),
                               np.stack([np.asarray(image.resize(b, (2, 7), "linear")) for b in batch]), rtol=1e-5)
    assert image.resize(np.ones((2, 2), np.uint8), (3, 3), "linear").dtype == np.float32
    bf = image.resize(knp.ones((2, 2), knp.bfloat16), (4, 4), "cubic")
    assert bf.dtype == knp.bfloat16  # weights rounded to bfloat16, as JAX: about 1
    np.testing.assert_allclose(np.asarray(bf.astype(np.float32)), 1, atol=0.02)


def test_image_errors():
    x = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match=r"kiln.image: unknown resize method 'bicubical'"):
        image.resize(x, (2, 2), "bicubical")
    with pytest.raises(TypeError, match=r"kiln.image: method must be a string or a kiln.image.ResizeMethod"):
        image.resize(x, (2, 2), 3)
    with pytest.raises(ValueError, match=r"kiln.image.resize: shape must have one entry per dimension .*\(2,\)"):
        image.resize(x, (2,), "linear")
    with pytest.raises(ValueError, match=r"kiln.image.resize: shape must not be negative"):
        image.resize(x, (2, -1), "linear")
    with pytest.raises(TypeError, match=r"kiln.image.resize: shape must be a sequence of ints"):
        image.resize(x, (2.5, 2), "linear")
    with pytest.raises(ValueError, match=r"scale_and_translate: method 'nearest' is not supported here"):
        image.scale_and_translate(x, (4, 4), (0,), np.ones(1), np.zeros(1), "nearest")
    with pytest.raises(ValueError, match=r"spatial dimension 2 is out of range for an image of 2 dimensions"):
        image.scale_and_translate(x, (4, 4), (2,), np.ones(1), np.zeros(1), "linear")
    with pytest.raises(ValueError, match=r"dimension 1 is not spatial, so its size must stay 4, got 3"):
        image.scale_and_translate(x, (4, 3), (0,), np.ones(1), np.zeros(1), "linear")
    with pytest.raises(ValueError, match=r"scale and translation need one entry per spatial dimension \(1\)"):
        image.scale_and_translate(x, (4, 4), (0,), np.ones(2), np.zeros(1), "linear")


def _compiles() -> int:
    stats = kiln.runtime.compile_cache.stats()
    return stats["hits"] + stats["misses"]


def test_eager_calls_run_one_compiled_program(primitive_runs):
    """resize called eagerly (a shape given as a list included) runs as one compiled program per signature, as
    JAX's jitted resize, not one execution per primitive."""
    x = RNG.randn(7, 5, 2).astype(np.float32)
    img = knp.asarray(x)
    primitive_runs.clear()
    for method in ["linear", "cubic", "lanczos3", "area", "nearest", image.ResizeMethod.CUBIC_PYTORCH]:
        before = _compiles()
        got = image.resize(img, [11, 3, 2], method, antialias=False)
        assert _compiles() - before <= 1, method  # (none when an earlier test compiled this signature)
        assert primitive_runs == [], method
        want = kiln.jit(lambda a, m=method: image.resize(a, (11, 3, 2), m, antialias=False))(x)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=str(method))
