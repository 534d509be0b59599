"""optax's other optimizers and scaling rules (adafactor, sign methods, lars, sm3, fromage, rprop, noisy and
Polyak sgd, DoG) and its block-wise and per-example clipping transforms. Each follows optax's order of
floating-point operations, so that the numbers round as optax's."""
from __future__ import annotations

import functools
import numbers
from typing import Any, Callable, NamedTuple

import numpy as np

from .. import lax, random
from .. import numpy as jnp
from ..ad.custom import custom_vjp
from ..core.tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten
from ..driver.jit import jit
from .combinators import ema
from .more import scale_by_trust_ratio
from .transforms import (
    EmptyState,
    GradientTransformation,
    GradientTransformationExtraArgs,
    _increment,
    _need_params,
    _zeros_count,
    add_decayed_weights,
    chain,
    masked,
    scale,
    scale_by_learning_rate,
    sgd,
    trace,
)

__all__ = [
    # state classes (and optax's aliases of EmptyState)
    "FactoredState", "ScaleBySM3State", "ScaleByRpropState", "AddNoiseState", "AdaptiveGradClipState",
    "NonNegativeParamsState", "ScaleState", "ClipState", "ClipByGlobalNormState", "AddDecayedWeightsState",
    # scaling rules
    "scale_by_factored_rms", "scale_by_sign", "scale_by_sm3", "scale_by_rprop", "add_noise", "scale_by_polyak",
    "scale_by_distance_over_gradients", "scale_by_param_block_norm", "scale_by_param_block_rms", "centralize",
    "normalize_by_update_norm", "keep_params_nonnegative",
    # clipping
    "clip_by_block_rms", "adaptive_grad_clip", "unitwise_clip", "unitwise_norm", "per_example_global_norm_clip",
    "per_example_layer_norm_clip",
    # optimizers
    "adafactor", "sign_sgd", "signum", "lars", "sm3", "fromage", "rprop", "noisy_sgd", "polyak_sgd",
    # gradient scaling in the backward pass
    "scale_gradient",
]

# optax names these stateless transformations' states; all are EmptyState
AdaptiveGradClipState = NonNegativeParamsState = ScaleState = ClipState = EmptyState
ClipByGlobalNormState = AddDecayedWeightsState = EmptyState

def _abs_sq(x):
    return jnp.real(jnp.conj(x) * x)


def _rms(x):
    return jnp.sqrt(jnp.mean(_abs_sq(x)))


def _safe_rms(x, min_rms):
    """``max(rms(x), min_rms)``, written as optax's (``min_rms`` itself where the rms is at most ``min_rms``)."""
    r = _rms(x)
    return jnp.where(r <= min_rms, min_rms, r)


# Jitted (inlined), as jax.numpy.linalg.norm: eagerly too the product and the sum run as one fused program, whose
# sum rounds otherwise than the separate operations'
_norm = jit(lambda x: jnp.sqrt(jnp.sum(_abs_sq(x))), inline=True)


def _safe_norm(x, min_norm):
    """``max(||x||, min_norm)`` (the l2 norm of all of ``x``), written as optax's."""
    n = _norm(x)
    return jnp.where(n <= min_norm, min_norm, n)


def _squared_norm(tree):
    """The squared l2 norm of a whole tree: leaf sums added in the leaves' order (as optax's ``tree.norm``)."""
    total = 0
    for leaf in tree_leaves(tree):
        total = total + jnp.sum(jnp.square(jnp.real(leaf)) + jnp.square(jnp.imag(leaf)))
    return jnp.asarray(total)


def _constant(value, name: str, where: str):
    """Rejects a schedule where optax takes a constant only."""
    if callable(value):
        raise TypeError(f"{where}: {name} must be a number (as optax's, it takes no schedule); got the callable "
                        f"{getattr(value, '__name__', type(value).__name__)}.")


def _reject_complex(params, where: str):
    if any(jnp.iscomplexobj(x) for x in tree_leaves(params)):
        raise ValueError(f"{where}: complex parameters are not supported; split them into real and imaginary "
                         "parts.")


# -- factored second moments (Adafactor) ---------------------------------------------------------------------------

class FactoredState(NamedTuple):
    count: Any
    v_row: Any  # per leaf: row statistics of a factored leaf, else a placeholder of shape (1,)
    v_col: Any  # per leaf: column statistics of a factored leaf, else a placeholder of shape (1,)
    v: Any  # per leaf: the full second moment of a leaf not factored, else a placeholder of shape (1,)


def _decay_rate_pow(i, exponent=0.8):
    """Adafactor's second-moment decay at step ``i``: ``1 - (i + 1)**-exponent``."""
    t = jnp.array(i + 1, jnp.float32)
    return 1.0 - t ** (-exponent)


def _factored_dims(shape, factored: bool, min_dim_size_to_factor: int):
    """The two largest axes ``(second largest, largest)`` when the leaf is factored, else None."""
    if not factored or len(shape) < 2:
        return None
    order = np.argsort(shape)  # (NumPy's, as optax's: ties broken the same way)
    if shape[order[-2]] < min_dim_size_to_factor:
        return None
    return int(order[-2]), int(order[-1])


class _Factored:
    """One leaf's results (not a pytree node, so that tree_map keeps it whole)."""

    def __init__(self, update, v_row, v_col, v):
        self.update, self.v_row, self.v_col, self.v = update, v_row, v_col, v


def _factored_state(count, results):
    return FactoredState(count, *(tree_map(lambda r, f=f: getattr(r, f), results) for f in ("v_row", "v_col", "v")))


def scale_by_factored_rms(factored: bool = True, decay_rate=0.8, step_offset=0, min_dim_size_to_factor: int = 128,
                          epsilon=1e-30, decay_rate_fn: Callable = _decay_rate_pow) -> GradientTransformation:
    """Adafactor's rescaling: ``g / sqrt(v)`` with ``v`` an EMA of ``g**2 + epsilon``, kept as row and column
    means (their outer product over the mean) for leaves whose two largest axes have at least
    ``min_dim_size_to_factor`` elements."""
    def dims(p):
        return _factored_dims(jnp.shape(p), factored, min_dim_size_to_factor)

    def init_one(p):
        p = jnp.asarray(p)
        placeholder = jnp.zeros((1,), p.dtype)
        d = dims(p)
        if d is None:
            return _Factored(placeholder, placeholder, placeholder, jnp.zeros_like(p))
        shape = p.shape
        without = lambda axis: tuple(n for i, n in enumerate(shape) if i != axis)  # noqa: E731
        return _Factored(placeholder, jnp.zeros(without(d[1]), p.dtype), jnp.zeros(without(d[0]), p.dtype),
                         placeholder)

    def update_one(g, v_row, v_col, v, p, step):
        dtype = jnp.asarray(p).dtype
        decay = decay_rate_fn(step - step_offset, decay_rate)
        placeholder = jnp.zeros((1,), dtype)
        g_sq = _abs_sq(g) + epsilon
        d = dims(p)
        if d is None:
            new_v = (decay * v + (1.0 - decay) * g_sq).astype(dtype)
            return _Factored(g * new_v ** -0.5, placeholder, placeholder, new_v)
        d1, d0 = d
        new_row = (decay * v_row + (1.0 - decay) * jnp.mean(g_sq, axis=d0)).astype(dtype)
        new_col = (decay * v_col + (1.0 - decay) * jnp.mean(g_sq, axis=d1)).astype(dtype)
        row_mean = jnp.mean(new_row, axis=d1 - 1 if d1 > d0 else d1, keepdims=True)
        row_factor = (new_row / row_mean) ** -0.5
        col_factor = new_col ** -0.5
        update = g * jnp.expand_dims(row_factor, axis=d0) * jnp.expand_dims(col_factor, axis=d1)
        return _Factored(update, new_row, new_col, placeholder)

    def init(params):
        return _factored_state(_zeros_count(), tree_map(init_one, params))

    def update(updates, state, params=None):
        _need_params(params, "scale_by_factored_rms")
        results = tree_map(lambda g, r, c, v, p: update_one(g, r, c, v, p, state.count), updates, state.v_row,
                           state.v_col, state.v, params)
        return tree_map(lambda r: r.update, results), _factored_state(_increment(state.count), results)
    return GradientTransformation(init, update)


# -- block-wise scaling and clipping -------------------------------------------------------------------------------

def _stateless(fn: Callable, where: str | None = None) -> GradientTransformation:
    """A transformation with EmptyState; ``where`` given: its update needs the params."""
    def update(updates, state, params=None):
        if where is not None:
            _need_params(params, where)
        return fn(updates, params), state
    return GradientTransformation(lambda params: EmptyState(), update)


def scale_by_param_block_norm(min_scale=1e-3) -> GradientTransformation:
    """Multiplies each leaf's update by its parameter's l2 norm (at least ``min_scale``)."""
    return _stateless(lambda u, p: tree_map(lambda g, x: g * _safe_norm(x, min_scale), u, p),
                      "scale_by_param_block_norm")


def scale_by_param_block_rms(min_scale=1e-3) -> GradientTransformation:
    """Multiplies each leaf's update by its parameter's root mean square (at least ``min_scale``)."""
    return _stateless(lambda u, p: tree_map(lambda g, x: g * _safe_rms(x, min_scale), u, p),
                      "scale_by_param_block_rms")


def clip_by_block_rms(threshold) -> GradientTransformation:
    """Scales each leaf's update down to root mean square ``threshold`` where it exceeds it."""
    return _stateless(lambda u, p: tree_map(lambda g: g / jnp.maximum(1.0, _rms(g) / threshold), u))


# -- sign methods -------------------------------------------------------------------------------------------------

def scale_by_sign() -> GradientTransformation:
    """Replaces each update by its sign."""
    return _stateless(lambda u, p: tree_map(jnp.sign, u))


def sign_sgd(learning_rate) -> GradientTransformation:
    """signSGD: the sign of the gradient times ``-learning_rate``."""
    return chain(scale_by_sign(), scale_by_learning_rate(learning_rate))


def signum(learning_rate, beta=0.9, accumulator_dtype=None) -> GradientTransformation:
    """Signum: the sign of an EMA (not debiased: only its sign counts) of the gradients, times
    ``-learning_rate``."""
    return chain(ema(beta, debias=False, accumulator_dtype=accumulator_dtype), scale_by_sign(),
                 scale_by_learning_rate(learning_rate))


# -- adafactor, lars, fromage -------------------------------------------------------------------------------------

def adafactor(learning_rate=None, min_dim_size_to_factor: int = 128, decay_rate=0.8, decay_offset=0,
              multiply_by_parameter_scale: bool = True, clipping_threshold=1.0, momentum=None,
              dtype_momentum=jnp.float32, weight_decay_rate=None, eps=1e-30, factored: bool = True,
              weight_decay_mask=None) -> GradientTransformation:
    """Adafactor: factored second-moment rescaling, block-rms clipping, the learning rate (None: none), the
    parameter's block rms, optional momentum and weight decay, then descent."""
    tx = [scale_by_factored_rms(factored, decay_rate, decay_offset, min_dim_size_to_factor, eps)]
    if clipping_threshold is not None:
        tx.append(clip_by_block_rms(clipping_threshold))
    if learning_rate is not None:
        tx.append(scale_by_learning_rate(learning_rate, flip_sign=False))
    if multiply_by_parameter_scale:
        tx.append(scale_by_param_block_rms())
    if momentum is not None:
        tx.append(ema(momentum, debias=False, accumulator_dtype=dtype_momentum))
    if weight_decay_rate is not None:
        tx.append(add_decayed_weights(weight_decay_rate, weight_decay_mask))
    tx.append(scale(-1))
    return chain(*tx)


def lars(learning_rate, weight_decay=0.0, weight_decay_mask=True, trust_coefficient=0.001, eps=0.0,
         trust_ratio_mask=True, momentum=0.9, nesterov: bool = False) -> GradientTransformation:
    """LARS: weight decay, the layer-wise trust ratio (on the leaves of ``trust_ratio_mask``), the learning rate,
    then momentum."""
    return chain(add_decayed_weights(weight_decay, weight_decay_mask),
                 masked(scale_by_trust_ratio(trust_coefficient=trust_coefficient, eps=eps), trust_ratio_mask),
                 scale_by_learning_rate(learning_rate), trace(momentum, nesterov))


def fromage(learning_rate, min_norm=1e-6) -> GradientTransformation:
    """Fromage: the trust ratio, a step of ``learning_rate / sqrt(1 + learning_rate**2)``, then the parameters
    shrunk by the same factor."""
    if not callable(learning_rate):
        mult = 1 / (1 + learning_rate ** 2) ** 0.5
        return chain(scale_by_trust_ratio(min_norm), scale_by_learning_rate(learning_rate * mult),
                     add_decayed_weights(mult - 1, None))

    def mult_at(count):
        return 1 / (1 + learning_rate(count) ** 2) ** 0.5
    return chain(scale_by_trust_ratio(min_norm), scale_by_learning_rate(lambda c: mult_at(c) * learning_rate(c)),
                 add_decayed_weights(lambda c: mult_at(c) - 1, None))


# -- SM3 ----------------------------------------------------------------------------------------------------------

class ScaleBySM3State(NamedTuple):
    mu: Any  # per leaf: a list of one accumulator per axis
    nu: Any


def _sm3_axes(p, where: str):
    if jnp.ndim(p) == 0:
        raise ValueError(f"{where}: SM3 keeps one accumulator per axis and cannot scale a scalar parameter; give "
                         "scalars shape (1,).")


def _other_axes(i: int, ndim: int):
    return tuple(a for a in range(ndim) if a != i)


def scale_by_sm3(b1=0.9, b2=1.0, eps=1e-8) -> GradientTransformation:
    """SM3's rescaling: ``g / sqrt(accumulator)``, the accumulator ``g**2`` plus the minimum of per-axis maxima of
    the past accumulators (decayed by ``b2`` when it is below 1), then an EMA (``b1``) of the result."""
    coeffs = ((1.0 - b2) if b2 != 1.0 else 1.0, b2)

    def init(params):
        _reject_complex(params, "scale_by_sm3")

        def per_axis(p):
            _sm3_axes(p, "scale_by_sm3")
            return [jnp.zeros((n,), jnp.asarray(p).dtype) for n in jnp.shape(p)]
        return ScaleBySM3State(tree_map(per_axis, params), tree_map(jnp.zeros_like, params))

    def accumulate(g, mu):
        shape = jnp.shape(g)
        if len(mu) != len(shape):
            raise ValueError(f"scale_by_sm3: an update of shape {shape} meets a state made for {len(mu)} axes; "
                             "pass updates shaped as the params given to init.")
        expanded = [jnp.reshape(m, [1] * i + [shape[i]] + [1] * (len(shape) - i - 1)) for i, m in enumerate(mu)]
        floor = expanded[0] if len(shape) < 2 else functools.reduce(jnp.minimum, expanded)
        return coeffs[0] * g ** 2 + coeffs[1] * floor

    def per_axis_max(a):
        if a.ndim < 2:
            return [a]
        return [jnp.max(a, axis=_other_axes(i, a.ndim)) for i in range(a.ndim)]

    def update(updates, state, params=None):
        acc = tree_map(accumulate, updates, state.mu)
        up = tree_map(lambda g, a: g * jnp.where(a > 0, lax.rsqrt(a + eps), 0.0), updates, acc)
        nu = tree_map(lambda u, n: (1 - b1) * u + b1 * n, up, state.nu)
        return nu, ScaleBySM3State(tree_map(per_axis_max, acc), nu)
    return GradientTransformation(init, update)


def sm3(learning_rate, momentum=0.9) -> GradientTransformation:
    """SM3: ``scale_by_sm3(momentum)`` then a step of ``-learning_rate`` (a constant)."""
    _constant(learning_rate, "learning_rate", "sm3")
    return chain(scale_by_sm3(momentum), scale(-learning_rate))


# -- Rprop --------------------------------------------------------------------------------------------------------

class ScaleByRpropState(NamedTuple):
    step_sizes: Any
    prev_updates: Any


def scale_by_rprop(learning_rate, eta_minus=0.5, eta_plus=1.2, min_step_size=1e-6,
                   max_step_size=50.0) -> GradientTransformation:
    """Rprop's rescaling: per element, a step size grown by ``eta_plus`` while the gradient keeps its sign and
    shrunk by ``eta_minus`` when it flips, clipped to ``[min_step_size, max_step_size]``. As optax 0.2.8's, the
    update emitted is the previous step's ``step_size * sign(g)`` (zero at a sign flip, zeros at the first
    step)."""
    _constant(learning_rate, "learning_rate", "scale_by_rprop")

    def init(params):
        return ScaleByRpropState(tree_map(lambda p: jnp.full_like(p, learning_rate), params),
                                 tree_map(jnp.zeros_like, params))

    def new_step(s, step):
        grown = jnp.clip(step * jnp.where(s > 0, eta_plus, eta_minus), min=min_step_size, max=max_step_size)
        return jnp.where(s == 0, step, grown)

    def update(updates, state, params=None):
        sign = tree_map(lambda g, prev: g * prev, updates, state.prev_updates)
        steps = tree_map(new_step, sign, state.step_sizes)
        prev = tree_map(lambda s, g, st: jnp.where(s < 0, jnp.zeros_like(g), st * jnp.sign(g)), sign, updates, steps)
        # optax 0.2.8 emits the previous step's update (zero at a sign flip): one step behind, zeros first
        out = tree_map(lambda s, old: jnp.where(s < 0, jnp.zeros_like(old), old), sign, state.prev_updates)
        return out, ScaleByRpropState(steps, prev)
    return GradientTransformation(init, update)


def rprop(learning_rate, eta_minus=0.5, eta_plus=1.2, min_step_size=1e-6,
          max_step_size=50.0) -> GradientTransformation:
    """Rprop: ``scale_by_rprop`` then descent."""
    return chain(scale_by_rprop(learning_rate, eta_minus, eta_plus, min_step_size, max_step_size), scale(-1.0))


# -- gradient noise -----------------------------------------------------------------------------------------------

class AddNoiseState(NamedTuple):
    count: Any
    rng_key: Any


def _as_key(key, where: str):
    """A typed key from a typed key, raw key data (uint32, shape (2,)) or an int seed."""
    if isinstance(key, random.KeyArray):
        return key
    if isinstance(key, numbers.Integral) and not isinstance(key, bool):
        return random.key(key)
    shape, dtype = jnp.shape(key), getattr(key, "dtype", None)
    if dtype is not None and jnp.dtype(dtype) == jnp.uint32 and shape == (2,):
        return random.wrap_key_data(key)
    raise TypeError(f"{where}: key must be a random key (kiln.random.key(seed)) or an int seed, got "
                    f"{type(key).__name__}{'' if dtype is None else f' of dtype {dtype} and shape {shape}'}.")


def add_noise(eta, gamma, key=None, *, seed=None) -> GradientTransformation:
    """Adds Gaussian noise of variance ``eta / t**gamma`` at step ``t`` (1, 2, ...) to the updates, drawn from
    ``key`` (a typed or raw random key, or an int seed; ``seed=`` is optax's older name for an int seed)."""
    if seed is not None:
        if key is not None:
            raise ValueError("add_noise: give either key or seed (optax's older name for it), not both.")
        key = seed
    if key is None:  # (optax's default, with a warning there that a key will be required)
        key = 0
    key = _as_key(key, "add_noise")

    def update(updates, state, params=None):
        count = _increment(state.count)
        std = jnp.sqrt(eta / count ** gamma)
        next_key, sample_key = random.split(state.rng_key)
        leaves, treedef = tree_flatten(updates)
        keys = random.split(sample_key, len(leaves))
        noise = [random.normal(k, jnp.shape(x), jnp.asarray(x).dtype) for k, x in zip(keys, leaves)]
        std = jnp.asarray(std)
        out = tree_unflatten(treedef, [x + std * n for x, n in zip(leaves, noise)])
        return out, AddNoiseState(count, next_key)
    return GradientTransformation(lambda params: AddNoiseState(_zeros_count(), key), update)


def noisy_sgd(learning_rate, eta=0.01, gamma=0.55, key=None, *, seed=None) -> GradientTransformation:
    """SGD on gradients with annealed Gaussian noise added (``add_noise``)."""
    return chain(add_noise(eta, gamma, key, seed=seed), scale_by_learning_rate(learning_rate))


# -- Polyak step size, distance over gradients ------------------------------------------------------------------------

_POLYAK_VARIANTS = ("sps", "sps+")


def scale_by_polyak(f_min=0.0, max_learning_rate=1.0, eps=0.0, variant: str = "sps") -> GradientTransformationExtraArgs:
    """Scales the updates by Polyak's step size ``min((f(x) - f_min) / (||g||**2 + eps), max_learning_rate)``
    (``f(x) - f_min`` floored at 0 for ``'sps+'``). ``update`` takes the loss, ``update(..., value=loss)``."""
    if variant not in _POLYAK_VARIANTS:
        raise ValueError(f"scale_by_polyak: variant must be 'sps' or 'sps+', got {variant!r}.")

    def update(updates, state, params=None, *, value=None, **extra_args):
        if value is None:
            raise TypeError("scale_by_polyak: update needs the loss at the params: call "
                            "optimizer.update(grads, state, params, value=loss).")
        sq = _squared_norm(updates)
        gap = jnp.array(value - f_min).astype(sq.dtype)
        if variant == "sps+":
            gap = jnp.maximum(gap, 0)  # (optax's nn.relu)
        # no step where the gradient vanishes (optax's threshold: float64's machine epsilon)
        step = jnp.where(sq + eps <= np.finfo(float).eps, jnp.array(0.0),
                         jnp.minimum(gap / (sq + eps), max_learning_rate))
        return tree_map(lambda g: step * g, updates), state
    return GradientTransformationExtraArgs(lambda params: EmptyState(), update)


def polyak_sgd(max_learning_rate=1.0, scaling=1.0, f_min=0.0, eps=0.0,
               variant: str = "sps") -> GradientTransformationExtraArgs:
    """SGD with Polyak's step size: ``sgd(scaling)`` then ``scale_by_polyak``; ``update(..., value=loss)``."""
    return chain(sgd(learning_rate=scaling),
                 scale_by_polyak(max_learning_rate=max_learning_rate, f_min=f_min, eps=eps, variant=variant))


class ScaleByDistanceOverGradientsState(NamedTuple):
    """(optax's class; optax does not export it either)"""
    max_dist: Any
    grad_sum_of_squares: Any
    init_params: Any


def _l2(x, y=0.0):
    return jnp.sqrt(jnp.square(x - y).sum())


def scale_by_distance_over_gradients(reps_rel=1e-6, eps=1e-8, param_dtype=jnp.float32,
                                     global_scale=1.0) -> GradientTransformation:
    """Layer-wise DoG: each leaf's step is ``global_scale * max distance from the initial params /
    sqrt(sum of squared gradients + eps)``."""
    def init(params):
        return ScaleByDistanceOverGradientsState(
            tree_map(lambda x: reps_rel * (1 + _l2(x)), params),  # (a nonzero first distance: a first step)
            tree_map(lambda x: jnp.zeros(1), params),
            tree_map(lambda x: jnp.asarray(x).astype(param_dtype), params) if param_dtype is not None else params)

    def update(updates, state, params=None):
        _need_params(params, "scale_by_distance_over_gradients")
        max_dist = tree_map(lambda d, x, y: jnp.maximum(d, _l2(x, y)), state.max_dist, params, state.init_params)
        g_sos = tree_map(lambda s, g: s + jnp.square(g).sum(), state.grad_sum_of_squares, updates)
        out = tree_map(lambda g, d, s: global_scale * (d / jnp.sqrt(s + eps)) * g, updates, max_dist, g_sos)
        return out, ScaleByDistanceOverGradientsState(max_dist, g_sos, state.init_params)
    return GradientTransformation(init, update)


# -- centring, normalizing, constraining ------------------------------------------------------------------------------

def _subtract_mean(g):
    if jnp.ndim(g) > 1:
        return g - g.mean(tuple(range(1, g.ndim)), keepdims=True)
    return g


def centralize() -> GradientTransformation:
    """Gradient centralization: subtracts from each leaf of rank 2 or more its mean over all axes but the first."""
    return _stateless(lambda u, p: tree_map(_subtract_mean, u))


def normalize_by_update_norm(scale_factor=1.0, eps=1e-6) -> GradientTransformation:
    """Divides the updates by their global norm (plus ``eps``), times ``scale_factor``."""
    def fn(updates, params):
        g_norm = (jnp.sqrt(_squared_norm(updates)) + eps) / scale_factor
        return tree_map(lambda g: g / g_norm, updates)
    return _stateless(fn)


def keep_params_nonnegative() -> GradientTransformation:
    """Changes the updates so that no parameter goes below 0 (the update is ``-param`` where it would); apply
    it last in a chain."""
    return _stateless(lambda u, p: tree_map(lambda x, g: jnp.where((x + g) < 0.0, -x, g), p, u),
                      "keep_params_nonnegative")


# -- adaptive (unit-wise) and per-example clipping ------------------------------------------------------------------

def unitwise_norm(x, axis=None):
    """The l2 norm of each unit of ``x``, broadcast to ``x``'s shape. A unit is a slice along ``axis``; by
    default the whole of a scalar or vector, axis 0 of a rank-2 or rank-3 array (linear layers, multi-head
    ones), axes (0, 1, 2) of rank 4 (HWIO convolutions) and (0, 1, 2, 3) of rank 5 (3D convolutions)."""
    x = jnp.asarray(x)
    if axis is not None:
        sq = jnp.sum(_abs_sq(x), axis=axis, keepdims=True)
    elif jnp.squeeze(x).ndim <= 1:
        sq = jnp.sum(_abs_sq(x), keepdims=True)
    elif x.ndim in (2, 3):
        sq = jnp.sum(_abs_sq(x), axis=0, keepdims=True)
    elif x.ndim in (4, 5):
        sq = jnp.sum(_abs_sq(x), axis=tuple(range(x.ndim - 1)), keepdims=True)
    else:
        raise ValueError(f"unitwise_norm: no default units for an array of shape {x.shape} (ranks 0 to 5 have "
                         "them); pass axis= the axes to take the norm over.")
    return jnp.broadcast_to(jnp.sqrt(sq), x.shape)


def _same_shape(where: str, a, b, names: str):
    if jnp.shape(a) != jnp.shape(b):
        raise ValueError(f"{where}: {names} must have the same shape, got {jnp.shape(a)} and {jnp.shape(b)}.")


def unitwise_clip(g_norm, max_norm, grad, div_eps=1e-6):
    """``grad`` rescaled to norm ``max_norm`` where its (unit-wise) norm ``g_norm`` is not below ``max_norm``; all
    three of one shape (``div_eps`` only guards the division)."""
    clipped = grad * (max_norm / jnp.maximum(g_norm, div_eps))
    _same_shape("unitwise_clip", g_norm, max_norm, "g_norm and max_norm")
    _same_shape("unitwise_clip", g_norm, grad, "g_norm and grad")
    return jnp.where(g_norm < max_norm, grad, clipped)


def adaptive_grad_clip(clipping, eps=1e-3, axis=None) -> GradientTransformation:
    """Adaptive gradient clipping (NFNets): each unit's update is rescaled to at most ``clipping`` times its
    parameter's unit norm (that norm at least ``eps``); units as in :func:`unitwise_norm`."""
    def fn(updates, params):
        g_norm = tree_map(lambda x: unitwise_norm(x, axis=axis), updates)
        p_norm = tree_map(lambda x: unitwise_norm(x, axis=axis), params)
        max_norm = tree_map(lambda n: clipping * jnp.maximum(n, eps), p_norm)
        return tree_map(unitwise_clip, g_norm, max_norm, updates)
    return _stateless(fn, "adaptive_grad_clip")


def _check_batch_dim(grads, where: str):
    leaves = tree_leaves(grads)
    shapes = [jnp.shape(g) for g in leaves]
    if not leaves or not shapes[0] or any(not s or s[0] != shapes[0][0] for s in shapes):
        raise ValueError(f"{where}: expects per-example gradients, every leaf with the batch on axis 0 (one "
                         f"size for all); got shapes {tree_map(jnp.shape, grads)}. Compute them with "
                         "kiln.vmap(kiln.grad(loss), in_axes=(None, 0)).")


def per_example_global_norm_clip(grads, l2_norm_clip):
    """Clips each example's gradient (axis 0 of every leaf) to global norm ``l2_norm_clip`` and sums them over
    the batch: ``(summed gradients, number of examples clipped)``."""
    _check_batch_dim(grads, "per_example_global_norm_clip")
    norms = 0
    for g in tree_leaves(grads):  # each example's squared norm, leaf sums added in the leaves' order
        sq = jnp.square(jnp.real(g)) + jnp.square(jnp.imag(g))
        norms = norms + jnp.sum(sq, axis=tuple(range(1, g.ndim)))
    norms = jnp.sqrt(norms)
    multipliers = jnp.nan_to_num(jnp.minimum(l2_norm_clip / norms, 1.0), nan=1.0)
    num_clipped = jnp.sum(multipliers < 1.0)
    return tree_map(lambda g: jnp.tensordot(multipliers, g, axes=1), grads), num_clipped


def per_example_layer_norm_clip(grads, global_l2_norm_clip, uniform: bool = True):
    """Clips each leaf's per-example gradients separately, to ``global_l2_norm_clip / sqrt(number of leaves)``
    (``uniform``) or to ``global_l2_norm_clip * sqrt(the leaf's share of the parameters)``; returns ``(tree of
    summed gradients, tree of numbers of examples clipped)``."""
    _check_batch_dim(grads, "per_example_layer_norm_clip")
    if uniform:
        n = len(tree_leaves(grads))
        clips = tree_map(lambda _: global_l2_norm_clip * (1.0 / n) ** 0.5, grads)
    else:
        total = sum(int(np.prod(jnp.shape(g)[1:])) for g in tree_leaves(grads))
        clips = tree_map(lambda g: global_l2_norm_clip * (int(np.prod(jnp.shape(g)[1:])) / total) ** 0.5, grads)
    pairs = tree_map(per_example_global_norm_clip, grads, clips)
    # (optax's tree transpose: a pair of trees from a tree of pairs)
    return tree_map(lambda g, p: p[0], grads, pairs), tree_map(lambda g, p: p[1], grads, pairs)


# -- gradient scaling in the backward pass ----------------------------------------------------------------------------

@custom_vjp
def _scale_gradient(inputs, scale):
    return inputs


def _scale_gradient_fwd(inputs, scale):
    return inputs, scale


def _scale_gradient_bwd(scale, ct):
    return tree_map(lambda c: c * scale, ct), None


_scale_gradient.defvjp(_scale_gradient_fwd, _scale_gradient_bwd)


def scale_gradient(inputs, scale):
    """``inputs`` unchanged in the forward pass; gradients flowing back through them are multiplied by
    ``scale`` (1: nothing done; 0: ``lax.stop_gradient``)."""
    if isinstance(scale, numbers.Number):  # (optax's special cases, for Python numbers)
        if scale == 1.0:
            return inputs
        if scale == 0.0:
            return tree_map(lax.stop_gradient, inputs)
    return _scale_gradient(inputs, scale)
