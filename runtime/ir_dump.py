"""Dumping the StableHLO modules kiln compiles to a directory (JAX's ``jax_dump_ir_to``).

The frontend pushes ``kiln.config``'s ``dump_ir_to``, ``dump_ir_modes`` and ``include_debug_info_in_dumps`` here
(:func:`configure`); :func:`dump` writes one module, and :func:`dump_text` any other text (kiln's IR), to
``kiln_ir{n:04d}_{module name}_{stage}.mlir`` and ``kiln_{n:06d}_{name}.{suffix}`` as JAX names its files (with
``kiln`` for ``jax``), numbered in the order they are written in this process.

This module imports only jaxlib and the standard library.
"""
from __future__ import annotations

import itertools
import os
import pathlib
import re
from typing import Any

from jaxlib.mlir import ir

_settings = {"directory": "", "modes": ("stablehlo",), "debug_info": True}
_module_counter = itertools.count()
_text_counter = itertools.count()
_UNSAFE = re.compile(r"[^\w.)( -]")  # characters a file name does not get (as JAX's dumps)
_MODULE_NAME = re.compile(r'\s*module\s+@"?([^\s"{]+)')


def configure(*, directory: str | None = None, modes: str | None = None, debug_info: bool | None = None) -> None:
    """Set where modules are dumped (``""``: nowhere; ``sponge``: Bazel's ``TEST_UNDECLARED_OUTPUTS_DIR``, as JAX's),
    which kinds (comma-separated: ``stablehlo``, ``jaxpr``) and whether with their locations. ValueError for
    ``sponge`` without that variable."""
    if directory == "sponge":
        directory = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", "")
        if not directory:
            raise ValueError("dump_ir_to is 'sponge' but TEST_UNDECLARED_OUTPUTS_DIR is not set; set it, or set "
                             "dump_ir_to (KILN_DUMP_IR_TO) to a directory")
    if directory is not None:
        _settings["directory"] = directory
    if modes is not None:
        _settings["modes"] = tuple(m.strip() for m in modes.split(",") if m.strip())
    if debug_info is not None:
        _settings["debug_info"] = bool(debug_info)


def enabled(mode: str) -> bool:
    """Whether a directory is set and ``mode`` is one of the modes dumped."""
    return bool(_settings["directory"]) and mode in _settings["modes"]


def _out_dir() -> pathlib.Path:
    """The dump directory, made if missing."""
    path = pathlib.Path(_settings["directory"])
    path.mkdir(parents=True, exist_ok=True)
    return path


def _name_and_text(module: Any) -> tuple[str, str]:
    """The module's symbol name (``jit_f``; ``main`` when it has none) and its text, with locations as configured."""
    if isinstance(module, str):
        found = _MODULE_NAME.match(module)
        return (found.group(1) if found else "main"), module
    attributes = module.operation.attributes
    name = ir.StringAttr(attributes["sym_name"]).value if "sym_name" in attributes else "main"
    return name, module.operation.get_asm(enable_debug_info=_settings["debug_info"])


def dump(module: Any, stage: str) -> pathlib.Path | None:
    """Write ``module`` (an ``ir.Module`` or its text) when ``stablehlo`` modules are dumped; the file written, or
    None."""
    if not enabled("stablehlo"):
        return None
    name, text = _name_and_text(module)
    path = _out_dir() / f"kiln_ir{next(_module_counter):04d}_{_UNSAFE.sub('', name)}_{stage}.mlir"
    path.write_text(text)
    return path


def dump_text(mode: str, name: str, suffix: str, text: str) -> pathlib.Path | None:
    """Write ``text`` (e.g. kiln's IR of function ``name``) when ``mode`` is dumped; the file written, or None."""
    if not enabled(mode):
        return None
    path = _out_dir() / f"kiln_{next(_text_counter):06d}_{_UNSAFE.sub('', name)}.{suffix}"
    path.write_text(text)
    return path


__all__ = ["configure", "dump", "dump_text", "enabled"]
