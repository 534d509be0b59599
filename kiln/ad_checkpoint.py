"""kiln.ad_checkpoint: ``checkpoint_name``, ``checkpoint_policies`` and ``print_saved_residuals``, as
``jax.ad_checkpoint`` (``kiln.checkpoint`` itself is ``jax.checkpoint``'s counterpart)."""
from kiln.frontend.ad.remat import checkpoint_name as checkpoint_name
from kiln.frontend.ad.remat import checkpoint_policies as checkpoint_policies
from kiln.frontend.ad.residuals import print_saved_residuals as print_saved_residuals

__all__ = ["checkpoint_name", "checkpoint_policies", "print_saved_residuals"]
