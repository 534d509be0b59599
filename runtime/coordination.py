"""What the coordination service of a multi-process run tells the processes after ``initialize``: which of
them are alive, and when to save a checkpoint after a preemption notice (``kiln.experimental.multihost_utils``).

- :func:`live_processes`: the distributed client's ``get_live_nodes``, a barrier among the live processes
  named that answers with each one's incarnation (a restarted process gets a new one).
- :func:`reached_preemption_sync_point`: jaxlib's preemption sync manager. JAX starts it in ``initialize``;
  kiln starts it at the first call, in every process (the processes call it at every step from the same
  first step, so they start it together), and stops it before the distributed client shuts down. A
  preemption notice (SIGTERM, the schedulers' default) to any process is shared with all of them; they agree
  on a step after the largest step any of them had reached, and the call for that step returns True.

This module imports only jaxlib and the standard library.
"""
from __future__ import annotations

import atexit
import threading
from typing import Any, Sequence

from . import distributed
from ._jaxlib import _jax
from .errors import jaxlib_message


def _state(where: str) -> distributed.DistributedState:
    state = distributed.state()
    if state is None:
        raise distributed.DistributedError(
            f"{where}: the distributed runtime is not initialized; call kiln.distributed.initialize(...) first, in "
            "every process of the run")
    return state


def live_processes(process_ids: Sequence[int], where: str) -> dict[int, int]:
    """For each of ``process_ids`` that is alive, its incarnation. Waits until every live one of them asks."""
    client = _state(where).client
    try:
        return {int(p): int(i) for p, i in client.get_live_nodes(sorted({int(p) for p in process_ids})).items()}
    except Exception as e:
        raise distributed.DistributedError(f"{where}: the coordination service could not say which processes "
                                           f"are alive: {jaxlib_message(e)}") from e


# The preemption sync manager of the current distributed state (state, manager), made at the first call.
_manager: list[tuple[Any, Any]] = []
_lock = threading.Lock()


def _sync_manager(state: distributed.DistributedState) -> Any:
    with _lock:
        if _manager and _manager[0][0] is state:
            return _manager[0][1]
        _stop_manager()  # one of an earlier run (shut down since)
        manager = _jax.create_preemption_sync_manager()
        manager.initialize(state.client)
        _manager.append((state, manager))
        return manager


def _stop_manager() -> None:
    while _manager:
        _, manager = _manager.pop()
        try:
            manager.shutdown()
        except Exception:
            pass


def reached_preemption_sync_point(step_id: int, where: str) -> bool:
    """Whether ``step_id`` is the step at which the processes agreed to save a checkpoint after a preemption
    notice; False in a single-process program."""
    state = distributed.state()
    if state is None:
        return False
    try:
        return bool(_sync_manager(state).reached_sync_point(int(step_id)))
    except Exception as e:
        raise distributed.DistributedError(f"{where}: the preemption sync manager failed: {jaxlib_message(e)}") \
            from e


# The manager must stop before the client it uses shuts down: at kiln.distributed.shutdown(), and at exit
# (registered after runtime.distributed's own exit handler, so it runs first: atexit runs the last registered first).
distributed.before_shutdown.append(_stop_manager)
atexit.register(_stop_manager)
