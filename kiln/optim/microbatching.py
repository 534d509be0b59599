"""kiln.optim.microbatching: optax.microbatching's loops over microbatches of a batch (bounded memory)."""
from kiln.frontend.optim.microbatching import AccumulationType as AccumulationType
from kiln.frontend.optim.microbatching import Accumulator as Accumulator
from kiln.frontend.optim.microbatching import micro_grad as micro_grad
from kiln.frontend.optim.microbatching import micro_vmap as micro_vmap
from kiln.frontend.optim.microbatching import microbatch as microbatch
from kiln.frontend.optim.microbatching import reshape_batch_axis as reshape_batch_axis

__all__ = ["AccumulationType", "Accumulator", "micro_grad", "micro_vmap", "microbatch", "reshape_batch_axis"]
