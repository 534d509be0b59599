"""The differentiation API: jvp, linearize, vjp, grad, value_and_grad, jacfwd, jacrev, hessian.

Each one traces the function to kiln IR (with the argument values known, so Python control flow on
concrete values works, as in JAX), then transforms the IR: ``jvp_ir`` for forward mode; JVP, then
partial evaluation into a forward (primal) part and a linear (tangent) part, then transposition of
the linear part for reverse mode.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from ..core import dtypes, tree_util
from ..core import refs as core_refs
from ..core.avals import ShapedArray
from ..core.call import call_p
from ..core.ir import IR, ClosedIR, Var
from ..core.refs import Ref
from ..core.source_info import fun_name as _fun_name
from ..core.tracing import Tracer, abstractify, check_output_leaves, eval_ir, non_array_argument, trace_to_ir
from ..driver import export as _export
from ..driver.array import Array
from ..driver.placement import device_put
from ..lax import api as lax
from . import (  # noqa: F401  (each registers the derivative rules of its family)
    rules_callbacks,
    rules_collectives,
    rules_conv,
    rules_elementwise,
    rules_ffi,
    rules_fft,
    rules_indexing,
    rules_linalg,
    rules_misc,
    rules_reduction,
    rules_sharding,
    rules_sorting,
    rules_special,
    rules_structural,
    rules_windowed,
)
from .custom import custom_vjp as _custom_vjp
from .jvp import jvp_ir, non_differentiable
from .partial_eval import partial_eval
from .tangents import Zero, float0, instantiate, tangent_aval
from .transpose import UndefinedPrimal, backward_pass
from .varying_transpose import backward_pass_typed, typing_in_body
from .vjp_object import VJP, DidntWant, DontWant, GradRef, GradValue, saveable_flags


def _trace_flat(f: Callable, flat_args: list, in_tree, name: str, keeps_calls: bool = True,
                kind: str = "grad", where: str | None = None, has_aux: bool = False) -> tuple[ClosedIR, Any]:
    """Trace ``f`` on the flat arguments; the argument values are known (for Python control flow). With
    ``keeps_calls`` (the IR is to be evaluated right away) kiln.numpy's functions stay calls (see
    ``tracing.calls_kept``); without it they are inlined, as under staging. ``where`` (``"kiln.grad"``: the
    transformation the user called, default ``kiln.<kind>``) names it in the message of an output that is no
    array; ``has_aux``: ``f`` returns ``(output, aux)``."""
    out_tree_box = []

    def flat_fun(*tracers):
        args = tree_util.tree_unflatten(in_tree, list(tracers))
        out = f(*args)
        leaves, tree = tree_util.tree_flatten(out)
        check_output_leaves(where or f"kiln.{kind}", name, out, leaves, has_aux)
        out_tree_box.append(tree)
        return leaves

    avals = [abstractify(a) for a in flat_args]
    closed, _ = trace_to_ir(flat_fun, avals, name=name, known_values=flat_args,
                            tangent_flows=lambda eqn: eqn.prim not in non_differentiable, keeps_calls=keeps_calls,
                            kind=kind)
    return closed, out_tree_box[0]


def _check_arrays(fname: str, flat, what: str = "argument") -> None:
    for x in flat:
        try:
            abstractify(x)
        except TypeError:
            raise TypeError(f"kiln.{fname}: {what} of type {type(x).__name__} ({x!r:.50}) is not an array; "
                            "differentiable arguments must be arrays, scalars or pytrees of them") from None


def _is_zero_tangent(t) -> bool:
    return isinstance(t, Zero) or (isinstance(t, np.ndarray) and t.dtype == float0)


def _external(t, primal):
    """A tangent as the user sees it: zeros materialised (float0 arrays for integer primals)."""
    if isinstance(t, Zero):
        aval = abstractify(primal)
        if not dtypes.is_inexact(aval.dtype):
            return np.zeros(aval.shape, float0)
        return instantiate(t)
    return t


# -- forward mode -----------------------------------------------------------------------------------
def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False):
    """``(fun(*primals), J @ tangents)``: the Jacobian-vector product, in forward mode."""
    return _jvp("jvp", fun, primals, tangents, has_aux)


def _jvp(fname: str, fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool):
    """:func:`jvp`, for the transformation ``fname`` (``"jacfwd"``) that the user called."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("kiln.jvp: primals and tangents must be tuples or lists, got "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise TypeError(f"kiln.jvp: got {len(primals)} primals and {len(tangents)} tangents; they must match")
    flat_p, in_tree = tree_util.tree_flatten(tuple(primals))
    flat_t, t_tree = tree_util.tree_flatten(tuple(tangents))
    if in_tree != t_tree or type(primals) is not type(tangents):  # as JAX: a tuple and a list differ too
        raise TypeError(f"kiln.jvp: primal and tangent structures differ: {tree_util.tree_structure(primals)} and "
                        f"{tree_util.tree_structure(tangents)}")
    _check_arrays("jvp", flat_p)
    for p, t in zip(flat_p, flat_t):
        pa = abstractify(p)
        if _is_zero_tangent(t):
            continue
        ta = abstractify(t)
        if ta.shape != pa.shape:
            raise ValueError(f"kiln.jvp: tangent shape {ta.shape} does not match primal shape {pa.shape}")
        if dtypes.is_inexact(pa.dtype) and ta.dtype != pa.dtype:
            raise TypeError(f"kiln.jvp: tangent dtype {ta.dtype.name} does not match primal dtype {pa.dtype.name}")
    traced_fun = _aux_wrapper(fun, has_aux)
    closed, out_tree = _trace_flat(traced_fun, flat_p, in_tree, _fun_name(fun), kind="jvp",
                                   where=f"kiln.{fname}", has_aux=has_aux)
    nonzero = [dtypes.is_inexact(abstractify(p).dtype) and not _is_zero_tangent(t) for p, t in zip(flat_p, flat_t)]
    new, out_nonzero = jvp_ir(closed, nonzero, known_primals=flat_p)
    outs = eval_ir(new.ir, new.consts, list(flat_p) + [t for t, nz in zip(flat_t, nonzero) if nz])
    n = len(closed.out_avals)
    it = iter(outs[n:])
    touts = [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(closed.out_avals, out_nonzero)]
    touts = [_external(t, p) for t, p in zip(touts, outs[:n])]
    return _split_aux(outs[:n], touts, out_tree, has_aux, getattr(traced_fun, "restore", None))


def _aux_wrapper(fun: Callable, has_aux: bool) -> Callable:
    """``fun`` checked to return ``(output, aux)``. The leaves of ``aux`` that are not traced (Python numbers,
    NumPy arrays, strings) are kept aside, None in their place, and ``wrapped.restore(aux)`` puts them back in
    the evaluated aux: JAX hands them back as they were."""
    if not has_aux:
        return fun
    kept: list = []

    @functools.wraps(fun)
    def wrapped(*args):
        out = _aux_pair(fun, fun(*args))
        leaves, tree = tree_util.tree_flatten(out[1])
        static = {i: leaf for i, leaf in enumerate(leaves) if not isinstance(leaf, (Tracer, Array))}
        kept[:] = [(tree, static)]
        if not static:
            return out
        return out[0], tree_util.tree_unflatten(tree, [None if i in static else leaf for i, leaf in enumerate(leaves)])

    def restore(aux):
        if not kept or not kept[0][1]:
            return aux
        tree, static = kept[0]
        traced = iter(tree_util.tree_leaves(aux))
        return tree_util.tree_unflatten(tree, [static[i] if i in static else next(traced)
                                               for i in range(tree.num_leaves)])
    wrapped.restore = restore
    return wrapped


def _aux_pair(fun: Callable, out: Any) -> tuple:
    """``out``, what ``fun`` returned with ``has_aux=True``, checked to be a pair (output, aux)."""
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"kiln: has_aux=True requires {_fun_name(fun)} to return a pair (output, aux), "
                        f"got {type(out).__name__}")
    return out


def _split_aux(outs, touts, out_tree, has_aux, restore=None):
    if not has_aux:
        return tree_util.tree_unflatten(out_tree, outs), tree_util.tree_unflatten(out_tree, touts)
    (main, aux) = tree_util.tree_unflatten(out_tree, outs)
    main_t, _ = tree_util.tree_unflatten(out_tree, touts)
    return main, main_t, restore(aux)


def linearize(fun: Callable, *primals):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates only the linear part."""
    flat_p, in_tree = tree_util.tree_flatten(tuple(primals))
    _check_arrays("linearize", flat_p)
    closed, out_tree = _trace_flat(fun, flat_p, in_tree, _fun_name(fun), where="kiln.linearize")
    out_primals, residuals, lin, nonzero, out_nonzero, _ = _linearize_flat(closed, flat_p)
    # A pytree whose leaves are the residuals (as JAX's): it can be returned from a jitted function.
    f_jvp = tree_util.Partial(functools.partial(_apply_linearized, lin, in_tree, out_tree, nonzero, out_nonzero,
                                                closed.out_avals), list(residuals))
    return tree_util.tree_unflatten(out_tree, out_primals), f_jvp


def _apply_linearized(lin: ClosedIR, in_tree, out_tree, nonzero, out_nonzero, out_avals, residuals, *tangents):
    """``linearize``'s ``f_jvp``: the linear part evaluated on ``tangents``."""
    flat_t, t_tree = tree_util.tree_flatten(tuple(tangents))
    if t_tree != in_tree:
        raise TypeError(f"kiln.linearize: tangents have structure {t_tree}, expected {in_tree}")
    outs = eval_ir(lin.ir, lin.consts, list(residuals) + [t for t, nz in zip(flat_t, nonzero) if nz])
    it = iter(outs)
    touts = [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(out_avals, out_nonzero)]
    return tree_util.tree_unflatten(out_tree, [_external_aval(t, a) for t, a in zip(touts, out_avals)])


def _linearize_flat(closed: ClosedIR, flat_p: list):
    """Forward pass of reverse mode: primal outputs, residuals, and the linear IR of the tangents."""
    nonzero = [dtypes.is_inexact(abstractify(p).dtype) for p in flat_p]
    jvp_closed, out_nonzero = jvp_ir(closed, nonzero, known_primals=flat_p)
    n_in = len(flat_p)
    unknown = [False] * n_in + [True] * sum(nonzero)
    split = partial_eval(jvp_closed.ir, unknown)
    n_out = len(closed.out_avals)
    if any(split.out_unknown[:n_out]):
        raise TypeError("kiln: internal error: a primal output depends on tangents")
    known_outs = eval_ir(split.known, jvp_closed.consts, flat_p)
    n_known = len(split.known.outvars) - split.num_residuals
    out_primals, residuals = known_outs[:n_out], known_outs[n_known:]
    # A tangent output that does not depend on the tangents is zero (the JVP is linear in them).
    tangent_unknown = iter(split.out_unknown[n_out:])
    lin_outputs = [bool(nz and next(tangent_unknown)) for nz in out_nonzero]
    sources = _residual_sources(split.known, split.num_residuals)
    return out_primals, residuals, ClosedIR(split.unknown, []), nonzero, lin_outputs, sources


def _residual_sources(known: IR, num_residuals: int) -> list[int | None]:
    """For each residual (the last ``num_residuals`` outputs of the forward IR ``known``, whose inputs are the
    primals), the index of the primal it is (the backward pass reads that argument as it was given), else None (a
    value the forward pass computed). A call that returns one of its inputs as it is (a library function's
    forward half handing its operands to the backward pass) forwards it."""
    forwarded: dict[Var, Any] = {}
    for eqn in known.eqns:
        if eqn.prim is call_p:
            inner = eqn.params["ir"].ir
            position = {v: j for j, v in enumerate(inner.invars)}
            for out, v in zip(eqn.outputs, inner.outvars):
                if isinstance(v, Var) and v in position:
                    forwarded[out] = eqn.inputs[position[v]]
    primal = {v: i for i, v in enumerate(known.invars)}

    def source(v: Any) -> int | None:
        while isinstance(v, Var) and v in forwarded:
            v = forwarded[v]
        return primal.get(v) if isinstance(v, Var) else None
    return [source(v) for v in known.outvars[len(known.outvars) - num_residuals:]]


# -- reverse mode -----------------------------------------------------------------------------------
def vjp(fun: Callable, *primals, has_aux: bool = False, saveable_args: Any = True):
    """``(fun(*primals), f_vjp)`` where ``f_vjp(ct)`` is the vector-Jacobian product ``ct @ J``.

    ``saveable_args`` (as JAX's): a bool, or a tree of bools that is a prefix of the primals (a tuple matching
    any container of as many children). Where it is False, an argument value the backward pass would read as
    given is not kept in ``f_vjp``: its ``args_res`` entry is ``NotSaveable()``, which the caller must replace
    with the value before calling ``f_vjp``."""
    return _vjp("vjp", fun, primals, has_aux, saveable_args)


def _vjp(fname: str, fun: Callable, primals: tuple, has_aux: bool, saveable_args: Any = True):
    """:func:`vjp`, for the transformation ``fname`` (``"grad"``) that the user called."""
    saveable = saveable_flags(saveable_args, tree_util.tree_structure(tuple(primals)))
    on_values, values, passed = _ref_primals(fname, fun, tuple(primals), has_aux)
    if not passed:
        main, info, residuals, aux = _forward(fname, fun, tuple(primals), has_aux)
    else:  # differentiated with respect to the refs' values now; what the function left in them is written back
        main, info, residuals, aux = _forward(fname, on_values, values, True)
        aux, finals = aux if has_aux else (None, aux)
        for ref, final in zip(passed.values(), finals):
            core_refs.write(ref, final)
        info.ref_inputs = frozenset(passed)
    # A pytree whose leaves are the residuals (as JAX's VJP object): it can be returned from a jitted function. A
    # residual that is an input as the caller gave it (a Python float) becomes an array, as every leaf of JAX's is.
    residuals = [r if isinstance(r, (Array, Tracer)) else device_put(r) for r in residuals]
    f_vjp = VJP.from_residuals(_apply_vjp, info, residuals, saveable)
    if has_aux:
        return main, f_vjp, aux
    return main, f_vjp


def _ref_primals(fname: str, fun: Callable, primals: tuple, has_aux: bool):
    """For primals that include refs: ``(on_values, values, passed)``, where ``passed`` maps the flat positions
    of the refs to them, ``values`` are the primals with each ref's value in its place, and ``on_values(*values)``
    runs ``fun`` on the refs themselves, each holding its value in the trace, and returns ``(output, finals)``
    (``(output, (aux, finals))`` with ``has_aux``): the refs' values at its end. The gradient of a ref is then
    that of its value when ``vjp`` was called, as JAX's."""
    flat, tree = tree_util.tree_flatten(primals)
    passed = {i: x for i, x in enumerate(flat) if isinstance(x, Ref)}
    if not passed:
        return fun, primals, passed
    if len({id(r) for r in passed.values()}) < len(passed):
        raise core_refs.RefError(f"kiln.{fname}: the same Ref is passed as two primals; pass each ref once (as to "
                                 "jit: two names must never alias one mutable array)")
    values = [x[...] if isinstance(x, Ref) else x for x in flat]
    refs = list(passed.values())

    @functools.wraps(fun)
    def on_values(*args):
        leaves = tree_util.tree_leaves(args)
        core_refs.seed(refs, [leaves[i] for i in passed])
        for i, ref in passed.items():
            leaves[i] = ref
        out = fun(*tree_util.tree_unflatten(tree, leaves))
        finals = core_refs.take(refs)
        if not has_aux:
            return out, finals
        out, aux = _aux_pair(fun, out)
        return out, (aux, finals)
    return on_values, tree_util.tree_unflatten(tree, values), passed


def _forward(fname: str, fun: Callable, primals: tuple, has_aux: bool):
    """Run ``fun(*primals)`` and linearize it: ``(main output, _VjpInfo, residuals, aux or None)`` (shared by
    ``vjp`` and ``fwd_and_bwd``)."""
    flat_p, in_tree = tree_util.tree_flatten(primals)
    _check_arrays(fname, flat_p)
    traced_fun = _aux_wrapper(fun, has_aux)
    closed, out_tree = _trace_flat(traced_fun, flat_p, in_tree, _fun_name(fun),
                                   where=f"kiln.{fname}", has_aux=has_aux)
    out_primals, residuals, lin, nonzero, out_nonzero, sources = _linearize_flat(closed, flat_p)
    aux = None
    if has_aux:
        main_tree, aux = _aux_split_tree(out_tree, out_primals)
        aux = traced_fun.restore(aux)
        n_main = main_tree.num_leaves
    else:
        main_tree, n_main = out_tree, len(out_primals)
    info = _VjpInfo(lin, nonzero, out_nonzero, in_tree, main_tree, n_main,
                    [abstractify(p) for p in flat_p], [abstractify(p) for p in out_primals[:n_main]], sources,
                    _fun_name(fun))
    info.typing = typing_in_body(flat_p, residuals, lin.consts, lin.ir, nonzero)
    return tree_util.tree_unflatten(main_tree, out_primals[:n_main]), info, residuals, aux


class _VjpInfo:
    """The static part of a VJP: the linear IR and the trees and avals around it; ``sources[k]``: the input
    (flat index) that residual ``k`` is, or None for a computed one; ``fun_name``: the function's, for messages."""

    def __init__(self, lin, nonzero, out_nonzero, in_tree, main_tree, n_main, in_avals, out_avals, sources,
                 fun_name):
        self.lin, self.nonzero, self.out_nonzero = lin, nonzero, out_nonzero
        self.in_tree, self.main_tree, self.n_main = in_tree, main_tree, n_main
        self.in_avals, self.out_avals = in_avals, out_avals
        self.sources, self.fun_name = sources, fun_name
        self.ref_inputs: frozenset[int] = frozenset()  # the flat inputs that were refs (their gradients go to refs)
        # In a shard_map body that checks varying axes: the types its backward pass takes (ad/varying_transpose.py)
        self.typing: dict | None = None


def _external_aval(t, aval: ShapedArray):
    if isinstance(t, Zero):
        if not dtypes.is_inexact(aval.dtype):
            return np.zeros(aval.shape, float0)
        return instantiate(t)
    return t


def _apply_vjp(info: _VjpInfo, residuals: list, ct, wants: tuple = ()):
    """The cotangents of the inputs for the output cotangent ``ct``; ``wants`` (``VJP.with_refs``' entries, in
    the primals' structure; empty: all ``GradValue()``) says how each one is delivered."""
    flat_ct = _check_cotangent(info, ct)
    flat_wants = _flat_wants(info, wants)
    for i in sorted(info.ref_inputs):
        if isinstance(flat_wants[i], GradValue):
            raise _ref_gradient_as_value(info, i, bool(wants))
    lin = info.lin
    lin_out_cts = [c for c, nz in zip(flat_ct, info.out_nonzero[:info.n_main]) if nz]
    args = list(residuals) + [UndefinedPrimal(a) for a in lin.ir.in_avals[len(residuals):]]
    wanted = [False] * len(residuals) + [not isinstance(w, DontWant)
                                         for w, nz in zip(flat_wants, info.nonzero) if nz]
    if info.typing is None:
        cts = backward_pass(lin.ir, lin.consts, args, lin_out_cts, wanted)
    else:
        cts = backward_pass_typed(lin.ir, lin.consts, args, lin_out_cts, wanted=wanted, **info.typing)
    cts = cts[len(residuals):]
    it = iter(cts)
    full = [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(info.in_avals, info.nonzero)]
    return tree_util.tree_unflatten(info.in_tree, [_deliver(c, a, w, i)
                                                   for i, (c, a, w) in enumerate(zip(full, info.in_avals, flat_wants))])


def _flat_wants(info: _VjpInfo, wants: tuple) -> list:
    if not wants:
        return [GradValue()] * len(info.in_avals)
    flat, tree = tree_util.tree_flatten(wants)
    if tree != info.in_tree:
        raise TypeError(f"kiln.vjp: with_refs takes one entry per primal, in their structure {info.in_tree}; got "
                        f"{tree}")
    for w in flat:
        if not isinstance(w, (GradValue, DontWant, Ref)):
            raise TypeError(f"kiln.vjp: a with_refs entry must be kiln.ad.GradValue(), kiln.ad.DontWant() or a Ref "
                            f"(kiln.new_ref), got {type(w).__name__} ({w!r:.50})")
    return flat


def _ref_gradient_as_value(info: _VjpInfo, i: int, explicit: bool) -> core_refs.RefError:
    """The error for a Ref primal (flat input ``i``) whose gradient was asked for as a value (``explicit``: by a
    ``GradValue()`` given to ``with_refs``; else by calling the VJP function without ``with_refs``)."""
    paths = tree_util.user_paths(tree_util.tree_unflatten(info.in_tree, [0] * len(info.in_avals)))
    path = paths[i] if len(paths) > i else ()
    label = f"primal {path[0].idx}{tree_util.keystr(path[1:])}" if path and hasattr(path[0], "idx") else "a primal"
    how = ("pass a Ref for it to with_refs" if explicit else
           "bind one with the VJP function's with_refs before applying it: f_vjp.with_refs(grad_ref)(ct)")
    return core_refs.RefError(f"kiln.vjp: {label} is a Ref, so its gradient must be accumulated into a ref (as in "
                              f"JAX), not returned as a value: {how}; the gradient is added into grad_ref in place. "
                              "To skip it, pass kiln.ad.DontWant() in its place")


def _deliver(ct, aval: ShapedArray, want, i: int):
    """One input's cotangent as ``want`` asks: the value, ``DidntWant()``, or added into a Ref (``GradRef()``)."""
    if isinstance(want, DontWant):
        return DidntWant()
    if isinstance(want, GradValue):
        return _external_aval(ct, aval)
    held, expected = abstractify(core_refs.read(want)), tangent_aval(aval)
    if held.shape != expected.shape or held.dtype != expected.dtype:
        raise ValueError(f"kiln.vjp: with_refs: the Ref for input leaf {i} holds {held.str_short()}, but that "
                         f"input's cotangent is {expected.str_short()}")
    if not isinstance(ct, Zero):  # (the sum keeps the ref's type: a ref's weak type is fixed, as JAX's)
        total = lax.add(core_refs.read(want), ct)
        core_refs.write(want, lax.convert_element_type(total, held.dtype, weak_type=held.weak_type), owned=True)
    return GradRef()


def _check_cotangent(info: _VjpInfo, ct) -> list:
    """``ct``'s leaves, checked against the output's structure, shapes and dtypes."""
    flat_ct, ct_tree = tree_util.tree_flatten(ct)
    if ct_tree != info.main_tree:
        raise TypeError(f"kiln.vjp: the cotangent has structure {ct_tree}, but the function's output has "
                        f"structure {info.main_tree}")
    for i, (c, a) in enumerate(zip(flat_ct, info.out_avals)):
        zero = _is_zero_tangent(c)  # float0 zeros, for integer outputs
        c_aval = None if zero else abstractify(c)
        c_shape = np.shape(c) if zero else c_aval.shape
        if c_shape != a.shape:
            raise ValueError(f"kiln.vjp: cotangent shape {c_shape} does not match output shape {a.shape}")
        # An inexact output's cotangent has its dtype (as in JAX; weak types aside): another one would be
        # promoted inside the backward pass, or refused there with a message about some internal operation.
        if not zero and dtypes.is_inexact(a.dtype) and c_aval.dtype != a.dtype:
            raise ValueError(f"kiln.vjp: the cotangent of output {i} has type {c_aval.str_short()}, but the "
                             f"output is {a.str_short()}: pass a cotangent of dtype {a.dtype.name} (e.g. "
                             f"ct.astype({a.dtype.name!r}))")
    return flat_ct


def _aux_split_tree(out_tree, out_primals):
    main, aux = tree_util.tree_unflatten(out_tree, out_primals)
    return tree_util.tree_structure(main), aux


def _normalize_argnums(fname: str, argnums, nargs: int) -> tuple[int, ...]:
    seq = isinstance(argnums, Sequence) and not isinstance(argnums, str)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums) if seq else None
    if nums is None or not all(isinstance(n, int) and not isinstance(n, bool) for n in nums):
        raise TypeError(f"kiln.{fname}: argnums must be an int or a tuple of ints (positions of the arguments "
                        f"to differentiate), got {argnums!r}")
    for n in nums:
        if not -nargs <= n < nargs:
            raise TypeError(f"kiln.{fname}: argnums {argnums!r} is out of range for a function called with "
                             f"{nargs} positional argument(s)")
    norm = tuple(n % nargs for n in nums)
    if len(set(norm)) != len(norm):
        raise ValueError(f"kiln.{fname}: argnums {argnums!r} names the same argument more than once; list each "
                         "argument once")
    return norm


def _check_callable(fname: str, fun) -> None:
    if not callable(fun):
        raise TypeError(f"kiln.{fname}: expected a function to differentiate, got {type(fun).__name__}: {fun!r}")


def _check_grad_inputs(fname: str, diff_args, allow_int: bool, holomorphic: bool,
                       where: tuple[str, Callable, tuple[int, ...]] | None = None) -> None:
    """``where``: (the transformation the user called, its function, the positions of ``diff_args``), for the
    message of an argument that is no array."""
    for k, x in enumerate(tree_util.tree_leaves(diff_args)):
        try:
            dt = abstractify(x).dtype
        except TypeError:
            raise _non_array_diff_arg(fname, diff_args, k, x, where) from None
        if holomorphic:
            if dt.kind != "c":
                raise TypeError(f"kiln.{fname}: holomorphic=True requires complex inputs, got {dt.name}")
        elif not dtypes.is_inexact(dt) and not allow_int:
            raise TypeError(f"kiln.{fname} requires real- or complex-valued inputs (input dtype that is a "
                            f"sub-dtype of np.inexact), but got {dt.name}. If you want to use integer-valued "
                            "inputs, pass allow_int=True (their gradients are float0 zeros).")
        elif dt.kind == "c" and fname == "jacfwd":  # grad and jacrev take complex inputs, as in JAX
            raise TypeError(f"kiln.{fname}: complex inputs need holomorphic=True (got {dt.name})")


def _non_array_diff_arg(fname: str, diff_args: tuple, k: int, x: Any, where) -> TypeError:
    """The error of leaf ``k`` of the differentiated arguments ``diff_args``, ``x``, that is no array."""
    transformation, fun, nums = where if where is not None else (fname, None, tuple(range(len(diff_args))))
    paths = tree_util.user_paths(diff_args)
    path = paths[k] if len(paths) > k else ()
    label = (f"argument {nums[path[0].idx]}{tree_util.keystr(path[1:])}" if path and hasattr(path[0], "idx")
             else "an argument")
    if fun is not None:
        label += f" of {_fun_name(fun)}"
    if isinstance(x, Ref):  # (as JAX: a ref's gradient must itself go into a ref)
        fix = ("a Ref's gradient must be accumulated into a ref: use kiln.vjp and bind one with the VJP function's "
               "with_refs (f_vjp.with_refs(grad_ref)(ct)); a Ref that argnums leaves out is fine (plumbing)")
    else:
        fix = ("differentiated arguments must be arrays, scalars or pytrees of them; pass argnums= to differentiate "
               "with respect to the others only")
    return non_array_argument(f"kiln.{transformation}", label, x, fix)


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """A function returning ``(fun(*args), gradient)``; ``fun`` must return a scalar."""
    return _value_and_grad("value_and_grad", fun, argnums, has_aux, holomorphic, allow_int)


def _value_and_grad(fname: str, fun: Callable, argnums, has_aux: bool, holomorphic: bool, allow_int: bool):
    """:func:`value_and_grad`, for the transformation ``fname`` (``"grad"``) that the user called."""
    _check_callable(fname, fun)
    name = _fun_name(fun)

    @functools.wraps(fun)
    def vg(*args, **kwargs):
        nums = _normalize_argnums("grad", argnums, len(args))
        diff_args = tuple(args[i] for i in nums)
        _check_grad_inputs("grad", diff_args, allow_int, holomorphic, (fname, fun, nums))

        def f_partial(*dargs):
            full = list(args)
            for i, d in zip(nums, dargs):
                full[i] = d
            return fun(*full, **kwargs)
        f_partial.__name__ = name
        out = _vjp(fname, f_partial, diff_args, has_aux)
        value, f_vjp = out[0], out[1]
        _check_scalar_output(name, value, holomorphic)
        ct = _ones_like(value)
        grads = f_vjp(ct)
        grads = grads[0] if isinstance(argnums, int) else grads
        return ((value, out[2]), grads) if has_aux else (value, grads)
    return vg


def _ones_like(x):
    from .. import lax
    aval = abstractify(x)
    return lax.broadcast_in_dim(lax.literal(1, aval.dtype, aval.weak_type), aval.shape, ())


def _check_scalar_output(name: str, value, holomorphic: bool) -> None:
    if not isinstance(value, (Array, Tracer)) and not isinstance(value, dtypes.PY_SCALARS + (np.ndarray, np.generic)):
        raise TypeError(f"kiln.grad({name}): the function must return a scalar array, got "
                        f"{type(value).__name__}. For functions with several outputs use kiln.vjp or "
                        "kiln.jacrev; to return extra data use has_aux=True.")
    aval = abstractify(value)
    if aval.shape != ():
        raise TypeError(f"kiln.grad({name}): the function must return a scalar (shape ()), but it returned "
                        f"an array of shape {aval.shape}. For non-scalar outputs use kiln.vjp or kiln.jacrev.")
    if not holomorphic and not dtypes.is_float(aval.dtype):
        raise TypeError(f"kiln.grad({name}): the function must return a real floating-point scalar, got "
                        f"{aval.dtype.name}" + (" (use holomorphic=True for complex outputs of a holomorphic "
                                                 "function; for a non-holomorphic function with complex outputs, "
                                                 "use kiln.vjp directly)" if aval.dtype.kind == "c" else ""))


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False) -> Callable:
    """The gradient of scalar-valued ``fun`` with respect to argument(s) ``argnums``."""
    _check_callable("grad", fun)
    vg = _value_and_grad("grad", fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def g(*args, **kwargs):
        out = vg(*args, **kwargs)
        return (out[1], out[0][1]) if has_aux else out[1]
    return g


# -- Jacobians (vectorised with vmap over a basis, as JAX) ---------------------------------------------
def _partial(fun: Callable, args: tuple, nums: tuple[int, ...], kwargs: dict) -> Callable:
    """``fun`` of the arguments at ``nums`` only, the others (and the keyword arguments, which are not
    differentiated, as in JAX) fixed."""
    def f_partial(*dargs):
        full = list(args)
        for i, d in zip(nums, dargs):
            full[i] = d
        return fun(*full, **kwargs)
    f_partial.__name__ = _fun_name(fun)
    return f_partial


def _basis(avals: list[ShapedArray], dtype) -> list:
    """The standard basis of the flattened inputs: leaf i gets shape (N,) + shape_i."""
    n = sum(a.size for a in avals)
    eye = lax.convert_element_type(lax.eq(lax.broadcasted_iota(dtypes.int32, (n, n), 0),
                                          lax.broadcasted_iota(dtypes.int32, (n, n), 1)), dtype)
    out, start = [], 0
    for a in avals:
        out.append(lax.reshape(lax.slice(eye, (0, start), (n, start + a.size)), (n,) + a.shape))
        start += a.size
    return out


def _split_last(x, avals: list[ShapedArray], lead_shape: tuple[int, ...], axis_first: bool):
    """Split a stacked Jacobian block along its basis axis into one block per input leaf."""
    pieces, start = [], 0
    shape = abstractify(x).shape
    axis = 0 if axis_first else len(lead_shape)  # where the basis axis of length N is
    for a in avals:
        lo = [0] * len(shape)
        hi = list(shape)
        lo[axis], hi[axis] = start, start + a.size
        piece = lax.slice(x, lo, hi)
        if axis_first:  # x: (N,) + lead_shape -> per input: in_shape + lead_shape
            pieces.append(lax.reshape(piece, a.shape + lead_shape))
        else:  # x: lead_shape + (N,) -> per input: lead_shape + in_shape
            pieces.append(lax.reshape(piece, lead_shape + a.shape))
        start += a.size
    return pieces


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False):
    """The Jacobian of ``fun`` by forward mode: ``vmap`` of ``jvp`` over the input basis.

    Output leaf ``o`` of shape S_o and input leaf ``i`` of shape T_i give a block of shape S_o + T_i.
    """
    return _jacfwd("jacfwd", fun, argnums, has_aux, holomorphic)


def _jacfwd(fname: str, fun: Callable, argnums, has_aux: bool, holomorphic: bool, user_fun: Callable | None = None):
    """:func:`jacfwd`, for the transformation ``fname`` (``"hessian"``) that the user called, on ``user_fun``."""
    from ..batching.api import vmap
    _check_callable(fname, fun)

    def jac(*args, **kwargs):
        nums = _normalize_argnums("jacfwd", argnums, len(args))
        diff = tuple(args[i] for i in nums)
        _check_grad_inputs("jacfwd", diff, False, holomorphic, (fname, user_fun or fun, nums))
        # (the aux's untraced leaves are kept aside here, not only in _jvp: vmap takes no strings)
        aux_fun = _aux_wrapper(fun, has_aux)
        f_partial = _partial(aux_fun, args, nums, kwargs)
        flat_d, d_tree = tree_util.tree_flatten(diff)
        avals = [abstractify(x) for x in flat_d]
        dtype = dtypes.result_type(*[a.dtype for a in avals]) if avals else dtypes.default_float_dtype()

        def push(*basis_leaves):
            res = _jvp(fname, f_partial, diff, tree_util.tree_unflatten(d_tree, [
                b.astype(a.dtype) for b, a in zip(basis_leaves, avals)]), has_aux)
            return (res[0], res[1], res[2]) if has_aux else (res[0], res[1])

        outs = vmap(push, out_axes=(None, -1, None) if has_aux else (None, -1))(*_basis(avals, dtype))
        if holomorphic:
            _check_jacobian_outputs("jacfwd", outs[0], holomorphic)
        tangents = outs[1]
        flat_t, out_tree = tree_util.tree_flatten(tangents)
        blocks = []
        for t in flat_t:
            lead = abstractify(t).shape[:-1]
            per_in = tree_util.tree_unflatten(d_tree, _split_last(t, avals, lead, axis_first=False))
            blocks.append(per_in[0] if isinstance(argnums, int) else per_in)
        result = tree_util.tree_unflatten(out_tree, blocks)
        return (result, aux_fun.restore(outs[2])) if has_aux else result
    return jac


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
    """The Jacobian of ``fun`` by reverse mode: ``vmap`` of the VJP over the output basis."""
    return _jacrev("jacrev", fun, argnums, has_aux, holomorphic, allow_int)


def _jacrev(fname: str, fun: Callable, argnums, has_aux: bool, holomorphic: bool, allow_int: bool):
    """:func:`jacrev`, for the transformation ``fname`` (``"hessian"``) that the user called."""
    from ..batching.api import vmap
    _check_callable(fname, fun)

    def jac(*args, **kwargs):
        nums = _normalize_argnums("jacrev", argnums, len(args))
        diff = tuple(args[i] for i in nums)
        _check_grad_inputs("jacrev", diff, allow_int, holomorphic, (fname, fun, nums))
        res = _vjp(fname, _partial(fun, args, nums, kwargs), diff, has_aux)
        out, f_vjp = res[0], res[1]
        _check_jacobian_outputs("jacrev", out, holomorphic)
        flat_out, out_tree = tree_util.tree_flatten(out)
        out_avals = [abstractify(o) for o in flat_out]
        dtype = dtypes.result_type(*[a.dtype for a in out_avals]) if out_avals else dtypes.default_float_dtype()

        flat_d, d_tree = tree_util.tree_flatten(diff)
        d_avals = [abstractify(d) for d in flat_d]

        def pull(*basis_leaves):
            cts = [b.astype(a.dtype) for b, a in zip(basis_leaves, out_avals)]
            grads = tree_util.tree_leaves(f_vjp(tree_util.tree_unflatten(out_tree, cts)))
            # An integer input's (allow_int=True) float0 cotangent: zeros of its dtype, as JAX's Jacobian has.
            return [lax.broadcast_in_dim(lax.literal(0, a.dtype), a.shape, ()) if _is_zero_tangent(g) else g
                    for g, a in zip(grads, d_avals)]

        in_blocks = vmap(pull)(*_basis(out_avals, dtype))  # one per input leaf: (M,) + in_shape
        per_out = [[] for _ in out_avals]
        for blk, da in zip(in_blocks, d_avals):
            for o, piece in enumerate(_split_last(blk, out_avals, da.shape, axis_first=True)):
                # each block takes its input's dtype and weak type (JAX's _possible_downcast)
                per_out[o].append(lax.convert_element_type(piece, da.dtype, weak_type=da.weak_type))
        rows = []
        for pieces in per_out:
            grads = tree_util.tree_unflatten(d_tree, pieces)
            rows.append(grads[0] if isinstance(argnums, int) else grads)
        result = tree_util.tree_unflatten(out_tree, rows)
        return (result, res[2]) if has_aux else result
    return jac


def _check_jacobian_outputs(fname: str, out, holomorphic: bool) -> None:
    """As JAX: with ``holomorphic=True`` every output must be complex; reverse mode without it needs real
    floating-point outputs (the Jacobian of a complex output is not a matrix of numbers of one dtype: a row
    per output's real part would silently drop the imaginary part)."""
    for leaf in tree_util.tree_leaves(out):
        dt = abstractify(leaf).dtype
        if holomorphic:
            if dt.kind != "c":
                raise TypeError(f"kiln.{fname} with holomorphic=True requires complex outputs, but the function "
                                f"returned {dt.name}; drop holomorphic=True for a real function.")
        elif dt.kind == "c":
            raise TypeError(f"kiln.{fname} requires real floating-point outputs, but the function returned "
                            f"{dt.name}. Pass holomorphic=True for a holomorphic function, or use kiln.vjp directly "
                            "for a non-holomorphic function with complex outputs.")
        elif not dtypes.is_float(dt):
            raise TypeError(f"kiln.{fname} requires real floating-point outputs, but the function returned "
                            f"{dt.name}. Use kiln.vjp directly to differentiate a function with integer or boolean "
                            "outputs.")


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False):
    """The Hessian: ``jacfwd(jacrev(fun))``."""
    _check_callable("hessian", fun)
    return _jacfwd("hessian", _jacrev("hessian", fun, argnums, has_aux, holomorphic, False), argnums, has_aux,
                   holomorphic, user_fun=fun)


jacobian = jacrev  # JAX's alias


# -- linear transposition, closure conversion, custom_gradient -----------------------------------------
def _flat_trace(fun: Callable, in_tree, avals: list[ShapedArray], name: str) -> tuple[ClosedIR, Any]:
    """Trace ``fun`` abstractly (argument values unknown) on flat avals; the IR and the output tree."""
    out_tree_box = []

    def flat_fun(*tracers):
        args = tree_util.tree_unflatten(in_tree, list(tracers))
        leaves, tree = tree_util.tree_flatten(fun(*args))
        out_tree_box.append(tree)
        return leaves
    closed, _ = trace_to_ir(flat_fun, avals, name=name)
    return closed, out_tree_box[0]


def linear_transpose(fun: Callable, *primals, reduce_axes=()) -> Callable:
    """The transpose of the linear function ``fun``: ``linear_transpose(f, *primals)(ct)`` is the tuple of
    cotangents of ``f``'s arguments (one per primal) for the output cotangent ``ct``.

    ``primals`` give only the arguments' shapes and dtypes (arrays or ``ShapeDtypeStruct``); ``fun`` must
    be linear in them (a non-linear operation on an argument raises ``TypeError``).
    """
    from .transpose import transpose_rules
    if reduce_axes:
        raise NotImplementedError("kiln.linear_transpose: reduce_axes is not supported (JAX removed it too); "
                                  "reduce the cotangents explicitly")
    flat_p, in_tree = tree_util.tree_flatten(primals)
    _check_arrays("linear_transpose", flat_p)
    in_avals = [abstractify(p) for p in flat_p]
    for a in in_avals:
        if not dtypes.is_inexact(a.dtype):
            raise TypeError(f"kiln.linear_transpose: arguments must be real or complex floating-point arrays, got "
                            f"{a.str_short()}")
    name = _fun_name(fun)
    closed, out_tree = _flat_trace(fun, in_tree, in_avals, name)
    linear = set(closed.ir.invars)
    for eqn in closed.ir.eqns:
        if any(isinstance(v, Var) and v in linear for v in eqn.inputs):
            if eqn.prim not in transpose_rules:
                raise TypeError(f"kiln.linear_transpose({name}): the function is not linear in its arguments: it "
                                f"applies {eqn.prim.name!r} to a value that depends on them")
            linear.update(eqn.outputs)
    out_avals = closed.ir.out_avals

    def transposed(out_cotangent):
        flat_ct, ct_tree = tree_util.tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"kiln.linear_transpose({name}): the cotangent has structure {ct_tree}, but the "
                            f"function's output has structure {out_tree}")
        for c, a in zip(flat_ct, out_avals):
            ca = abstractify(c)
            if ca.shape != a.shape or ca.dtype != a.dtype:
                raise TypeError(f"kiln.linear_transpose({name}): cotangent {ca.str_short()} does not match the "
                                f"output {a.str_short()}")
        args = [UndefinedPrimal(a) for a in closed.ir.in_avals]
        typing = typing_in_body(flat_p, [], closed.consts, closed.ir, [True] * len(flat_p))
        if typing is None:
            cts = backward_pass(closed.ir, closed.consts, args, list(flat_ct))
        else:
            cts = backward_pass_typed(closed.ir, closed.consts, args, list(flat_ct), **typing)
        outs = [instantiate(Zero(a)) if c is None or isinstance(c, Zero) else c
                for c, a in zip(cts, in_avals)]
        # The cotangents take the primals' dtypes; as in JAX, one stays weak where its primal is weak (a Python
        # float) and the backward pass computed it weak (from a weak output cotangent).
        return tree_util.tree_unflatten(in_tree, [
            lax.convert_element_type(o, a.dtype, weak_type=a.weak_type and abstractify(o).weak_type)
            for o, a in zip(outs, in_avals)])
    return transposed


def _convert(fun: Callable, example_args: tuple, hoist: Callable[[Any], bool]) -> tuple[Callable, list, Any]:
    """Trace ``fun`` on the avals of ``example_args``; the captured values for which ``hoist`` holds become
    trailing arguments. Returns (converted function, hoisted values, output tree)."""
    flat, in_tree = tree_util.tree_flatten(example_args)
    avals = []
    for x in flat:
        if not isinstance(x, ShapedArray):
            _check_arrays("closure_convert", [x])
        avals.append(x if isinstance(x, ShapedArray) else abstractify(x))
    closed, out_tree = _flat_trace(fun, in_tree, avals, _fun_name(fun))
    ir = closed.ir
    kept = [(v, c) for v, c in zip(ir.constvars, closed.consts) if not hoist(c)]
    hoisted = [(v, c) for v, c in zip(ir.constvars, closed.consts) if hoist(c)]
    new = ClosedIR(IR([v for v, _ in kept], list(ir.invars) + [v for v, _ in hoisted], ir.eqns, ir.outvars),
                   [c for _, c in kept])
    # The converted function keeps neither the hoisted values nor ``fun`` (whose closure holds them), only their
    # count and name: they may be tracers of a trace that ends while the function lives on (in the IR of a
    # custom_vjp call, say).
    n_hoisted, name = len(hoisted), _fun_name(fun)

    def converted(*args):
        args_part, consts = args[:len(args) - n_hoisted], args[len(args) - n_hoisted:]
        flat_args, tree = tree_util.tree_flatten(tuple(args_part))
        if tree != in_tree:
            raise TypeError(f"kiln.closure_convert: the converted function of {name} expects arguments "
                            f"of structure {in_tree} followed by {n_hoisted} constant(s), got {tree}")
        return tree_util.tree_unflatten(out_tree, eval_ir(new.ir, new.consts, list(flat_args) + list(consts)))
    converted.__name__ = name
    return converted, [c for _, c in hoisted], out_tree


def closure_convert(fun: Callable, *example_args) -> tuple[Callable, list]:
    """``(converted, consts)``: ``converted(*args, *consts)`` computes ``fun(*args)``, where ``consts`` are the
    traced values ``fun`` closes over (hoisted out, so that e.g. a ``custom_vjp`` rule can take them as
    explicit arguments). ``example_args`` give the arguments' shapes and dtypes."""
    converted, consts, _ = _convert(fun, example_args, lambda c: isinstance(c, Tracer))
    return converted, consts


def custom_gradient(fun: Callable) -> Callable:
    """A function with a gradient given by ``fun`` itself: ``fun(*args)`` returns ``(value, vjp)`` where
    ``vjp(ct)`` returns one cotangent per argument (as ``jax.custom_gradient``). Reverse mode only."""
    from .custom import custom_vjp

    def call(*args):
        res = fun(*args)
        if not (isinstance(res, tuple) and len(res) == 2 and callable(res[1])):
            raise TypeError(f"kiln.custom_gradient: {_fun_name(fun)} must return a pair (value, vjp_function), "
                            f"got {type(res).__name__}")
        return res

    def primal(*args):
        return call(*args)[0]
    primal.__name__ = _fun_name(fun)
    wrapped = custom_vjp(primal)

    def fwd(*args):
        ans, rule = call(*args)
        # The cotangents' types are the outputs' (weak ones too, as JAX's: grad of a Python-float function
        # gives weak cotangents).
        cts = tree_util.tree_map(lambda a: ShapedArray(abstractify(a).shape, abstractify(a).dtype,
                                                       abstractify(a).weak_type), ans)
        converted, consts, _ = _convert(lambda ct: rule(ct), (cts,), lambda c: True)
        return ans, _RuleResiduals(converted, consts)

    def bwd(res, ct):
        out = res.fun(ct, *res.consts)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)
    wrapped.defvjp(fwd, bwd)
    functools.update_wrapper(wrapped, fun)
    return wrapped


class _RuleResiduals:
    """custom_gradient's residuals: the closure-converted vjp function (static) and its captured values."""

    def __init__(self, fun: Callable, consts: list):
        self.fun, self.consts = fun, consts


tree_util.register_pytree_node(_RuleResiduals, lambda r: (r.consts, r.fun), lambda f, c: _RuleResiduals(f, list(c)))


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False, jitted: bool = True):
    """``(fwd, bwd)``: ``fwd(*args)`` returns ``(out, residuals)`` (``(out, residuals, aux)`` with
    ``has_aux``) and ``bwd(residuals, ct)`` the cotangents of the arguments ``argnums``, as
    ``jax.fwd_and_bwd``. The residuals are the VJP object of ``kiln.vjp`` (a pytree of arrays), so both can be
    jitted (the default) and ``bwd`` compiles once."""
    from ..driver.jit import jit

    def fwd(*args):
        nums = _normalize_argnums("fwd_and_bwd", argnums, len(args))
        diff = tuple(args[i] for i in nums)
        return _vjp("fwd_and_bwd", _partial(fun, args, nums, {}), diff, has_aux)

    def bwd(res, ct):
        if not isinstance(res, VJP):
            raise TypeError(f"kiln.fwd_and_bwd: bwd's first argument must be the residuals returned by fwd, got "
                            f"{type(res).__name__}")
        cts = res(ct)
        return cts[0] if isinstance(argnums, int) else cts
    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd

# kiln.export (on the driver floor, below) differentiates exported functions with these.
_export._ad_hooks.update(vjp=vjp, custom_vjp=_custom_vjp)
