"""``jax.experimental.compute_on``: ``compute_on('device')`` (and ``compute_on2``) run on the device as everything
else; host offloading (``'device_host'``) is not supported and raises NotImplementedError."""
from kiln.frontend.driver.compute_on import compute_on as compute_on
from kiln.frontend.driver.compute_on import compute_on2 as compute_on2

__all__ = ["compute_on", "compute_on2"]
