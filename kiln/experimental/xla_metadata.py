"""``jax.experimental.xla_metadata``: ``set_xla_metadata`` attaches XLA frontend attributes (``key="value"``) to the
operations traced inside a ``with`` block or a decorated function, or to those producing a value;
``xla_metadata_call`` / ``xla_metadata_call2`` stage a function out as a call tagged with them (kept through the
transformations), and ``must_fuse_call`` tags one with ``MUST_FUSE``."""
from kiln.frontend.xla_metadata import set_xla_metadata as set_xla_metadata
from kiln.frontend.xla_metadata_call import must_fuse_call as must_fuse_call
from kiln.frontend.xla_metadata_call import xla_metadata_call as xla_metadata_call
from kiln.frontend.xla_metadata_call import xla_metadata_call2 as xla_metadata_call2

__all__ = ["must_fuse_call", "set_xla_metadata", "xla_metadata_call", "xla_metadata_call2"]
