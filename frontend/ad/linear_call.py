"""``linear_call``: a call of a function that is linear in some of its inputs, with a user-given transpose
(``jax.custom_derivatives.linear_call``).

``linear_call(fun, fun_transpose, residual_args, linear_args)`` is ``fun(residual_args, linear_args)``;
``fun`` is linear in ``linear_args``, and ``fun_transpose(residual_args, cotangents)`` is its transpose. Inside
a trace it is one ``linear_call`` equation:

- operands: the values ``fun`` and ``fun_transpose`` close over (``num_consts``), the leaves of
  ``residual_args`` (``num_res``), then those of ``linear_args``;
- ``callee``: ``fun`` traced over all the operands (lowering inlines it); ``transpose``: ``fun_transpose``
  traced over the same constants and residuals, then the output cotangents.

Both functions are traced when the call is recorded, so the values they close over (intermediate values of
the function being differentiated, tracers of an enclosing jit or vmap) are operands, which every
transformation sees, rather than tracers that may be dead by the time reverse mode runs. An error of the
transpose's trace (a wrong structure, say) is raised only when the call is transposed, as in JAX, which traces
the transpose then; so is a transpose that calls itself back through another ``linear_call`` (a transpose
defined by calling the forward function): its trace is deferred to the transposition.

Rules: the JVP applies the call to the tangents of ``linear_args`` (a tangent of a residual, or of a value
``fun`` closes over, raises: JAX asserts there); the transpose is another ``linear_call`` with the two IRs
swapped, so the transpose of the transpose is ``fun`` again; batching batches both IRs (JAX has no batching
rule for ``linear_call``).
"""
from __future__ import annotations

import contextvars
import functools
from typing import Any, Callable, Sequence

from .. import lax
from ..batching.core import batch_closed, batch_rules, move_dim
from ..core import tree_util
from ..core.avals import ShapedArray
from ..core.ir import IR, ClosedIR, Var
from ..core.primitive import Primitive
from ..core.source_info import fun_name
from ..core.tracing import abstractify, current_builder, eval_ir, materialize, trace_to_ir
from .custom import CustomDerivativeError
from .jvp import jvp_rules
from .tangents import Zero, tangent_aval, zeros_like_aval
from .transpose import is_undefined, transpose_rules

_WHERE = "kiln.custom_derivatives.linear_call"


class LinearCallError(CustomDerivativeError, ValueError):
    """A misuse of ``linear_call``: a transpose of the wrong structure, shape or dtype, or a derivative taken
    with respect to a residual (a ``TypeError`` and a ``ValueError``: JAX raises either, by case)."""


class _TransposeSpec:
    """What tracing ``fun_transpose`` needs: it runs on (residuals, cotangents of fun's outputs) and must
    return values like ``linear_args``."""

    def __init__(self, fun_transpose: Callable, res_tree, out_tree, lin_tree, res_avals: list[ShapedArray],
                 out_avals: list[ShapedArray], lin_avals: list[ShapedArray]):
        self.fun_transpose = fun_transpose
        self.res_tree, self.out_tree, self.lin_tree = res_tree, out_tree, lin_tree
        self.res_avals, self.out_avals, self.lin_avals = res_avals, out_avals, lin_avals
        self.name = fun_name(fun_transpose)

    def trace(self, known_res: Sequence[Any] | None) -> ClosedIR:
        """``fun_transpose`` traced over (residual leaves, cotangent leaves); its closure values are the IR's
        constants. ``known_res``: the residuals' values, where known (for Python control flow on them)."""
        token = _tracing_transposes.set(_tracing_transposes.get() | {_identity(self.fun_transpose)})
        try:
            known = None if known_res is None else list(known_res) + [None] * len(self.out_avals)
            closed, _ = _trace_pair(self.fun_transpose, f"fun_transpose {self.name}", self.res_tree, self.out_tree,
                                    self.res_avals + self.out_avals, known, self._check_output)
        finally:
            _tracing_transposes.reset(token)
        return closed

    def _check_output(self, leaves: list, tree) -> list:
        """The transpose's outputs, checked against ``linear_args``; a weakly typed one (a Python scalar) takes
        the dtype of its linear input."""
        where = f"{_WHERE}: fun_transpose {self.name}"
        if tree != self.lin_tree:
            raise LinearCallError(f"{where} must return a value of the structure of linear_args, {self.lin_tree}; "
                                  f"it returned one of structure {tree}")
        out = []
        for i, (leaf, want) in enumerate(zip(leaves, self.lin_avals)):
            got = abstractify(leaf)
            if got.shape != want.shape:
                raise LinearCallError(f"{where}: output leaf {i} has shape {got.shape}, but linear_args leaf {i} "
                                      f"is {want.str_short()}: the transpose must return one cotangent of the "
                                      "shape of each linear input")
            if got.dtype != want.dtype:
                if not got.weak_type:
                    raise LinearCallError(f"{where}: output leaf {i} is {got.str_short()}, but linear_args leaf "
                                          f"{i} is {want.str_short()}: return it as {want.dtype.name} (e.g. "
                                          f"ct.astype({want.dtype.name!r}))")
                leaf = lax.convert_element_type(leaf, want.dtype)
            out.append(leaf)
        return out


class _BatchedTranspose:
    """A deferred transpose of a batched ``linear_call``: the deferred one, traced then batched as the equation
    is (residuals where their batch axes are, cotangents and results along axis 0). Batching does not trace a
    deferred transpose: that trace could defer another one inside it, without end."""

    def __init__(self, inner, res_dims: list, ctx, n_out: int, n_lin: int):
        self.inner, self.res_dims, self.ctx, self.n_out, self.n_lin = inner, res_dims, ctx, n_out, n_lin

    def trace(self, known_res: Sequence[Any] | None) -> ClosedIR:
        unbatched = self.inner.trace(None)
        batched, _ = batch_closed(unbatched, self.res_dims + [0] * self.n_out, self.ctx,
                                  out_dims_wanted=[0] * self.n_lin)
        return batched


class _Transpose:
    """The ``transpose`` parameter of a ``linear_call`` equation: the transpose traced over the equation's
    operands with the cotangents in place of the linear inputs (``ir``), or, when its trace was deferred, what
    traces it (``deferred``: a _TransposeSpec or a _BatchedTranspose). Hashed by identity, as equation
    parameters holding IRs are."""

    def __init__(self, name: str, fun_name_: str, ir: ClosedIR | None = None, deferred: Any = None):
        self.name, self.fun_name, self.ir, self.deferred = name, fun_name_, ir, deferred

    def swapped(self, callee: ClosedIR) -> _Transpose:
        """The parameter of this equation's transpose, whose own transpose is ``callee``."""
        return _Transpose(self.fun_name, self.name, ir=callee)

    def __repr__(self) -> str:  # how the IR printer shows it: the function's name (JAX shows transpose_thunk)
        return self.name


# The transposes being traced right now (by their code): a linear_call recorded while its own transpose is
# being traced defers the trace of that transpose, which would otherwise recurse without end.
_tracing_transposes: contextvars.ContextVar[frozenset] = contextvars.ContextVar("kiln_linear_call_transposes",
                                                                                default=frozenset())


def _identity(fn: Callable) -> Any:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__code__", fn)


def _abstract_eval(*avals: ShapedArray, callee: ClosedIR, transpose: _Transpose, num_consts: int, num_res: int):
    expected = callee.in_avals
    if len(avals) != len(expected) or any(a.shape != e.shape or a.dtype != e.dtype
                                          for a, e in zip(avals, expected)):
        got = ", ".join(a.str_short() for a in avals)
        want = ", ".join(e.str_short() for e in expected)
        raise TypeError(f"{_WHERE}: internal error: operands ({got}) do not fit the traced function ({want})")
    return callee.out_avals


# ``callee`` is the body lowering inlines.
linear_call_p = Primitive("linear_call", _abstract_eval, multiple_results=True, inline_param="callee")


def _check_leaves(leaves: Sequence[Any], what: str) -> None:
    for i, x in enumerate(leaves):
        try:
            abstractify(x)
        except TypeError:
            raise TypeError(f"{_WHERE}: {what} leaf {i} is a {type(x).__name__} ({x!r:.40}), not an array; "
                            "residual_args, linear_args and the values fun and fun_transpose return must be "
                            "pytrees of arrays or scalars") from None


def _trace_pair(fn: Callable, what: str, first_tree, second_tree, avals: list[ShapedArray],
                known: list | None, check_output: Callable[[list, Any], list] | None = None):
    """``fn(first, second)`` traced over the leaves of both arguments: ``(ClosedIR, output tree)``."""
    n_first = first_tree.num_leaves
    trees = []

    def flat_fn(*xs):
        out = fn(tree_util.tree_unflatten(first_tree, list(xs[:n_first])),
                 tree_util.tree_unflatten(second_tree, list(xs[n_first:])))
        leaves, tree = tree_util.tree_flatten(out)
        _check_leaves(leaves, f"the output of {what}:")
        trees.append(tree)
        return check_output(leaves, tree) if check_output is not None else leaves

    closed, _ = trace_to_ir(flat_fn, avals, name=what.split(" ")[-1], known_values=known)
    return closed, trees[0]


def _fresh(avals: Sequence[ShapedArray]) -> list[Var]:
    return [Var(a) for a in avals]


def _join(a: ClosedIR, b: ClosedIR) -> tuple[ClosedIR, ClosedIR, list]:
    """Two IRs over the same leading operands: both constants (``a``'s then ``b``'s), then each one's own inputs;
    neither has constants left. Returns them and the constants."""
    a_consts, b_consts = [v.aval for v in a.ir.constvars], [v.aval for v in b.ir.constvars]
    new_a = IR([], a.ir.constvars + _fresh(b_consts) + a.ir.invars, a.ir.eqns, a.ir.outvars)
    new_b = IR([], _fresh(a_consts) + b.ir.constvars + b.ir.invars, b.ir.eqns, b.ir.outvars)
    return ClosedIR(new_a), ClosedIR(new_b), list(a.consts) + list(b.consts)


def linear_call(fun: Callable, fun_transpose: Callable, residual_args: Any, linear_args: Any) -> Any:
    """Call a function linear in ``linear_args``, with ``fun_transpose`` as its transpose.

    ``fun(residual_args, linear_args)`` must be linear in ``linear_args``; ``fun_transpose(residual_args,
    cotangents)`` takes cotangents like ``fun``'s output and returns values like ``linear_args``: the transpose
    of ``fun`` in its linear inputs. Reverse mode (``grad``, ``vjp``, ``linear_transpose``) uses
    ``fun_transpose`` rather than transposing ``fun``; the transpose of the call is a ``linear_call`` of
    ``fun_transpose`` whose transpose is ``fun``. Forward mode applies ``fun`` to the tangents of
    ``linear_args``; differentiating with respect to ``residual_args`` raises.

    >>> def div_add(x, denom):
    ...     return x + linear_call(lambda r, x: x / r, lambda r, t: t / r, denom, x)
    >>> kiln.linear_transpose(functools.partial(div_add, denom=3.0), 1.0)(18.0)  # 18 + 18 / 3
    (Array(24., dtype=float32),)

    Parameters
    ----------
    fun : callable
        ``fun(residual_args, linear_args) -> output``, linear in ``linear_args``.
    fun_transpose : callable
        ``fun_transpose(residual_args, output_cotangents) -> linear cotangents``, linear in its second argument.
    residual_args : pytree of arrays
        Inputs in which ``fun`` need not be linear; not differentiable.
    linear_args : pytree of arrays
        Inputs in which ``fun`` is linear.

    Returns
    -------
    The value of ``fun(residual_args, linear_args)``.
    """
    for f, what in ((fun, "fun"), (fun_transpose, "fun_transpose")):
        if not callable(f):
            raise TypeError(f"{_WHERE}: {what} must be callable, got {type(f).__name__} ({f!r:.40})")
    res_flat, res_tree = tree_util.tree_flatten(residual_args)
    lin_flat, lin_tree = tree_util.tree_flatten(linear_args)
    _check_leaves(res_flat, "residual_args")
    _check_leaves(lin_flat, "linear_args")
    res_avals = [abstractify(x) for x in res_flat]
    lin_avals = [abstractify(x) for x in lin_flat]
    name = fun_name(fun)
    f_closed, out_tree = _trace_pair(fun, f"fun {name}", res_tree, lin_tree, res_avals + lin_avals,
                                     res_flat + lin_flat)
    if current_builder() is None:
        # Nothing traces, so nothing can differentiate or transpose this call: run the traced function, one
        # operation at a time (JAX's impl evaluates the traced function too).
        return tree_util.tree_unflatten(out_tree, eval_ir(f_closed.ir, f_closed.consts, res_flat + lin_flat))
    spec = _TransposeSpec(fun_transpose, res_tree, out_tree, lin_tree, res_avals, list(f_closed.out_avals),
                          lin_avals)
    t_closed = None
    if _identity(fun_transpose) not in _tracing_transposes.get():
        try:
            t_closed = spec.trace(res_flat)
        except Exception:  # raised again where the call is transposed (JAX traces the transpose only then)
            t_closed = None
    if t_closed is None:
        callee, consts = _consts_as_inputs(f_closed), list(f_closed.consts)
        transpose = _Transpose(spec.name, name, deferred=spec)
    else:
        callee, t_ir, consts = _join(f_closed, t_closed)
        transpose = _Transpose(spec.name, name, ir=t_ir)
    outs = linear_call_p.bind(*consts, *res_flat, *lin_flat, callee=callee, transpose=transpose,
                              num_consts=len(consts), num_res=len(res_flat))
    return tree_util.tree_unflatten(out_tree, outs)


def _consts_as_inputs(closed: ClosedIR) -> ClosedIR:
    ir = closed.ir
    return ClosedIR(IR([], ir.constvars + ir.invars, ir.eqns, ir.outvars))


def _resolved(args: Sequence[Any], params: dict) -> tuple[list, dict]:
    """The equation's operands and parameters with its transpose traced (a deferred trace runs now: its
    constants become further leading operands)."""
    transpose: _Transpose = params["transpose"]
    if transpose.deferred is None:
        return list(args), params
    num_consts, num_res = params["num_consts"], params["num_res"]
    callee: ClosedIR = params["callee"]
    t_closed = transpose.deferred.trace([materialize(a) for a in args[num_consts:num_consts + num_res]])
    # The transpose reads none of the callee's constants: unused inputs in their places.
    old_consts = _fresh(callee.in_avals[:num_consts])
    t_padded = ClosedIR(IR(t_closed.ir.constvars, old_consts + t_closed.ir.invars, t_closed.ir.eqns,
                           t_closed.ir.outvars), t_closed.consts)
    new_callee, t_ir, consts = _join(ClosedIR(callee.ir), t_padded)
    params = dict(params, callee=new_callee, transpose=_Transpose(transpose.name, transpose.fun_name, ir=t_ir),
                  num_consts=num_consts + len(consts))
    return consts + list(args), params


def _reads(ir: IR) -> set:
    read = {a for eqn in ir.eqns for a in eqn.inputs if isinstance(a, Var)}
    read.update(a for a in ir.outvars if isinstance(a, Var))
    return read


# -- forward mode --------------------------------------------------------------------------------------------

def _linear_call_jvp(primals, tangents, *, callee: ClosedIR, transpose: _Transpose, num_consts: int, num_res: int):
    n_fixed = num_consts + num_res
    read = _reads(callee.ir)
    for i, (t, v) in enumerate(zip(tangents[:n_fixed], callee.ir.invars)):
        if not isinstance(t, Zero) and v in read:
            what = (f"residual_args leaf {i - num_consts}" if i >= num_consts else
                    f"a value that fun {transpose.fun_name} closes over ({v.aval.str_short()})")
            raise LinearCallError(
                f"{_WHERE}: {what} is being differentiated, but linear_call is differentiable only with respect "
                "to linear_args (JAX fails an assertion here). Pass values that carry a derivative in linear_args, "
                "or wrap them in kiln.lax.stop_gradient if they are meant to be constants.")
    params = dict(callee=callee, transpose=transpose, num_consts=num_consts, num_res=num_res)
    outs = linear_call_p.bind(*primals, **params)
    lin_tangents = tangents[n_fixed:]
    if all(isinstance(t, Zero) for t in lin_tangents):
        return outs, [Zero(tangent_aval(a)) for a in callee.out_avals]
    # A zero tangent is a zero of the input's own type (an integer input's float0 tangent as well): fun is linear.
    lin_tangents = [zeros_like_aval(abstractify(p)) if isinstance(t, Zero) else t
                    for t, p in zip(lin_tangents, primals[n_fixed:])]
    touts = linear_call_p.bind(*primals[:n_fixed], *lin_tangents, **params)
    return outs, touts


jvp_rules[linear_call_p] = _linear_call_jvp


# -- reverse mode --------------------------------------------------------------------------------------------

def _linear_call_transpose(cts, *args, **params):
    n_args = len(args)
    args, params = _resolved(args, params)
    callee: ClosedIR = params["callee"]
    transpose: _Transpose = params["transpose"]
    n_fixed = params["num_consts"] + params["num_res"]
    if any(is_undefined(a) for a in args[:n_fixed]):
        raise LinearCallError(
            f"{_WHERE}: the call is transposed with respect to a value it takes among residual_args (or that fun "
            f"{transpose.fun_name} or fun_transpose {transpose.name} closes over); it is linear only in "
            "linear_args: pass that value in linear_args")
    fixed = [materialize(a) for a in args[:n_fixed]]
    cts = [zeros_like_aval(a) if c is None or isinstance(c, Zero) else c for c, a in zip(cts, callee.out_avals)]
    outs = linear_call_p.bind(*fixed, *cts, **dict(params, callee=transpose.ir, transpose=transpose.swapped(callee)))
    lin = args[n_fixed:]
    # (a linear input the backward pass knows, a zero tangent instantiated by the JVP, gets no cotangent)
    return [None] * (n_args - len(lin)) + [o if is_undefined(a) else None for o, a in zip(outs, lin)]


transpose_rules[linear_call_p] = _linear_call_transpose


# -- batching ------------------------------------------------------------------------------------------------

def _linear_call_batch(ctx, args, dims, *, callee: ClosedIR, transpose: _Transpose, num_consts: int,
                       num_res: int):
    n_fixed = num_consts + num_res
    fixed_dims = list(dims[:n_fixed])
    # Every linear input and output batched along axis 0, so that the batched transpose returns cotangents of
    # the batched linear inputs' type.
    lin = [move_dim(a, d, 0, ctx.size) for a, d in zip(args[n_fixed:], dims[n_fixed:])]
    n_lin, n_out = len(lin), len(callee.out_avals)
    batched_callee, _ = batch_closed(callee, fixed_dims + [0] * n_lin, ctx, out_dims_wanted=[0] * n_out)
    if transpose.deferred is not None:
        deferred = _BatchedTranspose(transpose.deferred, fixed_dims[num_consts:], ctx, n_out, n_lin)
        new_callee, consts = _consts_as_inputs(batched_callee), list(batched_callee.consts)
        new_t = _Transpose(transpose.name, transpose.fun_name, deferred=deferred)
    else:
        batched_t, _ = batch_closed(transpose.ir, fixed_dims + [0] * n_out, ctx, out_dims_wanted=[0] * n_lin)
        new_callee, t_ir, consts = _join(batched_callee, batched_t)
        new_t = _Transpose(transpose.name, transpose.fun_name, ir=t_ir)
    outs = linear_call_p.bind(*consts, *args[:n_fixed], *lin, callee=new_callee, transpose=new_t,
                              num_consts=len(consts) + num_consts, num_res=num_res)
    return outs, [0] * n_out


batch_rules[linear_call_p] = _linear_call_batch


__all__ = ["LinearCallError", "linear_call", "linear_call_p"]
