"""Build a StableHLO module from kiln IR with jaxlib's MLIR bindings."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable, Collection, Sequence

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func, sdy
from kiln.frontend.core import passes
from kiln.frontend.core.errors import KilnError
from kiln.frontend.core.ir import IR, Literal, Var

from . import extension
from .hlo import add_frontend_attributes, const, frontend_attributes, i32_attr, sdy_sharding
from .registry import rules
from .types import element_type, tensor_type


class LoweringError(KilnError):
    """A primitive has no emission rule, or its rule failed."""


class MissingLoweringRule(LoweringError, NotImplementedError):
    """A primitive defined with kiln.extend.core.Primitive has no emission rule for the platform (a
    ``NotImplementedError``, as JAX's)."""


class EmitContext:
    """What an emission rule knows of its lowering, and how it emits a sub-IR.

    ``platform`` is the backend the module is lowered for ('cpu', 'cuda', ...; None when unknown), for
    rules that emit platform-specific code; :meth:`has_custom_call_target` says whether the runtime
    can run a given custom-call target there (e.g. jaxlib's LAPACK kernels on CPU). Rules build
    operations with the value helpers of :mod:`kiln.lowering.hlo`.
    """

    def __init__(self, platform: str | None = None,
                 custom_call_targets: Callable[[], Collection[str]] | None = None,
                 mesh: MeshLayout | None = None, native_bf16: bool = False) -> None:
        self.platform = platform
        self.native_bf16 = native_bf16  # the CPU lowered for multiplies bf16 natively (the bf16 dot rule)
        self.mesh = mesh  # the device mesh of a partitioned program, else None
        # Inside a shard_map body: the mesh's ((name, size), ...), all manual; collectives name these axes.
        self.manual_axes: tuple[tuple[str, int], ...] | None = None
        self._targets_provider = custom_call_targets
        self._targets: Collection[str] | None = None
        # Locations of the emitted operations: ``loc("jit(f)/mul"("file.py":12:4))`` (as JAX's), one per
        # (primitive, source); the prefix names the jitted function when the caller gave it.
        self.name_prefix = ""
        self._locations: dict = {}
        # XLA metadata (an equation's source.metadata) -> its frontend attributes, built once per lowering; and
        # while the rule of an equation with metadata runs, the operations its sub-IRs' equations created (which
        # carry their own metadata), else None (see _tagged).
        self._frontend_attributes: dict = {}
        self._claimed: set | None = None
        # Host callbacks, in the order of their custom calls' indices (compile_and_load's host_callbacks=).
        self.host_callbacks: list = []
        # The token threaded through ordered effects (None until the first one needs it), and the meshes
        # the callbacks' shardings name ('maximal': device 0 of a partitioned program; 'empty': per shard).
        self.token: ir.Value | None = None
        self.callback_meshes: set[str] = set()
        # Values whose layout the caller reports (kiln.debug.inspect_array_sharding): (inspector, probe, rank), the
        # probe None where the program is not partitioned (one device, or inside shard_map).
        self.sharding_probes: list[tuple] = []

    def add_host_callback(self, callback) -> int:
        """Register a host callable; returns the index its custom call names."""
        self.host_callbacks.append(callback)
        return len(self.host_callbacks) - 1

    def current_token(self) -> ir.Value:
        """The token ordered effects thread (created here on first use)."""
        if self.token is None:
            self.token = ir.Operation.create("stablehlo.after_all", results=[ir.Type.parse("!stablehlo.token")],
                                             operands=[]).result
        return self.token

    def threads_token(self, *bodies: IR) -> bool:
        """Whether a region emitting ``bodies`` must take and return the token (a body with ordered effects).
        The token then exists before the region is built."""
        if any(passes.has_ordered_effects(b) for b in bodies):
            self.current_token()
            return True
        return False

    def has_custom_call_target(self, name: str) -> bool:
        """Whether a ``stablehlo.custom_call @name`` will compile and run on this platform."""
        if self._targets is None:
            # Asked lazily: providing the targets may register them (LAPACK imports SciPy).
            self._targets = self._targets_provider() if self._targets_provider is not None else ()
        return name in self._targets

    def emit_body(self, body: IR, args: Sequence[ir.Value]) -> list[ir.Value]:
        """Emit a sub-IR (a loop body, a branch): optimised first, as the top level is."""
        return self.emit_ir(passes.optimize(body), args)

    def location(self, eqn) -> ir.Location:
        """The MLIR location of ``eqn``'s operations: its primitive's name (after the function's) around the
        user's file, line and column that created it (``Location.unknown`` keeps nothing else)."""
        src = eqn.source
        code = None if src is None else src.code  # (None too for XLA metadata with no known location)
        key = (eqn.prim.name, None) if code is None else (eqn.prim.name, id(code), src.lasti)
        loc = self._locations.get(key)
        if loc is None:
            name = self.name_prefix + eqn.prim.name
            if code is None:
                loc = ir.Location.name(name)
            else:
                line, col = src.position
                loc = ir.Location.name(name, childLoc=ir.Location.file(src.file, line, col))
            self._locations[key] = loc
        return loc

    def _tagged(self, metadata: tuple | None, emit: Callable[[], object]) -> object:
        """``emit()`` (an equation's rule) with every operation it creates carrying the XLA metadata ``metadata``
        (``(key, value)`` string pairs, or None) as ``mhlo.frontend_attributes``: those at the insertion point and
        those it builds in their regions (a loop's counter), but not those of the equations of its sub-IRs (a
        loop's body), which carry their own. The operations are built in the block of a scratch operation, then
        moved before it (no walk over the operations emitted before); the equations of sub-IRs emitted meanwhile
        come here too (``_claimed`` is set), so that the walk over the new operations skips theirs."""
        outer = self._claimed
        self._claimed = claimed = set()
        scratch = ir.Operation.create("stablehlo.case", regions=1)  # (any operation with a region would do)
        block = scratch.regions[0].blocks.append()
        try:
            with ir.InsertionPoint(block):
                out = emit()
        finally:  # (also on a failure: what was built stays valid, where it belongs)
            self._claimed = outer
            created = [o.operation for o in block.operations]
            for operation in created:
                operation.move_before(scratch)
            scratch.erase()
        if outer is not None:
            outer.update(created)
        if metadata is not None:
            attributes = self._frontend_attributes.get(metadata)
            if attributes is None:
                attributes = self._frontend_attributes[metadata] = frontend_attributes(metadata)

            def tag(operation: ir.Operation) -> ir.WalkResult:
                if operation in claimed:
                    return ir.WalkResult.SKIP
                if not operation.name.endswith(".return"):  # (a region's terminator is no operation of XLA's)
                    add_frontend_attributes(operation, attributes)
                return ir.WalkResult.ADVANCE
            for operation in created:
                operation.walk(tag, ir.WalkOrder.PRE_ORDER)
        return out

    def emit_ir(self, body: IR, args: Sequence[ir.Value]) -> list[ir.Value]:
        """Emit the equations of ``body`` with its constvars+invars bound to ``args``. An equation created under
        ``set_xla_metadata`` (its ``source.metadata``) has its operations tagged (:meth:`_tagged`)."""
        env: dict[Var, ir.Value] = dict(zip(body.constvars + body.invars, args))

        def read(a):
            if isinstance(a, Literal):
                value = const(a.val, a.aval.dtype).v
                if self._claimed is not None:  # (a literal's constant is untagged, as in JAX)
                    self._claimed.add(value.owner.operation)
                return value
            return env[a]

        for eqn in body.eqns:
            src = eqn.source
            metadata = None if src is None else src.metadata
            if eqn.prim.lowering_rules is not None:  # a rule the primitive carries (kiln.interpreters.mlir)
                own = extension.rule_for(eqn.prim, self.platform)
                if own is None:
                    raise MissingLoweringRule(f"MLIR translation rule for primitive '{eqn.prim.name}' not found for "
                                              f"platform {self.platform}: register one with "
                                              "kiln.interpreters.mlir.register_lowering(primitive, rule, platform)")
                with self.location(eqn):
                    ins = [read(a) for a in eqn.inputs]
                    if metadata is None and self._claimed is None:
                        outs = extension.emit(self, eqn, own, ins)
                    else:
                        outs = self._tagged(metadata, lambda: extension.emit(self, eqn, own, ins))
                env.update(zip(eqn.outputs, outs))
                continue
            rule = rules.get(eqn.prim.name)
            if rule is None and eqn.prim.inline_param:
                # A call-like equation the inlining pass did not reach (inside a sub-IR: a cond branch,
                # a remat body...): emit its body in place.
                outs = self.emit_ir(eqn.params[eqn.prim.inline_param].ir, [read(a) for a in eqn.inputs])
                env.update(zip(eqn.outputs, outs))
                continue
            if rule is None:
                raise LoweringError(f"kiln: primitive {eqn.prim.name!r} has no StableHLO emission rule")
            with self.location(eqn):
                if metadata is None and self._claimed is None:
                    outs = rule(self, eqn, *[read(a) for a in eqn.inputs])
                else:
                    ins = [read(a) for a in eqn.inputs]  # (before: a literal's constant is untagged, as in JAX)
                    outs = self._tagged(metadata, lambda: rule(self, eqn, *ins))
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            env.update(zip(eqn.outputs, outs))
        return [read(a) for a in body.outvars]


@dataclass
class LoweredModule:
    module: ir.Module
    kept_inputs: list[bool]  # for each of constvars + invars: is it a parameter of main?
    out_avals: list
    _text: str | None = field(default=None, repr=False)
    # The host callables of the module's Python-callback custom calls, by index, and whether some of them
    # are ordered (the module threads a token through them): for runtime.compile(host_callbacks=...).
    host_callbacks: list = field(default_factory=list)
    ordered_effects: bool = False
    # Donated inputs (positions among constvars + invars) that are parameters of main but match no output of
    # their shape and dtype: their buffers cannot be reused (JAX warns "Some donated buffers were not usable").
    unusable_donations: list[int] = field(default_factory=list)
    # (inspector, probe, rank) per inspect_sharding equation: see EmitContext.sharding_probes.
    sharding_probes: list = field(default_factory=list)

    def as_text(self, debug_info: bool = False) -> str:
        """The module as MLIR text (rendered once), without locations: the text compile caches are keyed on.
        ``debug_info=True``: with each operation's ``loc(...)`` (primitive, file, line and column)."""
        if debug_info:
            return self.module.operation.get_asm(enable_debug_info=True)
        if self._text is None:
            self._text = self.module.operation.get_asm(enable_debug_info=False)
        return self._text


@dataclass(frozen=True)
class MeshLayout:
    """A program partitioned over a device mesh by XLA's SPMD partitioner (Shardy): the mesh's axes, and for
    each input (constvars + invars) and output the mesh axes splitting each dimension (major to minor), or
    None to let the partitioner choose."""
    axes: tuple[tuple[str, int], ...]
    in_specs: tuple[tuple[tuple[str, ...], ...] | None, ...]
    out_specs: tuple[tuple[tuple[str, ...], ...] | None, ...]
    # Per input and output, the kind of memory it is in when not the devices' default ('pinned_host', ...), else
    # None; empty: all in the default memory.
    in_memory: tuple[str | None, ...] = ()
    out_memory: tuple[str | None, ...] = ()

    @property
    def num_partitions(self) -> int:
        return math.prod(size for _, size in self.axes)


def _sdy_mesh(layout: MeshLayout) -> None:
    axes = ", ".join(f'"{n}"={s}' for n, s in layout.axes)
    sdy.MeshOp("mesh", ir.Attribute.parse(f"#sdy.mesh<[{axes}]>"))


def _with_sharding(attrs: ir.DictAttr | None, spec, memory: str | None = None) -> ir.DictAttr:
    entries = {} if attrs is None else {a.name: a.attr for a in attrs}
    if spec is not None:
        entries["sdy.sharding"] = sdy_sharding(spec)
    if memory is not None:
        entries["mhlo.memory_kind"] = ir.StringAttr.get(memory)
    return ir.DictAttr.get(entries)


def _placed(value: ir.Value, memory: str) -> ir.Value:
    """``value`` moved into memory ``memory`` (XLA's ``annotate_device_placement``, which its host-offloading
    passes turn into the transfer)."""
    return ir.Operation.create("stablehlo.custom_call", results=[value.type], operands=[value], attributes={
        "call_target_name": ir.StringAttr.get("annotate_device_placement"),
        "has_side_effect": ir.BoolAttr.get(True),
        "backend_config": ir.StringAttr.get(""),
        "mhlo.frontend_attributes": ir.DictAttr.get({"_xla_buffer_placement": ir.StringAttr.get(memory)}),
    }).result


_UNSAFE_IN_NAME = re.compile(r"[^\w.-]")  # replaced by "_" in a module's name (as JAX's)


def lower(ir_: IR, *, context: ir.Context, donated: Sequence[bool] = (), keep_unused: bool = False,
          name: str = "main", platform: str | None = None,
          custom_call_targets: Callable[[], Collection[str]] | None = None,
          mesh: MeshLayout | None = None, debug_name: str | None = None,
          embedded_consts: Sequence | None = None, platform_index_param: bool = False,
          native_bf16: bool = False) -> LoweredModule:
    """Optimise ``ir_`` and emit it as the ``@main`` function of a StableHLO module.

    ``donated`` flags, for each of constvars + invars, an input whose buffer the program may reuse
    for an output. Unused inputs are dropped from the signature unless ``keep_unused``.
    ``platform`` and ``custom_call_targets`` (a callable returning the custom-call target names the
    runtime supports there, called at most once and only if a rule asks) go to the
    :class:`EmitContext`; without them rules emit portable StableHLO only. ``debug_name`` (the jitted
    function's name) prefixes the operations' location names: ``jit(f)/mul``.
    ``embedded_consts`` (host arrays, one per constvar) writes the constvars into the module as
    ``stablehlo.constant`` instead of parameters (a self-contained module, as export needs);
    ``platform_index_param`` adds a leading, unused ``tensor<i32>`` parameter (JAX's calling convention for a
    module exported for several platforms). ``native_bf16``: the module is for this host's CPU, which multiplies
    bfloat16 natively (see the dot_general rule).
    """
    body = passes.optimize(ir_)
    all_inputs = body.constvars + body.invars
    used = passes.used_inputs(body)
    kept = [True] * len(all_inputs) if keep_unused else used
    if embedded_consts is not None:
        kept = [False] * len(body.constvars) + kept[len(body.constvars):]
    donated = list(donated) + [False] * (len(all_inputs) - len(donated))
    params = [v for v, k in zip(all_inputs, kept) if k]
    with context, ir.Location.unknown():
        module = ir.Module.create()
        if debug_name:  # JAX's module name: XLA names the HLO module (profiles, XLA's dumps) after it
            module.operation.attributes["sym_name"] = ir.StringAttr.get("jit_" + _UNSAFE_IN_NAME.sub("_", debug_name))
        module.operation.attributes["mhlo.num_partitions"] = i32_attr(1 if mesh is None else mesh.num_partitions)
        module.operation.attributes["mhlo.num_replicas"] = i32_attr(1)
        in_types = [tensor_type(v.aval) for v in params]
        out_types = [tensor_type(a.aval) for a in body.outvars]
        if platform_index_param:
            in_types = [ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))] + in_types
        with ir.InsertionPoint(module.body):
            arg_attrs, unmatched = _donation_attrs(params, kept, donated, body, mesh)
            if platform_index_param:
                arg_attrs = [ir.DictAttr.get({})] + arg_attrs
            if mesh is not None:
                _sdy_mesh(mesh)
                in_specs = [spec for spec, k in zip(mesh.in_specs, kept) if k]
                in_memory = [m for m, k in zip(mesh.in_memory or (None,) * len(kept), kept) if k]
                arg_attrs = [_with_sharding(a, spec, m) for a, spec, m in zip(arg_attrs, in_specs, in_memory)]
            fn = func.FuncOp(name, ir.FunctionType.get(in_types, out_types))
            fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
            fn.arg_attrs = ir.ArrayAttr.get(arg_attrs)
            out_memory = (mesh.out_memory if mesh is not None else ()) or (None,) * len(out_types)
            if mesh is not None:
                fn.result_attrs = ir.ArrayAttr.get([_with_sharding(None, spec, m)
                                                    for spec, m in zip(mesh.out_specs, out_memory)])
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                args = iter(block.arguments)
                if platform_index_param:
                    next(args)
                # Unused inputs that were dropped still need a placeholder for emit_ir's binding.
                values = [next(args) if k else None for k in kept]
                if embedded_consts is not None:
                    values[:len(body.constvars)] = [const(c, v.aval.dtype).v
                                                    for c, v in zip(embedded_consts, body.constvars)]
                ctx = EmitContext(platform, custom_call_targets, mesh, native_bf16)
                if debug_name:
                    ctx.name_prefix = f"jit({debug_name})/"
                outs = ctx.emit_ir(body, values)
                outs = [o if m is None else _placed(o, m) for o, m in zip(outs, out_memory)]
                func.ReturnOp(outs)
            if "maximal" in ctx.callback_meshes:  # callbacks of a partitioned program run on device 0
                sdy.MeshOp("maximal_mesh_0", ir.Attribute.parse("#sdy.mesh<[], device_ids=[0]>"))
            if "empty" in ctx.callback_meshes:  # callbacks inside shard_map run on every device
                sdy.MeshOp("empty_mesh", ir.Attribute.parse("#sdy.mesh<[]>"))
    return LoweredModule(module, kept, [a.aval for a in body.outvars], host_callbacks=ctx.host_callbacks,
                         ordered_effects=ctx.token is not None, unusable_donations=unmatched,
                         sharding_probes=ctx.sharding_probes)


def type_strings(avals: Sequence, context: ir.Context) -> list[str]:
    """The MLIR tensor types of ``avals`` as text (``tensor<3xf32>``), as a module's signature prints them."""
    with context, ir.Location.unknown():
        return [str(tensor_type(a)) for a in avals]


def custom_calls(module: ir.Module) -> list[tuple[str, str]]:
    """``(target name, location)`` of every ``stablehlo.custom_call`` in ``module``, nested regions included."""
    found = []

    def walk(operation: ir.Operation) -> None:
        if operation.name == "stablehlo.custom_call":
            found.append((ir.StringAttr(operation.attributes["call_target_name"]).value, str(operation.location)))
        for region in operation.regions:
            for block in region:
                for child in block:
                    walk(child.operation)
    with module.context:
        walk(module.operation)
    return found


def _donation_attrs(params, kept, donated, body: IR, mesh: MeshLayout | None = None
                    ) -> tuple[list[ir.DictAttr], list[int]]:
    """``tf.aliasing_output`` for a donated input matching an output, else ``jax.buffer_donor``; and the
    positions (among all inputs) of the donated parameters that matched no output. In a partitioned program an
    input aliases an output only when both are laid out alike; one whose layout the partitioner chooses
    (``None``) or lays out otherwise gets ``jax.buffer_donor`` (as JAX's): XLA aliases the two once it has
    partitioned the program if their blocks match, else the output takes a buffer of its own."""
    free_outputs = list(range(len(body.outvars)))
    attrs, unmatched = [], []
    positions = [i for i, k in enumerate(kept) if k]
    donated_kept = [d for d, k in zip(donated, kept) if k]
    partitioned = mesh is not None and mesh.num_partitions > 1

    def same_layout(position: int, i: int) -> bool:
        if not partitioned:
            return True
        spec = mesh.out_specs[i]
        memory = mesh.out_memory[i] if mesh.out_memory else None
        return (spec is not None and spec == mesh.in_specs[position]
                and memory == (mesh.in_memory[position] if mesh.in_memory else None))

    for v, d, position in zip(params, donated_kept, positions):
        entry = {}
        if d:
            match = next((i for i in free_outputs if body.outvars[i].aval.shape == v.aval.shape
                          and body.outvars[i].aval.dtype == v.aval.dtype), None)
            if match is not None and not same_layout(position, match):
                entry["jax.buffer_donor"] = ir.BoolAttr.get(True)
            elif match is not None:
                free_outputs.remove(match)
                entry["tf.aliasing_output"] = i32_attr(match)
            else:
                entry["jax.buffer_donor"] = ir.BoolAttr.get(True)
                unmatched.append(position)
        attrs.append(ir.DictAttr.get(entry))
    return attrs, unmatched


__all__ = ["lower", "type_strings", "LoweredModule", "MeshLayout", "EmitContext", "LoweringError", "element_type",
           "tensor_type"]
