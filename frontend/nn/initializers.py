"""kiln.nn.initializers: parameter initializers that take PRNG keys (as ``jax.nn.initializers``).

An initializer is a function ``init(key, shape, dtype=float32) -> Array``. ``zeros`` and ``ones``
are initializers themselves; the others (``normal(stddev)``, ``glorot_uniform()``, ...) are
factories returning one. Same keys give JAX's values: the draws go through ``kiln.random`` and the
scaling follows JAX's arithmetic.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from .. import numpy as knp
from .. import random
from ..core import dtypes
from ..lax.sharding import takes_out_sharding
from ..random.keys import canonical_shape

__all__ = [
    "Initializer", "zeros", "ones", "constant", "uniform", "normal", "truncated_normal", "variance_scaling",
    "glorot_uniform", "glorot_normal", "xavier_uniform", "xavier_normal", "lecun_uniform", "lecun_normal",
    "he_uniform", "he_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal",
]

Initializer = Callable[..., Any]
"""The type of an initializer: ``init(key, shape, dtype=None) -> Array``."""

_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


def _dtype(fname: str, dtype: Any) -> np.dtype:
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
    if not dtypes.is_inexact(dt):
        raise ValueError(f"kiln.nn.initializers.{fname}: dtype must be a float or complex dtype, got {dt.name}")
    return dt


def _shape(fname: str, shape: Any) -> tuple[int, ...]:
    return canonical_shape(fname, shape, prefix="kiln.nn.initializers")


def _out_sharding(factory: str) -> Callable[[Callable], Callable]:
    """An initializer made by ``factory`` takes JAX's ``out_sharding`` (its fourth parameter): the array is laid
    out so (a PartitionSpec over the mesh in context, or a sharding)."""
    def wrap(init: Callable) -> Callable:
        init.__name__ = init.__qualname__ = factory
        return takes_out_sharding(init, positional=True)
    return wrap


@takes_out_sharding(positional=True)
def zeros(key: Any, shape: Sequence[int], dtype: Any = None) -> Any:
    """An array of zeros (the key is ignored)."""
    return knp.zeros(_shape("zeros", shape), _dtype("zeros", dtype))


@takes_out_sharding(positional=True)
def ones(key: Any, shape: Sequence[int], dtype: Any = None) -> Any:
    """An array of ones (the key is ignored)."""
    return knp.ones(_shape("ones", shape), _dtype("ones", dtype))


def constant(value: Any, dtype: Any = None) -> Initializer:
    """An initializer that fills with ``value``."""
    @_out_sharding("constant")
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        return knp.full(_shape("constant", shape), value, dtype=_dtype("constant", dtype))
    return init


def uniform(scale: Any = 1e-2, dtype: Any = None) -> Initializer:
    """An initializer of uniform values in ``[0, scale)``."""
    @_out_sharding("uniform")
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        dt = _dtype("uniform", dtype)
        return knp.multiply(random.uniform(key, shape, dt), knp.asarray(scale, dt))
    return init


def normal(stddev: Any = 1e-2, dtype: Any = None) -> Initializer:
    """An initializer of normal values with mean 0 and standard deviation ``stddev``."""
    @_out_sharding("normal")
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        dt = _dtype("normal", dtype)
        return knp.multiply(random.normal(key, shape, dt), knp.asarray(stddev, dt))
    return init


def truncated_normal(stddev: Any = 1e-2, dtype: Any = None, lower: Any = -2.0, upper: Any = 2.0) -> Initializer:
    """An initializer of normal values truncated to ``(lower, upper)``, then scaled by ``stddev``."""
    @_out_sharding("truncated_normal")
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        dt = _dtype("truncated_normal", dtype)
        return knp.multiply(random.truncated_normal(key, lower, upper, shape, dt), knp.asarray(stddev, dt))
    return init


def _axis_size(shape: tuple[int, ...], axis: int | Sequence[int], what: str) -> int:
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if not -len(shape) <= a < len(shape):
            raise ValueError(f"kiln.nn.initializers: {what} {a} is out of bounds for a weight of shape {shape}")
    return math.prod(shape[a] for a in axes)


def _compute_fans(shape: tuple[int, ...], in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = ()) -> tuple[float, float]:
    """(fan_in, fan_out) of a weight: the in/out sizes times the receptive field (the other axes)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"kiln.nn.initializers: cannot compute the fan-in and fan-out of a {len(shape)}-dimensional "
                         "weight with the default in_axis; the shape must be at least 2-D, or pass in_axis")
    in_size = _axis_size(shape, in_axis, "in_axis")
    out_size = _axis_size(shape, out_axis, "out_axis")
    batch_size = _axis_size(shape, batch_axis, "batch_axis")
    receptive_field_size = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field_size, out_size * receptive_field_size


def _complex_uniform(key: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Uniform on the unit disk, with variance 1."""
    key_r, key_theta = random.split(key)
    real = np.dtype(np.array(0, dtype).real.dtype)
    r = knp.sqrt(knp.multiply(2, random.uniform(key_r, shape, real))).astype(dtype)
    theta = knp.multiply(2 * np.pi, random.uniform(key_theta, shape, real).astype(dtype))
    return knp.multiply(r, knp.exp(knp.multiply(1j, theta)))


def _complex_truncated_normal(key: Any, upper: float, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """A complex normal with its modulus truncated to ``upper``."""
    key_r, key_theta = random.split(key)
    real = np.dtype(np.array(0, dtype).real.dtype)
    t = knp.multiply(knp.subtract(1, knp.exp(knp.asarray(-(upper ** 2), dtype))),
                     random.uniform(key_r, shape, real).astype(dtype))
    r = knp.sqrt(knp.negative(knp.log(knp.subtract(1, t))))
    theta = knp.multiply(2 * np.pi, random.uniform(key_theta, shape, real).astype(dtype))
    return knp.multiply(r, knp.exp(knp.multiply(1j, theta)))


def variance_scaling(scale: Any, mode: str, distribution: str, in_axis: int | Sequence[int] = -2,
                     out_axis: int | Sequence[int] = -1, batch_axis: int | Sequence[int] = (),
                     dtype: Any = None) -> Initializer:
    """An initializer with variance ``scale / n``, ``n`` from the weight's fans.

    Parameters
    ----------
    scale : the variance before division by ``n``.
    mode : ``'fan_in'``, ``'fan_out'``, ``'fan_avg'`` (their mean) or ``'fan_geo_avg'`` (geometric mean).
    distribution : ``'truncated_normal'`` (within two standard deviations, rescaled), ``'normal'`` or
        ``'uniform'``.
    in_axis, out_axis, batch_axis : the weight's input, output and batch axes (the other axes form
        the receptive field).
    """
    if mode not in _MODES:
        raise ValueError(f"kiln.nn.initializers.variance_scaling: invalid mode {mode!r}; expected one of "
                         f"{', '.join(repr(m) for m in _MODES)}")
    if distribution not in _DISTRIBUTIONS:
        raise ValueError(f"kiln.nn.initializers.variance_scaling: invalid distribution {distribution!r}; expected "
                         f"one of {', '.join(repr(d) for d in _DISTRIBUTIONS)}")

    @_out_sharding("variance_scaling")
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        shape = _shape("variance_scaling", shape)
        dt = _dtype("variance_scaling", dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        variance = knp.asarray(scale / denominator, dtype=dt)
        if distribution == "truncated_normal":
            if dtypes.is_float(dt):
                # .8796...: the standard deviation of a standard normal truncated to (-2, 2).
                stddev = knp.divide(knp.sqrt(variance), knp.asarray(.87962566103423978, dt))
                return knp.multiply(random.truncated_normal(key, -2, 2, shape, dt), stddev)
            stddev = knp.divide(knp.sqrt(variance), knp.asarray(.95311164380491208, dt))
            return knp.multiply(_complex_truncated_normal(key, 2, shape, dt), stddev)
        if distribution == "normal":
            return knp.multiply(random.normal(key, shape, dt), knp.sqrt(variance))
        if dtypes.is_float(dt):
            return knp.multiply(random.uniform(key, shape, dt, -1), knp.sqrt(knp.multiply(3, variance)))
        return knp.multiply(_complex_uniform(key, shape, dt), knp.sqrt(variance))
    return init


def glorot_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                   batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """Glorot (Xavier) uniform: ``variance_scaling(1.0, 'fan_avg', 'uniform')``."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """Glorot (Xavier) normal: ``variance_scaling(1.0, 'fan_avg', 'truncated_normal')``."""
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def lecun_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """LeCun uniform: ``variance_scaling(1.0, 'fan_in', 'uniform')``."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                 batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """LeCun normal: ``variance_scaling(1.0, 'fan_in', 'truncated_normal')``."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def he_uniform(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
               batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """He (Kaiming) uniform: ``variance_scaling(2.0, 'fan_in', 'uniform')``."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
              batch_axis: int | Sequence[int] = (), dtype: Any = None) -> Initializer:
    """He (Kaiming) normal: ``variance_scaling(2.0, 'fan_in', 'truncated_normal')``."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """An initializer of (semi-)orthogonal matrices: the weight, reshaped to ``(rows, columns)`` with the
    columns along ``column_axis``, has orthonormal rows or columns, times ``scale``."""
    @_out_sharding("orthogonal")
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        shape = _shape("orthogonal", shape)
        dt = _dtype("orthogonal", dtype)
        if len(shape) < 2:
            raise ValueError(f"kiln.nn.initializers.orthogonal: needs a shape of at least 2 dimensions, got {shape}")
        if not -len(shape) <= column_axis < len(shape):
            raise ValueError(f"kiln.nn.initializers.orthogonal: column_axis {column_axis} is out of bounds for "
                             f"shape {shape}")
        if 0 in shape:
            return knp.zeros(shape, dtype=dt)
        n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
        q = random.orthogonal(key, n_rows, (), dt, n_cols)
        q = knp.reshape(q, tuple(np.delete(np.array(shape), column_axis)) + (shape[column_axis],))
        q = knp.moveaxis(q, -1, column_axis)
        return knp.multiply(knp.asarray(scale, dt), q)
    return init


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """The delta-orthogonal initializer for 3-, 4- and 5-D convolution kernels: an orthogonal
    ``(in, out)`` matrix at the spatial centre, zeros elsewhere."""
    @_out_sharding("delta_orthogonal")
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        shape = _shape("delta_orthogonal", shape)
        dt = _dtype("delta_orthogonal", dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"kiln.nn.initializers.delta_orthogonal: needs a 3-D, 4-D or 5-D shape, got {shape}")
        if shape[-1] < shape[-2]:
            raise ValueError(f"kiln.nn.initializers.delta_orthogonal: fan_in ({shape[-2]}) must be less than or "
                             f"equal to fan_out ({shape[-1]})")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dt)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return knp.zeros(shape, dtype=dt).at[centre].set(ortho)
    return init
