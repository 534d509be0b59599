"""Programs over a device mesh: a jitted function whose inputs are laid out over several devices (or that
was given ``in_shardings``/``out_shardings``) is compiled once for the whole mesh; XLA's SPMD partitioner
(Shardy) splits it, inserting the collectives. kiln only states the layouts."""
from __future__ import annotations

import dataclasses
import itertools
import math
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from kiln import lowering, runtime

from ..core import caches
from ..core.avals import ShapeDtypeStruct
from ..core.errors import KilnError
from ..core.ir import IR
from . import dispatch
from .array import Array
from .sharding import Mesh, NamedSharding, PartitionSpec, Sharding, runtime_sharding


@dataclass(frozen=True)
class MeshPlacement:
    """Where a jitted program runs when it spans a mesh: the mesh, each input leaf's sharding and each
    output's (None: the partitioner chooses). Hashable: part of the jit cache key."""
    mesh: Mesh
    in_shardings: tuple[NamedSharding, ...]
    out_shardings: tuple[NamedSharding | None, ...] | NamedSharding | None
    # The sharding (and rank) of the first argument that came laid out over the mesh (a committed array, a
    # ShapeDtypeStruct with a sharding): an output of that rank laid out as it is gets that very sharding.
    first_laid_out: tuple[NamedSharding, int] | None = None

    @property
    def devices(self) -> tuple[runtime.Device, ...]:
        return tuple(self.mesh.devices.flat)


class MeshMismatchError(KilnError, ValueError):
    """Inputs or outputs of one computation laid out over different meshes."""


def _mesh_of(sharding: Sharding) -> Mesh:
    if isinstance(sharding, NamedSharding):
        return sharding.mesh
    raise TypeError(f"kiln.jit: shardings must be kiln.sharding.NamedSharding here, got {sharding!r}")


def mesh_text(mesh: Mesh) -> str:
    """A mesh as error messages name it: its axes and its devices (meshes of the same axes over other devices, or
    over the same devices in another order, print alike otherwise)."""
    return f"{mesh} of devices {mesh.device_ids.ravel().tolist()}"


def placement_for(leaves: Sequence[Any], leaf_names: Callable[[], Sequence[str]], in_shardings: Sequence[Any] | None,
                  out_shardings: Any, where: str) -> MeshPlacement | None:
    """The mesh placement of a call with ``leaves``, or None when it runs on one device. Inputs laid out
    over a mesh (or given ``in_shardings``) fix the mesh; the other inputs are replicated over it."""
    given = list(in_shardings) if in_shardings is not None else [None] * len(leaves)
    found, first_laid_out = [], None
    for i, leaf in enumerate(leaves):
        own = None
        if type(leaf) is Array:
            if isinstance(leaf._sharding, NamedSharding) and leaf._committed:
                own = leaf._sharding
        elif type(leaf) is ShapeDtypeStruct and isinstance(leaf.sharding, NamedSharding):
            own = leaf.sharding  # lower(ShapeDtypeStruct(shape, dtype, sharding=...)), as JAX's
        s = given[i] if given[i] is not None else own
        if own is not None and first_laid_out is None:
            first_laid_out = (s, len(leaf.shape))
        found.append(s)
    meshes = [(i, _mesh_of(s)) for i, s in enumerate(found) if s is not None]
    if out_shardings is not None:
        outs = out_shardings if isinstance(out_shardings, tuple) else (out_shardings,)
        meshes += [(None, _mesh_of(s)) for s in outs if s is not None]
    if not meshes:
        return None
    mesh = meshes[0][1]
    for i, m in meshes:
        if m != mesh:
            names = leaf_names()  # only for the message: naming the arguments costs a pytree walk
            what = f"argument {names[i]}" if i is not None else "out_shardings"
            first = f"argument {names[meshes[0][0]]}" if meshes[0][0] is not None else "out_shardings"
            raise MeshMismatchError(f"{where}: {first} is laid out over {mesh_text(mesh)} but {what} over "
                                    f"{mesh_text(m)}; every input and output of one computation must use the same "
                                    "mesh. Move the values with kiln.device_put(x, NamedSharding(mesh, spec)) onto "
                                    "one mesh.")
    for k, leaf in enumerate(leaves):
        if type(leaf) is Array and leaf._committed and leaf._device is not None and leaf._device not in \
                mesh.devices.flat:
            name = leaf_names()[k]
            raise MeshMismatchError(f"{where}: argument {name} is committed to {leaf._device!r}, which is not in the "
                                    f"mesh {mesh} the other arguments use; move it with kiln.device_put first")
    replicated = NamedSharding(mesh, PartitionSpec())
    return MeshPlacement(mesh, tuple(s if s is not None else replicated for s in found), out_shardings, first_laid_out)


def _mesh_in_params(params: dict) -> Mesh | None:
    for value in params.values():
        for sub in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(sub, Mesh):
                return sub
            if isinstance(sub, NamedSharding):
                return sub.mesh
            inner = getattr(sub, "ir", sub)
            if isinstance(inner, IR):
                mesh = program_mesh(inner)
                if mesh is not None:
                    return mesh
    return None


def program_mesh(ir: IR) -> Mesh | None:
    """The mesh a program must run over because an equation names one (a sharding constraint, a shard_map;
    sub-programs included), or None. Remembered per IR: eager calls of a jitted body ask again each time."""
    try:
        return _program_meshes[ir]
    except (KeyError, TypeError):
        pass
    found = None
    for eqn in ir.eqns:
        found = _mesh_in_params(eqn.params)
        if found is not None:
            break
    try:
        _program_meshes[ir] = found
    except TypeError:  # an IR that cannot be weakly referenced: not remembered
        pass
    return found


_program_meshes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_program_meshes.clear)


def params_mesh(params: dict) -> Mesh | None:
    """The mesh one equation with ``params`` must run over, or None (eager ops ask this)."""
    return _mesh_in_params(params) if params else None


def program_in_shardings(ir: IR, mesh: Mesh) -> tuple[NamedSharding, ...]:
    """Layouts for the inputs of a program that runs over ``mesh`` though its inputs are not laid out: an input
    that a shard_map takes directly gets that shard_map's layout (so each device receives only its block),
    any other is replicated."""
    replicated = NamedSharding(mesh, PartitionSpec())
    chosen: dict = {}
    for eqn in ir.eqns:
        if eqn.prim.name == "shard_map" and eqn.params["mesh"] == mesh:
            for v, dims in zip(eqn.inputs, eqn.params["in_specs"]):
                if v not in chosen:
                    chosen[v] = NamedSharding(mesh, PartitionSpec(*[None if not a else a[0] if len(a) == 1 else a
                                                                    for a in dims]))
        else:
            for v in eqn.inputs:
                chosen.setdefault(v, replicated)
    return tuple(chosen.get(v, replicated) for v in ir.invars)


def spec_dims(sharding: NamedSharding, ndim: int) -> tuple[tuple[str, ...], ...]:
    """Per dimension, the mesh axes splitting it (what the lowering writes as ``sdy.sharding``)."""
    sharding._cuts(ndim)  # checks the spec's rank against the array's
    return tuple(sharding.spec.axis_names_of(d) for d in range(ndim))


def named_from_runtime(mesh: Mesh, layout: runtime.SpmdSharding, ndim: int) -> Sharding:
    """The ``NamedSharding`` over ``mesh`` that cuts an ``ndim``-d array as ``layout`` does (the partitioner's
    choice for an output), preferring the shortest spec."""
    cuts, coords = runtime.tile_layout(layout, ndim)
    sizes = mesh.shape
    options = []
    for n in cuts:
        dim_options = [()] if n == 1 else []
        if n > 1:
            for k in range(1, len(mesh.axis_names) + 1):
                for axes in itertools.permutations(mesh.axis_names, k):
                    if math.prod(sizes[a] for a in axes) == n:
                        dim_options.append(axes)
        options.append(dim_options)
    for choice in itertools.product(*options):
        used = [a for axes in choice for a in axes]
        if len(used) != len(set(used)):
            continue
        # without trailing Nones, as JAX's inferred output shardings over Auto mesh axes: P('x'), P() (replicated)
        spec_entries = [None if not axes else axes[0] if len(axes) == 1 else axes for axes in choice]
        while spec_entries and spec_entries[-1] is None:
            spec_entries.pop()
        candidate = NamedSharding(mesh, PartitionSpec(*spec_entries))
        if candidate._coords(ndim) == coords:
            return candidate
    raise NotImplementedError(f"kiln.jit: the partitioner laid an output out as {layout.hlo_text}, which no "
                              f"PartitionSpec over {mesh} describes; pass out_shardings to choose the layout")


def _report_probed(lowered: lowering.LoweredModule, placement: MeshPlacement) -> None:
    """Tell the inspectors of ``lowered``'s partitioned values (kiln.debug.inspect_array_sharding) the layouts
    XLA's partitioner chose for them, as NamedShardings over the mesh, once the program is compiled."""
    mesh = placement.mesh
    for inspector, probe, ndim in lowered.sharding_probes:
        if probe is None or probe.hlo_text is None:  # (not partitioned: reported when lowered)
            continue
        if runtime.sharding_probe.is_manual(probe.hlo_text):
            inspector.report(NamedSharding(mesh, PartitionSpec()))
            continue
        layout = runtime.spmd_sharding(placement.devices, probe.hlo_text)
        try:
            inspector.report(named_from_runtime(mesh, layout, ndim))
        except NotImplementedError:
            raise NotImplementedError(
                f"kiln.debug.inspect_array_sharding: the partitioner laid the value out as {probe.hlo_text}, "
                f"which no PartitionSpec over {mesh} describes; constrain it with "
                "kiln.lax.with_sharding_constraint before inspecting it") from None


@dataclass
class CompiledSPMD:
    """An IR compiled for a mesh."""
    executable: runtime.SpmdExecutable
    lowered: lowering.LoweredModule
    out_avals: list
    kept: list[bool]
    placement: MeshPlacement
    out_shardings: list[Sharding]

    def run(self, buffers: Sequence[Any], committed: bool) -> list[Array]:
        outs = self.executable.execute(list(buffers))
        return [Array(b, a, s._device_assignment[0] if s.num_devices == 1 else None, True, s)
                for b, a, s in zip(outs, self.out_avals, self.out_shardings)]


def _per_output(out_shardings: Any, n: int) -> tuple:
    """A placement's out_shardings as one entry (a sharding or None) per output."""
    if out_shardings is None:
        return (None,) * n
    if isinstance(out_shardings, NamedSharding):
        return (out_shardings,) * n
    return tuple(out_shardings)


def _out_specs(placement: MeshPlacement, out_avals: list) -> tuple:
    outs = _per_output(placement.out_shardings, len(out_avals))
    return tuple(None if s is None else spec_dims(s, len(a.shape)) for s, a in zip(outs, out_avals))


def lower_ir(ir: IR, placement: MeshPlacement, *, donated: Sequence[bool], keep_unused: bool,
             n_consts: int, debug_name: str | None = None) -> lowering.LoweredModule:
    """Lower ``ir`` with its inputs' and outputs' layouts over ``placement``'s mesh (consts replicated)."""
    mesh = placement.mesh
    replicated = NamedSharding(mesh, PartitionSpec())
    in_shardings = [replicated] * n_consts + list(placement.in_shardings)
    in_specs = tuple(spec_dims(s, len(v.aval.shape)) for s, v in zip(in_shardings, ir.constvars + ir.invars))
    outs = _per_output(placement.out_shardings, len(ir.outvars))
    in_memory, out_memory = tuple(s._memory for s in in_shardings), tuple(s and s._memory for s in outs)
    layout = lowering.MeshLayout(tuple(mesh.shape_tuple), in_specs, _out_specs(placement, [v.aval for v in ir.outvars]),
                                 in_memory if any(in_memory) else (), out_memory if any(out_memory) else ())
    lowered = dispatch.lower_ir(ir, donated=donated, keep_unused=keep_unused, device=placement.devices[0],
                                mesh=layout, debug_name=debug_name)
    dispatch.report_unpartitioned(lowered, replicated)
    return lowered


def compile_ir(ir: IR, placement: MeshPlacement, *, donated: Sequence[bool], keep_unused: bool,
               n_consts: int, debug_name: str | None = None,
               lowered: lowering.LoweredModule | None = None, compiler_options: Sequence = ()) -> CompiledSPMD:
    """Lower ``ir`` for ``placement``'s mesh (unless ``lowered``, the module :func:`lower_ir` made with these
    arguments, is given) and compile it (with XLA's ``compiler_options``, ``(name, value)`` pairs); XLA's
    partitioner splits it over the devices."""
    if lowered is None:
        lowered = lower_ir(ir, placement, donated=donated, keep_unused=keep_unused, n_consts=n_consts,
                           debug_name=debug_name)
    exe = runtime.compile_spmd(lowered.module, placement.devices, [(a.shape, a.dtype) for a in lowered.out_avals],
                               num_donated=sum(bool(d) for d in donated), text=lowered.as_text(),
                               host_callbacks=lowered.host_callbacks, ordered_effects=lowered.ordered_effects,
                               compiler_options=compiler_options,
                               use_cache=not any(probe for _, probe, _ in lowered.sharding_probes))
    out_avals = [v.aval for v in ir.outvars]
    given = _per_output(placement.out_shardings, len(out_avals))
    one_device = [not runtime.is_tiled_layout(s) for s in exe.out_shardings]
    if any(one_device) and all(g is None for g, o in zip(given, one_device) if o):
        # The partitioner left an output on one device (`{maximal device=0}`: a host callback's result, which
        # runs on the first device, returned as it is). A kiln.Array over a mesh is laid out by a PartitionSpec,
        # so such an output is made replicated (as JAX's are once computed with further), and compiled again.
        replicated = NamedSharding(placement.mesh, PartitionSpec())
        pinned = tuple(replicated if o else g for g, o in zip(given, one_device))
        return compile_ir(ir, dataclasses.replace(placement, out_shardings=pinned), donated=donated,
                          keep_unused=keep_unused, n_consts=n_consts, debug_name=debug_name,
                          compiler_options=compiler_options)
    _report_probed(lowered, placement)
    outs = [named_from_runtime(placement.mesh, s, len(a.shape)) for s, a in zip(exe.out_shardings, out_avals)]
    outs = [o if kind is None else o.with_memory_kind(kind) for o, kind in zip(outs, exe.out_memory_kinds)]
    # An output whose sharding the user gave keeps that very object (as JAX's: out.sharding == out_shardings),
    # when the partitioner laid it out so; otherwise, as JAX's, one laid out as the first argument that came
    # laid out over the mesh gets that argument's sharding (P('i', None) stays that, not P('i',)).
    first = placement.first_laid_out
    outs = [g if g is not None and (g == o or g.is_equivalent_to(o, len(a.shape)))
            else first[0] if first is not None and first[1] == len(a.shape) and first[0].is_equivalent_to(
                o, len(a.shape)) else o
            for g, o, a in zip(given, outs, out_avals)]
    return CompiledSPMD(exe, lowered, out_avals, lowered.kept_inputs, placement, outs)


def _passed_as_is(x: Any, sharding: NamedSharding) -> bool:
    """Whether argument ``x`` is already laid out as ``sharding`` (perhaps described over another mesh of the
    same devices), so that its buffer is passed to the program as it is."""
    return type(x) is Array and x._device is None and (x._sharding == sharding or x._sharding.is_equivalent_to(
        sharding, x.ndim))


def passed_buffers(leaves: Sequence[Any], in_shardings: Sequence[NamedSharding], kept: Sequence[bool]) -> list | None:
    """The buffers of the ``kept`` leaves, when every leaf is a committed kiln array that :func:`to_buffer` passes
    as it is (no transfer, no re-layout); None otherwise. jaxlib's C++ dispatch can then run the call: it passes
    such buffers on unchanged too."""
    buffers = []
    for leaf, sharding, k in zip(leaves, in_shardings, kept):
        if not _passed_as_is(leaf, sharding) or not leaf._committed:
            return None
        if k:
            buffers.append(leaf._buf)
    return buffers


def to_buffer(x: Any, sharding: NamedSharding) -> Any:
    """The buffer of argument ``x`` laid out by ``sharding`` (transferring or re-laying it out as needed)."""
    if _passed_as_is(x, sharding):
        return x._buf
    if type(x) is Array and not x._holds_value():
        raise MeshMismatchError(f"kiln.jit: an argument spans devices of other processes laid out as {x.sharding}, "
                                f"but the computation wants it as {sharding}; kiln cannot re-lay out such an array "
                                "on its way in. Pass in_shardings matching its layout (or leave them unspecified)")
    value = np.asarray(x) if type(x) is Array else dispatch.canonical_host_array(x)
    # Each process puts the pieces of its own devices (all of them in a single-process program).
    indices = sharding.addressable_devices_indices_map(value.shape)
    devices = [d for d in sharding._device_assignment if d in indices]
    return runtime.put_sharded([value[indices[d]] for d in devices], runtime_sharding(sharding, value.ndim),
                               value.shape, value.dtype)
