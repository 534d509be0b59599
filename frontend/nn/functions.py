"""kiln.nn's functions: activations, softmax and friends, one_hot, standardize (as ``jax.nn``).

All are compositions of kiln primitives, written to be numerically stable: ``softplus`` is
``logaddexp(x, 0)``, ``log_sigmoid`` is ``-softplus(-x)``, and ``logsumexp``/``softmax``/
``log_softmax`` subtract the maximum first.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from ..ad.custom import custom_jvp
from ..core import dtypes
from ..core.axes import canonical_axis, sorted_axes
from ..core.errors import BroadcastError, NegativeDimensionError
from ..core.ir import Literal
from ..core.tracing import Tracer, abstractify
from ..driver.array import Array
from ..driver.eager_jit import eager_jit
from ..numpy import _util
from ..numpy import reductions as _red
from ..numpy import ufuncs as _uf

__all__ = [
    "relu", "relu6", "gelu", "silu", "swish", "sigmoid", "softplus", "soft_sign", "log_sigmoid",
    "elu", "selu", "leaky_relu", "celu", "glu", "hard_tanh", "hard_sigmoid", "hard_silu",
    "hard_swish", "mish", "squareplus", "softmax", "log_softmax", "logsumexp", "one_hot", "standardize",
]



def _check(where: str, *args: Any) -> None:
    for i, a in enumerate(args):
        if not isinstance(a, (Array, Tracer, np.ndarray, np.generic, Literal, *dtypes.PY_SCALARS)):
            hint = (" (wrap lists with kiln.numpy.asarray)" if isinstance(a, (list, tuple)) else "")
            raise TypeError(f"{where}: argument {i} of type {type(a).__name__} ({a!r:.40}) is not an "
                            f"array or a scalar{hint}")


def float_args(where: str, *args: Any, allow_complex: bool = False, promoted: bool = False) -> list[Any]:
    """Check, promote (unless ``promoted``), and make integer/bool inputs floating (the default float)."""
    _check(where, *args)
    args = args if promoted else _uf.promote_dtypes(where, *args)
    aval = abstractify(args[0])
    if aval.dtype.kind == "c" and not allow_complex:
        raise TypeError(f"{where}: not supported for complex inputs ({aval.dtype.name})")
    if not dtypes.is_inexact(aval.dtype):
        args = [_util.convert(a, dtypes.default_float_dtype(), aval.weak_type) for a in args]
    return args


def broadcast_args(where: str, *args: Any) -> list[Any]:
    """Check, promote and broadcast (errors name ``where``)."""
    _check(where, *args)
    shapes = [abstractify(a).shape for a in args]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise BroadcastError(f"{where}: operands could not be broadcast together with shapes "
                             + " ".join(str(s) for s in shapes)) from None
    return _uf.promote_and_broadcast(where, *args)


def _numeric_arg(where: str, x: Any) -> Any:
    _check(where, x)
    (x,) = _uf.promote_dtypes(where, x)
    if abstractify(x).dtype == np.bool_:
        raise TypeError(f"{where}: not supported for boolean inputs")
    return x


def _const(x: Any, value: Any) -> Any:
    return _uf.full_like_(x, value)


# ---------------------------------------------------------------------------------------------
# Activations
# ---------------------------------------------------------------------------------------------

@eager_jit()
def relu(x):
    """Rectified linear unit, ``max(x, 0)`` (integers stay integers). Its derivative at 0 is 0, as JAX's."""
    return _relu(_numeric_arg("kiln.nn.relu", x))


@custom_jvp
def _relu(x):
    return lax.max(x, _const(x, 0))


@_relu.defjvp
def _relu_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _relu(x), lax.select(lax.gt(x, _const(x, 0)), t, lax.full_like(t, 0))


@eager_jit()
def relu6(x):
    """``min(max(x, 0), 6)``; its derivative is 0 at 0 and at 6, as JAX's."""
    return _relu6(_numeric_arg("kiln.nn.relu6", x))


@custom_jvp
def _relu6(x):
    return lax.min(lax.max(x, _const(x, 0)), _const(x, 6))


@_relu6.defjvp
def _relu6_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    inside = lax.bitwise_and(lax.gt(x, _const(x, 0)), lax.lt(x, _const(x, 6)))
    return _relu6(x), lax.select(inside, t, lax.full_like(t, 0))


@eager_jit()
def sigmoid(x):
    """Logistic sigmoid, ``1 / (1 + exp(-x))``."""
    (x,) = float_args("kiln.nn.sigmoid", x, allow_complex=True)
    return lax.logistic(x)


@eager_jit()
def silu(x):
    """SiLU (swish), ``x * sigmoid(x)``."""
    (x,) = float_args("kiln.nn.silu", x, allow_complex=True)
    return lax.mul(x, lax.logistic(x))


swish = silu


@eager_jit()
def softplus(x):
    """``log(1 + exp(x))``, computed as ``logaddexp(x, 0)`` (no overflow for large x)."""
    (x,) = float_args("kiln.nn.softplus", x)
    return _uf.logaddexp_e(x, _const(x, 0))


@eager_jit()
def log_sigmoid(x):
    """``log(sigmoid(x))``, computed as ``-softplus(-x)``."""
    (x,) = float_args("kiln.nn.log_sigmoid", x)
    return lax.neg(softplus(lax.neg(x)))


@eager_jit()
def soft_sign(x):
    """``x / (|x| + 1)``."""
    (x,) = float_args("kiln.nn.soft_sign", x)
    return lax.div(x, lax.add(lax.abs(x), _const(x, 1)))


# Not one compiled program eagerly: JAX does not jit gelu, so each operation runs (and rounds) on its own; one
# program rounds a few float32 values differently. JAX's formula op for op, through kiln.numpy as JAX's goes through
# jax.numpy: a Python or NumPy scalar is an argument of its operation (one program each), not an array of its own.
def gelu(x, approximate: bool = True):
    """Gaussian error linear unit: ``x * Phi(x)``, or its tanh approximation (the default)."""
    (x,) = float_args("kiln.nn.gelu", x)
    dtype = abstractify(x).dtype
    if approximate:
        # 0.5 (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3))) x; the cube is an integer_pow, as JAX's x ** 3, whose
        # derivative 3 x**2 rounds unlike the product rule of x * (x * x)
        inner = _uf.multiply(np.sqrt(2 / np.pi).astype(dtype), _uf.add(x, _uf.multiply(0.044715, _uf.power(x, 3))))
        return _uf.multiply(x, _uf.multiply(0.5, _uf.add(1.0, _uf.tanh(inner))))
    # 0.5 x erfc(-x sqrt(1/2)): erfc keeps the relative accuracy for negative x
    return _uf.multiply(_uf.multiply(0.5, x),
                        lax.erfc(_uf.multiply(_uf.negative(x), np.sqrt(0.5).astype(dtype))))


@eager_jit("alpha")
def elu(x, alpha=1.0):
    """Exponential linear unit: ``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    (x,) = float_args("kiln.nn.elu", x)
    neg = lax.mul(_const(x, alpha), lax.expm1(lax.min(x, _const(x, 0))))
    return lax.select(lax.gt(x, _const(x, 0)), x, neg)


@eager_jit()
def selu(x):
    """Scaled ELU with the self-normalising constants."""
    (x,) = float_args("kiln.nn.selu", x)
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return lax.mul(_const(x, scale), elu(x, alpha))


@eager_jit("alpha")
def celu(x, alpha=1.0):
    """Continuously differentiable ELU: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    (x,) = float_args("kiln.nn.celu", x)
    neg = lax.mul(_const(x, alpha), lax.expm1(lax.div(lax.min(x, _const(x, 0)), _const(x, alpha))))
    return lax.select(lax.gt(x, _const(x, 0)), x, neg)


@eager_jit("negative_slope")
def leaky_relu(x, negative_slope=1e-2):
    """``x`` where ``x >= 0``, else ``negative_slope * x``."""
    (x,) = float_args("kiln.nn.leaky_relu", x)
    return lax.select(lax.ge(x, _const(x, 0)), x, lax.mul(x, _const(x, negative_slope)))


@eager_jit()
def hard_tanh(x):
    """``x`` clipped to ``[-1, 1]``."""
    (x,) = float_args("kiln.nn.hard_tanh", x)
    return lax.min(lax.max(x, _const(x, -1)), _const(x, 1))


@eager_jit()
def hard_sigmoid(x):
    """``relu6(x + 3) / 6``."""
    (x,) = float_args("kiln.nn.hard_sigmoid", x)
    return lax.div(relu6(lax.add(x, _const(x, 3))), _const(x, 6))


@eager_jit()
def hard_silu(x):
    """``x * hard_sigmoid(x)``."""
    (x,) = float_args("kiln.nn.hard_silu", x)
    return lax.mul(x, hard_sigmoid(x))


hard_swish = hard_silu


@eager_jit()
def mish(x):
    """``x * tanh(softplus(x))``."""
    (x,) = float_args("kiln.nn.mish", x)
    return lax.mul(x, lax.tanh(softplus(x)))


@eager_jit("b")
def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``, a smooth ReLU."""
    (x,) = float_args("kiln.nn.squareplus", x)
    return lax.mul(lax.add(x, lax.sqrt(lax.add(lax.square(x), _const(x, b)))), _const(x, 0.5))


@eager_jit("axis")
def glu(x, axis: int = -1):
    """Gated linear unit: split ``x`` in two halves along ``axis``, ``a * sigmoid(b)``."""
    (x,) = float_args("kiln.nn.glu", x)
    aval = abstractify(x)
    if aval.ndim == 0:
        raise ValueError("kiln.nn.glu: needs an array with at least one dimension, got a 0-d array")
    ax = canonical_axis("kiln.nn.glu", axis, aval.ndim)
    n = aval.shape[ax]
    if n % 2:
        raise ValueError(f"kiln.nn.glu: the size of axis {axis} must be even to split it in two halves, got {n}")
    start, half = [0] * aval.ndim, list(aval.shape)
    half[ax] = n // 2
    a = lax.slice(x, start, half)
    start[ax] = n // 2
    b = lax.slice(x, start, aval.shape)
    return lax.mul(a, lax.logistic(b))


# ---------------------------------------------------------------------------------------------
# Normalisations over axes
# ---------------------------------------------------------------------------------------------

def _mask(where_name: str, where: Any, shape: tuple[int, ...]) -> Any:
    """``where=`` as a boolean array of ``shape``."""
    _check(where_name, where)
    w = _uf._to_bool(_util.as_operand(where) if not isinstance(where, bool) else np.asarray(where))
    wshape = abstractify(w).shape
    try:
        ok = np.broadcast_shapes(wshape, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{where_name}: where= of shape {wshape} does not broadcast to the input's shape {shape}")
    return _util.broadcast_to_shape(w, shape)


def _keep(x: Any, shape: tuple[int, ...], axes: tuple[int, ...]) -> Any:
    """Broadcast a reduction result over ``axes`` back to ``shape``."""
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return lax.broadcast_in_dim(x, shape, kept)


def narrow_float_arg(args: tuple, kwargs: dict) -> bool:
    """Whether the array argument of softmax or logsumexp is float16 or bfloat16: such calls run op by op
    eagerly. JAX does not jit these two, so each of their operations rounds to that dtype; one compiled program
    would keep XLA's fused chain in float32 and round once, giving other bits."""
    x = args[0] if args else kwargs.get("x", kwargs.get("a"))
    return getattr(x, "dtype", None) in (dtypes.float16, dtypes.bfloat16)


def _max_shift(x: Any, axes: tuple[int, ...], mask: Any) -> Any:
    """The max over ``axes`` (masked entries count as -inf), as a constant for differentiation.

    The shift cancels out of softmax, log_softmax and logsumexp for any value, so its derivative
    contributes nothing but rounding; stopping it (as JAX does) spares the backward pass the max's
    own gradient (a compare, a count of ties and two more reductions).
    """
    masked = x if mask is None else lax.select(mask, x, _const(x, -np.inf))
    return lax.reduce_max(lax.stop_gradient(masked), axes)


@eager_jit("axes")
def _normalized(e, total, axes: tuple[int, ...]):
    """``e / total``, the sum ``total`` over ``axes`` broadcast back. Run op by op, it is one program, as JAX's
    jnp.divide of the kept-dims sum (which XLA computes as ``e * (1 / total)``: float16 then rounds unlike a
    division by the broadcast array)."""
    return lax.div(e, _keep(total, abstractify(e).shape, axes))


@eager_jit("axis", op_by_op=narrow_float_arg)
def softmax(x, axis: Any = -1, where: Any = None):
    """``exp(x) / sum(exp(x))`` over ``axis``, computed as ``exp(x - max(x))`` normalised.

    ``where`` masks entries out of the sum; they are 0 in the result.
    """
    (x,) = float_args("kiln.nn.softmax", x)
    aval = abstractify(x)
    axes = sorted_axes("kiln.nn.softmax", axis, aval.ndim)
    mask = None if where is None else _mask("kiln.nn.softmax", where, aval.shape)
    shift = _keep(_max_shift(x, axes, mask), aval.shape, axes)
    unnormalized = lax.exp(lax.sub(x, shift))
    if mask is not None:
        unnormalized = lax.select(mask, unnormalized, _const(x, 0))
    # kiln.numpy.sum, as JAX's jnp.sum: float16/bfloat16 accumulate in float32 and round once (a sum kept in
    # bfloat16 is percents off); the same in log_softmax and logsumexp.
    out = _normalized(unnormalized, _red.sum(unnormalized, axis=axes), axes)
    # Masked entries are 0, also in a row masked out entirely (where 0 / 0 would be NaN).
    return out if mask is None else lax.select(mask, out, _const(out, 0))


@eager_jit("axis")
def log_softmax(x, axis: Any = -1, where: Any = None):
    """``x - logsumexp(x)`` over ``axis``, computed from ``x - max(x)``.

    ``where`` masks entries out of the sum; they are -inf in the result.
    """
    (x,) = float_args("kiln.nn.log_softmax", x)
    aval = abstractify(x)
    axes = sorted_axes("kiln.nn.log_softmax", axis, aval.ndim)
    mask = None if where is None else _mask("kiln.nn.log_softmax", where, aval.shape)
    shifted = lax.sub(x, _keep(_max_shift(x, axes, mask), aval.shape, axes))
    exp = lax.exp(shifted)
    if mask is not None:
        exp = lax.select(mask, exp, _const(x, 0))
    out = lax.sub(shifted, _keep(lax.log(_red.sum(exp, axis=axes)), aval.shape, axes))
    return out if mask is None else lax.select(mask, out, _const(x, -np.inf))


@eager_jit("axis", "keepdims", "return_sign", op_by_op=narrow_float_arg)
def logsumexp(a, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False,
              where: Any = None):
    """``log(sum(b * exp(a)))`` over ``axis``, without overflow (as ``jax.nn.logsumexp``)."""
    return logsumexp_impl("kiln.nn.logsumexp", a, axis, b, keepdims, return_sign, where)


def logsumexp_impl(fname: str, a, axis, b, keepdims: bool, return_sign: bool, where):
    """logsumexp for kiln.nn and kiln.scipy.special (``fname`` names the caller in errors).

    The maximum over ``axis`` is subtracted before ``exp`` and added back after ``log``; a
    non-finite maximum is replaced by 0, so that all -inf inputs give -inf (not NaN) and +inf
    gives +inf. With ``b``, a negative sum gives NaN unless ``return_sign``.
    """
    if b is None:
        (a,) = float_args(fname, a)
    else:
        a, b = broadcast_args(fname, a, b)
        a, b = float_args(fname, a, b, promoted=True)
        # terms with b == 0 take no part (in the shift either, as JAX's: a large a there must not swamp the rest)
        a = lax.select(lax.ne(b, _const(b, 0)), a, _const(a, -np.inf))
    aval = abstractify(a)
    axes = sorted_axes(fname, axis, aval.ndim)
    mask = None if where is None else _mask(fname, where, aval.shape)
    amax = _max_shift(a, axes, mask)
    amax = lax.select(lax.is_finite(amax), amax, _const(amax, 0))
    e = lax.exp(lax.sub(a, _keep(amax, aval.shape, axes)))
    if b is not None:
        e = lax.mul(b, e)
    if mask is not None:
        e = lax.select(mask, e, _const(e, 0))
    total = _red.sum(e, axis=axes)
    sign = None
    if b is not None or return_sign:
        sign = lax.sign(total)
        total = lax.abs(total)
    out = lax.add(lax.log(total), amax)
    if b is not None and not return_sign:
        out = lax.select(lax.lt(sign, _const(sign, 0)), _const(out, np.nan), out)
    if keepdims:
        kept_shape = tuple(1 if i in axes else d for i, d in enumerate(aval.shape))
        out = lax.reshape(out, kept_shape)
        sign = None if sign is None else lax.reshape(sign, kept_shape)
    if return_sign:
        return out, sign
    return out


# ---------------------------------------------------------------------------------------------
# Encodings
# ---------------------------------------------------------------------------------------------

@eager_jit("num_classes", "dtype", "axis")
def one_hot(x, num_classes: int, *, dtype: Any = None, axis: int = -1):
    """One-hot encoding: ``out[..., i] = (x == i)`` for ``i < num_classes`` (a new axis at ``axis``).

    Values outside ``[0, num_classes)`` (and NaN) give all-zero rows. ``dtype`` defaults to the
    default float dtype.
    """
    _check("kiln.nn.one_hot", x)
    if isinstance(num_classes, Tracer):
        try:
            num_classes = int(num_classes)
        except TypeError as e:
            raise type(e)(f"kiln.nn.one_hot: num_classes must be a static integer (it is the size of the "
                       f"new axis). {e}") from None
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
        raise TypeError(f"kiln.nn.one_hot: num_classes must be a static Python int, got "
                        f"{type(num_classes).__name__} {num_classes!r:.40}")
    if num_classes < 0:
        raise NegativeDimensionError(f"kiln.nn.one_hot: num_classes must be non-negative, got {num_classes}")
    (x,) = _uf.promote_dtypes("kiln.nn.one_hot", x)
    aval = abstractify(x)
    if aval.dtype.kind == "c":
        raise TypeError(f"kiln.nn.one_hot: class indices must be integers (or floats), got {aval.dtype.name}")
    dtype = dtypes.default_float_dtype() if dtype is None else dtypes.check_user_dtype(dtype)
    out_ndim = aval.ndim + 1
    ax = canonical_axis("kiln.nn.one_hot", axis, out_ndim)
    shape = aval.shape[:ax] + (int(num_classes),) + aval.shape[ax:]
    index_dtype = aval.dtype if aval.dtype != np.bool_ else dtypes.default_int_dtype()
    x = _util.convert(x, index_dtype, False)
    lhs = lax.broadcast_in_dim(x, shape, tuple(i for i in range(out_ndim) if i != ax))
    rhs = lax.broadcasted_iota(index_dtype, shape, ax)
    return lax.convert_element_type(lax.eq(lhs, rhs), dtype)


@eager_jit("axis", "epsilon", "algorithm")
def standardize(x, axis: Any = -1, mean: Any = None, variance: Any = None, epsilon: Any = 1e-5,
                where: Any = None, *, algorithm: str = "fast"):
    """``(x - mean) / sqrt(variance + epsilon)``, with mean and variance over ``axis`` unless given.

    ``algorithm`` (as JAX's) computes the variance: ``"fast"`` (the default) as ``mean(x**2) - mean**2``
    clipped at 0, one pass but cancelling for data with a large mean; ``"stable"`` as ``mean((x - mean)**2)``.
    """
    (x,) = float_args("kiln.nn.standardize", x)
    aval = abstractify(x)
    axes = sorted_axes("kiln.nn.standardize", axis, aval.ndim)
    if mean is None:
        mean = _red.mean(x, axis=axes, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = _red.mean(_uf.square(_uf.subtract(x, mean)), axis=axes, keepdims=True, where=where)
        elif algorithm == "fast":
            variance = _uf.subtract(_red.mean(_uf.square(x), axis=axes, keepdims=True, where=where),
                                    _uf.square(mean))
            variance = _uf.maximum(0, variance)  # JAX's clip at 0: the difference may round below it
        else:
            raise ValueError(f"kiln.nn.standardize: unknown algorithm {algorithm!r}; expected 'fast' or 'stable'")
    return _uf.multiply(_uf.subtract(x, mean), _uf.rsqrt_(_uf.add(variance, epsilon)))
