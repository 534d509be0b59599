"""kiln.core: the names of ``jax.core`` that kiln has (its abstract values, tracers and IR evaluation).

kiln has no ``Trace`` classes to subclass: a transformation is a table of rules keyed by primitive
(kiln.frontend's ``ad``, ``batching``), not a trace type.
"""
from typing import Any as Value  # noqa: F401  (JAX's name for "a concrete value": any Python value)
from typing import Any as _Any

from kiln.frontend.core.avals import ShapedArray as AbstractValue  # kiln's one abstract value
from kiln.frontend.core.avals import ShapedArray as ShapedArray
from kiln.frontend.core.ir import Atom as Atom
from kiln.frontend.core.tracing import Tracer as Tracer
from kiln.frontend.core.tracing import ensure_compile_time_eval as ensure_compile_time_eval
from kiln.frontend.core.tracing import ensure_compile_time_eval as eval_context
from kiln.frontend.driver.tools import eval_jaxpr as eval_jaxpr
from kiln.frontend.driver.tools import max_dim as max_dim
from kiln.frontend.driver.tools import min_dim as min_dim

ParamDict = dict[str, _Any]  # an equation's parameters

__all__ = ["AbstractValue", "Atom", "ParamDict", "ShapedArray", "Tracer", "Value", "ensure_compile_time_eval",
           "eval_context", "eval_jaxpr", "max_dim", "min_dim"]
