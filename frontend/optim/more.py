"""More of optax's optimizers and wrappers: adagrad, rmsprop, lamb, lion, inject_hyperparams, MultiSteps."""
from __future__ import annotations

import inspect
import numbers
from typing import Any, Callable, NamedTuple

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..core.tree_util import tree_map
from .transforms import (
    EmptyState,
    GradientTransformation,
    _bias_correction,
    _check_transform,
    _increment,
    _zeros_count,
    add_decayed_weights,
    chain,
    identity,
    scale_by_adam,
    scale_by_learning_rate,
    trace,
)

__all__ = [
    "ScaleByRssState", "ScaleByRmsState", "ScaleByRmsWithCountState", "ScaleByRStdDevState",
    "ScaleByRStdDevWithCountState", "ScaleByLionState", "ScaleByTrustRatioState",
    "InjectHyperparamsState", "InjectStatefulHyperparamsState", "MultiStepsState", "scale_by_rss", "scale_by_rms",
    "scale_by_stddev",
    "scale_by_lion", "scale_by_trust_ratio", "adagrad", "rmsprop", "lamb", "lion", "inject_hyperparams",
    "MultiSteps",
]


class ScaleByRssState(NamedTuple):
    sum_of_squares: Any


# optax's layouts: a step count only with bias_correction
class ScaleByRmsState(NamedTuple):
    nu: Any


class ScaleByRmsWithCountState(NamedTuple):
    count: Any
    nu: Any


class ScaleByRStdDevState(NamedTuple):
    mu: Any
    nu: Any


class ScaleByRStdDevWithCountState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class ScaleByLionState(NamedTuple):
    count: Any
    mu: Any


ScaleByTrustRatioState = EmptyState  # (optax's name for it)


def _abs_sq(g):
    return jnp.real(g * jnp.conj(g))


def scale_by_rss(initial_accumulator_value=0.1, eps=1e-7) -> GradientTransformation:
    """Adagrad's rescaling: ``g / sqrt(sum of g**2 + eps)`` (0 where the sum is 0)."""
    def init(params):
        return ScaleByRssState(tree_map(lambda p: jnp.full_like(p, initial_accumulator_value), params))

    def update(updates, state, params=None):
        sos = tree_map(lambda g, s: _abs_sq(g) + s, updates, state.sum_of_squares)
        # optax's order of operations: the scale first, then the product
        out = tree_map(lambda g, s: (jnp.where(s > 0, lax.rsqrt(s + eps), 0.0) * g).astype(g.dtype), updates, sos)
        return out, ScaleByRssState(sos)
    return GradientTransformation(init, update)


def _rms_scale(g, nu, eps, eps_in_sqrt):
    # optax's order of operations: the scale first, then the product
    return (lax.rsqrt(nu + eps) if eps_in_sqrt else 1 / (jnp.sqrt(nu) + eps)) * g


def scale_by_rms(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt: bool = True,
                 bias_correction: bool = False) -> GradientTransformation:
    """RMSProp's rescaling: ``nu = decay * nu + (1 - decay) * g**2``, ``g / sqrt(nu + eps)``."""
    def init(params):
        nu = tree_map(lambda p: jnp.full_like(p, initial_scale), params)
        return ScaleByRmsWithCountState(_zeros_count(), nu) if bias_correction else ScaleByRmsState(nu)

    def update(updates, state, params=None):
        nu = tree_map(lambda g, n: (1 - decay) * _abs_sq(g) + decay * n, updates, state.nu)
        if not bias_correction:
            return tree_map(lambda g, n: _rms_scale(g, n, eps, eps_in_sqrt).astype(g.dtype), updates, nu), \
                ScaleByRmsState(nu)
        count = _increment(state.count)
        nu_hat = _bias_correction(nu, decay, count)
        out = tree_map(lambda g, n: _rms_scale(g, n, eps, eps_in_sqrt).astype(g.dtype), updates, nu_hat)
        return out, ScaleByRmsWithCountState(count, nu)
    return GradientTransformation(init, update)


def scale_by_stddev(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt: bool = True,
                    bias_correction: bool = False) -> GradientTransformation:
    """Centred RMSProp's rescaling: ``g / sqrt(nu - mu**2 + eps)`` with EMAs ``mu`` of g and ``nu`` of g**2."""
    def init(params):
        mu, nu = tree_map(jnp.zeros_like, params), tree_map(lambda p: jnp.full_like(p, initial_scale), params)
        return ScaleByRStdDevWithCountState(_zeros_count(), mu, nu) if bias_correction else ScaleByRStdDevState(mu, nu)

    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: (1 - decay) * g + decay * m, updates, state.mu)
        nu = tree_map(lambda g, n: (1 - decay) * _abs_sq(g) + decay * n, updates, state.nu)
        if bias_correction:
            count = _increment(state.count)
            mu_hat, nu_hat = _bias_correction(mu, decay, count), _bias_correction(nu, decay, count)
        else:
            mu_hat, nu_hat = mu, nu
        out = tree_map(lambda g, m, n: _rms_scale(g, n - _abs_sq(m), eps, eps_in_sqrt).astype(g.dtype),
                       updates, mu_hat, nu_hat)
        if bias_correction:
            return out, ScaleByRStdDevWithCountState(count, mu, nu)
        return out, ScaleByRStdDevState(mu, nu)
    return GradientTransformation(init, update)


def scale_by_lion(b1=0.9, b2=0.99, mu_dtype=None) -> GradientTransformation:
    """Lion's rescaling: ``sign((1 - b1) * g + b1 * mu)``, then ``mu = (1 - b2) * g + b2 * mu``."""
    def init(params):
        return ScaleByLionState(_zeros_count(), tree_map(lambda p: jnp.zeros_like(p, dtype=mu_dtype), params))

    def update(updates, state, params=None):
        out = tree_map(lambda g, m: jnp.sign((1 - b1) * g + b1 * m).astype(g.dtype), updates, state.mu)
        mu = tree_map(lambda g, m: ((1 - b2) * g + b2 * m).astype(m.dtype), updates, state.mu)
        return out, ScaleByLionState(_increment(state.count), mu)
    return GradientTransformation(init, update)


def scale_by_trust_ratio(min_norm=0.0, trust_coefficient=1.0, eps=0.0) -> GradientTransformation:
    """LAMB's layer-wise rescaling by ``trust_coefficient * ||param|| / (||update|| + eps)`` (1 where either
    norm is 0)."""
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_trust_ratio: update needs the params; call optimizer.update(grads, state, "
                             "params).")

        def one(u, p):
            pn = jnp.maximum(jnp.sqrt(jnp.sum(_abs_sq(p))), min_norm)
            un = jnp.maximum(jnp.sqrt(jnp.sum(_abs_sq(u))), min_norm)
            ratio = trust_coefficient * pn / (un + eps)
            ratio = jnp.where((pn == 0) | (un == 0), 1.0, ratio)
            return (u * ratio).astype(u.dtype)
        return tree_map(one, updates, params), state
    return GradientTransformation(lambda params: EmptyState(), update)


def adagrad(learning_rate, initial_accumulator_value=0.1, eps=1e-7) -> GradientTransformation:
    """Adagrad: ``scale_by_rss`` then ``scale_by_learning_rate``."""
    return chain(scale_by_rss(initial_accumulator_value, eps), scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate, decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt: bool = True,
            centered: bool = False, momentum=None, nesterov: bool = False,
            bias_correction: bool = False) -> GradientTransformation:
    """RMSProp (centred when ``centered``), with (Nesterov) momentum when ``momentum`` is given."""
    rescale = (scale_by_stddev if centered else scale_by_rms)(decay, eps, initial_scale, eps_in_sqrt,
                                                                bias_correction)
    # (identity() in the momentum's place: the state has optax's layout, three parts)
    return chain(rescale, scale_by_learning_rate(learning_rate),
                 identity() if momentum is None else trace(momentum, nesterov))


def lamb(learning_rate, b1=0.9, b2=0.999, eps=1e-6, eps_root=0.0, weight_decay=0.0,
         mask=None) -> GradientTransformation:
    """LAMB: Adam's rescaling, weight decay, then the layer-wise trust ratio."""
    return chain(scale_by_adam(b1, b2, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_trust_ratio(), scale_by_learning_rate(learning_rate))


def lion(learning_rate, b1=0.9, b2=0.99, mu_dtype=None, weight_decay=1e-3, mask=None) -> GradientTransformation:
    """Lion: sign of the interpolated momentum, decoupled weight decay."""
    return chain(scale_by_lion(b1, b2, mu_dtype), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


class InjectHyperparamsState(NamedTuple):
    count: Any
    hyperparams: Any
    inner_state: Any


class InjectStatefulHyperparamsState(NamedTuple):
    """What inject_hyperparams keeps (optax's layout): ``hyperparams_states`` is always empty in kiln (its
    schedules are functions of the step count, with no state of their own)."""
    count: Any
    hyperparams: Any
    hyperparams_states: Any
    inner_state: Any


def _is_numeric(v) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, (numbers.Number, np.ndarray, np.generic)) or hasattr(v, "dtype") and hasattr(v, "shape")


def inject_hyperparams(inner_factory: Callable, static_args=(), hyperparam_dtype=None) -> Callable:
    """Wraps an optimizer factory so that its numeric arguments live in the state (``state.hyperparams``,
    changeable between steps) and its callable arguments are schedules evaluated at the step count.
    Arguments named in ``static_args``, and bools, strings and None, stay Python values."""
    static = {static_args} if isinstance(static_args, str) else set(static_args)
    sig = inspect.signature(inner_factory)

    def wrapped(*args, **kwargs) -> GradientTransformation:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"inject_hyperparams: the arguments do not fit "
                            f"{getattr(inner_factory, '__name__', 'the factory')}{sig}: {e}") from e
        bound.apply_defaults()  # the factory's defaults are hyperparameters too (as optax's: state.hyperparams["b1"])
        fixed, numeric, schedules = {}, {}, {}
        for k, v in bound.arguments.items():
            if k in static:
                fixed[k] = v
            elif callable(v):
                schedules[k] = v
            elif _is_numeric(v):
                numeric[k] = v
            else:
                fixed[k] = v

        def as_hp(v):
            v = jnp.asarray(v)
            if hyperparam_dtype is not None or jnp.issubdtype(v.dtype, jnp.floating):
                v = v.astype(hyperparam_dtype or jnp.float32)
            return v

        def hparams_at(count, stored):
            hp = dict(stored)
            hp.update({k: as_hp(f(count)) for k, f in schedules.items()})
            return hp

        def init(params):
            count = _zeros_count()
            hp = hparams_at(count, {k: as_hp(v) for k, v in numeric.items()})
            return InjectStatefulHyperparamsState(count, hp, {}, inner_factory(**fixed, **hp).init(params))

        def update(updates, state, params=None):
            hp = hparams_at(state.count, state.hyperparams)
            inner = inner_factory(**fixed, **hp)
            updates, inner_state = inner.update(updates, state.inner_state, params)
            return updates, InjectStatefulHyperparamsState(_increment(state.count), hp, {}, inner_state)
        return GradientTransformation(init, update)
    return wrapped


class MultiStepsState(NamedTuple):
    mini_step: Any
    gradient_step: Any
    inner_opt_state: Any
    acc_grads: Any
    skip_state: Any = ()  # (optax's field; kiln takes no should_skip_update_fn, so it stays empty)


class MultiSteps:
    """Accumulates gradients over ``every_k_schedule`` mini-steps (an int, or a callable of the gradient-step
    count) and applies ``opt`` to their mean (sum when ``use_grad_mean`` is False) on the last one; the other
    mini-steps return zero updates."""

    def __init__(self, opt: GradientTransformation, every_k_schedule, use_grad_mean: bool = True,
                 should_skip_update_fn=None, accumulator_dtype=jnp.float32):
        _check_transform(opt, "MultiSteps")
        if should_skip_update_fn is not None:
            raise NotImplementedError("MultiSteps: should_skip_update_fn is not supported by kiln.optim yet; "
                                      "leave it None.")
        if not callable(every_k_schedule):
            k = every_k_schedule
            if not isinstance(k, numbers.Integral) or k < 1:
                raise ValueError(f"MultiSteps: every_k_schedule must be an int >= 1 or a callable, got {k!r}.")
            every_k_schedule = lambda step: k  # noqa: E731
        self._opt = opt
        self._every_k = every_k_schedule
        self._use_grad_mean = use_grad_mean
        self._acc_dtype = jnp.dtype(accumulator_dtype)  # the accumulated gradients' (float32 by default, as optax)

    @property
    def inner_opt(self) -> GradientTransformation:
        return self._opt

    def init(self, params) -> MultiStepsState:
        return MultiStepsState(_zeros_count(), _zeros_count(), self._opt.init(params),
                               tree_map(lambda p: jnp.zeros_like(p, dtype=self._acc_dtype), params))

    def update(self, updates, state: MultiStepsState, params=None):
        # optax's operations, in its order (so that the numbers round as optax's): the running mean (or sum) in
        # the accumulator's dtype, the inner update on it cast to the gradients' dtypes, and the emitted step
        # chosen by multiplying with the 0/1 of ``emit``
        k = self._every_k(state.gradient_step)
        n = state.mini_step
        if self._use_grad_mean:
            acc = tree_map(lambda g, a: a + (g - a) / (n + 1), updates, state.acc_grads)
        else:
            acc = tree_map(lambda g, a: g + a, updates, state.acc_grads)
        new_u, new_inner = self._opt.update(tree_map(lambda a, g: a.astype(g.dtype), acc, updates),
                                            state.inner_opt_state, params)
        emit = n == k - 1
        inner = tree_map(lambda old, new: jnp.where(emit, new, old).astype(old.dtype), state.inner_opt_state,
                         new_inner)
        acc = tree_map(lambda a: ((1 - emit) * a).astype(self._acc_dtype), acc)
        mini = _increment(n) % k
        grad_step = emit * _increment(state.gradient_step) + (1 - emit) * state.gradient_step
        return tree_map(lambda u: emit * u, new_u), MultiStepsState(mini, grad_step, inner, acc, state.skip_state)

    def has_updated(self, state: MultiStepsState):
        """Whether the last update applied the accumulated gradients (False on a fresh state, as optax's)."""
        return (state.mini_step == 0) & (state.gradient_step > 0)

    def gradient_transformation(self) -> GradientTransformation:
        return GradientTransformation(self.init, self.update)
