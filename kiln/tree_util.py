"""kiln.tree_util: pytrees (nested tuples, lists, dicts, namedtuples, registered classes)."""
from kiln.frontend.core.tree_util import *  # noqa: F401,F403
