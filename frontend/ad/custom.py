"""User-defined derivatives: ``kiln.custom_jvp`` and ``kiln.custom_vjp``.

Inside a trace, a call of such a function is recorded as one equation whose body is the traced
function (lowering inlines it) and whose parameters carry the user's rule. The JVP rule of
``custom_jvp_call`` runs the user's JVP function; the JVP of ``custom_vjp_call`` runs the user's
forward function and emits ``custom_vjp_lin``, a linear equation whose transpose runs the user's
backward function. Outside any trace the function simply runs.

With ``symbolic_zeros=True`` (``defjvp``/``defvjp``) the rules see kiln's zero tangents as
:class:`~.symbolic_zeros.SymbolicZero` and custom_vjp's fwd gets its arguments as
:class:`~.symbolic_zeros.CustomVJPPrimal` (value, perturbed), as in JAX.

A call whose arguments carry a derivative of what grad/vjp/jvp/linearize differentiates never runs the
function, as in JAX: the rule (the JVP function with the tangents as inputs, or the forward function) is
traced instead, its primal outputs are the equation's body, and its JVP evaluates the traced rule.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from ..core import dtypes, refs, tree_util
from ..core.avals import ShapedArray
from ..core.call import call_body
from ..core.errors import KilnError, UnexpectedTracerError
from ..core.ir import IR, ClosedIR
from ..core.passes import eliminate_dead_code
from ..core.primitive import Primitive
from ..core.tracing import Tracer, abstractify, current_builder, eval_ir, materialize, trace_to_ir
from ..lax.api import stop_gradient
from .jvp import jvp_rules, non_differentiable
from .partial_eval import partial_eval
from .symbolic_zeros import (
    CustomVJPPrimal,
    SymbolicZero,
    find_primal_wrapper,
    fits,
    from_rule,
    to_rule,
)
from .tangents import Zero, float0, instantiate, is_differentiable_dtype, tangent_aval
from .transpose import is_undefined, transpose_rules


class CustomDerivativeError(KilnError, TypeError):
    """A custom derivative rule returned values of the wrong structure, shape or dtype."""


class MissingRuleError(KilnError, TypeError, AttributeError):
    """A custom_jvp/custom_vjp function called before defjvp/defvjp gave it its rule (JAX raises AttributeError)."""


class SymbolicZeroMismatchError(CustomDerivativeError, ValueError):
    """A custom_vjp bwd returned a SymbolicZero whose type is not its argument's (JAX raises ValueError)."""


class SymbolicZerosRematError(KilnError, NotImplementedError):
    """custom_vjp's ``symbolic_zeros`` and ``optimize_remat`` together (JAX raises NotImplementedError)."""


def _body_rule(*avals, body: ClosedIR, rule: Any, name: str):
    return body.out_avals


custom_jvp_call_p = Primitive("custom_jvp_call", _body_rule, multiple_results=True, inline_param="body")
custom_vjp_call_p = Primitive("custom_vjp_call", _body_rule, multiple_results=True, inline_param="body")


def _lin_rule(*avals, rule: Any, num_res: int, out_avals: tuple):
    return list(out_avals)


# The linear part of a custom_vjp function's derivative; only reverse mode can evaluate it.
custom_vjp_lin_p = Primitive("custom_vjp_lin", _lin_rule, multiple_results=True)


def _split_nondiff(args: tuple, nondiff_argnums: tuple[int, ...]):
    nondiff = [args[i] for i in nondiff_argnums]
    diff = [a for i, a in enumerate(args) if i not in nondiff_argnums]
    return nondiff, diff


def merge_nondiff(nondiff: list, diff: Sequence, nondiff_argnums: tuple[int, ...]) -> list:
    out, d, n = [], iter(diff), iter(nondiff)
    for i in range(len(nondiff) + len(diff)):
        out.append(next(n) if i in nondiff_argnums else next(d))
    return out


class _Call:
    """Everything a custom rule needs at differentiation time (a primitive parameter: hashed by identity).

    ``traced_rule``: when the call was recorded from its rule rather than its function (it was differentiated),
    that rule traced over the equation's inputs: the JVP function, with the tangents of the inexact inputs as
    further inputs and returning the outputs and their inexact ones' tangents; or the forward function,
    returning the outputs and the residuals (of tree ``res_tree``).

    ``traced_in``: per input (after the constants), whether the traced JVP function takes its tangent, or the
    traced fwd was told it is perturbed (None: every inexact input); ``traced_out``: per output, whether the
    traced JVP function returns its tangent (it does not for a zero one). Where the differentiation does not
    fit these, the rule runs again (see ``_traced_rule_serves``)."""

    def __init__(self, owner, nondiff: list, in_tree, out_tree, traced_rule: ClosedIR | None = None,
                 res_tree=None, traced_in: tuple[bool, ...] | None = None,
                 traced_out: tuple[bool, ...] | None = None):
        self.owner, self.nondiff, self.in_tree, self.out_tree = owner, nondiff, in_tree, out_tree
        self.traced_rule, self.res_tree = traced_rule, res_tree
        self.traced_in, self.traced_out = traced_in, traced_out

    def __repr__(self) -> str:
        # How the IR printer shows the parameter: the rule functions by name (as JAX's jvp=/bwd=), no address.
        def name(rule: str) -> str:
            return getattr(getattr(self.owner, rule, None), "__name__", "?")
        return name("jvp") if hasattr(self.owner, "jvp") else f"({name('fwd')}, {name('bwd')})"


def _symbolic(owner) -> bool:
    """Whether the rules were defined with ``symbolic_zeros=True``."""
    return getattr(owner, "symbolic_zeros", False)


def _carries_derivative(x: Any) -> bool:
    """Whether ``x`` carries a derivative of what grad/vjp/jvp/linearize differentiates (JAX: a perturbed
    value)."""
    return isinstance(x, Tracer) and x.builder.carries_derivative(x)


def _traced_rule_serves(call: _Call, nonzero: Sequence[bool]) -> bool:
    """Whether the rule traced at the call serves a differentiation whose inputs (after the constants) have
    nonzero tangents where ``nonzero`` says. With symbolic zeros the rule saw which ones are zero: they must be the
    same (else the rule runs again, on what JAX would give it). Without, none may be nonzero where the trace took
    it as zero (the others it takes as zeros)."""
    if call.traced_in is None:
        return True
    if _symbolic(call.owner):
        return all(t == bool(nz) for t, nz in zip(call.traced_in, nonzero))
    return all(t or not nz for t, nz in zip(call.traced_in, nonzero))


def _trace_body(owner, nondiff: list, flat: list, in_tree):
    """The call traced through the function itself: ``(body, consts, rule)``."""
    out_tree_box = []

    def flat_fun(*tracers):
        diff_args = tree_util.tree_unflatten(in_tree, list(tracers))
        out = owner.fun(*merge_nondiff(nondiff, diff_args, owner.nondiff_argnums))
        leaves, tree = tree_util.tree_flatten(out)
        out_tree_box.append(tree)
        return leaves

    closed, _ = trace_to_ir(flat_fun, [abstractify(x) for x in flat], name=owner.__name__, known_values=flat)
    return call_body(closed), closed.consts, _Call(owner, nondiff, in_tree, out_tree_box[0])


def _check_no_differentiated_closure(consts: list, what: str) -> None:
    """A rule traced for a differentiated call gets no tangents for the values it closes over: where one of them
    carries a derivative, the result would silently miss that part. Raise instead (JAX raises too)."""
    for c in consts:
        if isinstance(c, Tracer) and c.builder.carries_derivative(c):
            raise CustomDerivativeError(
                f"{what} closes over a value that is being differentiated ({c.aval.str_short()}), so its derivative "
                "through that value cannot be taken. Pass the value to the function as an argument instead (or "
                "define the function outside the differentiated one).")


def _rule_trace_options(flat: list) -> dict:
    """trace_to_ir's options for the trace of a differentiated call's rule. Where an input carries a derivative
    of a differentiation enclosing the one that runs the rule (grad(grad(f))), it carries that one in the rule's
    trace, so that a call of a custom function inside the rule (the JVP function returning f(x)) runs that
    function's rule in turn rather than the function: as JAX, the rule runs once per order of differentiation
    and the function once, innermost."""
    depths = [max(x.builder.derivative_depth(x) - 1, 0) if isinstance(x, Tracer) else 0 for x in flat]
    if not any(depths):
        return {}
    return {"derivative_depths": depths, "tangent_flows": lambda eqn: eqn.prim not in non_differentiable}


def _trace_jvp_rule(owner, nondiff: list, flat: list, in_tree):
    """A differentiated custom_jvp call traced through its JVP function alone: ``(body, consts, rule)``. The body
    is the traced JVP function's primal outputs."""
    name = owner.__name__
    avals = [abstractify(x) for x in flat]
    # The inputs whose tangents the traced rule takes: the inexact ones (an integer input's tangent is a float0
    # zero, as in JAX); with symbolic zeros only those that carry a derivative, the others' are SymbolicZero.
    takes = tuple(is_differentiable_dtype(a.dtype) and (not _symbolic(owner) or _carries_derivative(x))
                  for x, a in zip(flat, avals))
    t_avals = [a for a, t in zip(avals, takes) if t]
    trees, out_nonzero = [], []

    def flat_rule(*args):
        primals, t_in = list(args[:len(avals)]), iter(args[len(avals):])
        tangents = [next(t_in) if t else Zero(tangent_aval(a)) for a, t in zip(avals, takes)]
        flat_out, out_tree, flat_t, t_tree = _run_jvp(owner, nondiff, in_tree, primals, tangents, name)
        out_avals = [abstractify(o) for o in flat_out]
        _check_like(f"kiln.custom_jvp rule of {name} (tangent output)", flat_t, out_avals, t_tree, out_tree,
                    tangents=True)
        trees.append(out_tree)
        # The nonzero tangents of the inexact outputs (an integer output's is a symbolic zero, as in jvp_eval, and
        # so is a SymbolicZero the rule returned).
        out_nonzero[:] = [is_differentiable_dtype(a.dtype) and not isinstance(t, Zero)
                          for a, t in zip(out_avals, flat_t)]
        return flat_out + [t for t, nz in zip(flat_t, out_nonzero) if nz]

    options = _rule_trace_options(flat)
    if options:  # the tangent inputs carry no enclosing derivative
        options["derivative_depths"] += [0] * len(t_avals)
    closed, _ = trace_to_ir(flat_rule, avals + t_avals, name=f"jvp({name})",
                            known_values=list(flat) + [None] * len(t_avals), **options)
    _check_no_differentiated_closure(closed.consts, f"kiln.custom_jvp function {name}")
    rule = call_body(closed)
    n_in = len(closed.consts) + len(avals)
    n_out = trees[0].num_leaves
    # The body: the part of the rule that does not read the tangents (an effect that does, a print of them, is
    # left out), its primal outputs only.
    split = partial_eval(rule.ir, [False] * n_in + [True] * len(t_avals))
    if any(split.out_unknown[:n_out]):
        raise CustomDerivativeError(f"kiln.custom_jvp rule of {name}: its primal output depends on the tangents")
    body = eliminate_dead_code(IR([], split.known.invars, split.known.eqns, split.known.outvars[:n_out]))
    return ClosedIR(body), closed.consts, _Call(owner, nondiff, in_tree, trees[0], traced_rule=rule,
                                                traced_in=takes, traced_out=tuple(out_nonzero))


def _trace_fwd(owner, nondiff: list, flat: list, in_tree):
    """A differentiated custom_vjp call traced through its forward function alone: ``(body, consts, rule)``. The
    body is the traced forward function, its outputs without the residuals."""
    trees = []
    # With symbolic zeros, fwd is told which inputs carry a derivative (JAX: which are perturbed).
    perturbed = (tuple(is_differentiable_dtype(abstractify(x).dtype) and _carries_derivative(x) for x in flat)
                 if _symbolic(owner) else None)

    def flat_fwd(*primals):
        flat_out, out_tree, flat_res, res_tree = _run_fwd(owner, nondiff, in_tree, primals, owner.__name__,
                                                          perturbed)
        trees.append((out_tree, res_tree))
        return flat_out + flat_res

    closed, _ = trace_to_ir(flat_fwd, [abstractify(x) for x in flat], name=owner.__name__, known_values=flat,
                            **_rule_trace_options(flat))
    _check_no_differentiated_closure(closed.consts, f"kiln.custom_vjp function {owner.__name__}")
    fwd = call_body(closed)
    out_tree, res_tree = trees[0]
    body = ClosedIR(eliminate_dead_code(IR([], fwd.ir.invars, fwd.ir.eqns, fwd.ir.outvars[:out_tree.num_leaves])))
    return body, closed.consts, _Call(owner, nondiff, in_tree, out_tree, traced_rule=fwd, res_tree=res_tree,
                                      traced_in=perturbed)


def _signature(owner) -> tuple[inspect.Signature | None, int | None]:
    """``owner.fun``'s signature and, when it has only plain positional parameters without defaults, their
    count (a call with exactly that many positional arguments needs no binding). Computed once per owner:
    inspect.signature costs microseconds, and custom functions (relu) are called on hot paths."""
    cached = owner.__dict__.get("_signature_cache")
    if cached is None:
        try:
            signature = inspect.signature(owner.fun)
        except (TypeError, ValueError):  # a builtin or callable without a signature: take the call as it is
            signature = None
        params = () if signature is None else signature.parameters.values()
        plain = signature is not None and all(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in params)
        cached = owner.__dict__["_signature_cache"] = (signature, len(signature.parameters) if plain else None)
    return cached


def _positional(owner, name: str, kind: str, args: tuple, kwargs: dict) -> tuple:
    """The call's arguments as one positional tuple, defaults filled in (as JAX does), so that keyword
    arguments and defaulted parameters (``nondiff_argnums`` among them) reach the rules by position."""
    signature, plain_arity = _signature(owner)
    if not kwargs and len(args) == plain_arity:
        return tuple(args)
    if signature is None:
        if kwargs:
            raise TypeError(f"kiln.{kind} function {name} has no inspectable signature, so it takes positional "
                            f"arguments only; got keyword(s) {', '.join(kwargs)}")
        return tuple(args)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"kiln.{kind} function {name}: the arguments do not fit its signature {signature}: "
                        f"{e}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"kiln.{kind} function {name}: keyword-only argument(s) {', '.join(bound.kwargs)} cannot be "
                        f"passed by position to the derivative rules; make them positional parameters")
    return tuple(bound.args)


_rule_tracers = {custom_jvp_call_p: _trace_jvp_rule, custom_vjp_call_p: _trace_fwd}


def _check_nondiff_not_differentiated(name: str, nondiff: list, nondiff_argnums: tuple[int, ...]) -> None:
    """custom_vjp's bwd gives no cotangent for a non-differentiable argument: one that carries a derivative
    raises JAX's error type (rather than the closure check's, which would name no argument)."""
    for i, arg in zip(nondiff_argnums, nondiff):
        if any(isinstance(x, Tracer) and x.builder.carries_derivative(x) for x in tree_util.tree_leaves(arg)):
            raise UnexpectedTracerError(
                f"kiln.custom_vjp function {name}: argument {i} (in nondiff_argnums) is a traced value that is being "
                "differentiated. Non-differentiable arguments of a custom_vjp function must not be traced arrays "
                "(JAX raises UnexpectedTracerError too): nondiff_argnums is for values such as functions or "
                "strings; pass arrays as ordinary arguments (bwd may return None for their cotangent).")


def _call_custom(owner, prim: Primitive, kind: str, missing: str | None, args: tuple, kwargs: dict):
    """Call a custom-derivative function: run it plainly outside any trace, else record one equation."""
    name = owner.__name__
    args = _positional(owner, name, kind, args, kwargs)
    if missing is not None:
        raise MissingRuleError(f"kiln.{kind} function {name} " + missing.format(name=name))
    nondiff_argnums = getattr(owner, "nondiff_argnums", ())
    if nondiff_argnums and any(not 0 <= i < len(args) for i in nondiff_argnums):
        raise ValueError(f"kiln.{kind} function {name}: nondiff_argnums={owner.nondiff_argnums} is out of range for "
                         f"a call with {len(args)} argument(s)")
    if current_builder() is None:
        return owner.fun(*args)  # no transformation is active: just run it
    nondiff, diff = _split_nondiff(args, owner.nondiff_argnums)
    if prim is custom_jvp_call_p and nondiff:
        # A traced array among custom_jvp's non-differentiable arguments is a constant to the derivative, as
        # JAX's stop_gradient of them: the rule gets no tangent for it (custom_vjp raises instead, as JAX).
        nondiff = [tree_util.tree_map(lambda x: stop_gradient(x) if isinstance(x, Tracer) else x, a)
                   for a in nondiff]
    elif prim is custom_vjp_call_p and nondiff:
        _check_nondiff_not_differentiated(name, nondiff, owner.nondiff_argnums)
    flat, in_tree = tree_util.tree_flatten(tuple(diff))
    trace = _trace_body
    trace_rule = _rule_tracers.get(prim)  # none for custom_vmap: it is differentiated through its body
    if trace_rule is not None and any(_carries_derivative(x) for x in flat):
        # Differentiated (by the grad/vjp/jvp tracing this function or an enclosing one): as JAX, run only the
        # rule, never the function (it may not even run: "primal only via the rule").
        trace = trace_rule
    body, consts, call = trace(owner, nondiff, flat, in_tree)
    if trace_rule is not None and trace is _trace_body:
        # Not differentiated through its arguments, but perhaps through a value it closes over: its rule would get
        # no tangent for that value (the rule-traced calls check this when tracing the rule).
        _check_no_differentiated_closure(consts, f"kiln.{kind} function {name}")
    outs = prim.bind(*consts, *flat, body=body, rule=call, name=name)
    return tree_util.tree_unflatten(call.out_tree, outs)


class custom_jvp:
    """A function with a user-defined JVP (forward-mode derivative), as ``jax.custom_jvp``.

    >>> @kiln.custom_jvp
    ... def log1pexp(x):
    ...     return knp.log1p(knp.exp(x))
    >>> @log1pexp.defjvp
    ... def log1pexp_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return log1pexp(x), t * kiln.nn.sigmoid(x)
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set the JVP rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``. With ``symbolic_zeros``, the
        tangent of an input that is not differentiated reaches the rule as a ``SymbolicZero`` (not an array), and
        the rule may return one for a zero output tangent."""
        self.jvp = jvp
        self.symbolic_zeros = bool(symbolic_zeros)
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument: ``jvps[i](tangent_i, primal_out, *primals) -> tangent contribution``."""
        def jvp(primals, tangents):
            out = self(*primals)
            total = None
            for rule, t in zip(jvps, tangents):
                if rule is None:
                    continue
                contrib = rule(t, out, *primals)
                total = contrib if total is None else tree_util.tree_map(lambda a, b: a + b, total, contrib)
            if total is None:
                total = tree_util.tree_map(lambda o: o * 0, out)
            return out, total
        self.jvp = jvp
        self.symbolic_zeros = False  # (JAX's defjvps calls defjvp so)

    def __call__(self, *args, **kwargs):
        missing = "has no JVP rule: call {name}.defjvp(rule) first" if self.jvp is None else None
        return _call_custom(self, custom_jvp_call_p, "custom_jvp", missing, args, kwargs)


def _check_like(where: str, got: Any, expected: Sequence[ShapedArray], tree_got, tree_expected,
                tangents: bool = False) -> None:
    if tree_got != tree_expected:
        raise CustomDerivativeError(f"{where}: returned a value of structure {tree_got}, expected structure "
                                    f"{tree_expected}")
    for i, (g, e) in enumerate(zip(got, expected)):
        if isinstance(g, Zero):  # a SymbolicZero the rule returned
            if not fits(g, e):
                raise CustomDerivativeError(f"{where}: output {i} is a SymbolicZero of type {g.aval.str_short()}, "
                                            f"but the tangent of the output {e.str_short()} is "
                                            f"{tangent_aval(e).str_short()}")
            continue
        if g is None:
            continue
        # (float0 zeros, an integer output's tangent, are no kiln array)
        shape = g.shape if isinstance(g, np.ndarray) and g.dtype == float0 else abstractify(g).shape
        if shape != e.shape:
            raise CustomDerivativeError(f"{where}: output {i} has shape {shape}, expected {e.shape}")
        if tangents:
            _check_tangent_dtype(where, i, g, e)


def _check_tangent_dtype(where: str, i: int, g: Any, e: ShapedArray) -> None:
    """A tangent of an inexact output must have the output's dtype (as JAX's check); a weak-typed Python scalar
    (a literal 0.0) adapts, and an integer output's tangent (float0 or ignored) is not checked."""
    want = tangent_aval(e).dtype
    got = abstractify(g)
    if dtypes.is_inexact(want) and not got.weak_type and got.dtype != want:
        raise CustomDerivativeError(f"{where}: output {i} has dtype {got.dtype.name}, but the tangent of an output "
                                    f"of type {e.str_short()} must be {want.name}; convert it with "
                                    f".astype({want.name!r})")


def _run_jvp(owner, nondiff: list, in_tree, primals: list, tangents: list, name: str):
    """The user's JVP function on flat primals and tangents: ``(flat outputs, their tree, flat tangent outputs,
    their tree)``. A zero tangent (Zero) reaches the rule as a SymbolicZero with symbolic zeros, else as zeros; a
    SymbolicZero the rule returns is a Zero among the tangent outputs."""
    symbolic = _symbolic(owner)
    p = tree_util.tree_unflatten(in_tree, primals)
    t = tree_util.tree_unflatten(in_tree, [to_rule(x, symbolic) for x in tangents])
    res = owner.jvp(*nondiff, p, t)
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise CustomDerivativeError(f"kiln.custom_jvp rule of {name} must return a pair (primal_out, "
                                    f"tangent_out), got {type(res).__name__}")
    out, tout = res
    flat_t, t_tree = tree_util.tree_flatten(tout)
    return (*tree_util.tree_flatten(out), [from_rule(x) for x in flat_t], t_tree)


def _custom_jvp_rule(primals, tangents, *, body: ClosedIR, rule: _Call, name: str):
    n_consts = len(primals) - rule.in_tree.num_leaves
    # User code sees arrays (or tracers), never IR literals.
    primals = [materialize(x) for x in primals]
    tangents = tangents[n_consts:]  # (the constants' are zero: see _check_no_differentiated_closure)
    if rule.traced_rule is not None and _traced_rule_serves(rule, [not isinstance(t, Zero) for t in tangents]):
        # The call was recorded from its rule: evaluate it, the user's rule ran then.
        outs = eval_ir(rule.traced_rule.ir, [], primals + [instantiate(t) for t, takes in
                                                          zip(tangents, rule.traced_in) if takes])
        n_out = len(body.out_avals)
        touts = iter(outs[n_out:])
        return outs[:n_out], [next(touts) if nz else Zero(tangent_aval(a))
                              for a, nz in zip(body.out_avals, rule.traced_out)]
    flat_out, out_tree, flat_t, t_tree = _run_jvp(rule.owner, rule.nondiff, rule.in_tree, primals[n_consts:],
                                                  tangents, name)
    _check_like(f"kiln.custom_jvp rule of {name} (primal output)", flat_out, body.out_avals, out_tree, rule.out_tree)
    _check_like(f"kiln.custom_jvp rule of {name} (tangent output)", flat_t, body.out_avals, t_tree, rule.out_tree,
                tangents=True)
    return flat_out, flat_t


jvp_rules[custom_jvp_call_p] = _custom_jvp_rule


class custom_vjp:
    """A function with a user-defined VJP (reverse-mode derivative), as ``jax.custom_vjp``.

    ``f.defvjp(fwd, bwd)``: ``fwd(*args) -> (out, residuals)``, ``bwd(residuals, ct) -> tuple`` of one
    cotangent per (differentiable) argument. Forward mode (``jvp``, ``jacfwd``) is not available for
    such functions, as in JAX.
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        """Set the rules. With ``symbolic_zeros``, ``fwd`` gets each argument leaf as a ``CustomVJPPrimal``
        (``.value``, and ``.perturbed``: whether it is differentiated), ``bwd`` gets a ``SymbolicZero`` for the
        cotangent of an output that does not reach the differentiated result, and may return one (or None) for
        a zero cotangent. ``optimize_remat`` (JAX's memory optimisation of ``fwd``) is accepted and changes no
        value: kiln runs ``fwd`` once and keeps its residuals."""
        if symbolic_zeros and optimize_remat:
            raise SymbolicZerosRematError(
                f"kiln.custom_vjp function {self.__name__}: defvjp(..., symbolic_zeros=True, optimize_remat=True) is "
                "not supported, as in JAX (remat optimization for custom_vjp does not support symbolic zeros): "
                "drop one of the two")
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = bool(symbolic_zeros)

    def __call__(self, *args, **kwargs):
        missing = "has no VJP rule: call {name}.defvjp(fwd, bwd) first" if self.fwd is None else None
        if self.fwd is not None and any(isinstance(a, refs.Ref) for a in args):
            return _call_with_refs(self, args, kwargs)
        return _call_custom(self, custom_vjp_call_p, "custom_vjp", missing, args, kwargs)


def _call_with_refs(owner: custom_vjp, args: tuple, kwargs: dict) -> Any:
    """A call of ``owner`` with mutable array references among its positional arguments (JAX's "plumbing"
    refs: ``fwd`` may return them among its residuals, so that ``bwd`` writes to them). The refs are closed over
    by a custom_vjp of the other arguments, whose residuals carry the refs' places, not the refs."""
    name = owner.__name__
    if owner.nondiff_argnums:
        raise refs.RefError(f"kiln.custom_vjp function {name}: Ref arguments together with nondiff_argnums are not "
                            "supported; pass the ref without nondiff_argnums")
    at = [i for i, a in enumerate(args) if isinstance(a, refs.Ref)]
    taken = [args[i] for i in at]

    def full(others: Sequence[Any]) -> list:
        merged = list(others)
        for i, ref in zip(at, taken):
            merged.insert(i, ref)
        return merged

    places: dict[str, Any] = {}  # the residuals' tree and which of their leaves are refs (set by fwd)

    def fwd(*others, **kw):
        out, res = owner.fwd(*full(others), **kw)
        leaves, places["tree"] = tree_util.tree_flatten(res)
        # The ref arguments among the residuals go to bwd as they are; any other ref stays a residual, which
        # _run_fwd refuses (as JAX: only ref arguments may be shared with bwd).
        places["refs"] = {j: leaf for j, leaf in enumerate(leaves) if any(leaf is r for r in taken)}
        return out, [leaf for j, leaf in enumerate(leaves) if j not in places["refs"]]

    def bwd(res, ct):
        it = iter(res)
        leaves = [places["refs"][j] if j in places["refs"] else next(it) for j in range(places["tree"].num_leaves)]
        cts = owner.bwd(tree_util.tree_unflatten(places["tree"], leaves), ct)
        cts = tuple(cts) if isinstance(cts, (tuple, list)) else (cts,)
        if len(cts) != len(args):
            raise CustomDerivativeError(f"kiln.custom_vjp bwd of {name} must return one cotangent per argument "
                                        f"({len(args)}), got {len(cts)}")
        if any(cts[i] is not None for i in at):
            raise CustomDerivativeError(f"kiln.custom_vjp bwd of {name} must return None as the cotangent of a Ref "
                                        "argument (refs are not differentiated)")
        return tuple(c for i, c in enumerate(cts) if i not in at)

    inner = custom_vjp(lambda *others, **kw: owner.fun(*full(others), **kw))
    inner.__name__ = name
    inner.defvjp(fwd, bwd, symbolic_zeros=owner.symbolic_zeros)
    return inner(*[a for i, a in enumerate(args) if i not in at], **kwargs)


class _Lin:
    """Parameters of a custom_vjp_lin equation: the user's bwd and the trees it works with."""

    def __init__(self, call: _Call, res_tree, name: str, in_avals, kept: tuple[bool, ...] | None = None):
        self.call, self.res_tree, self.name, self.in_avals = call, res_tree, name, in_avals
        # Per argument, whether its tangent is an input of the equation: an integer or boolean argument's
        # tangent is a float0 zero, which no equation takes (its cotangent is dropped, as in JAX).
        self.kept = tuple(True for _ in in_avals) if kept is None else kept


def _run_fwd(owner, nondiff: list, in_tree, primals: Sequence, name: str, perturbed: Sequence[bool] | None = None):
    """The user's forward function on flat primals: ``(flat outputs, their tree, flat residuals, their tree)``.
    With symbolic zeros each primal reaches it as a CustomVJPPrimal, perturbed as ``perturbed`` says (None: every
    inexact one)."""
    symbolic = _symbolic(owner)
    if symbolic:
        if perturbed is None:
            perturbed = [is_differentiable_dtype(abstractify(x).dtype) for x in primals]
        primals = [CustomVJPPrimal(x, bool(d)) for x, d in zip(primals, perturbed)]
    p = tree_util.tree_unflatten(in_tree, list(primals))
    res = owner.fwd(*merge_nondiff(nondiff, p, owner.nondiff_argnums))  # as the primal: JAX's convention
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise CustomDerivativeError(f"kiln.custom_vjp fwd of {name} must return a pair (output, residuals), "
                                    f"got {type(res).__name__}")
    out, residuals = res
    if any(isinstance(leaf, refs.Ref) for leaf in tree_util.tree_leaves(residuals)):
        # (the ref arguments that fwd may share with bwd were taken out by _call_with_refs)
        raise refs.RefError(f"kiln.custom_vjp fwd of {name} returned a Ref among its residuals that is not one of its "
                            "arguments; as in JAX, only ref arguments may be shared with bwd")
    if symbolic:
        for what, tree in (("output", out), ("residuals", residuals)):
            i = find_primal_wrapper(tree)
            if i is not None:
                raise CustomDerivativeError(
                    f"kiln.custom_vjp fwd of {name} returned a CustomVJPPrimal as leaf {i} of its {what}: with "
                    "symbolic_zeros=True fwd gets each argument as CustomVJPPrimal(value, perturbed); use its "
                    ".value (custom_vjp_primal_tree_values(args) unwraps a whole tree)")
    return (*tree_util.tree_flatten(out), *tree_util.tree_flatten(residuals))


def _fwd_outputs(call: _Call, primals: Sequence, out_avals: Sequence[ShapedArray] | None, name: str,
                 perturbed: Sequence[bool] | None = None):
    """A custom_vjp call's forward pass on the equation's inputs (its trace's constants first): ``(flat outputs,
    flat residuals, their tree)``. ``out_avals``: what the outputs must match (None: not checked). ``perturbed``:
    per input after the constants, whether it is differentiated (None: every inexact one)."""
    primals = [materialize(x) for x in primals]  # user code sees arrays (or tracers), never IR literals
    n_out = call.out_tree.num_leaves
    if call.traced_rule is not None and (perturbed is None or _traced_rule_serves(call, perturbed)):
        # The call was recorded from fwd: evaluate it, the user's fwd ran then.
        outs = eval_ir(call.traced_rule.ir, [], primals)
        return outs[:n_out], outs[n_out:], call.res_tree
    n_consts = len(primals) - call.in_tree.num_leaves
    flat_out, out_tree, flat_res, res_tree = _run_fwd(call.owner, call.nondiff, call.in_tree, primals[n_consts:],
                                                      name, perturbed)
    if out_avals is not None:
        _check_like(f"kiln.custom_vjp fwd of {name}", flat_out, out_avals, out_tree, call.out_tree)
    return flat_out, flat_res, res_tree


def _custom_vjp_rule(primals, tangents, *, body: ClosedIR, rule: _Call, name: str):
    n_consts = len(primals) - rule.in_tree.num_leaves
    in_avals = tuple(abstractify(x) for x in primals[n_consts:])
    kept = tuple(is_differentiable_dtype(a.dtype) for a in in_avals)
    perturbed = [k and not isinstance(t, Zero) for t, k in zip(tangents[n_consts:], kept)]
    flat_out, flat_res, res_tree = _fwd_outputs(rule, primals, body.out_avals, name, perturbed)
    diff_tangents = [instantiate(t) for t, k in zip(tangents[n_consts:], kept) if k]
    lin = _Lin(rule, res_tree, name, in_avals, kept)
    # The outputs' tangents, of the outputs' types (weak ones too): bwd gets a zero cotangent of an unused
    # output of that type, as in JAX.
    touts = custom_vjp_lin_p.bind(*flat_res, *diff_tangents, rule=lin, num_res=len(flat_res),
                                  out_avals=tuple(body.out_avals))
    return flat_out, touts


jvp_rules[custom_vjp_call_p] = _custom_vjp_rule


def _custom_vjp_lin_transpose(cts, *args, rule: _Lin, num_res: int, out_avals: tuple):
    res = tree_util.tree_unflatten(rule.res_tree, [materialize(x) for x in args[:num_res]])
    call = rule.call
    # A zero cotangent reaches bwd as a SymbolicZero (of the output's tangent type) with symbolic zeros.
    symbolic = _symbolic(call.owner)
    cts = [Zero(tangent_aval(c.aval)) if symbolic and isinstance(c, Zero) else c for c in cts]
    ct = tree_util.tree_unflatten(call.out_tree, [to_rule(c, symbolic) for c in cts])
    in_cts = call.owner.bwd(*call.nondiff, res, ct)
    name = rule.name
    if not isinstance(in_cts, (tuple, list)):
        raise CustomDerivativeError(f"kiln.custom_vjp bwd of {name} must return a tuple with one cotangent per "
                                    f"differentiable argument, got {type(in_cts).__name__}")
    n_args = len(call.in_tree.children())
    if len(in_cts) != n_args:
        raise CustomDerivativeError(f"kiln.custom_vjp bwd of {name} returned {len(in_cts)} cotangent(s), but "
                                    f"the function has {n_args} differentiable argument(s)")
    # None stands for a zero cotangent of a whole argument.
    in_cts = [tree.unflatten([None] * tree.num_leaves) if c is None else c
              for c, tree in zip(in_cts, call.in_tree.children())]
    flat_ct, ct_tree = tree_util.tree_flatten(tuple(in_cts), is_leaf=lambda x: x is None)
    if ct_tree != call.in_tree:
        raise CustomDerivativeError(f"kiln.custom_vjp bwd of {name} returned cotangents of structure {ct_tree}, "
                                    f"expected the structure of the arguments {call.in_tree}")
    for i, (c, a, k) in enumerate(zip(flat_ct, rule.in_avals, rule.kept)):
        if c is None or not k:  # (an integer argument's cotangent, None or float0 zeros, is dropped)
            continue
        if type(c) is SymbolicZero:  # a zero cotangent, as None
            if not fits(c, a):
                raise SymbolicZeroMismatchError(
                    f"kiln.custom_vjp bwd of {name}: cotangent {i} is a SymbolicZero of type {c.aval.str_short()}, "
                    f"but the argument is {a.str_short()} (its cotangent: {tangent_aval(a).str_short()}); return "
                    "None for a zero cotangent, or SymbolicZero.from_primal_value(argument)")
            continue
        ca = abstractify(c)
        if ca.shape != a.shape:
            raise CustomDerivativeError(f"kiln.custom_vjp bwd of {name}: cotangent {i} has shape {ca.shape}, but "
                                        f"the argument has shape {a.shape}")
    return [None] * num_res + [None if type(c) is SymbolicZero else c for c, k in zip(flat_ct, rule.kept) if k]


transpose_rules[custom_vjp_lin_p] = _custom_vjp_lin_transpose


def _custom_vjp_lin_jvp(primals, tangents, **params):
    raise TypeError("kiln: forward-mode differentiation (jvp, jacfwd, hessian's outer jacfwd of a "
                    "function already differentiated) of a custom_vjp function is not supported, as in JAX; "
                    "use reverse mode (grad, vjp, jacrev), or define the function with kiln.custom_jvp")


jvp_rules[custom_vjp_lin_p] = _custom_vjp_lin_jvp


__all__ = ["custom_jvp", "custom_vjp", "CustomDerivativeError", "SymbolicZeroMismatchError", "SymbolicZerosRematError",
           "is_undefined"]
