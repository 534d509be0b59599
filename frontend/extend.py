"""JAX's extension API for new primitives, in JAX's names and calling conventions ("How JAX primitives work"):
``kiln.extend.core.Primitive`` (``def_impl``, ``def_abstract_eval``, ``bind``), and the rule tables of
``kiln.interpreters``: ``ad.primitive_jvps``, ``ad.primitive_transposes`` and ``batching.primitive_batchers``
(adapted into kiln's tables: kiln's derivative rules take what JAX's take, its batching rules also a context) and
``mlir.register_lowering`` (the rule goes on the primitive: see lowering/extension.py) with ``mlir.lower_fun``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import numpy as np

from .ad.jvp import jvp_rules
from .ad.tangents import Zero, instantiate, zeros_like_aval
from .ad.transpose import UndefinedPrimal, is_undefined, transpose_rules
from .batching.core import batch_rules
from .core import primitive as _primitive
from .core.ir import Literal
from .core.tracing import materialize, trace_to_ir
from .driver.dispatch import canonical_host_array

__all__ = ["Primitive", "Zero", "UndefinedPrimal", "instantiate", "is_undefined", "lower_fun", "not_mapped",
           "primitive_batchers", "primitive_jvps", "primitive_transposes", "register_lowering", "zeros_like_aval"]


class Primitive(_primitive.Primitive):
    """A primitive the user defines (JAX's ``jax.extend.core.Primitive``): ``def_impl`` gives its eager evaluation,
    ``def_abstract_eval`` its output types (what jit and the transformations need), and the tables of
    ``kiln.interpreters`` its lowering, derivative and batching rules. It is not in kiln's registry of its own
    primitives (its name may be any name), and each rule it lacks is a ``NotImplementedError`` when needed, as in
    JAX."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.multiple_results = False
        self.inline_param = None
        self.lowering_rules = {}
        self.shape_rule = self._no_abstract_eval
        self.impl = self._no_impl

    def def_impl(self, impl: Callable[..., Any]) -> Callable[..., Any]:
        """``impl(*args, **params)`` evaluates the primitive on concrete values, outside any trace. NumPy arguments
        reach it in kiln's dtypes, as in JAX (float64 as float32 unless x64 is on)."""
        def canonical_impl(*args: Any, **params: Any) -> Any:
            return impl(*[_canonical(a) for a in args], **params)
        self.impl = canonical_impl
        return impl

    def def_abstract_eval(self, abstract_eval: Callable[..., Any]) -> Callable[..., Any]:
        """``abstract_eval(*avals, **params)`` gives the result's ShapedArray (a list of them with
        ``multiple_results``)."""
        self.shape_rule = abstract_eval
        return abstract_eval

    def def_effectful_abstract_eval(self, abstract_eval: Callable[..., Any]) -> Callable[..., Any]:
        """As :meth:`def_abstract_eval`, for a rule returning ``(avals, effects)``: a primitive with effects is kept
        when its results are unused and never merged with another."""
        def shape_rule(*avals: Any, **params: Any) -> Any:
            out, effects = abstract_eval(*avals, **params)
            if effects:
                self.has_effects = True
            return out
        self.shape_rule = shape_rule
        return abstract_eval

    def _no_impl(self, *args: Any, **params: Any) -> Any:
        raise NotImplementedError(f"Evaluation rule for '{self.name}' not implemented: define one with "
                                  f"{self.name}.def_impl(...)")

    def _no_abstract_eval(self, *avals: Any, **params: Any) -> Any:
        raise NotImplementedError(f"Abstract evaluation for '{self.name}' not implemented: define one with "
                                  f"{self.name}.def_abstract_eval(...)")


def _canonical(x: Any) -> Any:
    """A NumPy argument of a user's impl in kiln's dtype (a float64 array as float32 unless x64 is on)."""
    if isinstance(x, (np.ndarray, np.generic)):
        return canonical_host_array(x)
    return x


not_mapped = None  # JAX's batching.not_mapped: the batch axis of an unbatched value


def _values(args: Any) -> list:
    """Arguments as a user's rule sees them in JAX: an IR literal (kiln's rules take those as they are) as an array
    or a tracer of the current trace."""
    return [materialize(a) if isinstance(a, Literal) else a for a in args]


class _RuleTable(MutableMapping):
    """A table of JAX's names whose rules go, adapted, into one of kiln's tables (``kiln_rules``): a user's rule
    gets values, never IR literals, and JAX's arguments. Reading gives the rules set here."""

    def __init__(self, kiln_rules: dict, adapt: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        self._kiln_rules, self._adapt = kiln_rules, adapt
        self._rules: dict[Any, Callable[..., Any]] = {}

    def __setitem__(self, prim: Any, rule: Callable[..., Any]) -> None:
        self._rules[prim] = rule
        self._kiln_rules[prim] = self._adapt(rule)

    def __getitem__(self, prim: Any) -> Callable[..., Any]:
        return self._rules[prim]

    def __delitem__(self, prim: Any) -> None:
        del self._rules[prim]
        del self._kiln_rules[prim]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)


def _jvp(rule: Callable[..., Any]) -> Callable[..., Any]:
    # JAX's and kiln's: rule(primals, tangents, **params) -> (primal out, tangent out); a tangent may be Zero. JAX
    # passes tuples (a rule may compare them with a tuple, or concatenate one)
    return lambda primals, tangents, **params: rule(tuple(_values(primals)), tuple(tangents), **params)


def _transpose(rule: Callable[..., Any]) -> Callable[..., Any]:
    # JAX's and kiln's: rule(ct, *args, **params), the linear arguments UndefinedPrimal -> a cotangent per argument
    return lambda ct, *args, **params: rule(ct, *_values(args), **params)


def _batcher(rule: Callable[..., Any]) -> Callable[..., Any]:
    # JAX's rule(batched_args, batch_dims, **params) -> (out, out_dim); kiln's also takes the batching context
    return lambda ctx, args, dims, **params: rule(tuple(_values(args)), tuple(dims), **params)


primitive_jvps = _RuleTable(jvp_rules, _jvp)
primitive_transposes = _RuleTable(transpose_rules, _transpose)
primitive_batchers = _RuleTable(batch_rules, _batcher)


def register_lowering(prim: Any, rule: Callable[..., Any], platform: str | None = None) -> Callable[..., Any]:
    """JAX's ``mlir.register_lowering``: ``rule(ctx, *operand_values, **params)`` builds the StableHLO of ``prim``
    (``kiln.extend.mlir.dialects.stablehlo`` operations on ``kiln.extend.mlir.ir`` values) and returns its result
    values; ``platform`` ('cpu', 'cuda', 'rocm', 'gpu', 'tpu'; None: all) restricts it to one backend."""
    if prim.lowering_rules is None:
        prim.lowering_rules = {}
    prim.lowering_rules[platform] = rule
    return rule


def lower_fun(fun: Callable[..., Any], multiple_results: bool = True) -> Callable[..., Any]:
    """JAX's ``mlir.lower_fun``: a lowering rule that traces ``fun`` (kiln functions of the operands, the equation's
    parameters as keyword arguments) and emits it in place."""
    def rule(ctx: Any, *operands: Any, **params: Any) -> Any:
        def flat(*xs: Any) -> list:
            out = fun(*xs, **params)
            return list(out) if multiple_results else [out]
        closed, _ = trace_to_ir(flat, list(ctx.avals_in), name=getattr(fun, "__name__", "lower_fun"))
        return ctx.emit(closed, operands)
    return rule
