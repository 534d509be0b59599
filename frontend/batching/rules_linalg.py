"""Batching rules of the linear-algebra family (``kiln.lax.linalg``): the primitives accept leading
batch dimensions, so vmap moves the batch axis of every operand to the front."""
from __future__ import annotations

from ..core.primitive import Primitive
from ..lax.linalg import cholesky_p, eig_p, eigh_p, lu_p, qr_p, schur_p, svd_p, triangular_solve_p
from .core import batch_rules, move_dim


def _batch_rule(prim: Primitive):
    """vmap: every operand takes the batch axis in front (the primitives accept leading batch dimensions)."""
    def rule(ctx, args, dims, **params):
        args = [move_dim(a, d, 0, ctx.size) for a, d in zip(args, dims)]
        out = prim.bind(*args, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    return rule


for _prim in (cholesky_p, lu_p, qr_p, eigh_p, svd_p, triangular_solve_p, eig_p, schur_p):
    batch_rules[_prim] = _batch_rule(_prim)
