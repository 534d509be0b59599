"""kiln.lax: the primitives as functions, without implicit promotion (as ``jax.lax``)."""
from kiln.frontend.batching.collectives import all_gather, axis_index, pmax, pmean, pmin, psum  # noqa: F401
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
