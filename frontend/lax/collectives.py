"""Collectives over a named axis: psum, pmean, pmax, pmin, all_gather, axis_index, ppermute,
all_to_all, psum_scatter (primitives) and axis_size, pshuffle, pswapaxes, pbroadcast, pcast (built
from them).

Inside ``vmap(f, axis_name="i")`` they combine values across the batch elements of axis "i" (their
batching rules, in ``batching/rules_collectives.py``, do the reduction). An axis name must be bound
(``core.axis_env``) when the collective is traced; outside any binding it is a ``NameError``.

``all_to_all_p`` is always the rank-preserving ("tiled") exchange, as XLA's AllToAll: its operand's
``split_axis`` is divided by ``axis_size`` and its ``concat_axis`` multiplied by it. The untiled
``all_to_all`` inserts a size-1 dimension before binding and squeezes one after (its ``tiled``
parameter only records which the user asked for).
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..core import axis_env, dtypes, tree_util
from ..core.avals import ShapedArray
from ..core.axes import canonical_axis
from ..core.primitive import Primitive
from ..core.tracing import abstractify
from . import api as lax
from . import composed
from .indexing import index_take


def _names(axis_name: Any) -> tuple:
    return axis_name if isinstance(axis_name, tuple) else (axis_name,)


def _check_bound(fname: str, axis_name: Any) -> None:
    bound = axis_env.bound_names()
    for n in _names(axis_name):
        if n not in bound:
            listed = ", ".join(map(repr, bound)) or "none"
            raise NameError(f"kiln.lax.{fname}: unbound axis name {n!r} (bound axis names: {listed}). Collectives "
                            "only work inside kiln.vmap(..., axis_name=...) with that name.")


def _same_rule(x: ShapedArray, *, axis_name) -> ShapedArray:
    return x


psum_p = Primitive("psum", _same_rule)
pmax_p = Primitive("pmax", _same_rule)
pmin_p = Primitive("pmin", _same_rule)


def _all_gather_rule(x: ShapedArray, *, axis_name, axis: int, tiled: bool, axis_size: int, to: str) -> ShapedArray:
    shape = list(x.shape)
    if tiled:
        shape[axis] *= axis_size
    else:
        shape.insert(axis, axis_size)
    return x.update(shape=tuple(shape))


# ``to``: "varying" (JAX's all_gather) or "invarying" (JAX's all_gather_invariant): the same values, but inside a
# shard_map the result counts as varying along the gathered axis, or as the same on every device along it
# (core/varying.py; shard_map's check_vma).
all_gather_p = Primitive("all_gather", _all_gather_rule)
_ALL_GATHER_TO = ("varying", "invarying")


def _axis_index_rule(*, axis_name) -> ShapedArray:
    return ShapedArray((), dtypes.canonicalize_dtype(np.int32), False)


axis_index_p = Primitive("axis_index", _axis_index_rule)


def _reducer(fname: str, prim: Primitive):
    def collective(x, axis_name):
        _check_bound(fname, axis_name)
        return tree_util.tree_map(lambda v: prim.bind(v, axis_name=axis_name), x)
    collective.__name__ = collective.__qualname__ = fname
    return collective


def psum(x, axis_name):
    """Sum of ``x`` over the named axis (every element gets the total); booleans are summed as int32, as JAX's."""
    _check_bound("psum", axis_name)

    def total(v):
        if abstractify(v).dtype == np.bool_:
            v = lax.convert_element_type(v, np.int32)
        return psum_p.bind(v, axis_name=axis_name)
    return tree_util.tree_map(total, x)


pmax = _reducer("pmax", pmax_p)
pmax.__doc__ = "Maximum of ``x`` over the named axis."
pmin = _reducer("pmin", pmin_p)
pmin.__doc__ = "Minimum of ``x`` over the named axis."


def pmean(x, axis_name):
    """Mean of ``x`` over the named axis: its ``psum`` over the axis size, a true division as JAX's (integers and
    booleans give floats). The size is static: one collective, for the sum."""
    _check_bound("pmean", axis_name)
    n = axis_size(axis_name)

    def mean(v):
        total = psum(v, axis_name)
        aval = abstractify(total)
        if not dtypes.is_inexact(aval.dtype):
            total = lax.convert_element_type(total, dtypes.default_float_dtype(), weak_type=aval.weak_type)
        return lax.div(total, lax.full_like(total, n))
    return tree_util.tree_map(mean, x)


def axis_index(axis_name):
    """The position of the current element along the named axis."""
    _check_bound("axis_index", axis_name)
    return axis_index_p.bind(axis_name=axis_name)


def all_gather(x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False, to: str = "varying"):
    """The values of ``x`` of every element of the named axis, stacked along ``axis`` (``tiled``:
    concatenated along it). ``to``, as JAX's: inside a ``shard_map`` the result varies along the axis
    (``"varying"``, JAX's type of it) or is the same on every device (``"invarying"``, JAX's
    ``all_gather_invariant``: an ``out_specs`` may leave the axis out)."""
    _no_groups("all_gather", axis_index_groups)
    if to == "reduced":
        raise NotImplementedError("kiln.lax.all_gather: to='reduced' needs reduced axes in the types, which kiln "
                                  "does not have; use to='varying' (the default) or to='invarying'")
    if to not in _ALL_GATHER_TO:
        raise ValueError(f"kiln.lax.all_gather: to={to!r} is not one of 'varying', 'invarying' (or JAX's 'reduced', "
                         "which kiln does not have)")
    _check_bound("all_gather", axis_name)
    size = axis_env.axis_size(axis_name)
    if size is None:
        raise NameError(f"kiln.lax.all_gather: unbound axis name {axis_name!r}")
    ndim = abstractify(x).ndim
    axis = axis % (ndim + (0 if tiled else 1))
    return all_gather_p.bind(x, axis_name=axis_name, axis=axis, tiled=tiled, axis_size=size, to=to)


# -- the exchanges: ppermute, all_to_all, psum_scatter -------------------------------------------

def _no_groups(fname: str, axis_index_groups: Any) -> None:
    if axis_index_groups is not None:
        raise NotImplementedError(f"kiln.lax.{fname}: axis_index_groups is not supported (kiln runs the collective "
                                  "over the whole named axis); pass axis_index_groups=None")


def _single_axis(fname: str, axis_name: Any) -> tuple[Any, int]:
    """The one bound axis name a collective works over (a 1-tuple is unwrapped) and its size."""
    if isinstance(axis_name, (tuple, list)):
        if len(axis_name) != 1:
            raise NotImplementedError(f"kiln.lax.{fname}: several axis names {tuple(axis_name)!r} are not supported; "
                                      "pass one axis name (nest the collective once per name)")
        axis_name = axis_name[0]
    _check_bound(fname, axis_name)
    return axis_name, axis_env.axis_size(axis_name)


def _normalize_perm(fname: str, perm: Any, size: int) -> tuple[tuple[int, int], ...]:
    """``perm`` as a tuple of (source, destination) pairs of Python ints, each in ``[0, size)``, with no
    source or destination repeated."""
    try:
        pairs = tuple(tuple(operator.index(i) for i in pair) for pair in perm)
    except TypeError:
        raise TypeError(f"kiln.lax.{fname}: perm must be a sequence of (source, destination) pairs of ints, "
                        f"got {perm!r}") from None
    for pair in pairs:
        if len(pair) != 2:
            raise ValueError(f"kiln.lax.{fname}: each entry of perm must be a (source, destination) pair, "
                             f"got {pair!r}")
        if not all(0 <= i < size for i in pair):
            raise ValueError(f"kiln.lax.{fname}: perm entry {pair!r} is out of range for an axis of size {size} "
                             f"(indices must be in [0, {size}))")
    for k, what in ((0, "source"), (1, "destination")):
        seen = [p[k] for p in pairs]
        repeated = sorted({i for i in seen if seen.count(i) > 1})
        if repeated:
            raise ValueError(f"kiln.lax.{fname}: perm repeats the {what} index {repeated[0]} (each index may be a "
                             f"{what} at most once), got perm={pairs!r}")
    return pairs


def _ppermute_rule(x: ShapedArray, *, axis_name, perm) -> ShapedArray:
    return x


ppermute_p = Primitive("ppermute", _ppermute_rule)


def _all_to_all_rule(x: ShapedArray, *, axis_name, split_axis: int, concat_axis: int, axis_size: int,
                     tiled: bool) -> ShapedArray:
    shape = list(x.shape)
    if shape[split_axis] % axis_size:
        raise ValueError(f"kiln.lax.all_to_all: dimension {split_axis} (size {shape[split_axis]}) of the operand is "
                         f"not divisible by the size {axis_size} of axis {axis_name!r}")
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
    return x.update(shape=tuple(shape), weak_type=False)


all_to_all_p = Primitive("all_to_all", _all_to_all_rule)


def _psum_scatter_rule(x: ShapedArray, *, axis_name, scatter_dimension: int, axis_size: int,
                       tiled: bool) -> ShapedArray:
    shape = list(x.shape)
    n = shape[scatter_dimension]
    if tiled:
        if n % axis_size:
            raise ValueError(f"kiln.lax.psum_scatter: dimension {scatter_dimension} (size {n}) of the operand is not "
                             f"divisible by the size {axis_size} of axis {axis_name!r} (tiled=True)")
        shape[scatter_dimension] = n // axis_size
    else:
        if n != axis_size:
            raise ValueError(f"kiln.lax.psum_scatter: dimension {scatter_dimension} (size {n}) of the operand must "
                             f"equal the size {axis_size} of axis {axis_name!r} (tiled=False; pass tiled=True to "
                             "scatter blocks of a larger dimension)")
        del shape[scatter_dimension]
    return x.update(shape=tuple(shape))


psum_scatter_p = Primitive("psum_scatter", _psum_scatter_rule)


def ppermute(x, axis_name, perm):
    """Send each element's ``x`` along the named axis as ``perm`` says: ``(source, destination)`` pairs
    of axis indices; an element that is no pair's destination gets zeros."""
    name, size = _single_axis("ppermute", axis_name)
    pairs = _normalize_perm("ppermute", perm, size)
    return tree_util.tree_map(lambda v: ppermute_p.bind(v, axis_name=name, perm=pairs), x)


def pshuffle(x, axis_name, perm):
    """``ppermute`` with the permutation given as sources: element ``i`` gets the value of element
    ``perm[i]``; ``perm`` must hold every index of the axis exactly once."""
    name, size = _single_axis("pshuffle", axis_name)
    try:
        srcs = [operator.index(i) for i in perm]
    except TypeError:
        raise TypeError(f"kiln.lax.pshuffle: perm must be a sequence of ints, got {perm!r}") from None
    if sorted(srcs) != list(range(len(srcs))):
        raise ValueError(f"kiln.lax.pshuffle: perm {tuple(srcs)!r} is not a permutation of 0..{len(srcs) - 1}")
    if len(srcs) != size:
        raise ValueError(f"kiln.lax.pshuffle: perm has {len(srcs)} entries but axis {name!r} has size {size} (it "
                         "must list every index of the axis once)")
    return ppermute(x, name, list(zip(srcs, range(len(srcs)))))


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, axis_index_groups=None, tiled: bool = False):
    """Exchange blocks across the named axis: each element splits its ``split_axis`` into ``axis_size``
    blocks and sends block ``j`` to element ``j``, which lines up the blocks it receives (by sender)
    along ``concat_axis``.

    Untiled, ``x.shape[split_axis]`` must equal the axis size: that dimension is removed and a new one of
    the axis size is inserted at ``concat_axis`` (a position in the result). Tiled, the shape keeps its
    rank: ``split_axis`` is divided by the axis size and ``concat_axis`` multiplied by it.
    """
    _no_groups("all_to_all", axis_index_groups)
    name, size = _single_axis("all_to_all", axis_name)

    def bind(v):
        aval = abstractify(v)
        split = canonical_axis("kiln.lax.all_to_all", split_axis, aval.ndim, what="split_axis")
        concat = canonical_axis("kiln.lax.all_to_all", concat_axis, aval.ndim, what="concat_axis")
        n = aval.shape[split]
        if tiled:
            if n % size:
                raise ValueError(f"kiln.lax.all_to_all: the size {n} of split_axis {split} is not divisible by the "
                                 f"size {size} of axis {name!r} (tiled=True)")
        elif n != size:
            raise ValueError(f"kiln.lax.all_to_all: the size {n} of split_axis {split} must equal the size {size} of "
                             f"axis {name!r} (tiled=False; pass tiled=True to split a larger dimension into blocks)")
        if tiled or split == concat:
            return all_to_all_p.bind(v, axis_name=name, split_axis=split, concat_axis=concat, axis_size=size,
                                     tiled=bool(tiled))
        # Untiled: a size-1 dimension receives the blocks, then the emptied split dimension goes.
        if split < concat:
            concat += 1
        else:
            split += 1
        out = all_to_all_p.bind(composed.expand_dims(v, (concat,)), axis_name=name, split_axis=split,
                                concat_axis=concat, axis_size=size, tiled=False)
        return composed.squeeze(out, (split,))
    return tree_util.tree_map(bind, x)


def _ragged_offsets(fname: str, **arrays: Any) -> int:
    """The common length of the offset and size arrays of a ragged exchange (checked: 1-D, integer, non-empty)."""
    lengths = set()
    for what, v in arrays.items():
        aval = abstractify(v)
        if not dtypes.is_int(aval.dtype):
            raise ValueError(f"kiln.lax.{fname}: {what} must be an integer array, got {aval.dtype.name}")
        if aval.ndim != 1 or aval.shape[0] < 1:
            raise ValueError(f"kiln.lax.{fname}: {what} must be rank 1 with a positive size, got shape {aval.shape}")
        lengths.add(aval.shape[0])
    if len(lengths) > 1:
        raise ValueError(f"kiln.lax.{fname}: input_offsets, send_sizes, output_offsets and recv_sizes must have one "
                         f"length, got {', '.join(f'{k} {abstractify(v).shape[0]}' for k, v in arrays.items())}")
    return lengths.pop()


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes, *, axis_name,
                      axis_index_groups=None):
    """Ragged :func:`all_to_all` (JAX's): slice ``i`` of ``operand`` (rows ``input_offsets[i]`` to
    ``input_offsets[i] + send_sizes[i]``) goes to element ``i // (K / axis_size)`` of the named axis, which writes it
    into its ``output`` at that element's ``output_offsets[i]``; the result is ``output`` with the received slices
    written (``recv_sizes`` rows each, in order: a later slice overwrites an earlier one where they overlap).

    Built from ``all_to_all`` of the offsets, ``all_gather`` of the operand and one gather (XLA's own
    ragged-all-to-all has no CPU implementation), so it runs on every backend and differentiates and batches as
    those do."""
    fname = "ragged_all_to_all"
    _no_groups(fname, axis_index_groups)
    name, size = _single_axis(fname, axis_name)
    op, out = abstractify(operand), abstractify(output)
    if op.ndim < 1 or op.ndim != out.ndim or op.shape[1:] != out.shape[1:] or op.dtype != out.dtype:
        raise ValueError(f"kiln.lax.{fname}: operand and output must have one dtype and the same shape but for their "
                         f"leading (ragged) dimension, got {op.str_short()} and {out.str_short()}")
    k = _ragged_offsets(fname, input_offsets=input_offsets, send_sizes=send_sizes, output_offsets=output_offsets,
                        recv_sizes=recv_sizes)
    if k % size:
        raise ValueError(f"kiln.lax.{fname}: the length {k} of the offset and size arrays is not divisible by the "
                         f"size {size} of axis {name!r}")
    i32 = dtypes.int32
    # Per slice this element receives (slice i from element i // per_peer): where it starts in its sender's operand
    # and where it goes in this element's output.
    per_peer = k // size
    starts = lax.convert_element_type(all_to_all(input_offsets, name, 0, 0, tiled=True), i32)
    at = lax.convert_element_type(all_to_all(output_offsets, name, 0, 0, tiled=True), i32)
    rows_of = lax.convert_element_type(recv_sizes, i32)
    m = out.shape[0]
    rows = lax.broadcasted_iota(i32, (k, m), 1)
    first = lax.broadcast_in_dim(at, (k, m), (0,))
    beyond = lax.add(first, lax.broadcast_in_dim(rows_of, (k, m), (0,)))
    covered = lax.bitwise_and(lax.ge(rows, first), lax.lt(rows, beyond))
    # The slice that writes each output row: the last one covering it (-1: none).
    owner = lax.reduce_max(lax.select(covered, lax.broadcasted_iota(i32, (k, m), 0), -1), (0,))
    slice_of_row = lax.max(owner, 0)
    source_row = lax.add(index_take(starts, [slice_of_row], (0,)),
                         lax.sub(lax.iota(i32, m), index_take(at, [slice_of_row], (0,))))
    everyone = all_gather(operand, name)  # (axis size, rows of operand, ...)
    received = index_take(everyone, [lax.div(slice_of_row, per_peer), source_row], (0, 1))
    written = lax.broadcast_in_dim(lax.ge(owner, 0), out.shape, (0,))
    return lax.select(written, received, output)


def pswapaxes(x, axis_name, axis: int, *, axis_index_groups=None):
    """Swap the named axis with the array axis ``axis`` (whose size must be the named axis's):
    ``all_to_all(x, axis_name, axis, axis)``."""
    _no_groups("pswapaxes", axis_index_groups)
    return all_to_all(x, axis_name, axis, axis)


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None, tiled: bool = False):
    """``psum(x, axis_name)`` of which element ``i`` keeps only block ``i`` along ``scatter_dimension``.

    Untiled, that dimension must have the axis's size and is removed (element ``i`` gets
    ``psum(x)[..., i, ...]``); tiled, it must be divisible by the axis size and is divided by it.
    """
    _no_groups("psum_scatter", axis_index_groups)
    name, size = _single_axis("psum_scatter", axis_name)

    def bind(v):
        aval = abstractify(v)
        dim = canonical_axis("kiln.lax.psum_scatter", scatter_dimension, aval.ndim, what="scatter_dimension")
        return psum_scatter_p.bind(v, axis_name=name, scatter_dimension=dim, axis_size=size, tiled=bool(tiled))
    return tree_util.tree_map(bind, x)


def axis_size(axis_name) -> int:
    """The size of the named axis (a Python int); for a tuple of names, the product of their sizes."""
    total = 1
    for n in _names(axis_name):
        _check_bound("axis_size", n)
        total *= axis_env.axis_size(n)
    return total


def pbroadcast(x, axis_name, source: int):
    """Every element of the named axis gets element ``source``'s ``x``."""
    name, size = _single_axis("pbroadcast", axis_name)
    try:
        src = operator.index(source)
    except TypeError:
        raise TypeError(f"kiln.lax.pbroadcast: source must be an int, got {source!r}") from None
    if not 0 <= src < size:
        raise ValueError(f"kiln.lax.pbroadcast: source {src} is out of range for axis {name!r} of size {size}")
    is_source = lax.eq(axis_index_p.bind(axis_name=name), lax.convert_element_type(src, np.int32))

    def bcast(v):
        aval = abstractify(v)
        as_bool = aval.dtype == np.bool_
        v = lax.convert_element_type(v, np.int32) if as_bool else v
        pred = is_source if aval.ndim == 0 else lax.broadcast_in_dim(is_source, aval.shape, ())
        total = psum_p.bind(lax.select(pred, v, lax.full_like(v, 0)), axis_name=name)
        return lax.ne(total, lax.full_like(total, 0)) if as_bool else total
    return tree_util.tree_map(bcast, x)


_PCAST_TO = ("varying", "reduced", "unreduced")


# pvary: the identity, which marks its result as varying along ``axes`` (JAX's invariant-to-varying cast). kiln
# keeps varying axes out of the types: core/varying.py reads the mark (kiln.typeof, shard_map's check_vma).
# Its transpose is psum in a typed backward pass, the identity in an untyped one (ad/varying_transpose.py).
pvary_p = Primitive("pvary", lambda x, *, axes: x)


def pcast(x, axis_name, *, to: str):
    """``x`` with its values unchanged, as JAX's: ``to="varying"`` marks it as varying along the named axes
    (``kiln.typeof`` inside a ``shard_map`` shows them, ``f32[6]{V:i}``); ``"reduced"``/``"unreduced"``, which
    kiln does not track, change nothing. The names must be bound and ``to`` one of JAX's values."""
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"kiln.lax.pcast: axis_name must be a name or a tuple of names, got {axis_name!r}")
    if to not in _PCAST_TO:
        raise ValueError(f"kiln.lax.pcast: to={to!r} is not one of {', '.join(map(repr, _PCAST_TO))}")
    for n in _names(axis_name):
        _check_bound("pcast", n)
    if to != "varying" or not _names(axis_name):
        return x
    return tree_util.tree_map(lambda v: pvary_p.bind(v, axes=_names(axis_name)), x)


__all__ = ["all_gather", "all_to_all", "axis_index", "axis_size", "pbroadcast", "pcast", "pmax", "pmean", "pmin",
           "ppermute", "pshuffle", "psum", "psum_scatter", "pswapaxes", "ragged_all_to_all"]
