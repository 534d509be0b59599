"""JAX's ``jax.experimental.serialize_executable``: a compiled function (``kiln.jit(f).lower(...).compile()``)
as bytes, and back as a callable compiled function, without tracing or compiling again.

``serialize(compiled)`` returns ``(bytes, in_tree, out_tree)``: the pytree structures of the arguments and
results are returned as they are (they may hold user classes, which bytes cannot), and must be passed to
``deserialize_and_load`` with the bytes. The bytes hold a record of the signature (argument and result types,
donations, the device or mesh and the layouts over it), the values of the constants the function closes over,
and the executable itself (:mod:`kiln.runtime.serialized_executable`). Loading needs the same jaxlib and
backend; the devices are found by id among ``execution_devices``.

As JAX warns: loading an executable runs code compiled elsewhere; never load bytes from an untrusted source.
"""
from __future__ import annotations

import io
import json
import struct
from typing import Any, Sequence

import numpy as np
from kiln.runtime import serialized_executable as runtime_serialized

from kiln import runtime

from ..core import tree_util
from ..core.avals import ShapedArray, ShapeDtypeStruct
from ..core.config import config, no_execution_error
from ..core.errors import KilnError
from ..core.tracing import Tracer, abstractify
from . import dispatch, spmd
from .array import Array
from .jit import ArgInfo, Compiled
from .layout import formats_of
from .sharding import AxisType, Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

MAGIC = b"KILNCMP\0"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sHI")  # magic, format version, length of the JSON record
_WHERE = "kiln.experimental.serialize_executable"


class SerializationError(KilnError, ValueError):
    """A compiled function that cannot be serialized, or bytes that cannot be loaded."""


# -- the record of a signature ------------------------------------------------------------------------------

def _aval_record(aval: Any, what: str) -> list:
    if type(aval) is not ShapedArray:
        raise SerializationError(f"{_WHERE}.serialize: {what} is a {aval} (not a plain array type: PRNG keys and "
                                 "other extended dtypes cannot be serialized); pass kiln.random.key_data(key) instead")
    return [list(aval.shape), aval.dtype.name, aval.weak_type]


def _aval(record: list) -> ShapedArray:
    shape, dtype, weak = record
    return ShapedArray(tuple(shape), runtime_serialized.dtype_from_name(dtype), weak)


def _spec_record(spec: PartitionSpec) -> list:
    out = []
    for entry in spec:
        if entry is not None and not isinstance(entry, (str, tuple)):
            raise SerializationError(f"{_WHERE}.serialize: the layout {spec} has an entry {entry!r} kiln cannot "
                                     "write; give the function explicit in_shardings/out_shardings")
        out.append(list(entry) if isinstance(entry, tuple) else entry)
    return out


def _spec(record: list) -> PartitionSpec:
    return PartitionSpec(*[tuple(e) if isinstance(e, list) else e for e in record])


def _placement_record(compiled: Any, device: Any) -> dict:
    if isinstance(device, spmd.MeshPlacement):
        mesh = device.mesh
        return {"kind": "mesh", "device_ids": [d.id for d in mesh.devices.flat], "shape": list(mesh.devices.shape),
                "axis_names": list(mesh.axis_names), "axis_types": [t.name for t in mesh.axis_types],
                "in_specs": [_spec_record(s.spec) for s in device.in_shardings],
                "out_specs": [_spec_record(s.spec) for s in compiled.out_shardings]}
    return {"kind": "device", "device_id": device.id}


def _const_bytes(value: Any) -> bytes:
    """A constant's value as ``.npy`` bytes (no pickled objects)."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(value), allow_pickle=False)
    return buf.getvalue()


def _const_value(data: bytes) -> np.ndarray:
    return np.load(io.BytesIO(data), allow_pickle=False)


def serialize(compiled: Compiled) -> tuple[bytes, Any, Any]:
    """A compiled function as ``(bytes, in_tree, out_tree)``; ``deserialize_and_load(bytes, in_tree, out_tree)``
    makes it callable again (in this process or another, with the same jaxlib). Raises for a function with
    mutable array references or host callbacks (kiln.debug.print, pure_callback, io_callback)."""
    if not isinstance(compiled, Compiled):
        raise TypeError(f"{_WHERE}.serialize expects a compiled function, kiln.jit(f).lower(*args).compile(), got "
                        f"{type(compiled).__name__}")
    jitted, entry = compiled.jitted, compiled.entry
    if entry.ref_args or entry.ref_outs or entry.ref_consts:
        raise SerializationError(f"{_WHERE}.serialize: {jitted.__name__} reads or writes mutable array references "
                                 "(kiln.ref), whose values cannot be serialized with the program")
    program = entry.compiled
    n_consts = len(entry.closed.ir.constvars)
    try:
        executable = runtime_serialized.serialize(program.executable)
    except runtime_serialized.SerializedExecutableError as e:
        raise SerializationError(f"{_WHERE}.serialize({jitted.__name__}): {e}") from e
    try:
        consts = [_const_bytes(c) for c, k in zip(entry.closed.consts, program.kept[:n_consts]) if k]
    except (TypeError, ValueError) as e:
        raise SerializationError(f"{_WHERE}.serialize({jitted.__name__}): a constant the function closes over "
                                 f"cannot be written as an array ({e}); pass it as an argument instead") from e
    record = {
        "name": jitted.__name__,
        "in_avals": [_aval_record(a, f"argument {n}") for a, n in zip(entry.closed.ir.in_avals, entry.arg_names)],
        "out_avals": [_aval_record(a, "an output") for a in program.out_avals],
        "donated": list(entry.donated), "kept": list(program.kept), "explicit": jitted._device_spec != (None, None),
        "placement": _placement_record(program, entry.device), "consts": [len(c) for c in consts]}
    meta = json.dumps(record).encode()
    data = _HEADER.pack(MAGIC, FORMAT_VERSION, len(meta)) + meta + b"".join(consts) + executable
    return data, compiled.in_tree, compiled.out_tree


# -- loading -----------------------------------------------------------------------------------------------

def _read(data: Any) -> tuple[dict, list[bytes], bytes]:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{_WHERE}.deserialize_and_load: serialized must be the bytes serialize() returned, got "
                        f"{type(data).__name__}")
    data = bytes(data)
    if len(data) < _HEADER.size or data[:len(MAGIC)] != MAGIC:
        raise SerializationError(f"{_WHERE}.deserialize_and_load: the data is not a serialized kiln compiled "
                                 "function; pass the bytes serialize(compiled)[0] returned")
    _, version, length = _HEADER.unpack_from(data)
    if version != FORMAT_VERSION:
        raise SerializationError(f"{_WHERE}.deserialize_and_load: the data is in format version {version}; this "
                                 f"kiln reads version {FORMAT_VERSION}")
    try:
        record = json.loads(data[_HEADER.size:_HEADER.size + length])
    except ValueError:
        raise SerializationError(f"{_WHERE}.deserialize_and_load: the data is truncated or corrupted") from None
    at = _HEADER.size + length
    consts = []
    for n in record["consts"]:
        consts.append(data[at:at + n])
        at += n
    return record, consts, data[at:]


def _execution_devices(backend: Any, execution_devices: Sequence[Any] | None, platform: str) -> list:
    if backend is None:
        backend = platform  # the backend it was compiled for
    if isinstance(backend, str):
        backend = runtime.get_backend(backend)
    if not isinstance(backend, runtime.Backend):
        raise TypeError(f"{_WHERE}.deserialize_and_load: backend must be None, a backend name ('cpu', 'cuda', ...) "
                        f"or a kiln backend, got {type(backend).__name__}")
    if execution_devices is None:
        return backend.global_devices()
    devices = list(execution_devices)
    others = [d for d in devices if not isinstance(d, runtime.Device) or d.backend is not backend]
    if others:
        raise ValueError(f"{_WHERE}.deserialize_and_load: Execution devices belong to a client other than `backend`: "
                         f"{others[0]!r} is not a device of the {backend.platform} backend; pass that backend's "
                         "devices (kiln.devices(backend))")
    return devices


def _by_id(devices: list, ids: list[int]) -> list:
    found = {d.id: d for d in devices}
    missing = [i for i in ids if i not in found]
    if missing:
        raise ValueError(f"{_WHERE}.deserialize_and_load: the function was compiled for the devices with ids {ids}, "
                         f"and {missing} are not among the execution devices {[d.id for d in devices]}")
    return [found[i] for i in ids]


def deserialize_and_load(serialized: bytes, in_tree: Any, out_tree: Any, backend: Any = None,
                         execution_devices: Sequence[Any] | None = None) -> LoadedCompiled:
    """The compiled function ``serialize`` wrote as ``(serialized, in_tree, out_tree)``, ready to call.
    ``backend`` (a name or backend; default: the one it was compiled for) and ``execution_devices`` (default:
    that backend's devices, of every process) say where to find its devices, by id. Loading needs the jaxlib that
    compiled it. Never load bytes from an untrusted source: loading runs code compiled elsewhere."""
    record, consts, executable = _read(serialized)
    plan = record["placement"]
    try:
        platform = runtime_serialized.platform_of(executable)
        devices = _execution_devices(backend, execution_devices, platform)
        if plan["kind"] == "mesh":
            mesh_devices = _by_id(devices, plan["device_ids"])
            exe = runtime_serialized.deserialize(executable, mesh_devices)
        else:
            device = _by_id(devices, [plan["device_id"]])[0]
            exe = runtime_serialized.deserialize(executable, [device])
    except runtime_serialized.SerializedExecutableError as e:
        raise SerializationError(f"{_WHERE}.deserialize_and_load({record['name']}): {e}") from e
    return LoadedCompiled(record, exe, [_const_value(c) for c in consts], in_tree, out_tree)


class LoadedCompiled:
    """A compiled function loaded from bytes (``deserialize_and_load``): call it with arguments of the signature
    it was compiled for, as a ``kiln.stages.Compiled``. It has no traced program: it cannot be transformed,
    lowered again or re-run op by op (``debug_nans``)."""

    def __init__(self, record: dict, exe: Any, consts: list[np.ndarray], in_tree: Any, out_tree: Any) -> None:
        self.name = record["name"]
        self.in_tree, self.out_tree = in_tree, out_tree
        self._in_avals = [_aval(a) for a in record["in_avals"]]
        self._donated = [bool(d) for d in record["donated"]]
        n_consts = len(record["kept"]) - len(self._in_avals)
        self._kept = [bool(k) for k in record["kept"]][n_consts:]
        self._explicit = bool(record["explicit"])
        out_avals = [_aval(a) for a in record["out_avals"]]
        if in_tree.num_leaves != len(self._in_avals) or out_tree.num_leaves != len(out_avals):
            raise SerializationError(f"{_WHERE}.deserialize_and_load({self.name}): in_tree/out_tree have "
                                     f"{in_tree.num_leaves}/{out_tree.num_leaves} leaves, but the function takes "
                                     f"{len(self._in_avals)} and returns {len(out_avals)}; pass the trees serialize() "
                                     "returned with these bytes")
        plan = record["placement"]
        if plan["kind"] == "mesh":
            mesh = Mesh(np.array(exe.devices, dtype=object).reshape(plan["shape"]), tuple(plan["axis_names"]),
                        tuple(AxisType[t] for t in plan["axis_types"]))
            self._in_shardings = [NamedSharding(mesh, _spec(s)) for s in plan["in_specs"]]
            outs = [NamedSharding(mesh, _spec(s)) for s in plan["out_specs"]]
            placement = spmd.MeshPlacement(mesh, tuple(self._in_shardings), None)
            self._program = spmd.CompiledSPMD(exe, None, out_avals, [True] * n_consts + self._kept, placement, outs)
            replicated = NamedSharding(mesh, PartitionSpec())
            self._const_buffers = [spmd.to_buffer(c, replicated) for c in consts]
            self._device = None
        else:
            self._device = exe.device
            self._in_shardings = [SingleDeviceSharding(exe.device)] * len(self._in_avals)
            self._program = dispatch.CompiledIR(exe, None, out_avals, [True] * n_consts + self._kept, exe.device)
            self._const_buffers = [dispatch.to_buffer(c, exe.device) for c in consts]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves, treedef = tree_util.tree_flatten((args, kwargs))
        if any(isinstance(x, Tracer) for x in leaves):
            raise SerializationError(f"kiln: {self.name} was loaded from a serialized executable and cannot be "
                                     "transformed (vmap, grad, jit) or called inside a traced function")
        try:
            got = [abstractify(x) for x in leaves]
        except TypeError:
            got = None
        want = self._in_avals
        if treedef != self.in_tree or got is None or any(
                (a.shape, a.dtype) != (w.shape, w.dtype) for a, w in zip(got, want)):
            shown = ("arguments of other types" if got is None else f"arguments {treedef} where it takes {self.in_tree}"
                     if treedef != self.in_tree else f"({', '.join(a.str_short() for a in got)})")
            raise SerializationError(f"kiln: {self.name} was compiled for arguments "
                                     f"({', '.join(a.str_short() for a in want)}) but called with {shown}; call it "
                                     "with arguments of those shapes and dtypes")
        for leaf, donated in zip(leaves, self._donated):
            if donated and type(leaf) is Array:
                leaf._npy = None  # a cached host view pins the buffer, and XLA skips donating a pinned buffer
        buffers = list(self._const_buffers)
        for leaf, sharding, kept in zip(leaves, self._in_shardings, self._kept):
            if kept:
                buffers.append(self._buffer(leaf, sharding))
        committed = self._explicit or any(type(x) is Array and x._committed for x in leaves)
        if config.no_execution:
            raise no_execution_error(self.name)
        return self.out_tree.unflatten(self._program.run(buffers, committed))

    def _buffer(self, leaf: Any, sharding: Any) -> Any:
        if self._device is None:
            return spmd.to_buffer(leaf, sharding)
        return dispatch.to_buffer(leaf, self._device)

    @property
    def args_info(self) -> Any:
        """Each argument's type and whether it is donated, in ``in_tree``'s structure."""
        return self.in_tree.unflatten([ArgInfo(a, d) for a, d in zip(self._in_avals, self._donated)])

    @property
    def in_avals(self) -> Any:
        return self.in_tree.unflatten(list(self._in_avals))

    @property
    def donate_argnums(self) -> tuple[int, ...]:
        return tuple(i for i, d in enumerate(self._donated) if d)

    @property
    def out_info(self) -> Any:
        """The outputs as ``ShapeDtypeStruct``s with their shardings, in ``out_tree``'s structure."""
        return self.out_tree.unflatten([ShapeDtypeStruct(a.shape, a.dtype, sharding=s)
                                        for a, s in zip(self._program.out_avals, self._output_shardings_flat())])

    @property
    def input_shardings(self) -> Any:
        return self.in_tree.unflatten(list(self._in_shardings))

    @property
    def output_shardings(self) -> Any:
        return self.out_tree.unflatten(self._output_shardings_flat())

    @property
    def input_formats(self) -> Any:
        return self.in_tree.unflatten(formats_of(list(self._in_shardings), self._in_avals))

    @property
    def output_formats(self) -> Any:
        return self.out_tree.unflatten(formats_of(self._output_shardings_flat(), self._program.out_avals))

    def _output_shardings_flat(self) -> list:
        if self._device is None:
            return list(self._program.out_shardings)
        return [SingleDeviceSharding(self._device)] * len(self._program.out_avals)

    def as_text(self) -> str:
        """The optimised HLO XLA compiled."""
        return self._program.executable.hlo_text()

    def cost_analysis(self) -> dict[str, float] | None:
        return self._program.executable.cost_analysis()

    def memory_analysis(self) -> runtime.MemoryAnalysis | None:
        return self._program.executable.memory_analysis()

    def runtime_executable(self) -> Any:
        return self._program.executable

    def __repr__(self) -> str:
        return f"<kiln compiled function {self.name}, loaded from a serialized executable>"
