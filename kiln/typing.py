"""kiln.typing: type annotations for kiln code (as ``jax.typing``): ``ArrayLike`` (what kiln functions
accept as an array) and ``DTypeLike`` (what they accept as a dtype)."""
from kiln.frontend.driver.tools import ArrayLike as ArrayLike
from kiln.frontend.driver.tools import DTypeLike as DTypeLike

__all__ = ["ArrayLike", "DTypeLike"]
