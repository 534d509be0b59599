"""kiln.ad_checkpoint: ``checkpoint_name``, ``checkpoint_policies``, ``print_saved_residuals`` and the answers a
policy may give (``Saveable``, ``Recompute``, ``Offloadable``), as
``jax.ad_checkpoint`` (``kiln.checkpoint`` itself is ``jax.checkpoint``'s counterpart)."""
from kiln.frontend.ad.remat import Offloadable as Offloadable
from kiln.frontend.ad.remat import Recompute as Recompute
from kiln.frontend.ad.remat import Saveable as Saveable
from kiln.frontend.ad.remat import checkpoint_name as checkpoint_name
from kiln.frontend.ad.remat import checkpoint_policies as checkpoint_policies
from kiln.frontend.ad.residuals import print_saved_residuals as print_saved_residuals

__all__ = ["checkpoint_name", "checkpoint_policies", "Offloadable", "print_saved_residuals", "Recompute", "Saveable"]
