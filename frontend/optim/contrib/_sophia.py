"""Sophia (Liu et al., 2023, arXiv:2305.14342): momentum preconditioned by an EMA of the Hessian's diagonal,
refreshed every few steps, with each update clipped. The diagonal comes from a transformation, by default
Hutchinson's estimator ``r * (H r)`` with Rademacher draws ``r``, which needs the loss as a function of the
params: ``update(grads, state, params, obj_fn=lambda p: loss(p, batch))``."""
from __future__ import annotations

import numbers
from typing import Any, NamedTuple

from ... import numpy as jnp
from ... import random
from ...ad.api import grad, jvp
from ...control.api import cond
from ...core.tree_util import tree_leaves, tree_map, tree_reduce
from ...lax.callbacks import debug_print
from ..transforms import (
    GradientTransformationExtraArgs,
    _bias_correction,
    _check_transform,
    _increment,
    _need_params,
    _zeros_count,
    add_decayed_weights,
    chain,
    scale_by_learning_rate,
    with_extra_args_support,
)
from ..tree_utils import tree_cast, tree_dtype, tree_random_like, tree_update_moment

__all__ = ["HutchinsonState", "SophiaState", "hutchinson_estimator_diag_hessian", "sophia"]


class HutchinsonState(NamedTuple):
    key: Any


class SophiaState(NamedTuple):
    count: Any
    mu: Any  # the momentum
    nu: Any  # the EMA of the Hessian's diagonal
    hessian_fn_state: Any


def hutchinson_estimator_diag_hessian(random_seed=None) -> GradientTransformationExtraArgs:
    """Hutchinson's (unbiased, noisy) estimate of the Hessian's diagonal, ``r * (H r)`` with ``r`` Rademacher
    draws from ``random_seed`` (a PRNG key; ``PRNGKey(0)`` by default). ``update`` ignores the gradients and
    needs ``params`` and ``obj_fn`` (the loss as a function of the params alone)."""
    def init(params):
        return HutchinsonState(random.PRNGKey(0) if random_seed is None else random_seed)

    def update(updates, state, params=None, obj_fn=None, **extra_args):
        if params is None:
            raise ValueError("hutchinson_estimator_diag_hessian: update needs the params; call "
                             "update(grads, state, params, obj_fn=...).")
        if obj_fn is None:
            raise ValueError("hutchinson_estimator_diag_hessian: update needs obj_fn, the loss as a function of the "
                             "params alone: update(grads, state, params, obj_fn=lambda p: loss_fn(p, batch)).")
        key, subkey = random.split(state.key)
        signs = tree_random_like(subkey, params, random.rademacher, dtype=jnp.float32)
        signs = tree_cast(signs, tree_dtype(params, "lowest"))
        hvp = jvp(grad(obj_fn), (params,), (signs,))[1]
        return tree_map(lambda h, r: h * r, hvp, signs), HutchinsonState(key)
    return GradientTransformationExtraArgs(init, update)


def _print_win_rate(win_rate):
    debug_print("Sophia optimizer win rate: {}", win_rate)


def scale_by_sophia(b1=0.965, b2=0.99, eps=1e-8, gamma=0.01, clip_threshold=1.0, update_interval=10,
                    hessian_diagonal_fn=None, mu_dtype=None, verbose: bool = False,
                    print_win_rate_every_n_steps=0) -> GradientTransformationExtraArgs:
    """Sophia's rescaling: the bias-corrected momentum over ``max(gamma * nu, eps)``, clipped to
    ``[-clip_threshold, clip_threshold]`` (unless None); ``nu`` is refreshed from ``hessian_diagonal_fn``
    (Hutchinson's estimator by default) every ``update_interval`` steps, starting with the first."""
    if isinstance(update_interval, bool) or not isinstance(update_interval, numbers.Integral) or update_interval < 1:
        raise ValueError(f"sophia: update_interval must be an int >= 1 (the steps between Hessian refreshes), got "
                         f"{update_interval!r}.")
    if verbose and clip_threshold is not None and not print_win_rate_every_n_steps >= 1:
        raise ValueError(f"sophia: verbose=True prints the win rate every print_win_rate_every_n_steps steps, which "
                         f"must then be >= 1, got {print_win_rate_every_n_steps!r}.")
    if hessian_diagonal_fn is None:
        hessian_diagonal_fn = hutchinson_estimator_diag_hessian()
    _check_transform(hessian_diagonal_fn, "sophia: hessian_diagonal_fn")
    hessian_diagonal_fn = with_extra_args_support(hessian_diagonal_fn)
    mu_dtype = None if mu_dtype is None else jnp.dtype(mu_dtype)

    def init(params):
        return SophiaState(_zeros_count(), tree_map(lambda p: jnp.zeros_like(p, dtype=mu_dtype), params),
                           tree_map(jnp.zeros_like, params), hessian_diagonal_fn.init(params))

    def update(updates, state, params=None, **hess_fn_kwargs):
        _need_params(params, "sophia")
        count_inc = _increment(state.count)
        grads = updates
        mu = tree_update_moment(updates, state.mu, b1, 1)
        mu_hat = _bias_correction(mu, b1, count_inc)
        updates = tree_map(lambda m, h: m / jnp.maximum(gamma * h, eps), mu_hat, state.nu)
        if clip_threshold is not None:
            if verbose:
                not_clipped = tree_reduce(lambda x, y: x + y,
                                          tree_map(lambda u: jnp.sum(jnp.abs(u) < clip_threshold), updates))
                win_rate = not_clipped / sum(jnp.size(u) for u in tree_leaves(updates))
                cond(count_inc % print_win_rate_every_n_steps == 0, lambda: _print_win_rate(win_rate), lambda: None)
            updates = tree_map(lambda u: jnp.clip(u, -clip_threshold, clip_threshold), updates)

        def refresh(hess_state, nu):
            diag, hess_state = hessian_diagonal_fn.update(grads, hess_state, params=params, **hess_fn_kwargs)
            return hess_state, tree_update_moment(diag, nu, b2, 1)

        hess_state, nu = cond(jnp.equal(state.count % update_interval, 0), refresh, lambda h, n: (h, n),
                              state.hessian_fn_state, state.nu)
        return updates, SophiaState(count_inc, tree_cast(mu, mu_dtype), nu, hess_state)
    return GradientTransformationExtraArgs(init, update)


def sophia(learning_rate, b1=0.965, b2=0.99, eps=1e-8, weight_decay=1e-4, weight_decay_mask=None, gamma=0.01,
           clip_threshold=1.0, update_interval=10, hessian_diagonal_fn=None, mu_dtype=None, verbose: bool = False,
           print_win_rate_every_n_steps=0) -> GradientTransformationExtraArgs:
    """Sophia: Sophia's rescaling (:func:`scale_by_sophia`), decoupled weight decay (on the
    ``weight_decay_mask``ed leaves), then ``-learning_rate``. The default Hessian estimator needs
    ``update(grads, state, params, obj_fn=...)``."""
    return chain(scale_by_sophia(b1, b2, eps, gamma, clip_threshold, update_interval, hessian_diagonal_fn, mu_dtype,
                                 verbose, print_win_rate_every_n_steps),
                 add_decayed_weights(weight_decay, weight_decay_mask), scale_by_learning_rate(learning_rate))
