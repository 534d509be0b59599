"""kiln.sharding: how arrays are laid out over devices (JAX's ``jax.sharding``)."""
from kiln.frontend.driver.sharding import AbstractDevice as AbstractDevice
from kiln.frontend.driver.sharding import AbstractMesh as AbstractMesh
from kiln.frontend.driver.sharding import AxisType as AxisType
from kiln.frontend.driver.sharding import Mesh as Mesh
from kiln.frontend.driver.sharding import NamedSharding as NamedSharding
from kiln.frontend.driver.sharding import PartitionSpec as PartitionSpec
from kiln.frontend.driver.sharding import Sharding as Sharding
from kiln.frontend.driver.sharding import SingleDeviceSharding as SingleDeviceSharding
from kiln.frontend.driver.sharding import get_abstract_mesh as get_abstract_mesh
from kiln.frontend.driver.sharding import get_mesh as get_mesh
from kiln.frontend.driver.sharding import make_single_device_sharding as make_single_device_sharding
from kiln.frontend.driver.sharding import set_mesh as set_mesh
from kiln.frontend.driver.sharding import use_abstract_mesh as use_abstract_mesh
from kiln.frontend.lax.sharding import reshard as reshard

__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "Mesh", "NamedSharding", "PartitionSpec", "Sharding",
           "SingleDeviceSharding", "get_abstract_mesh", "get_mesh", "make_single_device_sharding", "reshard",
           "set_mesh", "use_abstract_mesh"]
