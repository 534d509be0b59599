"""``kiln.experimental.checkify``: functionalized run-time checks (JAX's ``jax.experimental.checkify``).

``errors.py`` holds the error value and the kinds of error, ``primitive.py`` the ``check`` primitive and the
``check``/``debug_check``/``check_error`` functions, ``transform.py`` the ``checkify`` transformation (an
interpreter over kiln IR that threads the error value). The ``check`` primitive's emission rule, which refuses a
check no ``checkify`` functionalized, is in ``lowering/rules/checkify.py``.
"""
from .errors import Error as Error
from .errors import ErrorCategory as ErrorCategory
from .errors import JaxRuntimeError as JaxRuntimeError
from .errors import all_checks as all_checks
from .errors import automatic_checks as automatic_checks
from .errors import div_checks as div_checks
from .errors import float_checks as float_checks
from .errors import index_checks as index_checks
from .errors import init_error as init_error
from .errors import nan_checks as nan_checks
from .errors import user_checks as user_checks
from .primitive import check as check
from .primitive import check_error as check_error
from .primitive import debug_check as debug_check
from .transform import checkify as checkify

__all__ = ["Error", "ErrorCategory", "JaxRuntimeError", "all_checks", "automatic_checks", "check", "check_error",
           "checkify", "debug_check", "div_checks", "float_checks", "index_checks", "init_error", "nan_checks",
           "user_checks"]
