"""One small adapter per framework, so each benchmark is written once and runs on kiln and on JAX.

A benchmark receives a :class:`Framework` and uses only its attributes: ``np`` (``kiln.numpy`` or
``jax.numpy``), ``jit``, ``put`` (host data to the default device), ``block`` (wait for a pytree),
``tree_map``, ``value_and_grad`` (None while the framework lacks it: the benchmark is skipped),
``lax`` (for ``lax.scan``) and ``platform`` (the kind of device: benchmarks size their data by it).

Both frameworks share one jaxlib in the process, and one of its process-wide settings differs between them:
jaxlib's per-array Python tracebacks, which kiln turns off in a process without jax (kiln/runtime/tracebacks.py;
an ``import jax`` turns them back on) and jax leaves on. ``enter()`` sets it as the framework has it on its own;
run.py calls it before each measurement, so that each side is timed as it runs without the other.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable


@dataclass(frozen=True)
class Framework:
    name: str
    version: str
    device: str  # the default device, as the framework prints it
    np: ModuleType
    jit: Callable[..., Any]
    put: Callable[[Any], Any]
    block: Callable[[Any], Any]
    tree_map: Callable[..., Any]
    value_and_grad: Callable[..., Any] | None
    lax: ModuleType | None = None  # kiln.lax / jax.lax (structured control flow: scan)
    platform: str = "cpu"  # "cpu", "gpu" (kiln's cuda/rocm, jax's gpu) or "tpu": the kind of the default device
    enter: Callable[[], None] = lambda: None  # process-wide settings as the framework has them alone (above)


def _tracebacks_as(enabled: bool | None) -> Callable[[], None]:
    """``enter`` for a framework that runs with jaxlib's tracebacks ``enabled`` (None: leave them)."""
    from jaxlib import _jax

    def enter() -> None:
        if enabled is not None:
            _jax.set_tracebacks_enabled(enabled)
    return enter


def _kind(platform: str) -> str:
    """One name per kind of device: kiln says ``cuda``/``rocm`` where jax says ``gpu``."""
    return "gpu" if platform in ("cuda", "rocm", "gpu") else platform


def load_kiln(backend: str | None = None) -> Framework:
    import kiln
    import kiln.numpy as knp

    if backend is not None:
        kiln.config.update("default_backend", backend)
    # The compile and trace+lower rows jit a fresh function on purpose, once per repeat: no retrace warnings.
    kiln.config.update("retrace_warning_limit", 0)
    device = kiln.devices(backend)[0]
    return Framework(
        name="kiln", version=kiln.__version__, device=f"{device} ({device.device_kind})", np=knp, jit=kiln.jit,
        put=lambda x: kiln.device_put(x, device) if backend is not None else kiln.device_put(x),
        block=kiln.block_until_ready, tree_map=kiln.tree_util.tree_map,
        value_and_grad=getattr(kiln, "value_and_grad", None), lax=kiln.lax, platform=_kind(device.platform),
        # kiln's own setting, not the current one: jax, loaded first (run.py), turned them back on for itself.
        enter=_tracebacks_as(kiln.runtime.tracebacks.kiln_setting()))


def load_jax(backend: str | None = None) -> Framework | None:
    """JAX, or None when it is not installed (the benchmarks then report kiln alone)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    platform = {"cuda": "gpu", "rocm": "gpu"}.get(backend, backend) if backend else None
    device = jax.devices(platform)[0]
    return Framework(
        name="jax", version=jax.__version__, device=f"{device} ({device.device_kind})", np=jnp, jit=jax.jit,
        put=lambda x: jax.device_put(x, device) if backend is not None else jax.device_put(x),
        block=jax.block_until_ready, tree_map=jax.tree_util.tree_map, value_and_grad=jax.value_and_grad,
        lax=jax.lax, platform=_kind(device.platform),
        enter=_tracebacks_as(True))  # jaxlib's default, which jax does not change
