"""kiln.ops: segment reductions (as ``jax.ops``)."""
from kiln.frontend.ops import segment_max as segment_max
from kiln.frontend.ops import segment_min as segment_min
from kiln.frontend.ops import segment_prod as segment_prod
from kiln.frontend.ops import segment_sum as segment_sum

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]
