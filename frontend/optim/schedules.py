"""Learning-rate schedules (as optax's): callables of the step count, traceable under kiln.jit."""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Iterable, NamedTuple, Protocol, Sequence, runtime_checkable

from .. import numpy as jnp
from .transforms import _increment, _zeros_count

__all__ = [
    "constant_schedule", "linear_schedule", "polynomial_schedule", "exponential_decay",
    "cosine_decay_schedule", "warmup_cosine_decay_schedule", "join_schedules", "piecewise_constant_schedule",
    "warmup_exponential_decay_schedule", "warmup_constant_schedule", "piecewise_interpolate_schedule",
    "linear_onecycle_schedule", "cosine_onecycle_schedule", "sgdr_schedule",
    "StatefulSchedule", "WrappedSchedule",
]

Schedule = Callable


@runtime_checkable
class StatefulSchedule(Protocol):
    """A schedule with a state of its own: ``init() -> state``, ``update(state, **extra_args) -> state`` and
    ``__call__(state, **extra_args) -> value`` (inject_hyperparams takes these as well as plain schedules)."""

    def init(self) -> Any: ...

    def update(self, state, **extra_args) -> Any: ...

    def __call__(self, state, **extra_args) -> Any: ...


class WrappedScheduleState(NamedTuple):
    count: Any


class WrappedSchedule:
    """A plain schedule (a function of the step count) as a :class:`StatefulSchedule` whose state is that count."""

    def __init__(self, schedule_fn: Schedule):
        if not callable(schedule_fn):
            raise TypeError(f"WrappedSchedule: schedule_fn must be a callable of the step count, got "
                            f"{type(schedule_fn).__name__}.")
        self.schedule_fn = schedule_fn

    def init(self) -> WrappedScheduleState:
        return WrappedScheduleState(_zeros_count())

    def update(self, state: WrappedScheduleState, **extra_args) -> WrappedScheduleState:
        return WrappedScheduleState(_increment(state.count))

    def __call__(self, state: WrappedScheduleState, **extra_args):
        return self.schedule_fn(state.count)


def constant_schedule(value) -> Schedule:
    """The schedule that always returns ``value``."""
    return lambda count: value


def _begin_at_zero_if_negative(fname: str, transition_begin: int) -> int:
    """optax's handling of a negative ``transition_begin``: the transition starts at step 0 (with a warning here,
    where optax logs one)."""
    if transition_begin < 0:
        warnings.warn(f"{fname}: transition_begin must be >= 0, got {transition_begin}; the transition starts at "
                      "step 0 (as optax's does). Pass the step at which it starts.", UserWarning, stacklevel=3)
        return 0
    return transition_begin


def polynomial_schedule(init_value, end_value, power, transition_steps: int, transition_begin: int = 0) -> Schedule:
    """From ``init_value`` to ``end_value`` over ``transition_steps`` steps (after ``transition_begin``), as
    ``(init - end) * (1 - t / transition_steps) ** power + end``; constant outside the transition."""
    if transition_steps <= 0:
        # optax warns and returns a constant schedule; kiln does the same without a warning.
        return constant_schedule(init_value)
    transition_begin = _begin_at_zero_if_negative("polynomial_schedule", transition_begin)

    def schedule(count):
        c = jnp.clip(jnp.asarray(count) - transition_begin, 0, transition_steps)
        frac = 1 - c / transition_steps
        return (init_value - end_value) * (frac ** power) + end_value
    return schedule


def linear_schedule(init_value, end_value, transition_steps: int, transition_begin: int = 0) -> Schedule:
    """Linear interpolation from ``init_value`` to ``end_value`` (``polynomial_schedule`` with power 1)."""
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def exponential_decay(init_value, transition_steps: int, decay_rate, transition_begin: int = 0,
                      staircase: bool = False, end_value=None) -> Schedule:
    """``init_value * decay_rate ** ((count - transition_begin) / transition_steps)`` (floored exponent when
    ``staircase``), ``init_value`` before ``transition_begin``, bounded by ``end_value`` when given."""
    if transition_steps <= 0:
        return constant_schedule(init_value)
    if decay_rate == 0:
        raise ValueError("exponential_decay: decay_rate must be different from 0; use constant_schedule(0.0) "
                         "for a zero learning rate.")
    transition_begin = _begin_at_zero_if_negative("exponential_decay", transition_begin)

    def schedule(count):
        c = jnp.asarray(count) - transition_begin
        p = c / transition_steps
        if staircase:
            p = jnp.floor(p)
        out = jnp.where(c <= 0, init_value, init_value * jnp.power(decay_rate, p))
        if end_value is not None:
            out = jnp.maximum(out, end_value) if decay_rate < 1 else jnp.minimum(out, end_value)
        return out
    return schedule


def cosine_decay_schedule(init_value, decay_steps: int, alpha=0.0, exponent=1.0) -> Schedule:
    """``init_value * ((1 - alpha) * (0.5 * (1 + cos(pi * min(count, decay_steps) / decay_steps))) ** exponent
    + alpha)``."""
    if not decay_steps > 0:
        raise ValueError(f"cosine_decay_schedule: decay_steps must be > 0, got {decay_steps}.")

    def schedule(count):
        c = jnp.minimum(jnp.asarray(count), decay_steps)
        cosine = 0.5 * (1 + jnp.cos(math.pi * c / decay_steps))
        return init_value * ((1 - alpha) * cosine ** exponent + alpha)
    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """``schedules[i]`` from ``boundaries[i-1]`` on, called with the count minus that boundary."""
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"join_schedules: needs one more schedule than boundaries, got {len(schedules)} "
                         f"schedules and {len(boundaries)} boundaries.")

    def schedule(count):
        count = jnp.asarray(count)
        out = schedules[0](count)
        for boundary, s in zip(boundaries, schedules[1:]):
            out = jnp.where(count < boundary, out, s(count - boundary))
        return out
    return schedule


def warmup_cosine_decay_schedule(init_value, peak_value, warmup_steps: int, decay_steps: int, end_value=0.0,
                                 exponent=1.0) -> Schedule:
    """Linear warm-up from ``init_value`` to ``peak_value`` over ``warmup_steps``, then cosine decay to
    ``end_value`` by step ``decay_steps`` (the total, warm-up included)."""
    alpha = 0.0 if peak_value == 0 else end_value / peak_value
    return join_schedules(
        [linear_schedule(init_value, peak_value, warmup_steps),
         cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha=alpha, exponent=exponent)],
        [warmup_steps])


def piecewise_constant_schedule(init_value, boundaries_and_scales=None) -> Schedule:
    """``init_value`` times the product of the scales whose boundary the count has reached."""
    items = sorted((boundaries_and_scales or {}).items())
    for b, sc in items:
        if sc < 0:
            raise ValueError(f"piecewise_constant_schedule: scale factors must be non-negative, got {sc} at "
                             f"boundary {b}.")

    def schedule(count):
        if not items:  # init_value as it was given, as optax's
            return init_value
        count = jnp.asarray(count)
        v = jnp.asarray(init_value, jnp.float32)
        for b, sc in items:
            v = jnp.where(count < b, v, v * sc)
        return v
    return schedule


def warmup_exponential_decay_schedule(init_value, peak_value, warmup_steps: int, transition_steps: int, decay_rate,
                                      transition_begin: int = 0, staircase: bool = False,
                                      end_value=None) -> Schedule:
    """Linear warm-up from ``init_value`` to ``peak_value`` over ``warmup_steps``, then ``exponential_decay``
    from ``peak_value`` (its count starting at the end of the warm-up)."""
    return join_schedules(
        [linear_schedule(init_value, peak_value, warmup_steps),
         exponential_decay(peak_value, transition_steps, decay_rate, transition_begin, staircase, end_value)],
        [warmup_steps])


def warmup_constant_schedule(init_value, peak_value, warmup_steps: int) -> Schedule:
    """Linear warm-up from ``init_value`` to ``peak_value`` over ``warmup_steps``, then ``peak_value``."""
    return linear_schedule(init_value, peak_value, warmup_steps)


def _linear_interpolate(start, end, pct):
    return (end - start) * pct + start


def _cosine_interpolate(start, end, pct):
    return end + (start - end) / 2.0 * (jnp.cos(math.pi * pct) + 1)


def piecewise_interpolate_schedule(interpolate_type: str, init_value, boundaries_and_scales=None) -> Schedule:
    """Starts at ``init_value``; at each boundary the value is multiplied by its scale, and between boundaries
    it moves from one value to the next along a line (``'linear'``) or a half cosine (``'cosine'``)."""
    interpolate = {"linear": _linear_interpolate, "cosine": _cosine_interpolate}.get(interpolate_type)
    if interpolate is None:
        raise ValueError(f"piecewise_interpolate_schedule: interpolate_type must be 'linear' or 'cosine', got "
                         f"{interpolate_type!r}.")
    if boundaries_and_scales:
        boundaries, scales = zip(*sorted(boundaries_and_scales.items()))
        for b, sc in zip(boundaries, scales):
            if not sc >= 0.0:
                raise ValueError(f"piecewise_interpolate_schedule: scale factors must be non-negative, got {sc} "
                                 f"at boundary {b}.")
    else:
        boundaries, scales = (), ()

    def schedule(count):
        # optax's formulation (so that the values round as optax's): the interpolations of every interval,
        # dotted with the indicator of the interval holding the count, plus the last value past the end
        bounds = jnp.stack((0,) + boundaries)
        values = jnp.cumprod(jnp.stack((init_value,) + scales))
        sizes = jnp.maximum(bounds[1:] - bounds[:-1], 1)
        inside = jnp.logical_and(bounds[:-1] <= count, count < bounds[1:])
        pct = (count - bounds[:-1]) / sizes
        return inside.dot(interpolate(values[:-1], values[1:], pct)) + (bounds[-1] <= count) * values[-1]
    return schedule


def _check_transition_steps(transition_steps, where: str):
    if transition_steps <= 0:
        raise ValueError(f"{where}: transition_steps must be > 0, got {transition_steps}; it is the length of the "
                         "whole cycle in steps.")


def linear_onecycle_schedule(transition_steps: int, peak_value, pct_start: float = 0.3, pct_final: float = 0.85,
                             div_factor: float = 25.0, final_div_factor: float = 1e4) -> Schedule:
    """One cycle (linear): from ``peak_value / div_factor`` up to ``peak_value`` by ``pct_start`` of
    ``transition_steps``, back down by ``pct_final``, then to ``peak_value / (div_factor * final_div_factor)``."""
    _check_transition_steps(transition_steps, "linear_onecycle_schedule")
    return piecewise_interpolate_schedule("linear", peak_value / div_factor, {
        int(pct_start * transition_steps): div_factor,
        int(pct_final * transition_steps): 1.0 / div_factor,
        transition_steps: 1.0 / final_div_factor,
    })


def cosine_onecycle_schedule(transition_steps: int, peak_value, pct_start: float = 0.3, div_factor: float = 25.0,
                             final_div_factor: float = 1e4) -> Schedule:
    """One cycle (cosine): from ``peak_value / div_factor`` up to ``peak_value`` by ``pct_start`` of
    ``transition_steps``, then down to ``peak_value / (div_factor * final_div_factor)`` at the end."""
    _check_transition_steps(transition_steps, "cosine_onecycle_schedule")
    return piecewise_interpolate_schedule("cosine", peak_value / div_factor, {
        int(pct_start * transition_steps): div_factor,
        int(transition_steps): 1.0 / (div_factor * final_div_factor),
    })


def sgdr_schedule(cosine_kwargs: Iterable[dict]) -> Schedule:
    """Warm restarts: one ``warmup_cosine_decay_schedule(**kwargs)`` after the other, each for its
    ``decay_steps``."""
    schedules, boundaries, step = [], [], 0
    for i, kwargs in enumerate(cosine_kwargs):
        if not isinstance(kwargs, dict) or "decay_steps" not in kwargs:
            raise ValueError(f"sgdr_schedule: cosine_kwargs[{i}] must be a dict of warmup_cosine_decay_schedule's "
                             f"arguments, with decay_steps; got {kwargs!r}.")
        schedules.append(warmup_cosine_decay_schedule(**kwargs))
        step += kwargs["decay_steps"]
        boundaries.append(step)
    if not schedules:
        raise ValueError("sgdr_schedule: cosine_kwargs is empty; give at least one cycle's arguments.")
    return join_schedules(schedules, boundaries[:-1])
