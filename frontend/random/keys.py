"""PRNG keys: typed key arrays (``key<fry>``), raw uint32 keys, and the key operations
(``key``, ``PRNGKey``, ``key_data``, ``wrap_key_data``, ``split``, ``fold_in``, ``bits``).

A typed key array is a :class:`KeyArray`: a small wrapper over a uint32 kiln array (or tracer) of
shape ``batch_shape + (2,)``. To users it is a pytree leaf, as in JAX (``kiln.tree.map(f, {"k": key})`` calls
``f`` on the key); kiln's transformations see a node whose one child is that data array, so keys pass
through ``jit``, ``vmap``, ``scan`` and ``grad`` as their data; it has no arithmetic. Raw keys (JAX's
legacy ``PRNGKey``) are plain uint32 arrays of shape ``(2,)``; every function accepts both kinds
and returns the kind it was given.
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
from ..driver.array import Array
from ..driver.jit import jit
from ..driver.tools import register_typeof
from ..lax.sharding import takes_out_sharding
from ..numpy import key_arrays as _numpy_key_arrays
from . import threefry

__all__ = ["KeyArray", "KeyDtype", "key", "PRNGKey", "key_data", "wrap_key_data", "key_impl", "key_dtype",
           "split", "fold_in", "bits", "clone"]

IMPL_NAME = "threefry2x32"
_KEY_SHAPE = (2,)


class KeyDtype:
    """The dtype of typed PRNG key arrays: prints as ``key<fry>`` (threefry2x32 keys)."""

    __slots__ = ("impl",)

    def __init__(self, impl: str = IMPL_NAME):
        self.impl = impl

    @property
    def name(self) -> str:
        return "key<fry>"

    @property
    def itemsize(self) -> int:
        return 8  # two uint32 words

    @property
    def type(self) -> type:
        """The scalar type: ``kiln.dtypes.prng_key`` (so ``issubdtype(dt, kiln.dtypes.extended)``)."""
        return dtypes.prng_key

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            return other in (self.name, self.impl)
        return isinstance(other, KeyDtype) and other.impl == self.impl

    def __hash__(self) -> int:
        return hash((KeyDtype, self.impl))


KEY_DTYPE = KeyDtype()


def _no_arithmetic(symbol: str):
    def method(self, *args):
        raise TypeError(f"kiln.random: unsupported operand for {symbol}: PRNG key arrays (dtype key<fry>) have "
                        "no arithmetic. Derive new keys with kiln.random.split or kiln.random.fold_in, or use "
                        "kiln.random.key_data(keys) for the raw uint32 data.")
    return method


class KeyArray:
    """An array of PRNG keys (dtype ``key<fry>``) over uint32 key data of shape ``shape + (2,)``.

    Create one with :func:`kiln.random.key` (or :func:`wrap_key_data`). Index, reshape and iterate
    it like an array of its ``shape``; it supports ``==``/``!=`` but no arithmetic.
    """

    __slots__ = ("_data", "_consumed", "_loop")
    __array_priority__ = 200

    def __init__(self, data: Any):
        self._data = data
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
        return KEY_DTYPE

    @property
    def itemsize(self) -> int:
        return KEY_DTYPE.itemsize

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
        return KeyArray(self._data[self._data_index(index)])

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
        return KeyArray(self._data.reshape(shape + _KEY_SHAPE, order=order))

    def ravel(self) -> KeyArray:
        return self.reshape((self.size,))

    flatten = ravel

    def squeeze(self, axis=None) -> KeyArray:
        if axis is None:
            axis = tuple(i for i, s in enumerate(self.shape) if s == 1)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(a % self.ndim if self.ndim else a for a in axes)
        return KeyArray(self._data.squeeze(axes)) if axes else self

    def transpose(self, *axes) -> KeyArray:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if not axes:
            axes = tuple(reversed(range(self.ndim)))
        return KeyArray(self._data.transpose(tuple(a % self.ndim for a in axes) + (self.ndim,)))

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
            return KeyArray(knp.take(self.ravel()._data, indices, axis=0))
        return KeyArray(knp.take(self._data, indices, axis=axis % self.ndim))

    def copy(self) -> KeyArray:
        return KeyArray(self._data)

    # -- comparison ----------------------------------------------------------------------------
    def _compare(self, other, op):
        if not isinstance(other, KeyArray):
            raise TypeError(f"kiln.random: cannot compare a key array with {type(other).__name__}; compare "
                            "key arrays with key arrays, or their kiln.random.key_data")
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
        raise TypeError("kiln.random: a key array (dtype key<fry>) cannot be converted to a NumPy array; use "
                        "kiln.random.key_data(keys) for its uint32 data")

    def __repr__(self) -> str:
        data = self._data
        body = str(data) if isinstance(data, (Array, np.ndarray)) else repr(data)  # (NumPy data: in a callback)
        return f"Array({self.shape}, dtype={KEY_DTYPE.name}) overlaying:\n{body}"

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
        return KeyArray(self.keys._data.at[self.keys._data_index(self.index)].get(**kwargs))

    def set(self, values: Any, **kwargs) -> KeyArray:
        if not isinstance(values, KeyArray):
            raise TypeError(f"kiln.random: keys.at[...].set takes a key array (dtype {KEY_DTYPE.name}), got "
                            f"{type(values).__name__}; make keys with kiln.random.key or kiln.random.split")
        return KeyArray(self.keys._data.at[self.keys._data_index(self.index)].set(values._data, **kwargs))


def _flatten(k: KeyArray):
    return (k._data,), IMPL_NAME


def _unflatten(impl: str, children) -> KeyArray:
    (data,) = children
    return KeyArray(data)


tree_util.register_internal_node(KeyArray, _flatten, _unflatten, hidden_axes=len(_KEY_SHAPE))
# Mirrored into jaxlib's C++ pytree registry, for jit's C++ dispatch path (see frontend/array.py).
fastpath.register_node(KeyArray, lambda k: ((k._data,), IMPL_NAME), _unflatten)


class KeyShapedArray:
    """What ``kiln.typeof`` says of a key array: its shape and dtype ``key<fry>``, printed as JAX's
    (``key<fry>[]``, ``ShapedArray(key<fry>[2])``). kiln's IR carries the keys' uint32 data instead."""

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
            raise TypeError(f"kiln.numpy.{fname}: cannot mix key arrays (dtype {KEY_DTYPE.name}) with arrays of "
                            f"other dtypes (got {type(v).__name__}); make keys with kiln.random.key, "
                            "kiln.random.split or kiln.random.wrap_key_data")
    return [v._data for v in values]


def _np_stack(arrays: Sequence[Any], axis: int) -> KeyArray:
    data = _data_of("stack", arrays)
    return KeyArray(knp.stack(data, canonical_axis("stack", axis, arrays[0].ndim + 1)))


def _np_concatenate(arrays: Sequence[Any], axis: int | None) -> KeyArray:
    data = _data_of("concatenate", arrays)
    if axis is None:
        return KeyArray(knp.concatenate([d.reshape(-1, 2) for d in data], 0))
    if arrays[0].ndim == 0:
        raise ValueError("kiln.numpy.concatenate: zero-dimensional arrays cannot be concatenated")
    return KeyArray(knp.concatenate(data, canonical_axis("concatenate", axis, arrays[0].ndim)))


def _np_where(condition: Any, x: Any, y: Any) -> KeyArray:
    data = _data_of("where", [x, y])
    return KeyArray(knp.where(knp.expand_dims(knp.asarray(condition), -1), *data))


def _np_take(a: KeyArray, indices: Any, axis: int | None, **options: Any) -> KeyArray:
    if axis is None:
        return KeyArray(knp.take(a._data.reshape(-1, 2), indices, 0, **options))
    return KeyArray(knp.take(a._data, indices, canonical_axis("take", axis, a.ndim), **options))


def _np_broadcast_to(a: KeyArray, shape: Any) -> KeyArray:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return KeyArray(knp.broadcast_to(a._data, shape + _KEY_SHAPE))


def _np_expand_dims(a: KeyArray, axis: Any) -> KeyArray:
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    ndim = a.ndim + len(axes)
    return KeyArray(knp.expand_dims(a._data, tuple(canonical_axis("expand_dims", ax, ndim) for ax in axes)))


def _np_flip(a: KeyArray, axis: Any) -> KeyArray:
    if axis is None:
        axes = tuple(range(a.ndim))
    else:
        given = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        axes = tuple(canonical_axis("flip", ax, a.ndim) for ax in given)
    return KeyArray(knp.flip(a._data, axes)) if axes else a


def _np_asarray(a: KeyArray, dtype: Any, copy: bool | None) -> KeyArray:
    if dtype is not None and dtype != KEY_DTYPE:
        raise TypeError(f"kiln.numpy.asarray: a key array (dtype {KEY_DTYPE.name}) cannot be converted to dtype "
                        f"{np.dtype(dtype).name if isinstance(dtype, (type, np.dtype)) else dtype}; use "
                        "kiln.random.key_data(keys) for its uint32 data")
    return KeyArray(knp.array(a._data)) if copy else a


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


def _check_raw_key_data(fname: str, data: Any) -> Any:
    """Validate raw key data (uint32, trailing dimension 2); a kiln array or tracer."""
    if isinstance(data, (np.ndarray, np.generic)):
        data = knp.asarray(data)
    aval = abstractify(data)
    if aval.ndim < 1:
        raise TypeError(f"kiln.random.{fname}: invalid PRNG key data: expected an array with at least one "
                        f"dimension, got a 0-d {aval.dtype.name} array")
    if aval.shape[-1:] != _KEY_SHAPE:
        raise TypeError(f"kiln.random.{fname}: invalid PRNG key data: expected a shape ending with (2,), got "
                        f"shape {aval.shape}")
    if aval.dtype != dtypes.uint32:
        raise TypeError(f"kiln.random.{fname}: invalid PRNG key data: expected dtype uint32, got "
                        f"{aval.dtype.name}")
    return data


def check_key(fname: str, key: Any, allow_batched: bool = False) -> tuple[Any, bool]:
    """``(raw key data, typed)`` for a typed key array or a raw uint32 key.

    Without ``allow_batched``, a single key is required (as in JAX: use vmap for batches).
    """
    if isinstance(key, KeyArray):
        data, typed = key._data, True
        if config.debug_key_reuse and fname not in _NOT_CONSUMING:
            _consume(fname, key)
    elif _is_array(key):
        data, typed = _check_raw_key_data(fname, key), False
        if config.legacy_prng_key != "allow":
            _legacy_key_used(fname)
    else:
        raise TypeError(f"kiln.random.{fname}: expected a PRNG key (from kiln.random.key or kiln.random.PRNGKey), "
                        f"got {type(key).__name__} {_short(key)}")
    if not allow_batched:
        batch = abstractify(data).shape[:-1]
        if batch:
            shown = batch if typed else batch + _KEY_SHAPE
            raise ValueError(f"kiln.random.{fname}: accepts a single key, but was given a key array of shape "
                             f"{shown} != (). Use kiln.vmap for batching.")
    return data, typed


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


def _wrap(data: Any, typed: bool) -> Any:
    return KeyArray(data) if typed else data


def _check_impl(fname: str, impl: Any) -> None:
    if impl is None or impl == IMPL_NAME or isinstance(impl, KeyDtype):
        return
    raise ValueError(f"kiln.random.{fname}: unrecognized PRNG implementation {impl!r}; kiln implements "
                     f"'{IMPL_NAME}'")


# -- seeds -----------------------------------------------------------------------------------------

@jit
def _seed_impl(seed):
    return threefry.seed(seed)


def _seed_data(fname: str, seed: Any) -> Any:
    if isinstance(seed, KeyArray):
        raise TypeError(f"kiln.random.{fname}: accepts a scalar seed, but was given a PRNG key")
    if isinstance(seed, (bool, int)) and not isinstance(seed, np.generic):
        s = int(seed)
        if not -2 ** 63 <= s < 2 ** 63:
            raise OverflowError(f"kiln.random.{fname}: seed {s} does not fit in 64 bits (signed)")
        # A Python int is a 64-bit seed. Without x64 kiln has no 64-bit integers, so (as JAX) it is
        # first cut to its low 32 bits, as a 32-bit seed.
        value = np.int64(s) if dtypes.canonicalize_dtype(np.int64) == np.int64 else np.int64(s).astype(np.int32)
        return _seed_impl(value)
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
    return _seed_impl(seed)


def key(seed: Any, *, impl: Any = None) -> KeyArray:
    """A typed PRNG key (dtype ``key<fry>``, shape ``()``) from an integer seed.

    Parameters
    ----------
    seed : int or integer scalar array (also a traced one inside ``jit``)
        A 64- or 32-bit seed: the key data is its two's complement value cut into two uint32
        words ``[hi, lo]`` (without x64, an int is first cut to 32 bits, so ``hi = 0``).
    impl : optional, ``'threefry2x32'`` (the only implementation).
    """
    _check_impl("key", impl)
    return KeyArray(_seed_data("key", seed))


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:
    """A raw (legacy) PRNG key: the uint32 array of shape ``(2,)`` that :func:`key` wraps."""
    _check_impl("PRNGKey", impl)
    return _seed_data("PRNGKey", seed)


def key_data(keys: Any) -> Any:
    """The uint32 data of PRNG keys (shape ``keys.shape + (2,)``); raw keys are returned as they are."""
    data, _ = check_key("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> KeyArray:
    """Typed keys over raw uint32 key data of shape ``batch + (2,)`` (the inverse of :func:`key_data`).

    ``dtype`` names the implementation as ``impl`` does (a key dtype such as ``key.dtype``, or
    ``'threefry2x32'``); give one of the two.
    """
    if dtype is not None:
        if impl is not None:
            raise ValueError("kiln.random.wrap_key_data: give the PRNG implementation as impl= or as dtype=, "
                             "not both")
        impl = dtype
    _check_impl("wrap_key_data", impl)
    if isinstance(key_bits_array, KeyArray):
        raise TypeError("kiln.random.wrap_key_data: expected uint32 key data, but was given a key array (dtype "
                        "key<fry>) that is already typed")
    if not _is_array(key_bits_array):
        try:
            key_bits_array = knp.asarray(key_bits_array)
        except Exception:
            raise TypeError(f"kiln.random.wrap_key_data: expected a uint32 array, got "
                            f"{type(key_bits_array).__name__}") from None
    return KeyArray(_check_raw_key_data("wrap_key_data", key_bits_array))


def key_impl(keys: Any) -> str:
    """The name of the PRNG implementation of ``keys``: ``'threefry2x32'``."""
    check_key("key_impl", keys, allow_batched=True)
    return IMPL_NAME


def key_dtype(impl: Any = None) -> KeyDtype:
    """The dtype of typed keys of a PRNG implementation (``key<fry>``)."""
    _check_impl("key_dtype", impl)
    return KEY_DTYPE


def clone(key: Any) -> Any:
    """A copy of ``key`` that has not been consumed (for debug_key_reuse); a raw key as it is."""
    return KeyArray(key._data) if isinstance(key, KeyArray) else key


# -- split, fold_in, bits ----------------------------------------------------------------------------

@partial(jit, static_argnums=(1,))
def _split_impl(data, shape):
    return threefry.split(data, shape)


@jit
def _fold_in_impl(data, msg):
    return threefry.fold_in(data, msg)


@partial(jit, static_argnums=(1, 2))
def _bits_impl(data, bit_width, shape):
    return threefry.random_bits(data, bit_width, shape)


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
    data, typed = check_key("split", key)
    if isinstance(num, (int, np.integer)) and not isinstance(num, bool) and num < 0:
        raise ValueError(f"kiln.random.split: num must be non-negative, got {num}")
    shape = canonical_shape("split", num, "num")
    return _wrap(_split_impl(data, shape), typed)


def fold_in(key: Any, data: Any) -> Any:
    """A new key from ``key`` and a 32-bit integer ``data`` (deterministic, independent streams)."""
    kdata, typed = check_key("fold_in", key)
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
    msg = knp.asarray(data).astype(dtypes.uint32)
    return _wrap(_fold_in_impl(kdata, msg), typed)


@takes_out_sharding
def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Uniform random bits: an unsigned integer array of ``shape`` (default dtype uint32; uint64 with x64)."""
    data, _ = check_key("bits", key)
    dtype = dtypes.default_uint_dtype() if dtype is None else np.dtype(dtype)
    if dtype.kind != "u":
        raise ValueError(f"kiln.random.bits: dtype must be an unsigned integer dtype, got {dtype.name}")
    canon = dtypes.canonicalize_dtype(dtype)
    shape = canonical_shape("bits", shape)
    return _bits_impl(data, canon.itemsize * 8, shape)


def random_bits(data: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    """Random bits from raw key data (for the samplers; traced or eager)."""
    return _bits_impl(data, bit_width, shape)


def split_data(data: Any, num: int | tuple[int, ...] = 2) -> Any:
    """Split raw key data into ``num`` keys (raw data), for the samplers."""
    shape = (num,) if isinstance(num, int) else tuple(num)
    return _split_impl(data, shape)
