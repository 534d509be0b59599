"""Sparse-aware differentiation (``jax.experimental.sparse.grad`` and friends).

``sparse.grad(f)(X, ...)`` is ``kiln.grad(f)`` except that for a sparse argument (BCOO, BCSR, COO, CSR, CSC) it
differentiates w.r.t. its ``data`` only: the derivative is a sparse array of the same format with the argument's
indices (the gradient in the subspace of its sparsity pattern), never a dense array. Built on kiln's own ``grad`` /
``value_and_grad`` / ``jacfwd`` / ``jacrev``: the arguments are flattened to arrays, the ``data`` leaves of sparse
arguments (and every leaf of dense ones) are the differentiated positions, and the derivatives w.r.t. ``data`` are
wrapped back into sparse arrays.
"""
from __future__ import annotations

import functools
import operator
from typing import Any, Callable, Sequence

from .. import numpy as jnp
from ..ad import api as ad_api
from ..core import tree_util
from .base import JAXSparse
from .bcoo import BCOO
from .bcsr import BCSR

__all__ = ["grad", "jacfwd", "jacobian", "jacrev", "value_and_grad"]


def _is_sparse(x: Any) -> bool:
    return isinstance(x, JAXSparse)


def _argnums_tuple(fname: str, argnums: Any) -> tuple[int, ...]:
    """``argnums`` as a tuple of Python ints (checked when the derivative function is made, as in JAX)."""
    nums = argnums if isinstance(argnums, (tuple, list)) else (argnums,)
    try:
        return tuple(operator.index(n) for n in nums)
    except TypeError:
        raise TypeError(f"sparse.{fname}: argnums must be an int or a tuple of ints, got {argnums!r}") from None


def _check_argnums(fname: str, nums: tuple[int, ...], nargs: int) -> tuple[int, ...]:
    for n in nums:
        if not -nargs <= n < nargs:
            raise ValueError(f"sparse.{fname}: argnums {n} is out of range for a function called with {nargs} "
                             f"positional argument(s); pass argnums between {-nargs} and {nargs - 1}")
    return tuple(n % nargs for n in nums)


class _SparseFlat:
    """The arguments of one call flattened for sparse differentiation.

    ``pieces`` are the leaves of ``args`` with sparse arrays kept whole; ``flat`` are their array leaves (a sparse
    array gives ``data`` first, then its index arrays); ``diff_flat`` are the positions in ``flat`` to
    differentiate: every leaf of a dense piece, only ``data`` of a sparse one, for the pieces of the arguments in
    ``argnums``.
    """

    def __init__(self, args: tuple, nums: tuple[int, ...]):
        self.pieces, self.tree = tree_util.tree_flatten(args, is_leaf=_is_sparse)
        counts = [len(tree_util.tree_leaves(a, is_leaf=_is_sparse)) for a in args]
        owner = [i for i, c in enumerate(counts) for _ in range(c)]  # the argument each piece comes from
        self.flat, self.piece_trees, self.diff_pieces, self.diff_flat = [], [], [], []
        for p, piece in enumerate(self.pieces):
            leaves, tree = tree_util.tree_flatten(piece)
            if owner[p] in nums and leaves:
                self.diff_pieces.append(p)
                # A sparse array's first leaf is its data: its index arrays are integers and stay fixed.
                n_diff = 1 if _is_sparse(piece) else len(leaves)
                self.diff_flat.extend(range(len(self.flat), len(self.flat) + n_diff))
            self.piece_trees.append((tree, len(leaves)))
            self.flat.extend(leaves)

    def unflatten_args(self, flat: Sequence[Any]) -> tuple:
        pieces, start = [], 0
        for tree, n in self.piece_trees:
            pieces.append(tree_util.tree_unflatten(tree, list(flat[start:start + n])))
            start += n
        return tree_util.tree_unflatten(self.tree, pieces)

    def fun_flat(self, fun: Callable) -> Callable:
        @functools.wraps(fun)
        def flat_fun(*flat, **kwargs):
            return fun(*self.unflatten_args(flat), **kwargs)
        return flat_fun

    def derivatives(self, outs: Sequence[Any]) -> Any:
        """The derivatives (one per entry of ``diff_flat``, as kiln's grad returns them) as a pytree like JAX's
        sparse AD: one entry per differentiated argument with leaves, in argument order; a single one unwrapped."""
        it = iter(outs)
        per_piece = [None] * len(self.pieces)
        for p in self.diff_pieces:
            piece = self.pieces[p]
            if _is_sparse(piece):
                per_piece[p] = _sparse_like(piece, next(it))
            else:
                tree, n = self.piece_trees[p]
                per_piece[p] = tree_util.tree_unflatten(tree, [next(it) for _ in range(n)])
        args_tree = tree_util.tree_unflatten(self.tree, per_piece)
        kept = tuple(a for a in args_tree if tree_util.tree_leaves(a))
        return kept[0] if len(kept) == 1 else kept


def _sparse_like(mat: JAXSparse, d_data: Any) -> JAXSparse:
    """The derivative w.r.t. ``mat.data`` as a sparse array of ``mat``'s format with its index arrays. A Jacobian
    block has the output's shape in front of ``data``'s: for BCOO and BCSR those axes become leading batch axes
    (index arrays broadcast along them), as JAX's; the 2-D formats have no batch axes to hold them."""
    lead = tuple(d_data.shape[:d_data.ndim - mat.data.ndim])
    leaves, aux = mat.tree_flatten()
    if not lead:
        return type(mat).tree_unflatten(aux, [d_data, *leaves[1:]])
    if not isinstance(mat, (BCOO, BCSR)):
        name = type(mat).__name__
        raise NotImplementedError(
            f"sparse Jacobian w.r.t. a {name} argument of a function with non-scalar output (shape {lead}): a {name} "
            "matrix is 2-D and cannot hold the output's axes (JAX returns an ill-formed result here). Convert the "
            f"argument to BCOO (sparse.BCOO.fromdense(x.todense())) or BCSR, or differentiate w.r.t. x.data")
    index_leaves = [jnp.broadcast_to(x, lead + tuple(x.shape)) for x in leaves[1:]]
    return type(mat)((d_data, *index_leaves), shape=lead + tuple(mat.shape), indices_sorted=mat.indices_sorted,
                     unique_indices=mat.unique_indices)


def _sparse_transform(fname: str, transform: Callable, fun: Callable, argnums: Any, has_aux: bool, kwargs: dict,
                      split: Callable[[Any], tuple[Any, Callable]]) -> Callable:
    """``transform`` (kiln's grad, jacfwd, ...) made sparse-aware. ``split(out)`` gives the derivatives in ``out``
    and a function that puts the converted ones back."""
    nums = _argnums_tuple(fname, argnums)
    transform(fun, argnums=argnums, has_aux=has_aux, **kwargs)  # kiln's checks of the keyword arguments, now
    per_output = fname.startswith("jac")

    @functools.wraps(fun)
    def sparse_fun(*args, **call_kwargs):
        flat = _SparseFlat(args, _check_argnums(fname, nums, len(args)))
        target, out_tree = flat.fun_flat(fun), []
        if per_output:
            target = _leaves_out(target, has_aux, out_tree)
        out = transform(target, argnums=tuple(flat.diff_flat), has_aux=has_aux, **kwargs)(*flat.flat, **call_kwargs)
        derivs, rebuild = split(out)
        if per_output:  # one row of derivatives per output leaf
            return rebuild(tree_util.tree_unflatten(out_tree[0], [flat.derivatives(row) for row in derivs]))
        return rebuild(flat.derivatives(derivs))
    return sparse_fun


def _leaves_out(fun: Callable, has_aux: bool, out_tree: list) -> Callable:
    """``fun`` returning the list of its output's leaves (its structure goes to ``out_tree``), so that a Jacobian
    comes as one row (a tuple over the differentiated leaves) per output leaf, whatever the output's pytree."""
    @functools.wraps(fun)
    def leaves_fun(*args, **kwargs):
        out = fun(*args, **kwargs)
        main, aux = out if has_aux else (out, None)
        leaves, tree = tree_util.tree_flatten(main)
        out_tree.append(tree)
        return (leaves, aux) if has_aux else leaves
    return leaves_fun


def _derivative_first(has_aux: bool) -> Callable:
    """``out`` is the derivative, or ``(derivative, aux)`` with ``has_aux``."""
    def split(out):
        if has_aux:
            return out[0], lambda d: (d, out[1])
        return out, lambda d: d
    return split


def _value_then_derivative(out):
    return out[1], lambda d: (out[0], d)


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   **kwargs: Any) -> Callable:
    """Sparse-aware ``kiln.value_and_grad`` (as ``jax.experimental.sparse.value_and_grad``).

    As ``kiln.value_and_grad`` (``holomorphic``, ``allow_int`` pass through), but the gradient w.r.t. a sparse
    argument (BCOO, BCSR, COO, CSR, CSC) is a sparse array of its format with the same indices, holding the
    derivative w.r.t. its ``data``. As JAX's: the gradients come in argument order (whatever the order of
    ``argnums``), and a single one is returned unwrapped even when ``argnums`` is a tuple.

    >>> X = BCOO.fromdense(jnp.arange(6.))
    >>> value_and_grad(lambda X, y: X @ y)(X, jnp.ones(6))
    (Array(15., dtype=float32), BCOO(float32[6], nse=5))
    """
    return _sparse_transform("value_and_grad", ad_api.value_and_grad, fun, argnums, has_aux, kwargs,
                             _value_then_derivative)


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, **kwargs: Any) -> Callable:
    """Sparse-aware ``kiln.grad`` (as ``jax.experimental.sparse.grad``): the gradient w.r.t. a sparse argument is a
    sparse array of its format with its indices (the gradient w.r.t. ``data``). See ``value_and_grad`` for the
    order of the results."""
    return _sparse_transform("grad", ad_api.grad, fun, argnums, has_aux, kwargs, _derivative_first(has_aux))


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, **kwargs: Any) -> Callable:
    """Sparse-aware ``kiln.jacfwd`` (as ``jax.experimental.sparse.jacfwd``), for dense outputs (any pytree of
    arrays: one block per output leaf).

    The Jacobian block of an output of shape ``S`` w.r.t. a BCOO argument is a BCOO of shape ``S + X.shape``
    whose ``data`` is the Jacobian w.r.t. ``X.data``; the axes of ``S`` are batch axes (``n_batch`` grows by
    ``len(S)``) and the indices are ``X``'s, broadcast along them."""
    return _sparse_transform("jacfwd", ad_api.jacfwd, fun, argnums, has_aux, kwargs, _derivative_first(has_aux))


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, **kwargs: Any) -> Callable:
    """Sparse-aware ``kiln.jacrev`` (as ``jax.experimental.sparse.jacrev``), for dense outputs; the layout of a
    block w.r.t. a BCOO argument is as in ``jacfwd``."""
    return _sparse_transform("jacrev", ad_api.jacrev, fun, argnums, has_aux, kwargs, _derivative_first(has_aux))


jacobian = jacrev  # JAX's alias
