"""The public control-flow functions (re-exported by kiln.lax)."""
from .associative import associative_scan  # noqa: F401
from .cond import cond, switch  # noqa: F401
from .loops import fori_loop, map, while_loop  # noqa: F401
from .platform import platform_dependent  # noqa: F401
from .scan import scan  # noqa: F401
from .solves import custom_linear_solve, custom_root  # noqa: F401

__all__ = ["associative_scan", "cond", "custom_linear_solve", "custom_root", "fori_loop", "map",
           "platform_dependent", "scan", "switch", "while_loop"]


def select_n(which, *cases):
    """``cases[which]`` elementwise (``which`` boolean for two cases, else an integer array)."""
    from .. import lax
    from ..core.tracing import abstractify
    if not cases:
        raise ValueError("kiln.lax.select_n: needs at least one case")
    if len(cases) == 1:
        return cases[0]
    w = abstractify(which)
    if w.dtype.name == "bool":
        if len(cases) != 2:
            raise ValueError(f"kiln.lax.select_n: a boolean selector picks between 2 cases, got {len(cases)}")
        return lax.select(which, cases[1], cases[0])
    out = cases[0]
    for i, case in enumerate(cases[1:], 1):
        lit = lax.literal(i, w.dtype)
        is_i = lax.eq(which, lax.broadcast_in_dim(lit, w.shape, ()) if w.shape else lit)
        out = lax.select(is_i, case, out)
    return out


__all__.append("select_n")
