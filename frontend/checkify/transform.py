"""The ``checkify`` transformation (``jax.experimental.checkify.checkify``).

``checkify(f, errors)(*args)`` traces ``f`` (closing over its arguments, as JAX does) to kiln IR, then evaluates
that IR with an interpreter that threads an error value (``errors.Error``) through the equations. Each equation's
primitive is applied with ``bind``, so the interpreter runs eagerly or records into the active trace
(``jit(checkify(f))``, ``vmap(checkify(f))``, ``grad`` of its outputs). Along the way:

- a ``check`` equation (``checkify.check``, ``check_error``) is *functionalized*: its error is merged into the error
  value instead of being raised;
- with ``nan_checks``: the primitives that can produce a NaN (JAX's list: ``sin``, ``log``, ``add``, ``mul``,
  ``div``, ``dot_general``, ...) are followed by a test of their floating-point results;
- with ``div_checks``: ``div`` tests its divisor for zeros;
- with ``index_checks``: ``gather``, the scatters and the dynamic (update) slices test their start indices.

Control flow carries the error: ``cond`` branches, ``while`` and ``scan`` bodies are rebuilt around the body IR
evaluated by the same interpreter, with the error's leaves as extra operands (a loop's carry); every kind of error a
body can record gets its slot before the loop, so that the carry keeps its type. The ``while`` condition is checked
before the loop and after each step (as JAX). ``jit`` calls and ``remat`` bodies stay one call whose body is the
checkified body (memoised per body); ``custom_jvp``/``custom_vjp`` calls keep their rules: the checks run on a copy
of their body, their results come from the call itself, with the ``check`` equations of its body (and of its traced
rule) dropped. Other primitives with bodies (``shard_map``, ``pmap``, ``custom_linear_solve``) run unchanged: the
automatic checks do not look inside them, and a ``check`` inside them is not functionalized (lowering refuses it).
"""
from __future__ import annotations

import copy
import functools
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from .. import numpy as jnp
from ..ad.remat import remat_p
from ..control.cond import cond_p, switch
from ..control.loops import while_loop, while_p
from ..control.scan import scan, scan_p
from ..core import caches, dtypes, tree_util
from ..core.avals import ShapedArray
from ..core.call import bind_call, call_body, call_p
from ..core.errors import KilnError
from ..core.ir import IR, ClosedIR, Literal, Var
from ..core.primitive import registry
from ..core.source_info import at as _at
from ..core.tracing import Tracer, abstractify, materialize, trace_to_ir
from ..driver.array import Array
from ..lax.indexing import gather_p
from ..lax.structural import dynamic_slice_p, dynamic_update_slice_p
from ..xla_metadata_call import xla_metadata_call_p
from .errors import (
    DivisionByZeroError,
    Error,
    ErrorEffect,
    ErrorTree,
    NaNError,
    OOBError,
    assert_func,
    init_error,
    update_error,
    user_checks,
)
from .primitive import check_p

__all__ = ["checkify", "checkify_ir", "checkify_rules"]

_I32 = np.dtype(np.int32)
NAN_EFFECT = ErrorEffect(NaNError, ())
DIV_EFFECT = ErrorEffect(DivisionByZeroError, ())
OOB_EFFECT = ErrorEffect(OOBError, (ShapedArray((3,), _I32),))

# The primitives that can produce a NaN (JAX's ``nan_primitives``, those kiln has).
_NAN_NAMES = ("acos", "acosh", "add", "asin", "asinh", "atan2", "atan", "atanh", "bessel_i0e", "bessel_i1e", "cbrt",
              "conv_general_dilated", "cos", "cosh", "cumlogsumexp", "cummax", "cummin", "cumprod", "cumsum", "digamma",
              "dot_general", "erf_inv", "erf", "erfc", "exp", "expm1", "fft", "igamma_grad_a", "igamma", "igammac",
              "integer_pow", "lgamma", "linear_solve", "log1p", "log", "logistic", "mul", "pad", "pow", "psum",
              "reduce", "reduce_prod", "reduce_sum", "reduce_window", "reduce_window_sum",
              "regularized_incomplete_beta", "rem", "rng_uniform", "rsqrt", "sin", "sinh", "sqrt", "sub", "tan",
              "tanh")
_NAN_PRIMS = frozenset(registry[n] for n in _NAN_NAMES if n in registry)
_DIV = registry["div"]
_SCATTERS = frozenset(registry[n] for n in ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max",
                                            "scatter_apply"))
_INDEXING = frozenset({gather_p, dynamic_slice_p, dynamic_update_slice_p}) | _SCATTERS


class CheckifyError(KilnError, ValueError):
    """``checkify`` cannot transform this function (as JAX, a ``ValueError``)."""


# -- which kinds of error a body can record ---------------------------------------------------------------------

_effects_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_effects_cache.clear)


def _sub_irs(eqn: Any) -> list[ClosedIR]:
    """The bodies of an equation that the interpreter transforms too."""
    p = eqn.prim
    if p is cond_p:
        return list(eqn.params["branches"])
    if p is while_p:
        return [eqn.params["cond"], eqn.params["body"]]
    if p is scan_p or p is remat_p:
        return [eqn.params["body"]]
    if p.inline_param is not None:
        return [eqn.params[p.inline_param]]
    return []


def _has_inexact_output(eqn: Any) -> bool:
    return any(dtypes.is_inexact(v.aval.dtype) for v in eqn.outputs)


def effects_of(ir: IR, enabled: frozenset) -> frozenset:
    """The error slots that checkifying ``ir`` with the checks ``enabled`` can add (a superset: every slot the
    rules below may record)."""
    per_ir = _effects_cache.get(ir)
    if per_ir is None:
        per_ir = _effects_cache[ir] = {}
    found = per_ir.get(enabled)
    if found is not None:
        return found
    out: set[ErrorEffect] = set()
    for eqn in ir.eqns:
        p = eqn.prim
        if p is check_p:
            out.update(e for e in eqn.params["err_tree"].effects if e.error_type in enabled)
            continue
        if NaNError in enabled and (p in _NAN_PRIMS or p is _DIV or p in _SCATTERS) and _has_inexact_output(eqn):
            out.add(NAN_EFFECT)
        if p is _DIV and DivisionByZeroError in enabled:
            out.add(DIV_EFFECT)
        if p in _INDEXING and OOBError in enabled:
            out.add(OOB_EFFECT)
        for sub in _sub_irs(eqn):
            out.update(effects_of(sub.ir, enabled))
    found = per_ir[enabled] = frozenset(out)
    return found


_checks_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_checks_cache.clear)


def has_check(ir: IR) -> bool:
    """Whether ``ir`` (or a body the interpreter transforms) holds a ``check``: it must be functionalized (merged
    into the error value, or dropped when its kind of error is not enabled) even when no check is enabled."""
    found = _checks_cache.get(ir)
    if found is None:
        found = _checks_cache[ir] = any(eqn.prim is check_p or any(has_check(sub.ir) for sub in _sub_irs(eqn))
                                        for eqn in ir.eqns)
    return found


def _untouched(irs: Sequence[IR], enabled: frozenset) -> bool:
    """Whether checkifying these bodies changes nothing: the equation can be applied as it is."""
    return not any(effects_of(ir, enabled) or has_check(ir) for ir in irs)


# -- the interpreter ---------------------------------------------------------------------------------------------

# primitive -> rule(error, enabled, source, invals, params) -> (error, outputs); invals may hold IR Literals.
checkify_rules: dict[Any, Callable[..., tuple[Error, list]]] = {}


def _bind(prim: Any, invals: Sequence[Any], params: dict) -> list:
    out = prim.bind(*invals, **params)
    return list(out) if prim.multiple_results else [out]


def checkify_ir(ir: IR, consts: Sequence[Any], enabled: frozenset, error: Error,
                args: Sequence[Any]) -> tuple[Error, list]:
    """Evaluate ``ir`` on ``args`` threading ``error``: returns the error value and the outputs."""
    env: dict[Var, Any] = dict(zip(ir.constvars, consts))
    env.update(zip(ir.invars, args))

    def read(a: Any) -> Any:
        return a if isinstance(a, Literal) else env[a]

    for eqn in ir.eqns:
        invals = [read(a) for a in eqn.inputs]
        rule = checkify_rules.get(eqn.prim)
        if rule is None and eqn.prim.inline_param is not None:  # custom_jvp_call, custom_vjp_call, ...
            rule = checkify_rules[eqn.prim] = _side_rule(eqn.prim)
        with _at(eqn.source):
            if rule is None:
                outs = _bind(eqn.prim, invals, eqn.params)
            else:
                error, outs = rule(error, enabled, eqn.source, invals, eqn.params)
        env.update(zip(eqn.outputs, outs))
    return error, [materialize(read(a)) for a in ir.outvars]


def _values(invals: Sequence[Any]) -> list:
    return [materialize(v) for v in invals]


def _same_effects(error: Error, tree: ErrorTree, where: str) -> None:
    if tuple(sorted(error._pred)) != tree.effects:
        raise AssertionError(f"kiln internal error: checkify of {where} recorded the error slots "
                             f"{sorted(error._pred)}, expected {list(tree.effects)}")


# -- automatic checks ------------------------------------------------------------------------------------------

def _any(x: Any) -> Any:
    return x if abstractify(x).ndim == 0 else jnp.any(x)


def _check_nans(name: str, error: Error, enabled: frozenset, source: Any, outs: Sequence[Any]) -> Error:
    if NaNError not in enabled:
        return error
    tests = [_any(jnp.isnan(o)) for o in _values(outs) if dtypes.is_inexact(abstractify(o).dtype)]
    if not tests:
        return error
    pred = tests[0]
    for t in tests[1:]:
        pred = jnp.logical_or(pred, t)
    return assert_func(error, pred, NaNError(source, name))


def _nan_rule(prim: Any) -> Callable:
    def rule(error, enabled, source, invals, params):
        outs = _bind(prim, invals, params)
        return _check_nans(prim.name, error, enabled, source, outs), outs
    return rule


for _p in _NAN_PRIMS:
    checkify_rules[_p] = _nan_rule(_p)


def _div_rule(error, enabled, source, invals, params):
    if DivisionByZeroError in enabled:
        y = materialize(invals[1])
        error = assert_func(error, _any(jnp.equal(y, 0)), DivisionByZeroError(source))
    outs = _bind(_DIV, invals, params)
    return _check_nans(_DIV.name, error, enabled, source, outs), outs


checkify_rules[_DIV] = _div_rule


def _oob_payload(mask: Any, indices: Any, dims_map: Sequence[int], operand_shape: Sequence[int]) -> Any:
    """``int32[3]``: the first index out of bounds, its operand axis and that axis's size (JAX's payload)."""
    k = abstractify(indices).shape[-1]
    flat = jnp.argmax(jnp.reshape(mask, (-1,)))  # the first True
    axis = jnp.asarray(np.asarray(dims_map, _I32))[flat % k]
    size = jnp.asarray(np.asarray(operand_shape, _I32))[axis]
    value = jnp.reshape(indices, (-1,))[flat].astype(_I32)
    return jnp.stack([value, axis, size]).astype(_I32)


def _oob_check(error: Error, source: Any, name: str, operand_shape: tuple, indices: Any, dims_map: Sequence[int],
               window: Sequence[int]) -> Error:
    """Record an OOBError where a start index (the last axis of ``indices`` runs over ``dims_map``) puts its window
    of sizes ``window`` outside the operand."""
    aval = abstractify(indices)
    if aval.size == 0 or not dims_map:
        return error
    upper = np.asarray([operand_shape[d] - window[d] for d in dims_map])
    upper = jnp.asarray(np.minimum(upper, np.iinfo(aval.dtype).max).astype(aval.dtype))
    mask = jnp.greater(indices, upper)
    if np.issubdtype(aval.dtype, np.signedinteger):
        mask = jnp.logical_or(jnp.less(indices, 0), mask)
    payload = _oob_payload(mask, indices, dims_map, operand_shape)
    return assert_func(error, _any(mask), OOBError(source, name, operand_shape, payload))


def _starts(starts: Sequence[Any]) -> Any:
    return jnp.stack([jnp.asarray(s) for s in _values(starts)])


def _dynamic_slice_rule(error, enabled, source, invals, params):
    outs = _bind(dynamic_slice_p, invals, params)
    if OOBError in enabled and len(invals) > 1:
        shape = abstractify(invals[0]).shape
        error = _oob_check(error, source, "dynamic_slice", shape, _starts(invals[1:]), range(len(shape)),
                           params["slice_sizes"])
    return error, outs


def _dynamic_update_slice_rule(error, enabled, source, invals, params):
    outs = _bind(dynamic_update_slice_p, invals, params)
    if OOBError in enabled and len(invals) > 2:
        shape = abstractify(invals[0]).shape
        error = _oob_check(error, source, "dynamic_update_slice", shape, _starts(invals[2:]), range(len(shape)),
                           abstractify(invals[1]).shape)
    return error, outs


def _gather_rule(error, enabled, source, invals, params):
    outs = _bind(gather_p, invals, params)
    if OOBError in enabled:
        operand, indices = _values(invals)
        shape = abstractify(operand).shape
        error = _oob_check(error, source, "gather", shape, indices, params["dimension_numbers"].start_index_map,
                           params["slice_sizes"])
    return error, outs


def _scatter_rule(prim: Any) -> Callable:
    def rule(error, enabled, source, invals, params):
        outs = _bind(prim, invals, params)
        if OOBError in enabled:
            operand, indices, updates = _values(invals[:3])
            op, upd = abstractify(operand), abstractify(updates)
            dn = params["dimension_numbers"]
            window = [1] * op.ndim
            dims = [d for d in range(op.ndim) if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
            for u, d in zip(dn.update_window_dims, dims):
                window[d] = upd.shape[u]
            error = _oob_check(error, source, prim.name, op.shape, indices, dn.scatter_dims_to_operand_dims, window)
        return _check_nans(prim.name, error, enabled, source, outs), outs
    return rule


checkify_rules[dynamic_slice_p] = _dynamic_slice_rule
checkify_rules[dynamic_update_slice_p] = _dynamic_update_slice_rule
checkify_rules[gather_p] = _gather_rule
for _p in _SCATTERS:
    checkify_rules[_p] = _scatter_rule(_p)


# -- check: functionalized ---------------------------------------------------------------------------------------

def _check_rule(error, enabled, source, invals, params):
    new_error = params["err_tree"].unflatten(_values(invals))
    for effect in new_error._pred:
        if effect.error_type in enabled:
            error = update_error(error, new_error._pred[effect], new_error._code[effect], {},
                                 new_error._payload[effect], effect)
    return error._replace(_metadata={**new_error._metadata, **error._metadata}), []


checkify_rules[check_p] = _check_rule


# -- control flow -------------------------------------------------------------------------------------------------

def _merge_metadata(error: Error, found: list[dict]) -> dict:
    metadata = dict(error._metadata)
    for m in found:
        metadata.update(m)
    return metadata


def _cond_rule(error, enabled, source, invals, params):
    branches = params["branches"]
    if _untouched([b.ir for b in branches], enabled):
        return error, _bind(cond_p, invals, params)
    effects = frozenset().union(*(effects_of(b.ir, enabled) for b in branches))
    index, *ops = _values(invals)
    error = error._add_placeholder_effects(effects)
    tree = error._tree()
    found: list[dict] = []

    def branch(b: ClosedIR) -> Callable:
        def run(leaves, *xs):
            err, outs = checkify_ir(b.ir, b.consts, enabled, Error.tree_unflatten(tree, leaves), list(xs))
            _same_effects(err, tree, "a cond branch")
            found.append(err._metadata)
            return err._leaves(), outs
        return run
    leaves, outs = switch(index, [branch(b) for b in branches], error._leaves(), *ops)
    out = Error.tree_unflatten(tree, leaves)
    return out._replace(_metadata=_merge_metadata(error, found)), list(outs)


def _is_batched_while(cond: ClosedIR, body: ClosedIR) -> bool:
    """Whether this loop is a ``while`` that ``vmap`` made of one with a batched predicate (kiln's batching rule
    runs it while any element is active, masking the finished ones; see control/loops.py)."""
    def calls(ir: IR) -> set:
        return {e.params.get("name") for e in ir.eqns if e.prim is call_p}
    return {"while_cond", "while_body"} <= calls(body.ir) and "while_cond" in calls(cond.ir)


def _while_rule(error, enabled, source, invals, params):
    cond, body = params["cond"], params["body"]
    ncc, nbc = params["cond_nconsts"], params["body_nconsts"]
    if _untouched([cond.ir, body.ir], enabled):
        return error, _bind(while_p, invals, params)
    effects = effects_of(cond.ir, enabled) | effects_of(body.ir, enabled)
    if _is_batched_while(cond, body):
        raise CheckifyError("Checkify does not support batched while-loops (checkify-of-vmap-of-while). \nHint: if "
                            "possible, move the vmap to the outer level to get vmap-of-checkify-of-while.")
    vals = _values(invals)
    cc, bc, carry = vals[:ncc], vals[ncc:ncc + nbc], vals[ncc + nbc:]
    error, _ = checkify_ir(cond.ir, cond.consts, enabled, error, [*cc, *carry])  # the first test of the condition
    error = error._add_placeholder_effects(effects)
    tree = error._tree()
    found: list[dict] = []

    def cond_fun(state):
        _, c = state
        _, (pred,) = checkify_ir(cond.ir, cond.consts, frozenset(), init_error, [*cc, *c])
        return pred

    def body_fun(state):
        leaves, c = state
        err, out = checkify_ir(body.ir, body.consts, enabled, Error.tree_unflatten(tree, leaves), [*bc, *c])
        err, _ = checkify_ir(cond.ir, cond.consts, enabled, err, [*cc, *out])  # the next test of the condition
        _same_effects(err, tree, "a while_loop body")
        found.append(err._metadata)
        return err._leaves(), out
    leaves, out = while_loop(cond_fun, body_fun, (error._leaves(), carry))
    result = Error.tree_unflatten(tree, leaves)
    return result._replace(_metadata=_merge_metadata(error, found)), list(out)


def _scan_rule(error, enabled, source, invals, params):
    body = params["body"]
    if _untouched([body.ir], enabled):
        return error, _bind(scan_p, invals, params)
    effects = effects_of(body.ir, enabled)
    nc, nk = params["num_consts"], params["num_carry"]
    vals = _values(invals)
    consts, carry, xs = vals[:nc], vals[nc:nc + nk], vals[nc + nk:]
    error = error._add_placeholder_effects(effects)
    tree = error._tree()
    found: list[dict] = []

    def step(state, x):
        leaves, c = state
        err, outs = checkify_ir(body.ir, body.consts, enabled, Error.tree_unflatten(tree, leaves), [*consts, *c, *x])
        _same_effects(err, tree, "a scan body")
        found.append(err._metadata)
        return (err._leaves(), outs[:nk]), outs[nk:]
    (leaves, out_carry), ys = scan(step, (error._leaves(), carry), xs, length=params["length"],
                                   reverse=params["reverse"], unroll=params["unroll"])
    result = Error.tree_unflatten(tree, leaves)
    return result._replace(_metadata=_merge_metadata(error, found)), [*out_carry, *ys]


checkify_rules[cond_p] = _cond_rule
checkify_rules[while_p] = _while_rule
checkify_rules[scan_p] = _scan_rule


# -- calls ----------------------------------------------------------------------------------------------------------

# body ClosedIR -> {(enabled, slots of the incoming error): (checkified body, ErrorTree of its error output)}
_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_bodies.clear)


def _checkified_body(body: ClosedIR, enabled: frozenset, tree: ErrorTree, name: str) -> tuple[ClosedIR, ErrorTree]:
    """``body`` as a function of (error leaves, inputs) returning (error leaves, outputs), memoised."""
    per_body = _bodies.get(body)
    if per_body is None:
        per_body = _bodies[body] = {}
    key = (enabled, tree.effects)
    entry = per_body.get(key)
    if entry is None:
        in_tree = ErrorTree(tree.effects, ())
        n = in_tree.num_leaves
        out_trees: list[ErrorTree] = []

        def flat(*xs):
            err, outs = checkify_ir(body.ir, body.consts, enabled, Error.tree_unflatten(in_tree, xs[:n]), xs[n:])
            leaves, out_tree = err.tree_flatten()
            out_trees.append(out_tree)
            return [*leaves, *outs]
        avals = [a for e in tree.effects for a in (ShapedArray((), np.dtype(np.bool_)), ShapedArray((), _I32),
                                                   *e.shape_dtypes)]
        closed, _ = trace_to_ir(flat, avals + list(body.in_avals), name=name)
        entry = per_body[key] = (closed, out_trees[-1])
    return entry


def _split_outputs(error, out_tree, outs):
    """A checkified body's outputs split into the error it returns (keeping ``error``'s messages) and the
    body's own outputs."""
    n = out_tree.num_leaves
    result = Error.tree_unflatten(out_tree, outs[:n])
    return result._replace(_metadata={**error._metadata, **result._metadata}), list(outs[n:])


def _call_rule(error, enabled, source, invals, params):
    body = params["ir"]
    if _untouched([body.ir], enabled):
        return error, _bind(call_p, invals, params)
    leaves, tree = error.tree_flatten()
    closed, out_tree = _checkified_body(body, enabled, tree, params["name"])
    outs = bind_call(closed, [*leaves, *invals], params["name"])
    return _split_outputs(error, out_tree, outs)


def _remat_rule(error, enabled, source, invals, params):
    body = params["body"]
    if _untouched([body.ir], enabled):
        return error, _bind(remat_p, invals, params)
    leaves, tree = error.tree_flatten()
    closed, out_tree = _checkified_body(body, enabled, tree, params["name"])
    outs = remat_p.bind(*closed.consts, *leaves, *invals, body=call_body(closed), prevent_cse=params["prevent_cse"],
                        name=params["name"], policy=params["policy"])
    return _split_outputs(error, out_tree, outs)


def _xla_metadata_call_rule(error, enabled, source, invals, params):
    """As a jit call's: the checkified body, still one call carrying the metadata."""
    body = params["ir"]
    if _untouched([body.ir], enabled):
        return error, _bind(xla_metadata_call_p, invals, params)
    leaves, tree = error.tree_flatten()
    closed, out_tree = _checkified_body(body, enabled, tree, "xla_metadata_call")
    outs = xla_metadata_call_p.bind(*closed.consts, *leaves, *invals, **{**params, "ir": call_body(closed)})
    return _split_outputs(error, out_tree, outs)


_unchecked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_unchecked.clear)


def _without_checks(body: ClosedIR) -> ClosedIR:
    """``body`` with its ``check`` equations dropped (memoised)."""
    out = _unchecked.get(body)
    if out is None:
        def flat(*xs):
            return checkify_ir(body.ir, body.consts, frozenset(), init_error, xs)[1]
        closed, _ = trace_to_ir(flat, list(body.in_avals), name="body")
        out = _unchecked[body] = closed
    return out


def _side_rule(prim: Any) -> Callable:
    """Calls whose body carries rules of their own (custom derivatives): the checks run on a copy of the body, the
    results come from the call itself (its body without its ``check`` equations), so that its rules still apply to
    them. (JAX too adds no checks to a custom JVP or VJP rule.)"""
    def rule(error, enabled, source, invals, params):
        body = params[prim.inline_param]
        if effects_of(body.ir, enabled):
            error, _ = checkify_ir(body.ir, body.consts, enabled, error, _values(invals))
        if has_check(body.ir):
            stripped = _without_checks(body)
            if stripped.consts:  # the call's inputs are fixed: its body cannot take new constants
                raise CheckifyError(f"kiln internal error: checkify could not drop the checks of a {prim.name} body")
            params = {**params, prim.inline_param: stripped}
        rule_of = params.get("rule")
        traced = getattr(rule_of, "traced_rule", None)  # a differentiated call keeps its traced JVP/forward rule
        if isinstance(traced, ClosedIR) and not traced.consts and has_check(traced.ir):
            rule_of = copy.copy(rule_of)
            rule_of.traced_rule = _without_checks(traced)
            params = {**params, "rule": rule_of}
        return error, _bind(prim, invals, params)
    return rule


checkify_rules[call_p] = _call_rule
checkify_rules[remat_p] = _remat_rule
checkify_rules[xla_metadata_call_p] = _xla_metadata_call_rule


# -- the transformation -------------------------------------------------------------------------------------------

def checkify(f: Callable, errors: Any = user_checks) -> Callable:
    """Functionalize the ``check`` calls of ``f``, and add the automatic checks ``errors`` asks for
    (``jax.experimental.checkify.checkify``).

    Parameters
    ----------
    f : the function to check.
    errors : a set of error categories: ``user_checks`` (the default: ``checkify.check`` calls), ``nan_checks``,
        ``div_checks``, ``index_checks``, or unions of them (``float_checks``, ``automatic_checks``,
        ``all_checks``; combine with ``|``, remove with ``-``).

    Returns
    -------
    A function with ``f``'s arguments returning ``(err, out)``: ``out`` is ``f``'s result, ``err`` an
    :class:`Error` whose ``get()`` is the message of the first failed check (None when none failed) and whose
    ``throw()`` raises it. The function can be jitted, vmapped (``err`` is then batched: ``get()`` lists the failed
    elements) and differentiated.

    >>> def f(x):
    ...     return kiln.numpy.sin(x)
    >>> err, out = checkify(f, errors=float_checks)(kiln.numpy.inf)
    >>> err.get()
    'nan generated by primitive: sin.'
    """
    if not callable(f):
        raise TypeError(f"checkify: expected a function, got {type(f).__name__}")
    enabled = frozenset(errors)
    name = getattr(f, "__name__", None) or type(f).__name__

    @functools.wraps(f)
    def checked_fun(*args: Any, **kwargs: Any) -> tuple[Error, Any]:
        # As in JAX, the arguments are closed over: Python scalars, strings and NumPy arrays stay what they are.
        # Arrays (and traced values) enter the trace as its inputs, so that every operation on them is recorded
        # (a jitted function called on concrete arrays alone may run right away instead of being traced).
        leaves, in_tree = tree_util.tree_flatten((args, kwargs))
        dynamic = [i for i, x in enumerate(leaves) if isinstance(x, (Array, Tracer))]
        out_trees: list = []

        def traced(*xs: Any) -> list:
            full = list(leaves)
            for i, x in zip(dynamic, xs):
                full[i] = x
            a, k = tree_util.tree_unflatten(in_tree, full)
            out, tree = tree_util.tree_flatten(f(*a, **k))
            out_trees.append(tree)
            return out
        values = [leaves[i] for i in dynamic]
        closed, _ = trace_to_ir(traced, [abstractify(x) for x in values], name=name)
        error, outs = checkify_ir(closed.ir, closed.consts, enabled, init_error, values)
        return error, tree_util.tree_unflatten(out_trees[-1], outs)
    return checked_fun
