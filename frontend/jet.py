"""``kiln.experimental.jet``: Taylor-mode automatic differentiation (as ``jax.experimental.jet``).

``jet(fun, primals, series)`` propagates truncated Taylor series through ``fun``: the function is traced into
kiln's IR, and the IR is evaluated equation by equation on (primal, series) pairs with one rule per primitive,
``jet_rules[prim](primals_in, series_in, **params) -> (primal_out, series_out)``.

Inside, a series is a list of the K *Taylor coefficients* ``[x_1, ..., x_K]`` of ``x(t) = x_0 + x_1 t + x_2 t^2
+ ...`` (JAX's ``factorial_scaled=False``); ``jet`` converts from and to JAX's default, the derivatives
``x^(k) = k! x_k``. A term that is known to be zero is ``None`` (no array is made for it), and a value whose
every term is zero has the series ``None``. Integer and boolean values carry no series (as they carry no
tangent in ``kiln.jvp``). A rule is only called when at least one of its inputs has a nonzero series; the
series it gets are lists of K terms (some of them ``None``) and it returns a list of K terms, or ``None``.

The rules are the classic recurrences of Taylor arithmetic (Griewank and Walther, "Evaluating Derivatives",
ch. 13): products by Leibniz's rule, quotients and square roots by solving the product recurrence, and the
elementary functions through the linear ODE they satisfy, ``v' = f'(u) u'``, whose coefficients follow one
order at a time. Calls (``jit_call``) become calls of their Taylor-propagated body; custom-derivative calls and
``checkpoint`` are propagated through their body (their rules are first-order only, as in JAX); ``cond``,
``scan`` and ``while`` propagate through their branches and bodies.
"""
from __future__ import annotations

import math
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from . import lax
from .ad.api import _trace_flat
from .ad.custom import custom_jvp_call_p, custom_vjp_call_p
from .ad.logaddexp import logaddexp_e
from .ad.remat import name_p, remat_p
from .batching.custom_vmap import custom_vmap_call_p
from .control.cond import cond_p
from .control.loops import while_p
from .control.scan import scan_p
from .core import caches, dtypes, tree_util
from .core.avals import ShapedArray
from .core.call import bind_call, call_body, call_p
from .core.errors import KilnError
from .core.ir import IR, ClosedIR, Literal, Var
from .core.primitive import Primitive
from .core.source_info import at
from .core.source_info import fun_name as _fun_name
from .core.tracing import abstractify, device_put_eager, materialize, trace_to_ir
from .lax import collectives as _coll
from .lax import elementwise as _ew
from .lax import indexing as _ix
from .lax import misc as _misc
from .lax import reduction as _red
from .lax import sharding as _sharding
from .lax import special as _sp
from .lax import structural as _st
from .lax import windowed as _wd
from .lax.convolution import conv_general_dilated_p as _conv_p
from .lax.fft import fft_p as _fft_p
from .lax.sorting import clamp_p
from .xla_metadata_call import xla_metadata_call_p

__all__ = ["jet", "jet_rules", "JetError", "JetInputError"]


class JetError(KilnError, NotImplementedError):
    """``jet`` met an operation it cannot propagate a Taylor series through (a primitive without a rule)."""


class JetInputError(KilnError, TypeError, ValueError):
    """Bad arguments to ``jet``. Both a ``TypeError`` and a ``ValueError``: JAX raises one or the other,
    depending on the input (``ValueError`` for inconsistent series lengths and non-array primals)."""


Rule = Callable[..., Any]
jet_rules: dict[Primitive, Rule] = {}

# Primitives with float results whose Taylor series is zero (piecewise constant, or cut off on purpose).
_zero_series: set[Primitive] = set()

_U, _B = _ew.unary_prims, _ew.binary_prims
_S = _sp.special_unary_prims
_R = _red.reduce_prims


# ---------------------------------------------------------------------------------------------------
# The public function
# ---------------------------------------------------------------------------------------------------
def jet(fun: Callable, primals: Sequence[Any], series: Sequence[Sequence[Any]], factorial_scaled: bool = True):
    r"""Taylor-mode higher-order automatic differentiation, as ``jax.experimental.jet.jet``.

    Parameters
    ----------
    fun : callable
        The function, taking ``len(primals)`` positional array arguments and returning an array, a scalar
        or a pytree of them.
    primals : tuple or list
        The point: one array (or scalar) per positional argument of ``fun``.
    series : tuple or list
        One list per primal of its higher-order terms ``[x_1, ..., x_K]``, each of the primal's shape and
        dtype; every list has the same length K, the order of the truncated series. With
        ``factorial_scaled=True`` (the default) the terms are derivatives along a path
        ``x(t)``: ``x_k = d^k x / dt^k`` at ``t = 0``; with ``False``, they are Taylor coefficients
        (``x_k = x^(k) / k!``).
    factorial_scaled : bool
        Whether input and output terms are scaled by ``k!`` (derivatives) or not (Taylor coefficients).

    Returns
    -------
    (primal_out, series_out)
        ``primal_out = fun(*primals)``; ``series_out`` has the structure of ``primal_out`` with each leaf
        replaced by the list of its K terms: the derivatives ``d^k f(x(t)) / dt^k`` at ``t = 0`` (Taylor
        coefficients with ``factorial_scaled=False``). An output that does not depend on the inputs has
        zero terms.

    Examples
    --------
    With ``h(z) = z**3`` at ``z = 0.5``, ``h_0 = 0.125``, ``h_1 = 3 z^2 = 0.75``, ``h_2 = 6 z = 3``: the
    series of ``sin(h(z))`` follows Faà di Bruno's formula.

    >>> f0, (f1, f2) = jet(kiln.numpy.sin, (0.125,), ((0.75, 3.0),))
    >>> # f1 == cos(h0) * h1,  f2 == -sin(h0) * h1**2 + cos(h0) * h2

    Integer and boolean primals carry no series (their terms are checked, then taken as zero), as
    ``kiln.jvp`` gives them no tangent. Operations without a Taylor rule raise :class:`JetError`.
    """
    where = "kiln.experimental.jet"
    if not callable(fun):
        raise JetInputError(f"{where}: the first argument must be a callable (the function to expand), got "
                            f"{type(fun).__name__} {fun!r:.60}; call jet(fun, primals, series)")
    name = _fun_name(fun)
    if not isinstance(primals, (tuple, list)):
        raise JetInputError(f"{where}({name}): primals must be a tuple or list with one array per argument of "
                            f"{name}, got {type(primals).__name__}; write primals=(x,) for one argument")
    if not isinstance(series, (tuple, list)):
        raise JetInputError(f"{where}({name}): series must be a tuple or list with one list of terms per primal, "
                            f"got {type(series).__name__}; write series=([x1, x2],) for one argument")
    if len(primals) != len(series):
        raise JetInputError(f"{where}({name}): got {len(primals)} primal(s) and {len(series)} series; pass one "
                            "list of terms [x1, ..., xK] per primal")
    if not primals:
        raise JetInputError(f"{where}({name}): primals is empty; pass at least one primal and its series")
    for i, terms in enumerate(series):
        if not isinstance(terms, (tuple, list)):
            raise JetInputError(f"{where}({name}): the series of argument {i} must be a list of terms "
                                f"[x1, ..., xK], got {type(terms).__name__}; write [x1] for one term")
    lengths = [len(terms) for terms in series]
    if len(set(lengths)) != 1:
        raise JetInputError(f"{where}({name}): jet terms have inconsistent lengths for different arguments: "
                            f"{lengths}. Every argument needs the same number of terms (the order of the "
                            "series); pad the shorter lists with zeros")
    order = lengths[0]

    flat_p, flat_s, in_series = [], [], []
    for i, (x, terms) in enumerate(zip(primals, series)):
        x, aval = _check_leaf(where, name, x, f"primal value at position {i}")
        flat_p.append(x)
        checked = []
        for j, t in enumerate(terms):
            t, t_aval = _check_leaf(where, name, t, f"term {j} for argument {i}")
            what = f"term {j} (order {j + 1}) of argument {i}"
            if t_aval.shape != aval.shape:
                raise JetInputError(f"{where}({name}): {what} has shape {t_aval.shape}, but its primal has shape "
                                    f"{aval.shape}; every term must have its primal's shape and dtype")
            if t_aval.dtype != aval.dtype:
                if not t_aval.weak_type:
                    raise JetInputError(
                        f"{where}({name}): {what} has dtype {t_aval.dtype.name}, but its primal has dtype "
                        f"{aval.dtype.name}; every term must have its primal's dtype (cast it with "
                        f".astype({aval.dtype.name}))")
                t = lax.convert_element_type(t, aval.dtype, weak_type=aval.weak_type)
            elif isinstance(t, (np.ndarray, np.generic)):  # a kiln array, so that the terms out are arrays too
                t = device_put_eager(np.asarray(t, aval.dtype))
            checked.append(t)
        flat_s.append(checked)
        in_series.append(dtypes.is_inexact(aval.dtype) and order > 0)

    # Traced with its inputs known: Python control flow on values that carry no series works, as under
    # kiln.jvp; converting one that carries a series to a Python value raises.
    closed, out_tree = _trace_flat(fun, flat_p, tree_util.tree_structure(tuple(flat_p)), name, kind="jvp")
    series_in: list[Any] = []
    for terms, carries in zip(flat_s, in_series):
        if not carries:
            series_in.append(None)
            continue
        if factorial_scaled:
            terms = [_div_const(t, math.factorial(k + 1)) for k, t in enumerate(terms)]
        series_in.append(list(terms))
    outs, out_series = jet_eval(closed.ir, closed.consts, flat_p, series_in, order)
    result = []
    for p, s in zip(outs, out_series):
        terms = [_zeros_like(p) for _ in range(order)] if s is None else [
            _zeros_like(p) if t is None else materialize(t) for t in s]
        if factorial_scaled:
            terms = [_mul_const(t, math.factorial(k + 1)) for k, t in enumerate(terms)]
        result.append(terms)
    return tree_util.tree_unflatten(out_tree, outs), tree_util.tree_unflatten(out_tree, result)


def _check_leaf(where: str, name: str, x: Any, what: str) -> tuple[Any, ShapedArray]:
    """``x`` (a Python scalar as an array of its type) and its abstract value; raises if it is not an array."""
    if not tree_util.treedef_is_leaf(tree_util.tree_structure(x)) or x is None:
        raise JetInputError(f"{where}({name}): {what} is not an array (got {type(x).__name__}); jet takes one "
                            "array or scalar per argument and per term (pytrees are not expanded, as in JAX): "
                            "pass the leaves as separate arguments")
    try:
        aval = abstractify(x)
    except TypeError:
        raise JetInputError(f"{where}({name}): {what} is not an array: {type(x).__name__} {x!r:.60}; pass "
                            "arrays or numbers") from None
    if isinstance(x, (bool, int, float, complex)):
        x = lax.convert_element_type(x, aval.dtype, weak_type=aval.weak_type)
    return x, aval


# ---------------------------------------------------------------------------------------------------
# The interpreter
# ---------------------------------------------------------------------------------------------------
def jet_eval(ir: IR, consts: Sequence[Any], primals: Sequence[Any], series: Sequence[Any], order: int):
    """Evaluate ``ir`` on primals and their series (each ``None`` or a list of ``order`` Taylor coefficients,
    ``None`` for a zero term); returns (primal outputs, output series)."""
    penv: dict[Var, Any] = dict(zip(ir.constvars, consts))
    penv.update(zip(ir.invars, primals))
    senv: dict[Var, Any] = {}
    for v, s in zip(ir.invars, series):
        senv[v] = _normalize(s, v.aval)

    def read_p(a):
        return a if isinstance(a, Literal) else penv[a]

    def read_s(a):
        return None if isinstance(a, Literal) else senv.get(a)

    for eqn in ir.eqns:
        with at(eqn.source):
            ps = [read_p(a) for a in eqn.inputs]
            ss = [read_s(a) for a in eqn.inputs]
            multi = eqn.prim.multiple_results
            if all(s is None for s in ss):
                outs = eqn.prim.bind(*ps, **eqn.params)
                outs = outs if multi else [outs]
                souts = [None] * len(eqn.outputs)
            elif eqn.prim in _zero_series or (eqn.prim not in jet_rules and not any(
                    dtypes.is_inexact(v.aval.dtype) for v in eqn.outputs)):
                # No series flows through (a comparison, argmax, an integer result, a print).
                outs = eqn.prim.bind(*ps, **eqn.params)
                outs = outs if multi else [outs]
                souts = [None] * len(eqn.outputs)
            else:
                rule = jet_rules.get(eqn.prim)
                if rule is None:
                    where = f", at {eqn.source}" if eqn.source is not None else ""
                    raise JetError(
                        f"kiln.experimental.jet: jet has no Taylor rule for primitive {eqn.prim.name!r}, so it "
                        f"cannot propagate a series through it (its result {_avals(eqn)}{where} depends on "
                        "jet's inputs). Express the computation with operations jet supports, or apply "
                        "kiln.lax.stop_gradient to the inputs of this operation if its series may be taken as "
                        "zero.")
                full = [[None] * order if s is None else s for s in ss]
                outs, souts = rule(ps, full, **eqn.params)
                if not multi:
                    outs, souts = [outs], [souts]
        for v, o, s in zip(eqn.outputs, outs, souts):
            penv[v] = o
            senv[v] = _normalize(s, v.aval)
    out_p = [materialize(read_p(a)) for a in ir.outvars]
    out_s = [read_s(a) for a in ir.outvars]
    return out_p, out_s


def _avals(eqn) -> str:
    return ", ".join(v.aval.str_short() for v in eqn.outputs)


def _normalize(s: Any, aval: ShapedArray) -> Any:
    """A series as the interpreter keeps it: ``None`` when every term is zero or the value is not inexact."""
    if s is None or not dtypes.is_inexact(aval.dtype) or all(t is None for t in s):
        return None
    return list(s)


# ---------------------------------------------------------------------------------------------------
# Arithmetic of terms (None is a zero term) and of Taylor lists [v_0, v_1, ..., v_n]
# ---------------------------------------------------------------------------------------------------
def _zeros_like(x: Any) -> Any:
    return lax.full_like(x, 0)


def _div_const(t: Any, c: int) -> Any:
    return t if c == 1 else lax.div(t, lax.full_like(t, c))


def _mul_const(t: Any, c: int) -> Any:
    return t if c == 1 else lax.mul(t, lax.full_like(t, c))


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return lax.add(a, b)


def _sub(a: Any, b: Any) -> Any:
    if b is None:
        return a
    if a is None:
        return lax.neg(b)
    return lax.sub(a, b)


def _mul(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    return lax.mul(a, b)


def _scale(a: Any, c: float) -> Any:
    if a is None or c == 0:
        return None
    if c == 1:
        return a
    if c == -1:
        return lax.neg(a)
    return lax.mul(a, lax.full_like(a, c))


def _sum(terms) -> Any:
    total = None
    for t in terms:
        total = _add(total, t)
    return total


def _const_list(like: Any, value: float, n: int) -> list:
    """The Taylor list of a constant: [value, 0, ..., 0] of length n."""
    return [lax.full_like(like, value)] + [None] * (n - 1)


def t_add(u: list, w: list) -> list:
    return [_add(a, b) for a, b in zip(u, w)]


def t_sub(u: list, w: list) -> list:
    return [_sub(a, b) for a, b in zip(u, w)]


def t_scale(u: list, c: float) -> list:
    return [_scale(a, c) for a in u]


def t_mul(u: list, w: list, op: Callable[[Any, Any], Any] = _mul) -> list:
    """The product (Leibniz): v_k = sum_j op(u_j, w_{k-j}); ``op`` any bilinear map (mul, dot_general, conv)."""
    n = min(len(u), len(w))
    return [_sum(op(u[j], w[k - j]) for j in range(k + 1)) for k in range(n)]


def t_div(u: list, w: list) -> list:
    """The quotient v = u / w: from u = v w, v_k = (u_k - sum_{j<k} v_j w_{k-j}) / w_0."""
    n = min(len(u), len(w))
    v: list = []
    for k in range(n):
        num = _sub(u[k], _sum(_mul(v[j], w[k - j]) for j in range(k)))
        v.append(None if num is None else lax.div(num, w[0]))
    return v


def t_deriv(u: list) -> list:
    """The Taylor list of u'(t) (one order shorter)."""
    return [_scale(u[k + 1], k + 1) for k in range(len(u) - 1)]


def t_integ(v0: Any, w: list) -> list:
    """The Taylor list of v with v(0) = v0 and v' = w (one order longer than w)."""
    return [v0] + [_scale(w[k - 1], 1 / k) for k in range(1, len(w) + 1)]


def t_chain(v0: Any, u: list, c: list) -> list:
    """v = f(u) from v(0) = v0 and the series ``c`` of f'(u) (at least len(u) - 1 terms): v' = c u'."""
    return t_integ(v0, t_mul(c, t_deriv(u)))


def t_ode(v0: Any, u: list, g: Callable[[list], list]) -> list:
    """v = f(u) where f' = g(f) (tanh' = 1 - tanh^2, ...): v' = g(v) u', solved one order at a time (g's term k
    depends on v_0..v_k only)."""
    du = t_deriv(u)
    v = [v0]
    for k in range(1, len(u)):
        c = g(v)  # the terms c_0 .. c_{k-1}
        v.append(_scale(_sum(_mul(c[j], du[k - 1 - j]) for j in range(k)), 1 / k))
    return v


def t_exp(u: list, v0: Any = None) -> list:
    """v = exp(u): v' = v u', so v_k = sum_{j=1..k} (j/k) u_j v_{k-j}."""
    v = [lax.exp(u[0]) if v0 is None else v0]
    for k in range(1, len(u)):
        v.append(_sum(_scale(_mul(u[j], v[k - j]), j / k) for j in range(1, k + 1)))
    return v


def t_log(u: list, v0: Any, denominator: Any) -> list:
    """v = log(u) (log1p: ``denominator`` 1 + u_0): u v' = u', so v_k = (u_k - sum_{j<k} (j/k) v_j u_{k-j}) / u_0."""
    v = [v0]
    for k in range(1, len(u)):
        num = _sub(u[k], _sum(_scale(_mul(v[j], u[k - j]), j / k) for j in range(1, k)))
        v.append(None if num is None else lax.div(num, denominator))
    return v


def t_sincos(u: list, s0: Any, c0: Any, sign: float) -> tuple[list, list]:
    """s = sin(u), c = cos(u) (sign -1), or sinh and cosh (sign +1): s' = c u', c' = sign s u'."""
    s, c = [s0], [c0]
    for k in range(1, len(u)):
        s.append(_sum(_scale(_mul(u[j], c[k - j]), j / k) for j in range(1, k + 1)))
        c.append(_sum(_scale(_mul(u[j], s[k - j]), sign * j / k) for j in range(1, k + 1)))
    return s, c


def t_sqrt(u: list, v0: Any) -> list:
    """v = sqrt(u): from v v = u, v_k = (u_k - sum_{0<j<k} v_j v_{k-j}) / (2 v_0)."""
    v = [v0]
    two_v0 = None
    for k in range(1, len(u)):
        num = _sub(u[k], _sum(_mul(v[j], v[k - j]) for j in range(1, k)))
        if num is None:
            v.append(None)
            continue
        two_v0 = lax.add(v0, v0) if two_v0 is None else two_v0
        v.append(lax.div(num, two_v0))
    return v


def t_pow(u: list, r: Any, v0: Any) -> list:
    """v = u ** r, r constant (a number, or an array of u's shape): from u v' = r u' v,
    v_k = sum_{j=1..k} ((r + 1) j - k) u_j v_{k-j} / (k u_0)."""
    v = [v0]
    for k in range(1, len(u)):
        acc = None
        for j in range(1, k + 1):
            prod = _mul(u[j], v[k - j])
            if prod is None:
                continue
            if isinstance(r, (int, float)):
                prod = _scale(prod, (r + 1) * j - k)
            else:
                prod = lax.mul(prod, lax.sub(lax.mul(lax.add(r, 1.0), float(j)), float(k)))
            acc = _add(acc, prod)
        v.append(None if acc is None else lax.div(acc, lax.mul(u[0], float(k))))
    return v


def t_pow_int(u: list, n: int) -> list:
    """u ** n for an integer n >= 1, by repeated squaring of Taylor lists (exact at u_0 = 0)."""
    result, base = None, u
    while n:
        if n & 1:
            result = base if result is None else t_mul(result, base)
        n >>= 1
        if n:
            base = t_mul(base, base)
    return result


# ---------------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------------
def _unary(prim: Primitive, taylor: Callable[[list, Any], list]) -> None:
    """Register ``prim``'s rule from ``taylor(u, v0) -> v``, the Taylor list of the result (v0 = prim(u_0))."""
    def rule(primals, series, **params):
        (x,), (s,) = primals, series
        out = prim.bind(x, **params)
        return out, taylor([x] + list(s), out)[1:]
    jet_rules[prim] = rule


def _by_derivative(prim: Primitive, derivative: Callable[[list], list]) -> None:
    """Register ``prim``'s rule from the Taylor list of its derivative f'(u) (given u's list, one order
    shorter than the result's)."""
    _unary(prim, lambda u, v0: t_chain(v0, u, derivative(u[:-1])))


def _one(u: list) -> list:
    return _const_list(u[0], 1.0, len(u))


def _square(u: list) -> list:
    return t_mul(u, u)


_unary(_U["exp"], lambda u, v0: t_exp(u, v0))
_unary(_U["log"], lambda u, v0: t_log(u, v0, u[0]))
_unary(_U["log1p"], lambda u, v0: t_log(u, v0, lax.add(u[0], lax.full_like(u[0], 1))))
_unary(_U["expm1"], lambda u, v0: [v0] + t_exp(u)[1:])
_unary(_U["sin"], lambda u, v0: t_sincos(u, v0, lax.cos(u[0]), -1.0)[0])
_unary(_U["cos"], lambda u, v0: t_sincos(u, lax.sin(u[0]), v0, -1.0)[1])
_unary(_S["sinh"], lambda u, v0: t_sincos(u, v0, lax.cosh(u[0]), 1.0)[0])
_unary(_S["cosh"], lambda u, v0: t_sincos(u, lax.sinh(u[0]), v0, 1.0)[1])
_unary(_U["tanh"], lambda u, v0: t_ode(v0, u, lambda y: t_sub(_one(y), _square(y))))
_unary(_U["tan"], lambda u, v0: t_ode(v0, u, lambda y: t_add(_one(y), _square(y))))
_unary(_U["logistic"], lambda u, v0: t_ode(v0, u, lambda y: t_sub(y, _square(y))))
_unary(_U["sqrt"], t_sqrt)
_unary(_U["rsqrt"], lambda u, v0: t_pow(u, -0.5, v0))
_unary(_U["cbrt"], lambda u, v0: t_pow(u, 1 / 3, v0))
_unary(_U["square"], lambda u, v0: [v0] + _square(u)[1:])
_unary(_S["erf_inv"], lambda u, v0: t_ode(v0, u, lambda y: t_scale(t_exp(_square(y)), math.sqrt(math.pi) / 2)))
_by_derivative(_S["erf"], lambda u: t_scale(t_exp(t_scale(_square(u), -1.0)), 2 / math.sqrt(math.pi)))
_by_derivative(_S["erfc"], lambda u: t_scale(t_exp(t_scale(_square(u), -1.0)), -2 / math.sqrt(math.pi)))
_by_derivative(_S["atan"], lambda u: t_div(_one(u), t_add(_one(u), _square(u))))
_by_derivative(_S["atanh"], lambda u: t_div(_one(u), t_sub(_one(u), _square(u))))
_by_derivative(_S["asin"], lambda u: _rsqrt_list(t_sub(_one(u), _square(u))))
_by_derivative(_S["acos"], lambda u: t_scale(_rsqrt_list(t_sub(_one(u), _square(u))), -1.0))
_by_derivative(_S["asinh"], lambda u: _rsqrt_list(t_add(_one(u), _square(u))))
_by_derivative(_S["acosh"], lambda u: _rsqrt_list(t_mul(t_sub(u, _one(u)), t_add(u, _one(u)))))


def _rsqrt_list(u: list) -> list:
    return t_pow(u, -0.5, lax.rsqrt(u[0]))


def _integer_pow_rule(primals, series, *, y):
    (x,), (s,) = primals, series
    out = _sp.integer_pow_p.bind(x, y=y)
    if y == 0:
        return out, None
    u = [x] + list(s)
    v = t_pow_int(u, abs(y))
    if y < 0:
        v = t_div(_one(u), v)
    return out, v[1:]


jet_rules[_sp.integer_pow_p] = _integer_pow_rule


def _bilinear(prim: Primitive, params: dict, x, y, sx, sy):
    def op(a, b):
        return None if a is None or b is None else prim.bind(a, b, **params)
    v = t_mul([x] + list(sx), [y] + list(sy), op)
    return v[0], v[1:]


def _bilinear_rule(prim: Primitive) -> Rule:
    def rule(primals, series, **params):
        (x, y), (sx, sy) = primals, series
        return _bilinear(prim, params, x, y, sx, sy)
    return rule


for _p in (_B["mul"], _red.dot_general_p, _conv_p):
    jet_rules[_p] = _bilinear_rule(_p)


def _div_rule(primals, series):
    (x, y), (sx, sy) = primals, series
    v = t_div([x] + list(sx), [y] + list(sy))
    return v[0], v[1:]


jet_rules[_B["div"]] = _div_rule


def _pow_rule(primals, series):
    (x, y), (sx, sy) = primals, series
    out = _B["pow"].bind(x, y)
    u = [x] + list(sx)
    if all(t is None for t in sy):  # a constant exponent: u v' = y u' v (also right for a negative base)
        return out, t_pow(u, y, out)[1:]
    # x ** y = exp(y log x)
    z = t_mul([y] + list(sy), t_log(u, lax.log(x), x))
    return out, t_exp(z, out)[1:]


jet_rules[_B["pow"]] = _pow_rule


def _atan2_rule(primals, series):
    (x, y), (sx, sy) = primals, series
    out = _B["atan2"].bind(x, y)
    ux, uy = [x] + list(sx), [y] + list(sy)
    n = len(sx)
    # atan2(x, y)' = (y x' - x y') / (x^2 + y^2)
    num = t_sub(t_mul(uy[:n], t_deriv(ux)), t_mul(ux[:n], t_deriv(uy)))
    den = t_add(_square(ux[:n]), _square(uy[:n]))
    return out, t_integ(out, t_div(num, den))[1:]


jet_rules[_B["atan2"]] = _atan2_rule


def _rem_rule(primals, series):
    # rem(x, y) = x - y * trunc(x / y), the quotient piecewise constant.
    (x, y), (sx, sy) = primals, series
    out = _B["rem"].bind(x, y)
    if all(t is None for t in sy):
        return out, list(sx)
    q = lax.div(lax.sub(x, out), y)
    return out, [_sub(a, _mul(q, b)) for a, b in zip(sx, sy)]


jet_rules[_B["rem"]] = _rem_rule


def _minmax_rule(prim: Primitive, pick: Callable) -> Rule:
    def rule(primals, series):
        (x, y), (sx, sy) = primals, series
        out = prim.bind(x, y)
        wins, tie = pick(x, y), lax.eq(x, y)
        terms = []
        for a, b in zip(sx, sy):
            if a is None and b is None:
                terms.append(None)
                continue
            a = _zeros_like(x) if a is None else a
            b = _zeros_like(y) if b is None else b
            # The chosen operand's term; where they tie, the mean of both (as JAX's rule).
            mean = lax.mul(lax.add(a, b), lax.full_like(a, 0.5))
            terms.append(lax.select(tie, mean, lax.select(wins, a, b)))
        return out, terms
    return rule


jet_rules[_B["max"]] = _minmax_rule(_B["max"], lax.gt)
jet_rules[_B["min"]] = _minmax_rule(_B["min"], lax.lt)


def _abs_rule(primals, series):
    (x,), (s,) = primals, series
    if abstractify(x).dtype.kind == "c":
        raise JetError("kiln.experimental.jet: jet has no Taylor rule for primitive 'abs' of a complex value "
                       "(|z| is not analytic); write it as sqrt(real(z)**2 + imag(z)**2)")
    out = _U["abs"].bind(x)
    sign = lax.select(lax.lt(x, lax.full_like(x, 0)), lax.full_like(x, -1), lax.full_like(x, 1))
    return out, [_mul(t, sign) for t in s]


jet_rules[_U["abs"]] = _abs_rule


def _reduce_chooser_rule(prim: Primitive) -> Rule:
    """reduce_max/min: the terms of the chosen elements, averaged over ties (as JAX's rule)."""
    def rule(primals, series, *, axes):
        (x,), (s,) = primals, series
        out = prim.bind(x, axes=axes)
        aval = abstractify(x)
        kept = tuple(i for i in range(aval.ndim) if i not in axes)
        location = lax.convert_element_type(lax.eq(x, lax.broadcast_in_dim(out, aval.shape, kept)), aval.dtype)
        counts = lax.reduce_sum(location, axes)
        return out, [None if t is None else lax.div(lax.reduce_sum(lax.mul(t, location), axes), counts)
                     for t in s]
    return rule


jet_rules[_R["reduce_max"]] = _reduce_chooser_rule(_R["reduce_max"])
jet_rules[_R["reduce_min"]] = _reduce_chooser_rule(_R["reduce_min"])


# -- linear primitives: the same operation on each term ------------------------------------------------
def _linear(prim: Primitive, argnums: Sequence[int] | None = None) -> None:
    """Register the rule of a primitive linear in the operands ``argnums`` (all by default; the others, such as
    indices, are passed as they are)."""
    def rule(primals, series, **params):
        out = prim.bind(*primals, **params)
        lin = range(len(primals)) if argnums is None else argnums
        terms = []
        for k in range(len(series[0])):
            if all(series[i][k] is None for i in lin):
                terms.append(None)
                continue
            args = list(primals)
            for i in lin:
                t = series[i][k]
                args[i] = _zeros_like(primals[i]) if t is None else t
            terms.append(prim.bind(*args, **params))
        if not prim.multiple_results:
            return out, terms
        return out, [[None if t is None else t[i] for t in terms] for i in range(len(out))]
    jet_rules[prim] = rule


for _p in (_U["neg"], _B["add"], _B["sub"], _st.broadcast_in_dim_p, _st.reshape_p, _st.transpose_p, _st.rev_p,
           _st.slice_p, _st.concatenate_p, _st.pad_p, _R["reduce_sum"], _wd.cumsum_p, _sp.real_p, _sp.imag_p,
           _sp.complex_p, _sp.conj_p, _fft_p, _misc.reduce_precision_p, _misc.optimization_barrier_p,
           _misc.xla_metadata_value_p, _sharding.sharding_constraint_p, name_p, _coll.psum_p, _coll.all_gather_p,
           _coll.ppermute_p, _coll.all_to_all_p, _coll.psum_scatter_p, _coll.pvary_p):
    _linear(_p)
_linear(_ew.select_p, (1, 2))
_linear(_st.dynamic_slice_p, (0,))
_linear(_st.dynamic_update_slice_p, (0, 1))
_linear(_ix.gather_p, (0,))
_linear(_ix.scatter_add_p, (0, 2))


def _convert_rule(primals, series, *, new_dtype, weak_type):
    (x,), (s,) = primals, series
    out = _ew.convert_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if not dtypes.is_inexact(new_dtype):  # to integers or booleans: piecewise constant
        return out, None
    return out, [None if t is None else _ew.convert_p.bind(t, new_dtype=new_dtype, weak_type=weak_type) for t in s]


jet_rules[_ew.convert_p] = _convert_rule


def _reduce_window_rule(primals, series, *, computation, **params):
    if computation != "add":
        raise JetError(f"kiln.experimental.jet: jet has no Taylor rule for reduce_window with computation "
                       f"{computation!r} (max/min pooling); only sums (computation 'add') are supported")
    (x, init), (sx, sinit) = primals, series
    out = _wd.reduce_window_p.bind(x, init, computation=computation, **params)
    terms = []
    for a, b in zip(sx, sinit):
        if a is None and b is None:
            terms.append(None)
            continue
        terms.append(_wd.reduce_window_p.bind(_zeros_like(x) if a is None else a, _zeros_like(init) if b is None
                                              else b, computation=computation, **params))
    return out, terms


jet_rules[_wd.reduce_window_p] = _reduce_window_rule

# Piecewise constant (or cut off): zero series, as JAX's.
_zero_series.update([_U["sign"], _U["floor"], _U["ceil"], _ew.round_p, _ew.stop_gradient_p])


# -- rules by composition: the primitive written with others, traced, and expanded -----------------------
def _composite(prim: Primitive, build: Callable[..., Any]) -> None:
    """Register ``prim``'s rule by expanding ``build(*operands, **params)`` (written with primitives that have
    rules); the primal result is ``prim``'s own."""
    def rule(primals, series, **params):
        out = prim.bind(*primals, **params)
        avals = [abstractify(p) for p in primals]
        closed, _ = trace_to_ir(lambda *xs: [build(*xs, **params)], avals, name=f"jet({prim.name})")
        _, (s,) = jet_eval(closed.ir, closed.consts, primals, series, len(series[0]))
        return out, s
    jet_rules[prim] = rule


def _cumulative(combine: Callable) -> Callable:
    def build(x, *, axis, reverse):
        return _wd.prefix_scan(lambda a, b: [combine(a[0], b[0])], [x], axis, reverse)[0]
    return build


_composite(_wd.cumprod_p, _cumulative(lax.mul))
_composite(_wd.cummax_p, _cumulative(lax.max))
_composite(_wd.cummin_p, _cumulative(lax.min))
_composite(clamp_p, lambda lo, x, hi: lax.min(lax.max(lo, x), hi))  # (as JAX's jet)
_composite(_wd.cumlogsumexp_p, _cumulative(logaddexp_e))


def _pairwise_product(x, *, axes):
    """reduce_prod as a tree of pairwise products (only multiplications: right where elements are zero)."""
    aval = abstractify(x)
    kept = [i for i in range(aval.ndim) if i not in axes]
    kshape = tuple(aval.shape[i] for i in kept)
    n = int(np.prod([aval.shape[a] for a in axes], dtype=np.int64))
    if n == 0:
        return lax.broadcast_in_dim(lax.literal(1, aval.dtype, aval.weak_type), kshape, ())
    y = lax.reshape(lax.transpose(x, tuple(kept) + tuple(axes)), kshape + (n,))
    last = len(kshape)
    while n > 1:
        h = n // 2
        starts, limits = [0] * (last + 1), list(kshape) + [h]
        first = lax.slice(y, starts, limits)
        second = lax.slice(y, starts[:-1] + [h], list(kshape) + [2 * h])
        prod = lax.mul(first, second)
        if n % 2:
            prod = lax.concatenate([prod, lax.slice(y, starts[:-1] + [2 * h], list(kshape) + [n])], last)
        y, n = prod, h + n % 2
    return lax.reshape(y, kshape)


_composite(_R["reduce_prod"], _pairwise_product)


# ---------------------------------------------------------------------------------------------------
# Calls and control flow
# ---------------------------------------------------------------------------------------------------
def _has_series(s: Any) -> bool:
    return s is not None and any(t is not None for t in s)


_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
caches.register(_memo.clear)


def jet_ir(closed: ClosedIR, order: int, nonzero: Sequence[bool],
           instantiate: Sequence[bool] | bool = False) -> tuple[ClosedIR, list[bool]]:
    """The IR of ``(primals, series of the nonzero inputs) -> (outputs, series of the nonzero outputs)``: each
    series ``order`` arrays, input by input (output by output). ``instantiate`` forces an output's series to be
    there (zeros where it is zero), as loops and branches need. Memoised per (IR, order, pattern)."""
    nonzero = tuple(bool(n) for n in nonzero)
    n_out = len(closed.out_avals)
    inst = tuple([bool(instantiate)] * n_out if isinstance(instantiate, bool) else [bool(i) for i in instantiate])
    key = (order, nonzero, inst)
    memo = _memo.setdefault(closed, {})
    if key in memo:
        return memo[key]
    in_avals = closed.in_avals
    s_avals = [a for a, nz in zip(in_avals, nonzero) if nz for _ in range(order)]
    out_nonzero: list[bool] = []

    def fun(*args):
        primals, rest = list(args[:len(in_avals)]), iter(args[len(in_avals):])
        series = [[next(rest) for _ in range(order)] if nz else None for nz in nonzero]
        outs, souts = jet_eval(closed.ir, closed.consts, primals, series, order)
        flat = []
        for p, s, i, aval in zip(outs, souts, inst, closed.out_avals):
            present = s is not None or i
            out_nonzero.append(present)
            if present:
                flat.extend(_as_aval(_zeros_like(p) if s is None or t is None else t, aval)
                            for t in (s or [None] * order))
        return outs + flat

    new, _ = trace_to_ir(fun, list(in_avals) + s_avals, name="jet")
    memo[key] = (new, out_nonzero)
    return new, out_nonzero


def _as_aval(t: Any, aval: ShapedArray) -> Any:
    """``t`` with ``aval``'s dtype and weak type (loop carries and branch results must keep their types)."""
    a = abstractify(t)
    if a.dtype == aval.dtype and a.weak_type == aval.weak_type:
        return t
    return _ew.convert_p.bind(t, new_dtype=aval.dtype, weak_type=aval.weak_type)


def _flat_series(series: Sequence[Any], nonzero: Sequence[bool]) -> list:
    """The terms of the nonzero series, zeros made for their zero terms."""
    return [t for s, nz in zip(series, nonzero) if nz for t in s]


def _filled(series: Sequence[Any], primals: Sequence[Any], nonzero: Sequence[bool]) -> list:
    return [[_zeros_like(p) if t is None else t for t in s] if nz else s
            for s, p, nz in zip(series, primals, nonzero)]


def _split_series(outs: Sequence[Any], out_nonzero: Sequence[bool], order: int) -> list:
    it = iter(outs)
    return [[next(it) for _ in range(order)] if nz else None for nz in out_nonzero]


def _call_rule(primals, series, *, ir: ClosedIR, name: str, inline: bool = False):
    order = len(series[0])
    nonzero = [_has_series(s) for s in series]
    new, out_nonzero = jet_ir(ir, order, nonzero)
    series = _filled(series, primals, nonzero)
    outs = bind_call(new, list(primals) + _flat_series(series, nonzero), f"jet({name})", inline)
    n = len(ir.out_avals)
    return outs[:n], _split_series(outs[n:], out_nonzero, order)


jet_rules[call_p] = _call_rule


def _xla_metadata_call_rule(primals, series, *, ir: ClosedIR, xla_metadata: tuple, ad_metadata: tuple):
    """As a jit call's: the series computed inside the call, which keeps its metadata."""
    order = len(series[0])
    nonzero = [_has_series(s) for s in series]
    new, out_nonzero = jet_ir(ir, order, nonzero)
    series = _filled(series, primals, nonzero)
    outs = xla_metadata_call_p.bind(*new.consts, *primals, *_flat_series(series, nonzero), ir=call_body(new),
                                    xla_metadata=xla_metadata, ad_metadata=ad_metadata)
    n = len(ir.out_avals)
    return outs[:n], _split_series(outs[n:], out_nonzero, order)


jet_rules[xla_metadata_call_p] = _xla_metadata_call_rule


def _body_rule(primals, series, *, body: ClosedIR, **params):
    """Custom-derivative calls and checkpoint: the series flows through the body (custom rules are first
    order; JAX's jet ignores them too)."""
    return jet_eval(body.ir, body.consts, primals, series, len(series[0]))


for _p in (custom_jvp_call_p, custom_vjp_call_p, custom_vmap_call_p, remat_p):
    jet_rules[_p] = _body_rule


def _reordered(closed: ClosedIR, in_order: Sequence[int], out_order: Sequence[int]) -> tuple[ClosedIR, list]:
    """``closed``'s IR with its inputs and outputs reordered, its constants as leading inputs: (IR, consts)."""
    body = call_body(closed).ir
    nc = len(closed.consts)
    invars = body.invars[:nc] + [body.invars[nc + i] for i in in_order]
    return ClosedIR(IR([], invars, body.eqns, [body.outvars[i] for i in out_order]), []), list(closed.consts)


def _series_positions(n_primals: int, nonzero: Sequence[bool], order: int) -> dict[int, list[int]]:
    """Where the series of each nonzero input (or output) sits in jet_ir's layout."""
    pos, out = n_primals, {}
    for i, nz in enumerate(nonzero):
        if nz:
            out[i] = list(range(pos, pos + order))
            pos += order
    return out


def _grouped(groups: Sequence[range], positions: dict[int, list[int]]) -> list[int]:
    """Each group's primals followed by its series."""
    order = []
    for g in groups:
        order += list(g) + [p for i in g for p in positions.get(i, [])]
    return order


def _cond_rule(primals, series, *, branches):
    order = len(series[0])
    index, *ops = primals
    sops = series[1:]
    nonzero = [_has_series(s) for s in sops]
    out_nz = [any(z) for z in zip(*[jet_ir(b, order, nonzero)[1] for b in branches])]
    new = [jet_ir(b, order, nonzero, instantiate=out_nz)[0] for b in branches]
    # Every branch takes every branch's constants, then the operands and their series.
    consts = [c for b in new for c in b.consts]
    const_avals = [abstractify(c) for c in consts]
    bodies, offset = [], 0
    for b in new:
        body = call_body(b).ir
        n = len(b.consts)
        invars = [Var(a) for a in const_avals]
        invars[offset:offset + n] = body.invars[:n]
        bodies.append(ClosedIR(IR([], invars + body.invars[n:], body.eqns, body.outvars), []))
        offset += n
    args = list(ops) + _flat_series(_filled(sops, ops, nonzero), nonzero)
    outs = cond_p.bind(index, *consts, *args, branches=tuple(bodies))
    n = len(branches[0].out_avals)
    return outs[:n], _split_series(outs[n:], out_nz, order)


jet_rules[cond_p] = _cond_rule


def _scan_rule(primals, series, *, body, num_consts, num_carry, length, reverse, unroll):
    order = len(series[0])
    nz = [_has_series(s) for s in series]
    nc, nk = num_consts, num_carry
    c_nz, k_nz, x_nz = nz[:nc], nz[nc:nc + nk], nz[nc + nk:]
    while True:  # the carries whose series can become nonzero: a fixed point
        out_nz = jet_ir(body, order, c_nz + k_nz + x_nz)[1]
        new_k = [a or b for a, b in zip(k_nz, out_nz[:nk])]
        if new_k == k_nz:
            break
        k_nz = new_k
    n_in, n_out = len(primals), len(body.out_avals)
    in_nz = c_nz + k_nz + x_nz
    jbody, out_nz = jet_ir(body, order, in_nz, instantiate=k_nz + [False] * (n_out - nk))
    in_pos = _series_positions(n_in, in_nz, order)
    out_pos = _series_positions(n_out, out_nz, order)
    in_order = _grouped([range(0, nc), range(nc, nc + nk), range(nc + nk, n_in)], in_pos)
    out_order = _grouped([range(0, nk), range(nk, n_out)], out_pos)
    new_body, extra = _reordered(jbody, in_order, out_order)
    filled = _filled(series, primals, in_nz)
    args = [(list(primals) + _flat_series(filled, in_nz))[i] for i in in_order]
    n_cs, n_ks = order * sum(c_nz), order * sum(k_nz)
    outs = scan_p.bind(*extra, *args, body=new_body, num_consts=len(extra) + nc + n_cs, num_carry=nk + n_ks,
                       length=length, reverse=reverse, unroll=unroll)
    carry, carry_s = outs[:nk], outs[nk:nk + n_ks]
    ys, ys_s = outs[nk + n_ks:n_out + n_ks], outs[n_out + n_ks:]
    return carry + ys, (_split_series(carry_s, out_nz[:nk], order) + _split_series(ys_s, out_nz[nk:], order))


jet_rules[scan_p] = _scan_rule


def _while_rule(primals, series, *, cond, body, cond_nconsts, body_nconsts):
    order = len(series[0])
    ncc, nbc = cond_nconsts, body_nconsts
    nz = [_has_series(s) for s in series]
    bc_nz, k_nz = nz[ncc:ncc + nbc], nz[ncc + nbc:]
    nk = len(k_nz)
    while True:
        out_nz = jet_ir(body, order, bc_nz + k_nz)[1]
        new_k = [a or b for a, b in zip(k_nz, out_nz)]
        if new_k == k_nz:
            break
        k_nz = new_k
    in_nz = bc_nz + k_nz
    jbody, out_nz = jet_ir(body, order, in_nz, instantiate=k_nz)
    in_pos = _series_positions(nbc + nk, in_nz, order)
    in_order = _grouped([range(0, nbc), range(nbc, nbc + nk)], in_pos)
    new_body, extra = _reordered(jbody, in_order, list(range(len(jbody.out_avals))))
    # The predicate reads the primal carry only: its IR takes the carry's series as unused inputs.
    cbody = call_body(cond).ir
    s_avals = [a for a, z in zip(body.out_avals, k_nz) if z for _ in range(order)]
    new_cond = ClosedIR(IR([], cbody.invars + [Var(a) for a in s_avals], cbody.eqns, cbody.outvars), [])
    cc, bc, carry = primals[:ncc], primals[ncc:ncc + nbc], primals[ncc + nbc:]
    filled = _filled(series[ncc:], primals[ncc:], in_nz)
    bc_s = _flat_series(filled[:nbc], bc_nz)
    k_s = _flat_series(filled[nbc:], k_nz)
    outs = while_p.bind(*cond.consts, *cc, *extra, *bc, *bc_s, *carry, *k_s, cond=new_cond, body=new_body,
                        cond_nconsts=len(cond.consts) + ncc, body_nconsts=len(extra) + nbc + len(bc_s))
    return outs[:nk], _split_series(outs[nk:], k_nz, order)


jet_rules[while_p] = _while_rule

