"""kiln's primitives and the ``kiln.lax`` functions over them.

One module per family of primitives; each defines its primitives, their shape rules and the
public lax functions over them (listed in its ``__all__``). Add a family: one import line below.

Where a family's rules live (the same ``X`` everywhere): family ``X`` has its primitives in
``lax/X.py``, its derivative rules in ``ad/rules_X.py``, its batching rules in
``batching/rules_X.py`` and its StableHLO emission in ``lowering/rules/X.py``; ``ad/api.py`` and
``batching/api.py`` import every ``rules_X`` module (each registers its rules in the transformation's
table). The elementwise, structural and reduction families are defined together in ``lax/api.py``
with their shape rules in ``lax/elementwise.py``, ``lax/structural.py``, ``lax/reduction.py``.
``control/`` (cond, while, scan) is self-contained: each construct with its own rules.
"""
from . import (
    callbacks,  # noqa: F401  (host callbacks: kiln.pure_callback, kiln.debug.print, ...)
    linalg,  # noqa: F401  (kiln.lax.linalg, as jax.lax.linalg)
)
from .api import *  # noqa: F401,F403  (elementwise, structural, reduction families)
from .api import RoundingMethod, literal  # noqa: F401
from .collectives import *  # noqa: F401,F403
from .composed import *  # noqa: F401,F403
from .conv_extras import *  # noqa: F401,F403
from .convolution import *  # noqa: F401,F403
from .fft import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .misc import *  # noqa: F401,F403
from .precision import AccuracyMode, DotAlgorithm, DotAlgorithmPreset, Precision, Tolerance  # noqa: F401
from .sharding import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .windowed import *  # noqa: F401,F403
