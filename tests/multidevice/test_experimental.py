"""kiln.experimental on 8 CPU devices: the older shard_map spelling, mesh_utils and multihost_utils (one
process here; tests/distributed runs them across two)."""
from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.experimental import mesh_utils, multihost_utils
from kiln.experimental.shard_map import shard_map
from kiln.sharding import Mesh
from kiln.sharding import PartitionSpec as P


def test_legacy_shard_map_spelling_warns_and_works():
    mesh = Mesh(mesh_utils.create_device_mesh((4, 2)), ("data", "model"))
    with pytest.warns(DeprecationWarning, match="use kiln.shard_map"):
        f = shard_map(lambda b: kiln.lax.psum(b, "data"), mesh, P("data"), P(), check_rep=True)
    x = np.arange(8.0, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(f(x)), x.reshape(4, 2).sum(0))


def test_mesh_utils():
    grid = mesh_utils.create_device_mesh((2, 4))
    assert grid.shape == (2, 4) and list(grid.flat) == kiln.devices()
    hybrid = mesh_utils.create_hybrid_device_mesh((4, 2), (1, 1))  # one process: one granule
    assert hybrid.shape == (4, 2) and list(hybrid.flat) == kiln.devices()
    with pytest.raises(ValueError, match="a mesh of shape \\(3, 2\\) needs 6 devices, but 8 were given"):
        mesh_utils.create_device_mesh((3, 2))
    with pytest.raises(ValueError, match="do not make dcn_mesh_shape \\(2,\\) of mesh_shape \\(4,\\)"):
        mesh_utils.create_hybrid_device_mesh((4,), (2,))


def test_multihost_utils_in_one_process():
    out = multihost_utils.process_allgather({"a": np.arange(3), "b": np.float32(2)})
    np.testing.assert_array_equal(out["a"], np.arange(3)[None])
    np.testing.assert_array_equal(out["b"], np.array([2.0], np.float32))
    np.testing.assert_array_equal(multihost_utils.process_allgather(np.ones((2, 3)), tiled=True), np.ones((2, 3)))
    np.testing.assert_array_equal(multihost_utils.broadcast_one_to_all(np.arange(4)), np.arange(4))
    multihost_utils.sync_global_devices("step 1")
    with pytest.raises(ValueError, match="exactly one process must be the source, but 0 are"):
        multihost_utils.broadcast_one_to_all(np.arange(4), is_source=False)
