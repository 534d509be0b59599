"""``reduce_on_plateau``: scales the updates down by ``factor`` when the (averaged) loss stops improving."""
from __future__ import annotations

from typing import Any, NamedTuple

from ... import numpy as jnp
from ...control.api import cond
from ...core.tree_util import tree_map
from ..transforms import GradientTransformationExtraArgs, _increment
from ..tree_utils import tree_dtype

__all__ = ["ReduceLROnPlateauState", "reduce_on_plateau"]


class ReduceLROnPlateauState(NamedTuple):
    scale: Any
    best_value: Any
    plateau_count: Any
    cooldown_count: Any
    count: Any  # the losses accumulated into avg_value
    avg_value: Any


def _check_args(factor, rtol, atol):
    if not 0.0 < factor < 1.0:
        raise ValueError(f"reduce_on_plateau: factor must be in (0, 1), got factor={factor}.")
    if rtol < 0.0 or atol < 0.0:
        raise ValueError(f"reduce_on_plateau: rtol and atol must be >= 0, got rtol={rtol}, atol={atol}.")
    if rtol == 0.0 and atol == 0.0:
        raise ValueError("reduce_on_plateau: rtol or atol must be positive (both are 0, so no loss would count "
                         "as an improvement).")
    if rtol > 1.0:
        raise ValueError(f"reduce_on_plateau: rtol must be <= 1, got rtol={rtol}.")


def reduce_on_plateau(factor: float = 0.1, patience=10, rtol: float = 1e-4, atol: float = 0.0, cooldown=0,
                      accumulation_size=1, min_scale=0.0) -> GradientTransformationExtraArgs:
    """Multiplies the updates by ``state.scale``. ``update(..., value=loss)`` averages the losses over
    ``accumulation_size`` calls; an average that is not below ``(1 - rtol) * best - atol`` counts towards the
    ``patience`` limit, at which the scale is multiplied by ``factor`` (not below ``min_scale``), and then
    ``cooldown`` averages are not counted."""
    _check_args(factor, rtol, atol)

    def init(params):
        high = tree_dtype(params, "highest")
        return ReduceLROnPlateauState(scale=jnp.asarray(1.0, dtype=tree_dtype(params, "lowest")),
                                      best_value=jnp.asarray(float("inf"), dtype=high),
                                      plateau_count=jnp.asarray(0, jnp.int32), cooldown_count=jnp.asarray(0, jnp.int32),
                                      count=jnp.asarray(0, jnp.int32), avg_value=jnp.asarray(0.0, high))

    def update_scale(state):
        avg = state.avg_value
        improved = jnp.where(avg < (1 - rtol) * state.best_value - atol, 1, 0)
        best = jnp.where(improved, avg.astype(state.best_value.dtype), state.best_value)
        plateau = jnp.where(improved, 0, _increment(state.plateau_count))

        def in_cooldown():
            return jnp.asarray(0, jnp.int32), state.scale, state.cooldown_count - 1

        def not_in_cooldown():
            hit = plateau == patience
            scale = jnp.maximum(jnp.where(hit, state.scale * factor, state.scale), min_scale)
            return jnp.where(hit, 0, plateau), scale, jnp.where(hit, cooldown, 0).astype(jnp.int32)

        plateau, scale, cool = cond(state.cooldown_count > 0, in_cooldown, not_in_cooldown)
        return ReduceLROnPlateauState(scale, best.astype(state.best_value.dtype), plateau, cool,
                                      jnp.asarray(0, jnp.int32), jnp.asarray(0.0, avg.dtype))

    def update(updates, state, params=None, *, value=None, **extra_args):
        if value is None:
            raise TypeError("reduce_on_plateau: update needs the loss; call optimizer.update(updates, state, "
                            "params, value=loss).")
        count = _increment(state.count)
        avg = (state.count * state.avg_value + jnp.astype(value, state.avg_value.dtype)) / count
        state = state._replace(avg_value=avg.astype(state.avg_value.dtype), count=count)
        state = cond(count == accumulation_size, update_scale, lambda s: s, state)
        return tree_map(lambda g: state.scale * g, updates), state
    return GradientTransformationExtraArgs(init, update)
