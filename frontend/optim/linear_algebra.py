"""Iterative linear algebra (optax's): the dominant eigenpair by power iteration, inverse p-th roots of
PSD matrices by coupled Newton iterations, and non-negative least squares by projected gradients."""
from __future__ import annotations

from typing import Any, Callable

from .. import lax, random
from .. import numpy as jnp
from ..control.api import scan, switch, while_loop
from .tree_utils import tree_norm, tree_scale, tree_sub, tree_vdot

__all__ = ["power_iteration", "matrix_inverse_pth_root", "nnls"]


def _normalize(tree):
    return tree_scale(1.0 / tree_norm(tree), tree)


def power_iteration(matrix: Any | Callable, *, v0: Any = None, num_iters: Any = 100, error_tolerance: Any = 1e-6,
                    precision: Any = lax.Precision.HIGHEST, key: Any = None) -> tuple[Any, Any]:
    """``(eigenvalue, eigenvector)``: the dominant eigenpair of a square ``matrix``, or of the linear map
    ``matrix(v)`` on pytrees (then ``v0`` is required). Stops after ``num_iters`` steps or once the
    relative residual ``|A v - lambda v| / |lambda|`` is below ``error_tolerance``. Without ``v0`` the
    start is uniform in [-1, 1] from ``key`` (``PRNGKey(0)`` by default)."""
    if callable(matrix):
        mvp = matrix
        if v0 is None:
            raise ValueError("power_iteration: v0 is required when matrix is a function (a start vector with "
                             "the structure of the function's input).")
    else:
        def mvp(v):
            return jnp.matmul(matrix, v, precision=precision)
        if v0 is None:
            key = random.PRNGKey(0) if key is None else key
            v0 = random.uniform(key, shape=matrix.shape[-1:], dtype=matrix.dtype, minval=-1.0, maxval=1.0)
    v0 = _normalize(v0)

    def not_done(carry):
        eigvec, z, eig, i = carry
        residual = tree_norm(tree_sub(z, tree_scale(eig, eigvec)))
        return ~(jnp.abs(residual / eig) < error_tolerance) & (i < num_iters)

    def step(carry):
        _, z, _, i = carry
        eigvec = _normalize(z)
        z = mvp(eigvec)
        return eigvec, z, tree_vdot(eigvec, z), i + 1

    _, z, eig, _ = while_loop(not_done, step, (v0, mvp(v0), jnp.asarray(0.0), jnp.asarray(0)))
    return eig, _normalize(z)


def _mat_power(m, p, precision):
    """``m**p`` for p in 1, 2, 4, 8 by repeated squaring (a traced ``p`` picks the branch)."""
    def square(x):
        return jnp.matmul(x, x, precision=precision)
    branches = [lambda x: x, square, lambda x: square(square(x)), lambda x: square(square(square(x)))]
    return switch(jnp.asarray(jnp.round(jnp.log2(p)), jnp.int32), branches, m)


def matrix_inverse_pth_root(matrix: Any, p: Any, num_iters: Any = 100, ridge_epsilon: Any = 1e-6,
                            error_tolerance: Any = 1e-6, precision: Any = lax.Precision.HIGHEST) -> tuple[Any, Any]:
    """``(matrix**(-1/p), error)`` for a symmetric PSD ``matrix`` and p in 1, 2, 4, 8, by coupled Newton
    iterations (Higham, Functions of Matrices, eq. 7.18) after adding ``ridge_epsilon`` times the largest
    eigenvalue to the diagonal. ``error`` is ``max |M - I|`` for the final iterate M."""
    n = matrix.shape[0]
    alpha = jnp.asarray(-1.0 / p, jnp.float32)
    identity = jnp.eye(n, dtype=jnp.float32)
    max_ev, _ = power_iteration(matrix=matrix, num_iters=100, error_tolerance=1e-6, precision=precision)
    ridge_epsilon = ridge_epsilon * jnp.maximum(max_ev, 1e-16)
    if n == 1:
        return (matrix + ridge_epsilon) ** alpha, 0

    def not_done(state):
        i, _, _, _, error, improving = state
        return jnp.logical_and(i < num_iters, jnp.logical_and(error > error_tolerance, improving))

    def step(state):
        i, mat_m, mat_h, _, error, _ = state
        mat_m_i = (1 - alpha) * identity + alpha * mat_m
        new_m = jnp.matmul(_mat_power(mat_m_i, p, precision), mat_m, precision=precision)
        new_h = jnp.matmul(mat_h, mat_m_i, precision=precision)
        new_error = jnp.max(jnp.abs(new_m - identity))
        # stop (and fall back to the previous iterate) once the error grows by more than 20%
        return i + 1, new_m, new_h, mat_h, new_error, new_error < error * 1.2

    damped = matrix + ridge_epsilon * identity
    z = (1 + p) / (2 * jnp.linalg.norm(damped))
    m0 = damped * z
    h0 = identity * jnp.power(z, 1.0 / p)
    init = (0, m0, h0, h0, jnp.max(jnp.abs(m0 - identity)), True)
    _, mat_m, mat_h, old_h, _, converged = while_loop(not_done, step, init)
    error = jnp.max(jnp.abs(mat_m - identity))
    converged = jnp.asarray(converged, old_h.dtype)
    result = converged * mat_h + (1 - converged) * old_h
    return jnp.asarray(result, matrix.dtype), error


def _spectral_radius_bound(matrix):
    fro = jnp.linalg.matrix_norm(matrix, ord="fro")
    one = jnp.linalg.matrix_norm(matrix, ord=1) if matrix.size != 0 else 0
    return jnp.minimum(fro, one)


def nnls(A: Any, b: Any, iters: int, unroll: int | bool = 1, L: Any = None) -> Any:  # noqa: N803 (optax's names)
    """``argmin |A x - b|_2`` subject to ``x >= 0``, by ``iters`` steps of Polyak's (2015) fast projected
    gradient method. ``b`` is a vector (M,) or a matrix (M, K); ``L`` bounds the spectral radius of
    ``A.T @ A`` (by default the smaller of its Frobenius and 1-norms)."""
    A, b = jnp.asarray(A), jnp.asarray(b)
    if A.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != A.shape[0]:
        raise ValueError(f"nnls: A must be a matrix (M, N) and b a vector (M,) or matrix (M, K) with the same M; "
                         f"got A of shape {A.shape} and b of shape {b.shape}.")
    Q = A.mT @ A  # noqa: N806
    q = A.mT @ b
    L = _spectral_radius_bound(Q) if L is None else L  # noqa: N806
    L = jnp.where(L == 0, 1, L)  # noqa: N806 (a zero matrix: any step size works, and 1 avoids 0/0)

    def step(carry, _):
        x, p, c = carry
        cn = (1 + jnp.sqrt(1 + 4 * c ** 2)) / 2
        s = (c - 1) / cn
        xn = (p - (Q @ p - q) / L).clip(0)
        return (xn, xn + s * (xn - x), cn), None

    x = jnp.zeros_like(b, shape=A.shape[-1:] + b.shape[1:])
    (x, _, _), _ = scan(step, (x, x, 0.0), length=iters, unroll=unroll)
    return x
