"""JAX's ``jax.experimental.compute_on``: run a part of a program on another kind of compute (the host CPU of a
GPU/TPU device, TPU SparseCores, a separate GPU stream).

kiln runs every computation on its device, so ``compute_on('device')`` is accepted and changes nothing, as is
``'gpu_stream:N'`` (a scheduling hint for XLA's GPU streams, which kiln does not pass on: the values are the same
on one stream). ``'device_host'`` (host offloading) and ``'tpu_sparsecore'`` raise ``NotImplementedError``
naming what to do instead; any other compute type is a ``ValueError``, as in JAX.
"""
from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable

from ..core import tree_util

_WHERE = "kiln.experimental.compute_on"
_UNSUPPORTED = {
    "device_host": (
        "offloading a computation to the host CPU of its device is not supported: kiln runs every computation on "
        "the device. To compute on the host, call a NumPy function with kiln.pure_callback (or "
        "kiln.experimental.io_callback), or run that part on the CPU backend: kiln.jit(f, backend='cpu') and "
        "kiln.device_put(x, kiln.devices('cpu')[0])"),
    "tpu_sparsecore": "TPU SparseCores are not supported: kiln runs the computation on the device itself; use "
                      "compute_on('device') or leave the compute_on out",
}


class _Current(threading.local):
    compute_type: str | None = None


_current = _Current()


def current_compute_type() -> str | None:
    """The compute type of the innermost ``compute_on`` this thread is in (None outside any)."""
    return _current.compute_type


def _check(compute_type: Any) -> str:
    if not isinstance(compute_type, str):
        raise TypeError(f"`compute_on`'s compute_type argument must be a string, got {type(compute_type).__name__} "
                        f"{compute_type!r:.60}")
    if compute_type in _UNSUPPORTED:
        raise NotImplementedError(f"{_WHERE}({compute_type!r}): {_UNSUPPORTED[compute_type]}")
    if compute_type != "device" and not compute_type.startswith("gpu_stream:"):
        raise ValueError(f"Invalid compute type {compute_type}. Current supported values are `device_host`, "
                         f"`device`, `tpu_sparsecore`, and `gpu_stream:#` ({_WHERE}: kiln runs `device` and "
                         "`gpu_stream:#`, both on the device)")
    return compute_type


@contextlib.contextmanager
def compute_on(compute_type: str):
    """Run the computations inside (a ``with`` block, or a function decorated with ``@compute_on(...)``) on
    ``compute_type``: ``'device'`` (and ``'gpu_stream:N'``) run on the device as everything else does;
    ``'device_host'`` and ``'tpu_sparsecore'`` raise ``NotImplementedError``."""
    _check(compute_type)
    previous, _current.compute_type = _current.compute_type, compute_type
    try:
        yield
    finally:
        _current.compute_type = previous


_DEVICE_SPACES = ("device", None)


def _check_memory_space(space: Any) -> None:
    """A memory space of ``compute_on2``'s ``out_memory_spaces``: the device's ('device', JAX's
    ``MemorySpace.Device``, or None); host memory raises."""
    name = getattr(space, "name", space)
    name = name.lower() if isinstance(name, str) else name
    if name in _DEVICE_SPACES:
        return
    if name in ("host", "pinned_host", "unpinned_host"):
        raise NotImplementedError(f"{_WHERE}.compute_on2: out_memory_spaces {space!r}: kiln keeps arrays in device "
                                  "memory only; give 'device' (or leave the output in the device's memory)")
    raise ValueError(f"{_WHERE}.compute_on2: out_memory_spaces must be memory spaces ('device'), got {space!r:.60}")


def compute_on2(f: Callable | None = None, *, compute_type: str, out_memory_spaces: Any,
                compiler_options: dict | None = None) -> Any:
    """``f`` run on ``compute_type`` with its outputs in ``out_memory_spaces`` (one memory space, or a pytree
    prefix of ``f``'s outputs); as a decorator when ``f`` is None. kiln takes ``compute_type='device'`` (and
    ``'gpu_stream:N'``) with outputs in device memory, and runs ``f`` as it is; ``compiler_options`` (XLA's
    options for the offloaded part) are accepted and unused then."""
    _check(compute_type)
    if compiler_options is not None and not isinstance(compiler_options, dict):
        raise TypeError(f"{_WHERE}.compute_on2: compiler_options must be a dict, got "
                        f"{type(compiler_options).__name__}")
    for space in tree_util.tree_leaves(out_memory_spaces, is_leaf=lambda s: s is None):
        _check_memory_space(space)

    def wrap(g: Callable) -> Callable:
        @functools.wraps(g)
        def wrapped(*args: Any) -> Any:
            with compute_on(compute_type):
                return g(*args)
        return wrapped
    return wrap if f is None else wrap(f)
