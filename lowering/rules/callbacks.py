"""Emission rules of frontend/lax/callbacks.py: a host callback is ``stablehlo.custom_call
@xla_ffi_python_cpu_callback`` (``..._gpu_callback`` on CUDA/ROCm) whose ``mhlo.backend_config = {index = N}``
names the N-th callable of the module (collected in ``ctx.host_callbacks``, handed to the runtime's compile).

- Callbacks with effects (``debug_callback``, ``io_callback``) have ``has_side_effect``; a pure one does not
  (XLA may then drop it when its results are unused).
- Ordered ones (``ordered=True``) take the module's token as first operand and return the next one, so that
  XLA runs them in program order; loops and branches thread the token (rules/control.py).
- In a program partitioned over a mesh a callback runs once, on device 0 (a maximal sharding, as JAX);
  inside ``shard_map`` (manual axes) it runs on every device, on that device's block.
"""
from __future__ import annotations

from jaxlib.mlir import ir

from ..module import LoweringError
from ..registry import register
from ..types import tensor_type


class OrderedCallbackError(LoweringError, ValueError):
    """An ordered callback inside ``shard_map`` (or ``pmap``, which runs its function in one): program order
    cannot be kept across devices. A ``ValueError``, as JAX's ("ordered effects are not supported for more than 1
    device")."""


_TARGETS = {"cpu": "xla_ffi_python_cpu_callback", "cuda": "xla_ffi_python_gpu_callback",
            "rocm": "xla_ffi_python_gpu_callback", "gpu": "xla_ffi_python_gpu_callback"}


@register("debug_callback", "io_callback", "pure_callback")
def _callback(ctx, eqn, *args):
    params = eqn.params
    name = params["callback"].name
    target = _TARGETS.get(ctx.platform or "cpu")
    if target is None:
        raise LoweringError(f"kiln: host callbacks ({name}) are not supported on the {ctx.platform} platform "
                            "(only cpu, cuda and rocm)")
    ordered = bool(params.get("ordered", False))
    callback = params["callback"]
    operands = list(args)
    result_types = [tensor_type(v.aval) for v in eqn.outputs]
    token_type = ir.Type.parse("!stablehlo.token")
    if ordered:
        if ctx.manual_axes is not None:
            raise OrderedCallbackError(f"kiln: the ordered callback {name} inside shard_map is not supported; use "
                                       "ordered=False there (pmap runs its function in a shard_map: the same "
                                       "holds there; ordering across devices cannot be guaranteed)")
        callback = callback.with_token()
        operands = [ctx.current_token()] + operands
        result_types = [token_type] + result_types
    index = ctx.add_host_callback(callback)
    attrs = {
        "call_target_name": ir.StringAttr.get(target),
        "has_side_effect": ir.BoolAttr.get(eqn.prim.has_effects),
        "mhlo.backend_config": ir.DictAttr.get(
            {"index": ir.IntegerAttr.get(ir.IntegerType.get_unsigned(64), index)}),
    }
    if ctx.mesh is not None and ctx.mesh.num_partitions > 1:
        # One sharding per result (at least one): the callback's device, or each device inside shard_map.
        mesh = "empty_mesh" if ctx.manual_axes is not None else "maximal_mesh_0"
        ctx.callback_meshes.add("empty" if ctx.manual_axes is not None else "maximal")
        ranks = [len(v.aval.shape) for v in eqn.outputs]
        if ordered:
            ranks = [0] + ranks
        if ctx.manual_axes is None:
            ranks = [0] * len(ranks)  # a maximal sharding names no dimensions
        per_value = [f"<@{mesh}, [{', '.join(['{}'] * r)}]>" for r in ranks or [0]]
        attrs["sdy.sharding"] = ir.Attribute.parse("#sdy.sharding_per_value<[" + ", ".join(per_value) + "]>")
    op = ir.Operation.create("stablehlo.custom_call", results=result_types, operands=operands, attributes=attrs)
    results = list(op.results)
    if ordered:
        ctx.token, results = results[0], results[1:]
    return results


@register("inspect_sharding")
def _inspect_sharding(ctx, eqn, value):
    """A value whose layout the caller reports once compiled: in a partitioned program (outside shard_map), a
    side-effecting ``custom_call @InspectSharding`` naming the inspector's probe, which XLA's partitioner calls
    back with the layout it chose; elsewhere nothing (the layout is the program's one device, or manual)."""
    inspector = eqn.params["inspector"]
    if ctx.mesh is None or ctx.mesh.num_partitions == 1 or ctx.manual_axes is not None:
        ctx.sharding_probes.append((inspector, None, eqn.inputs[0].aval.ndim))
        return []
    probe = inspector.probe()
    ctx.sharding_probes.append((inspector, probe, eqn.inputs[0].aval.ndim))
    ir.Operation.create("stablehlo.custom_call", results=[value.type], operands=[value], attributes={
        "call_target_name": ir.StringAttr.get(inspector.call_target),
        "has_side_effect": ir.BoolAttr.get(True),
        "backend_config": ir.StringAttr.get(probe.key),
    })
    return []
