"""kiln.optim.experimental.aggregating: optax.experimental.aggregating's transformations of per-example
gradients (averaging, accumulating over microbatches, tracking the gradients' mean and variance)."""
from kiln.frontend.optim.aggregating import AccumulateAvgUpdatesState as AccumulateAvgUpdatesState
from kiln.frontend.optim.aggregating import AggregatedUpdates as AggregatedUpdates
from kiln.frontend.optim.aggregating import Aggregator as Aggregator
from kiln.frontend.optim.aggregating import AggregatorUpdateFn as AggregatorUpdateFn
from kiln.frontend.optim.aggregating import MaybeAxis as MaybeAxis
from kiln.frontend.optim.aggregating import PerElementMeanAndSumSqDiffGradsState as PerElementMeanAndSumSqDiffGradsState
from kiln.frontend.optim.aggregating import PerElementMeanAndVarianceEMAState as PerElementMeanAndVarianceEMAState
from kiln.frontend.optim.aggregating import PerElementUpdates as PerElementUpdates
from kiln.frontend.optim.aggregating import accumulate_avg_updates as accumulate_avg_updates
from kiln.frontend.optim.aggregating import add_mean_variance_to_opt as add_mean_variance_to_opt
from kiln.frontend.optim.aggregating import average_incrementally_updates as average_incrementally_updates
from kiln.frontend.optim.aggregating import average_per_element_updates as average_per_element_updates
from kiln.frontend.optim.aggregating import get_batch_size_from_per_elt_updates as get_batch_size_from_per_elt_updates
from kiln.frontend.optim.aggregating import (
    get_per_element_mean_and_sum_sq_diff_grads as get_per_element_mean_and_sum_sq_diff_grads,
)
from kiln.frontend.optim.aggregating import get_unbiased_mean_and_variance_ema as get_unbiased_mean_and_variance_ema
from kiln.frontend.optim.aggregating import process as process
from kiln.frontend.optim.aggregating import (
    track_per_element_mean_and_variance_with_ema as track_per_element_mean_and_variance_with_ema,
)

__all__ = [
    "PerElementUpdates", "AggregatedUpdates", "MaybeAxis", "AggregatorUpdateFn", "Aggregator", "process",
    "average_per_element_updates", "AccumulateAvgUpdatesState", "accumulate_avg_updates",
    "average_incrementally_updates", "get_batch_size_from_per_elt_updates", "PerElementMeanAndSumSqDiffGradsState",
    "get_per_element_mean_and_sum_sq_diff_grads", "PerElementMeanAndVarianceEMAState",
    "track_per_element_mean_and_variance_with_ema", "get_unbiased_mean_and_variance_ema", "add_mean_variance_to_opt"
]
