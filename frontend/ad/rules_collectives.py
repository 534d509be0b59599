"""Derivative rules of the collectives (``lax/collectives.py``): psum is linear (its transpose is psum:
every element's cotangent gathers all of them); all_gather is linear in its operand; pmax, pmin and
axis_index are not differentiable."""
from __future__ import annotations

from ..lax.collectives import all_gather_p, axis_index_p, pmax_p, pmin_p, psum_p
from .jvp import jvp_rules, non_differentiable
from .tangents import Zero
from .transpose import transpose_rules


def _psum_jvp(primals, tangents, *, axis_name):
    (x,), (t,) = primals, tangents
    return psum_p.bind(x, axis_name=axis_name), (t if isinstance(t, Zero) else psum_p.bind(t, axis_name=axis_name))


def _all_gather_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    return all_gather_p.bind(x, **params), all_gather_p.bind(t, **params)


jvp_rules[psum_p] = _psum_jvp
transpose_rules[psum_p] = lambda ct, x, *, axis_name: [psum_p.bind(ct, axis_name=axis_name)]
jvp_rules[all_gather_p] = _all_gather_jvp
non_differentiable.update({axis_index_p, pmax_p, pmin_p})
