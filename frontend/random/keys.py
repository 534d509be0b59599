"""PRNG keys: typed key arrays (``key<fry>``, ``key<rbg>``, ``key<urbg>``), raw uint32 keys, and the key
operations (``key``, ``PRNGKey``, ``key_data``, ``wrap_key_data``, ``split``, ``fold_in``, ``bits``).

A typed key array is a :class:`KeyArray`: a small wrapper over a uint32 kiln array (or tracer) of
shape ``batch_shape + key_shape`` and its PRNG implementation (``impls.py``: ``key_shape`` is ``(2,)`` for
threefry2x32, ``(4,)`` for rbg and unsafe_rbg). To users it is a pytree leaf, as in JAX
(``kiln.tree.map(f, {"k": key})`` calls ``f`` on the key); kiln's transformations see a node whose one child is
that data array (the implementation is the node's static data), so keys pass through ``jit``, ``vmap``, ``scan``
and ``grad`` as their data; it has no arithmetic. Raw keys (JAX's legacy ``PRNGKey``) are plain uint32 arrays
of shape ``key_shape``, read with the default implementation (``kiln.config.default_prng_impl``); every
function accepts both kinds and returns the kind it was given.
"""
from __future__ import annotations

import operator
import warnings
from functools import partial
from typing import Any, Iterator, Sequence

import numpy as np
from kiln.runtime import fastpath

from .. import numpy as knp
from ..core import consumption, dtypes, tree_util
from ..core.axes import canonical_axis
from ..core.config import config
from ..core.errors import KeyReuseError
from ..core.source_info import user_stacklevel
from ..core.tracing import Tracer, abstractify
from ..driver.array import Array, register_array_type
from ..driver.jit import jit
from ..driver.tools import register_typeof
from ..lax import api as lax
from ..lax.sharding import takes_out_sharding
from ..numpy import key_arrays as _numpy_key_arrays
from .impls import PRNGS, PRNGImpl, default_impl, resolve, threefry_prng_impl

__all__ = ["KeyArray", "KeyDtype", "key", "PRNGKey", "key_data", "wrap_key_data", "key_impl", "key_dtype",
           "split", "fold_in", "bits", "clone"]

class KeyDtype:
    """The dtype of typed PRNG key arrays: ``key<tag>`` of their implementation (``key<fry>`` for
    threefry2x32 keys, ``key<rbg>``, ``key<urbg>`` for unsafe_rbg). ``impl`` is the implementation's name."""

    __slots__ = ("prng_impl",)

    def __init__(self, impl: Any = "threefry2x32"):
        self.prng_impl = resolve("KeyDtype", impl)

    @property
    def impl(self) -> str:
        return self.prng_impl.name

    @property
    def name(self) -> str:
        return f"key<{self.prng_impl.tag}>"

    @property
    def itemsize(self) -> int:
        return 4 * int(np.prod(self.prng_impl.key_shape))  # uint32 words

    @property
    def type(self) -> type:
        """The scalar type: ``kiln.dtypes.prng_key`` (so ``issubdtype(dt, kiln.dtypes.extended)``)."""
        return dtypes.prng_key

    def full(self, shape: tuple[int, ...], fill_value: Any) -> KeyArray:
        """``kiln.lax.full(shape, fill_value, dtype)`` for this dtype: ``fill_value`` (a key of this dtype)
        everywhere, or (as in JAX) keys each of whose uint32 words is the integer ``fill_value``."""
        if isinstance(fill_value, KeyArray):
            if fill_value.dtype != self:
                raise TypeError(f"kiln.lax.full: fill_value is a key of dtype {fill_value.dtype.name}, but dtype is "
                                f"{self.name}; pass dtype={fill_value.dtype.name} (or leave it out), or make the key "
                                f"with impl='{self.impl}'")
            return _np_broadcast_to(fill_value, shape)
        return KeyArray(knp.full(shape + self.prng_impl.key_shape, fill_value, np.uint32), self.prng_impl)

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            return other in (self.name, self.impl)
        return isinstance(other, KeyDtype) and other.prng_impl is self.prng_impl

    def __hash__(self) -> int:
        return hash((KeyDtype, self.impl))


KEY_DTYPE = KeyDtype()  # threefry2x32's
_DTYPES = {impl: KeyDtype(impl) for impl in PRNGS.values()}


def dtype_of(impl: PRNGImpl) -> KeyDtype:
    """The key dtype of ``impl``."""
    dt = _DTYPES.get(impl)
    if dt is None:
        dt = _DTYPES[impl] = KeyDtype(impl)
    return dt


def _no_arithmetic(symbol: str):
    def method(self, *args):
        raise TypeError(f"kiln.random: unsupported operand for {symbol}: PRNG key arrays (dtype "
                        f"{self.dtype.name}) have no arithmetic. Derive new keys with kiln.random.split or "
                        "kiln.random.fold_in, or use kiln.random.key_data(keys) for the raw uint32 data.")
    return method


class KeyArray:
    """An array of PRNG keys (dtype ``key<fry>``, ``key<rbg>`` or ``key<urbg>``) over uint32 key data of
    shape ``shape + key_shape`` (``key_shape``: ``(2,)`` for threefry2x32, ``(4,)`` for rbg and unsafe_rbg).

    Create one with :func:`kiln.random.key` (or :func:`wrap_key_data`). Index, reshape and iterate
    it like an array of its ``shape``; it supports ``==``/``!=`` but no arithmetic.
    """

    __slots__ = ("_data", "_impl", "_consumed", "_loop")
    __array_priority__ = 200

    def __init__(self, data: Any, impl: PRNGImpl = threefry_prng_impl):
        self._data = data
        self._impl = impl
        # For debug_key_reuse: whether a kiln.random function consumed this key, and how many loop bodies
        # enclosed its creation (a key consumed inside more of them than that is consumed on every iteration).
        self._consumed = False
        self._loop = consumption.loop_depth()

    # -- metadata ------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(abstractify(self._data).shape[:-1])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self) -> KeyDtype:
        return dtype_of(self._impl)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def _like(self, data: Any) -> KeyArray:
        """Keys of this array's implementation over ``data``."""
        return KeyArray(data, self._impl)

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def device(self):
        return self._data.device

    def devices(self):
        return self._data.devices()

    # Placement, as a kiln array's (that of the key data, over the same devices)
    @property
    def sharding(self):
        return self._data.sharding

    @property
    def committed(self) -> bool:
        return self._data.committed

    @property
    def is_fully_addressable(self) -> bool:
        return self._data.is_fully_addressable

    @property
    def is_fully_replicated(self) -> bool:
        return self._data.is_fully_replicated

    def on_device_size_in_bytes(self) -> int:
        return self._data.on_device_size_in_bytes()

    def copy_to_host_async(self) -> None:
        self._data.copy_to_host_async()

    def block_until_ready(self) -> KeyArray:
        if isinstance(self._data, Array):
            self._data.block_until_ready()
        return self

    def is_deleted(self) -> bool:
        return isinstance(self._data, Array) and self._data.is_deleted()

    def delete(self) -> None:
        self._data.delete()

    # -- indexing and reshaping (over the batch dimensions only) -------------------------------
    def _scalar_check(self, what: str) -> None:
        if not self.shape:
            raise TypeError(f"{what} of a 0-d key array (a single key)")

    def __len__(self) -> int:
        self._scalar_check("len()")
        return self.shape[0]

    def __iter__(self) -> Iterator[KeyArray]:
        self._scalar_check("iteration over")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, index: Any) -> KeyArray:
        return self._like(self._data[self._data_index(index)])

    def _data_index(self, index: Any) -> tuple:
        """``index`` of the key array as an index of its data (the trailing key axis kept whole)."""
        idx = index if isinstance(index, tuple) else (index,)
        if any(i is Ellipsis for i in idx):
            return idx + (slice(None),)
        n_axes = sum(1 for i in idx if i is not None)
        if n_axes > self.ndim and all(isinstance(i, (int, np.integer, slice)) or i is None for i in idx):
            raise IndexError(f"too many indices for a key array: it has {self.ndim} dimension(s) (shape "
                             f"{self.shape}) but {n_axes} were indexed")
        return idx + (Ellipsis, slice(None))

    @property
    def at(self) -> _KeyIndexer:
        """``keys.at[i].set(other_keys)`` and ``keys.at[i].get()``, as JAX's key arrays have them."""
        return _KeyIndexer(self)

    def reshape(self, *shape, order: str = "C") -> KeyArray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(int(s) for s in shape)
        if -1 in shape:
            known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
            shape = tuple(self.size // max(known, 1) if s == -1 else s for s in shape)
        if int(np.prod(shape, dtype=np.int64)) != self.size:
            raise ValueError(f"cannot reshape a key array of shape {self.shape} (size {self.size}) into shape "
                             f"{shape}")
        return self._like(self._data.reshape(shape + self._impl.key_shape, order=order))

    def ravel(self) -> KeyArray:
        return self.reshape((self.size,))

    flatten = ravel

    def squeeze(self, axis=None) -> KeyArray:
        if axis is None:
            axis = tuple(i for i, s in enumerate(self.shape) if s == 1)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(a % self.ndim if self.ndim else a for a in axes)
        return self._like(self._data.squeeze(axes)) if axes else self

    def transpose(self, *axes) -> KeyArray:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if not axes:
            axes = tuple(reversed(range(self.ndim)))
        return self._like(self._data.transpose(tuple(a % self.ndim for a in axes) + (self.ndim,)))

    @property
    def T(self) -> KeyArray:
        return self.transpose()

    def swapaxes(self, a: int, b: int) -> KeyArray:
        axes = list(range(self.ndim))
        a, b = a % self.ndim, b % self.ndim
        axes[a], axes[b] = axes[b], axes[a]
        return self.transpose(axes)

    def take(self, indices, axis: int | None = None) -> KeyArray:
        if axis is None:
            return self._like(knp.take(self.ravel()._data, indices, axis=0))
        return self._like(knp.take(self._data, indices, axis=axis % self.ndim))

    def copy(self) -> KeyArray:
        return self._like(self._data)

    # -- comparison ----------------------------------------------------------------------------
    def _compare(self, other, op):
        if not isinstance(other, KeyArray):
            raise TypeError(f"kiln.random: cannot compare a key array with {type(other).__name__}; compare "
                            "key arrays with key arrays, or their kiln.random.key_data")
        if other._impl is not self._impl:
            raise TypeError(f"kiln.random: cannot compare key arrays of different PRNG implementations (dtypes "
                            f"{self.dtype.name} and {other.dtype.name}); compare keys of one implementation")
        eq = knp.all(knp.equal(self._data, other._data), axis=-1)
        return eq if op == "eq" else knp.logical_not(eq)

    def __eq__(self, other):  # noqa: D105
        return self._compare(other, "eq")

    def __ne__(self, other):
        return self._compare(other, "ne")

    __hash__ = None  # type: ignore[assignment]

    # -- no arithmetic, no host conversion (operators are set below the class) ----------------
    def __bool__(self) -> bool:
        raise TypeError("kiln.random: a key array cannot be converted to a Python bool")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"kiln.random: a key array (dtype {self.dtype.name}) cannot be converted to a NumPy array; "
                        "use kiln.random.key_data(keys) for its uint32 data")

    def __repr__(self) -> str:
        data = self._data
        body = str(data) if isinstance(data, (Array, np.ndarray)) else repr(data)  # (NumPy data: in a callback)
        return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{body}"

    __str__ = __repr__


_OPERATORS = [("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("floordiv", "//"), ("mod", "%"),
              ("pow", "**"), ("matmul", "@"), ("and", "&"), ("or", "|"), ("xor", "^"), ("lshift", "<<"),
              ("rshift", ">>"), ("divmod", "divmod")]
for _name, _sym in _OPERATORS:
    setattr(KeyArray, f"__{_name}__", _no_arithmetic(_sym))
    setattr(KeyArray, f"__r{_name}__", _no_arithmetic(_sym))
for _name, _sym in [("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("neg", "unary -"), ("pos", "unary +"),
                    ("abs", "abs()"), ("invert", "~")]:
    setattr(KeyArray, f"__{_name}__", _no_arithmetic(_sym))
del _name, _sym


class _KeyIndexer:
    __slots__ = ("keys",)

    def __init__(self, keys: KeyArray):
        self.keys = keys

    def __getitem__(self, index: Any) -> _KeyUpdate:
        return _KeyUpdate(self.keys, index)


class _KeyUpdate:
    __slots__ = ("keys", "index")

    def __init__(self, keys: KeyArray, index: Any):
        self.keys, self.index = keys, index

    def get(self, **kwargs) -> KeyArray:
        return self.keys._like(self.keys._data.at[self.keys._data_index(self.index)].get(**kwargs))

    def set(self, values: Any, **kwargs) -> KeyArray:
        dtype = self.keys.dtype
        if not isinstance(values, KeyArray):
            raise TypeError(f"kiln.random: keys.at[...].set takes a key array (dtype {dtype.name}), got "
                            f"{type(values).__name__}; make keys with kiln.random.key or kiln.random.split")
        if values._impl is not self.keys._impl:
            raise TypeError(f"kiln.random: keys.at[...].set: cannot set keys of dtype {values.dtype.name} into a "
                            f"key array of dtype {dtype.name}; keys of different PRNG implementations do not mix")
        return self.keys._like(self.keys._data.at[self.keys._data_index(self.index)].set(values._data, **kwargs))


def _flatten(k: KeyArray):
    return (k._data,), k._impl


def _unflatten(impl: PRNGImpl, children) -> KeyArray:
    (data,) = children
    return KeyArray(data, impl)


# Every implementation's key data has one trailing axis (key_shape (2,) or (4,)).
tree_util.register_internal_node(KeyArray, _flatten, _unflatten, hidden_axes=1)
register_array_type(KeyArray)  # isinstance(key, kiln.Array), as JAX's key arrays are jax.Arrays
# Mirrored into jaxlib's C++ pytree registry, for jit's C++ dispatch path (see frontend/array.py).
fastpath.register_node(KeyArray, _flatten, _unflatten)


class KeyShapedArray:
    """What ``kiln.typeof`` says of a key array: its shape and key dtype, printed as JAX's
    (``key<fry>[]``, ``ShapedArray(key<rbg>[2])``). kiln's IR carries the keys' uint32 data instead."""

    __slots__ = ("shape", "dtype")
    weak_type = False

    def __init__(self, shape: tuple[int, ...], dtype: KeyDtype = KEY_DTYPE) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def update(self, shape: Any = None, dtype: Any = None, weak_type: Any = None) -> KeyShapedArray:
        return KeyShapedArray(self.shape if shape is None else shape, self.dtype if dtype is None else dtype)

    def str_short(self) -> str:
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"

    __str__ = str_short

    def __repr__(self) -> str:
        return f"ShapedArray({self.str_short()})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, KeyShapedArray) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self) -> int:
        return hash((KeyShapedArray, self.shape, self.dtype))


register_typeof(KeyArray, lambda k: KeyShapedArray(k.shape, k.dtype))


# -- kiln.numpy's functions on key arrays (see kiln/frontend/numpy/key_arrays.py) ---------------------------
# Each works on the key data, whose trailing axis of 2 stays last: axes are those of the key array.

def _data_of(fname: str, values: Sequence[Any]) -> list:
    for v in values:
        if not isinstance(v, KeyArray):
            dtype = next(x.dtype.name for x in values if isinstance(x, KeyArray))
            raise TypeError(f"kiln.numpy.{fname}: cannot mix key arrays (dtype {dtype}) with arrays of "
                            f"other dtypes (got {type(v).__name__}); make keys with kiln.random.key, "
                            "kiln.random.split or kiln.random.wrap_key_data")
    impls = {v._impl for v in values}
    if len(impls) > 1:
        names = ", ".join(sorted(dtype_of(i).name for i in impls))
        raise ValueError(f"kiln.numpy.{fname}: cannot mix key arrays of different PRNG implementations (dtypes "
                         f"{names}); keys of one call must come from one implementation")
    return [v._data for v in values]


def _np_stack(arrays: Sequence[Any], axis: int) -> KeyArray:
    data = _data_of("stack", arrays)
    return arrays[0]._like(knp.stack(data, canonical_axis("stack", axis, arrays[0].ndim + 1)))


def _np_concatenate(arrays: Sequence[Any], axis: int | None) -> KeyArray:
    data = _data_of("concatenate", arrays)
    first = arrays[0]
    if axis is None:
        return first._like(knp.concatenate([d.reshape((-1,) + first._impl.key_shape) for d in data], 0))
    if first.ndim == 0:
        raise ValueError("kiln.numpy.concatenate: zero-dimensional arrays cannot be concatenated")
    return first._like(knp.concatenate(data, canonical_axis("concatenate", axis, first.ndim)))


def _np_where(condition: Any, x: Any, y: Any) -> KeyArray:
    data = _data_of("where", [x, y])
    return x._like(knp.where(knp.expand_dims(knp.asarray(condition), -1), *data))


def _np_take(a: KeyArray, indices: Any, axis: int | None, **options: Any) -> KeyArray:
    if axis is None:
        return a._like(knp.take(a._data.reshape((-1,) + a._impl.key_shape), indices, 0, **options))
    return a._like(knp.take(a._data, indices, canonical_axis("take", axis, a.ndim), **options))


def _np_broadcast_to(a: KeyArray, shape: Any) -> KeyArray:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return a._like(knp.broadcast_to(a._data, shape + a._impl.key_shape))


def _np_expand_dims(a: KeyArray, axis: Any) -> KeyArray:
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    ndim = a.ndim + len(axes)
    return a._like(knp.expand_dims(a._data, tuple(canonical_axis("expand_dims", ax, ndim) for ax in axes)))


def _np_flip(a: KeyArray, axis: Any) -> KeyArray:
    if axis is None:
        axes = tuple(range(a.ndim))
    else:
        given = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        axes = tuple(canonical_axis("flip", ax, a.ndim) for ax in given)
    return a._like(knp.flip(a._data, axes)) if axes else a


def _np_asarray(a: KeyArray, dtype: Any, copy: bool | None) -> KeyArray:
    if dtype is not None and dtype != a.dtype:
        raise TypeError(f"kiln.numpy.asarray: a key array (dtype {a.dtype.name}) cannot be converted to dtype "
                        f"{np.dtype(dtype).name if isinstance(dtype, (type, np.dtype)) else dtype}; use "
                        "kiln.random.key_data(keys) for its uint32 data")
    return a._like(knp.array(a._data)) if copy else a


_numpy_key_arrays.register(KeyArray, {
    "stack": _np_stack, "concatenate": _np_concatenate, "where": _np_where, "take": _np_take,
    "broadcast_to": _np_broadcast_to, "expand_dims": _np_expand_dims, "flip": _np_flip, "asarray": _np_asarray,
    "reshape": lambda a, shape, order: a.reshape(shape, order=order),
    "squeeze": lambda a, axis: a.squeeze(axis),
    "transpose": lambda a, axes: a.transpose() if axes is None else a.transpose(axes),
})


# -- checking keys ---------------------------------------------------------------------------------

def _is_array(x: Any) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic))


def _check_raw_key_data(fname: str, data: Any, impl: PRNGImpl, raw_key: bool = False) -> Any:
    """Validate raw key data of ``impl`` (uint32, shape ending with its key shape); a kiln array or tracer.
    ``raw_key``: ``data`` is a raw key passed to a kiln.random function, read with the default implementation."""
    if isinstance(data, (np.ndarray, np.generic)):
        data = knp.asarray(data)
    aval = abstractify(data)
    if aval.ndim < 1:
        raise TypeError(f"kiln.random.{fname}: invalid PRNG key data: expected an array with at least one "
                        f"dimension, got a 0-d {aval.dtype.name} array")
    ks = impl.key_shape
    if aval.shape[-len(ks):] != ks:
        hint = (f" (raw uint32 keys are read with the default PRNG implementation, kiln.config.default_prng_impl="
                f"{impl.name!r}: set it to the keys' implementation, or make typed keys with "
                "kiln.random.wrap_key_data(data, impl=...))" if raw_key else "")
        raise TypeError(f"kiln.random.{fname}: invalid PRNG key data: expected a shape ending with {ks}, got "
                        f"shape {aval.shape} ({impl.name} keys hold {int(np.prod(ks))} uint32 words){hint}")
    if aval.dtype != dtypes.uint32:
        raise TypeError(f"kiln.random.{fname}: invalid PRNG key data: expected dtype uint32, got "
                        f"{aval.dtype.name}")
    return data


def check_key(fname: str, key: Any, allow_batched: bool = False) -> tuple[Any, PRNGImpl, bool]:
    """``(raw key data, implementation, typed)`` for a typed key array or a raw uint32 key (of the default
    implementation, as in JAX).

    Without ``allow_batched``, a single key is required (as in JAX: use vmap for batches).
    """
    if isinstance(key, KeyArray):
        data, impl, typed = key._data, key._impl, True
        if config.debug_key_reuse and fname not in _NOT_CONSUMING:
            _consume(fname, key)
    elif _is_array(key):
        impl = default_impl()
        data, typed = _check_raw_key_data(fname, key, impl, raw_key=True), False
        if config.legacy_prng_key != "allow":
            _legacy_key_used(fname)
    else:
        raise TypeError(f"kiln.random.{fname}: expected a PRNG key (from kiln.random.key or kiln.random.PRNGKey), "
                        f"got {type(key).__name__} {_short(key)}")
    if not allow_batched:
        batch = abstractify(data).shape[:-1]
        if batch:
            shown = batch if typed else batch + impl.key_shape
            raise ValueError(f"kiln.random.{fname}: accepts a single key, but was given a key array of shape "
                             f"{shown} != (). Use kiln.vmap for batching.")
    return data, impl, typed


def sampler_key(fname: str, key: Any) -> Any:
    """A single key given to sampler ``fname`` (checked as :func:`check_key` does), as the samplers' jitted
    implementations take it: a threefry2x32 key as its raw uint32 data (no pytree node to flatten on each eager
    call), a key of another implementation as a typed key array (its implementation is then static in the
    trace). The helpers below (``random_bits``, ``split_keys``, ...) take both forms."""
    data, impl, _ = check_key(fname, key)
    return data if impl is threefry_prng_impl else KeyArray(data, impl)


# The functions that read a key without consuming it (JAX's fold_in does not consume its key either).
_NOT_CONSUMING = frozenset({"fold_in", "key_data", "key_impl"})
_KEY_REUSE_DOCS = "https://docs.jax.dev/en/latest/errors.html#jax.errors.KeyReuseError"


def _consume(fname: str, key: KeyArray) -> None:
    """Mark ``key`` consumed by ``kiln.random.<fname>`` (debug_key_reuse), or raise if that reuses it."""
    if key._consumed:
        raise KeyReuseError(f"kiln.random.{fname}: previously-consumed key passed (debug_key_reuse is on): a "
                            "kiln.random function already drew from this key, and drawing again gives correlated "
                            "numbers. Split it once per use: key, subkey = kiln.random.split(key). See "
                            f"{_KEY_REUSE_DOCS}")
    if key._loop < consumption.loop_depth():
        raise KeyReuseError(f"kiln.random.{fname}: a loop body (scan, fori_loop, while_loop) consumes a key it "
                            "closes over, so every iteration draws from the same key (debug_key_reuse is on). "
                            "Pass the key in the loop's carry and split it in each iteration, or "
                            f"kiln.random.fold_in(key, i) with the iteration number. See {_KEY_REUSE_DOCS}")
    key._consumed = True
    consumption.record(key)


def _legacy_key_used(fname: str) -> None:
    """Warn or raise, as the ``legacy_prng_key`` flag says, about a raw uint32 key passed to ``fname`` (JAX's
    wording first, so that filters written for JAX's message apply)."""
    message = ("Legacy uint32 key array passed as key to jax.random function. Please create keys using "
               "jax.random.key(). If use of a raw key array was intended, set jax_legacy_prng_key=\"allow\". "
               f"(kiln.random.{fname}: create keys with kiln.random.key(seed), or wrap raw key data with "
               "kiln.random.wrap_key_data(data).)")
    if config.legacy_prng_key == "error":
        raise ValueError(message)
    warnings.warn(message, stacklevel=user_stacklevel())


def _short(x: Any) -> str:
    r = repr(x)
    return r if len(r) <= 60 else r[:57] + "..."


def _wrap(data: Any, impl: PRNGImpl, typed: bool) -> Any:
    return KeyArray(data, impl) if typed else data


# -- seeds -----------------------------------------------------------------------------------------

@partial(jit, static_argnums=(0,))
def _seed_impl(impl, seed):
    return impl.seed(seed)


def _seed_data(fname: str, seed: Any, impl: PRNGImpl) -> Any:
    if isinstance(seed, KeyArray):
        raise TypeError(f"kiln.random.{fname}: accepts a scalar seed, but was given a PRNG key")
    if isinstance(seed, (bool, int)) and not isinstance(seed, np.generic):
        s = int(seed)
        if not -2 ** 63 <= s < 2 ** 63:
            raise OverflowError(f"kiln.random.{fname}: seed {s} does not fit in 64 bits (signed)")
        # A Python int is a 64-bit seed. Without x64 kiln has no 64-bit integers, so (as JAX) it is
        # first cut to its low 32 bits, as a 32-bit seed.
        value = np.int64(s) if dtypes.canonicalize_dtype(np.int64) == np.int64 else np.int64(s).astype(np.int32)
        return _seed_impl(impl, value)
    if isinstance(seed, (float, complex)) and not isinstance(seed, np.generic):
        raise TypeError(f"kiln.random.{fname}: the seed must be an integer, got {type(seed).__name__} {seed!r}")
    if not _is_array(seed):
        raise TypeError(f"kiln.random.{fname}: the seed must be an integer scalar, got {type(seed).__name__} "
                        f"{_short(seed)}")
    aval = abstractify(seed)
    if aval.ndim:
        raise TypeError(f"kiln.random.{fname}: accepts a scalar seed, but was given an array of shape "
                        f"{aval.shape} != (). Use kiln.vmap for batching")
    if aval.dtype.kind not in "iub":
        raise TypeError(f"kiln.random.{fname}: the seed must be an integer, got a {aval.dtype.name} value")
    if isinstance(seed, (np.ndarray, np.generic)):
        seed = np.asarray(seed).astype(aval.dtype)  # canonical width (a uint64 seed is cut to 32 bits without x64)
    return _seed_impl(impl, seed)


def key(seed: Any, *, impl: Any = None, dtype: Any = None) -> KeyArray:
    """A typed PRNG key (shape ``()``; dtype ``key<fry>`` by default) from an integer seed.

    Parameters
    ----------
    seed : int or integer scalar array (also a traced one inside ``jit``)
        A 64- or 32-bit seed: threefry2x32's key data is its two's complement value cut into two
        uint32 words ``[hi, lo]`` (without x64, an int is first cut to 32 bits, so ``hi = 0``); rbg's
        and unsafe_rbg's is those two words twice.
    impl : optional, the PRNG implementation: ``'threefry2x32'``, ``'rbg'`` or ``'unsafe_rbg'``, a key
        dtype or a ``kiln.extend.random`` impl object (default: ``kiln.config.default_prng_impl``).
    dtype : optional, the key dtype (``kiln.random.key_dtype('rbg')``), instead of ``impl``.
    """
    if dtype is not None:
        if impl is not None:
            raise ValueError("kiln.random.key: give the PRNG implementation as impl= or as dtype=, not both")
        impl = dtype
    impl = resolve("key", impl)
    return KeyArray(_seed_data("key", seed, impl), impl)


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:
    """A raw (legacy) PRNG key: the uint32 array (shape ``(2,)``, ``(4,)`` for rbg and unsafe_rbg) that
    :func:`key` wraps. kiln.random's functions read a raw key with the default implementation
    (``kiln.config.default_prng_impl``), as JAX's do."""
    impl = resolve("PRNGKey", impl)
    return _seed_data("PRNGKey", seed, impl)


def key_data(keys: Any) -> Any:
    """The uint32 data of PRNG keys (shape ``keys.shape + key_shape``); raw keys are returned as they are."""
    data, _, _ = check_key("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> KeyArray:
    """Typed keys over raw uint32 key data of shape ``batch + key_shape`` (the inverse of :func:`key_data`).

    ``dtype`` names the implementation as ``impl`` does (a key dtype such as ``key.dtype``, or a name:
    ``'threefry2x32'``, ``'rbg'``, ``'unsafe_rbg'``); give one of the two (neither: the default).
    """
    if dtype is not None:
        if impl is not None:
            raise ValueError("kiln.random.wrap_key_data: give the PRNG implementation as impl= or as dtype=, "
                             "not both")
        impl = dtype
    impl = resolve("wrap_key_data", impl)
    if isinstance(key_bits_array, KeyArray):
        raise TypeError(f"kiln.random.wrap_key_data: expected uint32 key data, but was given a key array (dtype "
                        f"{key_bits_array.dtype.name}) that is already typed")
    if not _is_array(key_bits_array):
        try:
            key_bits_array = knp.asarray(key_bits_array)
        except Exception:
            raise TypeError(f"kiln.random.wrap_key_data: expected a uint32 array, got "
                            f"{type(key_bits_array).__name__}") from None
    return KeyArray(_check_raw_key_data("wrap_key_data", key_bits_array, impl), impl)


def key_impl(keys: Any) -> str:
    """The name of the PRNG implementation of ``keys`` (``'threefry2x32'``, ``'rbg'`` or ``'unsafe_rbg'``;
    for raw keys, the default one)."""
    _, impl, _ = check_key("key_impl", keys, allow_batched=True)
    return impl.name


def key_dtype(impl: Any = None) -> KeyDtype:
    """The dtype of typed keys of a PRNG implementation (``key<fry>``, ``key<rbg>``, ``key<urbg>``)."""
    return dtype_of(resolve("key_dtype", impl))


def clone(key: Any) -> Any:
    """A copy of ``key`` that has not been consumed (for debug_key_reuse); a raw key as it is."""
    return key._like(key._data) if isinstance(key, KeyArray) else key


# -- split, fold_in, bits ----------------------------------------------------------------------------

@partial(jit, static_argnums=(0, 2))
def _split_impl(impl, data, shape):
    return impl.split(data, shape)


@partial(jit, static_argnums=(0,))
def _fold_in_impl(impl, data, msg):
    return impl.fold_in(data, msg)


@partial(jit, static_argnums=(0, 2, 3))
def _bits_impl(impl, data, bit_width, shape):
    return impl.random_bits(data, bit_width, shape)


def canonical_shape(fname: str, shape: Any, what: str = "shape", prefix: str = "kiln.random") -> tuple[int, ...]:
    """A static shape tuple of non-negative ints, or a clear error naming ``prefix.fname``."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"{prefix}.{fname}: {what} must be an int or a tuple of ints, got {type(shape).__name__} "
                        f"{_short(shape)}") from None
    out = []
    for d in dims:
        if isinstance(d, Tracer):
            raise TypeError(f"{prefix}.{fname}: {what} must be static, got a traced value in {what} "
                            "(mark it static with static_argnums)")
        try:
            d = operator.index(d)
        except TypeError:
            raise TypeError(f"{prefix}.{fname}: {what} must contain ints, got {type(d).__name__} {d!r} "
                            f"in {shape!r}") from None
        if d < 0:
            raise ValueError(f"{prefix}.{fname}: {what} must not have negative dimensions, got {shape!r}")
        out.append(int(d))
    return tuple(out)


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """Split a PRNG key into ``num`` new keys (or an array of keys of shape ``num``).

    Returns typed keys for a typed key and raw uint32 keys for a raw key.
    """
    data, impl, typed = check_key("split", key)
    if isinstance(num, (int, np.integer)) and not isinstance(num, bool) and num < 0:
        raise ValueError(f"kiln.random.split: num must be non-negative, got {num}")
    shape = canonical_shape("split", num, "num")
    return _wrap(_split_impl(impl, data, shape), impl, typed)


def fold_in(key: Any, data: Any) -> Any:
    """A new key from ``key`` and a 32-bit integer ``data`` (deterministic, independent streams)."""
    kdata, impl, typed = check_key("fold_in", key)
    if isinstance(data, KeyArray):
        raise TypeError("kiln.random.fold_in: data must be an integer, got a PRNG key")
    if isinstance(data, (bool, int)) and not isinstance(data, np.generic):
        if not 0 <= int(data) < 2 ** 32:
            raise OverflowError(f"kiln.random.fold_in: data {data} is out of bounds for uint32 (0 to 2**32 - 1)")
        data = np.uint32(data)
    elif not (_is_array(data) or isinstance(data, float)):
        raise TypeError(f"kiln.random.fold_in: data must be an integer scalar, got {type(data).__name__}")
    shape = abstractify(data).shape if isinstance(data, (Array, Tracer)) else np.shape(data)
    if shape:
        raise TypeError(f"kiln.random.fold_in: accepts a scalar, but was given an array of shape {shape} != (). "
                        "Use kiln.vmap for batching.")
    # (a Python int, checked above, is passed as the NumPy scalar: the compiled call takes it, with no separate
    # transfer and cast)
    msg = data if type(data) is np.uint32 else knp.asarray(data).astype(dtypes.uint32)
    return _wrap(_fold_in_impl(impl, kdata, msg), impl, typed)


@takes_out_sharding
def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Uniform random bits: an unsigned integer array of ``shape`` (default dtype uint32; uint64 with x64)."""
    data, impl, _ = check_key("bits", key)
    dtype = dtypes.default_uint_dtype() if dtype is None else dtypes._to_supported_dtype(dtype)
    if dtype.kind != "u":
        raise ValueError(f"kiln.random.bits: dtype must be an unsigned integer dtype, got {dtype.name}")
    canon = dtypes.canonicalize_dtype(dtype)
    shape = canonical_shape("bits", shape)
    return _bits_impl(impl, data, canon.itemsize * 8, shape)


# -- for the samplers: keys as sampler_key gives them (raw threefry data or typed keys), traced or eager ---------

def impl_of(key: Any) -> PRNGImpl:
    """The PRNG implementation of a key as :func:`sampler_key` gives it."""
    return key._impl if isinstance(key, KeyArray) else threefry_prng_impl


def raw_data(key: Any) -> Any:
    """The uint32 data of a key as :func:`sampler_key` gives it."""
    return key._data if isinstance(key, KeyArray) else key


def as_typed(key: Any) -> KeyArray:
    """A key as :func:`sampler_key` gives it, as a typed key array (for the public samplers a sampler calls:
    a raw key is then reported once, by the first)."""
    return key if isinstance(key, KeyArray) else KeyArray(key)


def _in_form_of(key: Any, data: Any) -> Any:
    return key._like(data) if isinstance(key, KeyArray) else data


def random_bits(key: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    """Random bits of a single key."""
    return _bits_impl(impl_of(key), raw_data(key), bit_width, shape)


def split_keys(key: Any, num: int | tuple[int, ...] = 2) -> Any:
    """A single key split into keys of shape ``num`` (in the key's form)."""
    shape = (num,) if isinstance(num, int) else tuple(num)
    return _in_form_of(key, _split_impl(impl_of(key), raw_data(key), shape))


def unstack_keys(keys: Any) -> list:
    """The keys of a 1-d array of keys (in its form), each sliced out of the data with ``lax.slice``."""
    data, ks = raw_data(keys), impl_of(keys).key_shape
    n = abstractify(data).shape[0]
    return [_in_form_of(keys, lax.reshape(lax.slice(data, (i,) + (0,) * len(ks), (i + 1,) + ks), ks))
            for i in range(n)]


def seed_with_impl(impl: Any, seed: Any) -> KeyArray:
    """A typed key of implementation ``impl`` from ``seed`` (``jax.extend.random.seed_with_impl``)."""
    return key(seed, impl=impl)
