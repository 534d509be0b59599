"""kiln.optim: gradient transformations, learning-rate schedules and losses with optax's API (F5; optax needs
JAX). ``import kiln.optim as optax`` runs optax code; ``optax.losses`` and ``optax.schedules`` are here too."""
from kiln.frontend.optim import ApplyIfFiniteState as ApplyIfFiniteState
from kiln.frontend.optim import EmptyState as EmptyState
from kiln.frontend.optim import GradientTransformation as GradientTransformation
from kiln.frontend.optim import InjectHyperparamsState as InjectHyperparamsState
from kiln.frontend.optim import InjectStatefulHyperparamsState as InjectStatefulHyperparamsState
from kiln.frontend.optim import MaskedNode as MaskedNode
from kiln.frontend.optim import MaskedState as MaskedState
from kiln.frontend.optim import MultiSteps as MultiSteps
from kiln.frontend.optim import MultiStepsState as MultiStepsState
from kiln.frontend.optim import MultiTransformState as MultiTransformState
from kiln.frontend.optim import OptState as OptState
from kiln.frontend.optim import Params as Params
from kiln.frontend.optim import PartitionState as PartitionState
from kiln.frontend.optim import ScalarOrSchedule as ScalarOrSchedule
from kiln.frontend.optim import ScaleByAdamState as ScaleByAdamState
from kiln.frontend.optim import ScaleByLionState as ScaleByLionState
from kiln.frontend.optim import ScaleByRmsState as ScaleByRmsState
from kiln.frontend.optim import ScaleByRmsWithCountState as ScaleByRmsWithCountState
from kiln.frontend.optim import ScaleByRssState as ScaleByRssState
from kiln.frontend.optim import ScaleByRStdDevState as ScaleByRStdDevState
from kiln.frontend.optim import ScaleByRStdDevWithCountState as ScaleByRStdDevWithCountState
from kiln.frontend.optim import ScaleByScheduleState as ScaleByScheduleState
from kiln.frontend.optim import ScaleByTrustRatioState as ScaleByTrustRatioState
from kiln.frontend.optim import Schedule as Schedule
from kiln.frontend.optim import TraceState as TraceState
from kiln.frontend.optim import Updates as Updates
from kiln.frontend.optim import ZeroNansState as ZeroNansState
from kiln.frontend.optim import adagrad as adagrad
from kiln.frontend.optim import adam as adam
from kiln.frontend.optim import adamw as adamw
from kiln.frontend.optim import add_decayed_weights as add_decayed_weights
from kiln.frontend.optim import apply_if_finite as apply_if_finite
from kiln.frontend.optim import apply_updates as apply_updates
from kiln.frontend.optim import chain as chain
from kiln.frontend.optim import clip as clip
from kiln.frontend.optim import clip_by_global_norm as clip_by_global_norm
from kiln.frontend.optim import constant_schedule as constant_schedule
from kiln.frontend.optim import cosine_decay_schedule as cosine_decay_schedule
from kiln.frontend.optim import cosine_distance as cosine_distance
from kiln.frontend.optim import cosine_similarity as cosine_similarity
from kiln.frontend.optim import exponential_decay as exponential_decay
from kiln.frontend.optim import flatten as flatten
from kiln.frontend.optim import global_norm as global_norm
from kiln.frontend.optim import hinge_loss as hinge_loss
from kiln.frontend.optim import huber_loss as huber_loss
from kiln.frontend.optim import identity as identity
from kiln.frontend.optim import inject_hyperparams as inject_hyperparams
from kiln.frontend.optim import join_schedules as join_schedules
from kiln.frontend.optim import kl_divergence as kl_divergence
from kiln.frontend.optim import kl_divergence_with_log_targets as kl_divergence_with_log_targets
from kiln.frontend.optim import l2_loss as l2_loss
from kiln.frontend.optim import lamb as lamb
from kiln.frontend.optim import linear_schedule as linear_schedule
from kiln.frontend.optim import lion as lion
from kiln.frontend.optim import log_cosh as log_cosh
from kiln.frontend.optim import masked as masked
from kiln.frontend.optim import multi_transform as multi_transform
from kiln.frontend.optim import nadam as nadam
from kiln.frontend.optim import nadamw as nadamw
from kiln.frontend.optim import partition as partition
from kiln.frontend.optim import piecewise_constant_schedule as piecewise_constant_schedule
from kiln.frontend.optim import polynomial_schedule as polynomial_schedule
from kiln.frontend.optim import rmsprop as rmsprop
from kiln.frontend.optim import safe_softmax_cross_entropy as safe_softmax_cross_entropy
from kiln.frontend.optim import scale as scale
from kiln.frontend.optim import scale_by_adam as scale_by_adam
from kiln.frontend.optim import scale_by_learning_rate as scale_by_learning_rate
from kiln.frontend.optim import scale_by_lion as scale_by_lion
from kiln.frontend.optim import scale_by_rms as scale_by_rms
from kiln.frontend.optim import scale_by_rss as scale_by_rss
from kiln.frontend.optim import scale_by_schedule as scale_by_schedule
from kiln.frontend.optim import scale_by_stddev as scale_by_stddev
from kiln.frontend.optim import scale_by_trust_ratio as scale_by_trust_ratio
from kiln.frontend.optim import set_to_zero as set_to_zero
from kiln.frontend.optim import sgd as sgd
from kiln.frontend.optim import sigmoid_binary_cross_entropy as sigmoid_binary_cross_entropy
from kiln.frontend.optim import softmax_cross_entropy as softmax_cross_entropy
from kiln.frontend.optim import softmax_cross_entropy_with_integer_labels as softmax_cross_entropy_with_integer_labels
from kiln.frontend.optim import squared_error as squared_error
from kiln.frontend.optim import trace as trace
from kiln.frontend.optim import warmup_cosine_decay_schedule as warmup_cosine_decay_schedule
from kiln.frontend.optim import warmup_exponential_decay_schedule as warmup_exponential_decay_schedule
from kiln.frontend.optim import zero_nans as zero_nans
from kiln.optim import losses, schedules

__all__ = [
    "adagrad", "adam", "adamw", "add_decayed_weights", "apply_if_finite", "apply_updates", "ApplyIfFiniteState",
    "chain", "clip", "clip_by_global_norm", "constant_schedule", "cosine_decay_schedule", "cosine_distance",
    "cosine_similarity", "EmptyState", "exponential_decay", "flatten", "global_norm", "GradientTransformation",
    "hinge_loss", "huber_loss", "identity", "inject_hyperparams", "InjectHyperparamsState",
    "InjectStatefulHyperparamsState", "join_schedules",
    "kl_divergence", "kl_divergence_with_log_targets", "l2_loss", "lamb", "linear_schedule", "lion", "log_cosh",
    "losses", "masked", "MaskedNode", "MaskedState", "multi_transform", "MultiTransformState", "MultiSteps",
    "MultiStepsState", "partition", "PartitionState", "nadam", "nadamw", "OptState",
    "Params", "piecewise_constant_schedule", "polynomial_schedule", "rmsprop", "safe_softmax_cross_entropy",
    "ScalarOrSchedule", "scale", "scale_by_adam", "scale_by_learning_rate", "scale_by_lion", "scale_by_rms",
    "scale_by_rss", "scale_by_schedule", "scale_by_stddev", "scale_by_trust_ratio", "ScaleByAdamState",
    "ScaleByLionState", "ScaleByRmsState", "ScaleByRmsWithCountState", "ScaleByRssState", "ScaleByRStdDevState",
    "ScaleByRStdDevWithCountState", "ScaleByScheduleState",
    "ScaleByTrustRatioState", "Schedule", "schedules", "set_to_zero", "sgd", "sigmoid_binary_cross_entropy",
    "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels", "squared_error", "trace", "TraceState",
    "Updates", "warmup_cosine_decay_schedule", "warmup_exponential_decay_schedule", "zero_nans", "ZeroNansState",
]
