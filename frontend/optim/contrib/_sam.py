"""Sharpness-aware minimisation (Foret et al., 2021), as optax's ``sam``: an adversarial optimizer walks the
params uphill for ``sync_period - 1`` steps; the outer optimizer then applies the gradient found there to the
params cached at the start."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import lax
from ... import numpy as jnp
from ...core.tree_util import tree_map
from ..transforms import GradientTransformationExtraArgs, _check_transform, _need_params, apply_updates

__all__ = ["SAMState", "sam"]


class SAMState(NamedTuple):
    steps_since_sync: Any
    opt_state: Any  # the outer optimizer's
    adv_state: Any  # the adversarial optimizer's
    cache: Any  # the params at the last synchronisation (None in opaque mode)


def _pick(cond, if_true, if_false):
    # arithmetic selection, as optax's (it rounds alike and keeps the integer counts in the states integers)
    return tree_map(lambda t, f: cond * t + (1 - cond) * f, if_true, if_false)


def _neg(tree):
    return tree_map(lambda x: -x, tree)


def sam(optimizer, adv_optimizer, sync_period: int = 2, reset_state: bool = True, opaque_mode: bool = False,
        batch_axis_name=None) -> GradientTransformationExtraArgs:
    """SAM. In the default (transparent) mode every call is one step: ``sync_period - 1`` adversarial steps
    (their updates negated: ascent), then one outer step whose update also moves the params back to the cache.
    With ``opaque_mode`` each call does all of them, asking ``update(..., grad_fn=fn)`` for the gradients at
    the adversarial params (``fn(params, i)``)."""
    _check_transform(optimizer, "sam: optimizer")
    _check_transform(adv_optimizer, "sam: adv_optimizer")
    if sync_period < 1:
        raise ValueError(f"sam: sync_period must be >= 1, got {sync_period}.")

    def init(params):
        return SAMState(jnp.zeros([], jnp.int32), optimizer.init(params), adv_optimizer.init(params),
                        None if opaque_mode else params)

    def transparent_update(updates, state, params=None, *, grad_fn=None, **extra_args):
        _need_params(params, "sam")
        first = state.steps_since_sync == 0
        last = state.steps_since_sync == sync_period - 1
        adv_updates, adv_state = adv_optimizer.update(updates, state.adv_state, params)
        adv_updates = _neg(adv_updates)
        opt_updates, opt_state = optimizer.update(updates, state.opt_state, state.cache)
        opt_updates = tree_map(lambda c, p, u: c - p + u, state.cache, params, opt_updates)
        cache = _pick(first, params, state.cache)
        new_updates = _pick(last, opt_updates, adv_updates)
        kept_adv = adv_optimizer.init(params) if reset_state else state.adv_state
        adv_state = _pick(last, kept_adv, adv_state)
        opt_state = _pick(last, opt_state, state.opt_state)
        return new_updates, SAMState((state.steps_since_sync + 1) % sync_period, opt_state, adv_state, cache)

    def opaque_update(updates, state, params=None, *, grad_fn=None, **extra_args):
        if grad_fn is None:
            raise ValueError("sam: with opaque_mode=True, update needs grad_fn=fn, fn(params, i) returning the "
                             "gradients at params; call optimizer.update(grads, state, params, grad_fn=fn).")
        if params is None:
            raise ValueError("sam: update needs the params; call optimizer.update(grads, state, params, "
                             "grad_fn=fn).")
        adv_params, adv_updates, adv_state = params, updates, state.adv_state
        for i in range(sync_period - 1):
            adv_updates, adv_state = adv_optimizer.update(adv_updates, adv_state, adv_params)
            adv_params = apply_updates(adv_params, _neg(adv_updates))
            adv_updates = grad_fn(adv_params, i)
            if batch_axis_name is not None:
                adv_updates = lax.pmean(adv_updates, axis_name=batch_axis_name)
        if reset_state:
            adv_state = adv_optimizer.init(params)
        new_updates, opt_state = optimizer.update(adv_updates, state.opt_state, params)
        return new_updates, SAMState(jnp.zeros([], jnp.int32), opt_state, adv_state, None)

    return GradientTransformationExtraArgs(init, opaque_update if opaque_mode else transparent_update)
