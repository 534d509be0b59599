"""Euclidean projections of pytrees onto convex sets (optax.projections): boxes, balls, spheres, the simplex,
hyperplanes and half-spaces. Each returns the point of the set nearest to the input."""
from __future__ import annotations

from typing import Any

from .. import nn
from .. import numpy as jnp
from ..ad.custom import custom_jvp
from ..control.api import cond
from ..core.tree_util import tree_broadcast, tree_map
from ..flatten_util import ravel_pytree
from .tree_utils import tree_add_scale, tree_full_like, tree_mul, tree_norm, tree_scale, tree_vdot

__all__ = [
    "projection_box", "projection_halfspace", "projection_hypercube", "projection_hyperplane", "projection_l1_ball",
    "projection_l1_sphere", "projection_l2_ball", "projection_l2_sphere", "projection_linf_ball",
    "projection_non_negative", "projection_simplex", "projection_vector",
]


def projection_non_negative(tree: Any) -> Any:
    """Onto the non-negative orthant: ``max(x, 0)`` leaf by leaf."""
    return tree_map(nn.relu, tree)


def projection_box(tree: Any, lower: Any, upper: Any) -> Any:
    """Onto the box ``lower <= x <= upper``; each bound is a pytree with ``tree``'s structure, or one
    scalar/array for every leaf (optax requires the former when ``tree`` is a container)."""
    return tree_map(jnp.clip, tree, tree_broadcast(lower, tree), tree_broadcast(upper, tree))


def projection_hypercube(tree: Any, scale: Any = 1) -> Any:
    """Onto the hypercube ``0 <= x <= scale``."""
    return projection_box(tree, lower=0, upper=scale)


@custom_jvp
def _unit_simplex(values):
    """Projection of a vector onto ``{x >= 0, sum(x) = 1}`` (sort-based, Held et al. / Condat)."""
    n = values.shape[0]
    u = jnp.sort(values)[::-1]
    cumsum_u = jnp.cumsum(u)
    ind = jnp.arange(n) + 1
    # the support size: how many of the largest entries stay positive after the common shift
    k = jnp.count_nonzero(1 / ind + (u - cumsum_u / ind) > 0)
    return nn.relu(1 / k + (values - cumsum_u[k - 1] / k))


@_unit_simplex.defjvp
def _unit_simplex_jvp(primals, tangents):
    (values,), (values_dot,) = primals, tangents
    out = _unit_simplex(values)
    # the Jacobian is the projection onto zero-sum vectors on the support
    supp = out > 0
    card = jnp.count_nonzero(supp)
    return out, supp * values_dot - (jnp.dot(supp, values_dot) / card) * supp


def projection_simplex(tree: Any, scale: Any = 1) -> Any:
    """Onto the simplex ``{x >= 0, sum of all elements = scale}`` (all leaves together)."""
    values, unravel = ravel_pytree(tree)
    return unravel(scale * _unit_simplex(values / scale))


def projection_l1_sphere(tree: Any, scale: Any = 1) -> Any:
    """Onto the l1 sphere ``{sum |x| = scale}``."""
    signs = tree_map(jnp.sign, tree)
    return tree_mul(signs, projection_simplex(tree_map(jnp.abs, tree), scale))


def projection_l1_ball(tree: Any, scale: Any = 1) -> Any:
    """Onto the l1 ball ``{sum |x| <= scale}``."""
    inside = tree_norm(tree, ord=1) <= scale
    return cond(inside, lambda t: t, lambda t: projection_l1_sphere(t, scale), tree)


def projection_l2_sphere(tree: Any, scale: Any = 1) -> Any:
    """Onto the l2 sphere ``{|x|_2 = scale}`` (x scaled to norm ``scale``)."""
    return tree_scale(scale / tree_norm(tree), tree)


def projection_l2_ball(tree: Any, scale: Any = 1) -> Any:
    """Onto the l2 ball ``{|x|_2 <= scale}`` (x scaled down when outside)."""
    squared_norm = tree_norm(tree, squared=True)
    return tree_scale(scale / jnp.sqrt(jnp.maximum(squared_norm, scale ** 2)), tree)


def projection_linf_ball(tree: Any, scale: Any = 1) -> Any:
    """Onto the l-infinity ball ``{max |x| <= scale}``: each element clipped to ``[-scale, scale]``."""
    return projection_box(tree, lower=tree_full_like(tree, -scale), upper=tree_full_like(tree, scale))


def projection_vector(x: Any, a: Any) -> Any:
    """Onto the line spanned by ``a``: ``(<x, a> / <a, a>) a``."""
    return tree_scale(tree_vdot(x, a) / tree_vdot(a, a), a)


def projection_hyperplane(x: Any, a: Any, b: Any) -> Any:
    """Onto the hyperplane ``{<a, x> = b}``."""
    return tree_add_scale(x, (b - tree_vdot(x, a)) / tree_vdot(a, a), a)


def projection_halfspace(x: Any, a: Any, b: Any) -> Any:
    """Onto the half-space ``{<a, x> <= b}`` (x unchanged when inside)."""
    step = jnp.clip((b - tree_vdot(x, a)) / tree_vdot(a, a), max=0)
    return tree_add_scale(x, step, a)
