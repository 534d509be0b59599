"""The one shared jaxlib.mlir context in which kiln builds and parses StableHLO (NOTES §11)."""
from __future__ import annotations

import threading
from typing import Any

_context: Any = None
_thread_pool: Any = None  # must outlive the context: the context only borrows it
_lock = threading.Lock()


def _make_context() -> Any:
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import chlo, sdy, stablehlo

    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)  # upstream dialects: func, arith, ...
    ctx = ir.Context()
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()
    global _thread_pool
    try:
        _thread_pool = ir.ThreadPool()
        ctx.set_thread_pool(_thread_pool)  # as jax does: one pool, not one per context
    except AttributeError:
        pass
    for dialect in (stablehlo, chlo, sdy):
        dialect.register_dialect(ctx)
    try:
        from jaxlib.mlir.dialects import mhlo

        mhlo.register_mhlo_dialect(ctx)
    except (ImportError, AttributeError):  # optional; absent in some jaxlib builds
        pass
    return ctx


def mlir_context() -> Any:
    """The shared, fully set-up ``jaxlib.mlir.ir.Context`` (created on first use)."""
    global _context
    if _context is None:
        with _lock:
            if _context is None:
                _context = _make_context()
    return _context
