"""kiln.lax: the primitives as functions, without implicit promotion (as ``jax.lax``)."""
from kiln.frontend.control.api import (  # noqa: F401
    associative_scan,
    cond,
    fori_loop,
    map,
    scan,
    select_n,
    switch,
    while_loop,
)
from kiln.frontend.lax import *  # noqa: F401,F403
from kiln.frontend.lax import Precision, RoundingMethod  # noqa: F401
