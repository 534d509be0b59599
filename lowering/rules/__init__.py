"""Emission rules, one module per family of primitives (importing them registers them)."""
from . import (  # noqa: F401
    callbacks,  # noqa: F401
    checkify,  # noqa: F401
    collectives,  # noqa: F401
    control,  # noqa: F401
    convolution,  # noqa: F401
    custom,  # noqa: F401
    elementwise,
    export,  # noqa: F401
    ffi,  # noqa: F401
    fft,  # noqa: F401
    indexing,  # noqa: F401
    linalg,  # noqa: F401
    misc,  # noqa: F401
    reduction,
    sharding,  # noqa: F401
    sorting,  # noqa: F401
    special,  # noqa: F401
    structural,
    windowed,  # noqa: F401
)
