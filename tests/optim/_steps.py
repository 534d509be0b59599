"""Helpers of the kiln.optim tests: an optimizer run over a list of gradients, and its update equations written in
NumPy replayed over the same gradients (the oracle)."""
import numpy as np

import kiln
import kiln.numpy as jnp
from kiln import optim


def run(opt, p0: dict, grads: list, jit: bool = False, extra=None) -> list[dict]:
    """kiln's parameters (host arrays) after each step of ``opt`` from ``p0`` over ``grads`` (with
    ``kiln.jit(opt.update)`` when ``jit``); ``extra(i, params)`` gives step i's extra keyword arguments (``value=``)."""
    params = {k: jnp.asarray(v) for k, v in p0.items()}
    state = opt.init(params)
    update = kiln.jit(opt.update) if jit else opt.update
    out = []
    for i, g in enumerate(grads):
        kw = extra(i, params) if extra else {}
        u, state = update({k: jnp.asarray(v) for k, v in g.items()}, state, params, **kw)
        params = optim.apply_updates(params, u)
        out.append({k: np.asarray(v) for k, v in params.items()})
    return out


def replay(step, p0: dict, grads: list, whole_tree: bool = False) -> list[dict]:
    """NumPy's parameters (float64) after each step of the update ``step``. Leaf by leaf:
    ``step(k, g, p, t, st) -> (u, st)``, t the 1-based step, st the leaf's own dict; ``whole_tree``:
    ``step(g, p, t, st) -> (u, st)`` on dicts (rules that couple the leaves)."""
    params = {k: v.astype(np.float64) for k, v in p0.items()}
    st = {} if whole_tree else {k: {} for k in p0}
    out = []
    for t, g in enumerate(grads, 1):
        g = {k: v.astype(np.float64) for k, v in g.items()}
        if whole_tree:
            u, st = step(g, params, t, st)
        else:
            u = {}
            for k in p0:
                u[k], st[k] = step(k, g[k], params[k], t, st[k])
        params = {k: params[k] + u[k] for k in p0}
        out.append({k: v.copy() for k, v in params.items()})
    return out
