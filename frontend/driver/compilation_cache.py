"""JAX's ``jax.experimental.compilation_cache.compilation_cache``: the persistent compile cache's directory set in
code. kiln's cache is on by default (README "Compile cache"); these set the same flag as
``kiln.config.update("compilation_cache_dir", path)``."""
from __future__ import annotations

import os
from typing import Any

from kiln import runtime

from ..core.config import config


def set_cache_dir(path: str | os.PathLike[Any]) -> None:
    """Keep compiled programs in ``path`` from now on (and look for them there before compiling)."""
    config.update("compilation_cache_dir", path)


def reset_cache() -> None:
    """Back to a fresh cache state: a directory that could not be written gets a new chance, and the counters
    (``kiln.runtime.compile_cache.stats()``) start again. The settings stay; kiln reads them at every compile, so
    a new directory takes effect without a reset (JAX needs one)."""
    runtime.compile_cache.reset()
