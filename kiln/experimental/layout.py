"""``jax.experimental.layout``: ``Format``, ``Layout`` and ``with_layout_constraint``. kiln uses XLA's default
layouts only: the default layout and ``Layout.AUTO`` are accepted, a custom layout raises NotImplementedError."""
from kiln.frontend.driver.layout import Format as Format
from kiln.frontend.driver.layout import Layout as Layout
from kiln.frontend.driver.layout import with_layout_constraint as with_layout_constraint

__all__ = ["Format", "Layout", "with_layout_constraint"]
