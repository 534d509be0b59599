"""Emission rule of frontend/lax/ffi.py: ``ffi_call`` is ``stablehlo.custom_call @target`` with ``api_version
= 4`` (XLA's typed FFI), the call's attributes in ``backend_config`` (a dictionary: Python ``int`` → i64,
``float`` → f64, ``bool`` → i1, ``str`` → string, NumPy scalars with their dtype, NumPy arrays → dense
elements, dicts → dictionaries, lists → arrays, as JAX; with ``api_version = 4`` StableHLO takes the
dictionary as ``backend_config`` itself, where JAX emits ``api_version = 1`` and ``mhlo.backend_config``),
``has_side_effect``, the operand and result layouts (minor-to-major) and ``output_operand_aliases``. Legacy
targets (``custom_call_api_version < 4``) get their opaque ``backend_config`` string instead.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir

from ..hlo import i32_attr
from ..registry import register
from ..types import element_type, tensor_type


def _scalar(value: np.generic) -> ir.Attribute:
    t = element_type(value.dtype)
    if value.dtype.kind == "f":
        return ir.FloatAttr.get(t, float(value))
    return ir.IntegerAttr.get(t, int(value))


def output_operand_aliases(pairs, many_results: bool) -> ir.ArrayAttr:
    """A custom call's ``output_operand_aliases``: for each ``(operand index, output index)``, the output is
    written in the operand's buffer (XLA copies the operand first where it is still needed)."""
    aliases = [f"#stablehlo.output_operand_alias<output_tuple_indices = [{o if many_results else ''}], "
               f"operand_index = {i}, operand_tuple_indices = []>" for i, o in pairs]
    return ir.ArrayAttr.get([ir.Attribute.parse(a) for a in aliases])


def attribute(value) -> ir.Attribute:
    """An MLIR attribute for an FFI attribute value (as kept in the equation's parameters)."""
    unwrap = getattr(value, "unwrap", None)
    if unwrap is not None:  # lax/ffi.py's hashable wrappers of arrays and dicts
        value = unwrap()
    if isinstance(value, (str, bytes)):
        return ir.StringAttr.get(value)
    if isinstance(value, bool):
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(1), int(value))
    if isinstance(value, int):
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)
    if isinstance(value, float):
        return ir.FloatAttr.get(ir.F64Type.get(), value)
    if isinstance(value, np.generic):
        return _scalar(value)
    if isinstance(value, np.dtype):
        return ir.TypeAttr.get(element_type(value))
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        return ir.DenseElementsAttr.get(array, type=element_type(array.dtype), shape=list(array.shape))
    if isinstance(value, dict):
        return ir.DictAttr.get({k: attribute(v) for k, v in value.items()})
    if isinstance(value, tuple):
        return ir.ArrayAttr.get([attribute(v) for v in value])
    raise TypeError(f"kiln lowering: no MLIR attribute for an FFI attribute of type {type(value).__name__}")


def _layouts(layouts) -> ir.ArrayAttr:
    index = ir.IndexType.get()
    return ir.ArrayAttr.get([ir.DenseIntElementsAttr.get(np.asarray(lay, np.int64).reshape(-1), type=index)
                             for lay in layouts])


@register("ffi_call")
def _ffi_call(ctx, eqn, *args):
    p = eqn.params
    result_types = [tensor_type(v.aval) for v in eqn.outputs]
    version = p["custom_call_api_version"]
    attrs = {
        "call_target_name": ir.StringAttr.get(p["target_name"]),
        "api_version": i32_attr(version),
        "has_side_effect": ir.BoolAttr.get(bool(p["has_side_effect"])),
        "operand_layouts": _layouts(p["input_layouts"]),
        "result_layouts": _layouts(p["output_layouts"]),
    }
    if version >= 4:
        attrs["backend_config"] = ir.DictAttr.get({k: attribute(v) for k, v in p["attributes"]})
    else:
        attrs["backend_config"] = ir.StringAttr.get(p["legacy_backend_config"] or "")
    if p["input_output_aliases"]:
        attrs["output_operand_aliases"] = output_operand_aliases(p["input_output_aliases"], len(result_types) > 1)
    op = ir.Operation.create("stablehlo.custom_call", results=result_types, operands=list(args), attributes=attrs)
    return list(op.results)
