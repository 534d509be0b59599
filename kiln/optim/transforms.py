"""kiln.optim.transforms: optax.transforms' gradient transformations (also at kiln.optim's top level)."""
from kiln.frontend.optim import AddNoiseState as AddNoiseState
from kiln.frontend.optim import ApplyIfFiniteState as ApplyIfFiniteState
from kiln.frontend.optim import ConditionallyMaskState as ConditionallyMaskState
from kiln.frontend.optim import ConditionallyTransformState as ConditionallyTransformState
from kiln.frontend.optim import ConditionFn as ConditionFn
from kiln.frontend.optim import EmaState as EmaState
from kiln.frontend.optim import MaskedNode as MaskedNode
from kiln.frontend.optim import MaskedState as MaskedState
from kiln.frontend.optim import MonitorState as MonitorState
from kiln.frontend.optim import MultiSteps as MultiSteps
from kiln.frontend.optim import MultiStepsState as MultiStepsState
from kiln.frontend.optim import NonNegativeParamsState as NonNegativeParamsState
from kiln.frontend.optim import PartitionState as PartitionState
from kiln.frontend.optim import ShouldSkipUpdateFunction as ShouldSkipUpdateFunction
from kiln.frontend.optim import SnapshotState as SnapshotState
from kiln.frontend.optim import TraceState as TraceState
from kiln.frontend.optim import ZeroNansState as ZeroNansState
from kiln.frontend.optim import adaptive_grad_clip as adaptive_grad_clip
from kiln.frontend.optim import add_decayed_weights as add_decayed_weights
from kiln.frontend.optim import add_noise as add_noise
from kiln.frontend.optim import apply_if_finite as apply_if_finite
from kiln.frontend.optim import chain as chain
from kiln.frontend.optim import clip as clip
from kiln.frontend.optim import clip_by_block_rms as clip_by_block_rms
from kiln.frontend.optim import clip_by_global_norm as clip_by_global_norm
from kiln.frontend.optim import conditionally_mask as conditionally_mask
from kiln.frontend.optim import conditionally_transform as conditionally_transform
from kiln.frontend.optim import ema as ema
from kiln.frontend.optim import flatten as flatten
from kiln.frontend.optim import freeze as freeze
from kiln.frontend.optim import keep_params_nonnegative as keep_params_nonnegative
from kiln.frontend.optim import masked as masked
from kiln.frontend.optim import measure_with_ema as measure_with_ema
from kiln.frontend.optim import monitor as monitor
from kiln.frontend.optim import named_chain as named_chain
from kiln.frontend.optim import partition as partition
from kiln.frontend.optim import per_example_global_norm_clip as per_example_global_norm_clip
from kiln.frontend.optim import per_example_layer_norm_clip as per_example_layer_norm_clip
from kiln.frontend.optim import selective_transform as selective_transform
from kiln.frontend.optim import skip_large_updates as skip_large_updates
from kiln.frontend.optim import skip_not_finite as skip_not_finite
from kiln.frontend.optim import snapshot as snapshot
from kiln.frontend.optim import trace as trace
from kiln.frontend.optim import unitwise_clip as unitwise_clip
from kiln.frontend.optim import unitwise_norm as unitwise_norm
from kiln.frontend.optim import zero_nans as zero_nans

__all__ = [
    "AddNoiseState", "ApplyIfFiniteState", "ConditionFn", "ConditionallyMaskState", "ConditionallyTransformState",
    "EmaState", "MaskedNode", "MaskedState", "MonitorState", "MultiSteps", "MultiStepsState",
    "NonNegativeParamsState", "PartitionState", "ShouldSkipUpdateFunction", "SnapshotState", "TraceState",
    "ZeroNansState", "adaptive_grad_clip", "add_decayed_weights", "add_noise", "apply_if_finite", "chain", "clip",
    "clip_by_block_rms", "clip_by_global_norm", "conditionally_mask", "conditionally_transform", "ema", "flatten",
    "freeze", "keep_params_nonnegative", "masked", "measure_with_ema", "monitor", "named_chain", "partition",
    "per_example_global_norm_clip", "per_example_layer_norm_clip", "selective_transform", "skip_large_updates",
    "skip_not_finite", "snapshot", "trace", "unitwise_clip", "unitwise_norm", "zero_nans",
]
