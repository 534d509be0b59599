"""kiln.optim.schedules: optax.schedules' learning-rate schedules (functions of the step count)."""
from kiln.frontend.optim import constant_schedule as constant_schedule
from kiln.frontend.optim import cosine_decay_schedule as cosine_decay_schedule
from kiln.frontend.optim import exponential_decay as exponential_decay
from kiln.frontend.optim import join_schedules as join_schedules
from kiln.frontend.optim import linear_schedule as linear_schedule
from kiln.frontend.optim import piecewise_constant_schedule as piecewise_constant_schedule
from kiln.frontend.optim import polynomial_schedule as polynomial_schedule
from kiln.frontend.optim import warmup_cosine_decay_schedule as warmup_cosine_decay_schedule
from kiln.frontend.optim import warmup_exponential_decay_schedule as warmup_exponential_decay_schedule

__all__ = [
    "constant_schedule", "cosine_decay_schedule", "exponential_decay", "join_schedules", "linear_schedule",
    "piecewise_constant_schedule", "polynomial_schedule", "warmup_cosine_decay_schedule",
    "warmup_exponential_decay_schedule",
]
