"""The one place that imports jaxlib; version-dependent calls are wrapped here.

jaxlib's private API changes between releases (kiln supports 0.10.x and 0.11.x), so every call whose
signature is known to drift goes through a helper in this module.
"""
from __future__ import annotations

import functools
import sys
from typing import Any

import jaxlib.xla_client as xc
from jaxlib import _jax
from jaxlib import version as _version

JaxRuntimeError: type[Exception] = getattr(_jax, "JaxRuntimeError", None) or xc.XlaRuntimeError
JAXLIB_VERSION: str = _version.__version__
API_VERSION: int = int(getattr(xc, "_version", 0))

IMMUTABLE_ONLY_DURING_CALL = xc.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL
ALWAYS_COPY = xc.ArrayCopySemantics.ALWAYS_COPY


# enable_x64=True: jaxlib does not validate, and False silently narrows 64-bit data (NOTES §3).
# Passed only where this jaxlib still has the argument.
_PUT_KWARGS: dict[str, Any] = {"committed": True, "force_copy": False,
                               "host_buffer_semantics": IMMUTABLE_ONLY_DURING_CALL}
if "enable_x64" in (getattr(_jax.batched_device_put, "__doc__", None) or "enable_x64"):
    _PUT_KWARGS["enable_x64"] = True


# device_put(aval, sharding, [x], [raw_device]): copies host array x to one device, never aliasing its
# memory (the default ZERO_COPY would alias aligned numpy memory on CPU).
device_put = functools.partial(_jax.batched_device_put, **_PUT_KWARGS)


def jax_loaded() -> bool:
    """Whether jax has been imported in this process: jax then owns jaxlib's process-wide settings (the C++
    jit states, the traceback switch), which kiln leaves as jax set them (NOTES §0.2)."""
    return "jax._src.config" in sys.modules


def result_handler(aval: Any, sharding: Any) -> Any:
    """A C++ ``array_result_handler`` (the fast path for wrapping execute outputs, NOTES §2.2).

    On 0.10.x ``_skip_checks=True`` is mandatory without jax (else the C++ calls a jax-provided method);
    later versions removed the argument.
    """
    try:
        return xc.array_result_handler(aval, sharding, committed=True, _skip_checks=True)
    except TypeError:
        return xc.array_result_handler(aval, sharding, committed=True)


__all__ = ["xc", "_jax", "jax_loaded", "JaxRuntimeError", "JAXLIB_VERSION", "API_VERSION", "result_handler",
           "device_put", "IMMUTABLE_ONLY_DURING_CALL", "ALWAYS_COPY"]
