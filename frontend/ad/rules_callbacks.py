"""Derivative rules of ``lax/callbacks.py``: ``debug_callback`` and ``inspect_sharding`` run on the primal values
(their JVPs call them on the primals and have no tangents, so under ``grad`` they run in the forward pass, as in
JAX); ``pure_callback`` and ``io_callback`` are not differentiable (JAX's errors, pointing at
``custom_jvp``/``custom_vjp``)."""
from __future__ import annotations

from ..lax import callbacks
from .jvp import DifferentiationError, jvp_rules
from .transpose import transpose_rules


class CallbackDifferentiationError(DifferentiationError, ValueError):
    """A pure or IO callback was differentiated (JAX raises ValueError)."""


def _debug_jvp(primals, tangents, **params):
    return callbacks.debug_callback_p.bind(*primals, **params), []


def _debug_transpose(cts, *args, **params):
    return [None] * len(args)


def _pure_jvp(primals, tangents, *, callback, **params):
    raise CallbackDifferentiationError(
        f"kiln: pure callbacks do not support JVP ({callback.name}). Use kiln.custom_jvp (or kiln.custom_vjp) to "
        "give the callback a derivative when taking gradients.")


def _io_jvp(primals, tangents, *, callback, **params):
    raise CallbackDifferentiationError(
        f"kiln: IO callbacks do not support JVP ({callback.name}); differentiate around the callback "
        "(kiln.lax.stop_gradient on its arguments) or give it a kiln.custom_jvp rule")


def _inspect_jvp(primals, tangents, **params):
    return callbacks.inspect_sharding_p.bind(*primals, **params), []


jvp_rules[callbacks.debug_callback_p] = _debug_jvp
jvp_rules[callbacks.inspect_sharding_p] = _inspect_jvp
transpose_rules[callbacks.inspect_sharding_p] = _debug_transpose
transpose_rules[callbacks.debug_callback_p] = _debug_transpose
jvp_rules[callbacks.pure_callback_p] = _pure_jvp
jvp_rules[callbacks.io_callback_p] = _io_jvp
