"""The layout XLA's SPMD partitioner chooses for a value inside a program (``jax.debug.inspect_array_sharding``).

A module marks the value with ``stablehlo.custom_call @InspectSharding(%v)`` whose ``backend_config`` is a
probe's :attr:`ShardingProbe.key`; jaxlib registers a partitioner for that target that calls the probe back,
while XLA compiles the module, with the value's ``HloSharding``. The probe keeps it as text, for the caller to
read once the compile has returned (so that nothing of kiln's, and no user code, runs inside XLA's compile).
"""
from __future__ import annotations

from typing import Any

from ._jaxlib import _jax
from .errors import KilnRuntimeError

CALL_TARGET = "InspectSharding"


class ShardingProbe:
    """One marked value: ``key`` goes into the custom call; ``hlo_text`` is the partitioner's ``HloSharding`` of
    the value as text (``{devices=[4]<=[4]}``, ``{replicated}``, ``{manual}``), None until it has called back.
    The module's owner keeps the probe alive until the compile has returned: the key encodes its callable's
    address."""

    __slots__ = ("key", "hlo_text", "_callback")

    def __init__(self) -> None:
        encode = getattr(_jax, "encode_inspect_sharding_callback", None)
        if encode is None:
            raise KilnRuntimeError("this jaxlib has no InspectSharding partitioner (encode_inspect_sharding_callback); "
                                   "inspect the sharding of the jitted function's results instead")
        self.hlo_text: str | None = None
        self._callback = self._record  # (one bound method, kept: its address is in the key)
        self.key: bytes = encode(self._callback)

    def _record(self, hlo_sharding: Any) -> None:
        # Called from inside XLA's compile: keep the text, never raise.
        try:
            self.hlo_text = str(hlo_sharding)
        except Exception:  # noqa: BLE001  (an exception must not cross into XLA's partitioner)
            self.hlo_text = None


def is_manual(hlo_text: str) -> bool:
    """Whether a probe's sharding is manual (the value is inside a ``shard_map`` body: each device has its own)."""
    return "manual" in hlo_text
