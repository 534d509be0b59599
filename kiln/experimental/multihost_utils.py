"""``jax.experimental.multihost_utils``: a barrier and host-value exchange across the processes of a program."""
from kiln.frontend.driver.multihost import broadcast_one_to_all as broadcast_one_to_all
from kiln.frontend.driver.multihost import process_allgather as process_allgather
from kiln.frontend.driver.multihost import sync_global_devices as sync_global_devices

__all__ = ["broadcast_one_to_all", "process_allgather", "sync_global_devices"]
