"""Portable StableHLO artifacts: a module as versioned bytecode that later StableHLO versions can read
(what ``kiln.export`` stores), and back to MLIR text."""
from __future__ import annotations

from typing import Any

from ._jaxlib import JaxRuntimeError, _jax
from .errors import KilnRuntimeError, jaxlib_message
from .mlir import mlir_context


class PortableArtifactError(KilnRuntimeError, ValueError):
    """Bytes that are not a StableHLO portable artifact this jaxlib can read."""


def _stablehlo() -> Any:
    from jaxlib.mlir.dialects import stablehlo
    return stablehlo


def stablehlo_versions() -> tuple[str, str]:
    """(current, minimum) StableHLO versions this jaxlib writes and reads."""
    shlo = _stablehlo()
    return str(shlo.get_current_version()), str(shlo.get_minimum_version())


def target_version() -> str:
    """The StableHLO version an artifact is written for: one at least four weeks old (as JAX does), so that a
    consumer updated monthly reads it; the current version where this jaxlib cannot say."""
    shlo = _stablehlo()
    try:
        return str(shlo.get_version_from_compatibility_requirement(shlo.StablehloCompatibilityRequirement.WEEK_4))
    except AttributeError:
        return str(shlo.get_current_version())


def serialize_module(module: Any) -> bytes:
    """The portable artifact (versioned StableHLO bytecode) of ``module`` (a jaxlib.mlir ``ir.Module`` or
    MLIR text)."""
    try:
        if isinstance(module, str):
            from jaxlib.mlir import ir
            with mlir_context():
                module = ir.Module.parse(module)
        return bytes(_jax.mlir.serialize_portable_artifact(module, target_version()))
    except (JaxRuntimeError, ValueError, RuntimeError) as e:
        raise KilnRuntimeError(f"Could not write the module as a portable StableHLO artifact: "
                               f"{jaxlib_message(e)}") from e


def deserialize_module(data: bytes) -> str:
    """The MLIR text of the portable artifact ``data``."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected bytes of a portable StableHLO artifact, got {type(data).__name__}")
    data = bytes(data)
    if not data.startswith(b"ML\xefR"):
        raise PortableArtifactError("the module bytes are not MLIR bytecode (they do not start with the MLIR "
                                    "bytecode magic 'ML\\xefR'); the data is corrupted or not a StableHLO artifact")
    try:
        with mlir_context():
            module = _jax.mlir.deserialize_portable_artifact(data)
            if isinstance(module, str):
                return module
            return module.operation.get_asm(enable_debug_info=False)
    except (JaxRuntimeError, ValueError, RuntimeError) as e:
        current, minimum = stablehlo_versions()
        raise PortableArtifactError(
            f"Could not read the portable StableHLO artifact ({jaxlib_message(e)}); it is corrupted or truncated, "
            f"or written by a StableHLO version outside what this jaxlib reads ({minimum} to {current}).") from e


__all__ = ["PortableArtifactError", "deserialize_module", "serialize_module", "stablehlo_versions",
           "target_version"]
