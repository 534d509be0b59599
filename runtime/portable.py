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
    return read_module(data)[0]


def read_module(data: bytes, refine: bool = False) -> tuple[str, list[str], list[str]]:
    """The MLIR text of the portable artifact ``data``, and the types of its ``@main``'s parameters and results
    (as MLIR prints them: ``tensor<3xf32>``; empty lists when it has no ``@main``). ``refine``: run StableHLO's
    shape refinement first (modules whose inner shapes follow from global constants such as JAX's platform
    index, with a static ``@main``)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected bytes of a portable StableHLO artifact, got {type(data).__name__}")
    data = bytes(data)
    if not data.startswith(b"ML\xefR"):
        raise PortableArtifactError("the module bytes are not MLIR bytecode (they do not start with the MLIR "
                                    "bytecode magic 'ML\\xefR'); the data is corrupted or not a StableHLO artifact")
    ctx = mlir_context()
    diagnostics: list[str] = []

    def collect(d: Any) -> bool:  # MLIR's messages go into the error instead of stderr
        try:
            diagnostics.append(str(d.message))
        except Exception:  # a message quoting corrupted bytes that are not UTF-8
            diagnostics.append("(a message that is not UTF-8)")
        return True
    handler = ctx.attach_diagnostic_handler(collect)
    try:
        with ctx:
            module = _jax.mlir.deserialize_portable_artifact(data)
            from jaxlib.mlir import ir
            if isinstance(module, str):
                module = ir.Module.parse(module)
            if refine:
                text = module.operation.get_asm(enable_debug_info=False)
                module = ir.Module.parse(_jax.mlir.refine_polymorphic_shapes(text.encode()))
            ins: list[str] = []
            outs: list[str] = []
            for op in module.body.operations:
                if op.operation.name == "func.func" and str(op.attributes["sym_name"]) == '"main"':
                    ftype = op.attributes["function_type"].value
                    ins, outs = [str(t) for t in ftype.inputs], [str(t) for t in ftype.results]
            return module.operation.get_asm(enable_debug_info=False), ins, outs
    except (JaxRuntimeError, ValueError, RuntimeError) as e:
        current, minimum = stablehlo_versions()
        detail = "; ".join(diagnostics[:3]) or jaxlib_message(e)
        raise PortableArtifactError(
            f"Could not read the portable StableHLO artifact ({detail}); it is corrupted or truncated, or written "
            f"by a StableHLO version outside what this jaxlib reads ({minimum} to {current}).") from e
    finally:
        handler.detach()


__all__ = ["PortableArtifactError", "deserialize_module", "read_module", "serialize_module", "stablehlo_versions",
           "target_version"]
