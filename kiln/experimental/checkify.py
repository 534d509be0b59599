"""``jax.experimental.checkify``: run-time checks (``check``, and automatic NaN, division-by-zero and
out-of-bounds-index checks) made functional by the ``checkify`` transformation, so that they work under jit, vmap,
grad and control flow."""
from kiln.frontend.checkify import Error as Error
from kiln.frontend.checkify import ErrorCategory as ErrorCategory
from kiln.frontend.checkify import JaxRuntimeError as JaxRuntimeError
from kiln.frontend.checkify import all_checks as all_checks
from kiln.frontend.checkify import automatic_checks as automatic_checks
from kiln.frontend.checkify import check as check
from kiln.frontend.checkify import check_error as check_error
from kiln.frontend.checkify import checkify as checkify
from kiln.frontend.checkify import debug_check as debug_check
from kiln.frontend.checkify import div_checks as div_checks
from kiln.frontend.checkify import float_checks as float_checks
from kiln.frontend.checkify import index_checks as index_checks
from kiln.frontend.checkify import init_error as init_error
from kiln.frontend.checkify import nan_checks as nan_checks
from kiln.frontend.checkify import user_checks as user_checks

__all__ = ["Error", "ErrorCategory", "JaxRuntimeError", "all_checks", "automatic_checks", "check", "check_error",
           "checkify", "debug_check", "div_checks", "float_checks", "index_checks", "init_error", "nan_checks",
           "user_checks"]
