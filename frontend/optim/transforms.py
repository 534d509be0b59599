"""Gradient transformations (as optax's): ``GradientTransformation(init, update)`` pairs whose states are
pytrees (NamedTuples of arrays), so they pass through kiln.jit, kiln.vmap and buffer donation."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Protocol

from .. import numpy as jnp
from ..core.tree_util import register_pytree_node_class, tree_leaves, tree_map, tree_structure
from ..driver.jit import jit

__all__ = [
    "GradientTransformation", "GradientTransformationExtraArgs", "with_extra_args_support", "EmptyState",
    "ScaleByScheduleState", "TraceState", "ScaleByAdamState",
    "MaskedState", "MaskedNode", "identity", "apply_updates", "chain", "scale", "scale_by_learning_rate",
    "scale_by_schedule", "trace", "scale_by_adam", "sgd", "adam", "adamw", "clip", "clip_by_global_norm",
    "add_decayed_weights", "masked", "global_norm", "nadam", "nadamw", "set_to_zero", "zero_nans", "ZeroNansState",
    "partition", "PartitionState", "multi_transform", "MultiTransformState",
    "stateless", "stateless_with_tree_map", "init_empty_state", "TransformInitFn", "TransformUpdateFn",
    "TransformUpdateExtraArgsFn",
]


class TransformInitFn(Protocol):
    """``init(params) -> state``."""
    def __call__(self, params: Any) -> Any: ...


class TransformUpdateFn(Protocol):
    """``update(updates, state, params=None) -> (updates, state)``."""
    def __call__(self, updates: Any, state: Any, params: Optional[Any] = None) -> tuple[Any, Any]: ...


class TransformUpdateExtraArgsFn(Protocol):
    """``update(updates, state, params=None, **extra_args) -> (updates, state)``."""
    def __call__(self, updates: Any, state: Any, params: Optional[Any] = None, **extra_args: Any) -> tuple[Any, Any]:
        ...


class GradientTransformation(NamedTuple):
    """``init(params) -> state`` and ``update(updates, state, params=None) -> (updates, state)``."""
    init: Callable
    update: Callable


class GradientTransformationExtraArgs(GradientTransformation):
    """A transformation whose ``update`` also takes keyword arguments beyond ``params`` (``value=``, ``grad=``,
    ``value_fn=`` for line searches): ``update(updates, state, params=None, **extra_args)``."""


def with_extra_args_support(t: GradientTransformation) -> GradientTransformationExtraArgs:
    """``t`` as a transformation whose update takes (and ignores) extra keyword arguments."""
    _check_transform(t, "with_extra_args_support")
    if isinstance(t, GradientTransformationExtraArgs):
        return t

    def update(updates, state, params=None, **extra_args):
        return t.update(updates, state, params)
    return GradientTransformationExtraArgs(t.init, update)


class EmptyState(NamedTuple):
    """The state of a stateless transformation."""


def init_empty_state(params) -> EmptyState:
    """The ``init`` of a stateless transformation: ``EmptyState()`` whatever the params."""
    return EmptyState()


@register_pytree_node_class
class ParamsPlaceholder:
    """Stands in for the parameters in an ``init`` call (tree_utils.tree_map_params): a pytree without leaves, so
    it survives the tree maps of ``init`` and marks where copies of the parameters sit in the state; ``masked``
    has no mask to apply to it."""

    def tree_flatten(self):
        return (), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls()


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


def _need_params(params, where: str) -> None:
    """The error of a transformation whose update reads the params, called without them."""
    if params is None:
        raise ValueError(f"{where}: update needs the params; call optimizer.update(grads, state, params).")


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


def chain(*transforms: GradientTransformation) -> GradientTransformationExtraArgs:
    """Applies ``transforms`` in order; the state is the tuple of their states. Extra keyword arguments of
    ``update`` go to the transformations that take them (:func:`with_extra_args_support`)."""
    for i, t in enumerate(transforms):
        _check_transform(t, f"chain: argument {i}")
    transforms = tuple(with_extra_args_support(t) for t in transforms)

    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None, **extra_args):
        if len(state) != len(transforms):
            raise ValueError(f"chain: the state has {len(state)} parts but the chain has {len(transforms)} "
                             "transformations; pass the state that this chain's init returned.")
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params, **extra_args)
            new_state.append(s)
        return updates, tuple(new_state)
    return GradientTransformationExtraArgs(init, update)


def _stateless(fn: Callable) -> GradientTransformation:
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None: (fn(updates, params), state))


def stateless(f: Callable) -> GradientTransformation:
    """The transformation ``f(updates, params) -> updates`` (params None when update is called without them),
    with an empty state."""
    if not callable(f):
        raise TypeError(f"stateless: f must be a callable (updates, params) -> updates, got {type(f).__name__}.")
    return GradientTransformation(init_empty_state, lambda updates, state, params=None: (f(updates, params),
                                                                                          EmptyState()))


def stateless_with_tree_map(f: Callable) -> GradientTransformation:
    """The transformation applying ``f(update_leaf, param_leaf)`` leaf by leaf (``param_leaf`` None when update is
    called without params), with an empty state."""
    if not callable(f):
        raise TypeError(f"stateless_with_tree_map: f must be a callable (update, param) -> update, got "
                        f"{type(f).__name__}.")

    def update(updates, state, params=None):
        if params is None:
            return tree_map(lambda u: f(u, None), updates), EmptyState()
        return tree_map(f, updates, params), EmptyState()
    return GradientTransformation(init_empty_state, update)


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
    """Scales by ``-learning_rate`` (``+`` when ``flip_sign`` is False); a callable is a schedule, None no
    scaling."""
    if learning_rate is None:
        return identity()  # (as optax: optimizers built without a learning rate, adafactor(None))
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


class WeightDecaySchedule(NamedTuple):
    """add_decayed_weights' state when the weight decay is a schedule: the step count it is read at."""
    count: Any


def add_decayed_weights(weight_decay=0.0, mask=None) -> GradientTransformation:
    """Adds ``weight_decay * params`` to the updates (on the leaves where ``mask`` is True); ``weight_decay`` may
    be a schedule (a function of the step count). A constant 0 leaves the updates as they are."""
    scheduled = callable(weight_decay)

    def init(params):
        return WeightDecaySchedule(_zeros_count()) if scheduled else EmptyState()

    def update(updates, state, params=None):
        _need_params(params, "add_decayed_weights")
        new_state = WeightDecaySchedule(_increment(state.count)) if scheduled else state
        if isinstance(weight_decay, (int, float)) and weight_decay == 0.0:
            return updates, new_state  # (as optax: not even 0 * p, which would turn an inf parameter into nan)
        rate = weight_decay(state.count) if scheduled else weight_decay
        return tree_map(lambda g, p: g + rate * p, updates, params), new_state
    inner = GradientTransformation(init, update)
    return inner if mask is None else masked(inner, mask)


def _mask_tree(mask, params):
    return mask(params) if callable(mask) else mask


def _select(mask_tree, tree, where: str):
    try:
        return tree_map(lambda m, x: x if m else MaskedNode(), mask_tree, tree)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{where}: the mask must be a pytree of bools with the params' structure (or a "
                         f"prefix of it), or a callable returning one; {e}") from e


def _mask_extra_args(extra_args: dict, updates, mask_tree, compatible: bool) -> dict:
    # (as optax's): with mask_compatible_extra_args, extra arguments shaped like the updates are masked too
    if not compatible:
        return extra_args
    structure = tree_structure(updates)
    return {k: _select(mask_tree, v, "masked") if tree_structure(v) == structure else v
            for k, v in extra_args.items()}


def masked(inner: GradientTransformation, mask, *,
           mask_compatible_extra_args: bool = False) -> GradientTransformationExtraArgs:
    """Applies ``inner`` only to the leaves where ``mask`` (a pytree of bools, or a callable of the updates
    returning one) is True; the other updates pass unchanged. Extra keyword arguments of ``update`` go to
    ``inner`` (masked too, when ``mask_compatible_extra_args`` and they have the updates' structure)."""
    _check_transform(inner, "masked")
    inner = with_extra_args_support(inner)

    def init(params):
        if isinstance(params, ParamsPlaceholder):
            return MaskedState(inner.init(params))
        m = _mask_tree(mask, params)
        return MaskedState(inner.init(_select(m, params, "masked")))

    def update(updates, state, params=None, **extra_args):
        m = _mask_tree(mask, updates)  # (of the updates, as optax's)
        sub_extra = _mask_extra_args(extra_args, updates, m, mask_compatible_extra_args)
        sub_u = _select(m, updates, "masked")
        sub_p = None if params is None else _select(m, params, "masked")
        new_u, new_s = inner.update(sub_u, state.inner_state, sub_p, **sub_extra)
        out = tree_map(lambda mk, new, old: new if mk else old, m, new_u, updates,
                       is_leaf=lambda x: isinstance(x, MaskedNode))
        return out, MaskedState(new_s)
    return GradientTransformationExtraArgs(init, update)


def nadam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None) -> GradientTransformation:
    """NAdam: ``adam(..., nesterov=True)``."""
    return adam(learning_rate, b1, b2, eps, eps_root, mu_dtype, nesterov=True)


def nadamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, weight_decay=1e-4,
           mask=None) -> GradientTransformation:
    """NAdamW: ``adamw(..., nesterov=True)``."""
    return adamw(learning_rate, b1, b2, eps, eps_root, mu_dtype, weight_decay, mask, nesterov=True)


class PartitionState(NamedTuple):
    inner_states: Any  # label -> the state of that label's transformation (masked to its parameters)


def partition(transforms, param_labels, *, mask_compatible_extra_args: bool = False
              ) -> GradientTransformationExtraArgs:
    """A different transformation for each group of parameters: ``param_labels`` (a pytree of labels with the
    params' structure or a prefix of it, or a callable of the params returning one) names each parameter's group,
    ``transforms`` maps each label to its transformation (applied, masked, to that group only). Extra keyword
    arguments of ``update`` go to every group's transformation (see :func:`masked`)."""
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
        return {label: masked(t, tree_map(lambda x, want=label: x == want, labels),
                              mask_compatible_extra_args=mask_compatible_extra_args)
                for label, t in transforms.items()}

    def init(params):
        return PartitionState({label: t.init(params) for label, t in groups(labels_of(params)).items()})

    def update(updates, state, params=None, **extra_args):
        new_states = {}
        for label, t in groups(labels_of(updates)).items():
            updates, new_states[label] = t.update(updates, state.inner_states[label], params, **extra_args)
        return updates, PartitionState(new_states)
    return GradientTransformationExtraArgs(init, update)


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
