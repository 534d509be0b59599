"""The bytes of a serialized ``Exported``: JAX's flatbuffer layout (schema ``jax/_src/export/serialization.fbs``,
tables ``Exported``, ``PyTreeDef``, ``AbstractValue``, ``Sharding``), written and read by a small flatbuffer
encoder of kiln's own (the ``flatbuffers`` package is not a kiln dependency).

A flatbuffer is a root ``uoffset`` (uint32, little-endian) to a table; a table starts with an ``soffset``
(int32: table position minus its vtable's position); a vtable is ``[vtable bytes, table bytes, field offset
per slot...]`` (uint16, 0 = field absent). Strings and vectors are a uint32 length followed by the data
(strings NUL-terminated); references are uint32 offsets relative to where they are stored, always forward.
The writer lays the buffer out front to back (a table, then the objects it references); the reader checks
every offset against the buffer, so corrupted or truncated bytes raise :class:`FormatError`.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Sequence

from ..core.errors import KilnError


class FormatError(KilnError, ValueError):
    """Bytes that are not a well-formed serialized ``Exported``."""


# -- writing ---------------------------------------------------------------------------------------
_SIZES = {"b": 1, "B": 1, "?": 1, "h": 2, "H": 2, "i": 4, "I": 4}


@dataclass
class Table:
    """A table to write: ``fields`` maps slot numbers to ``(format, value)``; format is a struct code for
    scalars, or ``"o"`` for a reference to a Table, Vector, Scalars, str or bytes."""
    fields: dict[int, tuple[str, Any]]


@dataclass
class Vector:
    """A vector of references (tables or strings)."""
    items: Sequence[Any]


@dataclass
class Scalars:
    """A vector of scalars of one struct format (``"B"`` for a byte vector)."""
    fmt: str
    values: Any


class _Writer:
    def __init__(self) -> None:
        self.buf = bytearray()

    def _align(self, n: int) -> None:
        self.buf.extend(b"\0" * (-len(self.buf) % n))

    def _patch(self, at: int, target: int) -> None:
        struct.pack_into("<I", self.buf, at, target - at)

    def write(self, node: Any) -> int:
        """Append ``node`` (and everything it references); returns the position references point at."""
        if isinstance(node, Table):
            return self._table(node)
        if isinstance(node, Vector):
            self._align(4)
            pos = len(self.buf)
            self.buf += struct.pack("<I", len(node.items)) + b"\0" * (4 * len(node.items))
            for i, item in enumerate(node.items):
                self._patch(pos + 4 + 4 * i, self.write(item))
            return pos
        if isinstance(node, Scalars):
            self._align(max(4, _SIZES[node.fmt]))
            pos = len(self.buf)
            data = bytes(node.values) if node.fmt == "B" else struct.pack(f"<{len(node.values)}{node.fmt}",
                                                                            *node.values)
            self.buf += struct.pack("<I", len(node.values)) + data
            return pos
        if isinstance(node, str):
            node = node.encode("utf-8")
        if isinstance(node, (bytes, bytearray)):  # a string
            self._align(4)
            pos = len(self.buf)
            self.buf += struct.pack("<I", len(node)) + bytes(node) + b"\0"
            return pos
        raise TypeError(f"cannot serialize {type(node).__name__}")

    def _table(self, table: Table) -> int:
        n_slots = max(table.fields, default=-1) + 1
        # Inline layout: the soffset, then the fields, largest first (each aligned to its size).
        order = sorted(table.fields, key=lambda s: -_SIZES.get(table.fields[s][0], 4))
        offsets, size = {}, 4
        for slot in order:
            sz = _SIZES.get(table.fields[slot][0], 4)
            size += -size % sz
            offsets[slot] = size
            size += sz
        size += -size % 4
        self._align(2)
        vtable = len(self.buf)
        self.buf += struct.pack(f"<{2 + n_slots}H", 4 + 2 * n_slots, size,
                                *[offsets.get(s, 0) for s in range(n_slots)])
        self._align(4)
        pos = len(self.buf)
        self.buf += b"\0" * size
        struct.pack_into("<i", self.buf, pos, pos - vtable)
        refs = []
        for slot, (fmt, value) in table.fields.items():
            if fmt == "o":
                refs.append((pos + offsets[slot], value))
            else:
                struct.pack_into("<" + fmt, self.buf, pos + offsets[slot], value)
        for at, value in refs:
            self._patch(at, self.write(value))
        return pos


def encode(root: Table) -> bytes:
    """The flatbuffer whose root table is ``root``."""
    w = _Writer()
    w.buf += b"\0" * 4
    w._patch(0, w.write(root))
    return bytes(w.buf)


# -- reading ---------------------------------------------------------------------------------------
class Buffer:
    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)

    def unpack(self, fmt: str, pos: int) -> Any:
        size = struct.calcsize("<" + fmt)
        if pos < 0 or pos + size > len(self.data):
            raise FormatError(f"offset {pos} is outside the {len(self.data)} bytes of the data")
        return struct.unpack_from("<" + fmt, self.data, pos)[0]

    def deref(self, pos: int) -> int:
        return pos + self.unpack("I", pos)

    def root(self) -> TableReader:
        if len(self.data) < 8:
            raise FormatError(f"only {len(self.data)} bytes")
        return TableReader(self, self.deref(0))


class TableReader:
    def __init__(self, buf: Buffer, pos: int) -> None:
        self.buf, self.pos = buf, pos
        self.vtable = pos - buf.unpack("i", pos)
        self.vsize = buf.unpack("H", self.vtable)
        if self.vsize < 4 or self.vsize % 2:
            raise FormatError(f"bad table at offset {pos}")
        buf.unpack(f"{self.vsize // 2}H", self.vtable)  # the whole vtable is inside the data

    def _field(self, slot: int) -> int | None:
        at = 4 + 2 * slot
        if at >= self.vsize:
            return None
        off = self.buf.unpack("H", self.vtable + at)
        return None if off == 0 else self.pos + off

    def scalar(self, slot: int, fmt: str, default: Any = 0) -> Any:
        p = self._field(slot)
        return default if p is None else self.buf.unpack(fmt, p)

    def table(self, slot: int) -> TableReader | None:
        p = self._field(slot)
        return None if p is None else TableReader(self.buf, self.buf.deref(p))

    def _vector(self, slot: int) -> tuple[int, int]:
        p = self._field(slot)
        if p is None:
            return 0, 0
        start = self.buf.deref(p)
        n = self.buf.unpack("I", start)
        if n > len(self.buf.data):
            raise FormatError(f"vector of {n} elements at offset {start}")
        return start + 4, n

    def string(self, slot: int) -> str | None:
        p = self._field(slot)
        return None if p is None else _string_at(self.buf, self.buf.deref(p))

    def tables(self, slot: int) -> list[TableReader]:
        start, n = self._vector(slot)
        return [TableReader(self.buf, self.buf.deref(start + 4 * i)) for i in range(n)]

    def strings(self, slot: int) -> list[str]:
        start, n = self._vector(slot)
        return [_string_at(self.buf, self.buf.deref(start + 4 * i)) for i in range(n)]

    def scalars(self, slot: int, fmt: str) -> list:
        start, n = self._vector(slot)
        size = struct.calcsize("<" + fmt)
        if n:
            self.buf.unpack(f"{n * size}s", start)
        return list(struct.unpack_from(f"<{n}{fmt}", self.buf.data, start))

    def bytes(self, slot: int) -> bytes:
        start, n = self._vector(slot)
        return self.buf.unpack(f"{n}s", start)


def _string_at(buf: Buffer, pos: int) -> str:
    n = buf.unpack("I", pos)
    try:
        return buf.unpack(f"{n}s", pos + 4).decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"string at offset {pos} is not UTF-8") from None


def decode(data: bytes) -> TableReader:
    """The root table of the flatbuffer ``data``."""
    return Buffer(data).root()


# -- JAX's schema (serialization.fbs): slot numbers and enums ----------------------------------------
class ExportedSlots:
    serialization_version = 0   # uint16
    function_name = 1           # string
    in_tree = 2                 # PyTreeDef
    in_avals = 3                # [AbstractValue]
    out_tree = 4
    out_avals = 5
    nr_devices_short = 6        # int16 (older writers)
    in_shardings = 7            # [Sharding]
    out_shardings = 8
    platforms = 9               # [string]
    ordered_effects = 10        # [Effect]
    unordered_effects = 11
    disabled_checks = 12        # [DisabledSafetyCheck]
    mlir_module_serialized = 13  # [ubyte]
    calling_convention_version = 14  # uint16
    module_kept_var_idx = 15    # [uint16]
    uses_global_constants = 16  # bool
    vjp = 17                    # Exported
    nr_devices = 18             # uint32
    unique_avals = 19           # [AbstractValue]
    unique_abstract_meshes = 20
    unique_named_shardings = 21
    in_avals_idxs = 22          # [uint32]
    out_avals_idxs = 23
    in_shardings_idxs = 24      # [uint32], 0 = unspecified
    out_shardings_idxs = 25
    # kiln's extension, far beyond JAX's slots (flatbuffer readers skip fields they do not know): the CRC-32 of
    # mlir_module_serialized, checked before the bytes reach MLIR's bytecode reader, which can corrupt the
    # process's memory on damaged input.
    kiln_module_crc32 = 200     # uint32


class TreeKind:
    leaf, none, tuple, list, dict, custom = range(6)


# PyTreeDef: kind (int8), children ([PyTreeDef]), children_names ([string]), custom_name, custom_auxdata.
# AbstractValue: kind (int8: 0 shapedArray, 1 abstractToken), shape ([string]), dtype (int8), memory_space (int8).
DTYPE_KINDS = {
    "bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint8": 5, "uint16": 6, "uint32": 7, "uint64": 8,
    "float16": 9, "float32": 10, "float64": 11, "complex64": 12, "complex128": 13, "bfloat16": 14, "int4": 15,
    "uint4": 16, "float8_e4m3b11fnuz": 17, "float8_e4m3fn": 18, "float8_e4m3fnuz": 19, "float8_e5m2": 20,
    "float8_e5m2fnuz": 21, "float0": 22, "float8_e4m3": 23, "float8_e3m4": 24, "float8_e8m0fnu": 25,
    "float4_e2m1fn": 26,
}
KIND_NAMES = {v: k for k, v in DTYPE_KINDS.items()}
KIND_NAMES.update({27: "key<fry>", 28: "key<rbg>", 29: "key<unsafe_rbg>"})
MEMORY_SPACE_DEVICE = 1
# The narrow float types (differentiable, as JAX's inexact dtypes).
FLOAT_NARROW = {n for n in DTYPE_KINDS if n.startswith(("float8", "float4")) or n == "bfloat16"}
