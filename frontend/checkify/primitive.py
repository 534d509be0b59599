"""``checkify.check``, ``debug_check`` and ``check_error``, and the ``check`` primitive they bind.

``check[err_tree, debug](*leaves)`` takes the leaves of an error value (see ``errors.py``) and has no results.
It has effects (the passes keep it). What it does depends on where it ends up:

- run eagerly (its ``impl``): raises :class:`~.errors.JaxRuntimeError` when the error holds a failure (nothing
  for a ``debug_check``). Under eager transformations whose values are known (``grad`` of concrete values, a
  custom derivative rule run for it) the check runs right away and is not recorded, as JAX runs it on the primal
  values;
- under ``checkify``: the interpreter (``transform.py``) merges its error into the function's error value (it
  is *functionalized*);
- lowered (``jit`` of a function with a ``check`` that no ``checkify`` functionalized): the emission rule
  (``lowering/rules/checkify.py``) raises JAX's "Cannot abstractly evaluate a checkify.check which was not
  functionalized" error; a ``debug_check`` emits nothing.

Its JVP runs it on the primal values (no tangents), as JAX's; its batching rule reduces a batched error to the
failure of one batch element per kind of error (JAX's ``_reduce_any_error``) and checks that.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import numpy as jnp
from ..ad.jvp import jvp_rules
from ..ad.transpose import transpose_rules
from ..batching.core import batch_rules, move_dim
from ..core import source_info, tree_util
from ..core.ir import Literal
from ..core.primitive import Primitive
from ..core.tracing import Tracer, abstractify, active_traces, concrete
from ..driver.array import Array
from .errors import (
    CheckifyUsageError,
    Error,
    ErrorTree,
    FailedCheckError,
    JaxRuntimeError,
    assert_func,
    init_error,
)

__all__ = ["check", "check_error", "check_p", "debug_check"]


def _check_rule(*avals: Any, err_tree: ErrorTree, debug: bool) -> list:
    return []


check_p = Primitive("check", _check_rule, multiple_results=True)
check_p.has_effects = True


def raise_if_failed(error: Error) -> None:
    """Raise :class:`JaxRuntimeError` for the first failure ``error`` (concrete values) holds."""
    exc = error.get_exception()
    if exc is None:
        return
    where = exc.where()
    if where is not None and not getattr(exc, "__notes__", None):  # shown with the cause in tracebacks
        what = "check" if isinstance(exc, FailedCheckError) else "operation"
        exc.add_note(f"checkify: the failing {what} was traced at {where}")
    raise JaxRuntimeError(str(exc)) from exc


def _check_impl(*args: Any, err_tree: ErrorTree, debug: bool) -> list:
    if debug:  # a debug_check outside checkify does nothing
        return []
    values = [a.val if isinstance(a, Literal) else a for a in args]
    raise_if_failed(err_tree.unflatten(values))
    return []


check_p.impl = _check_impl


def _is_scalar_pred(pred: Any) -> bool:
    if isinstance(pred, bool):
        return True
    if isinstance(pred, (Array, Tracer)):
        aval = pred.aval
        return aval.shape == () and aval.dtype == np.bool_
    return False


def _check(pred: Any, msg: str, debug: bool, fmt_args: tuple, fmt_kwargs: dict) -> None:
    if not _is_scalar_pred(pred):
        name = "debug_check" if debug else "check"
        raise CheckifyUsageError(f"{name} takes a scalar pred as argument, got {pred}")
    for arg in tree_util.tree_leaves((fmt_args, fmt_kwargs)):
        if not isinstance(arg, (Array, Tracer, np.ndarray)):
            raise CheckifyUsageError("Formatting arguments to checkify.check need to be PyTrees of arrays, but got "
                                     f"{arg!r} of type {type(arg)}.")
    new_error = FailedCheckError(source_info.current(), msg, *fmt_args, **fmt_kwargs)
    failed = (not pred) if isinstance(pred, bool) else jnp.logical_not(pred)
    error = assert_func(init_error, failed, new_error)
    _check_error(error, debug=debug)


def check(pred: Any, msg: str, *fmt_args: Any, debug: bool = False, **fmt_kwargs: Any) -> None:
    """Check a predicate; record a failure with message ``msg`` when it is False (``jax.experimental.checkify.check``).

    Parameters
    ----------
    pred : a Python bool or a boolean scalar array.
    msg : the message; a format string (``str.format``) over ``fmt_args`` and ``fmt_kwargs``.
    fmt_args, fmt_kwargs : pytrees of arrays whose run-time values fill ``msg``.
    debug : a check that only runs under ``checkify`` (see :func:`debug_check`).

    Outside ``checkify`` a failed check raises :class:`JaxRuntimeError` right away (also under ``grad`` and
    ``vmap``); under ``jit`` it must be functionalized first: ``jit(checkify(f))``, or ``jit(f)`` raises
    ``ValueError: Cannot abstractly evaluate a checkify.check which was not functionalized``.

    >>> def f(x):
    ...     check(x > 0, "{x} needs to be positive!", x=x)
    ...     return 1 / x
    >>> err, out = kiln.jit(checkify(f))(-3.)
    >>> err.get()
    '-3.0 needs to be positive! (`check` failed)'
    """
    _check(pred, msg, debug, fmt_args, fmt_kwargs)


def debug_check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """A :func:`check` that runs only under ``checkify`` (``jax.experimental.checkify.debug_check``): elsewhere
    (eagerly, under ``jit``, ``vmap``, ``grad``) it is dropped."""
    _check(pred, msg, True, fmt_args, fmt_kwargs)


def check_error(error: Error) -> None:
    """Raise :class:`JaxRuntimeError` if ``error`` holds a failure (``jax.experimental.checkify.check_error``).

    As ``error.throw()``, but usable inside a function that ``checkify`` functionalizes again: under
    ``checkify`` the error is merged into the function's error value instead of being raised.
    """
    if not isinstance(error, Error):
        raise CheckifyUsageError(f"check_error takes an Error as argument, got type {type(error)} instead.")
    _check_error(error, debug=False)


def check_error_value(error: Error) -> None:
    """``error.throw()``."""
    _check_error(error, debug=False)


def _eager_transformations_only() -> bool:
    """Whether every active trace is an eager transformation's (``grad`` of concrete values, a custom derivative
    rule run for it): traces whose values are known, so that a check can run now, as it would eagerly."""
    stack = active_traces()
    return bool(stack) and all(b.known is not None for b in stack)


def _check_error(error: Error, *, debug: bool = False) -> None:
    if any(np.shape(abstractify(v)) for v in error._pred.values()):
        error = reduce_any_error(error)
    leaves, tree = error.tree_flatten()
    if _eager_transformations_only():
        # Under eager grad, JAX runs the check on the primal values at once; kiln does the same when they are known
        # (rather than recording it into an IR that may later be compiled as one program, where it cannot raise).
        values = [concrete(x) for x in leaves]
        if all(v is not None for v in values):
            if not debug:
                raise_if_failed(tree.unflatten(values))
            return
    check_p.bind(*leaves, err_tree=tree, debug=debug)


def reduce_any_error(error: Error) -> Error:
    """A batched error reduced to one element per kind of error: the last batch element that failed (the last
    one, when none did), as JAX's ``_reduce_any_error``."""
    pred, code, payload = {}, {}, {}
    for effect, p in error._pred.items():
        flat = jnp.reshape(p, (-1,))
        n = abstractify(flat).shape[0]
        idx = n - 1 - jnp.argmax(flat[::-1])  # the last True (argmax: the first of the reversed)

        def take(x, n_batch=abstractify(p).ndim, idx=idx):
            x = jnp.reshape(x, (-1,) + tuple(abstractify(x).shape[n_batch:]))
            return x[idx]
        pred[effect] = take(p)
        code[effect] = take(error._code[effect])
        payload[effect] = [take(x) for x in error._payload[effect]]
    return Error(pred, code, error._metadata, payload)


# -- transformation rules --------------------------------------------------------------------------------------

def _check_jvp(primals, tangents, **params):
    check_p.bind(*primals, **params)
    return [], []


def _check_transpose(cts, *args, **params):
    return [None] * len(args)


def _check_batch(ctx, args, dims, *, err_tree: ErrorTree, debug: bool):
    front = [move_dim(x, d, 0, ctx.size) for x, d in zip(args, dims)]
    error = reduce_any_error(err_tree.unflatten(front))
    leaves, tree = error.tree_flatten()
    check_p.bind(*leaves, err_tree=tree, debug=debug)
    return [], []


jvp_rules[check_p] = _check_jvp
transpose_rules[check_p] = _check_transpose
batch_rules[check_p] = _check_batch
