"""GaLore (Zhao et al., 2024, arXiv:2403.03507): runs a gradient-only optimizer (Adam by default) on matrix
gradients projected onto their top singular vectors (recomputed every ``update_proj_gap`` steps), so that its
state is low-rank, and projects its updates back."""
from __future__ import annotations

import math
import numbers
from typing import Any, NamedTuple, Sequence, Union

from ... import numpy as jnp
from ...control.api import cond
from ...core.tree_util import tree_leaves, tree_map, tree_structure, tree_transpose
from ..transforms import (
    GradientTransformation,
    _check_transform,
    _increment,
    _zeros_count,
    add_decayed_weights,
    chain,
    scale_by_adam,
    scale_by_learning_rate,
)

__all__ = ["GaLoreDimensionNumbers", "GaLoreState", "scale_by_galore", "galore"]


class GaLoreDimensionNumbers(NamedTuple):
    """Which axes of a parameter form the rows (``reduction_axis``, the input side) and the columns
    (``output_axis``) of the matrix that GaLore projects, e.g. ``(0, (1, 2))`` for (embed, heads, head_dim)."""
    reduction_axis: Union[Sequence[int], int] = 0
    output_axis: Union[Sequence[int], int] = 1


class GaLoreState(NamedTuple):
    count: Any
    base_optimizer_state: Any  # the base optimizer's, on the projected (low-rank) gradients
    projector: Any  # per parameter: its projection matrix (a (0, 0) array for parameters not projected)


def _is_dim_nums(x) -> bool:
    return isinstance(x, GaLoreDimensionNumbers)


def _is_dim_nums_leaf(x) -> bool:
    return x is None or isinstance(x, GaLoreDimensionNumbers)


def _axes(axis, ndim):
    return (axis % ndim,) if isinstance(axis, int) else tuple(a % ndim for a in axis)


def _matrix_view(x, dim_nums: GaLoreDimensionNumbers):
    """``(to_matrix, from_matrix, (m, n))``: ``x``'s reduction axes to rows and output axes to columns, back,
    and the matrix's shape."""
    if x.ndim < 2:
        raise ValueError(f"galore: only parameters of rank >= 2 can be projected, got shape {x.shape}; give such "
                         "parameters None in weight_dimension_numbers.")
    rows, cols = _axes(dim_nums.reduction_axis, x.ndim), _axes(dim_nums.output_axis, x.ndim)
    if set(rows) & set(cols):
        raise ValueError(f"galore: the reduction axes {rows} and output axes {cols} overlap (dimension numbers "
                         f"{dim_nums} for shape {x.shape}); each axis must be in exactly one of them.")
    if len(set(rows) | set(cols)) != x.ndim:
        raise ValueError(f"galore: dimension numbers {dim_nums} leave axes of shape {x.shape} out; each axis must be "
                         "a reduction or an output axis.")
    perm = rows + cols
    inverse = tuple(sorted(range(x.ndim), key=lambda i: perm[i]))
    permuted_shape = tuple(x.shape[a] for a in perm)
    m, n = math.prod(x.shape[a] for a in rows), math.prod(x.shape[a] for a in cols)
    return (lambda y: y.transpose(perm).reshape(m, n)), (lambda y: y.reshape(permuted_shape).transpose(inverse)), \
        (m, n)


def scale_by_galore(rank: int = 128, update_proj_gap: int = 200, scale: float = 1.0, base_optimizer=None,
                    weight_dimension_numbers=None) -> GradientTransformation:
    """GaLore's rescaling: ``base_optimizer`` (``scale_by_adam()`` by default; it must not need the params, so
    not adamw or lamb) on each matrix gradient ``G`` (m x n) projected to rank ``r = min(rank, m, n)``: ``P.T G``
    with ``P`` G's top ``r`` left singular vectors when m >= n, else ``G P`` with its top right ones; its updates
    projected back and times ``scale``. ``weight_dimension_numbers`` (None: the 2-d parameters; one
    :class:`GaLoreDimensionNumbers` for every parameter of rank >= 2; a pytree of them with None for those not
    projected; or a callable of the params returning one) says which parameters are matrices and how."""
    if base_optimizer is None:
        base_optimizer = scale_by_adam()
    _check_transform(base_optimizer, "galore: base_optimizer")
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise TypeError(f"galore: rank must be an int, got {type(rank).__name__} ({rank!r}).")
    if rank <= 0:
        raise ValueError(f"galore: rank must be positive, got {rank}.")
    if isinstance(update_proj_gap, bool) or not isinstance(update_proj_gap, numbers.Integral) or update_proj_gap < 1:
        raise ValueError(f"galore: update_proj_gap must be an int >= 1 (the steps between SVDs), got "
                         f"{update_proj_gap!r}.")

    def dim_nums_of(tree):
        spec = weight_dimension_numbers
        if spec is None:
            return tree_map(lambda p: GaLoreDimensionNumbers() if p.ndim == 2 else None, tree)
        if callable(spec):
            return spec(tree)
        if _is_dim_nums(spec):
            return tree_map(lambda p: spec if p.ndim >= 2 else None, tree)
        return spec

    def split_pairs(tree, pairs):
        return tree_transpose(tree_structure(tree), tree_structure((0, 0)), pairs)

    def init_leaf(p, dim_nums):
        if dim_nums is None:
            return jnp.zeros((0, 0), dtype=p.dtype), jnp.zeros_like(p)
        m, n = _matrix_view(p, dim_nums)[2]
        r = min(rank, m, n)
        # the low-rank side: P.T G is r x n for tall matrices, G P is m x r for wide ones
        proj_shape, low_shape = ((m, r), (r, n)) if m >= n else ((n, r), (m, r))
        return jnp.zeros(proj_shape, dtype=p.dtype), jnp.zeros(low_shape, dtype=p.dtype)

    def init(params):
        if not tree_leaves(params):
            return GaLoreState(_zeros_count(), base_optimizer.init(params), params)
        pairs = tree_map(init_leaf, params, dim_nums_of(params), is_leaf=_is_dim_nums_leaf)
        projectors, low_rank = split_pairs(params, pairs)
        return GaLoreState(_zeros_count(), base_optimizer.init(low_rank), projectors)

    def update(updates, state, params=None):
        refresh = (state.count % update_proj_gap) == 0
        dim_nums = dim_nums_of(updates)

        def project(g, projector, dn):
            if dn is None:
                return g, projector
            to_matrix, _, (m, n) = _matrix_view(g, dn)
            g2 = to_matrix(g)
            r = min(rank, m, n)
            if m >= n:
                def left():
                    return jnp.linalg.svd(g2.astype(jnp.float32), full_matrices=False)[0][:, :r].astype(g.dtype)
                projector = cond(refresh, left, lambda: projector)
                return projector.T @ g2, projector

            def right():
                return jnp.linalg.svd(g2.astype(jnp.float32), full_matrices=False)[2][:r, :].T.astype(g.dtype)
            projector = cond(refresh, right, lambda: projector)
            return g2 @ projector, projector

        def project_back(u, projector, g, dn):
            if dn is None:
                return u
            _, from_matrix, (m, n) = _matrix_view(g, dn)
            full = projector @ u if m >= n else u @ projector.T
            return (scale * from_matrix(full)).astype(g.dtype)

        pairs = tree_map(project, updates, state.projector, dim_nums, is_leaf=_is_dim_nums_leaf)
        low_rank, projectors = split_pairs(updates, pairs)
        low_updates, base_state = base_optimizer.update(low_rank, state.base_optimizer_state, None)
        out = tree_map(project_back, low_updates, projectors, updates, dim_nums, is_leaf=_is_dim_nums_leaf)
        return out, GaLoreState(_increment(state.count), base_state, projectors)
    return GradientTransformation(init, update)


def galore(learning_rate, rank: int = 128, update_proj_gap: int = 200, scale: float = 1.0, base_optimizer=None,
           weight_decay=0.0, mask=None, weight_dimension_numbers=None) -> GradientTransformation:
    """GaLore: :func:`scale_by_galore`, decoupled weight decay in the full parameter space (on the ``mask``ed
    leaves), then ``-learning_rate`` (1.0 when ``base_optimizer`` has its own learning rate)."""
    return chain(scale_by_galore(rank, update_proj_gap, scale, base_optimizer, weight_dimension_numbers),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))
