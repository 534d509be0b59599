"""kiln.optim.schedules: optax.schedules' learning-rate schedules (functions of the step count), stateful
schedules and inject_hyperparams."""
from kiln.frontend.optim.more import InjectHyperparamsState as InjectHyperparamsState
from kiln.frontend.optim.more import InjectStatefulHyperparamsState as InjectStatefulHyperparamsState
from kiln.frontend.optim.more import inject_hyperparams as inject_hyperparams
from kiln.frontend.optim.more import inject_stateful_hyperparams as inject_stateful_hyperparams
from kiln.frontend.optim.schedules import Schedule as Schedule
from kiln.frontend.optim.schedules import StatefulSchedule as StatefulSchedule
from kiln.frontend.optim.schedules import WrappedSchedule as WrappedSchedule
from kiln.frontend.optim.schedules import constant_schedule as constant_schedule
from kiln.frontend.optim.schedules import cosine_decay_schedule as cosine_decay_schedule
from kiln.frontend.optim.schedules import cosine_onecycle_schedule as cosine_onecycle_schedule
from kiln.frontend.optim.schedules import exponential_decay as exponential_decay
from kiln.frontend.optim.schedules import join_schedules as join_schedules
from kiln.frontend.optim.schedules import linear_onecycle_schedule as linear_onecycle_schedule
from kiln.frontend.optim.schedules import linear_schedule as linear_schedule
from kiln.frontend.optim.schedules import piecewise_constant_schedule as piecewise_constant_schedule
from kiln.frontend.optim.schedules import piecewise_interpolate_schedule as piecewise_interpolate_schedule
from kiln.frontend.optim.schedules import polynomial_schedule as polynomial_schedule
from kiln.frontend.optim.schedules import sgdr_schedule as sgdr_schedule
from kiln.frontend.optim.schedules import warmup_constant_schedule as warmup_constant_schedule
from kiln.frontend.optim.schedules import warmup_cosine_decay_schedule as warmup_cosine_decay_schedule
from kiln.frontend.optim.schedules import warmup_exponential_decay_schedule as warmup_exponential_decay_schedule

__all__ = [
    "constant_schedule", "cosine_decay_schedule", "cosine_onecycle_schedule", "exponential_decay",
    "inject_hyperparams", "inject_stateful_hyperparams", "InjectHyperparamsState", "InjectStatefulHyperparamsState",
    "join_schedules", "linear_onecycle_schedule", "linear_schedule", "piecewise_constant_schedule",
    "piecewise_interpolate_schedule", "polynomial_schedule", "Schedule", "sgdr_schedule", "StatefulSchedule",
    "warmup_constant_schedule", "warmup_cosine_decay_schedule", "warmup_exponential_decay_schedule",
    "WrappedSchedule",
]
