"""``jax.experimental.xla_metadata``: ``set_xla_metadata`` attaches XLA frontend attributes (``key="value"``) to the
operations traced inside a ``with`` block or a decorated function, or to those producing a value."""
from kiln.frontend.xla_metadata import set_xla_metadata as set_xla_metadata

__all__ = ["set_xla_metadata"]
