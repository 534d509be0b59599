"""Primitives one StableHLO op each, outside the other families:

- ``reduce_precision`` (``stablehlo.reduce_precision``): round floats to fewer exponent/mantissa bits.
- ``optimization_barrier`` (``stablehlo.optimization_barrier``): values XLA may not move computations
  across (for scheduling and rematerialisation control); the identity on values.
- ``rng_bit_generator`` (``stablehlo.rng_bit_generator``): XLA's stateless random bits from a key.
- ``platform_index``: a constant chosen when the program is lowered, from the platform it is lowered
  for (what ``kiln.lax.platform_dependent`` switches on).
- ``reduce`` (``stablehlo.reduce`` with a traced region): a reduction of one or several operands
  with any associative Python computation. Reductions by ``kiln.lax.add``/``mul``/``max``/``min``/
  ``bitwise_and``/``bitwise_or`` from their identity take the dedicated primitives (as JAX).
- ``xla_metadata_value`` (no op of its own): the identity on a value, whose lowering writes XLA metadata on
  the operation that produced the value (``kiln.experimental.xla_metadata.set_xla_metadata(x, ...)``).
"""
from __future__ import annotations

import enum
import functools
from typing import Any, Callable, Sequence

import numpy as np

from ..core import caches, dtypes, tree_util
from ..core.avals import ShapedArray
from ..core.ir import ClosedIR
from ..core.primitive import Primitive
from ..core.tracing import Tracer, abstractify, materialize, trace_to_ir
from . import api
from .sharding import apply_out_sharding, takes_out_sharding
from .windowed import _identity, _monoid_of

__all__ = ["RandomAlgorithm", "optimization_barrier", "reduce", "reduce_precision", "reduce_xor",
           "rng_bit_generator"]


# -- platform_index (for kiln.lax.platform_dependent) ------------------------------------------------

def _platform_index_rule(*, platforms: tuple[tuple[str, ...], ...], has_default: bool) -> ShapedArray:
    return ShapedArray((), np.dtype(np.int32))


# The index of the first entry of ``platforms`` naming the platform the program is lowered for, else
# ``len(platforms)`` (the default) when ``has_default``: a constant chosen at lowering.
platform_index_p = Primitive("platform_index", _platform_index_rule)


# -- reduce_precision ------------------------------------------------------------------------------

def _reduce_precision_rule(x: ShapedArray, *, exponent_bits: int, mantissa_bits: int) -> ShapedArray:
    if not dtypes.is_float(x.dtype):
        raise TypeError(f"kiln.lax.reduce_precision: the operand must be a float array, got {x.dtype.name}")
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"kiln.lax.reduce_precision: exponent_bits must be at least 1 and mantissa_bits at least "
                         f"0, got {exponent_bits} and {mantissa_bits}")
    return x


reduce_precision_p = Primitive("reduce_precision", _reduce_precision_rule)


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int):
    """``operand`` rounded (to nearest even) to a float format with ``exponent_bits`` exponent and
    ``mantissa_bits`` mantissa bits, overflowing to infinity, in ``operand``'s dtype."""
    for what, v in (("exponent_bits", exponent_bits), ("mantissa_bits", mantissa_bits)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"kiln.lax.reduce_precision: {what} must be an int, got {v!r}")
    if api._is_py_scalar(operand):
        operand = materialize(api.literal(operand, dtypes.canonicalize_dtype(dtypes.dtype_of_value(operand)[0])))
    return reduce_precision_p.bind(operand, exponent_bits=int(exponent_bits), mantissa_bits=int(mantissa_bits))


# -- optimization_barrier --------------------------------------------------------------------------

def _barrier_rule(*xs: ShapedArray) -> list[ShapedArray]:
    return list(xs)


optimization_barrier_p = Primitive("optimization_barrier", _barrier_rule, multiple_results=True)


def optimization_barrier(operand: Any, /):
    """The identity on a pytree of arrays, which XLA may not optimise across: computations are not moved
    into or out of the barrier (e.g. to keep a rematerialisation from being undone)."""
    leaves, tree = tree_util.tree_flatten(operand)
    if not leaves:
        return operand
    leaves = [materialize(api.literal(x, dtypes.dtype_of_value(x)[0], dtypes.is_weakly_typed(x)))
              if api._is_py_scalar(x) else x for x in leaves]
    return tree_util.tree_unflatten(tree, optimization_barrier_p.bind(*leaves))


# -- xla_metadata_value ----------------------------------------------------------------------------

# JAX's primitive of the same name: the identity, whose lowering adds ``xla_metadata_kvs`` (sorted (key, value)
# string pairs) to the ``mhlo.frontend_attributes`` of the operation producing its operand (none for an input of
# the program). Eagerly, the value itself.
xla_metadata_value_p = Primitive("xla_metadata_value", lambda x, *, xla_metadata_kvs: x)
xla_metadata_value_p.impl = lambda x, *, xla_metadata_kvs: x


# -- rng_bit_generator ---------------------------------------------------------------------------

class RandomAlgorithm(enum.IntEnum):
    """The algorithm of :func:`rng_bit_generator` (as ``jax.lax.RandomAlgorithm``)."""

    RNG_DEFAULT = 0    # the backend's default
    RNG_THREE_FRY = 1  # Threefry-2x32
    RNG_PHILOX = 2     # Philox-4x32

    def __str__(self) -> str:
        return self.name


_RBG_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))


def _rng_bit_generator_rule(key: ShapedArray, *, shape: tuple[int, ...], dtype: np.dtype,
                            algorithm: RandomAlgorithm) -> list[ShapedArray]:
    if not ((key.shape == (4,) and key.dtype == np.uint32) or (key.shape == (2,) and key.dtype == np.uint64)):
        raise TypeError(f"kiln.lax.rng_bit_generator: the key must be a uint32 array of shape (4,) (or uint64 of "
                        f"shape (2,)), got {key.str_short()}")
    return [ShapedArray(key.shape, key.dtype), ShapedArray(shape, dtype)]


rng_bit_generator_p = Primitive("rng_bit_generator", _rng_bit_generator_rule, multiple_results=True)


def rng_bit_generator(key: Any, shape: Sequence[int], dtype: Any = np.uint32,
                      algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT, *, out_sharding: Any = None):
    """``(new_key, bits)``: uniformly random unsigned integers of ``shape`` and ``dtype`` from XLA's
    RngBitGenerator (laid out by ``out_sharding`` if given), and the key to use next. The bits depend on
    the backend (for ``RNG_DEFAULT``) and are not those of ``kiln.random``; prefer ``kiln.random`` unless
    you need this op."""
    dt = np.dtype(dtype)
    if dt not in _RBG_DTYPES:
        raise TypeError(f"kiln.lax.rng_bit_generator: dtype must be uint8, uint16, uint32 or uint64, got {dt.name}")
    dt = dtypes.canonicalize_dtype(dt)
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"kiln.lax.rng_bit_generator: shape {shape} has a negative dimension")
    try:
        algorithm = RandomAlgorithm(algorithm)
    except ValueError:
        raise ValueError(f"kiln.lax.rng_bit_generator: unknown algorithm {algorithm!r}; use a "
                         "kiln.lax.RandomAlgorithm") from None
    new_key, bits = rng_bit_generator_p.bind(key, shape=shape, dtype=dt, algorithm=algorithm)
    return new_key, apply_out_sharding(bits, out_sharding, "kiln.lax.rng_bit_generator")


# -- reduce (general) ------------------------------------------------------------------------------

def _reduce_rule(*args: ShapedArray, computation: ClosedIR, dimensions: tuple[int, ...]) -> list[ShapedArray]:
    n = len(args) // 2
    operands, inits = args[:n], args[n:]
    shape = operands[0].shape
    for o in operands[1:]:
        if o.shape != shape:
            raise ValueError("kiln.lax.reduce: all operands must have the same shape, got "
                             + ", ".join(str(x.shape) for x in operands))
    for o, i in zip(operands, inits):
        if i.shape != () or i.dtype != o.dtype:
            raise TypeError(f"kiln.lax.reduce: each init value must be a scalar of its operand's dtype "
                            f"({o.dtype.name}), got {i.str_short()}")
    if len(set(dimensions)) != len(dimensions) or any(not 0 <= d < len(shape) for d in dimensions):
        raise ValueError(f"kiln.lax.reduce: dimensions {dimensions} must be distinct dimensions of the operand "
                         f"shape {shape}")
    out_shape = tuple(s for i, s in enumerate(shape) if i not in dimensions)
    return [ShapedArray(out_shape, o.dtype, o.weak_type and i.weak_type) for o, i in zip(operands, inits)]


reduce_p = Primitive("reduce", _reduce_rule, multiple_results=True)


def _trace_computation(computation: Callable, avals: tuple[ShapedArray, ...], tree: Any) -> ClosedIR:
    n = len(avals)

    def body(*args):
        acc = tree_util.tree_unflatten(tree, list(args[:n]))
        x = tree_util.tree_unflatten(tree, list(args[n:]))
        out = computation(acc, x)
        leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"kiln.lax.reduce: computation must return the structure of the operands ({tree}), "
                            f"got {out_tree}")
        res = []
        for leaf, a in zip(leaves, avals):
            la = abstractify(leaf)
            if la.shape != () or la.dtype != a.dtype:
                raise TypeError(f"kiln.lax.reduce: computation must return scalars of the operands' dtypes "
                                f"({', '.join(b.dtype.name for b in avals)}), got {la.str_short()}")
            res.append(materialize(leaf))
        return res

    closed, _ = trace_to_ir(body, list(avals) * 2, name=getattr(computation, "__name__", "computation"))
    if any(isinstance(c, Tracer) for c in closed.consts):
        raise TypeError("kiln.lax.reduce: computation closes over a traced value; it may only use its "
                        "arguments and constants")
    return closed


_trace_cached = functools.lru_cache(maxsize=128)(_trace_computation)
caches.register(_trace_cached.cache_clear)


def _scalar(fname: str, v: Any, like: ShapedArray):
    if api._is_py_scalar(v):
        return api.literal(v, like.dtype, like.weak_type)
    if isinstance(v, (np.ndarray, np.generic)):
        return api.literal(np.asarray(v), dtypes.canonicalize_dtype(np.asarray(v).dtype))
    return v


def _concrete_scalar(v: Any):
    if isinstance(v, Tracer):
        return None
    try:
        return np.asarray(v).item() if np.ndim(np.asarray(v)) == 0 else None
    except Exception:
        return None


@takes_out_sharding(positional=True)
def reduce(operands: Any, init_values: Any, computation: Callable, dimensions: Sequence[int]):
    """Reduce ``operands`` (an array or a pytree of arrays of one shape) over ``dimensions`` with
    ``computation(accumulator, element) -> accumulator`` (pytrees of scalars like ``operands``),
    starting from ``init_values``. The computation must be associative and commutative (XLA may apply
    it in any order), and ``init_values`` its identity.
    """
    flat_ops, tree = tree_util.tree_flatten(operands)
    flat_inits, init_tree = tree_util.tree_flatten(init_values)
    if tree != init_tree or len(flat_ops) != len(flat_inits):
        raise ValueError(f"kiln.lax.reduce: operands and init_values must have the same structure, got {tree} "
                         f"and {init_tree}")
    if not flat_ops:
        raise ValueError("kiln.lax.reduce: needs at least one operand")
    if not callable(computation):
        raise TypeError(f"kiln.lax.reduce: computation must be callable, got {type(computation).__name__}")
    avals = [abstractify(o) for o in flat_ops]
    nd = avals[0].ndim
    dims = []
    for d in dimensions:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not -nd <= d < nd:
            raise ValueError(f"kiln.lax.reduce: dimension {d!r} is not a dimension of the operand shape "
                             f"{avals[0].shape}")
        dims.append(int(d) % nd)
    dims = tuple(dims)
    inits = [_scalar("reduce", v, a) for v, a in zip(flat_inits, avals)]
    # A monoid from its identity: the dedicated reduction primitive (differentiable, and what XLA expects).
    monoid = _monoid_of(computation)
    if monoid is not None and len(flat_ops) == 1:
        aval = avals[0]
        init = _concrete_scalar(flat_inits[0])
        kind_ok = monoid not in ("and", "or") or aval.dtype.kind in "biu"
        if kind_ok and init is not None and aval.dtype.kind != "c" and init == _identity(monoid, aval.dtype):
            fn = {"add": api.reduce_sum, "mul": api.reduce_prod, "max": api.reduce_max, "min": api.reduce_min,
                  "and": api.reduce_and, "or": api.reduce_or}[monoid]
            return tree_util.tree_unflatten(tree, [fn(flat_ops[0], dims)])
    init_avals = tuple(ShapedArray((), a.dtype, False) for a in avals)
    try:
        closed = _trace_cached(computation, init_avals, tree)
    except TypeError as e:
        if "unhashable" not in str(e):
            raise
        closed = _trace_computation(computation, init_avals, tree)
    outs = reduce_p.bind(*flat_ops, *inits, computation=closed, dimensions=dims)
    return tree_util.tree_unflatten(tree, outs)


def reduce_xor(operand: Any, axes: Sequence[int]):
    """Bitwise exclusive or (logical for booleans) over ``axes``."""
    aval = abstractify(operand)
    if aval.dtype.kind not in "biu":
        raise TypeError(f"kiln.lax.reduce_xor: the operand must be a boolean or integer array, got "
                        f"{aval.dtype.name}")
    axes = tuple(axes)
    if not axes:
        return operand
    return reduce(operand, api.literal(False if aval.dtype == np.bool_ else 0, aval.dtype), api.bitwise_xor, axes)
