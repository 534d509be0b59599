"""Gradient transformations (as optax's): ``GradientTransformation(init, update)`` pairs whose states are
pytrees (NamedTuples of arrays), so they pass through kiln.jit, kiln.vmap and buffer donation."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .. import numpy as jnp
from ..core.tree_util import tree_leaves, tree_map
from ..driver.jit import jit

__all__ = [
    "GradientTransformation", "EmptyState", "ScaleByScheduleState", "TraceState", "ScaleByAdamState",
    "MaskedState", "MaskedNode", "identity", "apply_updates", "chain", "scale", "scale_by_learning_rate",
    "scale_by_schedule", "trace", "scale_by_adam", "sgd", "adam", "adamw", "clip", "clip_by_global_norm",
    "add_decayed_weights", "masked", "global_norm", "nadam", "nadamw", "set_to_zero", "zero_nans", "ZeroNansState",
    "partition", "PartitionState", "multi_transform", "MultiTransformState",
]


class GradientTransformation(NamedTuple):
    """``init(params) -> state`` and ``update(updates, state, params=None) -> (updates, state)``."""
    init: Callable
    update: Callable


class EmptyState(NamedTuple):
    """The state of a stateless transformation."""


class ScaleByScheduleState(NamedTuple):
    count: Any


class TraceState(NamedTuple):
    trace: Any


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class MaskedState(NamedTuple):
    inner_state: Any


class MaskedNode(NamedTuple):
    """Stands in for a masked-out leaf (a pytree with no leaves)."""


def _zeros_count():
    return jnp.zeros([], jnp.int32)


def _increment(count):
    big = jnp.iinfo(jnp.int32).max
    return jnp.where(count < big, count + 1, big).astype(jnp.int32)


def _bias_correct(moment, decay, count):
    """``moment / (1 - decay**count)`` leaf by leaf (in each leaf's dtype), as optax's ``tree_bias_correction``."""
    correction = 1 - decay ** count
    return tree_map(lambda t: t / correction.astype(t.dtype), moment)


# Jitted (inlined), as optax's: eager updates run it as one compiled program, so they round as optax's
_bias_correction = jit(_bias_correct, inline=True)


def _check_transform(t, where: str):
    if not isinstance(t, GradientTransformation):
        raise TypeError(f"{where}: expected a GradientTransformation (an (init, update) pair), got "
                        f"{type(t).__name__}; build one with kiln.optim's functions or GradientTransformation(init, "
                        "update).")


def identity() -> GradientTransformation:
    """Leaves the updates unchanged."""
    return GradientTransformation(lambda params: EmptyState(), lambda updates, state, params=None: (updates, state))


def apply_updates(params, updates):
    """``params + updates`` leaf by leaf, each result in its parameter's dtype."""
    return tree_map(lambda p, u: jnp.asarray(p + u).astype(jnp.asarray(p).dtype), params, updates)


def global_norm(updates):
    """The l2 norm of all leaves together: ``sqrt(sum of |x|**2)``."""
    leaves = tree_leaves(updates)
    if not leaves:
        return jnp.zeros([], jnp.float32)
    return jnp.sqrt(sum(jnp.sum(jnp.real(x * jnp.conj(x))) for x in leaves))


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Applies ``transforms`` in order; the state is the tuple of their states."""
    for i, t in enumerate(transforms):
        _check_transform(t, f"chain: argument {i}")

    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        if len(state) != len(transforms):
            raise ValueError(f"chain: the state has {len(state)} parts but the chain has {len(transforms)} "
                             "transformations; pass the state that this chain's init returned.")
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)
    return GradientTransformation(init, update)


def _stateless(fn: Callable) -> GradientTransformation:
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None: (fn(updates, params), state))


def scale(step_size) -> GradientTransformation:
    """Multiplies the updates by ``step_size``."""
    return _stateless(lambda u, p: tree_map(lambda g: step_size * g, u))


def scale_by_schedule(step_size_fn: Callable) -> GradientTransformation:
    """Multiplies the updates by ``step_size_fn(count)``, ``count`` the number of updates made so far."""
    if not callable(step_size_fn):
        raise TypeError(f"scale_by_schedule: step_size_fn must be a callable of the step count, got "
                        f"{type(step_size_fn).__name__}; use scale(value) for a constant.")

    def update(updates, state, params=None):
        step = step_size_fn(state.count)
        updates = tree_map(lambda g: jnp.asarray(step, dtype=g.dtype) * g, updates)
        return updates, ScaleByScheduleState(_increment(state.count))
    return GradientTransformation(lambda params: ScaleByScheduleState(_zeros_count()), update)


def scale_by_learning_rate(learning_rate, *, flip_sign: bool = True) -> GradientTransformation:
    """Scales by ``-learning_rate`` (``+`` when ``flip_sign`` is False); a callable is a schedule."""
    m = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: m * learning_rate(count))
    return scale(m * learning_rate)


def trace(decay, nesterov: bool = False, accumulator_dtype=None) -> GradientTransformation:
    """Momentum: ``t = g + decay * t``; the update is ``t`` (``g + decay * t`` when ``nesterov``)."""
    def init(params):
        return TraceState(tree_map(lambda p: jnp.zeros_like(p, dtype=accumulator_dtype), params))

    def update(updates, state, params=None):
        f = tree_map(lambda g, t: g + decay * t, updates, state.trace)
        out = tree_map(lambda g, t: g + decay * t, updates, f) if nesterov else f
        if accumulator_dtype is not None:
            f = tree_map(lambda t: t.astype(accumulator_dtype), f)
        return out, TraceState(f)
    return GradientTransformation(init, update)


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *,
                  nesterov: bool = False) -> GradientTransformation:
    """Adam's rescaling: bias-corrected first moment over the root of the bias-corrected second moment."""
    def init(params):
        mu = tree_map(lambda p: jnp.zeros_like(p, dtype=mu_dtype), params)
        nu = tree_map(jnp.zeros_like, params)
        return ScaleByAdamState(_zeros_count(), mu, nu)

    def update(updates, state, params=None):
        mu = tree_map(lambda g, m: (1 - b1) * g + b1 * m, updates, state.mu)
        nu = tree_map(lambda g, n: (1 - b2) * jnp.real(g * jnp.conj(g)) + b2 * n, updates, state.nu)
        count = _increment(state.count)
        if nesterov:  # (optax's order of operations: each term bias-corrected, then scaled)
            mu_hat = tree_map(lambda m, g: b1 * m + (1 - b1) * g, _bias_correction(mu, b1, _increment(count)),
                              _bias_correction(updates, b1, count))
        else:
            mu_hat = _bias_correction(mu, b1, count)
        nu_hat = _bias_correction(nu, b2, count)
        out = tree_map(lambda m, n, g: (m / (jnp.sqrt(n + eps_root) + eps)).astype(g.dtype), mu_hat, nu_hat, updates)
        if mu_dtype is not None:
            mu = tree_map(lambda m: m.astype(mu_dtype), mu)
        return out, ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


def sgd(learning_rate, momentum=None, nesterov: bool = False, accumulator_dtype=None) -> GradientTransformation:
    """Stochastic gradient descent, with (Nesterov) momentum when ``momentum`` is given (else ``identity()`` in
    its place: the state has optax's layout, two parts)."""
    first = identity() if momentum is None else trace(momentum, nesterov, accumulator_dtype)
    return chain(first, scale_by_learning_rate(learning_rate))


def adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *,
         nesterov: bool = False) -> GradientTransformation:
    """Adam: ``scale_by_adam`` then ``scale_by_learning_rate``."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, weight_decay=1e-4,
          mask=None, *, nesterov: bool = False) -> GradientTransformation:
    """Adam with decoupled weight decay (``weight_decay * params`` added after the Adam rescaling, on the
    leaves where ``mask`` is True)."""
    return chain(scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def clip(max_delta) -> GradientTransformation:
    """Clips each update element to ``[-max_delta, max_delta]``."""
    return _stateless(lambda u, p: tree_map(lambda g: jnp.clip(g, -max_delta, max_delta), u))


def clip_by_global_norm(max_norm) -> GradientTransformation:
    """Rescales the updates to global norm ``max_norm`` when their global norm exceeds it."""
    def fn(updates, params):
        g_norm = global_norm(updates)
        keep = g_norm < max_norm
        return tree_map(lambda t: jnp.where(keep, t, (t / g_norm.astype(t.dtype)) * max_norm).astype(t.dtype),
                        updates)
    return _stateless(fn)


def add_decayed_weights(weight_decay=0.0, mask=None) -> GradientTransformation:
    """Adds ``weight_decay * params`` to the updates (on the leaves where ``mask`` is True)."""
    def update(updates, state, params=None):
        if params is None:
            raise ValueError("add_decayed_weights: update needs the params; call "
                             "optimizer.update(grads, state, params).")
        return tree_map(lambda g, p: g + weight_decay * p, updates, params), state
    inner = GradientTransformation(lambda params: EmptyState(), update)
    return inner if mask is None else masked(inner, mask)


def _mask_tree(mask, params):
    return mask(params) if callable(mask) else mask


def _select(mask_tree, tree, where: str):
    try:
        return tree_map(lambda m, x: x if m else MaskedNode(), mask_tree, tree)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{where}: the mask must be a pytree of bools with the params' structure (or a "
                         f"prefix of it), or a callable returning one; {e}") from e


def masked(inner: GradientTransformation, mask) -> GradientTransformation:
    """Applies ``inner`` only to the leaves where ``mask`` (a pytree of bools, or a callable of the params
    returning one) is True; the other updates pass unchanged."""
    _check_transform(inner, "masked")

    def init(params):
        m = _mask_tree(mask, params)
        return MaskedState(inner.init(_select(m, params, "masked")))

    def update(updates, state, params=None):
        m = _mask_tree(mask, updates if params is None else params)
        sub_u = _select(m, updates, "masked")
        sub_p = None if params is None else _select(m, params, "masked")
        new_u, new_s = inner.update(sub_u, state.inner_state, sub_p)
        out = tree_map(lambda mk, new, old: new if mk else old, m, new_u, updates,
                       is_leaf=lambda x: isinstance(x, MaskedNode))
        return out, MaskedState(new_s)
    return GradientTransformation(init, update)


def nadam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None) -> GradientTransformation:
    """NAdam: ``adam(..., nesterov=True)``."""
    return adam(learning_rate, b1, b2, eps, eps_root, mu_dtype, nesterov=True)


def nadamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, weight_decay=1e-4,
           mask=None) -> GradientTransformation:
    """NAdamW: ``adamw(..., nesterov=True)``."""
    return adamw(learning_rate, b1, b2, eps, eps_root, mu_dtype, weight_decay, mask, nesterov=True)


class PartitionState(NamedTuple):
    inner_states: Any  # label -> the state of that label's transformation (masked to its parameters)


def partition(transforms, param_labels) -> GradientTransformation:
    """A different transformation for each group of parameters: ``param_labels`` (a pytree of labels with the
    params' structure or a prefix of it, or a callable of the params returning one) names each parameter's group,
    ``transforms`` maps each label to its transformation (applied, masked, to that group only)."""
    for label, t in transforms.items():
        _check_transform(t, f"partition: transforms[{label!r}]")

    def labels_of(tree):
        return param_labels(tree) if callable(param_labels) else param_labels

    def groups(labels):
        found = set(tree_leaves(labels))
        if not found <= set(transforms):
            def listed(labels):  # (labels of any hashable type, sorted by their text)
                return "[" + ", ".join(sorted(map(repr, labels))) + "]"
            raise ValueError(f"partition: some parameters have no transformation: labels {listed(found)}, but "
                             f"transforms has keys {listed(transforms)}; give each label a transformation "
                             "(optim.set_to_zero() freezes a group)")
        return {label: masked(t, tree_map(lambda x, want=label: x == want, labels)) for label, t in transforms.items()}

    def init(params):
        return PartitionState({label: t.init(params) for label, t in groups(labels_of(params)).items()})

    def update(updates, state, params=None):
        new_states = {}
        for label, t in groups(labels_of(updates)).items():
            updates, new_states[label] = t.update(updates, state.inner_states[label], params)
        return updates, PartitionState(new_states)
    return GradientTransformation(init, update)


multi_transform = partition  # optax's older name
MultiTransformState = PartitionState


def set_to_zero() -> GradientTransformation:
    """Replaces every update by zeros (freezes the parameters it is applied to)."""
    return _stateless(lambda u, p: tree_map(jnp.zeros_like, u))


class ZeroNansState(NamedTuple):
    found_nan: Any


def zero_nans() -> GradientTransformation:
    """Replaces NaNs in the updates by 0; ``state.found_nan`` says, per leaf, whether the last update had one."""
    def init(params):
        return ZeroNansState(tree_map(lambda p: jnp.zeros([], bool), params))

    def update(updates, state, params=None):
        found = tree_map(lambda g: jnp.any(jnp.isnan(g)), updates)
        return tree_map(lambda g: jnp.where(jnp.isnan(g), jnp.zeros_like(g), g), updates), ZeroNansState(found)
    return GradientTransformation(init, update)
