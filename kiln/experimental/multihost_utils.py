"""``jax.experimental.multihost_utils``: a barrier, host-value exchange and checks across the processes of a
program, host-local data to global arrays and back, preemption sync points and the live devices."""
from kiln.frontend.driver.multihost import ProcessFailureError as ProcessFailureError
from kiln.frontend.driver.multihost import assert_equal as assert_equal
from kiln.frontend.driver.multihost import broadcast_one_to_all as broadcast_one_to_all
from kiln.frontend.driver.multihost import global_array_to_host_local_array as global_array_to_host_local_array
from kiln.frontend.driver.multihost import host_local_array_to_global_array as host_local_array_to_global_array
from kiln.frontend.driver.multihost import live_devices as live_devices
from kiln.frontend.driver.multihost import process_allgather as process_allgather
from kiln.frontend.driver.multihost import reached_preemption_sync_point as reached_preemption_sync_point
from kiln.frontend.driver.multihost import sync_global_devices as sync_global_devices

__all__ = ["ProcessFailureError", "assert_equal", "broadcast_one_to_all", "global_array_to_host_local_array",
           "host_local_array_to_global_array", "live_devices", "process_allgather", "reached_preemption_sync_point",
           "sync_global_devices"]
