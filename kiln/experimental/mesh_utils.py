"""``jax.experimental.mesh_utils``: arrays of devices to build a ``Mesh`` from."""
from kiln.frontend.driver.multihost import create_device_mesh as create_device_mesh
from kiln.frontend.driver.multihost import create_hybrid_device_mesh as create_hybrid_device_mesh

__all__ = ["create_device_mesh", "create_hybrid_device_mesh"]
