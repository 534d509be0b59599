"""kiln.extend.core: kiln's IR classes under ``jax.extend.core``'s names, for interpreters written against jaxprs.

``kiln.make_jaxpr`` returns a ``ClosedJaxpr`` (kiln's ``ClosedIR``: ``.jaxpr``, ``.consts``/``.literals``); its
``Jaxpr`` has ``constvars``, ``invars``, ``eqns`` and ``outvars``; an equation (``JaxprEqn``) has ``primitive``,
``invars``, ``outvars`` and ``params``; an input atom is a ``Var`` or a ``Literal`` (``.val``, a NumPy value).
Primitives are kiln's own (``kiln.lax.exp_p``, ...): ``eqn.primitive.bind(*values, **eqn.params)`` applies one.
``Primitive(name)`` defines a new one, as JAX's (``def_impl``, ``def_abstract_eval``; its rules go into
``kiln.interpreters``' tables). kiln has no counterpart of JAX's trace machinery.
"""
from kiln.frontend.core.ir import IR as Jaxpr
from kiln.frontend.core.ir import ClosedIR as ClosedJaxpr
from kiln.frontend.core.ir import Eqn as JaxprEqn
from kiln.frontend.core.ir import Literal as Literal
from kiln.frontend.core.ir import Var as Var
from kiln.frontend.driver.tools import jaxpr_as_fun as jaxpr_as_fun
from kiln.frontend.extend import Primitive as Primitive

__all__ = ["ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Primitive", "Var", "jaxpr_as_fun"]
