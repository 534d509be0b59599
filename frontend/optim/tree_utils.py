"""Maths on pytrees (optax.tree_utils): leafwise arithmetic, reductions, norms, casts and moment updates,
each with optax's order of floating-point operations so that results match bit for bit."""
from __future__ import annotations

import dataclasses
import functools
import operator
from typing import Any, Callable

from .. import lax, random
from .. import numpy as jnp
from ..core import dtypes
from ..core.tree_util import (
    DictKey,
    keystr,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_reduce,
    tree_reduce_associative,
    tree_structure,
    tree_unflatten,
)
from .transforms import ParamsPlaceholder, _bias_correction

__all__ = [
    "tree_add", "tree_sub", "tree_mul", "tree_div", "tree_scale", "tree_add_scale", "tree_vdot", "tree_sum",
    "tree_max", "tree_min", "tree_size", "tree_conj", "tree_real", "tree_norm", "tree_batch_shape",
    "tree_zeros_like", "tree_ones_like", "tree_full_like", "tree_clip", "tree_update_moment",
    "tree_update_infinity_moment", "tree_update_moment_per_elem_norm", "tree_bias_correction", "tree_where",
    "tree_allclose", "tree_scalar_mul", "tree_add_scalar_mul", "tree_l1_norm", "tree_l2_norm", "tree_linf_norm",
    "tree_cast", "tree_cast_like", "tree_dtype", "tree_split_key_like", "tree_random_like",
    "tree_unwrap_random_key_data", "NamedTupleKey", "tree_map_params", "tree_get_all_with_path", "tree_get",
    "tree_set",
]


def _is_none(x) -> bool:
    return x is None


def tree_add(tree_x: Any, tree_y: Any, *other_trees: Any) -> Any:
    """Leafwise sum of two or more trees."""
    # Python's sum starts from 0: ``0 + x`` first, as optax's (it keeps weak types and -0.0 as optax's)
    return tree_map(lambda *leaves: sum(leaves), tree_x, tree_y, *other_trees)


def tree_sub(tree_x: Any, tree_y: Any) -> Any:
    """Leafwise ``x - y``."""
    return tree_map(operator.sub, tree_x, tree_y)


def tree_mul(tree_x: Any, tree_y: Any) -> Any:
    """Leafwise ``x * y``."""
    return tree_map(operator.mul, tree_x, tree_y)


def tree_div(tree_x: Any, tree_y: Any) -> Any:
    """Leafwise ``x / y``."""
    return tree_map(operator.truediv, tree_x, tree_y)


def tree_scale(scalar: Any, tree: Any) -> Any:
    """``scalar * tree``, leaf by leaf."""
    return tree_map(lambda x: scalar * x, tree)


def tree_add_scale(tree_x: Any, scalar: Any, tree_y: Any) -> Any:
    """``tree_x + scalar * tree_y``, leaf by leaf; None leaves of ``tree_x`` stay None."""
    scalar = jnp.asarray(scalar)
    return tree_map(lambda x, y: None if x is None else x + scalar * y, tree_x, tree_y, is_leaf=_is_none)


def _vdot(a, b):
    # optax's jnp.vdot at the highest precision (conjugating ``a``), leaf by leaf
    return jnp.vdot(jnp.asarray(a), jnp.asarray(b), precision=lax.Precision.HIGHEST)


def tree_vdot(tree_x: Any, tree_y: Any) -> Any:
    """Inner product ``sum(conj(x) * y)`` over all leaves: a scalar."""
    return tree_reduce(operator.add, tree_map(_vdot, tree_x, tree_y), initializer=0)


def tree_sum(tree: Any, associative_reduction: bool = False) -> Any:
    """Sum of all elements of all leaves: a scalar. ``associative_reduction`` adds the leaf sums in a
    balanced tree (a different order of additions) rather than left to right."""
    sums = tree_map(jnp.sum, tree)
    if associative_reduction:
        return tree_reduce_associative(operator.add, sums, identity=0)
    return tree_reduce(operator.add, sums, initializer=0)


def _reduce_nonempty(fn, combine, tree, initializer):
    # empty leaves become None, which the reduction skips (None is a pytree with no leaves)
    parts = tree_map(lambda x: None if jnp.size(x) == 0 else fn(x), tree)
    return tree_reduce(combine, parts, initializer=initializer)


def tree_max(tree: Any) -> Any:
    """Largest element over all leaves (-inf for a tree without elements)."""
    return _reduce_nonempty(jnp.max, jnp.maximum, tree, -float("inf"))


def tree_min(tree: Any) -> Any:
    """Smallest element over all leaves (inf for a tree without elements)."""
    return _reduce_nonempty(jnp.min, jnp.minimum, tree, float("inf"))


def tree_size(tree: Any) -> int:
    """Total number of elements over all leaves."""
    return sum(jnp.size(leaf) for leaf in tree_leaves(tree))


def tree_conj(tree: Any) -> Any:
    """Leafwise complex conjugate."""
    return tree_map(jnp.conj, tree)


def tree_real(tree: Any) -> Any:
    """Leafwise real part."""
    return tree_map(jnp.real, tree)


def _abs_sq(leaf):
    # |x|**2 as optax's: re**2 + im**2 (the imaginary part of a real leaf is zero)
    leaf = jnp.asarray(leaf)
    return jnp.square(jnp.real(leaf)) + jnp.square(jnp.imag(leaf))


def tree_norm(tree: Any, ord: Any = None, squared: bool = False) -> Any:  # noqa: A002 (optax's name)
    """Vector norm of all leaves together: ``ord`` None or 2 (l2), 1 (l1) or inf / 'inf' / 'infinity'
    (max abs); the square of it when ``squared``."""
    if ord is None or ord == 2:
        sqnorm = tree_sum(tree_map(_abs_sq, tree))
        return jnp.array(sqnorm if squared else jnp.sqrt(sqnorm))
    if ord == 1:
        out = tree_sum(tree_map(jnp.abs, tree))
    elif ord == float("inf") or ord in ("inf", "infinity"):
        out = tree_max(tree_map(jnp.abs, tree))
    else:
        raise ValueError(f"tree_norm: unsupported ord={ord!r}; use None or 2 (l2 norm), 1 (l1 norm), or "
                         "inf / 'inf' / 'infinity' (max norm).")
    return jnp.array(_abs_sq(out) if squared else out)


def tree_l1_norm(tree: Any, squared: bool = False) -> Any:
    """``tree_norm(tree, ord=1)`` (optax's deprecated name)."""
    return tree_norm(tree, 1, squared)


def tree_l2_norm(tree: Any, squared: bool = False) -> Any:
    """``tree_norm(tree, ord=2)`` (optax's deprecated name)."""
    return tree_norm(tree, 2, squared)


def tree_linf_norm(tree: Any, squared: bool = False) -> Any:
    """``tree_norm(tree, ord='inf')`` (optax's deprecated name)."""
    return tree_norm(tree, "inf", squared)


def tree_batch_shape(tree: Any, shape: tuple[int, ...] = ()) -> Any:
    """Each leaf broadcast to leading batch dimensions ``shape``."""
    return tree_map(lambda x: jnp.broadcast_to(x, (*shape, *jnp.shape(x))), tree)


def tree_zeros_like(tree: Any, dtype: Any = None) -> Any:
    """A tree of zeros with ``tree``'s structure and shapes (and dtypes unless ``dtype`` is given)."""
    return tree_map(lambda x: jnp.zeros_like(x, dtype=dtype), tree)


def tree_ones_like(tree: Any, dtype: Any = None) -> Any:
    """A tree of ones with ``tree``'s structure and shapes (and dtypes unless ``dtype`` is given)."""
    return tree_map(lambda x: jnp.ones_like(x, dtype=dtype), tree)


def tree_full_like(tree: Any, fill_value: Any, dtype: Any = None) -> Any:
    """A tree filled with ``fill_value``, with ``tree``'s structure and shapes."""
    return tree_map(lambda x: jnp.full_like(x, fill_value, dtype=dtype), tree)


def tree_clip(tree: Any, min_value: Any = None, max_value: Any = None) -> Any:
    """Each leaf clipped to ``[min_value, max_value]`` (a None bound is no bound)."""
    return tree_map(lambda g: jnp.clip(g, min_value, max_value), tree)


def tree_where(condition: Any, tree_x: Any, tree_y: Any) -> Any:
    """Leafwise ``where(condition, x, y)``: ``condition`` is one boolean (or array) for all leaves."""
    return tree_map(lambda x, y: jnp.where(condition, x, y), tree_x, tree_y)


def tree_allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> Any:
    """Whether every leaf of ``a`` is close to the matching leaf of ``b`` (as ``allclose``)."""
    close = tree_map(lambda x, y: jnp.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan), a, b)
    return functools.reduce(operator.and_, tree_leaves(close), True)


def tree_update_moment(updates: Any, moments: Any, decay: Any, order: Any) -> Any:
    """Exponential moving average of the ``order``-th power: ``(1 - decay) * g**order + decay * m``."""
    return tree_map(lambda g, t: None if g is None else (1 - decay) * (g ** order) + decay * t,
                    updates, moments, is_leaf=_is_none)


def tree_update_infinity_moment(updates: Any, moments: Any, decay: Any, eps: Any) -> Any:
    """Exponentially decaying max of ``|g| + eps``: ``maximum(|g| + eps, decay * m)``."""
    return tree_map(lambda g, t: None if g is None else jnp.maximum(jnp.abs(g) + eps, decay * t),
                    updates, moments, is_leaf=_is_none)


def _orderth_norm(g, order):
    if jnp.isrealobj(g):
        return g ** order
    half = order / 2
    # an integer power keeps optax's exact (repeated-multiplication) result
    if half.is_integer():
        half = int(half)
    return jnp.real(jnp.conj(g) * g) ** half  # optax's abs_sq here: conj(g) * g, not re**2 + im**2


def tree_update_moment_per_elem_norm(updates: Any, moments: Any, decay: Any, order: Any) -> Any:
    """Exponential moving average of ``|g|**order`` (the elementwise modulus for complex leaves)."""
    return tree_map(lambda g, t: None if g is None else (1 - decay) * _orderth_norm(g, order) + decay * t,
                    updates, moments, is_leaf=_is_none)


def tree_bias_correction(moment: Any, decay: Any, count: Any) -> Any:
    """``moment / (1 - decay**count)`` leaf by leaf, in each leaf's dtype."""
    return _bias_correction(moment, decay, count)


def tree_scalar_mul(scalar: Any, tree: Any) -> Any:
    """:func:`tree_scale` (optax's deprecated name)."""
    return tree_scale(scalar, tree)


def tree_add_scalar_mul(tree_x: Any, scalar: Any, tree_y: Any) -> Any:
    """:func:`tree_add_scale` (optax's deprecated name)."""
    return tree_add_scale(tree_x, scalar, tree_y)


# ---------------------------------------------------------------------------------------------
# Casting
# ---------------------------------------------------------------------------------------------

def tree_cast(tree: Any, dtype: Any) -> Any:
    """Every leaf cast to ``dtype``; the tree unchanged when ``dtype`` is None."""
    if dtype is None:
        return tree
    return tree_map(lambda t: t.astype(dtype), tree)


def tree_cast_like(tree: Any, other_tree: Any) -> Any:
    """Each leaf of ``tree`` cast to the dtype of the matching leaf of ``other_tree`` (leaves without a
    dtype, such as Python numbers, leave theirs unchanged)."""
    return tree_map(lambda t, o: t.astype(o.dtype) if hasattr(o, "dtype") else t, tree, other_tree)


def _lower_dtype(a, b):
    promoted = jnp.promote_types(a, b)
    if promoted == a:
        return b
    if promoted == b:
        return a
    raise ValueError(f"tree_dtype: the leaves' dtypes {a} and {b} cannot be ordered (neither promotes to the "
                     "other); use mixed_dtype_handler='promote' for their common promoted dtype.")


def _higher_dtype(a, b):
    return b if _lower_dtype(a, b) == a else a


def _single_dtype(tree, leaves):
    dtype = jnp.asarray(leaves[0]).dtype
    wrong = [f"{keystr(path)}: {jnp.asarray(x).dtype}" for path, x in tree_leaves_with_path(tree)
             if jnp.asarray(x).dtype != dtype]
    if wrong:
        raise ValueError(f"tree_dtype: the leaves have mixed dtypes (the first leaf has {dtype}; "
                         f"{', '.join(wrong)}); pass mixed_dtype_handler='promote', 'highest' or 'lowest'.")
    return dtype


_DTYPE_HANDLERS = {"promote": jnp.promote_types, "highest": _higher_dtype, "lowest": _lower_dtype}


def tree_dtype(tree: Any, mixed_dtype_handler: str | None = None) -> Any:
    """The dtype of the leaves (the default float dtype for a tree without leaves). Mixed dtypes raise
    unless ``mixed_dtype_handler`` is 'promote' (their promoted dtype), 'highest' or 'lowest' (in the
    promotion order)."""
    leaves = tree_leaves(tree)
    if not leaves:
        return jnp.asarray(leaves).dtype
    if mixed_dtype_handler is None:
        return _single_dtype(tree, leaves)
    if mixed_dtype_handler not in _DTYPE_HANDLERS:
        raise ValueError(f"tree_dtype: mixed_dtype_handler={mixed_dtype_handler!r} is not one of None, "
                         "'promote', 'highest', 'lowest'.")
    return functools.reduce(_DTYPE_HANDLERS[mixed_dtype_handler], [jnp.asarray(x).dtype for x in leaves])


# ---------------------------------------------------------------------------------------------
# Random trees
# ---------------------------------------------------------------------------------------------

def tree_split_key_like(rng_key: Any, target_tree: Any) -> Any:
    """One key per leaf of ``target_tree`` (``random.split`` into that many), in its structure."""
    treedef = tree_structure(target_tree)
    return tree_unflatten(treedef, list(random.split(rng_key, treedef.num_leaves)))


def tree_random_like(rng_key: Any, target_tree: Any, sampler: Callable = random.normal, dtype: Any = None) -> Any:
    """A tree of ``sampler(key, leaf.shape, dtype or leaf.dtype)`` draws, one split key per leaf."""
    keys = tree_split_key_like(rng_key, target_tree)
    return tree_map(lambda leaf, key: sampler(key, leaf.shape, dtype or leaf.dtype), target_tree, keys)


def _is_typed_key(x) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, dtypes.prng_key)


def tree_unwrap_random_key_data(input_tree: Any) -> Any:
    """Typed PRNG keys in the tree replaced by their uint32 data (other leaves unchanged), to compare trees."""
    # kiln's typed keys are pytree nodes over their data, so stop at them rather than at their data
    return tree_map(lambda x: random.key_data(x) if _is_typed_key(x) else x, input_tree, is_leaf=_is_typed_key)


# ---------------------------------------------------------------------------------------------
# Finding and replacing values by key in optimizer states
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class NamedTupleKey:
    """Key-path entry for the field ``name`` of a NamedTuple class ``tuple_name`` (the paths that
    :func:`tree_get_all_with_path` returns name the tuples, so filters can tell states apart)."""
    tuple_name: str
    name: str

    def __str__(self):
        return f"{self.tuple_name}.{self.name}"


def _is_placeholder(x) -> bool:
    return isinstance(x, ParamsPlaceholder)


def tree_map_params(initable: Any, f: Callable, state: Any, /, *rest: Any, transform_non_params: Callable | None = None,
                    is_leaf: Callable | None = None) -> Any:
    """``f`` mapped over every copy of the parameters in the optimizer ``state`` (and ``rest``, trees with
    the parameters' structure); other parts of the state go through ``transform_non_params`` if given.
    ``initable`` is the optimizer (anything with ``init``) or its init function, which locates the copies."""
    init = initable.init if hasattr(initable, "init") else initable
    if not callable(init):
        raise TypeError(f"tree_map_params: initable must be an optimizer (with .init) or its init function, "
                        f"got {type(initable).__name__}.")
    layout = init(ParamsPlaceholder())

    def map_part(marker, value):
        if _is_placeholder(marker):
            return tree_map(f, value, *rest, is_leaf=is_leaf)
        return value if transform_non_params is None else transform_non_params(value)
    return tree_map(map_part, layout, state, is_leaf=_is_placeholder)


def _is_named_tuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _has_keys(node, keys) -> bool:
    """Whether ``node`` is a dict with one of ``keys``, or a NamedTuple with one of them as a field or name."""
    if _is_named_tuple(node):
        return any(k in node._fields for k in keys) or type(node).__name__ in keys
    return isinstance(node, dict) and any(k in node for k in keys)


def _leaves_with_named_path(tree, is_leaf=None):
    """``tree_leaves_with_path``, but each NamedTuple field's entry is a :class:`NamedTupleKey`."""
    stop = is_leaf or (lambda _: False)
    out = []
    for path, node in tree_leaves_with_path(tree, is_leaf=lambda x: stop(x) or _is_named_tuple(x)):
        if stop(node) or not _is_named_tuple(node):
            out.append((path, node))
            continue
        for field in node._fields:
            key = NamedTupleKey(type(node).__name__, field)
            out += [((*path, key, *sub), v) for sub, v in _leaves_with_named_path(getattr(node, field), is_leaf)]
    return out


def _children(path, node):
    if _is_named_tuple(node):
        return [((*path, NamedTupleKey(type(node).__name__, f)), getattr(node, f)) for f in node._fields]
    return [((*path, DictKey(k)), v) for k, v in node.items()]


def _value_at_key(path, node, key):
    if _is_named_tuple(node):
        if key == type(node).__name__:
            return path, node
        return (*path, NamedTupleKey(type(node).__name__, key)), getattr(node, key)
    return (*path, DictKey(key)), node[key]


def _find_all(tree, key):
    has_key = functools.partial(_has_keys, keys=(key,))
    nodes = [(p, n) for p, n in _leaves_with_named_path(tree, is_leaf=has_key) if has_key(n)]
    found = [_value_at_key(p, n, key) for p, n in nodes]
    # matches may also sit deeper, inside a node that matched
    for path, node in nodes:
        for child_path, child in _children(path, node):
            found += [((*child_path, *p), v) for p, v in _find_all(child, key)]
    return found


def tree_get_all_with_path(tree: Any, key: Any, filtering: Callable | None = None) -> list:
    """All ``(path, value)`` pairs in ``tree`` whose dict key, NamedTuple field or NamedTuple name is
    ``key`` (and for which ``filtering(path, value)`` holds, if given)."""
    found = _find_all(tree, key)
    if filtering:
        found = [(p, v) for p, v in found if filtering(p, v)]
    return found


def tree_get(tree: Any, key: Any, default: Any = None, filtering: Callable | None = None) -> Any:
    """The one value of ``tree`` at ``key`` (see :func:`tree_get_all_with_path`); ``default`` when none."""
    found = tree_get_all_with_path(tree, key, filtering=filtering)
    if len(found) > 1:
        paths = ", ".join(keystr(p) for p, _ in found)
        raise KeyError(f"tree_get: found {len(found)} values for {key!r} (at {paths}); pass filtering=... "
                       "(a function of (path, value)) to pick one.")
    return found[0][1] if found else default


def _plain_key(entry):
    for attr in ("key", "name", "idx"):
        if hasattr(entry, attr):
            return getattr(entry, attr)
    raise KeyError(f"tree_set: key-path entry {entry!r} of type {type(entry).__name__} is not supported.")


def tree_set(tree: Any, filtering: Callable | None = None, /, **kwargs: Any) -> Any:
    """A copy of ``tree`` with the values at each key of ``kwargs`` (dict keys, NamedTuple fields or
    NamedTuple names) replaced by the given values, where ``filtering(path, value)`` holds if given."""
    for key in kwargs:
        if not tree_get_all_with_path(tree, key, filtering):
            extra = " that pass the filtering function" if filtering else ""
            raise KeyError(f"tree_set: found no values at {key!r}{extra} in the tree; the keys must be dict keys, "
                           "NamedTuple fields or NamedTuple names in it.")
    has_any = functools.partial(_has_keys, keys=tuple(kwargs))
    keep = filtering or (lambda path, value: True)

    def replace(path, node):
        if not has_any(node):
            return node
        if _is_named_tuple(node) and type(node).__name__ in kwargs and keep(path, node):
            return kwargs[type(node).__name__]
        new = {}
        for child_path, child in _children(path, node):
            key = _plain_key(child_path[-1])
            if key in kwargs and keep(child_path, child):
                new[key] = kwargs[key]
            elif isinstance(child, (dict, list, tuple)):
                new[key] = replace(child_path, child)
            else:
                new[key] = child
        return node._replace(**new) if _is_named_tuple(node) else new

    treedef = tree_structure(tree, is_leaf=has_any)
    return tree_unflatten(treedef, [replace(p, n) for p, n in _leaves_with_named_path(tree, is_leaf=has_any)])
