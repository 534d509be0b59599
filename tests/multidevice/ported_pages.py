"""What this folder's tests of JAX's ported pages share: how many collectives a program runs, a cell's printed
text, and which block of an array each device holds (the oracle of layouts)."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import pathlib

import numpy as np

import kiln

# tests/examples/ported.py, loaded by its path: this folder's tests do not have tests/examples on sys.path
_PORTED = pathlib.Path(__file__).resolve().parents[1] / "examples" / "ported.py"
_spec = importlib.util.spec_from_file_location("multidevice_ported", _PORTED)
_ported = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ported)

count_primitives = _ported.count_primitives
COMMUNICATING = {name: name for name in ("psum", "all_gather", "psum_scatter", "ppermute", "all_to_all")}


def collectives(jaxpr) -> dict:
    """{collective: how many} of a jaxpr (or a ClosedJaxpr), nested bodies included; pvary, which communicates
    nothing, left out."""
    return dict(count_primitives(getattr(jaxpr, "jaxpr", jaxpr), names=COMMUNICATING))


def run_printing(fn, *args, **kwargs):
    """(what fn returns, what it printed); the mesh a page sets in context is unset afterwards."""
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            out = fn(*args, **kwargs)
    finally:
        kiln.set_mesh(None)
    return out, buf.getvalue()


def device_ids(mesh) -> np.ndarray:
    """The mesh's grid of device ids."""
    return np.vectorize(lambda d: d.id, otypes=[int])(mesh.devices)


def block_bounds(shape, mesh, spec, device_id) -> tuple:
    """The (start, stop) per dimension of the block that `device_id` holds under `spec`, worked out from the mesh's
    device grid: dimension i splits into as many blocks as the product of its mesh axes' sizes, numbered row-major
    over those axes by the device's coordinates."""
    coords = dict(zip(mesh.axis_names, np.argwhere(device_ids(mesh) == device_id)[0]))
    sizes = dict(zip(mesh.axis_names, mesh.devices.shape))
    entries = tuple(spec) + (None,) * (len(shape) - len(spec))
    out = []
    for dim, entry in zip(shape, entries):
        axes = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        k, n = 0, 1
        for a in axes:
            k, n = k * sizes[a] + coords[a], n * sizes[a]
        assert dim % n == 0
        out.append((k * dim // n, (k + 1) * dim // n))
    return tuple(out)
