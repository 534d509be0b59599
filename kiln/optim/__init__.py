"""kiln.optim: optax 0.2.8's API (optax needs JAX). ``import kiln.optim as optax`` runs optax code: its gradient
transformations, optimizers, schedules, losses and tree utilities, with optax's state layouts and rounding."""
from kiln.frontend.optim import AdaptiveGradClipState as AdaptiveGradClipState
from kiln.frontend.optim import AddDecayedWeightsState as AddDecayedWeightsState
from kiln.frontend.optim import AddNoiseState as AddNoiseState
from kiln.frontend.optim import ApplyEvery as ApplyEvery
from kiln.frontend.optim import ApplyIfFiniteState as ApplyIfFiniteState
from kiln.frontend.optim import ClipByGlobalNormState as ClipByGlobalNormState
from kiln.frontend.optim import ClipState as ClipState
from kiln.frontend.optim import ConditionallyMaskState as ConditionallyMaskState
from kiln.frontend.optim import ConditionallyTransformState as ConditionallyTransformState
from kiln.frontend.optim import EmaState as EmaState
from kiln.frontend.optim import EmptyState as EmptyState
from kiln.frontend.optim import FactoredState as FactoredState
from kiln.frontend.optim import GradientTransformation as GradientTransformation
from kiln.frontend.optim import GradientTransformationExtraArgs as GradientTransformationExtraArgs
from kiln.frontend.optim import InjectHyperparamsState as InjectHyperparamsState
from kiln.frontend.optim import InjectStatefulHyperparamsState as InjectStatefulHyperparamsState
from kiln.frontend.optim import LookaheadParams as LookaheadParams
from kiln.frontend.optim import LookaheadState as LookaheadState
from kiln.frontend.optim import MaskedNode as MaskedNode
from kiln.frontend.optim import MaskedState as MaskedState
from kiln.frontend.optim import MaskOrFn as MaskOrFn
from kiln.frontend.optim import MonitorState as MonitorState
from kiln.frontend.optim import MultiSteps as MultiSteps
from kiln.frontend.optim import MultiStepsState as MultiStepsState
from kiln.frontend.optim import MultiTransformState as MultiTransformState
from kiln.frontend.optim import NonNegativeParamsState as NonNegativeParamsState
from kiln.frontend.optim import OptState as OptState
from kiln.frontend.optim import Params as Params
from kiln.frontend.optim import PartitionState as PartitionState
from kiln.frontend.optim import ScalarOrSchedule as ScalarOrSchedule
from kiln.frontend.optim import ScaleByAdaDeltaState as ScaleByAdaDeltaState
from kiln.frontend.optim import ScaleByAdamState as ScaleByAdamState
from kiln.frontend.optim import ScaleByAdanState as ScaleByAdanState
from kiln.frontend.optim import ScaleByAmsgradState as ScaleByAmsgradState
from kiln.frontend.optim import ScaleByBacktrackingLinesearchState as ScaleByBacktrackingLinesearchState
from kiln.frontend.optim import ScaleByBeliefState as ScaleByBeliefState
from kiln.frontend.optim import ScaleByLBFGSState as ScaleByLBFGSState
from kiln.frontend.optim import ScaleByLionState as ScaleByLionState
from kiln.frontend.optim import ScaleByNovogradState as ScaleByNovogradState
from kiln.frontend.optim import ScaleByRmsState as ScaleByRmsState
from kiln.frontend.optim import ScaleByRmsWithCountState as ScaleByRmsWithCountState
from kiln.frontend.optim import ScaleByRpropState as ScaleByRpropState
from kiln.frontend.optim import ScaleByRssState as ScaleByRssState
from kiln.frontend.optim import ScaleByRStdDevState as ScaleByRStdDevState
from kiln.frontend.optim import ScaleByRStdDevWithCountState as ScaleByRStdDevWithCountState
from kiln.frontend.optim import ScaleByScheduleState as ScaleByScheduleState
from kiln.frontend.optim import ScaleBySM3State as ScaleBySM3State
from kiln.frontend.optim import ScaleByTrustRatioState as ScaleByTrustRatioState
from kiln.frontend.optim import ScaleByZoomLinesearchState as ScaleByZoomLinesearchState
from kiln.frontend.optim import ScaleState as ScaleState
from kiln.frontend.optim import Schedule as Schedule
from kiln.frontend.optim import ShouldSkipUpdateFunction as ShouldSkipUpdateFunction
from kiln.frontend.optim import SnapshotState as SnapshotState
from kiln.frontend.optim import TraceState as TraceState
from kiln.frontend.optim import TransformInitFn as TransformInitFn
from kiln.frontend.optim import TransformUpdateExtraArgsFn as TransformUpdateExtraArgsFn
from kiln.frontend.optim import TransformUpdateFn as TransformUpdateFn
from kiln.frontend.optim import Updates as Updates
from kiln.frontend.optim import WrappedSchedule as WrappedSchedule
from kiln.frontend.optim import ZeroNansState as ZeroNansState
from kiln.frontend.optim import ZoomLinesearchInfo as ZoomLinesearchInfo
from kiln.frontend.optim import adabelief as adabelief
from kiln.frontend.optim import adadelta as adadelta
from kiln.frontend.optim import adafactor as adafactor
from kiln.frontend.optim import adagrad as adagrad
from kiln.frontend.optim import adam as adam
from kiln.frontend.optim import adamax as adamax
from kiln.frontend.optim import adamaxw as adamaxw
from kiln.frontend.optim import adamw as adamw
from kiln.frontend.optim import adan as adan
from kiln.frontend.optim import adaptive_grad_clip as adaptive_grad_clip
from kiln.frontend.optim import add_decayed_weights as add_decayed_weights
from kiln.frontend.optim import add_noise as add_noise
from kiln.frontend.optim import amsgrad as amsgrad
from kiln.frontend.optim import apply_every as apply_every
from kiln.frontend.optim import apply_if_finite as apply_if_finite
from kiln.frontend.optim import apply_updates as apply_updates
from kiln.frontend.optim import bias_correction as bias_correction
from kiln.frontend.optim import centralize as centralize
from kiln.frontend.optim import chain as chain
from kiln.frontend.optim import clip as clip
from kiln.frontend.optim import clip_by_block_rms as clip_by_block_rms
from kiln.frontend.optim import clip_by_global_norm as clip_by_global_norm
from kiln.frontend.optim import conditionally_mask as conditionally_mask
from kiln.frontend.optim import conditionally_transform as conditionally_transform
from kiln.frontend.optim import constant_schedule as constant_schedule
from kiln.frontend.optim import convex_kl_divergence as convex_kl_divergence
from kiln.frontend.optim import cosine_decay_schedule as cosine_decay_schedule
from kiln.frontend.optim import cosine_distance as cosine_distance
from kiln.frontend.optim import cosine_onecycle_schedule as cosine_onecycle_schedule
from kiln.frontend.optim import cosine_similarity as cosine_similarity
from kiln.frontend.optim import ctc_loss as ctc_loss
from kiln.frontend.optim import ctc_loss_with_forward_probs as ctc_loss_with_forward_probs
from kiln.frontend.optim import ema as ema
from kiln.frontend.optim import exponential_decay as exponential_decay
from kiln.frontend.optim import flatten as flatten
from kiln.frontend.optim import freeze as freeze
from kiln.frontend.optim import fromage as fromage
from kiln.frontend.optim import generalized_kl_divergence as generalized_kl_divergence
from kiln.frontend.optim import global_norm as global_norm
from kiln.frontend.optim import hinge_loss as hinge_loss
from kiln.frontend.optim import huber_loss as huber_loss
from kiln.frontend.optim import identity as identity
from kiln.frontend.optim import incremental_update as incremental_update
from kiln.frontend.optim import init_empty_state as init_empty_state
from kiln.frontend.optim import inject_hyperparams as inject_hyperparams
from kiln.frontend.optim import inject_stateful_hyperparams as inject_stateful_hyperparams
from kiln.frontend.optim import join_schedules as join_schedules
from kiln.frontend.optim import keep_params_nonnegative as keep_params_nonnegative
from kiln.frontend.optim import kl_divergence as kl_divergence
from kiln.frontend.optim import kl_divergence_with_log_targets as kl_divergence_with_log_targets
from kiln.frontend.optim import l2_loss as l2_loss
from kiln.frontend.optim import lamb as lamb
from kiln.frontend.optim import lars as lars
from kiln.frontend.optim import lbfgs as lbfgs
from kiln.frontend.optim import linear_onecycle_schedule as linear_onecycle_schedule
from kiln.frontend.optim import linear_schedule as linear_schedule
from kiln.frontend.optim import lion as lion
from kiln.frontend.optim import log_cosh as log_cosh
from kiln.frontend.optim import lookahead as lookahead
from kiln.frontend.optim import masked as masked
from kiln.frontend.optim import matrix_inverse_pth_root as matrix_inverse_pth_root
from kiln.frontend.optim import measure_with_ema as measure_with_ema
from kiln.frontend.optim import microbatch as microbatch
from kiln.frontend.optim import monitor as monitor
from kiln.frontend.optim import multi_normal as multi_normal
from kiln.frontend.optim import multi_transform as multi_transform
from kiln.frontend.optim import nadam as nadam
from kiln.frontend.optim import nadamw as nadamw
from kiln.frontend.optim import named_chain as named_chain
from kiln.frontend.optim import nnls as nnls
from kiln.frontend.optim import noisy_sgd as noisy_sgd
from kiln.frontend.optim import normalize_by_update_norm as normalize_by_update_norm
from kiln.frontend.optim import novograd as novograd
from kiln.frontend.optim import ntxent as ntxent
from kiln.frontend.optim import optimistic_adam as optimistic_adam
from kiln.frontend.optim import optimistic_adam_v2 as optimistic_adam_v2
from kiln.frontend.optim import optimistic_gradient_descent as optimistic_gradient_descent
from kiln.frontend.optim import partition as partition
from kiln.frontend.optim import per_example_global_norm_clip as per_example_global_norm_clip
from kiln.frontend.optim import per_example_layer_norm_clip as per_example_layer_norm_clip
from kiln.frontend.optim import periodic_update as periodic_update
from kiln.frontend.optim import piecewise_constant_schedule as piecewise_constant_schedule
from kiln.frontend.optim import piecewise_interpolate_schedule as piecewise_interpolate_schedule
from kiln.frontend.optim import polyak_sgd as polyak_sgd
from kiln.frontend.optim import polynomial_schedule as polynomial_schedule
from kiln.frontend.optim import power_iteration as power_iteration
from kiln.frontend.optim import radam as radam
from kiln.frontend.optim import rmsprop as rmsprop
from kiln.frontend.optim import rprop as rprop
from kiln.frontend.optim import safe_increment as safe_increment
from kiln.frontend.optim import safe_int32_increment as safe_int32_increment
from kiln.frontend.optim import safe_norm as safe_norm
from kiln.frontend.optim import safe_root_mean_squares as safe_root_mean_squares
from kiln.frontend.optim import safe_softmax_cross_entropy as safe_softmax_cross_entropy
from kiln.frontend.optim import scale as scale
from kiln.frontend.optim import scale_by_adadelta as scale_by_adadelta
from kiln.frontend.optim import scale_by_adam as scale_by_adam
from kiln.frontend.optim import scale_by_adamax as scale_by_adamax
from kiln.frontend.optim import scale_by_adan as scale_by_adan
from kiln.frontend.optim import scale_by_amsgrad as scale_by_amsgrad
from kiln.frontend.optim import scale_by_backtracking_linesearch as scale_by_backtracking_linesearch
from kiln.frontend.optim import scale_by_belief as scale_by_belief
from kiln.frontend.optim import scale_by_distance_over_gradients as scale_by_distance_over_gradients
from kiln.frontend.optim import scale_by_factored_rms as scale_by_factored_rms
from kiln.frontend.optim import scale_by_lbfgs as scale_by_lbfgs
from kiln.frontend.optim import scale_by_learning_rate as scale_by_learning_rate
from kiln.frontend.optim import scale_by_lion as scale_by_lion
from kiln.frontend.optim import scale_by_novograd as scale_by_novograd
from kiln.frontend.optim import scale_by_optimistic_gradient as scale_by_optimistic_gradient
from kiln.frontend.optim import scale_by_param_block_norm as scale_by_param_block_norm
from kiln.frontend.optim import scale_by_param_block_rms as scale_by_param_block_rms
from kiln.frontend.optim import scale_by_polyak as scale_by_polyak
from kiln.frontend.optim import scale_by_radam as scale_by_radam
from kiln.frontend.optim import scale_by_rms as scale_by_rms
from kiln.frontend.optim import scale_by_rprop as scale_by_rprop
from kiln.frontend.optim import scale_by_rss as scale_by_rss
from kiln.frontend.optim import scale_by_schedule as scale_by_schedule
from kiln.frontend.optim import scale_by_sign as scale_by_sign
from kiln.frontend.optim import scale_by_sm3 as scale_by_sm3
from kiln.frontend.optim import scale_by_stddev as scale_by_stddev
from kiln.frontend.optim import scale_by_trust_ratio as scale_by_trust_ratio
from kiln.frontend.optim import scale_by_yogi as scale_by_yogi
from kiln.frontend.optim import scale_by_zoom_linesearch as scale_by_zoom_linesearch
from kiln.frontend.optim import scale_gradient as scale_gradient
from kiln.frontend.optim import selective_transform as selective_transform
from kiln.frontend.optim import set_to_zero as set_to_zero
from kiln.frontend.optim import sgd as sgd
from kiln.frontend.optim import sgdr_schedule as sgdr_schedule
from kiln.frontend.optim import sigmoid_binary_cross_entropy as sigmoid_binary_cross_entropy
from kiln.frontend.optim import sigmoid_focal_loss as sigmoid_focal_loss
from kiln.frontend.optim import sign_sgd as sign_sgd
from kiln.frontend.optim import signum as signum
from kiln.frontend.optim import skip_large_updates as skip_large_updates
from kiln.frontend.optim import skip_not_finite as skip_not_finite
from kiln.frontend.optim import sm3 as sm3
from kiln.frontend.optim import smooth_labels as smooth_labels
from kiln.frontend.optim import snapshot as snapshot
from kiln.frontend.optim import softmax_cross_entropy as softmax_cross_entropy
from kiln.frontend.optim import softmax_cross_entropy_with_integer_labels as softmax_cross_entropy_with_integer_labels
from kiln.frontend.optim import squared_error as squared_error
from kiln.frontend.optim import stateless as stateless
from kiln.frontend.optim import stateless_with_tree_map as stateless_with_tree_map
from kiln.frontend.optim import trace as trace
from kiln.frontend.optim import tree_map_params as tree_map_params
from kiln.frontend.optim import update_infinity_moment as update_infinity_moment
from kiln.frontend.optim import update_moment as update_moment
from kiln.frontend.optim import update_moment_per_elem_norm as update_moment_per_elem_norm
from kiln.frontend.optim import value_and_grad_from_state as value_and_grad_from_state
from kiln.frontend.optim import warmup_constant_schedule as warmup_constant_schedule
from kiln.frontend.optim import warmup_cosine_decay_schedule as warmup_cosine_decay_schedule
from kiln.frontend.optim import warmup_exponential_decay_schedule as warmup_exponential_decay_schedule
from kiln.frontend.optim import with_extra_args_support as with_extra_args_support
from kiln.frontend.optim import yogi as yogi
from kiln.frontend.optim import zero_nans as zero_nans
from kiln.optim import assignment as assignment
from kiln.optim import contrib as contrib
from kiln.optim import experimental as experimental
from kiln.optim import losses as losses
from kiln.optim import microbatching as microbatching
from kiln.optim import perturbations as perturbations
from kiln.optim import projections as projections
from kiln.optim import schedules as schedules
from kiln.optim import second_order as second_order
from kiln.optim import transforms as transforms
from kiln.optim import tree as tree
from kiln.optim import tree_utils as tree_utils

__all__ = [
    "AdaptiveGradClipState", "AddDecayedWeightsState", "AddNoiseState", "ApplyEvery", "ApplyIfFiniteState",
    "ClipByGlobalNormState", "ClipState", "ConditionallyMaskState", "ConditionallyTransformState", "EmaState",
    "EmptyState", "FactoredState", "GradientTransformation", "GradientTransformationExtraArgs",
    "InjectHyperparamsState", "InjectStatefulHyperparamsState", "LookaheadParams", "LookaheadState", "MaskOrFn",
    "MaskedNode", "MaskedState", "MonitorState", "MultiSteps", "MultiStepsState", "MultiTransformState",
    "NonNegativeParamsState", "OptState", "Params", "PartitionState", "ScalarOrSchedule", "ScaleByAdaDeltaState",
    "ScaleByAdamState", "ScaleByAdanState", "ScaleByAmsgradState", "ScaleByBacktrackingLinesearchState",
    "ScaleByBeliefState", "ScaleByLBFGSState", "ScaleByLionState", "ScaleByNovogradState", "ScaleByRStdDevState",
    "ScaleByRStdDevWithCountState", "ScaleByRmsState", "ScaleByRmsWithCountState", "ScaleByRpropState",
    "ScaleByRssState", "ScaleBySM3State", "ScaleByScheduleState", "ScaleByTrustRatioState",
    "ScaleByZoomLinesearchState", "ScaleState", "Schedule", "ShouldSkipUpdateFunction", "SnapshotState",
    "TraceState", "TransformInitFn", "TransformUpdateExtraArgsFn", "TransformUpdateFn", "Updates",
    "WrappedSchedule", "ZeroNansState", "ZoomLinesearchInfo", "adabelief", "adadelta", "adafactor", "adagrad",
    "adam", "adamax", "adamaxw", "adamw", "adan", "adaptive_grad_clip", "add_decayed_weights", "add_noise",
    "amsgrad", "apply_every", "apply_if_finite", "apply_updates", "assignment", "bias_correction", "centralize",
    "chain", "clip", "clip_by_block_rms", "clip_by_global_norm", "conditionally_mask", "conditionally_transform",
    "constant_schedule", "contrib", "convex_kl_divergence", "cosine_decay_schedule", "cosine_distance",
    "cosine_onecycle_schedule", "cosine_similarity", "ctc_loss", "ctc_loss_with_forward_probs", "ema",
    "experimental", "exponential_decay", "flatten", "freeze", "fromage", "generalized_kl_divergence", "global_norm",
    "hinge_loss", "huber_loss", "identity", "incremental_update", "init_empty_state", "inject_hyperparams",
    "inject_stateful_hyperparams", "join_schedules", "keep_params_nonnegative", "kl_divergence",
    "kl_divergence_with_log_targets", "l2_loss", "lamb", "lars", "lbfgs", "linear_onecycle_schedule",
    "linear_schedule", "lion", "log_cosh", "lookahead", "losses", "masked", "matrix_inverse_pth_root",
    "measure_with_ema", "microbatch", "microbatching", "monitor", "multi_normal", "multi_transform", "nadam",
    "nadamw", "named_chain", "nnls", "noisy_sgd", "normalize_by_update_norm", "novograd", "ntxent",
    "optimistic_adam", "optimistic_adam_v2", "optimistic_gradient_descent", "partition",
    "per_example_global_norm_clip", "per_example_layer_norm_clip", "periodic_update", "perturbations",
    "piecewise_constant_schedule", "piecewise_interpolate_schedule", "polyak_sgd", "polynomial_schedule",
    "power_iteration", "projections", "radam", "rmsprop", "rprop", "safe_increment", "safe_int32_increment",
    "safe_norm", "safe_root_mean_squares", "safe_softmax_cross_entropy", "scale", "scale_by_adadelta",
    "scale_by_adam", "scale_by_adamax", "scale_by_adan", "scale_by_amsgrad", "scale_by_backtracking_linesearch",
    "scale_by_belief", "scale_by_distance_over_gradients", "scale_by_factored_rms", "scale_by_lbfgs",
    "scale_by_learning_rate", "scale_by_lion", "scale_by_novograd", "scale_by_optimistic_gradient",
    "scale_by_param_block_norm", "scale_by_param_block_rms", "scale_by_polyak", "scale_by_radam", "scale_by_rms",
    "scale_by_rprop", "scale_by_rss", "scale_by_schedule", "scale_by_sign", "scale_by_sm3", "scale_by_stddev",
    "scale_by_trust_ratio", "scale_by_yogi", "scale_by_zoom_linesearch", "scale_gradient", "schedules",
    "second_order", "selective_transform", "set_to_zero", "sgd", "sgdr_schedule", "sigmoid_binary_cross_entropy",
    "sigmoid_focal_loss", "sign_sgd", "signum", "skip_large_updates", "skip_not_finite", "sm3", "smooth_labels",
    "snapshot", "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels", "squared_error", "stateless",
    "stateless_with_tree_map", "trace", "transforms", "tree", "tree_map_params", "tree_utils",
    "update_infinity_moment", "update_moment", "update_moment_per_elem_norm", "value_and_grad_from_state",
    "warmup_constant_schedule", "warmup_cosine_decay_schedule", "warmup_exponential_decay_schedule",
    "with_extra_args_support", "yogi", "zero_nans",
]
