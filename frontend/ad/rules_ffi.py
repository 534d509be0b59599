"""Derivative rule of ``lax/ffi.py``: an FFI call is not differentiable (JAX's error, pointing at
``custom_jvp``/``custom_vjp``)."""
from __future__ import annotations

from ..lax import ffi
from .jvp import DifferentiationError, jvp_rules


class FfiDifferentiationError(DifferentiationError, ValueError):
    """An FFI call was differentiated (JAX raises ValueError)."""


def _ffi_jvp(primals, tangents, *, target_name, **params):
    raise FfiDifferentiationError(
        f"kiln: the FFI call to {target_name!r} cannot be differentiated. Give it a derivative with kiln.custom_jvp "
        "or kiln.custom_vjp (e.g. a second FFI target computing the gradient).")


jvp_rules[ffi.ffi_call_p] = _ffi_jvp
