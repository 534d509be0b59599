"""``optimizers``: first-order optimizers over pytrees, as JAX's ``jax.example_libraries.optimizers``.

An optimizer is a triple ``(init_fun, update_fun, get_params)``: ``init_fun(params) -> opt_state``,
``update_fun(step, grads, opt_state) -> opt_state``, ``get_params(opt_state) -> params``. The ``optimizer``
decorator lifts a triple written for one array to pytrees of arrays; the state it builds,
``OptimizerState``, is a pytree (it passes through ``jit``).
"""
from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any, Callable, NamedTuple

import numpy as np

from .. import numpy as jnp
from ..core import tree_util

__all__ = [
    "Array", "InitFn", "JoinPoint", "Optimizer", "OptimizerState", "Params", "ParamsFn", "Schedule", "State", "Step",
    "UpdateFn", "Updates", "adagrad", "adam", "adamax", "clip_grads", "constant",
    "exponential_decay", "inverse_time_decay", "l2_norm", "make_schedule", "momentum", "nesterov", "optimizer",
    "pack_optimizer_state", "piecewise_constant", "polynomial_decay", "rmsprop", "rmsprop_momentum", "sgd", "sm3",
    "unpack_optimizer_state",
]

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
# The flat per-leaf states are the children; the tree structures ride along as static data.
tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))


# The type names JAX's module defines, for annotations in ported code.
Array = Any
Params = Any  # a pytree of arrays
State = Any  # one leaf's optimizer state
Updates = Params  # gradients: the parameters' structure
Step = int
InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]


class Optimizer(NamedTuple):
    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


Schedule = Callable[[Step], float]


def optimizer(opt_maker: Callable) -> Callable:
    """Decorator: turn a maker of an ``(init, update, get_params)`` triple on single arrays into a maker of
    the triple on pytrees of arrays (state: an ``OptimizerState``)."""
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = tree_util.tree_flatten(x0_tree)
            flat = [tree_util.tree_flatten(init(x0)) for x0 in x0_flat]
            return OptimizerState([f[0] for f in flat], tree, [f[1] for f in flat])

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, tree2 = tree_util.tree_flatten(grad_tree)
            if tree2 != tree:
                raise TypeError("optimizer update_fun: the gradient tree's structure differs from that of the "
                                f"parameters the optimizer was initialized with: parameters {tree}, gradients "
                                f"{tree2}; pass gradients of the same pytree as get_params(opt_state)")
            new_flat, new_subtrees = [], []
            for g, sub, leaves in zip(grad_flat, subtrees, states_flat):
                leaves2, sub2 = tree_util.tree_flatten(update(i, g, tree_util.tree_unflatten(sub, leaves)))
                if sub2 != sub:
                    raise TypeError("optimizer update_fun: the per-array update returned a state of structure "
                                    f"{sub2}, not the structure it was given, {sub}; an update must return its "
                                    "state in the same structure as init made it")
                new_flat.append(leaves2)
                new_subtrees.append(sub2)
            return OptimizerState(new_flat, tree, new_subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            params = [get_params(tree_util.tree_unflatten(sub, leaves)) for sub, leaves in zip(subtrees, states_flat)]
            return tree_util.tree_unflatten(tree, params)

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


def _state_init(n_slots: int) -> Callable:
    """``init`` for a rule whose state is the array and ``n_slots`` zero arrays like it."""
    def init(x0):
        return (x0,) + tuple(jnp.zeros_like(x0) for _ in range(n_slots))
    return init


def _params_of(state):
    return state[0]


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x <- x - step_size(i) * g``."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0

    def update(i, g, x):
        return x - step_size(i) * g

    def get_params(x):
        return x
    return Optimizer(init, update, get_params)


@optimizer
def momentum(step_size, mass: float):
    """Momentum: ``v <- mass * v + g``; ``x <- x - step_size(i) * v``."""
    step_size = make_schedule(step_size)

    init = _state_init(1)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - step_size(i) * v, v

    return init, update, _params_of


@optimizer
def nesterov(step_size, mass: float):
    """Nesterov momentum: ``v <- mass * v + g``; ``x <- x - step_size(i) * (mass * v + g)``."""
    step_size = make_schedule(step_size)

    init = _state_init(1)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - step_size(i) * (mass * v + g), v

    return init, update, _params_of


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad with momentum: ``G <- G + g^2``; ``m <- (1-momentum) g/sqrt(G) + momentum m``;
    ``x <- x - step_size(i) m`` (``g/sqrt(G)`` is 0 where ``G`` is 0)."""
    step_size = make_schedule(step_size)

    init = _state_init(2)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        inv = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return init, update, _params_of


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: ``a <- gamma a + (1-gamma) g^2``; ``x <- x - step_size(i) g / sqrt(a + eps)``."""
    step_size = make_schedule(step_size)

    init = _state_init(1)

    def update(i, g, state):
        x, avg = state
        avg = avg * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg + eps), avg

    return init, update, _params_of


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum: ``a <- gamma a + (1-gamma) g^2``;
    ``m <- momentum m + step_size(i) g / sqrt(a + eps)``; ``x <- x - m``."""
    step_size = make_schedule(step_size)

    init = _state_init(2)

    def update(i, g, state):
        x, avg, mom = state
        avg = avg * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg + eps)
        return x - mom, avg, mom

    return init, update, _params_of


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma & Ba): bias-corrected first and second moments."""
    step_size = make_schedule(step_size)

    init = _state_init(2)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v

    return init, update, _params_of


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax (Adam with the infinity norm): ``u <- max(b2 u, |g|)``."""
    step_size = make_schedule(step_size)

    init = _state_init(2)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    return init, update, _params_of


def _broadcast_along(ndim: int, v: Any, axis: int) -> Any:
    index = [None] * ndim
    index[axis] = slice(None)
    return v[tuple(index)]


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al.): one accumulator vector per axis instead of a full second-moment array."""
    step_size = make_schedule(step_size)

    def init(x0):
        x_shape = jnp.shape(x0)
        x0 = jnp.atleast_1d(x0)
        vs = [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, jnp.zeros_like(x0), vs, x_shape

    def update(i, g, state):
        x, m, vs, x_shape = state
        g = jnp.reshape(g, x.shape)
        accum = functools.reduce(jnp.minimum, [_broadcast_along(x.ndim, v, k) for k, v in enumerate(vs)])
        accum = accum + jnp.square(g)
        inv = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        x = x - step_size(i) * m
        vs = [jnp.max(accum, axis=tuple(a for a in range(x.ndim) if a != k)) for k in range(x.ndim)]
        return x, m, vs, x_shape

    def get_params(state):
        x, _, _, x_shape = state
        return jnp.reshape(x, x_shape)
    return init, update, get_params


# Step-size schedules: functions of the step number.

def constant(step_size) -> Schedule:
    """The same step size at every step."""
    def schedule(i):
        return step_size
    return schedule


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
    """``step_size * decay_rate ** (i / decay_steps)``."""
    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False) -> Schedule:
    """``step_size / (1 + decay_rate * i / decay_steps)`` (``floor(i / decay_steps)`` with staircase)."""
    if staircase:
        def schedule(i):
            return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    else:
        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0) -> Schedule:
    """From ``step_size`` to ``final_step_size`` over ``decay_steps`` as ``(1 - i/decay_steps) ** power``,
    then constant."""
    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        mult = (1 - step_num / decay_steps) ** power
        return mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """``values[k]`` for steps in ``(boundaries[k-1], boundaries[k]]``; ``len(values) == len(boundaries) + 1``."""
    b_np, v_np = np.asarray(boundaries), np.asarray(values)
    if not b_np.ndim == v_np.ndim == 1:
        raise ValueError(f"piecewise_constant: boundaries (shape {b_np.shape}) and values (shape {v_np.shape}) "
                         "must both be 1-D sequences")
    if b_np.shape[0] != v_np.shape[0] - 1:
        raise ValueError(f"piecewise_constant: {b_np.shape[0]} boundaries need {b_np.shape[0] + 1} values, got "
                         f"{v_np.shape[0]}; values must be one longer than boundaries")
    b, v = jnp.array(boundaries), jnp.array(values)

    def schedule(i):
        return v[jnp.sum(i > b)]
    return schedule


def make_schedule(scalar_or_schedule: Any) -> Schedule:
    """A schedule as is, or ``constant(x)`` for a scalar ``x``."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(f"make_schedule: step size must be a scalar or a function of the step number, got "
                    f"{type(scalar_or_schedule).__name__} of shape {jnp.shape(scalar_or_schedule)}")


def l2_norm(tree: Any) -> Any:
    """The Euclidean norm of all the leaves of ``tree`` together."""
    leaves = tree_util.tree_leaves(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree: Any, max_norm: Any) -> Any:
    """Scale ``grad_tree`` down to global norm ``max_norm`` where its norm exceeds it."""
    norm = l2_norm(grad_tree)
    return tree_util.tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """A leaf marker holding a per-parameter state subtree (see ``unpack_optimizer_state``)."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """The state as the parameters' pytree with a ``JoinPoint`` (holding that parameter's state) at each
    leaf; for serialization. ``pack_optimizer_state`` inverts it."""
    states_flat, tree, subtrees = opt_state
    marks = [JoinPoint(tree_util.tree_unflatten(sub, leaves)) for sub, leaves in zip(subtrees, states_flat)]
    return tree_util.tree_unflatten(tree, marks)


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """The inverse of ``unpack_optimizer_state``."""
    marks, tree = tree_util.tree_flatten(marked_pytree)
    for m in marks:
        if not isinstance(m, JoinPoint):
            raise TypeError(f"pack_optimizer_state: leaf {m!r:.60} is not a JoinPoint; pass the pytree that "
                            "unpack_optimizer_state returned")
    flat = [tree_util.tree_flatten(m.subtree) for m in marks]
    return OptimizerState([f[0] for f in flat], tree, [f[1] for f in flat])
