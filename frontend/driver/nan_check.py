"""``debug_nans`` / ``debug_infs``: find the primitive that first produced a NaN (an Inf).

With a flag on, every eager primitive checks its floating-point outputs, and a jitted call checks its
outputs after it ran; when one holds a NaN (Inf), the call's traced IR is evaluated again equation by
equation (eagerly, each result checked), which raises :class:`InvalidValueError` naming the first
primitive whose output has one and the user's source line that created it (the equations' recorded
:mod:`~kiln.frontend.core.source_info`). The re-run descends into nested jitted calls and custom
derivative bodies, and into cond / while / scan bodies through rules the control-flow floor registers in
:data:`locate_rules`; other primitives with bodies (shard_map, ...) run as one program and are named
themselves. Integer and boolean outputs are never checked.

With both flags off nothing here runs: jit keeps its C++ dispatch (``config._python_dispatch``).
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..core import dtypes, source_info
from ..core.config import config
from ..core.errors import KilnError
from ..core.ir import IR, Literal, Var


class InvalidValueError(KilnError, FloatingPointError):
    """A NaN or Inf was produced while ``debug_nans`` / ``debug_infs`` is on (a ``FloatingPointError``, as
    JAX raises)."""


# primitive -> rule(eqn, args, run) evaluating an equation with bodies step by step; ``run(ir, consts, args)``
# evaluates a body equation by equation with checks. Filled by the control-flow floor (cond, while, scan).
locate_rules: dict[Any, Callable] = {}

# Inside a re-run (a jitted call found a NaN): nested jitted calls report instead of re-running again.
_rerunning: contextvars.ContextVar[bool] = contextvars.ContextVar("kiln_nan_rerun", default=False)
# Set around bookkeeping operations of a re-run (slicing a scan's xs, stacking its ys): not checked.
_unchecked: contextvars.ContextVar[bool] = contextvars.ContextVar("kiln_nan_unchecked", default=False)


@contextlib.contextmanager
def unchecked() -> Iterator[None]:
    """Eager operations in the block are not checked (a re-run's own slicing and stacking)."""
    token = _unchecked.set(True)
    try:
        yield
    finally:
        _unchecked.reset(token)


def invalid_kind(x: Any) -> str | None:
    """"nan" or "inf" when ``x`` (an array of a floating or complex dtype) holds one the flags ask about."""
    aval = getattr(x, "aval", None)
    dtype = aval.dtype if aval is not None else getattr(x, "dtype", None)
    if dtype is None or not dtypes.is_inexact(dtype):
        return None
    value = np.asarray(x)
    if config.debug_nans and np.isnan(value).any():
        return "nan"
    if config.debug_infs and np.isinf(value).any():
        return "inf"
    return None


def _where(source: source_info.SourceInfo | None) -> str:
    return "" if source is None else f" at {source}"


def check_eager(prim: Any, args: Sequence[Any], params: dict, out: Any) -> None:
    """After an eager primitive (a flag is on): raise if one of its outputs holds a NaN (Inf). A primitive
    with a body (scan, cond, while, a custom derivative call) is re-run step by step first, to name the
    primitive inside it."""
    if _unchecked.get():
        return
    for o in (out if prim.multiple_results else (out,)):
        kind = invalid_kind(o)
        if kind is None:
            continue
        source = source_info.current()
        if (prim.inline_param is not None or prim in locate_rules) and not _rerunning.get():
            from ..core.ir import Eqn
            from ..core.tracing import abstractify
            in_vars = [Var(abstractify(a)) for a in args]
            out_vars = [Var(a) for a in prim.out_avals([v.aval for v in in_vars], params)]
            token = _rerunning.set(True)
            try:
                run_checked(IR([], in_vars, [Eqn(prim, list(in_vars), out_vars, params, source)], out_vars), [],
                            args)
            finally:
                _rerunning.reset(token)
        raise InvalidValueError(f"invalid value ({kind}) encountered in {prim.name}{_where(source)}")


def check_jit(name: str, ir: IR, consts: Sequence[Any], args: Sequence[Any], outs: Sequence[Any],
              donated: bool = False) -> None:
    """After a jitted call (a flag is on): if an output holds a NaN (Inf), re-run ``ir`` op by op to find
    the primitive that produced it, and raise."""
    if _unchecked.get():
        return
    kind = next((k for k in map(invalid_kind, outs) if k is not None), None)
    if kind is None:
        return
    single = ir.eqns[0] if len(ir.eqns) == 1 and not _has_body(ir.eqns[0]) else None
    if single is not None or _rerunning.get():
        # One primitive run as a jitted program (eager over a mesh), or an operation of a re-run: name it.
        what, source = (single.prim.name, single.source) if single is not None else (f"kiln.jit({name})", None)
        raise InvalidValueError(f"invalid value ({kind}) encountered in {what}"
                                f"{_where(source_info.override() or source or source_info.current())}")
    if donated:
        raise InvalidValueError(
            f"invalid value ({kind}) encountered in the output of kiln.jit({name}); its arguments were donated, so "
            "it cannot be re-run op by op to find the operation that produced it: call it without "
            "donate_argnums/donate_argnames while debugging")
    token = _rerunning.set(True)
    try:
        run_checked(ir, consts, args)
    except InvalidValueError as e:
        raise InvalidValueError(f"{e}; found by re-running kiln.jit({name}) op by op after its output had a {kind} "
                                "(debug_nans/debug_infs is on)") from None
    except Exception as e:
        raise InvalidValueError(f"invalid value ({kind}) encountered in the output of kiln.jit({name}); re-running it "
                                f"op by op to find the operation that produced it failed: {type(e).__name__}: {e}"
                                ) from e
    finally:
        _rerunning.reset(token)
    raise InvalidValueError(
        f"invalid value ({kind}) encountered in the output of kiln.jit({name}), but re-running it op by op "
        f"produced no {kind}: XLA's optimisations may compute differently (fused or reordered operations), or the "
        f"{kind} came in through an argument or constant that the function returns unchanged")


def _has_body(eqn: Any) -> bool:
    return eqn.prim.inline_param is not None or eqn.prim in locate_rules


def run_checked(ir: IR, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """Evaluate ``ir`` equation by equation, eagerly (each result checked by :func:`check_eager` under the
    equation's source location), descending into bodies where a rule says how."""
    env: dict[Var, Any] = dict(zip(ir.constvars, consts))
    env.update(zip(ir.invars, args))

    def read(a):
        return a if isinstance(a, Literal) else env[a]

    for eqn in ir.eqns:
        ins = [read(a) for a in eqn.inputs]
        with source_info.at(eqn.source):
            param = eqn.prim.inline_param
            rule = locate_rules.get(eqn.prim)
            if param is not None:
                body = eqn.params[param]
                outs = run_checked(body.ir, body.consts, ins)
            elif rule is not None:
                outs = rule(eqn, ins, run_checked)
            else:
                outs = eqn.prim.bind(*ins, **eqn.params)
                outs = outs if eqn.prim.multiple_results else [outs]
        env.update(zip(eqn.outputs, outs))
    return [read(a) for a in ir.outvars]
