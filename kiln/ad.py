"""kiln.ad: the entries of ``VJP.with_refs`` (``GradValue``, ``DontWant``) and what it returns for them
(``GradRef``, ``DidntWant``), as ``jax.ad``."""
from kiln.frontend.ad.vjp_object import DidntWant as DidntWant
from kiln.frontend.ad.vjp_object import DontWant as DontWant
from kiln.frontend.ad.vjp_object import GradRef as GradRef
from kiln.frontend.ad.vjp_object import GradValue as GradValue

__all__ = ["DidntWant", "DontWant", "GradRef", "GradValue"]
