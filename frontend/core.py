"""Abstract values: what tracing knows about an array, ``(shape, dtype, weak_type)``."""
from __future__ import annotations

import numpy as np

_SHORT_NAMES = {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128",
}


def short_dtype_name(dtype: np.dtype) -> str:
    """``f32``, ``i32``, ``bf16``... as kiln IR prints them."""
    return _SHORT_NAMES.get(np.dtype(dtype).name, np.dtype(dtype).name)


class ShapedArray:
    """The abstract value of an array: its shape, dtype and whether its dtype is weak.

    A weak type comes from a Python scalar: ``x * 2`` keeps ``x``'s dtype because ``2`` is weak.
    """

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, weak_type: bool = False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strengthen(self) -> ShapedArray:
        return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False)

    def __eq__(self, other) -> bool:
        return (isinstance(other, ShapedArray) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return self._hash

    def str_short(self) -> str:
        """``f32[2,3]`` — the form the IR printer uses."""
        return f"{short_dtype_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"
