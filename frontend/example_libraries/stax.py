"""``stax``: layers as ``(init_fun, apply_fun)`` pairs, as JAX's ``jax.example_libraries.stax``.

``init_fun(rng, input_shape) -> (output_shape, params)`` and ``apply_fun(params, inputs, **kwargs)``.
Everything runs through kiln's numpy, lax, random and nn functions.
"""
from __future__ import annotations

import functools
import operator
from typing import Any, Callable, Sequence

import numpy as np

from .. import lax, random
from .. import numpy as jnp
from ..nn import elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax, softplus, standardize
from ..nn.initializers import glorot_normal, normal, ones, zeros

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout", "Elu", "Exp",
    "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv", "GeneralConvTranspose", "Identity",
    "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu", "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh",
    "elementwise", "elu", "gelu", "glorot", "glorot_normal", "leaky_relu", "log_softmax", "logsoftmax", "normal",
    "ones", "parallel", "randn", "relu", "selu", "serial", "shape_dependent", "sigmoid", "softmax", "softplus",
    "standardize", "zeros",
]

# The older names stax programs use.
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def _layer_check(where: str, layers: Sequence[Any]) -> None:
    for k, layer in enumerate(layers):
        if not (isinstance(layer, tuple) and len(layer) == 2 and callable(layer[0]) and callable(layer[1])):
            raise TypeError(f"stax.{where}: layer {k} is {type(layer).__name__} {layer!r:.60}, not a layer; a layer "
                            "is an (init_fun, apply_fun) pair such as stax.Dense(10) or stax.Relu (note: Relu, "
                            "Flatten, Identity, FanInSum are layers already, not functions to call)")


def Dense(out_dim: int, W_init: Callable = glorot_normal(), b_init: Callable = normal()) -> tuple:
    """A fully connected layer: ``inputs @ W + b`` over the last axis."""
    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        W = W_init(k1, (input_shape[-1], out_dim))
        b = b_init(k2, (out_dim,))
        return tuple(input_shape[:-1]) + (out_dim,), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b
    return init_fun, apply_fun


def _kernel_shape(where, dimension_numbers, out_chan, filter_shape, input_shape):
    lhs_spec, rhs_spec, _ = dimension_numbers
    if len(filter_shape) != len(rhs_spec) - 2:
        raise ValueError(f"stax.{where}: filter_shape {tuple(filter_shape)} has {len(filter_shape)} spatial sizes "
                         f"but the kernel spec {rhs_spec!r} has {len(rhs_spec) - 2} spatial axes; give one size "
                         "per spatial axis")
    it = iter(filter_shape)
    in_chan = input_shape[lhs_spec.index("C")]
    return [out_chan if c == "O" else in_chan if c == "I" else next(it) for c in rhs_spec]


def GeneralConv(dimension_numbers: tuple, out_chan: int, filter_shape: Sequence[int],
                strides: Sequence[int] | None = None, padding: Any = "VALID", W_init: Callable | None = None,
                b_init: Callable = normal(1e-6)) -> tuple:
    """A convolution layer with layouts ``dimension_numbers = (lhs_spec, rhs_spec, out_spec)``."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape("GeneralConv", dimension_numbers, out_chan, filter_shape, input_shape)
        output_shape = lax.conv_general_shape_tuple(input_shape, kernel_shape, strides, padding, dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                        dimension_numbers=dimension_numbers) + b
    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers: tuple, out_chan: int, filter_shape: Sequence[int],
                         strides: Sequence[int] | None = None, padding: Any = "VALID",
                         W_init: Callable | None = None, b_init: Callable = normal(1e-6)) -> tuple:
    """A transposed-convolution layer (``lax.conv_transpose``) with layouts ``dimension_numbers``."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape("GeneralConvTranspose", dimension_numbers, out_chan, filter_shape,
                                     input_shape)
        output_shape = lax.conv_transpose_shape_tuple(input_shape, kernel_shape, strides, padding,
                                                      dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers) + b
    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis: int | Sequence[int] = (0, 1, 2), epsilon: float = 1e-5, center: bool = True,
              scale: bool = True, beta_init: Callable = zeros, gamma_init: Callable = ones) -> tuple:
    """Batch normalization over ``axis`` (statistics of the batch itself; no running averages)."""
    axis = (axis,) if np.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        expand = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if scale:
            z = gamma[expand] * z
        if center:
            z = z + beta[expand]
        return z
    return init_fun, apply_fun


def elementwise(fun: Callable, **fun_kwargs: Any) -> tuple:
    """A parameterless layer applying ``fun(inputs, **fun_kwargs)``."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)
    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _non_spatial(spec: str | None, ndim: int) -> tuple[int, int]:
    return (0, ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))


def _average_rescaler(window_shape, strides, padding):
    def rescale(outputs, inputs, spec):
        non_spatial = _non_spatial(spec, inputs.ndim)
        spatial_shape = tuple(inputs.shape[i] for i in range(inputs.ndim) if i not in non_spatial)
        counts = lax.reduce_window(jnp.ones(spatial_shape, dtype=inputs.dtype), 0.0, lax.add, window_shape,
                                   strides, padding)
        for i in sorted(non_spatial):
            counts = jnp.expand_dims(counts, i)
        return outputs / counts
    return rescale


def _pooling_layer(name: str, reducer: Callable, init_val: float, rescaler: Callable | None = None) -> Callable:
    def PoolingLayer(window_shape: Sequence[int], strides: Sequence[int] | None = None, padding: Any = "VALID",
                     spec: str | None = None) -> tuple:
        window_shape = tuple(window_shape)
        strides = tuple(strides) if strides else (1,) * len(window_shape)
        if len(strides) != len(window_shape):
            raise ValueError(f"stax.{name}: strides {strides} and window_shape {window_shape} differ in length; "
                             "give one stride per spatial axis")
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        non_spatial = (0, len(window_shape) + 1) if spec is None else (spec.index("N"), spec.index("C"))
        full_window, full_strides = window_shape, strides
        for i in sorted(non_spatial):
            full_window = full_window[:i] + (1,) + full_window[i:]
            full_strides = full_strides[:i] + (1,) + full_strides[i:]

        def init_fun(rng, input_shape):
            if len(input_shape) != len(full_window):
                raise ValueError(f"stax.{name}: input of shape {tuple(input_shape)} has {len(input_shape)} axes but "
                                 f"a {len(window_shape)}-D window needs {len(full_window)} (batch, spatial..., "
                                 "channel, or as spec says)")
            pads = lax.padtype_to_pads(input_shape, full_window, full_strides, padding)
            unit = (1,) * len(full_window)
            return lax.reduce_window_shape_tuple(input_shape, full_window, full_strides, pads, unit, unit), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, full_window, full_strides, padding)
            return rescale(out, inputs, spec) if rescale else out
        return init_fun, apply_fun
    PoolingLayer.__name__ = PoolingLayer.__qualname__ = name
    return PoolingLayer


MaxPool = _pooling_layer("MaxPool", lax.max, -np.inf)
SumPool = _pooling_layer("SumPool", lax.add, 0.0)
AvgPool = _pooling_layer("AvgPool", lax.add, 0.0, _average_rescaler)


def _flatten():
    def init_fun(rng, input_shape):
        return (input_shape[0], functools.reduce(operator.mul, input_shape[1:], 1)), ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.reshape(inputs, (inputs.shape[0], -1))
    return init_fun, apply_fun


Flatten = _flatten()


def _identity():
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return inputs
    return init_fun, apply_fun


Identity = _identity()


def FanOut(num: int) -> tuple:
    """A layer copying its input ``num`` times (a list), to feed ``parallel``."""
    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num
    return init_fun, apply_fun


def _fan_in_sum():
    def init_fun(rng, input_shape):
        return input_shape[0], ()

    def apply_fun(params, inputs, **kwargs):
        return sum(inputs)
    return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis: int = -1) -> tuple:
    """A layer concatenating a list of inputs along ``axis``."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.concatenate(inputs, axis)
    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> tuple:
    """Dropout; ``rate`` is the probability of KEEPING a unit (as in JAX's stax). ``apply_fun`` needs
    ``rng=key``; in ``mode='train'`` kept units are scaled by ``1/rate``, otherwise inputs pass through."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError("stax.Dropout: apply_fun was called without a PRNG key; call it as "
                             "apply_fun(params, inputs, rng=key) with key from kiln.random.key(...) (serial and "
                             "parallel pass rng= on to their layers)")
        if mode == "train":
            keep = random.bernoulli(rng, rate, inputs.shape)
            return jnp.where(keep, inputs / rate, 0)
        return inputs
    return init_fun, apply_fun


def serial(*layers: tuple) -> tuple:
    """Layers one after the other; ``params`` is a list with one entry per layer. An ``rng=`` keyword
    of ``apply_fun`` is split into one key per layer."""
    _layer_check("serial", layers)
    n = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, n) if rng is not None else (None,) * n
        for fun, param, r in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=r, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers: tuple) -> tuple:
    """Layers side by side: the i-th layer takes the i-th of a list of inputs (see ``FanOut``)."""
    _layer_check("parallel", layers)
    n = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        rngs = random.split(rng, n)
        results = [init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)]
        return tuple(r[0] for r in results), tuple(r[1] for r in results)

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, n) if rng is not None else (None,) * n
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
    return init_fun, apply_fun


def shape_dependent(make_layer: Callable) -> tuple:
    """A layer built by ``make_layer(input_shape)`` once the input shape is known."""
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return init_fun, apply_fun


