"""The one shared jaxlib.mlir context in which kiln builds and parses StableHLO (NOTES §11), and jaxlib's MLIR
bindings themselves (``ir`` and the dialects), which ``kiln.extend.mlir`` exposes for lowering rules users write."""
from __future__ import annotations

import atexit
import threading
from typing import Any

from jaxlib.mlir import ir  # noqa: F401  (re-exported: kiln.extend.mlir)
from jaxlib.mlir.dialects import chlo, func, stablehlo  # noqa: F401  (re-exported: kiln.extend.mlir.dialects)

_context: Any = None
_thread_pool: Any = None  # must outlive the context: the context only borrows it
_lock = threading.Lock()


def _make_context() -> Any:
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import sdy

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


def drop_stale_scopes() -> int:
    """Leave every MLIR context, location and insertion point still entered on this thread.

    Call it only when no lowering is running on this thread. A ``with ctx:`` whose ``__exit__`` was
    skipped (CPython runs a with-statement's exit from the with line, so a KeyboardInterrupt landing
    there skips it) leaves an entry on the bindings' thread-local stack; left there, it is destroyed
    after the interpreter has finalised and aborts the process at exit. Returns how many were left.
    """
    if _context is None:  # nothing was ever built
        return 0

    dropped = 0
    for _ in range(1000):
        for kind in (ir.InsertionPoint, ir.Location, ir.Context):
            try:
                current = kind.current
            except ValueError:  # "No current InsertionPoint"
                current = None
            if current is None:
                continue
            try:
                current.__exit__(None, None, None)
            except Exception:  # not the innermost kind: try the next one
                continue
            dropped += 1
            break
        else:
            return dropped
    return dropped


atexit.register(drop_stale_scopes)
