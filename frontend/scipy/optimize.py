"""kiln.scipy.optimize (as ``jax.scipy.optimize``): ``minimize`` with BFGS, and ``OptimizeResults``."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from .. import numpy as jnp
from ..ad.api import value_and_grad
from ..control.loops import while_loop
from ..core import dtypes
from ..numpy._util import check_arraylike

__all__ = ["minimize", "OptimizeResults"]


class OptimizeResults(NamedTuple):
    """The result of :func:`minimize`.

    x: the solution; success: whether it converged; status: 0 converged, 1 the iteration limit was
    reached, 2 the line search failed, 3 the function or gradient became NaN; fun, jac, hess_inv: the
    function, its gradient and the BFGS inverse-Hessian estimate at ``x``; nfev, njev: evaluations of the
    function and of its gradient; nit: iterations.
    """
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _norm(g, ord):
    if ord == np.inf:
        return jnp.max(jnp.abs(g))
    if ord == -np.inf:
        return jnp.min(jnp.abs(g))
    return jnp.sum(jnp.abs(g) ** ord) ** (1.0 / ord)


def _line_search(vg, x, f0, g0, p, alpha0, maxiter: int, c1: float = 1e-4, c2: float = 0.9):
    """A step ``alpha`` along ``p`` meeting the strong Wolfe conditions: expand until the minimum is
    bracketed, then bisect the bracket (Nocedal & Wright, algorithms 3.5 and 3.6, bisection as the
    interpolation). Returns (ok, alpha, f, g, evaluations)."""
    dphi0 = jnp.dot(g0, p)
    dtype = f0.dtype

    def cond(s):
        return (~s["done"]) & (s["j"] < maxiter)

    def body(s):
        alpha = s["alpha"]
        f, g = vg(x + alpha * p)
        dphi = jnp.dot(g, p)
        armijo_fails = (f > f0 + c1 * alpha * dphi0) | ((s["j"] > 0) & (f >= s["f_lo"])) | ~jnp.isfinite(f)
        curvature_ok = jnp.abs(dphi) <= -c2 * dphi0
        accept = ~armijo_fails & curvature_ok
        # Bracket updates (zoom): a failed Armijo test closes the bracket above; otherwise alpha becomes
        # the new low end, and the old low end the high end when the slope has turned.
        turn = ~armijo_fails & ~curvature_ok & (dphi * (s["hi"] - s["lo"]) >= 0)
        hi = jnp.where(armijo_fails, alpha, jnp.where(turn, s["lo"], s["hi"]))
        keep_lo = armijo_fails | accept
        lo = jnp.where(keep_lo, s["lo"], alpha)
        f_lo = jnp.where(keep_lo, s["f_lo"], f)
        nxt = jnp.where(jnp.isfinite(hi), (lo + hi) / 2, 2 * alpha)
        return {"j": s["j"] + 1, "done": accept, "alpha": jnp.where(accept, alpha, nxt), "lo": lo, "hi": hi,
                "f_lo": f_lo, "f": jnp.where(accept, f, s["f"]), "g": jnp.where(accept, g, s["g"])}

    init = {"j": jnp.zeros((), np.int32), "done": jnp.zeros((), bool), "alpha": alpha0,
            "lo": jnp.zeros((), dtype), "hi": jnp.full((), np.inf, dtype), "f_lo": f0, "f": f0, "g": g0}
    out = while_loop(cond, body, init)
    return out["done"], out["alpha"], out["f"], out["g"], out["j"]


def _bfgs(fun: Callable, x0, maxiter: int, norm, gtol: float, ls_maxiter: int) -> OptimizeResults:
    vg = value_and_grad(fun)
    f0, g0 = vg(x0)
    n = x0.shape[0]
    eye = jnp.eye(n, dtype=x0.dtype)

    def cond(s):
        return (s["status"] < 0) & (s["k"] < maxiter)

    def body(s):
        x, f, g, H = s["x"], s["f"], s["g"], s["H"]
        p = -(H @ g)
        slope = jnp.dot(g, p)
        # The first step is 1; later ones follow the last decrease (Nocedal & Wright eq. 3.60), at most 1.
        guess = jnp.minimum(1.0, 1.01 * 2 * (f - s["f_prev"]) / slope)
        alpha0 = jnp.where((s["k"] == 0) | ~(guess > 0), 1.0, guess).astype(x.dtype)
        ok, alpha, f_new, g_new, evals = _line_search(vg, x, f, g, p, alpha0, ls_maxiter)
        step = alpha * p
        y = g_new - g
        sy = jnp.dot(step, y)
        rho = 1 / sy
        left = eye - rho * jnp.outer(step, y)
        H_new = left @ H @ left.T + rho * jnp.outer(step, step)
        H_new = jnp.where(jnp.isfinite(rho) & (sy > 0), H_new, H)
        converged = _norm(g_new, norm) < gtol
        bad = ~jnp.isfinite(f_new) | ~jnp.all(jnp.isfinite(g_new))
        status = jnp.where(~ok, 2, jnp.where(bad, 3, jnp.where(converged, 0, -1)))
        take = ok & ~bad
        return {"k": s["k"] + 1, "x": jnp.where(take, x + step, x), "f": jnp.where(take, f_new, f),
                "f_prev": jnp.where(take, f, s["f_prev"]), "g": jnp.where(take, g_new, g),
                "H": jnp.where(take, H_new, H), "status": status.astype(np.int32),
                "nfev": s["nfev"] + evals, "njev": s["njev"] + evals}

    start_status = jnp.where(_norm(g0, norm) < gtol, 0, -1).astype(np.int32)
    init = {"k": jnp.zeros((), np.int32), "x": x0, "f": f0, "f_prev": f0 + jnp.linalg.norm(g0) / 2, "g": g0,
            "H": eye, "status": start_status, "nfev": jnp.ones((), np.int32), "njev": jnp.ones((), np.int32)}
    s = while_loop(cond, body, init)
    status = jnp.where(s["status"] < 0, 1, s["status"]).astype(np.int32)
    return OptimizeResults(x=s["x"], success=status == 0, status=status, fun=s["f"], jac=s["g"], hess_inv=s["H"],
                           nfev=s["nfev"], njev=s["njev"], nit=s["k"])


def minimize(fun: Callable, x0, args: tuple = (), *, method: str, tol: float | None = None,
             options: dict | None = None) -> OptimizeResults:
    """Minimize the scalar function ``fun(x, *args)`` of a 1-d array, from ``x0``.

    ``method='BFGS'`` (the one method, as JAX): quasi-Newton steps with a strong-Wolfe line search, all in
    one while loop (so it runs under ``kiln.jit``). ``options``: ``maxiter`` (default ``200 * x0.size``),
    ``norm`` (of the gradient for the stopping test, default inf), ``gtol`` (default 1e-5, or ``tol``),
    ``line_search_maxiter`` (default 10). Returns :class:`OptimizeResults`.
    """
    where = "kiln.scipy.optimize.minimize"
    if not callable(fun):
        raise TypeError(f"{where}: fun must be callable, got {type(fun).__name__}")
    if not isinstance(method, str) or method.lower() != "bfgs":
        raise ValueError(f"{where}: method must be 'BFGS' (the one method kiln has, as JAX), got {method!r}")
    check_arraylike(where, x0)
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"{where}: x0 must be one-dimensional (ravel it, and reshape inside fun), got shape "
                         f"{x0.shape}")
    if not dtypes.is_inexact(x0.dtype):
        x0 = x0.astype(dtypes.default_float_dtype())
    options = dict(options or {})
    known = {"maxiter", "norm", "gtol", "line_search_maxiter"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"{where}: unknown options {unknown}; BFGS takes {sorted(known)}")
    maxiter = options.get("maxiter")
    maxiter = 200 * x0.size if maxiter is None else int(maxiter)
    gtol = options.get("gtol", 1e-5 if tol is None else tol)
    return _bfgs(lambda x: fun(x, *args), x0, maxiter, options.get("norm", np.inf), float(gtol),
                 int(options.get("line_search_maxiter", 10)))
