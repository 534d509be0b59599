"""Dumping the StableHLO modules kiln compiles to a directory (JAX's ``jax_dump_ir_to``).

The frontend pushes ``kiln.config``'s ``dump_ir_to``, ``dump_ir_modes`` and ``include_debug_info_in_dumps`` here
(:func:`configure`); :func:`dump` writes one module, :func:`dump_text` any other text (kiln's IR), and
:func:`dump_eqn_count_pprof` a pprof profile of how many equations each source line made, to
``kiln_ir{n:04d}_{module name}_{stage}.mlir`` and ``kiln_{n:06d}_{name}.{suffix}`` as JAX names its files (with
``kiln`` for ``jax``), numbered in the order they are written in this process.

This module imports only jaxlib (its pprof encoder too) and the standard library.
"""
from __future__ import annotations

import gzip
import itertools
import json
import os
import pathlib
import re
from typing import Any, Sequence

from jaxlib.mlir import ir

from ._jaxlib import _jax

_settings = {"directory": "", "modes": ("stablehlo",), "debug_info": True}
_module_counter = itertools.count()
_text_counter = itertools.count()
_UNSAFE = re.compile(r"[^\w.)( -]")  # characters a file name does not get (as JAX's dumps)
_MODULE_NAME = re.compile(r'\s*module\s+@"?([^\s"{]+)')


def configure(*, directory: str | None = None, modes: str | None = None, debug_info: bool | None = None) -> None:
    """Set where modules are dumped (``""``: nowhere; ``sponge``: Bazel's ``TEST_UNDECLARED_OUTPUTS_DIR``, as JAX's),
    which kinds (comma-separated: ``stablehlo``, ``jaxpr``, ``eqn_count_pprof``) and whether with their locations.
    ValueError for ``sponge`` without that variable."""
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


def module_name(module: Any) -> str:
    """The symbol name of ``module`` (an ``ir.Module`` or its text): ``jit_f``; ``main`` when it has none."""
    if isinstance(module, str):
        found = _MODULE_NAME.match(module)
        return found.group(1) if found else "main"
    attributes = module.operation.attributes
    return ir.StringAttr(attributes["sym_name"]).value if "sym_name" in attributes else "main"


def _name_and_text(module: Any) -> tuple[str, str]:
    """The module's symbol name and its text, with locations as configured."""
    if isinstance(module, str):
        return module_name(module), module
    return module_name(module), module.operation.get_asm(enable_debug_info=_settings["debug_info"])


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


# Where equations came from: (file name, function's qualified name, its first line, the line), or None.
Location = tuple[str, str, int, int]


def dump_eqn_count_pprof(name: str, counts: Sequence[tuple[Location | None, str, int]], comment: str
                         ) -> pathlib.Path | None:
    """Write the equation counts of function ``name``'s program (``(location, primitive, count)``) as a gzipped pprof
    profile (JAX's ``eqn_count_pprof`` dump mode: view it with ``pprof -top FILE``), when that mode is dumped; the
    file written, or None."""
    if not enabled("eqn_count_pprof"):
        return None
    path = _out_dir() / f"kiln_{next(_text_counter):06d}_{_UNSAFE.sub('', name)}.eqn_count_pprof"
    path.write_bytes(eqn_count_profile(counts, comment))
    return path


def eqn_count_profile(counts: Sequence[tuple[Location | None, str, int]], comment: str) -> bytes:
    """The pprof protocol buffer (gzipped) of equation counts: one sample per (location, primitive), its value the
    count, labelled ``primitive``; a location's function is named ``file.path.qualname`` (as JAX's)."""
    strings: dict[str, int] = {"": 0}
    functions: dict[tuple[str, str, int], int] = {}
    locations: dict[Location, int] = {}

    def s(text: str) -> int:
        return strings.setdefault(text, len(strings))

    samples = []
    for where, primitive, count in counts:
        ids = []
        if where is not None:
            functions.setdefault(where[:3], len(functions) + 1)
            ids.append(locations.setdefault(where, len(locations) + 1))
        samples.append({"location_id": ids, "value": [count], "label": [{"key": s("primitive"), "str": s(primitive)}]})
    function_json = [{"id": i, "name": s(f"{f.removesuffix('.py').replace('/', '.')}.{q}"), "filename": s(f),
                      "start_line": first} for (f, q, first), i in functions.items()]
    location_json = [{"id": i, "line": [{"function_id": functions[(f, q, first)], "line": line}]}
                     for (f, q, first, line), i in locations.items()]
    profile = {"sample_type": [{"type": s("equations"), "unit": s("count")}], "sample": samples,
               "location": location_json, "function": function_json, "comment": [s(comment)]}
    profile["string_table"] = list(strings)  # (last: every string above is in it)
    return gzip.compress(_jax.json_to_pprof_profile(json.dumps(profile)))


def read_profile(data: bytes) -> dict[str, Any]:
    """A gzipped pprof profile as its JSON form (pprof's proto fields, camel-cased): to read a dump back."""
    return json.loads(_jax.pprof_profile_to_json(gzip.decompress(data)))


__all__ = ["configure", "dump", "dump_eqn_count_pprof", "dump_text", "enabled", "eqn_count_profile", "module_name",
           "read_profile"]
