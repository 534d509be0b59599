"""Second-order quantities of a loss ``loss(params, inputs, targets)`` (optax.second_order): Hessian-vector
products, the Hessian's diagonal and the empirical Fisher diagonal, over the flattened parameters."""
from __future__ import annotations

from typing import Any, Callable

from .. import numpy as jnp
from ..ad.api import grad, jvp
from ..batching.api import vmap
from ..flatten_util import ravel_pytree

__all__ = ["hvp", "hessian_diag", "fisher_diag"]


def _ravel(tree):
    return ravel_pytree(tree)[0]


def hvp(loss: Callable, v: Any, params: Any, inputs: Any, targets: Any) -> Any:
    """``H v``: the Hessian of ``loss`` in ``params`` times ``v`` (a flat vector, one entry per parameter
    element, in ``ravel_pytree`` order), as a pytree with ``params``' structure (forward over reverse)."""
    _, unravel = ravel_pytree(params)
    return jvp(grad(lambda p: loss(p, inputs, targets)), [params], [unravel(v)])[1]


def hessian_diag(loss: Callable, params: Any, inputs: Any, targets: Any) -> Any:
    """The diagonal of the Hessian of ``loss`` in the flattened ``params``: one Hessian-vector product
    per parameter element (vmapped), so it costs n HVPs."""
    basis = jnp.eye(_ravel(params).size)
    return vmap(lambda e: jnp.vdot(e, _ravel(hvp(loss, e, params, inputs, targets))))(basis)


def fisher_diag(negative_log_likelihood: Callable, params: Any, inputs: Any, targets: Any) -> Any:
    """The empirical Fisher diagonal: the squared gradient of ``negative_log_likelihood``, flattened."""
    return jnp.square(_ravel(grad(negative_log_likelihood)(params, inputs, targets)))
