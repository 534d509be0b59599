"""Arrays laid out over several devices: one jaxlib ``ArrayImpl`` holding a shard per device (NOTES §6).

The layout is an XLA ``HloSharding`` over an ordered tuple of devices: tile numbers in the sharding
string index that tuple. kiln's frontend derives both from a ``NamedSharding``; XLA's SPMD partitioner
does the rest.
"""
from __future__ import annotations

import collections
import os
import re
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import compile_cache, distributed
from ._jaxlib import JaxRuntimeError, device_put, result_handler, xc
from .avals import KilnSharding, aval_for
from .backends import Device, device_of_raw
from .buffers import Buffer, _check_alive, _without_jax_import
from .errors import CompileError, ExecutionError, KilnRuntimeError, deleted_error, jaxlib_message
from .executable import (
    Executable,
    apply_compiler_options,
    apply_debug_options,
    callback_args,
    compiler_option_error,
    output_memory_kinds,
    with_callbacks,
)
from .lapack import ensure_lapack_registered


class SpmdSharding(KilnSharding):
    """An ``HloSharding`` over an ordered tuple of kiln devices. Interned per (devices, sharding string),
    like :class:`~kiln.runtime.avals.DeviceSharding`: jaxlib compares shardings by identity."""

    def __init__(self, devices: tuple[Device, ...], hlo: str, memory_kind: str | None = None) -> None:
        super().__init__(tuple(d._raw for d in devices), xc.HloSharding.from_string(hlo), memory_kind)
        self.kiln_devices = devices
        self.hlo_text = hlo
        here = devices[0].backend.process_index if devices else 0
        # The devices of this process (all of them, unless the mesh spans several processes).
        self.addressable_devices = tuple(d for d in devices if d.process_index == here)
        self.is_fully_addressable = len(self.addressable_devices) == len(devices)

    def __repr__(self) -> str:
        where = "" if self._memory_kind == self.kiln_devices[0]._sharding.memory_kind else \
            f", memory_kind={self._memory_kind}"
        return f"SpmdSharding({self.hlo_text}, devices={[d.id for d in self.kiln_devices]}{where})"


_interned: dict[tuple[tuple[Device, ...], str, str | None], SpmdSharding] = {}


def spmd_sharding(devices: Sequence[Device], hlo: str, memory_kind: str | None = None) -> SpmdSharding:
    """The interned :class:`SpmdSharding` of ``hlo`` (an HloSharding string) over ``devices``, in their memory
    ``memory_kind`` (None: the default)."""
    key = (tuple(devices), hlo, memory_kind)
    s = _interned.get(key)
    if s is None:
        for d in key[0]:
            if not isinstance(d, Device):
                raise TypeError(f"runtime.spmd_sharding expects kiln runtime.Devices, got {d!r}.")
        if memory_kind is not None:
            key[0][0].sharding_in(memory_kind)  # (an unknown kind: the error naming the kinds there are)
        s = _interned.setdefault(key, SpmdSharding(key[0], hlo, memory_kind))
    return s


def put_sharded(pieces: Sequence[np.ndarray], sharding: SpmdSharding, shape: tuple[int, ...], dtype: Any) -> Buffer:
    """One array of ``shape`` made of ``pieces[i]`` on the i-th of ``sharding.addressable_devices`` (copied,
    never aliased). In a multi-process run each process puts the pieces of its own devices (NOTES §10)."""
    dtype = np.dtype(dtype)
    local = sharding.addressable_devices
    if len(pieces) != len(local):
        raise ValueError(f"runtime.put_sharded: {len(pieces)} pieces for {len(local)} addressable devices")
    # A fresh contiguous copy per device: jaxlib 0.10 fails (bad_function_call) when two pieces share memory.
    host = [np.array(p, dtype=dtype, copy=True, order="C") for p in pieces]
    try:
        return device_put(aval_for(tuple(shape), dtype), sharding, host, [d._raw for d in local])
    except JaxRuntimeError as e:
        raise KilnRuntimeError(f"Transfer of a {dtype}{list(shape)} array to {sharding!r} failed: "
                               f"{jaxlib_message(e)}") from e


def shards_of(buf: Buffer) -> list[Buffer]:
    """The single-device buffers making up ``buf`` on this process's devices, in its sharding's device order."""
    _check_alive(buf, "shards_of")
    # jaxlib builds the shard views of a multi-device array the first time they are asked for, and tries to
    # import jax for their avals (NOTES §0.1): without it they get none, and kiln reads them as raw buffers.
    return _without_jax_import(lambda: list(buf._arrays))


def devices_of(buf: Buffer) -> list[Device]:
    """This process's devices holding ``buf``'s shards, in its sharding's device order."""
    sharding = buf._sharding
    if isinstance(sharding, SpmdSharding):
        return list(sharding.addressable_devices)
    devices = [device_of_raw(d) for d in sharding._internal_device_list]
    here = devices[0].backend.process_index if devices else 0
    return [d for d in devices if d.process_index == here]


class SpmdExecutable(Executable):
    """A module compiled for a mesh of devices: XLA's SPMD partitioner split it, one program per device.
    Arguments and results are arrays laid out over ``devices``; ``out_shardings`` are the results' layouts
    (the ones the module asked for, or the ones the partitioner chose)."""

    __slots__ = ("devices", "out_shardings", "_ahead")

    def __init__(self, exe: Any, devices: tuple[Device, ...], out_avals: list, num_donated: int, text: str) -> None:
        self.device = devices[0]
        self.devices = devices
        self.out_avals = out_avals
        self.num_donated = num_donated
        self._exe = exe
        self._text = text
        self._size = None
        self.cache_entry = None  # (see Executable)
        self.host_callbacks, self.ordered_effects = (), False
        protos = exe.get_output_shardings()  # None for a one-device program
        hlo = ([xc.HloSharding.from_proto(s) for s in protos] if protos is not None
               else [xc.HloSharding.replicate()] * len(out_avals))
        self.out_memory_kinds = output_memory_kinds(exe, devices[0], len(out_avals))
        self.out_shardings = [spmd_sharding(devices, str(h), kind) for h, kind in zip(hlo, self.out_memory_kinds)]
        self._handlers = [result_handler(av, s) for av, s in zip(out_avals, self.out_shardings)]
        self._ahead = max_in_flight(devices) if _has_collectives(exe) else None

    def _launch(self, args: list[Buffer]) -> Any:
        """Launch on every device, once fewer than :attr:`max_in_flight` mesh executions are in flight; the
        execution's token (which no donation deletes) is then one of them."""
        limit = self._ahead
        if limit is None:
            return self._exe.execute_sharded(args)
        _wait_for_turn(limit)
        results = self._exe.execute_sharded(args, with_tokens=True)
        _in_flight.append(results.consume_token())
        return results

    def launcher(self) -> tuple[Any, Any]:
        """:meth:`Executable.launcher`, launching as :meth:`_launch` does (waiting for its turn)."""
        start, finish = super().launcher()
        return (start if self._ahead is None else self._launch), finish

    @property
    def max_in_flight(self) -> int | None:
        """How many mesh executions may be in flight when one of this program's is launched
        (:func:`max_in_flight`); None: any number (a program without collectives: its devices never wait for each
        other)."""
        return self._ahead

    def before_foreign_launch(self) -> None:
        """Wait for this program's turn before a launch that does not come through :meth:`_launch` (jaxlib's C++
        dispatch); :meth:`after_foreign_launch` after it."""
        if self._ahead is not None:
            _wait_for_turn(self._ahead)

    def after_foreign_launch(self, out: Buffer) -> None:
        """After a launch of this program that made ``out`` (its first output) outside :meth:`_launch`: with no
        token to wait for later, one execution at a time means waiting for ``out`` now; otherwise ``out`` stands
        for the execution in flight."""
        if self._ahead == 1:
            _wait(out)
        elif self._ahead is not None:
            _in_flight.append(out)

    def _argument_error(self, e: BaseException, args: Sequence[Any]) -> Exception:
        for i, a in enumerate(args):
            if isinstance(a, Buffer) and a.is_deleted():
                return deleted_error(f"argument {i} of the computation")
        msg = jaxlib_message(e)
        hint = distributed.peer_failure_hint(msg)
        if hint:
            return distributed.DistributedError(f"Executing the computation on {len(self.devices)} devices "
                                                f"failed: {msg}.{hint}")
        return ExecutionError(f"Executing the computation on {len(self.devices)} devices failed: {msg}")

    def __repr__(self) -> str:
        return f"SpmdExecutable(devices={[d.id for d in self.devices]}, outputs={len(self.out_avals)})"


# XLA's CPU collectives rendezvous with a timeout: thousands of queued multi-device executions make the later
# ones wait past it and abort the process (NOTES §6). Before a launch, kiln waits until fewer than MAX_IN_FLIGHT
# mesh executions are in flight (the cost measured there: about 138 µs a step against 179 µs blocking every call).
MAX_IN_FLIGHT = 16
# Tokens of the mesh executions launched (or, from jaxlib's C++ dispatch, their first outputs), oldest first; one
# that has finished leaves when a launch next waits.
_in_flight: collections.deque = collections.deque()
_in_flight_lock = threading.Lock()


def max_in_flight(devices: Sequence[Device]) -> int:
    """How many executions over ``devices`` may be in flight at a launch: :data:`MAX_IN_FLIGHT`, or one for a CPU
    mesh of more devices than the machine has cores. There the collectives of two executions in flight at once
    wait for each other's threads: XLA aborts the process after 40 s (8 CPU devices on 2 cores, a data-parallel
    MLP step with donated parameters, two executions in flight; ``jax.jit`` aborts alike). One at a time still
    lets the host prepare the next launch while the devices run."""
    if devices and devices[0].platform == "cpu" and len(devices) > (os.cpu_count() or 1):
        return 1
    return MAX_IN_FLIGHT


_COLLECTIVE = re.compile(r"\s(?:all-reduce|all-gather|all-to-all|ragged-all-to-all|collective-permute|"
                         r"collective-broadcast|reduce-scatter|send|recv)(?:-start|-done)?\(")


def _has_collectives(exe: Any) -> bool:
    """Whether the partitioned program has operations that make its devices wait for each other (what the
    bound on executions in flight is for); True where its HLO cannot be read."""
    try:
        return any(_COLLECTIVE.search(m.to_string()) for m in exe.hlo_modules())
    except Exception:
        return True


def _wait_for_turn(limit: int) -> None:
    """Wait until fewer than ``limit`` mesh executions are in flight."""
    while True:
        with _in_flight_lock:
            if len(_in_flight) < limit:
                return
            oldest = _in_flight.popleft()
        _wait(oldest)


def wait_for_mesh_executions() -> None:
    """Wait until no mesh execution with collectives is in flight. Run before the distributed runtime shuts down
    (explicitly or at exit): a program's result is read from one device, while another of this process's devices
    may still be setting up its collective with the other processes through the coordination service; once the
    service or a peer has gone, that device waits for ever, and the process hangs at exit."""
    _wait_for_turn(1)  # (fewer than one in flight: none)


distributed.before_shutdown.append(wait_for_mesh_executions)


def _wait(handle: Any) -> None:
    """Wait for an execution, by its token or an output buffer (a deleted one, donated since, no longer can)."""
    if type(handle) is Buffer and handle.is_deleted():
        return
    try:
        handle.block_until_ready()
    except JaxRuntimeError:
        pass  # that execution's own error surfaces where its result is used


def compile_spmd(module: Any, devices: Sequence[Device], out_types: Sequence[tuple[tuple[int, ...], Any]],
                 num_donated: int = 0, text: str | None = None, host_callbacks: Sequence[Any] = (),
                 ordered_effects: bool = False, compiler_options: Sequence[tuple[str, Any]] = (),
                 use_cache: bool = True) -> SpmdExecutable:
    """Compile a StableHLO module carrying Shardy shardings (``sdy.mesh``, ``sdy.sharding``) for ``devices``
    (logical device i of the mesh is ``devices[i]``); results without a sharding get the partitioner's.
    ``compiler_options``: as :func:`~kiln.runtime.executable.compile`'s; ``use_cache=False``: not through the
    persistent cache (a module with :class:`~kiln.runtime.sharding_probe.ShardingProbe` keys)."""
    devices = tuple(devices)
    text = str(module) if text is None else text
    out_avals = [aval_for(tuple(shape), np.dtype(dtype)) for shape, dtype in out_types]
    opts = xc.CompileOptions()
    opts.num_replicas, opts.num_partitions = 1, len(devices)
    opts.device_assignment = xc.DeviceAssignment.create(np.array([[d._raw.id for d in devices]]))
    build = opts.executable_build_options
    build.use_spmd_partitioning = True
    build.use_shardy_partitioner = True
    build.allow_spmd_sharding_propagation_to_output = [True] * len(out_avals)
    apply_debug_options(build.debug_options, devices[0])
    apply_compiler_options(opts, compiler_options)
    if devices[0].platform == "cpu" and "lapack_" in text:
        ensure_lapack_registered()
    try:
        exe, entry = compile_cache.compile_and_load(devices[0].backend._client, module,
                                                    xc.DeviceList(tuple(d._raw for d in devices)), opts, text=text,
                                                    use_cache=use_cache, **callback_args(module, host_callbacks))
    except (JaxRuntimeError, ValueError, RuntimeError) as e:
        option_error = compiler_option_error(jaxlib_message(e)) if compiler_options else None
        if option_error is not None:
            raise option_error from e
        raise CompileError(f"XLA failed to compile the module for {len(devices)} devices:\n{jaxlib_message(e)}") from e
    loaded = SpmdExecutable(exe, devices, out_avals, num_donated, text)
    loaded.cache_entry = entry
    return with_callbacks(loaded, host_callbacks, ordered_effects)


def is_tiled_layout(sharding: SpmdSharding) -> bool:
    """Whether :func:`tile_layout` can describe ``sharding`` (replicated, or tiles of the array over the devices,
    perhaps replicated along the last tile dimension); not a maximal (one-device) or manual one."""
    hlo = sharding._hlo
    if hlo.is_replicated():
        return True
    return bool(hlo.is_tiled() and not hlo.is_manual() and not hlo.is_maximal() and (
        not hlo.subgroup_types() or hlo.replicate_on_last_tile_dim()))


def tile_layout(sharding: SpmdSharding, ndim: int) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """How ``sharding`` cuts an ``ndim``-d array: the number of pieces per dimension, and for each of its
    devices (in order) the piece it holds, as coordinates."""
    hlo = sharding._hlo
    n = len(sharding.kiln_devices)
    if hlo.is_replicated():
        return (1,) * ndim, [(0,) * ndim] * n
    if not is_tiled_layout(sharding):
        raise KilnRuntimeError(f"runtime.tile_layout: {sharding.hlo_text} is not a tiled layout kiln can describe")
    dims = tuple(hlo.tile_assignment_dimensions())
    tiles = np.array(hlo.tile_assignment_devices()).reshape(dims)
    coords: list[tuple[int, ...]] = [()] * n
    for index in np.ndindex(*dims):
        coords[int(tiles[index])] = tuple(int(i) for i in index[:ndim])
    return dims[:ndim], coords
