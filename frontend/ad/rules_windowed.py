"""Derivative rules of ``reduce_window``.

- ``add`` is linear: the JVP sums the tangent's windows; the transpose spreads each output cotangent
  back over its window, which is itself a windowed sum over the (stride-dilated, padded) cotangent.
- ``max``/``min``: the tangent of the element that attains the extremum in each window (the first one
  in window order when several tie, as XLA's select-and-scatter picks it for pooling gradients).
- ``mul``: the product rule over each window's elements.

The max/min/mul rules look at each window offset separately: offset ``k`` of every window is one
strided slice of the padded, dilated operand (a "patch"), so a window of K elements costs K slices.

The cumulative reductions, as JAX's: ``cumsum`` is linear (its transpose is ``cumsum`` of the cotangent in the
other direction); ``cumprod``, ``cummax``, ``cummin`` and ``cumlogsumexp`` take the JVP of JAX's parallel prefix
scan (``prefix_scan``, the odd/even ``associative_scan``) of ``mul``/``max``/``min``/``logaddexp``, which is
differentiable to any order where the reduce_window is not. The primal result then comes from that scan too, as
in JAX (its bits can differ from the primitive's in the last place).
"""
from __future__ import annotations

import itertools

from .. import lax
from ..core.tracing import abstractify, trace_to_ir
from ..lax import windowed as wd
from .jvp import jvp_eval, jvp_rules, linear_jvp
from .logaddexp import logaddexp_e
from .rules_reduction import reduce_prod_jvp
from .tangents import Zero, instantiate
from .transpose import is_undefined, not_linear, transpose_rules


def _zero_literal(x):
    aval = abstractify(x)
    return lax.literal(0, aval.dtype, aval.weak_type)


def _patches(x, fill, out_shape, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    """One array of ``out_shape`` per window offset: element ``o`` of patch ``k`` is element ``k`` of window ``o``."""
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation)]
    xp = lax.pad(x, fill, config) if any(c != (0, 0, 0) for c in config) else x
    out = []
    for offset in itertools.product(*[range(w) for w in window_dimensions]):
        starts = [k * d for k, d in zip(offset, window_dilation)]
        limits = [s + (n - 1) * st + 1 for s, n, st in zip(starts, out_shape, window_strides)]
        out.append(lax.slice(xp, starts, limits, window_strides))
    return out


def _reduce_window_jvp(primals, tangents, *, computation, **params):
    (x, init), (t, t_init) = primals, tangents
    out = wd.reduce_window_p.bind(x, init, computation=computation, **params)
    if not isinstance(t_init, Zero):
        raise NotImplementedError("kiln: differentiation of kiln.lax.reduce_window with respect to its init_value "
                                  "is not implemented (pass a constant init_value, e.g. the monoid's identity)")
    out_aval = abstractify(out)
    if isinstance(t, Zero):
        return out, Zero(out_aval)
    if computation == "add":
        return out, wd.reduce_window_p.bind(t, _zero_literal(t), computation="add", **params)
    if out_aval.size == 0:
        return out, lax.broadcast_in_dim(_zero_literal(t), out_aval.shape, ())
    shape = out_aval.shape
    xs = _patches(x, init, shape, **params)
    ts = _patches(t, _zero_literal(t), shape, **params)
    if computation in ("max", "min"):
        # Walk the offsets backwards so that the first offset attaining the extremum wins.
        t_out = lax.broadcast_in_dim(_zero_literal(t), shape, ())
        for xk, tk in zip(reversed(xs), reversed(ts)):
            t_out = lax.select(lax.eq(xk, out), tk, t_out)
        return out, t_out
    if computation == "mul":
        # The windows stacked along a new last axis: reduce_window is reduce_prod over it (times init).
        nd = len(shape)
        stack = [lax.reshape(p, shape + (1,)) for p in xs]
        tstack = [lax.reshape(p, shape + (1,)) for p in ts]
        xw, tw = lax.concatenate(stack, nd), lax.concatenate(tstack, nd)
        _, t_prod = reduce_prod_jvp([xw], [tw], axes=(nd,))
        return out, lax.mul(t_prod, lax.broadcast_in_dim(init, shape, ()))
    raise TypeError(f"kiln: internal error: reduce_window {computation} of a differentiable dtype")


def _reduce_window_transpose(ct, x, init, *, computation, window_dimensions, window_strides, padding,
                             base_dilation, window_dilation):
    if computation != "add" or not is_undefined(x) or is_undefined(init):
        raise not_linear(f"a reduce_window {computation} of a tangent")
    in_shape = x.aval.shape
    ct_aval = abstractify(ct)
    if ct_aval.size == 0 or x.aval.size == 0:
        return [lax.broadcast_in_dim(lax.literal(0, ct_aval.dtype), in_shape, ()), None]
    # Per dimension, with the operand dilated by b and padded by (lo, hi) to length P, output o sums the
    # padded elements o*s + k*d (k < w). So the padded element p receives ct[o] for every o, k with
    # o*s + k*d = p: a windowed sum (window w, dilation d) over ct dilated by s and padded by (w-1)*d in
    # front. The operand's element i sits at p = lo + i*b: that windowed sum taken with stride b,
    # starting at lo.
    config = []
    for n, m, w, s, (lo, _), b, d in zip(in_shape, ct_aval.shape, window_dimensions, window_strides, padding,
                                         base_dilation, window_dilation):
        front = (w - 1) * d - lo
        back = (n - 1) * b + lo - (m - 1) * s
        config.append((front, back, s - 1))
    padded = lax.pad(ct, lax.literal(0, ct_aval.dtype), config)
    nd = len(in_shape)
    out = wd.reduce_window_p.bind(padded, lax.literal(0, ct_aval.dtype), computation="add",
                                  window_dimensions=tuple(window_dimensions), window_strides=tuple(base_dilation),
                                  padding=((0, 0),) * nd, base_dilation=(1,) * nd,
                                  window_dilation=tuple(window_dilation))
    return [out, None]


jvp_rules[wd.reduce_window_p] = _reduce_window_jvp
transpose_rules[wd.reduce_window_p] = _reduce_window_transpose


# -- cumulative reductions --------------------------------------------------------------------------------------
linear_jvp(wd.cumsum_p)
transpose_rules[wd.cumsum_p] = lambda ct, x, *, axis, reverse: [wd.cumsum_p.bind(ct, axis=axis,
                                                                                 reverse=not reverse)]


def _cumulative_jvp(prim, combine):
    def rule(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents

        def scan(x):
            return wd.prefix_scan(lambda a, b: [combine(a[0], b[0])], [x], axis, reverse)

        closed, _ = trace_to_ir(scan, [abstractify(x)], name=f"{prim.name}_jvp")
        (out,), (t_out,) = jvp_eval(closed.ir, closed.consts, [x], [t])
        return out, instantiate(t_out)
    return rule


for _prim, _combine in ((wd.cumprod_p, lax.mul), (wd.cummax_p, lax.max), (wd.cummin_p, lax.min),
                        (wd.cumlogsumexp_p, logaddexp_e)):
    jvp_rules[_prim] = _cumulative_jvp(_prim, _combine)
