"""Host callbacks: Python functions that a compiled program calls while it runs (NOTES §8).

A program calls a host function through ``stablehlo.custom_call @xla_ffi_python_cpu_callback`` (GPU:
``xla_ffi_python_gpu_callback``) whose ``mhlo.backend_config = {index = N : ui64}`` names the N-th
callable given to ``compile_and_load(..., host_callbacks=[...])``. jaxlib hands the callable read-only
NumPy views of the operands and takes back a tuple of NumPy arrays, *without checking them*: a wrong dtype
gives silently wrong numbers. :class:`HostCallback` is the checked wrapper kiln passes instead:

- it calls the user's function on NumPy arrays, converts its results (Python scalars, 0-d values, lists)
  with ``np.asarray`` and the caller's ``canonicalize`` (float64 -> float32 without x64, as JAX), and checks
  their count, shapes and dtypes against the declared ones;
- an exception inside it (the user's, or a failed check) is kept, with its traceback, and a short error
  makes XLA abort the execution; :func:`raise_pending` then raises :class:`CallbackError` (naming the
  callback, the original type, message and traceback, chained with ``from``) to whoever launched the
  program.

This module imports nothing of kiln: the frontend builds the flat functions, the lowering places them.
"""
from __future__ import annotations

import threading
import traceback
from typing import Any, Callable, Sequence

import numpy as np

from .errors import KilnRuntimeError


class CallbackError(KilnRuntimeError, RuntimeError):
    """A host callback (``kiln.debug.callback``, ``kiln.pure_callback``, ``kiln.experimental.io_callback``,
    ``kiln.debug.print``) raised, or returned results that do not match its declared shapes/dtypes.
    ``__cause__`` is the original exception; ``callback_name`` names the callback."""

    def __init__(self, message: str, callback_name: str = "") -> None:
        super().__init__(message)
        self.callback_name = callback_name


class CallbackResultError(KilnRuntimeError, TypeError):
    """A host callback returned the wrong number of results, or a result of the wrong shape or dtype."""


class HostCallback:
    """A checked host callable for ``compile_and_load(host_callbacks=...)``.

    ``fn(*arrays)`` gets one read-only NumPy array per operand and returns a sequence of results (or None
    when ``result_types`` is empty); ``result_types`` are the declared ``(shape, dtype)`` of the results;
    ``canonicalize(dtype) -> dtype`` maps a returned array's dtype to the one the program uses (as JAX
    converts float64 to float32 without x64), None to keep it; ``token`` says whether the custom call
    threads an ordering token as its first operand and result.
    """

    __slots__ = ("fn", "name", "result_types", "canonicalize", "token", "_errors", "__weakref__")

    def __init__(self, fn: Callable[..., Any], name: str, result_types: Sequence[tuple[tuple[int, ...], Any]] = (),
                 canonicalize: Callable[[np.dtype], np.dtype] | None = None, token: bool = False) -> None:
        self.fn = fn
        self.name = name
        self.result_types = tuple((tuple(s), np.dtype(d)) for s, d in result_types)
        self.canonicalize = canonicalize
        self.token = token
        self._errors: list[BaseException] = []

    def with_token(self) -> HostCallback:
        """The same callback for a custom call that threads a token (its first operand and result)."""
        return HostCallback(self.fn, self.name, self.result_types, self.canonicalize, token=True)

    def with_result_types(self, result_types: Sequence[tuple[tuple[int, ...], Any]]) -> HostCallback:
        """The same function declared with other results (a batched call returns batched results)."""
        return HostCallback(self.fn, self.name, result_types, self.canonicalize, self.token)

    def check_results(self, out: Any) -> tuple[np.ndarray, ...]:
        """``out`` (what the function returned) as a tuple of arrays of the declared shapes and dtypes."""
        n = len(self.result_types)
        if out is None and n == 0:
            return ()
        if not isinstance(out, (tuple, list)):
            raise CallbackResultError(
                f"the host callback {self.name} must return a sequence of {n} arrays, got {type(out).__name__}")
        if len(out) != n:
            raise CallbackResultError(
                f"the host callback {self.name} returned {len(out)} results, expected {n} "
                f"({', '.join(_fmt(s, d) for s, d in self.result_types) or 'none'})")
        arrays = []
        for i, (value, (shape, dtype)) in enumerate(zip(out, self.result_types)):
            try:
                a = np.asarray(value)
            except Exception as e:
                raise CallbackResultError(f"the host callback {self.name}: result {i} ({type(value).__name__}) is "
                                          f"not convertible to an array: {e}") from None
            if self.canonicalize is not None and a.dtype != dtype:
                try:
                    canon = np.dtype(self.canonicalize(a.dtype))
                except Exception:  # not an array dtype (object, strings): reported below
                    canon = a.dtype
                if canon != a.dtype:
                    a = a.astype(canon)
            if a.shape != shape or a.dtype != dtype:
                raise CallbackResultError(
                    f"the host callback {self.name}: result {i} has shape {a.shape} and dtype {a.dtype.name}, but "
                    f"the declared result is {_fmt(shape, dtype)}; return an array of that shape and dtype (e.g. "
                    f"np.asarray(value, dtype='{dtype.name}')) or fix result_shape_dtypes")
            arrays.append(a)
        return tuple(arrays)

    def call(self, *args: Any) -> tuple[np.ndarray, ...]:
        """Run the function and check its results (raises what it raised, or :class:`CallbackResultError`)."""
        return self.check_results(self.fn(*args))

    def __call__(self, *args: Any) -> tuple:
        # Called by the runtime, on one of its threads, in the middle of an execution.
        try:
            if self.token:
                return (None, *self.call(*args[1:]))
            return self.call(*args)
        except BaseException as e:  # kept for the caller of the program; XLA only learns that it failed
            self._errors.append(e)
            _note_failure(self)
            raise RuntimeError(f"kiln host callback {self.name} failed") from None

    def take_error(self) -> BaseException | None:
        return self._errors.pop(0) if self._errors else None

    def __repr__(self) -> str:
        return f"HostCallback({self.name})"


def _fmt(shape: tuple[int, ...], dtype: np.dtype) -> str:
    return f"{dtype.name}{list(shape)}"


# Files of kiln's own wrappers around the user's function: their frames are left out of the traceback shown.
_WRAPPER_FILES: set[str] = {__file__}


def register_wrapper_file(path: str) -> None:
    """Leave the frames of ``path`` (a module wrapping user callbacks) out of callback tracebacks."""
    _WRAPPER_FILES.add(path)


def callback_error(cb: HostCallback, e: BaseException) -> CallbackError:
    """The kiln error for exception ``e`` raised in host callback ``cb`` (the caller raises it ``from e``)."""
    frames = e.__traceback__
    while frames is not None and frames.tb_frame.f_code.co_filename in _WRAPPER_FILES:  # from the user's frame
        frames = frames.tb_next
    tb = "".join(traceback.format_exception(type(e), e, frames or e.__traceback__))
    if isinstance(e, CallbackResultError):
        return CallbackError(f"kiln: {e}", cb.name)
    return CallbackError(f"kiln: the host callback {cb.name} raised {type(e).__name__}: {e}\n"
                         f"Traceback of the callback:\n{tb.rstrip()}", cb.name)


# Callbacks that failed since their program's caller last looked (usually none): the launch that failed
# raises the first one's error. A lock because callbacks run on the runtime's threads.
_failed: list[HostCallback] = []
_failed_lock = threading.Lock()


def _note_failure(cb: HostCallback) -> None:
    with _failed_lock:
        _failed.append(cb)
        del _failed[:-64]  # failures nobody asked about (a launch that did not report them) do not pile up


def raise_pending(callbacks: Sequence[HostCallback], cause: BaseException | None = None) -> None:
    """After an execution of a program with ``callbacks`` failed: raise the :class:`CallbackError` of the
    first of them that failed, if any (otherwise return and let the caller report ``cause``)."""
    if not callbacks or not _failed:
        return
    mine = {id(c) for c in callbacks}
    with _failed_lock:
        cb = next((c for c in _failed if id(c) in mine), None)
        if cb is not None:
            _failed.remove(cb)
    if cb is None:
        return
    e = cb.take_error()
    if e is None:
        return
    if _as_is(e):  # kiln's own run-time checks: as they are, without XLA's failure as their context
        raise e from None
    if not isinstance(e, Exception):  # KeyboardInterrupt, SystemExit inside the callback: as they are
        raise e
    err = callback_error(cb, e)
    raise err from e


def run_on_host(cb: HostCallback, args: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Call ``cb`` directly (outside any program: eager execution), with the same checks and errors."""
    try:
        return cb.call(*args)
    except BaseException as e:
        if not isinstance(e, Exception) or _as_is(e):
            raise  # KeyboardInterrupt, SystemExit, kiln's own checks: as they are
        raise callback_error(cb, e) from e


def _as_is(e: BaseException) -> bool:
    """Whether ``e`` is one of kiln's own run-time checks (``index_checks``), raised as it is rather than
    wrapped in a :class:`CallbackError`: it carries ``report_as_is = True``."""
    return getattr(e, "report_as_is", False) is True


# -- ordering and effects_barrier ----------------------------------------------------------------------
# Executables with host callbacks remember the results of their last launch: ordered ones wait for the
# previous ordered launch before starting (program order across programs), and effects_barrier() waits for
# all of them.
_last_ordered: list[Any] = []
_last_unordered: list[Any] = []


def before_ordered_launch() -> None:
    """Wait for the last launch of a program with ordered effects to finish."""
    if _last_ordered:
        _block(_last_ordered.pop())


def after_launch(outs: Sequence[Any], ordered: bool) -> None:
    """Remember the results of a launch of a program with host callbacks (for ordering and the barrier)."""
    target = _last_ordered if ordered else _last_unordered
    target[:] = [list(outs[:1])]  # one result is ready when the launch is done: hold no more than that


def effects_barrier() -> None:
    """Wait until every launched program with host callbacks has finished (its callbacks have run)."""
    while _last_ordered:
        _block(_last_ordered.pop())
    while _last_unordered:
        _block(_last_unordered.pop())


def _block(outs: Sequence[Any]) -> None:
    for b in outs:
        try:
            if not b.is_deleted():
                b.block_until_ready()
        except Exception:
            pass  # that launch's own error surfaces where its results are used


# GPU: the ``xla_ffi_python_gpu_callback`` handler lives in the CUDA/ROCm plugin extension; runtime/plugins.py
# registers every FFI handler of that extension when it loads the plugin (untested here: no GPU).
