"""More of optax's optimizers and wrappers: adagrad, rmsprop, lamb, lion, inject_hyperparams, MultiSteps."""
from __future__ import annotations

import inspect
import numbers
import warnings
from typing import Any, Callable, NamedTuple

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..control.api import cond
from ..core.array_methods import ArrayMethods
from ..core.tree_util import tree_leaves, tree_map
from ..driver.tools import eval_shape
from .numerics import safe_norm
from .schedules import StatefulSchedule, WrappedSchedule
from .transforms import (
    EmptyState,
    GradientTransformation,
    GradientTransformationExtraArgs,
    _bias_correction,
    _check_transform,
    _increment,
    _need_params,
    _zeros_count,
    add_decayed_weights,
    chain,
    identity,
    scale_by_adam,
    scale_by_learning_rate,
    trace,
    with_extra_args_support,
)

__all__ = [
    "ScaleByRssState", "ScaleByRmsState", "ScaleByRmsWithCountState", "ScaleByRStdDevState",
    "ScaleByRStdDevWithCountState", "ScaleByLionState", "ScaleByTrustRatioState",
    "InjectHyperparamsState", "InjectStatefulHyperparamsState", "MultiStepsState", "scale_by_rss", "scale_by_rms",
    "scale_by_stddev",
    "scale_by_lion", "scale_by_trust_ratio", "adagrad", "rmsprop", "lamb", "lion", "inject_hyperparams",
    "MultiSteps", "inject_stateful_hyperparams",
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
        _need_params(params, "scale_by_trust_ratio")

        def one(u, p):
            # safe_norm takes linalg.norm, one compiled program eagerly too (as JAX's jitted norm): it rounds as
            # optax's, where separate eager square, sum and sqrt did not
            pn = safe_norm(p, min_norm)
            un = safe_norm(u, min_norm)
            ratio = trust_coefficient * pn / (un + eps)
            ratio = jnp.where((pn == 0) | (un == 0), jnp.array(1.0, dtype=p.dtype), ratio)
            return u * ratio
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
    """What inject_hyperparams keeps (optax's layout): ``hyperparams_states`` holds each schedule's own state
    (a ``WrappedScheduleState`` step count for a plain schedule)."""
    count: Any
    hyperparams: Any
    hyperparams_states: Any
    inner_state: Any


def _is_numeric(v) -> bool:
    # (as optax's: Python ints and floats, NumPy arrays and kiln arrays; NumPy scalars and bools stay static)
    if isinstance(v, (bool, np.generic)):
        return False
    return isinstance(v, (int, float, np.ndarray, ArrayMethods))


def _convert_floats(x, dtype):
    """Floating values (but strongly typed arrays) as arrays of ``dtype``; the rest as given (as optax's)."""
    if isinstance(x, ArrayMethods) and not getattr(x, "weak_type", False):
        return x
    current = x.dtype if hasattr(x, "dtype") else type(x)
    if jnp.issubdtype(current, jnp.floating):
        return jnp.asarray(x, dtype=dtype)
    return x


def _higher_dtype(a, b):
    if jnp.promote_types(a, b) == a:
        return a
    if jnp.promote_types(a, b) == b:
        return b
    raise ValueError(f"inject_hyperparams: the params mix dtypes {a} and {b}, neither of which promotes to the "
                     "other; pass hyperparam_dtype= to choose the hyperparameters' dtype.")


def _params_dtype(params):
    """The highest dtype of the params' leaves (float32 without leaves), as optax's ``tree.dtype(.., 'highest')``."""
    dtypes = [jnp.asarray(x).dtype for x in tree_leaves(params)]
    if not dtypes:
        return jnp.dtype(jnp.float32)
    out = dtypes[0]
    for d in dtypes[1:]:
        out = _higher_dtype(out, d)
    return out


def inject_hyperparams(inner_factory: Callable, static_args=(), hyperparam_dtype=None) -> Callable:
    """Wraps an optimizer factory so that its numeric arguments live in the state (``state.hyperparams``,
    changeable between steps) and its callable arguments are schedules evaluated at each step (a plain schedule
    at the step count; a :class:`StatefulSchedule` on its own state, kept in ``state.hyperparams_states``).
    Arguments named in ``static_args``, and bools, strings and None, stay Python values. Floating
    hyperparameters take ``hyperparam_dtype`` (by default the params' highest dtype)."""
    static = {static_args} if isinstance(static_args, str) else set(static_args)
    sig = inspect.signature(inner_factory)
    name = getattr(inner_factory, "__name__", "the factory")
    if not static <= set(sig.parameters):
        raise ValueError(f"inject_hyperparams: static_args {sorted(static - set(sig.parameters))} are not "
                         f"parameters of {name}{sig}; name only its parameters.")

    def wrapped(*args, **kwargs) -> GradientTransformationExtraArgs:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"inject_hyperparams: the arguments do not fit {name}{sig}: {e}") from e
        bound.apply_defaults()  # the factory's defaults are hyperparameters too (as optax's: state.hyperparams["b1"])
        fixed, numeric, schedules = {}, {}, {}
        for k, v in bound.arguments.items():
            if k in static or isinstance(v, bool):
                fixed[k] = v
            elif isinstance(v, StatefulSchedule):
                schedules[k] = v
            elif callable(v):
                schedules[k] = WrappedSchedule(v)
            elif _is_numeric(v):
                numeric[k] = v
            else:
                fixed[k] = v

        def dtype_for(params):
            return _params_dtype(params) if hyperparam_dtype is None else hyperparam_dtype

        def init(params):
            dtype = dtype_for(params)
            hp = {k: jnp.asarray(_convert_floats(v, dtype)) for k, v in numeric.items()}
            hp_states = {k: f.init() for k, f in schedules.items()}
            hp.update({k: _convert_floats(f(hp_states[k]), dtype) for k, f in schedules.items()})
            return InjectStatefulHyperparamsState(_zeros_count(), hp, hp_states,
                                                  inner_factory(**fixed, **hp).init(params))

        def update(updates, state, params=None, **extra_args):
            dtype = dtype_for(params)
            hp = {k: _convert_floats(v, dtype) for k, v in state.hyperparams.items()}
            hp.update({k: _convert_floats(f(state.hyperparams_states[k], **extra_args), dtype)
                       for k, f in schedules.items()})
            hp_states = {k: f.update(state.hyperparams_states[k], **extra_args) for k, f in schedules.items()}
            inner = with_extra_args_support(inner_factory(**fixed, **hp))
            updates, inner_state = inner.update(updates, state.inner_state, params, **extra_args)
            return updates, InjectStatefulHyperparamsState(_increment(state.count), hp, hp_states, inner_state)
        return GradientTransformationExtraArgs(init, update)
    return wrapped


def inject_stateful_hyperparams(inner_factory: Callable, static_args=(), hyperparam_dtype=None) -> Callable:
    """optax's older name of :func:`inject_hyperparams` (which takes stateful schedules too); deprecated."""
    warnings.warn("inject_stateful_hyperparams is deprecated, use inject_hyperparams instead", DeprecationWarning,
                  stacklevel=2)
    return inject_hyperparams(inner_factory, static_args, hyperparam_dtype)


class MultiStepsState(NamedTuple):
    mini_step: Any
    gradient_step: Any
    inner_opt_state: Any
    acc_grads: Any
    skip_state: Any = ()  # what should_skip_update_fn returned last (empty without one)


def _never_skip(*args, **kwargs):
    return jnp.array(False, dtype=jnp.bool_), ()


class MultiSteps:
    """Accumulates gradients over ``every_k_schedule`` mini-steps (an int, or a callable of the gradient-step
    count) and applies ``opt`` to their mean (sum when ``use_grad_mean`` is False) on the last one; the other
    mini-steps return zero updates. A mini-step for which ``should_skip_update_fn(updates, gradient_step,
    params) -> (skip, skip_state)`` says skip (e.g. :func:`skip_not_finite`) is left out: zero updates, state
    kept. Extra keyword arguments of ``update`` go to ``opt``."""

    def __init__(self, opt: GradientTransformation, every_k_schedule, use_grad_mean: bool = True,
                 should_skip_update_fn=None, accumulator_dtype=jnp.float32):
        _check_transform(opt, "MultiSteps")
        if not callable(every_k_schedule):
            k = every_k_schedule
            if not isinstance(k, numbers.Integral) or k < 1:
                raise ValueError(f"MultiSteps: every_k_schedule must be an int >= 1 or a callable, got {k!r}.")
            every_k_schedule = lambda step: k  # noqa: E731
        if should_skip_update_fn is not None and not callable(should_skip_update_fn):
            raise TypeError(f"MultiSteps: should_skip_update_fn must be a callable (updates, gradient_step, params) "
                            f"-> (skip, skip_state), e.g. optim.skip_not_finite; got "
                            f"{type(should_skip_update_fn).__name__}.")
        self._opt = with_extra_args_support(opt)
        self._every_k = every_k_schedule
        self._use_grad_mean = use_grad_mean
        self._should_skip = _never_skip if should_skip_update_fn is None else should_skip_update_fn
        self._acc_dtype = jnp.dtype(accumulator_dtype)  # the accumulated gradients' (float32 by default, as optax)

    @property
    def inner_opt(self) -> GradientTransformation:
        return self._opt

    def init(self, params) -> MultiStepsState:
        gradient_step = _zeros_count()
        _, skip_state = self._should_skip(tree_map(jnp.zeros_like, params), gradient_step, params)
        return MultiStepsState(_zeros_count(), gradient_step, self._opt.init(params),
                               tree_map(lambda p: jnp.zeros_like(p, dtype=self._acc_dtype), params), skip_state)

    def _accumulate(self, updates, state, params, extra_args, skip_state):
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
                                            state.inner_opt_state, params, **extra_args)
        emit = n == k - 1
        inner = tree_map(lambda old, new: jnp.where(emit, new, old).astype(old.dtype), state.inner_opt_state,
                         new_inner)
        acc = tree_map(lambda a: ((1 - emit) * a).astype(self._acc_dtype), acc)
        mini = _increment(n) % k
        grad_step = emit * _increment(state.gradient_step) + (1 - emit) * state.gradient_step
        return tree_map(lambda u: emit * u, new_u), MultiStepsState(mini, grad_step, inner, acc, skip_state)

    def _skip(self, updates, state, params, extra_args, skip_state):
        # zeros shaped as opt's updates would be (found by tracing it only); arrays among the extra arguments
        # are passed to the trace, the other ones closed over, as optax's
        static = {k: v for k, v in extra_args.items() if not isinstance(v, ArrayMethods)}
        dynamic = {k: v for k, v in extra_args.items() if isinstance(v, ArrayMethods)}
        acc = tree_map(lambda a, g: a.astype(g.dtype), state.acc_grads, updates)
        shapes, _ = eval_shape(lambda a, s, p, kw: self._opt.update(a, s, p, **static, **kw),
                               acc, state.inner_opt_state, params, dynamic)
        zeros = tree_map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)
        return zeros, state._replace(skip_state=skip_state)

    def update(self, updates, state: MultiStepsState, params=None, **extra_args):
        skip, skip_state = self._should_skip(updates, state.gradient_step, params)
        skip_aval = jnp.asarray(skip)
        if (skip_aval.dtype, skip_aval.shape) != (jnp.dtype(jnp.bool_), ()):
            raise ValueError(f"MultiSteps: should_skip_update_fn must return a boolean scalar array first, got "
                             f"dtype {skip_aval.dtype} and shape {skip_aval.shape}; return (jnp.asarray(flag), "
                             "skip_state).")
        return cond(skip, lambda _: self._skip(updates, state, params, extra_args, skip_state),
                    lambda _: self._accumulate(updates, state, params, extra_args, skip_state), None)

    def has_updated(self, state: MultiStepsState):
        """Whether the last update applied the accumulated gradients (False on a fresh state, as optax's)."""
        return (state.mini_step == 0) & (state.gradient_step > 0)

    def gradient_transformation(self) -> GradientTransformation:
        return GradientTransformation(self.init, self.update)  # (as optax's: not marked as taking extra args)
