"""``kiln.image``: resampling images (as ``jax.image``): :func:`resize` and :func:`scale_and_translate`.

Each spatial dimension is resampled by a matrix of weights ``W[input index, output index]`` computed
from a kernel (triangle, Keys cubic, Lanczos, box) at the sample positions, normalized so that each
output's weights sum to 1, and contracted with the image (``tensordot``, HIGHEST precision). Pixels are
half-centered: input pixel ``i`` sits at ``i + 0.5``. With ``antialias`` a downsampling kernel is
stretched by the inverse scale, so that it averages over every input pixel it covers.
"""
from __future__ import annotations

import enum
import operator
from typing import Any, Callable, Sequence

import numpy as np

from . import numpy as jnp
from .core.tracing import abstractify
from .driver.eager_jit import eager_jit
from .lax.precision import Precision

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """Resampling methods: ``NEAREST``, ``LINEAR`` (triangle kernel), ``LANCZOS3``, ``LANCZOS5`` (Lanczos
    kernels of radius 3 and 5), ``CUBIC`` (Keys cubic, a = -0.5), ``CUBIC_PYTORCH`` (a = -0.75 with repeated
    edges, as PyTorch, when not antialiasing), ``AREA`` (the average over each output pixel's area)."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> ResizeMethod:
        names = {"nearest": "NEAREST", "linear": "LINEAR", "bilinear": "LINEAR", "trilinear": "LINEAR",
                 "triangle": "LINEAR", "lanczos3": "LANCZOS3", "lanczos5": "LANCZOS5", "cubic": "CUBIC",
                 "bicubic": "CUBIC", "tricubic": "CUBIC", "cubic-pytorch": "CUBIC_PYTORCH",
                 "bicubic-pytorch": "CUBIC_PYTORCH", "area": "AREA"}
        if s not in names:
            raise ValueError(f"kiln.image: unknown resize method {s!r}; use one of {', '.join(repr(n) for n in names)} "
                             "or a kiln.image.ResizeMethod")
        return ResizeMethod[names[s]]


def _method(method: Any) -> ResizeMethod:
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    if isinstance(method, ResizeMethod):
        return method
    raise TypeError(f"kiln.image: method must be a string or a kiln.image.ResizeMethod, got "
                    f"{type(method).__name__} {method!r:.40}")


# -- kernels: x is the (non-negative) distance from the sample position, in input pixels -------------------
def _triangle(x):
    return jnp.maximum(0, 1 - jnp.abs(x))


def _keys_cubic(x, a: float = -0.5):
    near = (((a + 2) * x - (a + 3)) * x) * x + 1
    far = (((a * x) - 5 * a) * x + 8 * a) * x - 4 * a
    return jnp.where(x >= 2, 0.0, jnp.where(x >= 1, far, near))


def _lanczos(radius: float):
    def kernel(x):
        # radius sin(pi x) sin(pi x / radius) / (pi x)^2, and 1 near 0 (its limit).
        num = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
        safe = jnp.where(x != 0, np.pi ** 2 * x * x, 1)
        out = jnp.where(x > 1e-3, num / safe, 1)
        return jnp.where(x > radius, 0.0, out)
    return kernel


_AREA = object()
_KERNELS: dict[ResizeMethod, tuple[int, Any]] = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.0)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, lambda x: _keys_cubic(x, -0.75)),
    ResizeMethod.AREA: (1, _AREA),
}

_TINY = 1000.0 * float(np.finfo(np.float32).eps)  # a weight sum below this is taken as 0


def _normalize(w):
    total = jnp.sum(w, axis=0, keepdims=True)
    return jnp.where(jnp.abs(total) > _TINY, w / jnp.where(total != 0, total, 1), 0)


def _weights(m: int, n: int, scale, translation, kernel: Callable | object, antialias: bool,
             edge_padding: bool, radius: int, dtype) -> Any:
    """The (m, n) weight matrix resampling an axis of m input pixels into n outputs."""
    inv = 1.0 / scale
    sample = (jnp.arange(n, dtype=dtype) + 0.5) * inv - translation * inv - 0.5  # in input pixel units
    if kernel is _AREA:  # overlap of output pixel [L_i, R_i) with input pixel [j, j + 1)
        lo = jnp.arange(n, dtype=dtype) * inv - translation * inv
        hi = lo + inv
        j = jnp.arange(m, dtype=dtype)
        w = jnp.maximum(0.0, jnp.minimum(hi[None, :], j[:, None] + 1) - jnp.maximum(lo[None, :], j[:, None]))
    else:
        k = radius if edge_padding else 0  # repeated edge pixels on each side
        positions = jnp.arange(-k, m + k, dtype=dtype)
        stretch = jnp.maximum(inv, 1.0) if antialias else 1.0
        w = kernel(jnp.abs(sample[None, :] - positions[:, None]) / stretch)
        if edge_padding:  # the weights of the repeated pixels go to the edge pixels
            rows = np.clip(np.arange(-k, m + k), 0, m - 1)
            w = jnp.zeros((m, n), dtype).at[rows].add(w)
            return _normalize(w)
    w = _normalize(w)
    if kernel is _AREA:
        return w
    inside = (sample >= -0.5) & (sample <= m - 0.5)  # samples off the image get nothing
    return jnp.where(inside[None, :], w, 0)


def _check_shape(where: str, shape: Any, ndim: int, in_shape: tuple) -> tuple[int, ...]:
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"kiln.image.{where}: shape must be a sequence of ints, got {shape!r}") from None
    if len(shape) != ndim:
        raise ValueError(f"kiln.image.{where}: shape must have one entry per dimension of the image: got {shape} "
                         f"for an image of shape {in_shape}")
    if any(d < 0 for d in shape):
        raise ValueError(f"kiln.image.{where}: shape must not be negative, got {shape}")
    return shape


def _static_ints(value: Any) -> Any:
    """A shape or a list of dimensions as a tuple of Python ints (a static option the compiled call hashes);
    as it is when it is no sequence of ints (the implementation then explains it)."""
    try:
        return tuple(operator.index(d) for d in value)
    except TypeError:
        return value


def _inexact(x: Any) -> Any:
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.result_type(x.dtype, float))
    return x


def _resample(image, shape, dims, scales, translations, method: ResizeMethod, antialias: bool, precision):
    if method is ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    edge_padding = method is ResizeMethod.CUBIC_PYTORCH
    in_shape = abstractify(image).shape
    out = image
    for d, s, t in zip(dims, scales, translations):
        dtype = jnp.result_type(s, t)  # the weights' own precision (float32 for Python scales without x64)
        w = _weights(in_shape[d], shape[d], s, t, kernel, antialias, edge_padding, radius, dtype)
        w = w.astype(out.dtype)
        out = jnp.moveaxis(jnp.tensordot(out, w, axes=([d], [0]), precision=precision), -1, d)
    return out


def scale_and_translate(image, shape: Sequence[int], spatial_dims: Sequence[int], scale, translation,
                        method: str | ResizeMethod, antialias: bool = True, precision=Precision.HIGHEST):
    """Resample ``image`` into ``shape`` so that input location ``y`` lands at ``y * scale + translation`` in
    each of ``spatial_dims`` (``scale`` and ``translation`` have one entry per spatial dimension; they may be
    traced and differentiated). Pixels are half-centered; output pixels whose source lies outside the
    input are 0. ``method``: any :class:`ResizeMethod` but ``NEAREST``.

    Called eagerly it runs op by op, as JAX's (which does not jit it)."""
    image = _inexact(image)
    ndim = image.ndim
    shape = _check_shape("scale_and_translate", shape, ndim, image.shape)
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        raise ValueError("kiln.image.scale_and_translate: method 'nearest' is not supported here (as in JAX); "
                         "use kiln.image.resize for nearest-neighbour resizing")
    dims = []
    for d in spatial_dims:
        if not -ndim <= d < ndim:
            raise ValueError(f"kiln.image.scale_and_translate: spatial dimension {d} is out of range for an image "
                             f"of {ndim} dimensions")
        dims.append(d % ndim)
    scale, translation = _inexact(scale), _inexact(translation)
    if scale.shape != (len(dims),) or translation.shape != (len(dims),):
        raise ValueError(f"kiln.image.scale_and_translate: scale and translation need one entry per spatial "
                         f"dimension ({len(dims)}), got shapes {scale.shape} and {translation.shape}")
    for d in range(ndim):
        if d not in dims and shape[d] != image.shape[d]:
            raise ValueError(f"kiln.image.scale_and_translate: dimension {d} is not spatial, so its size must stay "
                             f"{image.shape[d]}, got {shape[d]}")
    if not dims:
        return image
    return _resample(image, shape, dims, [scale[i] for i in range(len(dims))],
                     [translation[i] for i in range(len(dims))], method, antialias, precision)


def _resize_nearest(image, shape):
    out = image
    for d, (m, n) in enumerate(zip(image.shape, shape)):
        if m == n:
            continue
        # Output pixel i takes input pixel floor((i + 0.5) m / n), computed in float32 as JAX does.
        idx = np.floor(((np.arange(n, dtype=np.float32) + np.float32(0.5)) * np.float32(m) / np.float32(n))
                       .astype(np.float32)).astype(np.int32)
        out = jnp.take(out, idx, axis=d)
    return out


def resize(image, shape: Sequence[int], method: str | ResizeMethod, antialias: bool = True,
           precision=Precision.HIGHEST):
    """Resize ``image`` to ``shape`` (every dimension, batch and channel ones included: leave those
    unchanged). ``method``: ``'nearest'``, ``'linear'``, ``'cubic'``, ``'lanczos3'``, ``'lanczos5'``,
    ``'cubic-pytorch'``, ``'area'`` or a :class:`ResizeMethod`. ``antialias`` filters when downsampling
    (no effect when upsampling). ``nearest`` keeps the dtype; the other methods give a floating result.

    Called eagerly, one compiled program per signature (as JAX's jitted resize)."""
    return _resize(image, _static_ints(shape), method, antialias, precision)


@eager_jit("shape", "method", "antialias", "precision", where="kiln.image.resize")
def _resize(image, shape, method, antialias, precision):
    image = jnp.asarray(image)
    shape = _check_shape("resize", shape, image.ndim, image.shape)
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    image = _inexact(image)
    dims = [d for d in range(image.ndim) if image.shape[d] != shape[d]]
    scales = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
    return _resample(image, shape, dims, scales, [0.0] * len(dims), method, antialias, precision)
