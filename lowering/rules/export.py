"""Emission rule of ``call_exported`` (``Exported.call`` inside a trace): the exported module's functions are
copied into the module being built under fresh names, and its ``@main`` is called."""
from __future__ import annotations

import itertools

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func

from ..hlo import const, enclosing
from ..module import LoweringError
from ..registry import register

_counter = itertools.count()


class ExportPlatformError(LoweringError, ValueError):
    """An exported function called in a program for a platform it was not exported for (a ValueError, as
    JAX's)."""


def _platform(ctx_platform: str | None) -> str | None:
    return "cuda" if ctx_platform == "gpu" else ctx_platform


@register("call_exported")
def _call_exported(ctx, eqn, *args):
    p = eqn.params
    name, platforms = p["name"], p["platforms"]
    here = _platform(ctx.platform)
    if here is not None and here not in platforms and p.get("platform_check", True):
        raise ExportPlatformError(f"kiln.export: {name!r} was exported for platforms {platforms} but is called in a "
                            f"program for {here}; export it for {here!r}")
    sub = ir.Module.parse(p["module"])
    functions = list(sub.body.operations)
    others = [f.operation.name for f in functions if f.operation.name != "func.func"]
    if others:
        raise LoweringError(f"kiln.export: the module of {name!r} holds {others[0]} at its top level; kiln inlines "
                            "modules made only of functions (one-device modules without meshes)")
    block = ir.InsertionPoint.current.block
    module, top = enclosing(block.owner.operation, "builtin.module")
    table = ir.SymbolTable(module)
    olds = [ir.StringAttr(f.attributes["sym_name"]).value for f in functions]
    while True:
        prefix = f"exported_{next(_counter)}_{''.join(c if c.isalnum() else '_' for c in name)}"
        if not any(f"{prefix}_{o}" in table for o in olds):
            break
    for f, old in zip(functions, olds):
        new = f"{prefix}_{old}"
        ir.SymbolTable.replace_all_symbol_uses(old, new, sub.operation)
        ir.SymbolTable.set_symbol_name(f, new)
        f.attributes["sym_visibility"] = ir.StringAttr.get("private")
    main = functions[olds.index("main")] if "main" in olds else None
    if main is None:
        raise LoweringError(f"kiln.export: the module of {name!r} has no @main function")
    before = ir.InsertionPoint(top)
    for f in functions:
        before.insert(f.operation.detach_from_parent())
    operands = [args[i] for i in p["kept"]]
    if len(platforms) > 1:
        index = platforms.index(here) if here in platforms else 0
        operands = [const(np.int32(index), np.int32).v] + operands
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    call = func.CallOp(list(ftype.results), ir.FlatSymbolRefAttr.get(f"{prefix}_main"), operands)
    return list(call.results)
