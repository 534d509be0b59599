"""Primitives: kiln's op set. A primitive is a name with a shape/dtype rule.

Everything else about a primitive lives in tables keyed by it, one per concern:
its emission rule (``lowering``), and later its derivative and batching rules. A registry test
walks :data:`registry` and fails when a primitive lacks an entry in one of those tables.
"""
from __future__ import annotations

from typing import Any, Callable

from .avals import ShapedArray

registry: dict[str, Primitive] = {}


class Primitive:
    """An operation of kiln IR.

    ``shape_rule(*in_avals, **params)`` returns the output ShapedArray (or a list of them when
    ``multiple_results``). It must raise a ``TypeError``/``ValueError`` with a clear message on
    invalid input: it runs before anything is traced or compiled.

    ``has_effects``: running it does something besides computing its results (a host callback that is
    not pure): the passes keep it when its results are unused and never merge two of them. ``impl``: when
    set, what eager execution calls (``impl(*args, **params)``) instead of compiling the primitive.
    A primitive whose effects depend on its parameters (``ffi_call``'s ``has_side_effect``) overrides
    :meth:`effects_of`.
    """

    has_effects: bool = False
    impl: Callable[..., Any] | None = None
    # Emission rules the primitive carries itself, by platform (None: every platform), in JAX's calling convention
    # (``rule(ctx, *operand_values, **params)``): kiln.interpreters.mlir.register_lowering sets them, for
    # primitives defined with kiln.extend.core.Primitive. Lowering tries them before its own table.
    lowering_rules: dict[str | None, Callable[..., Any]] | None = None

    def __init__(self, name: str, shape_rule: Callable[..., Any], multiple_results: bool = False,
                 inline_param: str | None = None):
        if name in registry:
            raise ValueError(f"primitive {name!r} is defined twice")
        self.name = name
        self.shape_rule = shape_rule
        self.multiple_results = multiple_results
        # Call-like primitives name the parameter holding their body (a ClosedIR without consts
        # whose inputs are the equation's inputs); lowering inlines such bodies.
        self.inline_param = inline_param
        registry[name] = self

    def bind(self, *args: Any, **params: Any) -> Any:
        """Apply the primitive: staged into the innermost trace, or run eagerly."""
        from .tracing import bind
        return bind(self, args, params)

    def effects_of(self, params: dict[str, Any]) -> bool:
        """Whether an equation of this primitive with these parameters has effects."""
        return self.has_effects

    def out_avals(self, in_avals: list[ShapedArray], params: dict[str, Any]) -> list[ShapedArray]:
        out = self.shape_rule(*in_avals, **params)
        return list(out) if self.multiple_results else [out]

    def __repr__(self) -> str:
        return self.name

    # Primitives are singletons: hash and compare by identity (fast, and cache-friendly).
    __hash__ = object.__hash__
