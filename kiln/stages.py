"""kiln.stages: the stages of ahead-of-time compilation (as ``jax.stages``): ``kiln.jit(f)`` is a
``Wrapped``; ``.trace(*args)`` gives a ``Traced``, ``.lower(*args)`` a ``Lowered``, ``.compile()`` a
``Compiled``."""
from kiln.frontend.driver.jit import ArgInfo as ArgInfo
from kiln.frontend.driver.jit import Compiled as Compiled
from kiln.frontend.driver.jit import CompilerOptions as CompilerOptions
from kiln.frontend.driver.jit import JittedFunction as Wrapped
from kiln.frontend.driver.jit import Lowered as Lowered
from kiln.frontend.driver.jit import Traced as Traced

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
