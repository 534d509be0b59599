"""What this folder's tests of JAX's ported pages share: how many collectives a program runs, a cell's printed
text, which block of an array each device holds (the oracle of layouts), and the pages' MLP in NumPy."""
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


def mlp_forward_backward(params, batch) -> tuple:
    """float64 NumPy: the shard_map pages' MLP loss (mean over the batch of the squared error summed over the
    outputs) and its gradient by hand (backprop through dot + bias + relu, no relu after the last layer)."""
    x, y = (np.asarray(v, np.float64) for v in batch)
    params = [(np.asarray(w, np.float64), np.asarray(b, np.float64)) for w, b in params]
    acts, pre = [x], []
    for i, (w, b) in enumerate(params):
        pre.append(acts[-1] @ w + b)
        acts.append(np.maximum(pre[-1], 0) if i < len(params) - 1 else pre[-1])
    loss = np.mean(np.sum((acts[-1] - y) ** 2, axis=-1))
    g = 2 * (acts[-1] - y) / x.shape[0]
    grads = [None] * len(params)
    for i in range(len(params) - 1, -1, -1):
        if i < len(params) - 1:
            g = g * (pre[i] > 0)
        grads[i] = (acts[i].T @ g, g.sum(0))
        g = g @ params[i][0].T
    return loss, grads
