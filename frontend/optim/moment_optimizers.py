"""optax's moment-based optimizers beyond Adam: Adamax, AMSGrad, AdaBelief, RAdam, Yogi, Adadelta, NovoGrad, Adan
and the optimistic ones. Each ``scale_by_*`` rescales the gradients; each alias chains it with the learning rate.
The moments are computed with optax's order of operations (its ``tree_update_moment`` family), so that the
numbers round as optax's, eagerly and under jit."""
from __future__ import annotations

import numbers
import warnings
from typing import Any, NamedTuple

from .. import numpy as jnp
from ..control.api import cond
from ..core.tracing import Tracer
from ..core.tree_util import tree_map
from .more import _abs_sq
from .transforms import (
    GradientTransformation,
    ScaleByAdamState,
    _bias_correction,
    _increment,
    _zeros_count,
    add_decayed_weights,
    chain,
    identity,
    scale_by_adam,
    scale_by_learning_rate,
)

__all__ = [
    "ScaleByAmsgradState", "ScaleByAdaDeltaState", "ScaleByAdanState", "ScaleByBeliefState", "ScaleByNovogradState",
    "scale_by_adamax", "scale_by_amsgrad", "scale_by_belief", "scale_by_radam", "scale_by_yogi", "scale_by_adadelta",
    "scale_by_novograd", "scale_by_adan", "scale_by_optimistic_gradient",
    "adamax", "adamaxw", "amsgrad", "adabelief", "radam", "yogi", "adadelta", "novograd", "adan",
    "optimistic_gradient_descent", "optimistic_adam", "optimistic_adam_v2",
]


class ScaleByAmsgradState(NamedTuple):
    count: Any
    mu: Any
    nu: Any
    nu_max: Any


class ScaleByAdaDeltaState(NamedTuple):
    e_g: Any  # running mean of the squared gradients
    e_x: Any  # running mean of the squared updates


class ScaleByAdanState(NamedTuple):
    m: Any
    v: Any
    n: Any
    g: Any  # the previous gradients
    t: Any  # the step count (last, as optax's)


class ScaleByBeliefState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class ScaleByNovogradState(NamedTuple):
    count: Any
    mu: Any
    nu: Any  # one scalar per leaf: the running mean of the leaf's squared norm


class ScaleByOptimisticGradientState(NamedTuple):
    """(optax's name; optax does not export it either.)"""
    is_initial_step: Any
    previous_gradient: Any


# --- optax's moment updates (tree_update_moment & co), in its order of operations -------------------------------

def _update_moment(updates, moments, decay, order):
    """The EMA of ``g**order``: ``(1 - decay) * g**order + decay * t``."""
    return tree_map(lambda g, t: (1 - decay) * (g ** order) + decay * t, updates, moments)


def _orderth_norm(g, order):
    if not jnp.iscomplexobj(g):
        return g ** order
    half = order / 2
    return _abs_sq(g) ** (int(half) if half.is_integer() else half)  # (an int power multiplies, as optax's)


def _update_moment_per_elem_norm(updates, moments, decay, order):
    """The EMA of ``|g|**order`` (``g**order`` for real ``g``)."""
    return tree_map(lambda g, t: (1 - decay) * _orderth_norm(g, order) + decay * t, updates, moments)


def _update_infinity_moment(updates, moments, decay, eps):
    """The exponentially weighted maximum of ``|g|``: ``max(|g| + eps, decay * t)``."""
    return tree_map(lambda g, t: jnp.maximum(jnp.abs(g) + eps, decay * t), updates, moments)


def _zeros(params, dtype=None):
    return tree_map(lambda p: jnp.zeros_like(p, dtype=dtype), params)


def _cast(tree, dtype):
    return tree if dtype is None else tree_map(lambda t: t.astype(dtype), tree)


def _nesterov_mu_hat(mu, updates, b1, count):
    """Nesterov's look-ahead first moment, each term bias-corrected, then mixed (optax's order)."""
    return tree_map(lambda m, g: b1 * m + (1 - b1) * g, _bias_correction(mu, b1, _increment(count)),
                    _bias_correction(updates, b1, count))


def _power_of_count(base, count):
    """``base ** count`` as optax computes it. JAX's ``**`` takes a concrete (eager) int exponent as repeated
    multiplication (its integer_pow: square-and-multiply over the exponent's bits), a traced one as ``lax.pow``;
    the two round differently. Eagerly the same products are kiln multiplications, one rounding each as in
    integer_pow's program, which spares compiling one program per step count (integer_pow's exponent is a
    parameter of its program)."""
    if isinstance(count, Tracer) or isinstance(base, Tracer):
        return base ** count
    x = jnp.asarray(base)  # (kiln's dtype rules: a Python float is float32)
    n, acc = int(count), None
    while n > 0:
        if n & 1:
            acc = x if acc is None else acc * x
        n >>= 1
        if n > 0:
            x = x * x
    return jnp.ones([], x.dtype) if acc is None else acc


def _adam_ratio(mu_hat, nu_hat, eps, eps_root):
    return tree_map(lambda m, v: m / (jnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)


# --- the rescalings ---------------------------------------------------------------------------------------------

def scale_by_adamax(b1=0.9, b2=0.999, eps=1e-8) -> GradientTransformation:
    """Adamax's rescaling: the bias-corrected first moment over the exponentially weighted infinity norm."""
    def init(params):
        return ScaleByAdamState(_zeros_count(), _zeros(params), _zeros(params))

    def update(updates, state, params=None):
        count = _increment(state.count)
        mu = _update_moment(updates, state.mu, b1, 1)
        nu = _update_infinity_moment(updates, state.nu, b2, eps)
        out = tree_map(lambda m, v: m / v, _bias_correction(mu, b1, count), nu)  # (nu needs no correction)
        return out, ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


def scale_by_amsgrad(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, bias_correction_mu: bool = True,
                     bias_correction_nu: bool = True) -> GradientTransformation:
    """AMSGrad's rescaling: Adam's, with the running maximum of the (bias-corrected) second moment."""
    def init(params):
        return ScaleByAmsgradState(_zeros_count(), _zeros(params, mu_dtype), _zeros(params), _zeros(params))

    def update(updates, state, params=None):
        mu = _update_moment(updates, state.mu, b1, 1)
        nu = _update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count = _increment(state.count)
        mu_hat = _bias_correction(mu, b1, count) if bias_correction_mu else mu
        nu_eff = _bias_correction(nu, b2, count) if bias_correction_nu else nu
        nu_max = tree_map(jnp.maximum, state.nu_max, nu_eff)
        out = _adam_ratio(mu_hat, nu_max, eps, eps_root)
        return out, ScaleByAmsgradState(count, _cast(mu, mu_dtype), nu, nu_max)
    return GradientTransformation(init, update)


def scale_by_belief(b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, *, nesterov: bool = False) -> GradientTransformation:
    """AdaBelief's rescaling: Adam's, with the second moment of ``g - mu`` (the belief in the gradient)."""
    def init(params):
        return ScaleByBeliefState(_zeros_count(), _zeros(params), _zeros(params))

    def update(updates, state, params=None):
        mu = _update_moment(updates, state.mu, b1, 1)
        surprise = tree_map(lambda g, m: g - m, updates, mu)
        nu = _update_moment_per_elem_norm(surprise, state.nu, b2, 2)
        nu = tree_map(lambda v: v + eps_root, nu)  # (kept in the state, as optax's)
        count = _increment(state.count)
        mu_hat = _nesterov_mu_hat(mu, updates, b1, count) if nesterov else _bias_correction(mu, b1, count)
        nu_hat = _bias_correction(nu, b2, count)
        out = tree_map(lambda m, v: m / (jnp.sqrt(v) + eps), mu_hat, nu_hat)
        return out, ScaleByBeliefState(count, mu, nu)
    return GradientTransformation(init, update)


def scale_by_radam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, threshold=5.0, *,
                   nesterov: bool = False) -> GradientTransformation:
    """Rectified Adam's rescaling: Adam's times the variance rectification ``r`` once the approximated SMA
    length ``ro`` reaches ``threshold``; before that, the bias-corrected first moment alone."""
    if isinstance(b2, numbers.Real) and not b2 < 1:
        raise ValueError(f"scale_by_radam: b2 must be < 1 (the SMA's maximum length is 2 / (1 - b2) - 1), got "
                         f"{b2!r}; use a decay rate in [0, 1), e.g. the default 0.999.")
    ro_inf = 2.0 / (1.0 - b2) - 1.0

    def rectified(ro, mu_hat, nu_hat):
        r = jnp.sqrt((ro - 4.0) * (ro - 2.0) * ro_inf / ((ro_inf - 4.0) * (ro_inf - 2.0) * ro))
        return tree_map(lambda m, v: r.astype(m.dtype) * m / (jnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)

    def init(params):
        return ScaleByAdamState(_zeros_count(), _zeros(params), _zeros(params))

    def update(updates, state, params=None):
        mu = _update_moment(updates, state.mu, b1, 1)
        nu = _update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count = _increment(state.count)
        b2t = _power_of_count(b2, count)
        ro = ro_inf - 2 * count * b2t / (1 - b2t)
        mu_hat = _nesterov_mu_hat(mu, updates, b1, count) if nesterov else _bias_correction(mu, b1, count)
        nu_hat = _bias_correction(nu, b2, count)
        out = tree_map(lambda r, m: jnp.where(ro >= threshold, r, m), rectified(ro, mu_hat, nu_hat), mu_hat)
        return out, ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


def scale_by_yogi(b1=0.9, b2=0.999, eps=1e-3, eps_root=0.0, initial_accumulator_value=1e-6) -> GradientTransformation:
    """Yogi's rescaling: Adam's, with the additive second-moment update ``nu - (1 - b2) sign(nu - g**2) g**2``."""
    def init(params):
        def full():  # (two trees: distinct buffers, which jit's buffer donation needs)
            return tree_map(lambda p: jnp.full_like(p, initial_accumulator_value), params)
        return ScaleByAdamState(_zeros_count(), full(), full())

    def update(updates, state, params=None):
        mu = _update_moment(updates, state.mu, b1, 1)
        nu = tree_map(lambda g, v: v - (1 - b2) * jnp.sign(v - _abs_sq(g)) * _abs_sq(g), updates, state.nu)
        count = _increment(state.count)
        out = _adam_ratio(_bias_correction(mu, b1, count), _bias_correction(nu, b2, count), eps, eps_root)
        return out, ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


def scale_by_adadelta(rho=0.9, eps=1e-6) -> GradientTransformation:
    """Adadelta's rescaling: ``g * sqrt(E[dx**2] + eps) / sqrt(E[g**2] + eps)``."""
    def init(params):
        return ScaleByAdaDeltaState(_zeros(params), _zeros(params))

    def update(updates, state, params=None):
        e_g = _update_moment(updates, state.e_g, rho, 2)
        out = tree_map(lambda g, eg, ex: (jnp.sqrt(ex + eps) / jnp.sqrt(eg + eps)) * g, updates, e_g, state.e_x)
        e_x = _update_moment(out, state.e_x, rho, 2)
        return out, ScaleByAdaDeltaState(e_g, e_x)
    return GradientTransformation(init, update)



def scale_by_novograd(b1=0.9, b2=0.25, eps=1e-8, eps_root=0.0, weight_decay=0.0,
                      mu_dtype=None) -> GradientTransformation:
    """NovoGrad's rescaling: the gradients normalized by the running mean of each leaf's squared norm, plus
    ``weight_decay * params``, accumulated as momentum ``mu = b1 * mu + that`` (the first step starts both
    averages at its own values)."""
    def init(params):
        nu = tree_map(lambda p: jnp.zeros([], jnp.asarray(p).dtype), params)
        return ScaleByNovogradState(_zeros_count(), _zeros(params, mu_dtype), nu)

    def sq_norm(g):
        return jnp.linalg.norm(g) ** 2

    def normalized(g, p, n):
        return g / (jnp.sqrt(n + eps_root) + eps) + weight_decay * p

    def first_nu(grads, nu):
        return tree_map(lambda g, n: sq_norm(g).astype(n.dtype), grads, nu)

    def next_nu(grads, nu):
        return _update_moment(tree_map(sq_norm, grads), nu, b2, 1)

    def first_mu(grads, params, mu, nu):
        return tree_map(normalized, grads, params, nu)

    def next_mu(grads, params, mu, nu):
        return tree_map(lambda m, u: b1 * m + u, mu, tree_map(normalized, grads, params, nu))

    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_novograd: update needs the params (for the weight decay); call "
                             "optimizer.update(grads, state, params).")
        count = _increment(state.count)
        # (a cond, as optax's: one program for both branches, so the numbers round as optax's)
        nu = cond(count == 1, first_nu, next_nu, updates, state.nu)
        mu = _cast(cond(count == 1, first_mu, next_mu, updates, params, state.mu, nu), mu_dtype)
        return mu, ScaleByNovogradState(count, mu, nu)
    return GradientTransformation(init, update)


def scale_by_adan(b1=0.98, b2=0.92, b3=0.99, eps=1e-8, eps_root=0.0) -> GradientTransformation:
    """Adan's rescaling (Algorithm 1 of arXiv:2208.06677v4): EMAs of the gradients, of their differences and of
    the squared Nesterov-corrected gradients, each bias-corrected."""
    def init(params):
        return ScaleByAdanState(_zeros(params), _zeros(params), _zeros(params), _zeros(params), _zeros_count())

    def update(updates, state, params=None):
        diff = tree_map(lambda g, prev: jnp.where(state.t == 0, jnp.zeros_like(g), g - prev), updates, state.g)
        m = _update_moment(updates, state.m, b1, 1)
        v = _update_moment(diff, state.v, b2, 1)
        sq = tree_map(lambda g, d: g + (1 - b2) * d, updates, diff)
        n = _update_moment_per_elem_norm(sq, state.n, b3, 2)
        t = _increment(state.t)
        m_hat, v_hat, n_hat = _bias_correction(m, b1, t), _bias_correction(v, b2, t), _bias_correction(n, b3, t)
        out = tree_map(lambda mh, vh, nh: (mh + (1 - b2) * vh) / (jnp.sqrt(nh + eps_root) + eps), m_hat, v_hat, n_hat)
        return out, ScaleByAdanState(m, v, n, updates, t)
    return GradientTransformation(init, update)


def scale_by_optimistic_gradient(alpha=1.0, beta=1.0) -> GradientTransformation:
    """Generalized optimistic gradients: ``(alpha + beta) * g - beta * g_prev`` (``g_prev = g`` on the first
    step)."""
    def init(params):
        return ScaleByOptimisticGradientState(jnp.array(True), _zeros(params))

    def update(updates, state, params=None):
        def one(g, prev):
            prev = jnp.where(state.is_initial_step, g, prev)
            return (alpha + beta) * g - beta * prev
        return tree_map(one, updates, state.previous_gradient), ScaleByOptimisticGradientState(jnp.array(False),
                                                                                             updates)
    return GradientTransformation(init, update)

# --- the optimizers ---------------------------------------------------------------------------------------------

def adamax(learning_rate, b1=0.9, b2=0.999, eps=1e-8) -> GradientTransformation:
    """Adamax: ``scale_by_adamax`` then ``scale_by_learning_rate``."""
    return chain(scale_by_adamax(b1, b2, eps), scale_by_learning_rate(learning_rate))


def adamaxw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, weight_decay=1e-4, mask=None) -> GradientTransformation:
    """Adamax with decoupled weight decay (added after the rescaling, on the leaves where ``mask`` is True)."""
    return chain(scale_by_adamax(b1, b2, eps), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def amsgrad(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, bias_correction_mu: bool = True,
            bias_correction_nu: bool = True) -> GradientTransformation:
    """AMSGrad: ``scale_by_amsgrad`` then ``scale_by_learning_rate``."""
    return chain(scale_by_amsgrad(b1, b2, eps, eps_root, mu_dtype, bias_correction_mu, bias_correction_nu),
                 scale_by_learning_rate(learning_rate))


def adabelief(learning_rate, b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, *,
              nesterov: bool = False) -> GradientTransformation:
    """AdaBelief: ``scale_by_belief`` then ``scale_by_learning_rate``."""
    return chain(scale_by_belief(b1, b2, eps, eps_root, nesterov=nesterov), scale_by_learning_rate(learning_rate))


def radam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, threshold=5.0, *,
          nesterov: bool = False) -> GradientTransformation:
    """Rectified Adam: ``scale_by_radam`` then ``scale_by_learning_rate``."""
    return chain(scale_by_radam(b1, b2, eps, eps_root, threshold, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def yogi(learning_rate, b1=0.9, b2=0.999, eps=1e-3) -> GradientTransformation:
    """Yogi: ``scale_by_yogi`` then ``scale_by_learning_rate``."""
    return chain(scale_by_yogi(b1, b2, eps), scale_by_learning_rate(learning_rate))


def adadelta(learning_rate=None, rho=0.9, eps=1e-6, weight_decay=0.0, weight_decay_mask=None) -> GradientTransformation:
    """Adadelta: weight decay (added to the gradients, before the rescaling), ``scale_by_adadelta``, then the
    learning rate (none when ``learning_rate`` is None: Adadelta's own step sizes)."""
    return chain(add_decayed_weights(weight_decay, weight_decay_mask), scale_by_adadelta(rho, eps),
                 identity() if learning_rate is None else scale_by_learning_rate(learning_rate))


def novograd(learning_rate, b1=0.9, b2=0.25, eps=1e-6, eps_root=0.0, weight_decay=0.0) -> GradientTransformation:
    """NovoGrad: ``scale_by_novograd`` then ``scale_by_learning_rate``."""
    return chain(scale_by_novograd(b1, b2, eps, eps_root, weight_decay), scale_by_learning_rate(learning_rate))


def adan(learning_rate, b1=0.98, b2=0.92, b3=0.99, eps=1e-8, eps_root=1e-8, weight_decay=0.0,
         mask=None) -> GradientTransformation:
    """Adan: ``scale_by_adan``, decoupled weight decay, then ``scale_by_learning_rate``."""
    return chain(scale_by_adan(b1, b2, b3, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def optimistic_gradient_descent(learning_rate, alpha=1.0, beta=1.0) -> GradientTransformation:
    """Optimistic gradient descent (for min-max games): ``scale_by_optimistic_gradient`` then the learning rate."""
    return chain(scale_by_optimistic_gradient(alpha, beta), scale_by_learning_rate(learning_rate))


def optimistic_adam_v2(learning_rate, *, alpha=1.0, beta=1.0, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0,
                       mu_dtype=None, nesterov: bool = True) -> GradientTransformation:
    """Optimistic Adam: Adam's rescaling, optimistic gradients of it, then the learning rate."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 scale_by_optimistic_gradient(alpha, beta), scale_by_learning_rate(learning_rate))


def optimistic_adam(learning_rate, optimism=None, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *,
                    nesterov: bool = True) -> GradientTransformation:
    """Optimistic Adam with ``alpha = learning_rate`` and ``beta = optimism`` (default: the learning rate);
    deprecated, as optax's: use :func:`optimistic_adam_v2`."""
    warnings.warn("optimistic_adam is deprecated (as in optax); use optimistic_adam_v2(learning_rate, alpha=..., "
                  "beta=...) instead.", DeprecationWarning, stacklevel=2)
    if callable(learning_rate):
        raise ValueError("optimistic_adam: learning_rate must be a number (it is also the optimism's alpha), got "
                         "a schedule; use optimistic_adam_v2(schedule, alpha=..., beta=...) for schedules.")
    if optimism is None:
        optimism = learning_rate
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 scale_by_optimistic_gradient(alpha=learning_rate, beta=optimism),
                 scale_by_learning_rate(1.0))  # (flips the sign)
