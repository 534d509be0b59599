"""``log(exp(x1) + exp(x2))`` as JAX computes it, op for op, with JAX's derivative rule: kiln.numpy.logaddexp and
logaddexp2, kiln.nn.softplus, and the combine function cumlogsumexp's derivative differentiates (JAX's prefix
scan of logaddexp)."""
from __future__ import annotations

import numpy as np

from .. import lax
from .custom import custom_jvp

__all__ = ["logaddexp_e", "logaddexp_2"]


def _logaddexp(x1, x2, exp_fn, log_base):
    # max + log1p(exp(-|x1 - x2|)); where the difference is NaN (a NaN input, or two infinities of
    # one sign) the sum x1 + x2 is the answer (NaN, +inf or -inf).
    delta = lax.sub(x1, x2)
    tail = lax.log1p(exp_fn(lax.neg(lax.abs(delta))))
    if log_base is not None:
        tail = lax.div(tail, lax.full_like(tail, log_base))
    out = lax.add(lax.max(x1, x2), tail)
    return lax.select(lax.ne(delta, delta), lax.add(x1, x2), out)


def _replace_inf(x):
    """``x`` with +inf replaced by 0, as JAX's derivative of logaddexp takes it (exp(inf - inf) would be NaN)."""
    return lax.select(lax.eq(x, lax.full_like(x, np.inf)), lax.full_like(x, 0), x)


def _with_jaxs_derivative(exp_fn, log_base):
    """``_logaddexp`` with JAX's derivative rule, t1 * exp(x1 - out) + t2 * exp(x2 - out) (exp2 for base 2),
    rather than the derivative of its stable formula: JAX's numbers, and no NaN at two infinities."""
    @custom_jvp
    def fn(x1, x2):
        return _logaddexp(x1, x2, exp_fn, log_base)

    @fn.defjvp
    def fn_jvp(primals, tangents):
        (x1, x2), (t1, t2) = primals, tangents
        out = fn(x1, x2)
        r = _replace_inf(out)
        return out, lax.add(lax.mul(t1, exp_fn(lax.sub(_replace_inf(x1), r))),
                            lax.mul(t2, exp_fn(lax.sub(_replace_inf(x2), r))))
    return fn


logaddexp_e = _with_jaxs_derivative(lax.exp, None)
logaddexp_2 = _with_jaxs_derivative(lax.exp2, np.log(2))
