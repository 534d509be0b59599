"""kiln.ref: mutable array references (as ``jax.ref``): ``new_ref``, ``get``, ``set``, ``swap``, ``addupdate``,
``freeze``."""
from kiln.frontend.refs import AbstractRef as AbstractRef
from kiln.frontend.refs import Ref as Ref
from kiln.frontend.refs import addupdate as addupdate
from kiln.frontend.refs import empty_ref as empty_ref
from kiln.frontend.refs import free_ref as free_ref
from kiln.frontend.refs import freeze as freeze
from kiln.frontend.refs import get as get
from kiln.frontend.refs import new_ref as new_ref
from kiln.frontend.refs import set as set  # noqa: A004  (JAX's name)
from kiln.frontend.refs import swap as swap

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get", "new_ref", "set", "swap"]
